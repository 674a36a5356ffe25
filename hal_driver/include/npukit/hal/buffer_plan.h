// A static memory plan for the buffers a model's invocations allocate.
//
// The compiler fixes every buffer's offset in one block (liveness plus
// placement, see compiler_plugin/npukit/codegen/memory_plan.py) and writes the
// plan into the model's generated header: the block's size and, in the order
// the module allocates them, each buffer's offset and length. The first
// |persistent_count| entries are allocated once (the inputs); the others
// repeat on every invocation. While a plan is in use, every buffer the HAL
// allocates takes the next entry; a request of another length, or an entry
// whose bytes a live buffer still holds, fails with a status instead of
// corrupting memory.

#ifndef NPUKIT_HAL_BUFFER_PLAN_H_
#define NPUKIT_HAL_BUFFER_PLAN_H_

#include "iree/base/api.h"

#ifdef __cplusplus
extern "C" {
#endif

// Entries a plan may hold (live entries are tracked in a 64-bit mask).
#define NPUKIT_BUFFER_PLAN_MAX_ENTRIES 64

typedef struct npukit_buffer_plan_entry_t {
  uint32_t offset;  // from the start of the planned block; a multiple of 64
  uint32_t length;  // bytes the module asks for
} npukit_buffer_plan_entry_t;

typedef struct npukit_buffer_plan_t {
  uint32_t size;              // bytes of the planned block (<name>_ARENA_SIZE)
  uint32_t persistent_count;  // leading entries allocated once
  uint32_t count;             // all entries
  const npukit_buffer_plan_entry_t* entries;
} npukit_buffer_plan_t;

typedef struct npukit_buffer_planner_t {
  const npukit_buffer_plan_t* plan;
  uint8_t* base;               // the planned block
  uint32_t next;               // the entry the next allocation takes
  uint64_t live;               // bit i: entry i holds a live buffer
  iree_host_size_t high_water_mark;  // largest offset + length handed out
  uint64_t allocations;
} npukit_buffer_planner_t;

// Checks |plan| (entries inside the block, aligned, not too many).
IREE_API_EXPORT iree_status_t npukit_buffer_plan_verify(const npukit_buffer_plan_t* plan);

// Starts handing out |plan|'s entries from |base| (plan->size bytes, 64-byte aligned).
IREE_API_EXPORT void npukit_buffer_planner_initialize(const npukit_buffer_plan_t* plan, uint8_t* base,
                                                      npukit_buffer_planner_t* out_planner);

// The next entry's memory for a buffer of |length| bytes; *out_entry is the
// entry's index, to hand back to npukit_buffer_planner_release.
IREE_API_EXPORT iree_status_t npukit_buffer_planner_take(npukit_buffer_planner_t* planner, iree_host_size_t length,
                                                         iree_host_size_t alignment, uint8_t** out_data,
                                                         uint32_t* out_entry);

IREE_API_EXPORT void npukit_buffer_planner_release(npukit_buffer_planner_t* planner, uint32_t entry);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_BUFFER_PLAN_H_
