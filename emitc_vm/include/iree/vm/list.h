// Lists (vm.list): growable arrays of values, of refs of one type, or of
// either (variant lists, element type undefined).

#ifndef IREE_VM_LIST_H_
#define IREE_VM_LIST_H_

#include "iree/vm/ref.h"
#include "iree/vm/type_def.h"
#include "iree/vm/value.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct iree_vm_list_t iree_vm_list_t;

IREE_VM_DECLARE_TYPE_ADAPTERS(iree_vm_list, iree_vm_list_t);

IREE_API_EXPORT iree_status_t iree_vm_list_create(iree_vm_type_def_t element_type, iree_host_size_t initial_capacity,
                                                  iree_allocator_t allocator, iree_vm_list_t** out_list);
IREE_API_EXPORT void iree_vm_list_retain(iree_vm_list_t* list);
IREE_API_EXPORT void iree_vm_list_release(iree_vm_list_t* list);

IREE_API_EXPORT iree_vm_type_def_t iree_vm_list_element_type(const iree_vm_list_t* list);
IREE_API_EXPORT iree_host_size_t iree_vm_list_capacity(const iree_vm_list_t* list);
IREE_API_EXPORT iree_host_size_t iree_vm_list_size(const iree_vm_list_t* list);

IREE_API_EXPORT iree_status_t iree_vm_list_reserve(iree_vm_list_t* list, iree_host_size_t minimum_capacity);
// New elements are zero (values) or null (refs); dropped refs are released.
IREE_API_EXPORT iree_status_t iree_vm_list_resize(iree_vm_list_t* list, iree_host_size_t new_size);

// The element converted to |value_type| (integers sign-extend or truncate,
// floats widen or narrow; integers and floats do not mix).
IREE_API_EXPORT iree_status_t iree_vm_list_get_value_as(const iree_vm_list_t* list, iree_host_size_t i,
                                                        iree_vm_value_type_t value_type, iree_vm_value_t* out_value);
IREE_API_EXPORT iree_status_t iree_vm_list_get_value(const iree_vm_list_t* list, iree_host_size_t i,
                                                     iree_vm_value_t* out_value);
// Stores |value| converted to the list's element type (as it is in a variant list).
IREE_API_EXPORT iree_status_t iree_vm_list_set_value(iree_vm_list_t* list, iree_host_size_t i,
                                                     const iree_vm_value_t* value);

// *out_ref = the element with a new reference (a value element is an error).
IREE_API_EXPORT iree_status_t iree_vm_list_get_ref_retain(const iree_vm_list_t* list, iree_host_size_t i,
                                                          iree_vm_ref_t* out_ref);
// Stores |ref| with a new reference; its type must match a typed list's.
IREE_API_EXPORT iree_status_t iree_vm_list_set_ref_retain(iree_vm_list_t* list, iree_host_size_t i,
                                                          const iree_vm_ref_t* ref);
// Stores |ref| taking over the caller's reference (*ref is zeroed).
IREE_API_EXPORT iree_status_t iree_vm_list_set_ref_move(iree_vm_list_t* list, iree_host_size_t i, iree_vm_ref_t* ref);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_LIST_H_
