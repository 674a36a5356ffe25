// The functions two HAL modules both export, with the same arguments:
// buffer length and subspan, buffer view create, assert and queries
// (hal_inline and hal), executable function lookup (hal_loader and hal).

#include "module_args.h"

// The variadic dims: an i32 count, then that many i64.
static iree_status_t read_shape(const char* fn, iree_vm_abi_reader_t* r, int64_t* shape, int32_t* out_rank) {
  int32_t rank = iree_vm_abi_read_i32(r);
  if (rank < 0 || rank > NPUKIT_HAL_MAX_RANK) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "%s: rank %d exceeds %d", fn, (int)rank, NPUKIT_HAL_MAX_RANK);
  }
  for (int32_t i = 0; i < rank; ++i) shape[i] = iree_vm_abi_read_i64(r);
  *out_rank = rank;
  return iree_ok_status();
}

iree_status_t npukit_hal_call_buffer_view_create(const char* fn, iree_byte_span_t args, iree_byte_span_t rets,
                                                 iree_allocator_t allocator) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* buffer_ref = iree_vm_abi_read_ref(&r);
  int64_t offset = iree_vm_abi_read_i64(&r);
  int64_t length = iree_vm_abi_read_i64(&r);
  uint32_t element_type = (uint32_t)iree_vm_abi_read_i32(&r);
  uint32_t encoding_type = (uint32_t)iree_vm_abi_read_i32(&r);
  int64_t shape[NPUKIT_HAL_MAX_RANK];
  int32_t rank = 0;
  IREE_RETURN_IF_ERROR(read_shape(fn, &r, shape, &rank));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_t* buffer;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(buffer_ref, false, fn, "the buffer", &buffer));
  npukit_hal_buffer_t* source = buffer;
  if (offset != 0 || (length != NPUKIT_HAL_WHOLE_BUFFER && (uint64_t)length != buffer->length)) {
    IREE_RETURN_IF_ERROR(npukit_hal_buffer_subspan(buffer, offset, length, allocator, &source));
  } else {
    npukit_hal_buffer_retain(source);
  }
  npukit_hal_buffer_view_t* view = NULL;
  iree_status_t status = npukit_hal_buffer_view_create(source, (iree_host_size_t)rank, shape, element_type,
                                                       encoding_type, allocator, &view);
  npukit_hal_buffer_release(source);
  IREE_RETURN_IF_ERROR(status);
  // As IREE's runtime: the view's shape must fit in the bytes it views.
  for (int32_t i = 0; i < rank && iree_status_is_ok(status); ++i) {
    if (shape[i] < 0) status = iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: dimension %d is %lld", fn, (int)i,
                                                (long long)shape[i]);
  }
  if (iree_status_is_ok(status) && npukit_hal_buffer_view_byte_length(view) > view->buffer->length) {
    status = iree_make_status(IREE_STATUS_OUT_OF_RANGE, "%s: buffer view byte length %zu exceeds the buffer's %zu", fn,
                              npukit_hal_buffer_view_byte_length(view), (size_t)view->buffer->length);
  }
  if (!iree_status_is_ok(status)) {
    npukit_hal_buffer_view_release(view);
    return status;
  }
  return npukit_ret_ref(fn, rets, view, npukit_hal_buffer_view_type());
}

iree_status_t npukit_hal_call_buffer_view_assert(const char* fn, iree_byte_span_t args) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* view_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* message_ref = iree_vm_abi_read_ref(&r);
  uint32_t element_type = (uint32_t)iree_vm_abi_read_i32(&r);
  uint32_t encoding_type = (uint32_t)iree_vm_abi_read_i32(&r);
  int64_t shape[NPUKIT_HAL_MAX_RANK];
  int32_t rank = 0;
  IREE_RETURN_IF_ERROR(read_shape(fn, &r, shape, &rank));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  iree_vm_buffer_t* message;
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(message_ref, true, fn, "the message", &message));
  iree_string_view_t label = message ? npukit_vm_buffer_string(message) : iree_make_cstring_view("tensor");
  npukit_hal_buffer_view_t* view;
  if (!view_ref->ptr) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%.*s: no buffer view was passed", (int)label.size,
                            label.data);
  }
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer_view(view_ref, false, fn, "the buffer view", &view));
  return npukit_hal_buffer_view_assert(view, label, element_type, encoding_type, (iree_host_size_t)rank, shape);
}

