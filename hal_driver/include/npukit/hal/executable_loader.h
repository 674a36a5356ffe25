// Executable loaders: each recognises executable formats and turns the bytes
// a module carries into a hal.executable.
//
// - static libraries ("static"): the application links the libraries and
//   registers their query functions; the module names the library to use;
// - embedded ELFs ("embedded-elf-<arch>"): the module carries the ELF image,
//   which is loaded and relocated into memory;
// - mynpu-v1 command streams (npukit's NPU).

#ifndef NPUKIT_HAL_EXECUTABLE_LOADER_H_
#define NPUKIT_HAL_EXECUTABLE_LOADER_H_

#include "npukit/hal/executable.h"
#include "npukit/mynpu/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npukit_hal_executable_loader_t npukit_hal_executable_loader_t;

typedef struct npukit_hal_executable_loader_vtable_t {
  bool (*supports)(const npukit_hal_executable_loader_t* loader, iree_string_view_t format);
  iree_status_t (*load)(const npukit_hal_executable_loader_t* loader, iree_string_view_t format,
                        iree_const_byte_span_t data, const uint32_t* constants, iree_host_size_t constant_count,
                        iree_allocator_t allocator, npukit_hal_executable_t** out_executable);
} npukit_hal_executable_loader_vtable_t;

struct npukit_hal_executable_loader_t {
  const npukit_hal_executable_loader_vtable_t* vtable;
};

// A set of loaders tried in order.
#define NPUKIT_HAL_MAX_LOADERS 4
typedef struct npukit_hal_loader_set_t {
  iree_host_size_t count;
  const npukit_hal_executable_loader_t* loaders[NPUKIT_HAL_MAX_LOADERS];
  // Optional: counts the dispatches of every executable loaded through the set.
  uint64_t* dispatch_counter;
  // Optional: given to every executable loaded through the set.
  const npukit_hal_dispatch_hook_t* dispatch_hook;
} npukit_hal_loader_set_t;

IREE_API_EXPORT bool npukit_hal_loader_set_supports(const npukit_hal_loader_set_t* set, iree_string_view_t format);
IREE_API_EXPORT iree_status_t npukit_hal_loader_set_load(const npukit_hal_loader_set_t* set, iree_string_view_t format,
                                                         iree_const_byte_span_t data, const uint32_t* constants,
                                                         iree_host_size_t constant_count, iree_allocator_t allocator,
                                                         npukit_hal_executable_t** out_executable);

//===----------------------------------------------------------------------===//
// Static libraries
//===----------------------------------------------------------------------===//

#define NPUKIT_HAL_MAX_STATIC_LIBRARIES 8

typedef struct npukit_hal_static_library_loader_t {
  npukit_hal_executable_loader_t base;
  iree_host_size_t count;
  const iree_hal_executable_library_v0_t* libraries[NPUKIT_HAL_MAX_STATIC_LIBRARIES];
} npukit_hal_static_library_loader_t;

// Queries each library (as <name>_library_query from the generated
// <name>_executables.h) and keeps the results; no allocation.
IREE_API_EXPORT iree_status_t npukit_hal_static_library_loader_initialize(
    const iree_hal_executable_library_query_fn_t* queries, iree_host_size_t query_count,
    npukit_hal_static_library_loader_t* out_loader);

//===----------------------------------------------------------------------===//
// Embedded ELFs
//===----------------------------------------------------------------------===//

typedef struct npukit_hal_elf_loader_t {
  npukit_hal_executable_loader_t base;
} npukit_hal_elf_loader_t;

IREE_API_EXPORT void npukit_hal_elf_loader_initialize(npukit_hal_elf_loader_t* out_loader);

//===----------------------------------------------------------------------===//
// mynpu-v1 executables (the mynpu device)
//===----------------------------------------------------------------------===//

typedef struct npukit_hal_mynpu_loader_t {
  npukit_hal_executable_loader_t base;
  npukit_mynpu_backend_t* backend;  // runs every NPU dispatch; must outlive the executables
  const npukit_hal_loader_set_t* host_loaders;  // load the executables' CPU code (may be NULL)
} npukit_hal_mynpu_loader_t;

// Executables are validated when they are loaded (npukit_mynpu_executable_parse)
// and refused when they need more SRAM or instructions than |backend| has.
// Their CPU code (the dispatches the NPU does not run) is loaded by the first
// of |host_loaders| that reads its format.
IREE_API_EXPORT void npukit_hal_mynpu_loader_initialize(npukit_mynpu_backend_t* backend,
                                                        const npukit_hal_loader_set_t* host_loaders,
                                                        npukit_hal_mynpu_loader_t* out_loader);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_EXECUTABLE_LOADER_H_
