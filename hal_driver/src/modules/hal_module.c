// The full hal module (version 7) for modules compiled with IREE's default
// (async) execution model, on the local synchronous device: every queue
// operation runs when it is submitted, after checking that what it waits on
// has been reached, and then signals its fence.

#include "module_args.h"
#include "npukit/hal/command_buffer.h"
#include "npukit/hal/device.h"
#include "npukit/hal/fence.h"
#include "npukit/hal/modules.h"

typedef struct hal_module_t {
  npukit_hal_module_base_t base;
  npukit_hal_device_t* device;
} hal_module_t;

NPUKIT_HAL_DEFINE_ARG(npukit_hal_device, npukit_hal_device_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_allocator, npukit_hal_allocator_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_fence, npukit_hal_fence_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_file, npukit_hal_file_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_command_buffer, npukit_hal_command_buffer_t)

static iree_allocator_t host_allocator(void* module) { return npukit_hal_module_allocator(module); }

// Queue operations: wait, run, then signal (or fail) the signal fence.
static iree_status_t queue_begin(const char* fn, iree_vm_ref_t* wait_ref, iree_vm_ref_t* signal_ref,
                                 npukit_hal_fence_t** out_signal) {
  npukit_hal_fence_t* wait;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_fence(wait_ref, true, fn, "the wait fence", &wait));
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_fence(signal_ref, true, fn, "the signal fence", out_signal));
  iree_status_t status = npukit_hal_fence_wait(wait, fn);
  if (!iree_status_is_ok(status) && *out_signal) npukit_hal_fence_fail(*out_signal, iree_status_code(status));
  return status;
}

static iree_status_t queue_end(npukit_hal_fence_t* signal, iree_status_t status) {
  if (signal) {
    if (iree_status_is_ok(status)) {
      npukit_hal_fence_signal(signal);
    } else {
      npukit_hal_fence_fail(signal, iree_status_code(status));
    }
  }
  return status;
}

//===----------------------------------------------------------------------===//
// Allocators, buffers and buffer views
//===----------------------------------------------------------------------===//

NPUKIT_HAL_SHARED_BUFFER_FUNCTIONS("hal.")

NPUKIT_HAL_FUNCTION(allocator_allocate) {
  const char* fn = "hal.allocator.allocate";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* allocator_ref = iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);  // queue affinity
  uint32_t memory_types = (uint32_t)iree_vm_abi_read_i32(&r);
  uint32_t usage = (uint32_t)iree_vm_abi_read_i32(&r);
  int64_t size = iree_vm_abi_read_i64(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_allocator_t* allocator;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_allocator(allocator_ref, false, fn, "the allocator", &allocator));
  if (size < 0) return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: size %lld", fn, (long long)size);
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(
      npukit_hal_buffer_allocate(host_allocator(module), (iree_host_size_t)size, 0, memory_types, usage, &buffer));
  return npukit_ret_ref(fn, rets, buffer, npukit_hal_buffer_type());
}

NPUKIT_HAL_FUNCTION(allocator_import) {
  const char* fn = "hal.allocator.import";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* allocator_ref = iree_vm_abi_read_ref(&r);
  int32_t try_import = iree_vm_abi_read_i32(&r);
  (void)iree_vm_abi_read_i64(&r);  // queue affinity
  uint32_t memory_types = (uint32_t)iree_vm_abi_read_i32(&r);
  uint32_t usage = (uint32_t)iree_vm_abi_read_i32(&r);
  iree_vm_buffer_t* source;
  int64_t offset, length;
  IREE_RETURN_IF_ERROR(npukit_read_vm_buffer_range(fn, &r, "the source", &source, &offset, &length));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_allocator_t* allocator;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_allocator(allocator_ref, false, fn, "the allocator", &allocator));
  npukit_hal_buffer_t* buffer = NULL;
  iree_status_t status =
      npukit_hal_buffer_import(source, offset, length, memory_types, usage, host_allocator(module), &buffer);
  if (!iree_status_is_ok(status) && try_import) {
    // The program falls back to allocate + queue.read.
    iree_status_ignore(status);
    return npukit_ret_ref(fn, rets, NULL, 0);
  }
  IREE_RETURN_IF_ERROR(status);
  return npukit_ret_ref(fn, rets, buffer, npukit_hal_buffer_type());
}

