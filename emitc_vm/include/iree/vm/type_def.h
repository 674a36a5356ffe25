// Type definitions of VM values: a value type or a ref type.
//
// Kept lossless (unlike IREE's packed word) so that a ref type survives the
// round trip the generated code does through iree_vm_make_ref_type_def and
// iree_vm_type_def_as_ref whatever its low bits are.

#ifndef IREE_VM_TYPE_DEF_H_
#define IREE_VM_TYPE_DEF_H_

#include "iree/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum iree_vm_value_type_e {
  IREE_VM_VALUE_TYPE_NONE = 0,
  IREE_VM_VALUE_TYPE_I8 = 1,
  IREE_VM_VALUE_TYPE_I16 = 2,
  IREE_VM_VALUE_TYPE_I32 = 3,
  IREE_VM_VALUE_TYPE_I64 = 4,
  IREE_VM_VALUE_TYPE_F32 = 5,
  IREE_VM_VALUE_TYPE_F64 = 6,
} iree_vm_value_type_t;

typedef struct iree_vm_type_def_t {
  iree_vm_ref_type_t ref_type;
  uint32_t value_type;
} iree_vm_type_def_t;

static inline iree_vm_type_def_t iree_vm_make_ref_type_def(iree_vm_ref_type_t ref_type) {
  iree_vm_type_def_t t = {ref_type, IREE_VM_VALUE_TYPE_NONE};
  return t;
}

static inline iree_vm_type_def_t iree_vm_make_value_type_def(iree_vm_value_type_t value_type) {
  iree_vm_type_def_t t = {0, (uint32_t)value_type};
  return t;
}

static inline iree_vm_type_def_t iree_vm_make_undefined_type_def(void) {
  iree_vm_type_def_t t = {0, IREE_VM_VALUE_TYPE_NONE};
  return t;
}

#define iree_vm_type_def_as_ref(type_def) ((type_def).ref_type)
#define iree_vm_type_def_is_value(type_def) ((type_def).value_type != IREE_VM_VALUE_TYPE_NONE)
#define iree_vm_type_def_is_ref(type_def) ((type_def).ref_type != 0)

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_TYPE_DEF_H_
