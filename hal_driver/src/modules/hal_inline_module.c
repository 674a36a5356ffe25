// The hal_inline module (version 0): buffers and buffer views for modules
// compiled with --iree-execution-model=inline-dynamic. Buffers are host
// memory; their storage is exposed to the VM as vm.buffer.

#include "module_args.h"
#include "npukit/hal/modules.h"

NPUKIT_HAL_SHARED_BUFFER_FUNCTIONS("hal_inline.")

static iree_status_t write_buffer_and_storage(const char* fn, iree_byte_span_t rets, npukit_hal_buffer_t* buffer) {
  iree_vm_ref_t buffer_ref = {buffer, npukit_hal_buffer_type()};
  iree_vm_ref_t storage_ref = npukit_hal_buffer_storage(buffer);
  iree_vm_abi_writer_t w = iree_vm_abi_writer(rets);
  iree_vm_abi_write_ref_move(&w, &buffer_ref);
  iree_vm_abi_write_ref_move(&w, &storage_ref);
  return iree_vm_abi_reader_finish(&w, fn);
}

NPUKIT_HAL_FUNCTION(buffer_allocate) {
  const char* fn = "hal_inline.buffer.allocate";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  int32_t alignment = iree_vm_abi_read_i32(&r);
  int64_t size = iree_vm_abi_read_i64(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  if (size < 0 || alignment < 0 || (alignment & (alignment - 1)) != 0) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: size %lld, alignment %d", fn, (long long)size,
                            (int)alignment);
  }
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_buffer_allocate(npukit_hal_module_allocator(module), (iree_host_size_t)size,
                                                  (iree_host_size_t)alignment, 0, 0, &buffer));
  return write_buffer_and_storage(fn, rets, buffer);
}

NPUKIT_HAL_FUNCTION(buffer_allocate_initialized) {
  const char* fn = "hal_inline.buffer.allocate.initialized";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  int32_t alignment = iree_vm_abi_read_i32(&r);
  iree_vm_buffer_t* source;
  int64_t offset, length;
  IREE_RETURN_IF_ERROR(npukit_read_vm_buffer_range(fn, &r, "the source", &source, &offset, &length));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  if (offset < 0 || length < 0 || alignment < 0 || (alignment & (alignment - 1)) != 0) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: offset %lld, length %lld, alignment %d", fn,
                            (long long)offset, (long long)length, (int)alignment);
  }
  iree_const_byte_span_t bytes;
  IREE_RETURN_IF_ERROR(iree_vm_buffer_map_ro(source, (iree_host_size_t)offset, (iree_host_size_t)length, &bytes));
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_buffer_allocate(npukit_hal_module_allocator(module), (iree_host_size_t)length,
                                                  (iree_host_size_t)alignment, 0, 0, &buffer));
  if (bytes.data_length) memcpy(buffer->data, bytes.data, bytes.data_length);
  return write_buffer_and_storage(fn, rets, buffer);
}

NPUKIT_HAL_GETTER_FUNCTION(buffer_storage, "hal_inline.buffer.storage", npukit_hal_buffer, npukit_hal_buffer_t,
                           "the buffer", npukit_hal_buffer_storage)

NPUKIT_HAL_FUNCTION(buffer_wrap) {
  const char* fn = "hal_inline.buffer.wrap";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_buffer_t* source;
  int64_t offset, length;
  IREE_RETURN_IF_ERROR(npukit_read_vm_buffer_range(fn, &r, "the source", &source, &offset, &length));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_buffer_import(source, offset, length, 0, NPUKIT_HAL_BUFFER_USAGE_ALL,
                                                npukit_hal_module_allocator(module), &buffer));
  return npukit_ret_ref(fn, rets, buffer, npukit_hal_buffer_type());
}

NPUKIT_HAL_FUNCTION(buffer_view_trace) {
  // Tracing is compiled in only with IREE's trace flags; there is no sink.
  return iree_ok_status();
}

NPUKIT_HAL_FUNCTION(device_query_i64) {
  const char* fn = "hal_inline.device.query.i64";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  (void)iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_ref(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  // No query is answered: (ok = 0, value = 0).
  iree_vm_abi_writer_t w = iree_vm_abi_writer(rets);
  iree_vm_abi_write_i32(&w, 0);
  iree_vm_abi_write_i64(&w, 0);
  return iree_vm_abi_reader_finish(&w, fn);
}

static const iree_vm_native_export_descriptor_t hal_inline_exports[] = {
    NPUKIT_HAL_EXPORT("buffer.allocate", "0iI_rr"),
    NPUKIT_HAL_EXPORT("buffer.allocate.initialized", "0irII_rr"),
    NPUKIT_HAL_EXPORT("buffer.length", "0r_I"),
    NPUKIT_HAL_EXPORT("buffer.storage", "0r_r"),
    NPUKIT_HAL_EXPORT("buffer.subspan", "0rII_r"),
    NPUKIT_HAL_EXPORT("buffer.wrap", "0rII_r"),
    NPUKIT_HAL_SHARED_BUFFER_VIEW_EXPORTS,
    NPUKIT_HAL_EXPORT("buffer_view.trace", "0rCrD_v"),
    NPUKIT_HAL_EXPORT("device.query.i64", "0rr_iI"),
};

static const iree_vm_native_function_ptr_t hal_inline_functions[] = {
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_allocate),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_allocate_initialized),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_length),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_storage),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_subspan),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_wrap),
    NPUKIT_HAL_SHARED_BUFFER_VIEW_FUNCTIONS,
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_view_trace),
    NPUKIT_HAL_EXPORT_FUNCTION(device_query_i64),
};

static const iree_vm_native_module_descriptor_t hal_inline_descriptor =
    NPUKIT_HAL_MODULE_DESCRIPTOR("hal_inline", 0, hal_inline_exports, hal_inline_functions);

iree_status_t npukit_hal_inline_module_create(iree_vm_instance_t* instance, iree_allocator_t allocator,
                                              iree_vm_module_t** out_module) {
  *out_module = NULL;
  void* state = NULL;
  IREE_RETURN_IF_ERROR(
      npukit_hal_module_state_allocate(instance, allocator, sizeof(npukit_hal_module_base_t), &state));
  return npukit_hal_native_module_create(instance, &hal_inline_descriptor, state, npukit_hal_module_state_free,
                                         out_module);
}
