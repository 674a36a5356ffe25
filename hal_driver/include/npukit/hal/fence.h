// hal.fence: a point in the queue timeline. The local device runs every queue
// operation when it is submitted, so a fence is reached (or failed) as soon
// as the operation that signals it has been submitted; a joined fence is
// reached when all of its parts are.

#ifndef NPUKIT_HAL_FENCE_H_
#define NPUKIT_HAL_FENCE_H_

#include "npukit/hal/hal_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPUKIT_HAL_MAX_JOINED_FENCES 32

typedef enum npukit_hal_fence_state_e {
  NPUKIT_HAL_FENCE_PENDING = 0,
  NPUKIT_HAL_FENCE_REACHED = 1,
  NPUKIT_HAL_FENCE_FAILED = 2,
} npukit_hal_fence_state_t;

typedef struct npukit_hal_fence_t {
  iree_vm_ref_object_t ref_object;
  iree_allocator_t host_allocator;
  npukit_hal_fence_state_t state;
  iree_status_code_t failure;
  iree_host_size_t part_count;  // joined fences: their parts (retained)
  struct npukit_hal_fence_t* parts[];
} npukit_hal_fence_t;

IREE_VM_DECLARE_TYPE_ADAPTERS(npukit_hal_fence, npukit_hal_fence_t);

IREE_API_EXPORT iree_status_t npukit_hal_fence_create(iree_allocator_t allocator, npukit_hal_fence_t** out_fence);
// A fence reached when every non-null fence of |fences| is; NULL when none is given.
IREE_API_EXPORT iree_status_t npukit_hal_fence_join(npukit_hal_fence_t* const* fences, iree_host_size_t count,
                                                    iree_allocator_t allocator, npukit_hal_fence_t** out_fence);
IREE_API_EXPORT void npukit_hal_fence_release(npukit_hal_fence_t* fence);
IREE_API_EXPORT npukit_hal_fence_state_t npukit_hal_fence_state(const npukit_hal_fence_t* fence,
                                                                iree_status_code_t* out_failure);
IREE_API_EXPORT void npukit_hal_fence_signal(npukit_hal_fence_t* fence);
IREE_API_EXPORT void npukit_hal_fence_fail(npukit_hal_fence_t* fence, iree_status_code_t code);

// OK when |fence| (may be NULL) is reached; an error when it failed or can
// never be reached (nothing is left to run on a synchronous queue).
IREE_API_EXPORT iree_status_t npukit_hal_fence_wait(const npukit_hal_fence_t* fence, const char* what);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_FENCE_H_
