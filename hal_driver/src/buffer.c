#include "npukit/hal/buffer.h"

#include "npukit/arena.h"
#include "npukit/hal/buffer_plan.h"

static void buffer_destroy(void* ptr) {
  npukit_hal_buffer_t* buffer = (npukit_hal_buffer_t*)ptr;
  iree_allocator_t allocator = buffer->host_allocator;
  if (buffer->parent) npukit_hal_buffer_release(buffer->parent);
  if (buffer->imported) iree_vm_buffer_release(buffer->imported);
  if (buffer->owned_storage) iree_allocator_free_aligned(allocator, buffer->owned_storage);
  if (buffer->plan_entry) npukit_buffer_planner_release(buffer->planner, buffer->plan_entry - 1);
  iree_allocator_free(allocator, buffer);
}

const iree_vm_ref_type_descriptor_t npukit_hal_buffer_descriptor = {buffer_destroy, {"hal.buffer", 10}};

// The storage vm.buffer's "allocator": freeing it drops the reference the
// storage holds on its HAL buffer.
static iree_status_t storage_release_ctl(void* self, iree_allocator_command_t command, const void* params,
                                         void** inout_ptr) {
  (void)params;
  (void)inout_ptr;
  if (command != IREE_ALLOCATOR_COMMAND_FREE) {
    return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "storage buffers do not allocate");
  }
  npukit_hal_buffer_release((npukit_hal_buffer_t*)self);
  return iree_ok_status();
}

static iree_status_t new_buffer(iree_allocator_t allocator, npukit_hal_buffer_t** out_buffer) {
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*buffer), (void**)&buffer));
  buffer->ref_object.counter = 1;
  buffer->host_allocator = allocator;
  *out_buffer = buffer;
  return iree_ok_status();
}

iree_status_t npukit_hal_buffer_allocate(iree_allocator_t allocator, iree_host_size_t length,
                                         iree_host_size_t alignment, uint32_t memory_type, uint32_t allowed_usage,
                                         npukit_hal_buffer_t** out_buffer) {
  *out_buffer = NULL;
  if (alignment < NPUKIT_HAL_BUFFER_ALIGNMENT) alignment = NPUKIT_HAL_BUFFER_ALIGNMENT;
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(new_buffer(allocator, &buffer));
  npukit_arena_t* arena = npukit_arena_from_allocator(allocator);
  npukit_buffer_planner_t* planner = arena ? (npukit_buffer_planner_t*)arena->buffer_planner : NULL;
  iree_status_t status;
  if (planner) {
    uint32_t entry = 0;
    status = npukit_buffer_planner_take(planner, length, alignment, &buffer->data, &entry);
    if (iree_status_is_ok(status)) {
      buffer->planner = planner;
      buffer->plan_entry = entry + 1;
    }
  } else {
    status = iree_allocator_malloc_aligned(allocator, length ? length : 1, alignment, &buffer->owned_storage);
    buffer->data = (uint8_t*)buffer->owned_storage;
  }
  if (!iree_status_is_ok(status)) {
    iree_allocator_free(allocator, buffer);
    return iree_status_annotate_f(status, "allocating a buffer of %zu bytes", length);
  }
  buffer->length = length;
  buffer->memory_type = memory_type | NPUKIT_HAL_MEMORY_TYPE_LOCAL_ALL;
  buffer->allowed_usage = allowed_usage | NPUKIT_HAL_BUFFER_USAGE_ALL;
  *out_buffer = buffer;
  return iree_ok_status();
}

static iree_status_t resolve_range(iree_host_size_t available, int64_t offset, int64_t length,
                                   iree_host_size_t* out_offset, iree_host_size_t* out_length) {
  if (offset < 0 || (uint64_t)offset > available) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "offset %lld is outside a range of %zu bytes", (long long)offset,
                            available);
  }
  iree_host_size_t rest = available - (iree_host_size_t)offset;
  if (length == NPUKIT_HAL_WHOLE_BUFFER) length = (int64_t)rest;
  if (length < 0 || (uint64_t)length > rest) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "range [%lld, %lld + %lld) exceeds %zu bytes", (long long)offset,
                            (long long)offset, (long long)length, available);
  }
  *out_offset = (iree_host_size_t)offset;
  *out_length = (iree_host_size_t)length;
  return iree_ok_status();
}

iree_status_t npukit_hal_buffer_map_range(npukit_hal_buffer_t* buffer, int64_t offset, int64_t length,
                                          iree_byte_span_t* out_span) {
  iree_host_size_t start = 0, size = 0;
  IREE_RETURN_IF_ERROR(resolve_range(buffer->length, offset, length, &start, &size));
  *out_span = iree_make_byte_span(buffer->data + start, size);
  return iree_ok_status();
}