NPUKIT_HAL_FUNCTION(buffer_assert) {
  const char* fn = "hal.buffer.assert";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* buffer_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* message_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* allocator_ref = iree_vm_abi_read_ref(&r);
  int64_t minimum_length = iree_vm_abi_read_i64(&r);
  uint32_t memory_types = (uint32_t)iree_vm_abi_read_i32(&r);
  uint32_t usage = (uint32_t)iree_vm_abi_read_i32(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_t* buffer;
  iree_vm_buffer_t* message;
  npukit_hal_allocator_t* allocator;
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(message_ref, true, fn, "the message", &message));
  iree_string_view_t label = message ? npukit_vm_buffer_string(message) : iree_make_cstring_view("buffer");
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(buffer_ref, false, fn, "the buffer", &buffer));
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_allocator(allocator_ref, false, fn, "the allocator", &allocator));
  if (minimum_length < 0 || buffer->length < (uint64_t)minimum_length) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%.*s buffer byte length %zu less than expected minimum %lld",
                            (int)label.size, label.data, buffer->length, (long long)minimum_length);
  }
  if ((buffer->memory_type & memory_types) != memory_types) {
    return iree_make_status(IREE_STATUS_PERMISSION_DENIED,
                            "%.*s buffer memory type is not compatible; buffer has %08" PRIX32
                            ", operation requires %08" PRIX32,
                            (int)label.size, label.data, buffer->memory_type, memory_types);
  }
  if ((buffer->allowed_usage & usage) != usage) {
    return iree_make_status(IREE_STATUS_PERMISSION_DENIED,
                            "%.*s requested usage was not specified when the buffer was allocated; buffer allows "
                            "%08" PRIX32 ", operation requires %08" PRIX32,
                            (int)label.size, label.data, buffer->allowed_usage, usage);
  }
  return iree_ok_status();
}

// The bytes of a host load or store of 1, 2 or 4 bytes.
static iree_status_t scalar_range(const char* fn, npukit_hal_buffer_t* buffer, int64_t offset, int32_t length,
                                  uint8_t** out_bytes) {
  if (length != 1 && length != 2 && length != 4) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: length %d is not 1, 2 or 4 bytes", fn, (int)length);
  }
  iree_byte_span_t span;
  IREE_RETURN_IF_ERROR(iree_status_annotate_f(npukit_hal_buffer_map_range(buffer, offset, length, &span), "%s", fn));
  *out_bytes = span.data;
  return iree_ok_status();
}

NPUKIT_HAL_FUNCTION(buffer_load) {
  const char* fn = "hal.buffer.load";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* buffer_ref = iree_vm_abi_read_ref(&r);
  int64_t offset = iree_vm_abi_read_i64(&r);
  int32_t length = iree_vm_abi_read_i32(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_t* buffer;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(buffer_ref, false, fn, "the source buffer", &buffer));
  uint8_t* bytes;
  IREE_RETURN_IF_ERROR(scalar_range(fn, buffer, offset, length, &bytes));
  uint32_t value = 0;
  for (int32_t i = 0; i < length; ++i) value |= (uint32_t)bytes[i] << (8 * i);  // little-endian
  return npukit_ret_i32(fn, rets, (int32_t)value);
}

NPUKIT_HAL_FUNCTION(buffer_store) {
  const char* fn = "hal.buffer.store";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  uint32_t value = (uint32_t)iree_vm_abi_read_i32(&r);
  iree_vm_ref_t* buffer_ref = iree_vm_abi_read_ref(&r);
  int64_t offset = iree_vm_abi_read_i64(&r);
  int32_t length = iree_vm_abi_read_i32(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_t* buffer;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(buffer_ref, false, fn, "the target buffer", &buffer));
  if (buffer->read_only) return iree_make_status(IREE_STATUS_PERMISSION_DENIED, "%s: the buffer is read-only", fn);
  uint8_t* bytes;
  IREE_RETURN_IF_ERROR(scalar_range(fn, buffer, offset, length, &bytes));
  for (int32_t i = 0; i < length; ++i) bytes[i] = (uint8_t)(value >> (8 * i));
  return iree_ok_status();
}

//===----------------------------------------------------------------------===//
// Command buffers
//===----------------------------------------------------------------------===//

static iree_status_t read_buffer_ref(const char* fn, iree_vm_ref_t* buffer_ref, int32_t slot,
                                     npukit_hal_buffer_ref_t* out) {
  memset(out, 0, sizeof(*out));
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(buffer_ref, true, fn, "a buffer", &out->buffer));
  if (slot < 0) return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "%s: binding slot %d", fn, (int)slot);
  out->slot = (uint32_t)slot;
  return iree_ok_status();
}

NPUKIT_HAL_FUNCTION(command_buffer_copy_buffer) {
  const char* fn = "hal.command_buffer.copy_buffer";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* cb_ref = iree_vm_abi_read_ref(&r);
  int32_t source_slot = iree_vm_abi_read_i32(&r);
  int32_t target_slot = iree_vm_abi_read_i32(&r);
  iree_vm_ref_t* source_ref = iree_vm_abi_read_ref(&r);
  int64_t source_offset = iree_vm_abi_read_i64(&r);
  iree_vm_ref_t* target_ref = iree_vm_abi_read_ref(&r);
  int64_t target_offset = iree_vm_abi_read_i64(&r);
  int64_t length = iree_vm_abi_read_i64(&r);
  (void)iree_vm_abi_read_i64(&r);  // flags
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_command_buffer_t* cb;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_command_buffer(cb_ref, false, fn, "the command buffer", &cb));
  npukit_hal_buffer_ref_t source, target;
  IREE_RETURN_IF_ERROR(read_buffer_ref(fn, source_ref, source_slot, &source));
  IREE_RETURN_IF_ERROR(read_buffer_ref(fn, target_ref, target_slot, &target));
  source.offset = source_offset;
  target.offset = target_offset;
  source.length = target.length = length;
  return npukit_hal_command_buffer_copy(cb, source, target, length);
}

