// hal.executable: a loaded set of dispatch functions, whatever ran them
// (a CPU executable library, or the mynpu device).

#ifndef NPUKIT_HAL_EXECUTABLE_H_
#define NPUKIT_HAL_EXECUTABLE_H_

#include "iree/hal/local/executable_library.h"
#include "npukit/hal/hal_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npukit_hal_executable_t npukit_hal_executable_t;

typedef struct npukit_hal_binding_t {
  uint8_t* data;  // 64-byte aligned
  iree_host_size_t length;
} npukit_hal_binding_t;

typedef struct npukit_hal_dispatch_params_t {
  uint32_t workgroup_count[3];
  const uint32_t* constants;
  uint32_t constant_count;
  const npukit_hal_binding_t* bindings;
  uint32_t binding_count;
} npukit_hal_dispatch_params_t;

// Optional, for profiling: called before (|done| 0) and after (|done| 1)
// every dispatch with the export's name.
typedef struct npukit_hal_dispatch_hook_t {
  void (*fn)(void* user_data, iree_string_view_t export_name, int done);
  void* user_data;
} npukit_hal_dispatch_hook_t;

typedef struct npukit_hal_executable_vtable_t {
  void (*destroy)(npukit_hal_executable_t* executable);
  // The ordinal of the export named |name|.
  iree_status_t (*lookup_function)(npukit_hal_executable_t* executable, iree_string_view_t name, uint32_t* out_ordinal);
  // Runs every workgroup of export |ordinal| before returning.
  iree_status_t (*dispatch)(npukit_hal_executable_t* executable, uint32_t ordinal,
                            const npukit_hal_dispatch_params_t* params);
  // The name of export |ordinal| (for the dispatch hook).
  iree_string_view_t (*export_name)(npukit_hal_executable_t* executable, uint32_t ordinal);
} npukit_hal_executable_vtable_t;

struct npukit_hal_executable_t {
  iree_vm_ref_object_t ref_object;
  const npukit_hal_executable_vtable_t* vtable;
  iree_allocator_t host_allocator;
  uint64_t dispatch_count;
  uint64_t* shared_dispatch_counter;  // optional, also incremented per dispatch
  const npukit_hal_dispatch_hook_t* dispatch_hook;  // optional
};

IREE_VM_DECLARE_TYPE_ADAPTERS(npukit_hal_executable, npukit_hal_executable_t);

IREE_API_EXPORT void npukit_hal_executable_initialize(const npukit_hal_executable_vtable_t* vtable,
                                                      iree_allocator_t host_allocator,
                                                      npukit_hal_executable_t* out_executable);
IREE_API_EXPORT void npukit_hal_executable_retain(npukit_hal_executable_t* executable);
IREE_API_EXPORT void npukit_hal_executable_release(npukit_hal_executable_t* executable);
IREE_API_EXPORT iree_status_t npukit_hal_executable_lookup_function(npukit_hal_executable_t* executable,
                                                                    iree_string_view_t name, uint32_t* out_ordinal);
IREE_API_EXPORT iree_status_t npukit_hal_executable_dispatch(npukit_hal_executable_t* executable, uint32_t ordinal,
                                                             const npukit_hal_dispatch_params_t* params);

//===----------------------------------------------------------------------===//
// CPU executable libraries (static libraries and embedded ELFs)
//===----------------------------------------------------------------------===//

// Called when the executable goes away, to release what backs the library
// (the loaded ELF image).
typedef void (*npukit_hal_library_release_fn_t)(void* user_data);

// Wraps a queried library. |constants| (executable-level specialization
// constants, count must match the library's) are copied.
IREE_API_EXPORT iree_status_t npukit_hal_library_executable_create(
    const iree_hal_executable_library_v0_t* library, const uint32_t* constants, iree_host_size_t constant_count,
    npukit_hal_library_release_fn_t release, void* release_user_data, iree_allocator_t host_allocator,
    npukit_hal_executable_t** out_executable);

// Checks a library's tables before use (counts, attributes, names).
IREE_API_EXPORT iree_status_t npukit_hal_library_verify(const iree_hal_executable_library_v0_t* library);

// The environment a library is queried with and run under.
IREE_API_EXPORT void npukit_hal_library_environment_initialize(iree_hal_executable_environment_v0_t* out_environment);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_EXECUTABLE_H_
