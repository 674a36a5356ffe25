#include "npukit/hal/device.h"

static void device_destroy(void* ptr) {
  npukit_hal_device_t* device = (npukit_hal_device_t*)ptr;
  iree_allocator_free(device->host_allocator, device);
}

// The allocator lives inside its device. Its counter counts outside
// references; while there are any, they hold one reference on the device.
static void allocator_destroy(void* ptr) {
  npukit_hal_allocator_t* allocator = (npukit_hal_allocator_t*)ptr;
  npukit_hal_device_release(allocator->device);
}

static void file_destroy(void* ptr) {
  npukit_hal_file_t* file = (npukit_hal_file_t*)ptr;
  iree_vm_buffer_release(file->source);
  iree_allocator_free(file->host_allocator, file);
}

const iree_vm_ref_type_descriptor_t npukit_hal_device_descriptor = {device_destroy, {"hal.device", 10}};
const iree_vm_ref_type_descriptor_t npukit_hal_allocator_descriptor = {allocator_destroy, {"hal.allocator", 13}};
const iree_vm_ref_type_descriptor_t npukit_hal_file_descriptor = {file_destroy, {"hal.file", 8}};

iree_status_t npukit_hal_device_create(const npukit_hal_loader_set_t* loaders, iree_allocator_t host_allocator,
                                       npukit_hal_device_t** out_device) {
  *out_device = NULL;
  npukit_hal_device_t* device = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(host_allocator, sizeof(*device), (void**)&device));
  device->ref_object.counter = 1;
  device->host_allocator = host_allocator;
  device->loaders = loaders;
  device->allocator.ref_object.counter = 0;
  device->allocator.device = device;
  *out_device = device;
  return iree_ok_status();
}

void npukit_hal_device_retain(npukit_hal_device_t* device) {
  if (device) device->ref_object.counter++;
}

void npukit_hal_device_release(npukit_hal_device_t* device) {
  if (device && --device->ref_object.counter == 0) device_destroy(device);
}

iree_vm_ref_t npukit_hal_device_allocator_ref(npukit_hal_device_t* device) {
  if (device->allocator.ref_object.counter++ == 0) npukit_hal_device_retain(device);
  iree_vm_ref_t ref = {&device->allocator, npukit_hal_allocator_type()};
  return ref;
}

void npukit_hal_device_query_i64(const npukit_hal_device_t* device, iree_string_view_t category, iree_string_view_t key,
                                 int32_t* out_ok, int64_t* out_value) {
  *out_ok = 0;
  *out_value = 0;
  if (iree_string_view_equal(category, iree_make_cstring_view("hal.device.id"))) {
    *out_ok = 1;
    *out_value = iree_string_view_match_pattern(iree_make_cstring_view(NPUKIT_HAL_DEVICE_ID), key) ? 1 : 0;
  } else if (iree_string_view_equal(category, iree_make_cstring_view("hal.executable.format"))) {
    *out_ok = 1;
    *out_value = npukit_hal_loader_set_supports(device->loaders, key) ? 1 : 0;
  } else if ((iree_string_view_equal(category, iree_make_cstring_view("hal.device")) ||
              iree_string_view_equal(category, iree_make_cstring_view("hal.dispatch"))) &&
             iree_string_view_equal(key, iree_make_cstring_view("concurrency"))) {
    *out_ok = 1;
    *out_value = 1;
  }
}

iree_status_t npukit_hal_file_create(iree_vm_buffer_t* source, int64_t offset, int64_t length,
                                     iree_allocator_t allocator, npukit_hal_file_t** out_file) {
  *out_file = NULL;
  iree_host_size_t available = source->data.data_length;
  if (offset < 0 || (uint64_t)offset > available) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "file offset %lld exceeds %zu bytes", (long long)offset,
                            available);
  }
  if (length == NPUKIT_HAL_WHOLE_BUFFER) length = (int64_t)(available - (iree_host_size_t)offset);
  if (length < 0 || (uint64_t)length > available - (uint64_t)offset) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "file range exceeds %zu bytes", available);
  }
  npukit_hal_file_t* file = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*file), (void**)&file));
  file->ref_object.counter = 1;
  file->host_allocator = allocator;
  iree_vm_buffer_retain(source);
  file->source = source;
  file->offset = (iree_host_size_t)offset;
  file->length = (iree_host_size_t)length;
  *out_file = file;
  return iree_ok_status();
}