NPUKIT_HAL_FUNCTION(command_buffer_create) {
  const char* fn = "hal.command_buffer.create";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* device_ref = iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i32(&r);  // modes
  (void)iree_vm_abi_read_i32(&r);  // command categories
  (void)iree_vm_abi_read_i64(&r);  // queue affinity
  int32_t binding_capacity = iree_vm_abi_read_i32(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_device_t* device;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_device(device_ref, false, fn, "the device", &device));
  if (binding_capacity < 0) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: binding capacity %d", fn, (int)binding_capacity);
  }
  npukit_hal_command_buffer_t* cb = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_command_buffer_create((uint32_t)binding_capacity, host_allocator(module), &cb));
  return npukit_ret_ref(fn, rets, cb, npukit_hal_command_buffer_type());
}

NPUKIT_HAL_FUNCTION(command_buffer_dispatch) {
  const char* fn = "hal.command_buffer.dispatch";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* cb_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* executable_ref = iree_vm_abi_read_ref(&r);
  int64_t function_id = iree_vm_abi_read_i64(&r);
  uint32_t workgroups[3];
  for (int i = 0; i < 3; ++i) workgroups[i] = (uint32_t)iree_vm_abi_read_i32(&r);
  (void)iree_vm_abi_read_i64(&r);  // flags
  uint32_t constants[NPUKIT_HAL_MAX_CONSTANTS];
  int32_t constant_count = 0, binding_count = 0;
  IREE_RETURN_IF_ERROR(npukit_read_dispatch_counts(fn, &r, constants, &constant_count, &binding_count));
  npukit_hal_buffer_ref_t bindings[NPUKIT_HAL_MAX_BINDINGS];
  for (int32_t i = 0; i < binding_count; ++i) {
    (void)iree_vm_abi_read_i32(&r);  // reserved
    int32_t slot = iree_vm_abi_read_i32(&r);
    iree_vm_ref_t* buffer_ref = iree_vm_abi_read_ref(&r);
    IREE_RETURN_IF_ERROR(read_buffer_ref(fn, buffer_ref, slot, &bindings[i]));
    bindings[i].offset = iree_vm_abi_read_i64(&r);
    bindings[i].length = iree_vm_abi_read_i64(&r);
  }
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_command_buffer_t* cb;
  npukit_hal_executable_t* executable;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_command_buffer(cb_ref, false, fn, "the command buffer", &cb));
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_executable(executable_ref, false, fn, "the executable", &executable));
  if (function_id < 0 || function_id > UINT32_MAX) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "%s: function id %lld", fn, (long long)function_id);
  }
  return npukit_hal_command_buffer_dispatch(cb, executable, (uint32_t)function_id, workgroups, constants,
                                            (uint32_t)constant_count, bindings, (uint32_t)binding_count);
}

NPUKIT_HAL_FUNCTION(command_buffer_execution_barrier) {
  const char* fn = "hal.command_buffer.execution_barrier";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* cb_ref = iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i32(&r);
  (void)iree_vm_abi_read_i32(&r);
  (void)iree_vm_abi_read_i64(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_command_buffer_t* cb;
  // Commands run one after another: every barrier is already satisfied.
  return npukit_arg_npukit_hal_command_buffer(cb_ref, false, fn, "the command buffer", &cb);
}

NPUKIT_HAL_FUNCTION(command_buffer_fill_buffer) {
  const char* fn = "hal.command_buffer.fill_buffer";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* cb_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* target_ref = iree_vm_abi_read_ref(&r);
  int64_t offset = iree_vm_abi_read_i64(&r);
  int64_t length = iree_vm_abi_read_i64(&r);
  int32_t slot = iree_vm_abi_read_i32(&r);
  int64_t pattern = iree_vm_abi_read_i64(&r);
  int32_t pattern_length = iree_vm_abi_read_i32(&r);
  (void)iree_vm_abi_read_i64(&r);  // flags
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_command_buffer_t* cb;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_command_buffer(cb_ref, false, fn, "the command buffer", &cb));
  npukit_hal_buffer_ref_t target;
  IREE_RETURN_IF_ERROR(read_buffer_ref(fn, target_ref, slot, &target));
  target.offset = offset;
  target.length = length;
  return npukit_hal_command_buffer_fill(cb, target, (uint64_t)pattern, (uint32_t)pattern_length);
}

NPUKIT_HAL_FUNCTION(command_buffer_finalize) {
  const char* fn = "hal.command_buffer.finalize";
  npukit_hal_command_buffer_t* cb;
  IREE_RETURN_IF_ERROR(npukit_only_arg_npukit_hal_command_buffer(fn, args, "the command buffer", &cb));
  return npukit_hal_command_buffer_finalize(cb);
}

