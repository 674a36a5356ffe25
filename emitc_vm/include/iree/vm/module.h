// Modules, functions and calls: the interface between vm-c modules, native
// (HAL) modules and the context that links them.

#ifndef IREE_VM_MODULE_H_
#define IREE_VM_MODULE_H_

#include "iree/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct iree_vm_module_t iree_vm_module_t;
typedef struct iree_vm_stack_t iree_vm_stack_t;
// Per-context state of a module; only the module knows its layout.
typedef struct iree_vm_module_state_t iree_vm_module_state_t;

typedef enum iree_vm_function_linkage_e {
  IREE_VM_FUNCTION_LINKAGE_INTERNAL = 0,
  IREE_VM_FUNCTION_LINKAGE_IMPORT = 1,
  IREE_VM_FUNCTION_LINKAGE_EXPORT = 2,
  IREE_VM_FUNCTION_LINKAGE_IMPORT_OPTIONAL = 3,
  IREE_VM_FUNCTION_LINKAGE_EXPORT_OPTIONAL = 4,
} iree_vm_function_linkage_t;

// A function of a module: copied whole by generated code.
typedef struct iree_vm_function_t {
  iree_vm_module_t* module;
  uint16_t linkage;
  uint16_t ordinal;
} iree_vm_function_t;

typedef struct iree_vm_function_signature_t {
  iree_string_view_t calling_convention;  // e.g. "0r_r"
} iree_vm_function_signature_t;

// A call: packed arguments in, zero-filled result storage out (layout in
// iree/vm/invocation.h).
typedef struct iree_vm_function_call_t {
  iree_vm_function_t function;
  iree_byte_span_t arguments;
  iree_byte_span_t results;
} iree_vm_function_call_t;

typedef uint32_t iree_vm_module_dependency_flags_t;
#define IREE_VM_MODULE_DEPENDENCY_FLAG_NONE 0u
#define IREE_VM_MODULE_DEPENDENCY_FLAG_REQUIRED (1u << 0)
#define IREE_VM_MODULE_DEPENDENCY_FLAG_OPTIONAL (1u << 1)

// Positionally initialized by generated code: {name, minimum_version, flags}.
typedef struct iree_vm_module_dependency_t {
  iree_string_view_t name;
  uint32_t minimum_version;
  iree_vm_module_dependency_flags_t flags;
} iree_vm_module_dependency_t;

typedef struct iree_vm_module_signature_t {
  uint32_t version;
  iree_host_size_t attr_count;
  iree_host_size_t import_function_count;
  iree_host_size_t export_function_count;
  iree_host_size_t internal_function_count;
} iree_vm_module_signature_t;

typedef iree_status_t (*iree_vm_module_dependency_callback_t)(void* user_data,
                                                              const iree_vm_module_dependency_t* dependency);

typedef enum iree_vm_signal_e {
  IREE_VM_SIGNAL_RESUME = 0,
  IREE_VM_SIGNAL_SUSPEND = 1,
  IREE_VM_SIGNAL_LOW_MEMORY = 2,
  IREE_VM_SIGNAL_FORK = 3,
} iree_vm_signal_t;

// The module interface. Generated code fills destroy, alloc_state,
// free_state, fork_state and resolve_import of a stack copy by name and
// calls begin_call(module, stack, call) with the module itself as |self|.
struct iree_vm_module_t {
  IREE_API_UNSTABLE
  void* self;
  uint32_t ref_count;
  void(IREE_API_PTR* destroy)(void* self);
  iree_string_view_t(IREE_API_PTR* name)(void* self);
  iree_vm_module_signature_t(IREE_API_PTR* signature)(void* self);
  iree_status_t(IREE_API_PTR* enumerate_dependencies)(void* self, iree_vm_module_dependency_callback_t callback,
                                                      void* user_data);
  iree_status_t(IREE_API_PTR* lookup_function)(void* self, iree_vm_function_linkage_t linkage, iree_string_view_t name,
                                               const iree_vm_function_signature_t* expected_signature,
                                               iree_vm_function_t* out_function);
  iree_status_t(IREE_API_PTR* get_function)(void* self, iree_vm_function_linkage_t linkage, iree_host_size_t ordinal,
                                            iree_vm_function_t* out_function, iree_string_view_t* out_name,
                                            iree_vm_function_signature_t* out_signature);
  iree_status_t(IREE_API_PTR* alloc_state)(void* self, iree_allocator_t allocator,
                                           iree_vm_module_state_t** out_module_state);
  void(IREE_API_PTR* free_state)(void* self, iree_vm_module_state_t* module_state);
  iree_status_t(IREE_API_PTR* fork_state)(void* self, iree_vm_module_state_t* parent_state, iree_allocator_t allocator,
                                          iree_vm_module_state_t** out_child_state);
  iree_status_t(IREE_API_PTR* resolve_import)(void* self, iree_vm_module_state_t* module_state,
                                              iree_host_size_t ordinal, const iree_vm_function_t* function,
                                              const iree_vm_function_signature_t* signature);
  iree_status_t(IREE_API_PTR* notify)(void* self, iree_vm_module_state_t* module_state, iree_vm_signal_t signal);
  iree_status_t(IREE_API_PTR* begin_call)(void* self, iree_vm_stack_t* stack, iree_vm_function_call_t call);
};

// Zeroes |module|, sets |self| and one reference.
IREE_API_EXPORT iree_status_t iree_vm_module_initialize(iree_vm_module_t* module, void* self);
IREE_API_EXPORT void iree_vm_module_retain(iree_vm_module_t* module);
IREE_API_EXPORT void iree_vm_module_release(iree_vm_module_t* module);
IREE_API_EXPORT iree_string_view_t iree_vm_module_name(const iree_vm_module_t* module);
IREE_API_EXPORT iree_vm_module_signature_t iree_vm_module_signature(const iree_vm_module_t* module);
IREE_API_EXPORT iree_status_t iree_vm_module_lookup_function_by_name(const iree_vm_module_t* module,
                                                                     iree_vm_function_linkage_t linkage,
                                                                     iree_string_view_t name,
                                                                     iree_vm_function_t* out_function);
IREE_API_EXPORT iree_vm_function_signature_t iree_vm_function_signature(const iree_vm_function_t* function);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_MODULE_H_
