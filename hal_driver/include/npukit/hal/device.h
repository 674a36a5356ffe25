// The local synchronous device behind the full hal module: a device with one
// allocator over host memory, executable loaders and a queue that runs each
// operation when it is submitted. hal.file wraps memory a module reads from.

#ifndef NPUKIT_HAL_DEVICE_H_
#define NPUKIT_HAL_DEVICE_H_

#include "npukit/hal/buffer.h"
#include "npukit/hal/executable_loader.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPUKIT_HAL_DEVICE_ID "local-sync"

typedef struct npukit_hal_device_t npukit_hal_device_t;

typedef struct npukit_hal_allocator_t {
  iree_vm_ref_object_t ref_object;
  npukit_hal_device_t* device;  // not retained: the device owns its allocator
} npukit_hal_allocator_t;

struct npukit_hal_device_t {
  iree_vm_ref_object_t ref_object;
  iree_allocator_t host_allocator;
  const npukit_hal_loader_set_t* loaders;
  npukit_hal_allocator_t allocator;
};

typedef struct npukit_hal_file_t {
  iree_vm_ref_object_t ref_object;
  iree_allocator_t host_allocator;
  iree_vm_buffer_t* source;  // retained
  iree_host_size_t offset;
  iree_host_size_t length;
} npukit_hal_file_t;

IREE_VM_DECLARE_TYPE_ADAPTERS(npukit_hal_device, npukit_hal_device_t);
IREE_VM_DECLARE_TYPE_ADAPTERS(npukit_hal_allocator, npukit_hal_allocator_t);
IREE_VM_DECLARE_TYPE_ADAPTERS(npukit_hal_file, npukit_hal_file_t);

IREE_API_EXPORT iree_status_t npukit_hal_device_create(const npukit_hal_loader_set_t* loaders,
                                                       iree_allocator_t host_allocator,
                                                       npukit_hal_device_t** out_device);
IREE_API_EXPORT void npukit_hal_device_retain(npukit_hal_device_t* device);
IREE_API_EXPORT void npukit_hal_device_release(npukit_hal_device_t* device);

// A new reference to the device's allocator.
IREE_API_EXPORT iree_vm_ref_t npukit_hal_device_allocator_ref(npukit_hal_device_t* device);

// Answers device.query.i64: *out_ok = 0 when the query is not known.
IREE_API_EXPORT void npukit_hal_device_query_i64(const npukit_hal_device_t* device, iree_string_view_t category,
                                                 iree_string_view_t key, int32_t* out_ok, int64_t* out_value);

IREE_API_EXPORT iree_status_t npukit_hal_file_create(iree_vm_buffer_t* source, int64_t offset, int64_t length,
                                                     iree_allocator_t allocator, npukit_hal_file_t** out_file);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_DEVICE_H_