//===----------------------------------------------------------------------===//
// Devices and queues
//===----------------------------------------------------------------------===//

NPUKIT_HAL_GETTER_FUNCTION(device_allocator, "hal.device.allocator", npukit_hal_device, npukit_hal_device_t,
                           "the device", npukit_hal_device_allocator_ref)

NPUKIT_HAL_FUNCTION(device_query_i64) {
  const char* fn = "hal.device.query.i64";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* device_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* category_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* key_ref = iree_vm_abi_read_ref(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_device_t* device;
  iree_vm_buffer_t *category, *key;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_device(device_ref, false, fn, "the device", &device));
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(category_ref, false, fn, "the category", &category));
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(key_ref, false, fn, "the key", &key));
  int32_t ok;
  int64_t value;
  npukit_hal_device_query_i64(device, npukit_vm_buffer_string(category), npukit_vm_buffer_string(key), &ok, &value);
  iree_vm_abi_writer_t w = iree_vm_abi_writer(rets);
  iree_vm_abi_write_i32(&w, ok);
  iree_vm_abi_write_i64(&w, value);
  return iree_vm_abi_reader_finish(&w, fn);
}

NPUKIT_HAL_FUNCTION(device_queue_alloca) {
  const char* fn = "hal.device.queue.alloca";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* device_ref = iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);  // queue affinity
  iree_vm_ref_t* wait_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* signal_ref = iree_vm_abi_read_ref(&r);
  int64_t pool = iree_vm_abi_read_i64(&r);
  uint32_t memory_types = (uint32_t)iree_vm_abi_read_i32(&r);
  uint32_t usage = (uint32_t)iree_vm_abi_read_i32(&r);
  int64_t size = iree_vm_abi_read_i64(&r);
  (void)iree_vm_abi_read_i64(&r);  // flags
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_device_t* device;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_device(device_ref, false, fn, "the device", &device));
  if (pool != 0) return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "%s: allocation pools are not supported", fn);
  if (size < 0) return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: size %lld", fn, (long long)size);
  npukit_hal_fence_t* signal;
  IREE_RETURN_IF_ERROR(queue_begin(fn, wait_ref, signal_ref, &signal));
  npukit_hal_buffer_t* buffer = NULL;
  iree_status_t status =
      npukit_hal_buffer_allocate(host_allocator(module), (iree_host_size_t)size, 0, memory_types, usage, &buffer);
  IREE_RETURN_IF_ERROR(queue_end(signal, status));
  return npukit_ret_ref(fn, rets, buffer, npukit_hal_buffer_type());
}

NPUKIT_HAL_FUNCTION(device_queue_barrier) {
  const char* fn = "hal.device.queue.barrier";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  (void)iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);
  iree_vm_ref_t* wait_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* signal_ref = iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_fence_t* signal;
  IREE_RETURN_IF_ERROR(queue_begin(fn, wait_ref, signal_ref, &signal));
  return queue_end(signal, iree_ok_status());
}

NPUKIT_HAL_FUNCTION(device_queue_dealloca) {
  const char* fn = "hal.device.queue.dealloca";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  (void)iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);
  iree_vm_ref_t* wait_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* signal_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* buffer_ref = iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_t* buffer;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(buffer_ref, false, fn, "the buffer", &buffer));
  npukit_hal_fence_t* signal;
  IREE_RETURN_IF_ERROR(queue_begin(fn, wait_ref, signal_ref, &signal));
  // The storage goes with the buffer's last reference.
  return queue_end(signal, iree_ok_status());
}

static iree_status_t execute(const char* fn, iree_byte_span_t args, bool indirect) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  (void)iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);
  iree_vm_ref_t* wait_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* signal_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* cb_ref = iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);  // flags
  npukit_hal_binding_table_entry_t table[NPUKIT_HAL_MAX_BINDINGS];
  int32_t table_count = 0;
  if (indirect) {
    table_count = iree_vm_abi_read_i32(&r);
    if (table_count < 0 || table_count > NPUKIT_HAL_MAX_BINDINGS) {
      return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "%s: binding table of %d entries", fn, (int)table_count);
    }
    for (int32_t i = 0; i < table_count; ++i) {
      iree_vm_ref_t* buffer_ref = iree_vm_abi_read_ref(&r);
      IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(buffer_ref, true, fn, "a binding", &table[i].buffer));
      table[i].offset = iree_vm_abi_read_i64(&r);
      table[i].length = iree_vm_abi_read_i64(&r);
    }
  }
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_command_buffer_t* cb;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_command_buffer(cb_ref, true, fn, "the command buffer", &cb));
  npukit_hal_fence_t* signal;
  IREE_RETURN_IF_ERROR(queue_begin(fn, wait_ref, signal_ref, &signal));
  iree_status_t status =
      cb ? npukit_hal_command_buffer_execute(cb, table, (iree_host_size_t)table_count) : iree_ok_status();
  return queue_end(signal, status);
}

