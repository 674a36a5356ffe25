// The hal_inline module (version 0): buffers and buffer views for modules
// compiled with --iree-execution-model=inline-dynamic. Buffers are host
// memory; their storage is exposed to the VM as vm.buffer.

#include "module_args.h"
#include "npukit/hal/modules.h"

typedef struct hal_inline_module_t {
  iree_allocator_t allocator;
} hal_inline_module_t;

static iree_allocator_t module_allocator(void* module) { return ((hal_inline_module_t*)module)->allocator; }

static iree_status_t write_buffer_and_storage(const char* fn, iree_byte_span_t rets, npukit_hal_buffer_t* buffer) {
  iree_vm_ref_t buffer_ref = {buffer, npukit_hal_buffer_type()};
  iree_vm_ref_t storage_ref = npukit_hal_buffer_storage(buffer);
  iree_vm_abi_writer_t w = iree_vm_abi_writer(rets);
  iree_vm_abi_write_ref_move(&w, &buffer_ref);
  iree_vm_abi_write_ref_move(&w, &storage_ref);
  return iree_vm_abi_reader_finish(&w, fn);
}

NPUKIT_HAL_FUNCTION(buffer_allocate) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
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
  IREE_RETURN_IF_ERROR(npukit_hal_buffer_allocate(module_allocator(module), (iree_host_size_t)size,
                                                  (iree_host_size_t)alignment, 0, 0, &buffer));
  return write_buffer_and_storage(fn, rets, buffer);
}

NPUKIT_HAL_FUNCTION(buffer_allocate_initialized) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  const char* fn = "hal_inline.buffer.allocate.initialized";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  int32_t alignment = iree_vm_abi_read_i32(&r);
  iree_vm_ref_t* source_ref = iree_vm_abi_read_ref(&r);
  int64_t offset = iree_vm_abi_read_i64(&r);
  int64_t length = iree_vm_abi_read_i64(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  iree_vm_buffer_t* source;
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(source_ref, false, fn, "the source", &source));
  if (offset < 0 || length < 0 || alignment < 0 || (alignment & (alignment - 1)) != 0) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: offset %lld, length %lld, alignment %d", fn,
                            (long long)offset, (long long)length, (int)alignment);
  }
  iree_const_byte_span_t bytes;
  IREE_RETURN_IF_ERROR(iree_vm_buffer_map_ro(source, (iree_host_size_t)offset, (iree_host_size_t)length, &bytes));
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_buffer_allocate(module_allocator(module), (iree_host_size_t)length,
                                                  (iree_host_size_t)alignment, 0, 0, &buffer));
  if (bytes.data_length) memcpy(buffer->data, bytes.data, bytes.data_length);
  return write_buffer_and_storage(fn, rets, buffer);
}

NPUKIT_HAL_FUNCTION(buffer_length) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  return npukit_hal_call_buffer_length("hal_inline.buffer.length", args, rets);
}

NPUKIT_HAL_FUNCTION(buffer_storage) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  const char* fn = "hal_inline.buffer.storage";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* buffer_ref = iree_vm_abi_read_ref(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_t* buffer;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(buffer_ref, false, fn, "the buffer", &buffer));
  iree_vm_ref_t storage = npukit_hal_buffer_storage(buffer);
  iree_vm_abi_writer_t w = iree_vm_abi_writer(rets);
  iree_vm_abi_write_ref_move(&w, &storage);
  return iree_vm_abi_reader_finish(&w, fn);
}

NPUKIT_HAL_FUNCTION(buffer_subspan) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  return npukit_hal_call_buffer_subspan("hal_inline.buffer.subspan", args, rets, module_allocator(module));
}

NPUKIT_HAL_FUNCTION(buffer_wrap) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  const char* fn = "hal_inline.buffer.wrap";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* source_ref = iree_vm_abi_read_ref(&r);
  int64_t offset = iree_vm_abi_read_i64(&r);
  int64_t length = iree_vm_abi_read_i64(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  iree_vm_buffer_t* source;
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(source_ref, false, fn, "the source", &source));
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_buffer_import(source, offset, length, 0, NPUKIT_HAL_BUFFER_USAGE_ALL,
                                                module_allocator(module), &buffer));
  return npukit_ret_ref(fn, rets, buffer, npukit_hal_buffer_type());
}

NPUKIT_HAL_FUNCTION(buffer_view_assert) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  (void)rets;
  return npukit_hal_call_buffer_view_assert("hal_inline.buffer_view.assert", args);
}

NPUKIT_HAL_FUNCTION(buffer_view_create) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  return npukit_hal_call_buffer_view_create("hal_inline.buffer_view.create", args, rets, module_allocator(module));
}

NPUKIT_HAL_FUNCTION(buffer_view_buffer) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  return npukit_hal_call_buffer_view_buffer("hal_inline.buffer_view.buffer", args, rets);
}

