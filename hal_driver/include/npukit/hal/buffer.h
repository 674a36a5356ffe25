// hal.buffer: a range of host memory (the local device is the CPU or an NPU
// that reads system memory), owned, a subspan of another buffer or imported
// from a vm.buffer.

#ifndef NPUKIT_HAL_BUFFER_H_
#define NPUKIT_HAL_BUFFER_H_

#include "npukit/hal/hal_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npukit_hal_buffer_t {
  iree_vm_ref_object_t ref_object;
  iree_allocator_t host_allocator;     // allocated this object (and owned storage)
  struct npukit_hal_buffer_t* parent;  // retained when this is a subspan
  iree_vm_buffer_t* imported;          // retained when this wraps a vm.buffer
  void* owned_storage;                 // freed (aligned) on destroy
  // Storage from a compile-time memory plan: its planner and entry + 1 (0: none).
  struct npukit_buffer_planner_t* planner;
  uint32_t plan_entry;
  uint8_t* data;
  iree_host_size_t length;
  uint32_t memory_type;
  uint32_t allowed_usage;
  bool read_only;
  // The vm.buffer handed out by hal_inline.buffer.storage: its references
  // keep this buffer alive (see npukit_hal_buffer_storage).
  iree_vm_buffer_t storage;
} npukit_hal_buffer_t;

IREE_VM_DECLARE_TYPE_ADAPTERS(npukit_hal_buffer, npukit_hal_buffer_t);

// Uninitialized storage of |length| bytes aligned to max(alignment, 64): the
// next buffer of the memory plan when |allocator| is an arena with a plan in
// use (npukit/hal/buffer_plan.h), otherwise a block of |allocator|.
IREE_API_EXPORT iree_status_t npukit_hal_buffer_allocate(iree_allocator_t allocator, iree_host_size_t length,
                                                         iree_host_size_t alignment, uint32_t memory_type,
                                                         uint32_t allowed_usage, npukit_hal_buffer_t** out_buffer);

// [offset, offset + length) of |parent| (length -1: to the end); retains parent.
IREE_API_EXPORT iree_status_t npukit_hal_buffer_subspan(npukit_hal_buffer_t* parent, int64_t offset, int64_t length,
                                                        iree_allocator_t allocator, npukit_hal_buffer_t** out_buffer);

// Wraps [offset, offset + length) of |source| without copying; retains it.
IREE_API_EXPORT iree_status_t npukit_hal_buffer_import(iree_vm_buffer_t* source, int64_t offset, int64_t length,
                                                       uint32_t memory_type, uint32_t allowed_usage,
                                                       iree_allocator_t allocator, npukit_hal_buffer_t** out_buffer);

// Wraps application memory (which must outlive the buffer) without copying.
IREE_API_EXPORT iree_status_t npukit_hal_buffer_wrap_host(void* data, iree_host_size_t length, bool read_only,
                                                          iree_allocator_t allocator, npukit_hal_buffer_t** out_buffer);

// The bytes [offset, offset + length) of |buffer| (length -1: to the end),
// bounds-checked.
IREE_API_EXPORT iree_status_t npukit_hal_buffer_map_range(npukit_hal_buffer_t* buffer, int64_t offset, int64_t length,
                                                          iree_byte_span_t* out_span);

// Repeats the little-endian |pattern| of 1, 2, 4 or 8 bytes over |target|.
IREE_API_EXPORT iree_status_t npukit_hal_fill_pattern(iree_byte_span_t target, uint64_t pattern,
                                                      uint32_t pattern_length);

IREE_API_EXPORT void npukit_hal_buffer_retain(npukit_hal_buffer_t* buffer);
IREE_API_EXPORT void npukit_hal_buffer_release(npukit_hal_buffer_t* buffer);

// A new reference to the vm.buffer aliasing this buffer's bytes.
IREE_API_EXPORT iree_vm_ref_t npukit_hal_buffer_storage(npukit_hal_buffer_t* buffer);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_BUFFER_H_
