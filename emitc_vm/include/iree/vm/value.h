// Scalar VM values (the elements of value lists).

#ifndef IREE_VM_VALUE_H_
#define IREE_VM_VALUE_H_

#include "iree/vm/type_def.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct iree_vm_value_t {
  iree_vm_value_type_t type;
  union {
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    uint8_t value_storage[8];
  };
} iree_vm_value_t;

static inline iree_vm_value_t iree_vm_value_make_none(void) {
  iree_vm_value_t v;
  memset(&v, 0, sizeof(v));
  return v;
}

#define NPUKIT_VM_VALUE_MAKE(suffix, T, TYPE)                      \
  static inline iree_vm_value_t iree_vm_value_make_##suffix(T x) { \
    iree_vm_value_t v = iree_vm_value_make_none();                 \
    v.type = TYPE;                                                 \
    v.suffix = x;                                                  \
    return v;                                                      \
  }                                                                \
  static inline T iree_vm_value_get_##suffix(const iree_vm_value_t* v) { return v->type == TYPE ? v->suffix : (T)0; }
NPUKIT_VM_VALUE_MAKE(i8, int8_t, IREE_VM_VALUE_TYPE_I8)
NPUKIT_VM_VALUE_MAKE(i16, int16_t, IREE_VM_VALUE_TYPE_I16)
NPUKIT_VM_VALUE_MAKE(i32, int32_t, IREE_VM_VALUE_TYPE_I32)
NPUKIT_VM_VALUE_MAKE(i64, int64_t, IREE_VM_VALUE_TYPE_I64)
NPUKIT_VM_VALUE_MAKE(f32, float, IREE_VM_VALUE_TYPE_F32)
NPUKIT_VM_VALUE_MAKE(f64, double, IREE_VM_VALUE_TYPE_F64)
#undef NPUKIT_VM_VALUE_MAKE

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_VALUE_H_