NPUKIT_HAL_FUNCTION(device_queue_execute) {
  return execute("hal.device.queue.execute", args, false);
}

NPUKIT_HAL_FUNCTION(device_queue_execute_indirect) {
  return execute("hal.device.queue.execute.indirect", args, true);
}

NPUKIT_HAL_FUNCTION(device_queue_fill) {
  const char* fn = "hal.device.queue.fill";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  (void)iree_vm_abi_read_ref(&r);  // device
  (void)iree_vm_abi_read_i64(&r);  // queue affinity
  iree_vm_ref_t* wait_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* signal_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* target_ref = iree_vm_abi_read_ref(&r);
  int64_t offset = iree_vm_abi_read_i64(&r);
  int64_t length = iree_vm_abi_read_i64(&r);
  uint64_t pattern = (uint64_t)iree_vm_abi_read_i64(&r);
  int32_t pattern_length = iree_vm_abi_read_i32(&r);
  (void)iree_vm_abi_read_i64(&r);  // flags
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_buffer_t* target;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(target_ref, false, fn, "the target buffer", &target));
  npukit_hal_fence_t* signal;
  IREE_RETURN_IF_ERROR(queue_begin(fn, wait_ref, signal_ref, &signal));
  iree_byte_span_t span;
  iree_status_t status = target->read_only
                             ? iree_make_status(IREE_STATUS_PERMISSION_DENIED, "the target buffer is read-only")
                             : npukit_hal_buffer_map_range(target, offset, length, &span);
  if (iree_status_is_ok(status)) status = npukit_hal_fill_pattern(span, pattern, (uint32_t)pattern_length);
  return queue_end(signal, iree_status_annotate_f(status, "%s", fn));
}

NPUKIT_HAL_FUNCTION(device_queue_flush) {
  return iree_ok_status();  // nothing is ever pending
}

// queue.read, queue.copy and queue.update: (device, affinity, wait, signal,
// source, source offset, target buffer, target offset, length, flags), with
// a file, a buffer or a vm.buffer as the source.
typedef enum transfer_source_e {
  TRANSFER_FROM_FILE,
  TRANSFER_FROM_BUFFER,
  TRANSFER_FROM_VM_BUFFER,
} transfer_source_t;

static iree_status_t source_bytes(const char* fn, iree_vm_ref_t* ref, transfer_source_t kind, int64_t offset,
                                  int64_t length, const uint8_t** out_data) {
  const uint8_t* data = NULL;
  iree_host_size_t size = 0;
  if (kind == TRANSFER_FROM_FILE) {
    npukit_hal_file_t* file;
    IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_file(ref, false, fn, "the file", &file));
    data = file->source->data.data + file->offset;
    size = file->length;
  } else if (kind == TRANSFER_FROM_BUFFER) {
    npukit_hal_buffer_t* buffer;
    IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_buffer(ref, false, fn, "the source buffer", &buffer));
    data = buffer->data;
    size = buffer->length;
  } else {
    iree_vm_buffer_t* buffer;
    IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(ref, false, fn, "the source", &buffer));
    data = buffer->data.data;
    size = buffer->data.data_length;
  }
  if (offset < 0 || length < 0 || (uint64_t)offset > size || (uint64_t)length > size - (uint64_t)offset) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "source range [%lld, +%lld) outside %zu bytes", (long long)offset,
                            (long long)length, size);
  }
  *out_data = data + offset;
  return iree_ok_status();
}

static iree_status_t queue_transfer(const char* fn, iree_byte_span_t args, transfer_source_t kind) {
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  (void)iree_vm_abi_read_ref(&r);  // device
  (void)iree_vm_abi_read_i64(&r);  // queue affinity
  iree_vm_ref_t* wait_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* signal_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* source_ref = iree_vm_abi_read_ref(&r);
  int64_t source_offset = iree_vm_abi_read_i64(&r);
  iree_vm_ref_t* target_ref = iree_vm_abi_read_ref(&r);
  int64_t target_offset = iree_vm_abi_read_i64(&r);
  int64_t length = iree_vm_abi_read_i64(&r);
  (void)iree_vm_abi_read_i64(&r);  // flags
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_fence_t* signal;
  IREE_RETURN_IF_ERROR(queue_begin(fn, wait_ref, signal_ref, &signal));
  const uint8_t* from = NULL;
  npukit_hal_buffer_t* target = NULL;
  iree_byte_span_t to;
  iree_status_t status = source_bytes(fn, source_ref, kind, source_offset, length, &from);
  if (iree_status_is_ok(status)) {
    status = npukit_arg_npukit_hal_buffer(target_ref, false, fn, "the target buffer", &target);
  }
  if (iree_status_is_ok(status) && target->read_only) {
    status = iree_make_status(IREE_STATUS_PERMISSION_DENIED, "the target buffer is read-only");
  }
  if (iree_status_is_ok(status)) status = npukit_hal_buffer_map_range(target, target_offset, length, &to);
  if (iree_status_is_ok(status)) memmove(to.data, from, to.data_length);
  return queue_end(signal, iree_status_annotate_f(status, "%s", fn));
}

