// The HAL VM modules vm-c modules import.
//
// - hal_inline + hal_loader: what --iree-execution-model=inline-dynamic
//   modules import (buffers, buffer views, executable loading and dispatch);
// - hal: what the default (async) execution model imports (devices,
//   allocators, command buffers, queues, fences, files), run synchronously.
//
// All HAL objects come from |allocator|. The ref types must be registered
// with the instance before a vm-c module is created; creating any of these
// modules does that.

#ifndef NPUKIT_HAL_MODULES_H_
#define NPUKIT_HAL_MODULES_H_

#include "npukit/hal/buffer_view.h"
#include "npukit/hal/executable_loader.h"

#ifdef __cplusplus
extern "C" {
#endif

IREE_API_EXPORT iree_status_t npukit_hal_register_types(iree_vm_instance_t* instance);

IREE_API_EXPORT iree_status_t npukit_hal_inline_module_create(iree_vm_instance_t* instance, iree_allocator_t allocator,
                                                              iree_vm_module_t** out_module);

// |loaders| is copied; the loaders themselves must outlive the module.
IREE_API_EXPORT iree_status_t npukit_hal_loader_module_create(iree_vm_instance_t* instance,
                                                              const npukit_hal_loader_set_t* loaders,
                                                              iree_allocator_t allocator,
                                                              iree_vm_module_t** out_module);

// The full hal module (async execution model) and its ref types (device,
// allocator, command buffer, fence, file). |loaders| is a
// const npukit_hal_loader_set_t* that must outlive the module.
IREE_API_EXPORT iree_status_t npukit_hal_register_full_types(iree_vm_instance_t* instance);
IREE_API_EXPORT iree_status_t npukit_hal_module_create(iree_vm_instance_t* instance, void* loaders,
                                                       iree_allocator_t allocator, iree_vm_module_t** out_module);

// Pass &npukit_full_hal in npukit_runtime_options_t to run async-model
// modules (boards leave it out so that its code is not linked).
typedef struct npukit_full_hal_t {
  iree_status_t (*register_types)(iree_vm_instance_t* instance);
  iree_status_t (*create)(iree_vm_instance_t* instance, void* loaders, iree_allocator_t allocator,
                          iree_vm_module_t** out_module);
} npukit_full_hal_t;
IREE_API_EXPORT extern const npukit_full_hal_t npukit_full_hal;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_MODULES_H_
