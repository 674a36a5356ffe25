// Native modules: modules written in C (vm-c output, npukit's HAL modules)
// described by static tables. The table layouts are fixed by the generated
// code, which initializes them positionally.

#ifndef IREE_VM_NATIVE_MODULE_H_
#define IREE_VM_NATIVE_MODULE_H_

#include "iree/vm/instance.h"
#include "iree/vm/stack.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t iree_vm_native_import_flags_t;
#define IREE_VM_NATIVE_IMPORT_REQUIRED (1u << 0)
#define IREE_VM_NATIVE_IMPORT_OPTIONAL (1u << 1)

typedef struct iree_vm_native_import_descriptor_t {
  iree_vm_native_import_flags_t flags;
  iree_string_view_t full_name;  // "module.function"
} iree_vm_native_import_descriptor_t;

typedef struct iree_vm_native_export_descriptor_t {
  iree_string_view_t local_name;
  iree_string_view_t calling_convention;
  iree_host_size_t attr_count;
  const iree_string_pair_t* attrs;
} iree_vm_native_export_descriptor_t;

typedef uint32_t iree_vm_native_function_flags_t;
#define IREE_VM_NATIVE_FUNCTION_CALL_BEGIN (1u << 0)
#define IREE_VM_NATIVE_FUNCTION_CALL_RESUME (1u << 1)

typedef iree_status_t (*iree_vm_native_function_target_t)(iree_vm_stack_t* stack, void* module, void* module_state);

// Calls |target_fn| with the call's argument and result storage.
typedef iree_status_t (*iree_vm_native_function_shim_t)(iree_vm_stack_t* stack, iree_vm_native_function_flags_t flags,
                                                        iree_byte_span_t args_storage, iree_byte_span_t rets_storage,
                                                        iree_vm_native_function_target_t target_fn, void* module,
                                                        void* module_state);

typedef struct iree_vm_native_function_ptr_t {
  iree_vm_native_function_shim_t shim;
  iree_vm_native_function_target_t target;
} iree_vm_native_function_ptr_t;

// Exports must be sorted by name (iree_string_view_compare); functions[i]
// implements exports[i].
typedef struct iree_vm_native_module_descriptor_t {
  IREE_API_UNSTABLE
  iree_string_view_t name;
  uint32_t version;
  iree_host_size_t attr_count;
  const iree_string_pair_t* attrs;
  iree_host_size_t dependency_count;
  const iree_vm_module_dependency_t* dependencies;
  iree_host_size_t import_count;
  const iree_vm_native_import_descriptor_t* imports;
  iree_host_size_t export_count;
  const iree_vm_native_export_descriptor_t* exports;
  iree_host_size_t function_count;
  const iree_vm_native_function_ptr_t* functions;
} iree_vm_native_module_descriptor_t;

// Creates a module from |interface| (copied; its non-null functions override
// the defaults) and |descriptor| (kept; must outlive the module).
IREE_API_EXPORT iree_status_t iree_vm_native_module_create(const iree_vm_module_t* interface,
                                                           const iree_vm_native_module_descriptor_t* descriptor,
                                                           struct iree_vm_instance_t* instance,
                                                           iree_allocator_t allocator, iree_vm_module_t** out_module);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_NATIVE_MODULE_H_