NPUKIT_HAL_FUNCTION(device_queue_copy) {
  return queue_transfer("hal.device.queue.copy", args, TRANSFER_FROM_BUFFER);
}

NPUKIT_HAL_FUNCTION(device_queue_read) {
  return queue_transfer("hal.device.queue.read", args, TRANSFER_FROM_FILE);
}

NPUKIT_HAL_FUNCTION(device_queue_update) {
  return queue_transfer("hal.device.queue.update", args, TRANSFER_FROM_VM_BUFFER);
}

NPUKIT_HAL_FUNCTION(devices_count) {
  return npukit_ret_i32("hal.devices.count", rets, 1);
}

NPUKIT_HAL_FUNCTION(devices_get) {
  const char* fn = "hal.devices.get";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  int32_t index = iree_vm_abi_read_i32(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_device_t* device = index == 0 ? ((hal_module_t*)module)->device : NULL;
  if (device) npukit_hal_device_retain(device);
  return npukit_ret_ref(fn, rets, device, npukit_hal_device_type());
}

NPUKIT_HAL_FUNCTION(ex_file_from_memory) {
  const char* fn = "hal.ex.file.from_memory";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  (void)iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);
  int32_t access = iree_vm_abi_read_i32(&r);
  iree_vm_buffer_t* source;
  int64_t offset, length;
  IREE_RETURN_IF_ERROR(npukit_read_vm_buffer_range(fn, &r, "the source", &source, &offset, &length));
  (void)iree_vm_abi_read_i32(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  if (access != 1) return iree_make_status(IREE_STATUS_PERMISSION_DENIED, "%s: only read access is supported", fn);
  npukit_hal_file_t* file = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_file_create(source, offset, length, host_allocator(module), &file));
  return npukit_ret_ref(fn, rets, file, npukit_hal_file_type());
}

//===----------------------------------------------------------------------===//
// Executables
//===----------------------------------------------------------------------===//

NPUKIT_HAL_FUNCTION(executable_create) {
  const char* fn = "hal.executable.create";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* device_ref = iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);
  iree_vm_ref_t* format_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* data_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* constants_ref = iree_vm_abi_read_ref(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_device_t* device;
  iree_vm_buffer_t *format, *data, *constants;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_device(device_ref, false, fn, "the device", &device));
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(format_ref, false, fn, "the format", &format));
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(data_ref, false, fn, "the executable data", &data));
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(constants_ref, true, fn, "the constants", &constants));
  if (constants && constants->data.data_length % 4 != 0) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: constants are not whole 32-bit words", fn);
  }
  npukit_hal_executable_t* executable = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_loader_set_load(device->loaders, npukit_vm_buffer_string(format),
                                                  iree_make_const_byte_span(data->data.data, data->data.data_length),
                                                  constants ? (const uint32_t*)constants->data.data : NULL,
                                                  constants ? constants->data.data_length / 4 : 0,
                                                  host_allocator(module), &executable));
  return npukit_ret_ref(fn, rets, executable, npukit_hal_executable_type());
}

NPUKIT_HAL_FUNCTION(executable_lookup_function) {
  return npukit_hal_call_executable_lookup_function("hal.executable.lookup.function", args, rets);
}

//===----------------------------------------------------------------------===//
// Fences
//===----------------------------------------------------------------------===//

static iree_status_t read_fence_list(const char* fn, iree_vm_abi_reader_t* r, npukit_hal_fence_t** fences,
                                     int32_t* out_count) {
  int32_t count = iree_vm_abi_read_i32(r);
  if (count < 0 || count > NPUKIT_HAL_MAX_JOINED_FENCES) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "%s: %d fences", fn, (int)count);
  }
  for (int32_t i = 0; i < count; ++i) {
    IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_fence(iree_vm_abi_read_ref(r), true, fn, "a fence", &fences[i]));
  }
  *out_count = count;
  return iree_ok_status();
}

NPUKIT_HAL_FUNCTION(fence_await) {
  const char* fn = "hal.fence.await";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  (void)iree_vm_abi_read_i32(&r);  // timeout
  (void)iree_vm_abi_read_i64(&r);  // flags
  npukit_hal_fence_t* fences[NPUKIT_HAL_MAX_JOINED_FENCES];
  int32_t count = 0;
  IREE_RETURN_IF_ERROR(read_fence_list(fn, &r, fences, &count));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  for (int32_t i = 0; i < count; ++i) IREE_RETURN_IF_ERROR(npukit_hal_fence_wait(fences[i], fn));
  return npukit_ret_i32(fn, rets, 0);
}