NPUKIT_HAL_FUNCTION(buffer_view_dim) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  return npukit_hal_call_buffer_view_dim("hal_inline.buffer_view.dim", args, rets);
}

NPUKIT_HAL_FUNCTION(buffer_view_element_type) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  return npukit_hal_call_buffer_view_property("hal_inline.buffer_view.element_type", args, rets,
                                              NPUKIT_HAL_VIEW_ELEMENT_TYPE);
}

NPUKIT_HAL_FUNCTION(buffer_view_encoding_type) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  return npukit_hal_call_buffer_view_property("hal_inline.buffer_view.encoding_type", args, rets,
                                              NPUKIT_HAL_VIEW_ENCODING_TYPE);
}

NPUKIT_HAL_FUNCTION(buffer_view_rank) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  return npukit_hal_call_buffer_view_property("hal_inline.buffer_view.rank", args, rets, NPUKIT_HAL_VIEW_RANK);
}

NPUKIT_HAL_FUNCTION(buffer_view_trace) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
  (void)args;
  (void)rets;
  // Tracing is compiled in only with IREE's trace flags; there is no sink.
  return iree_ok_status();
}

NPUKIT_HAL_FUNCTION(device_query_i64) {
  NPUKIT_HAL_UNUSED_CALL_ARGS;
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

#define EXPORT(name, cconv) {{name, sizeof(name) - 1}, {cconv, sizeof(cconv) - 1}, 0, NULL}
#define FUNCTION(fn)                                                \
  {(iree_vm_native_function_shim_t)(void (*)(void))iree_emitc_shim, \
   (iree_vm_native_function_target_t)(void (*)(void))fn}

static const iree_vm_native_export_descriptor_t hal_inline_exports[] = {
    EXPORT("buffer.allocate", "0iI_rr"),
    EXPORT("buffer.allocate.initialized", "0irII_rr"),
    EXPORT("buffer.length", "0r_I"),
    EXPORT("buffer.storage", "0r_r"),
    EXPORT("buffer.subspan", "0rII_r"),
    EXPORT("buffer.wrap", "0rII_r"),
    EXPORT("buffer_view.assert", "0rriiCID_v"),
    EXPORT("buffer_view.buffer", "0r_r"),
    EXPORT("buffer_view.create", "0rIIiiCID_r"),
    EXPORT("buffer_view.dim", "0ri_I"),
    EXPORT("buffer_view.element_type", "0r_i"),
    EXPORT("buffer_view.encoding_type", "0r_i"),
    EXPORT("buffer_view.rank", "0r_i"),
    EXPORT("buffer_view.trace", "0rCrD_v"),
    EXPORT("device.query.i64", "0rr_iI"),
};

static const iree_vm_native_function_ptr_t hal_inline_functions[] = {
    FUNCTION(buffer_allocate),
    FUNCTION(buffer_allocate_initialized),
    FUNCTION(buffer_length),
    FUNCTION(buffer_storage),
    FUNCTION(buffer_subspan),
    FUNCTION(buffer_wrap),
    FUNCTION(buffer_view_assert),
    FUNCTION(buffer_view_buffer),
    FUNCTION(buffer_view_create),
    FUNCTION(buffer_view_dim),
    FUNCTION(buffer_view_element_type),
    FUNCTION(buffer_view_encoding_type),
    FUNCTION(buffer_view_rank),
    FUNCTION(buffer_view_trace),
    FUNCTION(device_query_i64),
};

_Static_assert(IREE_ARRAYSIZE(hal_inline_exports) == IREE_ARRAYSIZE(hal_inline_functions), "one function per export");

static const iree_vm_native_module_descriptor_t hal_inline_descriptor = {
    {"hal_inline", 10},
    0,
    0,
    NULL,
    0,
    NULL,
    0,
    NULL,
    IREE_ARRAYSIZE(hal_inline_exports),
    hal_inline_exports,
    IREE_ARRAYSIZE(hal_inline_functions),
    hal_inline_functions,
};

static void hal_inline_destroy(void* self) {
  hal_inline_module_t* module = (hal_inline_module_t*)self;
  iree_allocator_free(module->allocator, module);
}

iree_status_t npukit_hal_inline_module_create(iree_vm_instance_t* instance, iree_allocator_t allocator,
                                              iree_vm_module_t** out_module) {
  *out_module = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_register_types(instance));
  hal_inline_module_t* module = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*module), (void**)&module));
  module->allocator = allocator;
  iree_vm_module_t interface;
  iree_vm_module_initialize(&interface, module);
  interface.destroy = hal_inline_destroy;
  iree_status_t status =
      iree_vm_native_module_create(&interface, &hal_inline_descriptor, instance, allocator, out_module);
  if (!iree_status_is_ok(status)) iree_allocator_free(allocator, module);
  return status;
}
