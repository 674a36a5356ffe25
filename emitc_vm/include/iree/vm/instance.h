// The instance: the registry of ref types shared by the modules of a program.

#ifndef IREE_VM_INSTANCE_H_
#define IREE_VM_INSTANCE_H_

#include "iree/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IREE_VM_INSTANCE_TYPE_CAPACITY 24

typedef struct iree_vm_instance_t iree_vm_instance_t;

// Creates an instance with vm.buffer registered.
IREE_API_EXPORT iree_status_t iree_vm_instance_create(iree_allocator_t allocator, iree_vm_instance_t** out_instance);
IREE_API_EXPORT void iree_vm_instance_retain(iree_vm_instance_t* instance);
IREE_API_EXPORT void iree_vm_instance_release(iree_vm_instance_t* instance);
IREE_API_EXPORT iree_allocator_t iree_vm_instance_allocator(iree_vm_instance_t* instance);

// Registering the same descriptor twice is allowed.
IREE_API_EXPORT iree_status_t iree_vm_instance_register_type(iree_vm_instance_t* instance,
                                                             const iree_vm_ref_type_descriptor_t* descriptor);

// The registered type named |full_name|, or 0 when none is (including the
// primitive names "i32" and "i64" the generated code asks for).
IREE_API_EXPORT iree_vm_ref_type_t iree_vm_instance_lookup_type(iree_vm_instance_t* instance,
                                                                iree_string_view_t full_name);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_INSTANCE_H_