NPUKIT_HAL_FUNCTION(fence_create) {
  const char* fn = "hal.fence.create";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* device_ref = iree_vm_abi_read_ref(&r);
  (void)iree_vm_abi_read_i64(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_device_t* device;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_device(device_ref, false, fn, "the device", &device));
  npukit_hal_fence_t* fence = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_fence_create(host_allocator(module), &fence));
  return npukit_ret_ref(fn, rets, fence, npukit_hal_fence_type());
}

NPUKIT_HAL_FUNCTION(fence_fail) {
  const char* fn = "hal.fence.fail";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* fence_ref = iree_vm_abi_read_ref(&r);
  int32_t code = iree_vm_abi_read_i32(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_fence_t* fence;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_fence(fence_ref, false, fn, "the fence", &fence));
  npukit_hal_fence_fail(fence, (iree_status_code_t)(code & IREE_STATUS_CODE_MASK));
  return iree_ok_status();
}

NPUKIT_HAL_FUNCTION(fence_join) {
  const char* fn = "hal.fence.join";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  (void)iree_vm_abi_read_i64(&r);
  npukit_hal_fence_t* fences[NPUKIT_HAL_MAX_JOINED_FENCES];
  int32_t count = 0;
  IREE_RETURN_IF_ERROR(read_fence_list(fn, &r, fences, &count));
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_fence_t* joined = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_fence_join(fences, (iree_host_size_t)count, host_allocator(module), &joined));
  return npukit_ret_ref(fn, rets, joined, npukit_hal_fence_type());
}

NPUKIT_HAL_FUNCTION(fence_query) {
  const char* fn = "hal.fence.query";
  npukit_hal_fence_t* fence;
  IREE_RETURN_IF_ERROR(npukit_only_arg_npukit_hal_fence(fn, args, "the fence", &fence));
  iree_status_code_t failure;
  npukit_hal_fence_state_t state = npukit_hal_fence_state(fence, &failure);
  int32_t result = state == NPUKIT_HAL_FENCE_REACHED  ? 0
                   : state == NPUKIT_HAL_FENCE_FAILED ? (int32_t)failure
                                                      : (int32_t)IREE_STATUS_DEFERRED;
  return npukit_ret_i32(fn, rets, result);
}

NPUKIT_HAL_FUNCTION(fence_signal) {
  const char* fn = "hal.fence.signal";
  npukit_hal_fence_t* fence;
  IREE_RETURN_IF_ERROR(npukit_only_arg_npukit_hal_fence(fn, args, "the fence", &fence));
  npukit_hal_fence_signal(fence);
  return iree_ok_status();
}

static const iree_vm_native_export_descriptor_t hal_exports[] = {
    NPUKIT_HAL_EXPORT("allocator.allocate", "0rIiiI_r"),
    NPUKIT_HAL_EXPORT("allocator.import", "0riIiirII_r"),
    NPUKIT_HAL_EXPORT("buffer.assert", "0rrrIii_v"),
    NPUKIT_HAL_EXPORT("buffer.length", "0r_I"),
    NPUKIT_HAL_EXPORT("buffer.load", "0rIi_i"),
    NPUKIT_HAL_EXPORT("buffer.store", "0irIi_v"),
    NPUKIT_HAL_EXPORT("buffer.subspan", "0rII_r"),
    NPUKIT_HAL_SHARED_BUFFER_VIEW_EXPORTS,
    NPUKIT_HAL_EXPORT("command_buffer.copy_buffer", "0riirIrIII_v"),
    NPUKIT_HAL_EXPORT("command_buffer.create", "0riiIi_r"),
    NPUKIT_HAL_EXPORT("command_buffer.dispatch", "0rrIiiiICiDCiirIID_v"),
    NPUKIT_HAL_EXPORT("command_buffer.execution_barrier", "0riiI_v"),
    NPUKIT_HAL_EXPORT("command_buffer.fill_buffer", "0rrIIiIiI_v"),
    NPUKIT_HAL_EXPORT("command_buffer.finalize", "0r_v"),
    NPUKIT_HAL_EXPORT("device.allocator", "0r_r"),
    NPUKIT_HAL_EXPORT("device.query.i64", "0rrr_iI"),
    NPUKIT_HAL_EXPORT("device.queue.alloca", "0rIrrIiiII_r"),
    NPUKIT_HAL_EXPORT("device.queue.barrier", "0rIrrI_v"),
    NPUKIT_HAL_EXPORT("device.queue.copy", "0rIrrrIrIII_v"),
    NPUKIT_HAL_EXPORT("device.queue.dealloca", "0rIrrrI_v"),
    NPUKIT_HAL_EXPORT("device.queue.execute", "0rIrrrI_v"),
    NPUKIT_HAL_EXPORT("device.queue.execute.indirect", "0rIrrrICrIID_v"),
    NPUKIT_HAL_EXPORT("device.queue.fill", "0rIrrrIIIiI_v"),
    NPUKIT_HAL_EXPORT("device.queue.flush", "0rI_v"),
    NPUKIT_HAL_EXPORT("device.queue.read", "0rIrrrIrIII_v"),
    NPUKIT_HAL_EXPORT("device.queue.update", "0rIrrrIrIII_v"),
    NPUKIT_HAL_EXPORT("devices.count", "0v_i"),
    NPUKIT_HAL_EXPORT("devices.get", "0i_r"),
    NPUKIT_HAL_EXPORT("ex.file.from_memory", "0rIirIIi_r"),
    NPUKIT_HAL_EXPORT("executable.create", "0rIrrr_r"),
    NPUKIT_HAL_EXPORT("executable.lookup.function", "0rr_I"),
    NPUKIT_HAL_EXPORT("fence.await", "0iICrD_i"),
    NPUKIT_HAL_EXPORT("fence.create", "0rI_r"),
    NPUKIT_HAL_EXPORT("fence.fail", "0ri_v"),
    NPUKIT_HAL_EXPORT("fence.join", "0ICrD_r"),
    NPUKIT_HAL_EXPORT("fence.query", "0r_i"),
    NPUKIT_HAL_EXPORT("fence.signal", "0r_v"),
};

