#include "npukit/hal/buffer_view.h"

static void view_destroy(void* ptr) {
  npukit_hal_buffer_view_t* view = (npukit_hal_buffer_view_t*)ptr;
  npukit_hal_buffer_release(view->buffer);
  iree_allocator_free(view->host_allocator, view);
}

const iree_vm_ref_type_descriptor_t npukit_hal_buffer_view_descriptor = {view_destroy, {"hal.buffer_view", 15}};

iree_status_t npukit_hal_buffer_view_create(npukit_hal_buffer_t* buffer, iree_host_size_t rank, const int64_t* shape,
                                            npukit_hal_element_type_t element_type, uint32_t encoding_type,
                                            iree_allocator_t allocator, npukit_hal_buffer_view_t** out_view) {
  *out_view = NULL;
  if (rank > NPUKIT_HAL_MAX_RANK) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "rank %zu exceeds %d", rank, NPUKIT_HAL_MAX_RANK);
  }
  npukit_hal_buffer_view_t* view = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*view) + rank * sizeof(int64_t), (void**)&view));
  view->ref_object.counter = 1;
  view->host_allocator = allocator;
  npukit_hal_buffer_retain(buffer);
  view->buffer = buffer;
  view->element_type = element_type;
  view->encoding_type = encoding_type;
  view->rank = rank;
  for (iree_host_size_t i = 0; i < rank; ++i) view->shape[i] = shape[i];
  *out_view = view;
  return iree_ok_status();
}

void npukit_hal_buffer_view_retain(npukit_hal_buffer_view_t* view) {
  if (view) view->ref_object.counter++;
}

void npukit_hal_buffer_view_release(npukit_hal_buffer_view_t* view) {
  if (view && --view->ref_object.counter == 0) view_destroy(view);
}

iree_host_size_t npukit_hal_buffer_view_byte_length(const npukit_hal_buffer_view_t* view) {
  iree_host_size_t count = 1;
  for (iree_host_size_t i = 0; i < view->rank; ++i) count *= (iree_host_size_t)view->shape[i];
  return npukit_hal_element_dense_bytes(view->element_type, count);
}

static bool element_types_compatible(npukit_hal_element_type_t actual, npukit_hal_element_type_t expected) {
  if (actual == expected) return true;
  uint32_t a = npukit_hal_element_numerical_type(actual);
  uint32_t e = npukit_hal_element_numerical_type(expected);
  if (a == NPUKIT_HAL_NUMERICAL_TYPE_OPAQUE) return true;
  // Integers of the same width are interchangeable (signless/signed/unsigned/bool).
  return (a & 0xF0u) == NPUKIT_HAL_NUMERICAL_TYPE_INTEGER && (e & 0xF0u) == NPUKIT_HAL_NUMERICAL_TYPE_INTEGER &&
         npukit_hal_element_bit_count(actual) == npukit_hal_element_bit_count(expected);
}

iree_status_t npukit_hal_buffer_view_assert(const npukit_hal_buffer_view_t* view, iree_string_view_t label,
                                            npukit_hal_element_type_t element_type, uint32_t encoding_type,
                                            iree_host_size_t rank, const int64_t* shape) {
  if (view->encoding_type != NPUKIT_HAL_ENCODING_TYPE_OPAQUE && view->encoding_type != encoding_type) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "%.*s encoding mismatch; expected %08" PRIX32 " but have %08" PRIX32, (int)label.size,
                            label.data, encoding_type, view->encoding_type);
  }
  if (!element_types_compatible(view->element_type, element_type)) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "%.*s element type mismatch; expected %08" PRIX32 " but have %08" PRIX32, (int)label.size,
                            label.data, element_type, view->element_type);
  }
  if (view->rank != rank) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%.*s shape rank mismatch; expected %zu but have %zu",
                            (int)label.size, label.data, rank, view->rank);
  }
  for (iree_host_size_t i = 0; i < rank; ++i) {
    if (view->shape[i] != shape[i]) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                              "%.*s shape dimension %zu mismatch; expected %lld but have %lld", (int)label.size,
                              label.data, i, (long long)shape[i], (long long)view->shape[i]);
    }
  }
  if (npukit_hal_buffer_view_byte_length(view) > view->buffer->length) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%.*s buffer holds %zu bytes, the shape needs %zu",
                            (int)label.size, label.data, view->buffer->length,
                            npukit_hal_buffer_view_byte_length(view));
  }
  return iree_ok_status();
}
