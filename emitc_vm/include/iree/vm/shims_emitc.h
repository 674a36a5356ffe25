// The shim through which native modules call the exports of vm-c modules.

#ifndef IREE_VM_SHIMS_EMITC_H_
#define IREE_VM_SHIMS_EMITC_H_

#include "iree/vm/native_module.h"

// The real type of a vm-c export shim (stored in a table slot typed
// iree_vm_native_function_target_t).
typedef iree_status_t (*iree_vm_native_function_target_emitc_t)(
    iree_vm_stack_t* IREE_RESTRICT stack, iree_vm_native_function_flags_t flags, iree_byte_span_t args_storage,
    iree_byte_span_t rets_storage, void* IREE_RESTRICT module, void* IREE_RESTRICT module_state);

static inline iree_status_t iree_emitc_shim(iree_vm_stack_t* IREE_RESTRICT stack, iree_vm_native_function_flags_t flags,
                                            iree_byte_span_t args_storage, iree_byte_span_t rets_storage,
                                            iree_vm_native_function_target_emitc_t target_fn,
                                            void* IREE_RESTRICT module, void* IREE_RESTRICT module_state) {
  return target_fn(stack, flags, args_storage, rets_storage, module, module_state);
}

#endif  // IREE_VM_SHIMS_EMITC_H_
