#include "iree/vm/ref.h"

static inline uint32_t* counter_of(void* ptr) { return &((iree_vm_ref_object_t*)ptr)->counter; }

static void drop(void* ptr, iree_vm_ref_type_t type) {
  if (!ptr || !type) return;
  uint32_t* counter = counter_of(ptr);
  if (--*counter == 0) {
    const iree_vm_ref_type_descriptor_t* descriptor = iree_vm_ref_type_descriptor(type);
    if (descriptor->destroy) descriptor->destroy(ptr);
  }
}

void iree_vm_ref_retain_inplace(iree_vm_ref_t* ref) {
  if (ref->ptr && ref->type) ++*counter_of(ref->ptr);
}

void iree_vm_ref_retain(iree_vm_ref_t* src, iree_vm_ref_t* dst) {
  iree_vm_ref_t copy = *src;
  if (copy.ptr && copy.type) ++*counter_of(copy.ptr);
  iree_vm_ref_t old = *dst;
  *dst = copy;
  drop(old.ptr, old.type);
}

void iree_vm_ref_assign(iree_vm_ref_t* src, iree_vm_ref_t* dst) {
  if (src == dst) return;
  iree_vm_ref_t old = *dst;
  *dst = *src;
  drop(old.ptr, old.type);
}

void iree_vm_ref_move(iree_vm_ref_t* src, iree_vm_ref_t* dst) {
  if (src == dst) return;
  iree_vm_ref_t value = *src;
  src->ptr = NULL;
  src->type = 0;
  iree_vm_ref_t old = *dst;
  *dst = value;
  drop(old.ptr, old.type);
}

void iree_vm_ref_release(iree_vm_ref_t* ref) {
  if (!ref->type || !ref->ptr) return;
  iree_vm_ref_t old = *ref;
  ref->ptr = NULL;
  ref->type = 0;
  drop(old.ptr, old.type);
}

iree_status_t iree_vm_ref_wrap_retain(void* ptr, iree_vm_ref_type_t type, iree_vm_ref_t* out_ref) {
  if (out_ref->ptr == ptr) return iree_ok_status();
  iree_vm_ref_t old = *out_ref;
  out_ref->ptr = ptr;
  out_ref->type = ptr ? type : 0;
  if (ptr && type) ++*counter_of(ptr);
  drop(old.ptr, old.type);
  return iree_ok_status();
}

iree_status_t iree_vm_ref_wrap_assign(void* ptr, iree_vm_ref_type_t type, iree_vm_ref_t* out_ref) {
  iree_vm_ref_t old = *out_ref;
  out_ref->ptr = ptr;
  out_ref->type = ptr ? type : 0;
  if (old.ptr != ptr) drop(old.ptr, old.type);
  return iree_ok_status();
}

iree_status_t iree_vm_ref_retain_or_move_checked(int is_move, iree_vm_ref_t* src, iree_vm_ref_type_t type,
                                                 iree_vm_ref_t* dst) {
  if (src->type && src->type != type && type != IREE_VM_REF_TYPE_ANY) {
    const iree_vm_ref_type_descriptor_t* have = iree_vm_ref_type_descriptor(src->type);
    const iree_vm_ref_type_descriptor_t* want = type ? iree_vm_ref_type_descriptor(type) : NULL;
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "ref type mismatch: have %.*s, expected %.*s",
                            (int)have->type_name.size, have->type_name.data, want ? (int)want->type_name.size : 12,
                            want ? want->type_name.data : "(unregistered)");
  }
  if (is_move) {
    iree_vm_ref_move(src, dst);
  } else {
    iree_vm_ref_retain(src, dst);
  }
  return iree_ok_status();
}

bool iree_vm_ref_equal(const iree_vm_ref_t* lhs, const iree_vm_ref_t* rhs) {
  return lhs == rhs || (lhs->ptr == rhs->ptr && lhs->type == rhs->type);
}
