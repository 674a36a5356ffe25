// Reference-counted objects passed through the VM as iree_vm_ref_t.
//
// Every ref-counted object starts with an iree_vm_ref_object_t (its counter at
// offset 0). A ref type is the address of a static, 8-byte aligned
// iree_vm_ref_type_descriptor_t; the instance maps type names to descriptors.
// The runtime is single-threaded, so counters are plain integers.

#ifndef IREE_VM_REF_H_
#define IREE_VM_REF_H_

#include "iree/base/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uintptr_t iree_vm_ref_type_t;
#define IREE_VM_REF_TYPE_NULL ((iree_vm_ref_type_t)0)
// Matches any type in checked operations.
#define IREE_VM_REF_TYPE_ANY ((iree_vm_ref_type_t)(UINTPTR_MAX ^ 7u))

typedef struct iree_vm_ref_object_t {
  uint32_t counter;
} iree_vm_ref_object_t;

typedef void (*iree_vm_ref_destroy_t)(void* ptr);

typedef struct iree_alignas(8) iree_vm_ref_type_descriptor_t {
  iree_vm_ref_destroy_t destroy;
  iree_string_view_t type_name;
} iree_vm_ref_type_descriptor_t;

// A reference: the object and its type; all-zero is the null reference.
// Generated code aligns refs to 8 bytes in argument buffers on every target,
// so the type is 8-byte aligned on 32-bit targets too.
typedef struct iree_alignas(8) iree_vm_ref_t {
  void* ptr;
  iree_vm_ref_type_t type;
} iree_vm_ref_t;

static inline iree_vm_ref_type_t iree_vm_ref_type_of(const iree_vm_ref_type_descriptor_t* descriptor) {
  return (iree_vm_ref_type_t)descriptor;
}

static inline const iree_vm_ref_type_descriptor_t* iree_vm_ref_type_descriptor(iree_vm_ref_type_t type) {
  return (const iree_vm_ref_type_descriptor_t*)type;
}

static inline iree_vm_ref_t iree_vm_ref_null(void) {
  iree_vm_ref_t ref = {NULL, 0};
  return ref;
}

static inline bool iree_vm_ref_is_null(const iree_vm_ref_t* ref) { return ref->type == 0 || ref->ptr == NULL; }

// Increments the object's counter; the ref itself is unchanged.
IREE_API_EXPORT void iree_vm_ref_retain_inplace(iree_vm_ref_t* ref);
// *dst = *src with a new reference (the old *dst is released).
IREE_API_EXPORT void iree_vm_ref_retain(iree_vm_ref_t* src, iree_vm_ref_t* dst);
// *dst = *src without a new reference: ownership passes from src to dst.
IREE_API_EXPORT void iree_vm_ref_assign(iree_vm_ref_t* src, iree_vm_ref_t* dst);
// *dst = *src and *src is zeroed.
IREE_API_EXPORT void iree_vm_ref_move(iree_vm_ref_t* src, iree_vm_ref_t* dst);
// Drops the reference (destroying the object on the last one) and zeroes *ref.
IREE_API_EXPORT void iree_vm_ref_release(iree_vm_ref_t* ref);
// *out = {ptr, type} with a new reference (no-op when *out already holds ptr).
IREE_API_EXPORT iree_status_t iree_vm_ref_wrap_retain(void* ptr, iree_vm_ref_type_t type, iree_vm_ref_t* out_ref);
// *out = {ptr, type} taking over the caller's reference.
IREE_API_EXPORT iree_status_t iree_vm_ref_wrap_assign(void* ptr, iree_vm_ref_type_t type, iree_vm_ref_t* out_ref);
// retain (or move) after checking that src has |type| (or is null).
IREE_API_EXPORT iree_status_t iree_vm_ref_retain_or_move_checked(int is_move, iree_vm_ref_t* src,
                                                                 iree_vm_ref_type_t type, iree_vm_ref_t* dst);
IREE_API_EXPORT bool iree_vm_ref_equal(const iree_vm_ref_t* lhs, const iree_vm_ref_t* rhs);

// Declares <name>_type(), <name>_isa(), <name>_deref() and
// <name>_check_deref() for a C type whose descriptor is <name>_descriptor.
#define IREE_VM_DECLARE_TYPE_ADAPTERS(name, T)                                                                      \
  IREE_API_EXPORT extern const iree_vm_ref_type_descriptor_t name##_descriptor;                                     \
  static inline iree_vm_ref_type_t name##_type(void) { return iree_vm_ref_type_of(&name##_descriptor); }            \
  static inline bool name##_isa(const iree_vm_ref_t ref) { return ref.ptr && ref.type == name##_type(); }           \
  static inline T* name##_deref(const iree_vm_ref_t ref) { return ref.type == name##_type() ? (T*)ref.ptr : NULL; } \
  static inline iree_vm_ref_t name##_retain_ref(T* value) {                                                         \
    iree_vm_ref_t ref = {NULL, 0};                                                                                  \
    iree_status_ignore(iree_vm_ref_wrap_retain(value, name##_type(), &ref));                                        \
    return ref;                                                                                                     \
  }

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_REF_H_
