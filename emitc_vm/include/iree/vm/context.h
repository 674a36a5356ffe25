// A context: modules linked together, each with its state. Registering a
// module checks its dependencies, resolves its imports against the modules
// registered before it and runs its __init.

#ifndef IREE_VM_CONTEXT_H_
#define IREE_VM_CONTEXT_H_

#include "iree/vm/instance.h"
#include "iree/vm/module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IREE_VM_CONTEXT_MODULE_CAPACITY 8

typedef struct iree_vm_context_t iree_vm_context_t;

IREE_API_EXPORT iree_status_t iree_vm_context_create(iree_vm_instance_t* instance, iree_allocator_t allocator,
                                                     iree_vm_context_t** out_context);
// Releases the modules (newest first) and their states.
IREE_API_EXPORT void iree_vm_context_release(iree_vm_context_t* context);

// Registers |modules| in order (a module may import from those before it).
// On failure the modules of this call are unregistered again.
IREE_API_EXPORT iree_status_t iree_vm_context_register_modules(iree_vm_context_t* context,
                                                               iree_host_size_t module_count,
                                                               iree_vm_module_t** modules);

// Finds an exported function by "module.function".
IREE_API_EXPORT iree_status_t iree_vm_context_resolve_function(const iree_vm_context_t* context,
                                                               iree_string_view_t full_name,
                                                               iree_vm_function_t* out_function);

IREE_API_EXPORT iree_status_t iree_vm_context_query_module_state(iree_vm_context_t* context, iree_vm_module_t* module,
                                                                 iree_vm_module_state_t** out_state);

// Calls |function| with packed arguments; results are written to |results|
// (zero-filled first). Ref arguments are lent: the caller keeps its
// references. Ref results belong to the caller.
IREE_API_EXPORT iree_status_t iree_vm_context_call(iree_vm_context_t* context, iree_vm_function_t function,
                                                   iree_byte_span_t arguments, iree_byte_span_t results);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_CONTEXT_H_
