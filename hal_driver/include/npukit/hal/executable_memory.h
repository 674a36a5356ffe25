// Memory for loaded executable images (embedded ELFs).
//
// Hosts map pages and make code pages executable after relocation; bare-metal
// boards take the memory from the runtime's allocator (their RAM executes)
// and only synchronise the instruction stream.

#ifndef NPUKIT_HAL_EXECUTABLE_MEMORY_H_
#define NPUKIT_HAL_EXECUTABLE_MEMORY_H_

#include "iree/base/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npukit_executable_memory_t {
  uint8_t* base;  // aligned to NPUKIT_EXECUTABLE_MEMORY_ALIGNMENT
  iree_host_size_t size;
  iree_allocator_t allocator;  // bare metal: where the memory came from
} npukit_executable_memory_t;

// Writable, zero-filled memory of at least |size| bytes.
IREE_API_EXPORT iree_status_t npukit_executable_memory_reserve(iree_host_size_t size, iree_allocator_t allocator,
                                                               npukit_executable_memory_t* out_memory);

// Sets the access of [offset, offset + length) once the image is relocated.
IREE_API_EXPORT iree_status_t npukit_executable_memory_protect(npukit_executable_memory_t* memory,
                                                               iree_host_size_t offset, iree_host_size_t length,
                                                               bool writable, bool executable);

// Makes freshly written code visible to instruction fetch.
IREE_API_EXPORT void npukit_executable_memory_flush_icache(npukit_executable_memory_t* memory);

IREE_API_EXPORT void npukit_executable_memory_release(npukit_executable_memory_t* memory);

// Alignment of |base| and granularity of protection.
IREE_API_EXPORT iree_host_size_t npukit_executable_memory_page_size(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_EXECUTABLE_MEMORY_H_
