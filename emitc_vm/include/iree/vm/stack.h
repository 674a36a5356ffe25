// The call stack handle passed through every call.
//
// vm-c code only passes it along; native modules use it to find their
// per-context state. Nothing yields, so there are no frames to keep.

#ifndef IREE_VM_STACK_H_
#define IREE_VM_STACK_H_

#include "iree/vm/module.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct iree_vm_state_resolver_t {
  void* self;
  iree_status_t (*query_module_state)(void* self, iree_vm_module_t* module, iree_vm_module_state_t** out_state);
} iree_vm_state_resolver_t;

// Nesting of native calls beyond this fails instead of overflowing.
#define IREE_VM_STACK_MAX_DEPTH 32

struct iree_vm_stack_t {
  iree_vm_state_resolver_t state_resolver;
  uint32_t depth;
};

static inline void iree_vm_stack_initialize(iree_vm_state_resolver_t resolver, iree_vm_stack_t* out_stack) {
  out_stack->state_resolver = resolver;
  out_stack->depth = 0;
}

IREE_API_EXPORT iree_status_t iree_vm_stack_query_module_state(iree_vm_stack_t* stack, iree_vm_module_t* module,
                                                               iree_vm_module_state_t** out_state);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_STACK_H_
