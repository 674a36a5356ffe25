#include "npukit/hal/fence.h"

static void fence_destroy(void* ptr) {
  npukit_hal_fence_t* fence = (npukit_hal_fence_t*)ptr;
  for (iree_host_size_t i = 0; i < fence->part_count; ++i) npukit_hal_fence_release(fence->parts[i]);
  iree_allocator_free(fence->host_allocator, fence);
}

const iree_vm_ref_type_descriptor_t npukit_hal_fence_descriptor = {fence_destroy, {"hal.fence", 9}};

static iree_status_t new_fence(iree_host_size_t parts, iree_allocator_t allocator, npukit_hal_fence_t** out_fence) {
  npukit_hal_fence_t* fence = NULL;
  IREE_RETURN_IF_ERROR(
      iree_allocator_malloc(allocator, sizeof(*fence) + parts * sizeof(npukit_hal_fence_t*), (void**)&fence));
  fence->ref_object.counter = 1;
  fence->host_allocator = allocator;
  *out_fence = fence;
  return iree_ok_status();
}

iree_status_t npukit_hal_fence_create(iree_allocator_t allocator, npukit_hal_fence_t** out_fence) {
  *out_fence = NULL;
  return new_fence(0, allocator, out_fence);
}

iree_status_t npukit_hal_fence_join(npukit_hal_fence_t* const* fences, iree_host_size_t count,
                                    iree_allocator_t allocator, npukit_hal_fence_t** out_fence) {
  *out_fence = NULL;
  iree_host_size_t parts = 0;
  for (iree_host_size_t i = 0; i < count; ++i) parts += fences[i] != NULL;
  if (parts == 0) return iree_ok_status();
  npukit_hal_fence_t* fence = NULL;
  IREE_RETURN_IF_ERROR(new_fence(parts, allocator, &fence));
  for (iree_host_size_t i = 0; i < count; ++i) {
    if (!fences[i]) continue;
    fences[i]->ref_object.counter++;
    fence->parts[fence->part_count++] = fences[i];
  }
  *out_fence = fence;
  return iree_ok_status();
}

void npukit_hal_fence_release(npukit_hal_fence_t* fence) {
  if (fence && --fence->ref_object.counter == 0) fence_destroy(fence);
}

npukit_hal_fence_state_t npukit_hal_fence_state(const npukit_hal_fence_t* fence, iree_status_code_t* out_failure) {
  *out_failure = IREE_STATUS_OK;
  if (fence->part_count == 0) {
    *out_failure = fence->failure;
    return fence->state;
  }
  npukit_hal_fence_state_t state = NPUKIT_HAL_FENCE_REACHED;
  for (iree_host_size_t i = 0; i < fence->part_count; ++i) {
    iree_status_code_t failure;
    npukit_hal_fence_state_t part = npukit_hal_fence_state(fence->parts[i], &failure);
    if (part == NPUKIT_HAL_FENCE_FAILED) {
      *out_failure = failure;
      return part;
    }
    if (part == NPUKIT_HAL_FENCE_PENDING) state = part;
  }
  return state;
}

void npukit_hal_fence_signal(npukit_hal_fence_t* fence) {
  if (fence->part_count == 0) {
    if (fence->state == NPUKIT_HAL_FENCE_PENDING) fence->state = NPUKIT_HAL_FENCE_REACHED;
    return;
  }
  for (iree_host_size_t i = 0; i < fence->part_count; ++i) npukit_hal_fence_signal(fence->parts[i]);
}

void npukit_hal_fence_fail(npukit_hal_fence_t* fence, iree_status_code_t code) {
  if (fence->part_count == 0) {
    fence->state = NPUKIT_HAL_FENCE_FAILED;
    fence->failure = code ? code : IREE_STATUS_ABORTED;
    return;
  }
  for (iree_host_size_t i = 0; i < fence->part_count; ++i) npukit_hal_fence_fail(fence->parts[i], code);
}

iree_status_t npukit_hal_fence_wait(const npukit_hal_fence_t* fence, const char* what) {
  if (!fence) return iree_ok_status();
  iree_status_code_t failure;
  switch (npukit_hal_fence_state(fence, &failure)) {
    case NPUKIT_HAL_FENCE_REACHED:
      return iree_ok_status();
    case NPUKIT_HAL_FENCE_FAILED:
      return iree_make_status(failure, "%s: waited on a fence that failed (%s)", what,
                              iree_status_code_string(failure));
    default:
      return iree_make_status(IREE_STATUS_FAILED_PRECONDITION,
                              "%s: waits on a fence that nothing signals (the queue is synchronous)", what);
  }
}
