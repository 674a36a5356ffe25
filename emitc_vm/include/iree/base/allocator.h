// Allocators: an interface (self + control function) so that every
// allocation can come from a caller-supplied arena (see npukit/arena.h).

#ifndef IREE_BASE_ALLOCATOR_H_
#define IREE_BASE_ALLOCATOR_H_

#include "iree/base/config.h"
#include "iree/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum iree_allocator_command_e {
  IREE_ALLOCATOR_COMMAND_MALLOC = 0,
  IREE_ALLOCATOR_COMMAND_CALLOC = 1,
  IREE_ALLOCATOR_COMMAND_REALLOC = 2,
  IREE_ALLOCATOR_COMMAND_FREE = 3,
} iree_allocator_command_t;

typedef struct iree_allocator_alloc_params_t {
  iree_host_size_t byte_length;
} iree_allocator_alloc_params_t;

// MALLOC/CALLOC/REALLOC: |params| is an iree_allocator_alloc_params_t and
// *inout_ptr receives (REALLOC: holds, then receives) the memory.
// FREE: |params| is NULL and *inout_ptr is the memory.
typedef iree_status_t (*iree_allocator_ctl_fn_t)(void* self, iree_allocator_command_t command, const void* params,
                                                 void** inout_ptr);

typedef struct iree_allocator_t {
  void* self;
  iree_allocator_ctl_fn_t ctl;
} iree_allocator_t;

// Memory returned by any allocator is aligned to at least this.
#define IREE_ALLOCATOR_MIN_ALIGNMENT 16

static inline iree_allocator_t iree_allocator_null(void) {
  iree_allocator_t a = {NULL, NULL};
  return a;
}

static inline bool iree_allocator_is_null(iree_allocator_t allocator) { return allocator.ctl == NULL; }

// Zero-filled memory (what generated code expects of iree_allocator_malloc).
IREE_API_EXPORT iree_status_t iree_allocator_malloc(iree_allocator_t allocator, iree_host_size_t byte_length,
                                                    void** out_ptr);
// Uninitialized memory.
IREE_API_EXPORT iree_status_t iree_allocator_malloc_uninitialized(iree_allocator_t allocator,
                                                                  iree_host_size_t byte_length, void** out_ptr);
IREE_API_EXPORT iree_status_t iree_allocator_realloc(iree_allocator_t allocator, iree_host_size_t byte_length,
                                                     void** inout_ptr);
IREE_API_EXPORT void iree_allocator_free(iree_allocator_t allocator, void* ptr);

// Memory aligned to |alignment| (a power of two, at most 4096) from any
// allocator; free with iree_allocator_free_aligned.
IREE_API_EXPORT iree_status_t iree_allocator_malloc_aligned(iree_allocator_t allocator, iree_host_size_t byte_length,
                                                            iree_host_size_t alignment, void** out_ptr);
IREE_API_EXPORT void iree_allocator_free_aligned(iree_allocator_t allocator, void* ptr);

#if !defined(NPUKIT_NO_SYSTEM_ALLOCATOR)
// The C library's malloc/free (host builds).
IREE_API_EXPORT iree_allocator_t iree_allocator_system(void);
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_BASE_ALLOCATOR_H_
