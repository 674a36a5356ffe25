// Macros the vm-c emitter uses for pointer stores and indirect calls.

#ifndef IREE_VM_OPS_EMITC_H_
#define IREE_VM_OPS_EMITC_H_

#define EMITC_DEREF_ASSIGN_VALUE(ptr, value) *(ptr) = (value)
#define EMITC_DEREF_ASSIGN_PTR(ptr, value) *(ptr) = *(value)
#define EMITC_CALL_INDIRECT(func, ...) (func)(__VA_ARGS__)

#endif  // IREE_VM_OPS_EMITC_H_
