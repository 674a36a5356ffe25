// An allocator over a caller-supplied block of memory.
//
// The runtime allocates everything (module state, buffers, executables) from
// an arena the application hands it, so a firmware needs no heap and knows its
// memory budget up front. Freed blocks return to an address-ordered free list
// and merge with their neighbours; the arena tracks its high-water mark.

#ifndef NPUKIT_ARENA_H_
#define NPUKIT_ARENA_H_

#include "iree/base/allocator.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npukit_arena_block_t npukit_arena_block_t;

typedef struct npukit_arena_t {
  uint8_t* base;
  iree_host_size_t capacity;
  npukit_arena_block_t* free_list;
  iree_host_size_t bytes_in_use;        // including block headers
  iree_host_size_t high_water_mark;     // largest bytes_in_use seen
  iree_host_size_t allocation_count;    // live allocations
  iree_host_size_t invalid_free_count;  // frees of blocks not allocated (bugs)
  // Set by the HAL while a compile-time memory plan is in use
  // (npukit/hal/buffer_plan.h): buffers then take their planned places
  // instead of blocks of this arena.
  void* buffer_planner;
} npukit_arena_t;

// Prepares |arena| over |capacity| bytes at |memory| (aligned up to 16).
IREE_API_EXPORT void npukit_arena_initialize(void* memory, iree_host_size_t capacity, npukit_arena_t* out_arena);

// An allocator that allocates from |arena| (which must outlive its users).
IREE_API_EXPORT iree_allocator_t npukit_arena_allocator(npukit_arena_t* arena);

// The arena behind |allocator|, or NULL when it is another allocator.
IREE_API_EXPORT npukit_arena_t* npukit_arena_from_allocator(iree_allocator_t allocator);

// Largest single allocation that would currently succeed.
IREE_API_EXPORT iree_host_size_t npukit_arena_largest_free_block(const npukit_arena_t* arena);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_ARENA_H_