static const iree_vm_native_function_ptr_t hal_functions[] = {
    NPUKIT_HAL_EXPORT_FUNCTION(allocator_allocate),
    NPUKIT_HAL_EXPORT_FUNCTION(allocator_import),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_assert),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_length),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_load),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_store),
    NPUKIT_HAL_EXPORT_FUNCTION(buffer_subspan),
    NPUKIT_HAL_SHARED_BUFFER_VIEW_FUNCTIONS,
    NPUKIT_HAL_EXPORT_FUNCTION(command_buffer_copy_buffer),
    NPUKIT_HAL_EXPORT_FUNCTION(command_buffer_create),
    NPUKIT_HAL_EXPORT_FUNCTION(command_buffer_dispatch),
    NPUKIT_HAL_EXPORT_FUNCTION(command_buffer_execution_barrier),
    NPUKIT_HAL_EXPORT_FUNCTION(command_buffer_fill_buffer),
    NPUKIT_HAL_EXPORT_FUNCTION(command_buffer_finalize),
    NPUKIT_HAL_EXPORT_FUNCTION(device_allocator),
    NPUKIT_HAL_EXPORT_FUNCTION(device_query_i64),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_alloca),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_barrier),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_copy),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_dealloca),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_execute),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_execute_indirect),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_fill),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_flush),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_read),
    NPUKIT_HAL_EXPORT_FUNCTION(device_queue_update),
    NPUKIT_HAL_EXPORT_FUNCTION(devices_count),
    NPUKIT_HAL_EXPORT_FUNCTION(devices_get),
    NPUKIT_HAL_EXPORT_FUNCTION(ex_file_from_memory),
    NPUKIT_HAL_EXPORT_FUNCTION(executable_create),
    NPUKIT_HAL_EXPORT_FUNCTION(executable_lookup_function),
    NPUKIT_HAL_EXPORT_FUNCTION(fence_await),
    NPUKIT_HAL_EXPORT_FUNCTION(fence_create),
    NPUKIT_HAL_EXPORT_FUNCTION(fence_fail),
    NPUKIT_HAL_EXPORT_FUNCTION(fence_join),
    NPUKIT_HAL_EXPORT_FUNCTION(fence_query),
    NPUKIT_HAL_EXPORT_FUNCTION(fence_signal),
};

_Static_assert(IREE_ARRAYSIZE(hal_exports) == IREE_ARRAYSIZE(hal_functions), "one function per export");

static const iree_vm_native_module_descriptor_t hal_descriptor =
    NPUKIT_HAL_MODULE_DESCRIPTOR("hal", 7, hal_exports, hal_functions);

static void hal_destroy(void* self) {
  npukit_hal_device_release(((hal_module_t*)self)->device);
  npukit_hal_module_state_free(self);
}

iree_status_t npukit_hal_module_create(iree_vm_instance_t* instance, void* loaders, iree_allocator_t allocator,
                                       iree_vm_module_t** out_module) {
  *out_module = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_register_full_types(instance));
  hal_module_t* module = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_module_state_allocate(instance, allocator, sizeof(*module), (void**)&module));
  iree_status_t status = npukit_hal_device_create((const npukit_hal_loader_set_t*)loaders, allocator, &module->device);
  if (!iree_status_is_ok(status)) {
    npukit_hal_module_state_free(module);
    return status;
  }
  return npukit_hal_native_module_create(instance, &hal_descriptor, module, hal_destroy, out_module);
}

iree_status_t npukit_hal_register_full_types(iree_vm_instance_t* instance) {
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_allocator_descriptor));
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_command_buffer_descriptor));
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_device_descriptor));
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_fence_descriptor));
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_file_descriptor));
  return iree_ok_status();
}

const npukit_full_hal_t npukit_full_hal = {npukit_hal_register_full_types, npukit_hal_module_create};