iree_status_t npukit_hal_fill_pattern(iree_byte_span_t target, uint64_t pattern, uint32_t pattern_length) {
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4 && pattern_length != 8) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "fill pattern length %" PRIu32 " is not 1, 2, 4 or 8",
                            pattern_length);
  }
  if (target.data_length % pattern_length != 0) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "fill of %zu bytes with a %" PRIu32 "-byte pattern",
                            target.data_length, pattern_length);
  }
  if (pattern_length == 1) {
    memset(target.data, (int)(pattern & 0xFF), target.data_length);
    return iree_ok_status();
  }
  uint8_t bytes[8];
  for (uint32_t i = 0; i < pattern_length; ++i) bytes[i] = (uint8_t)(pattern >> (8 * i));  // little-endian
  for (iree_host_size_t i = 0; i < target.data_length; i += pattern_length) {
    memcpy(target.data + i, bytes, pattern_length);
  }
  return iree_ok_status();
}

iree_status_t npukit_hal_buffer_subspan(npukit_hal_buffer_t* parent, int64_t offset, int64_t length,
                                        iree_allocator_t allocator, npukit_hal_buffer_t** out_buffer) {
  *out_buffer = NULL;
  iree_host_size_t start = 0, size = 0;
  IREE_RETURN_IF_ERROR(resolve_range(parent->length, offset, length, &start, &size));
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(new_buffer(allocator, &buffer));
  npukit_hal_buffer_retain(parent);
  buffer->parent = parent;
  buffer->data = parent->data + start;
  buffer->length = size;
  buffer->memory_type = parent->memory_type;
  buffer->allowed_usage = parent->allowed_usage;
  buffer->read_only = parent->read_only;
  *out_buffer = buffer;
  return iree_ok_status();
}

iree_status_t npukit_hal_buffer_import(iree_vm_buffer_t* source, int64_t offset, int64_t length, uint32_t memory_type,
                                       uint32_t allowed_usage, iree_allocator_t allocator,
                                       npukit_hal_buffer_t** out_buffer) {
  *out_buffer = NULL;
  iree_host_size_t start = 0, size = 0;
  IREE_RETURN_IF_ERROR(resolve_range(source->data.data_length, offset, length, &start, &size));
  bool mutable_source = (source->access & IREE_VM_BUFFER_ACCESS_MUTABLE) != 0;
  if (!mutable_source && !(allowed_usage & NPUKIT_HAL_BUFFER_USAGE_SHARING_IMMUTABLE)) {
    return iree_make_status(IREE_STATUS_PERMISSION_DENIED,
                            "importing a read-only vm.buffer requires the SHARING_IMMUTABLE usage");
  }
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(new_buffer(allocator, &buffer));
  iree_vm_buffer_retain(source);
  buffer->imported = source;
  buffer->data = source->data.data + start;
  buffer->length = size;
  buffer->memory_type = memory_type | NPUKIT_HAL_MEMORY_TYPE_LOCAL_ALL;
  buffer->allowed_usage = allowed_usage;
  buffer->read_only = !mutable_source || (allowed_usage & NPUKIT_HAL_BUFFER_USAGE_SHARING_IMMUTABLE);
  *out_buffer = buffer;
  return iree_ok_status();
}

iree_status_t npukit_hal_buffer_wrap_host(void* data, iree_host_size_t length, bool read_only,
                                          iree_allocator_t allocator, npukit_hal_buffer_t** out_buffer) {
  *out_buffer = NULL;
  if (((uintptr_t)data & (NPUKIT_HAL_BUFFER_ALIGNMENT - 1)) != 0) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "host memory at %p is not %d-byte aligned, as compiled dispatches require", data,
                            NPUKIT_HAL_BUFFER_ALIGNMENT);
  }
  npukit_hal_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(new_buffer(allocator, &buffer));
  buffer->data = (uint8_t*)data;
  buffer->length = length;
  buffer->memory_type = NPUKIT_HAL_MEMORY_TYPE_LOCAL_ALL;
  buffer->allowed_usage = NPUKIT_HAL_BUFFER_USAGE_ALL;
  buffer->read_only = read_only;
  *out_buffer = buffer;
  return iree_ok_status();
}

void npukit_hal_buffer_retain(npukit_hal_buffer_t* buffer) {
  if (buffer) buffer->ref_object.counter++;
}

void npukit_hal_buffer_release(npukit_hal_buffer_t* buffer) {
  if (buffer && --buffer->ref_object.counter == 0) buffer_destroy(buffer);
}

iree_vm_ref_t npukit_hal_buffer_storage(npukit_hal_buffer_t* buffer) {
  if (buffer->storage.ref_object.counter == 0) {
    // First live reference: the storage keeps the buffer alive until its
    // last reference is released (storage_release_ctl).
    npukit_hal_buffer_retain(buffer);
    iree_allocator_t release = {buffer, storage_release_ctl};
    iree_vm_buffer_access_t access = IREE_VM_BUFFER_ACCESS_ORIGIN_HOST;
    if (!buffer->read_only) access |= IREE_VM_BUFFER_ACCESS_MUTABLE;
    iree_vm_buffer_initialize(access, iree_make_byte_span(buffer->data, buffer->length), release, &buffer->storage);
  } else {
    buffer->storage.ref_object.counter++;
  }
  iree_vm_ref_t ref = {&buffer->storage, iree_vm_buffer_type()};
  return ref;
}
