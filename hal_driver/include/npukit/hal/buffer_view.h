// hal.buffer_view: a buffer with a shape, an element type and an encoding.

#ifndef NPUKIT_HAL_BUFFER_VIEW_H_
#define NPUKIT_HAL_BUFFER_VIEW_H_

#include "npukit/hal/buffer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npukit_hal_buffer_view_t {
  iree_vm_ref_object_t ref_object;
  iree_allocator_t host_allocator;
  npukit_hal_buffer_t* buffer;  // retained
  npukit_hal_element_type_t element_type;
  uint32_t encoding_type;
  iree_host_size_t rank;
  int64_t shape[];  // rank entries
} npukit_hal_buffer_view_t;

IREE_VM_DECLARE_TYPE_ADAPTERS(npukit_hal_buffer_view, npukit_hal_buffer_view_t);

IREE_API_EXPORT iree_status_t npukit_hal_buffer_view_create(npukit_hal_buffer_t* buffer, iree_host_size_t rank,
                                                            const int64_t* shape,
                                                            npukit_hal_element_type_t element_type,
                                                            uint32_t encoding_type, iree_allocator_t allocator,
                                                            npukit_hal_buffer_view_t** out_view);
IREE_API_EXPORT void npukit_hal_buffer_view_retain(npukit_hal_buffer_view_t* view);
IREE_API_EXPORT void npukit_hal_buffer_view_release(npukit_hal_buffer_view_t* view);

// Bytes the shape and element type cover.
IREE_API_EXPORT iree_host_size_t npukit_hal_buffer_view_byte_length(const npukit_hal_buffer_view_t* view);

// Checks the view against what a function expects; the message names |label|.
IREE_API_EXPORT iree_status_t npukit_hal_buffer_view_assert(const npukit_hal_buffer_view_t* view,
                                                            iree_string_view_t label,
                                                            npukit_hal_element_type_t element_type,
                                                            uint32_t encoding_type, iree_host_size_t rank,
                                                            const int64_t* shape);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_BUFFER_VIEW_H_