static iree_status_t read_view(const char* fn, iree_vm_abi_reader_t* r, npukit_hal_buffer_view_t** out_view) {
  return npukit_arg_npukit_hal_buffer_view(iree_vm_abi_read_ref(r), false, fn, "the buffer view", out_view);
}

static iree_status_t read_buffer(const char* fn, iree_vm_abi_reader_t* r, npukit_hal_buffer_t** out_buffer) {
  return npukit_arg_npukit_hal_buffer(iree_vm_abi_read_ref(r), false, fn, "the buffer", out_buffer);
}

iree_status_t npukit_hal_call_buffer_length(const char* fn, iree_byte_span_t args, iree_byte_span_t rets) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  npukit_hal_buffer_t* buffer;
  IREE_RETURN_IF_ERROR(read_buffer(fn, &r, &buffer));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  return npukit_ret_i64(fn, rets, (int64_t)buffer->length);
}

iree_status_t npukit_hal_call_buffer_subspan(const char* fn, iree_byte_span_t args, iree_byte_span_t rets,
                                             iree_allocator_t allocator) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  npukit_hal_buffer_t* buffer;
  IREE_RETURN_IF_ERROR(read_buffer(fn, &r, &buffer));
  int64_t offset = iree_vm_abi_read_i64(&r);
  int64_t length = iree_vm_abi_read_i64(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_t* subspan = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_buffer_subspan(buffer, offset, length, allocator, &subspan));
  return npukit_ret_ref(fn, rets, subspan, npukit_hal_buffer_type());
}

iree_status_t npukit_hal_call_buffer_view_buffer(const char* fn, iree_byte_span_t args, iree_byte_span_t rets) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  npukit_hal_buffer_view_t* view;
  IREE_RETURN_IF_ERROR(read_view(fn, &r, &view));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_retain(view->buffer);
  return npukit_ret_ref(fn, rets, view->buffer, npukit_hal_buffer_type());
}

iree_status_t npukit_hal_call_buffer_view_dim(const char* fn, iree_byte_span_t args, iree_byte_span_t rets) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  npukit_hal_buffer_view_t* view;
  IREE_RETURN_IF_ERROR(read_view(fn, &r, &view));
  int32_t index = iree_vm_abi_read_i32(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  return npukit_ret_i64(fn, rets, index >= 0 && (iree_host_size_t)index < view->rank ? view->shape[index] : 0);
}

iree_status_t npukit_hal_call_buffer_view_property(const char* fn, iree_byte_span_t args, iree_byte_span_t rets,
                                                   npukit_hal_view_property_t property) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  npukit_hal_buffer_view_t* view;
  IREE_RETURN_IF_ERROR(read_view(fn, &r, &view));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  int32_t value = property == NPUKIT_HAL_VIEW_ELEMENT_TYPE    ? (int32_t)view->element_type
                  : property == NPUKIT_HAL_VIEW_ENCODING_TYPE ? (int32_t)view->encoding_type
                                                              : (int32_t)view->rank;
  return npukit_ret_i32(fn, rets, value);
}

iree_status_t npukit_hal_call_executable_lookup_function(const char* fn, iree_byte_span_t args,
                                                         iree_byte_span_t rets) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* executable_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* name_ref = iree_vm_abi_read_ref(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_executable_t* executable;
  iree_vm_buffer_t* name;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_executable(executable_ref, false, fn, "the executable", &executable));
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(name_ref, false, fn, "the function name", &name));
  uint32_t ordinal = 0;
  IREE_RETURN_IF_ERROR(npukit_hal_executable_lookup_function(executable, npukit_vm_buffer_string(name), &ordinal));
  return npukit_ret_i64(fn, rets, (int64_t)ordinal);
}
