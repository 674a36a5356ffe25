// The compile-time memory plan in the runtime: buffers take their planned
// places in order, persistent entries once and the others on every
// invocation; a request of another size, past the plan, or onto bytes a live
// buffer holds fails with a status; the high-water mark is the plan's end.

#include "npukit/arena.h"
#include "npukit/hal/buffer.h"
#include "npukit/hal/buffer_plan.h"
#include "test_main.h"

int main(void) {
  static uint8_t memory[16384];
  npukit_arena_t arena;
  npukit_arena_initialize(memory, sizeof(memory), &arena);
  iree_allocator_t a = npukit_arena_allocator(&arena);
  EXPECT(npukit_arena_from_allocator(a) == &arena);
  EXPECT(npukit_arena_from_allocator(iree_allocator_null()) == NULL);

  // One persistent buffer, then two per invocation that share nothing, and a
  // third that reuses the first invocation buffer's bytes.
  static const npukit_buffer_plan_entry_t entries[] = {{0, 100}, {128, 300}, {448, 50}};
  static const npukit_buffer_plan_t plan = {498, 1, 3, entries};
  EXPECT_OK(npukit_buffer_plan_verify(&plan));
  static const npukit_buffer_plan_entry_t outside[] = {{0, 100}, {448, 60}};
  static const npukit_buffer_plan_t bad = {498, 0, 2, outside};
  EXPECT_CODE(npukit_buffer_plan_verify(&bad), IREE_STATUS_INVALID_ARGUMENT);
  static const npukit_buffer_plan_entry_t unaligned[] = {{8, 10}};
  static const npukit_buffer_plan_t bad_alignment = {498, 0, 1, unaligned};
  EXPECT_CODE(npukit_buffer_plan_verify(&bad_alignment), IREE_STATUS_INVALID_ARGUMENT);

  void* block = NULL;
  EXPECT_OK(iree_allocator_malloc_aligned(a, plan.size, 64, &block));
  npukit_buffer_planner_t planner;
  npukit_buffer_planner_initialize(&plan, (uint8_t*)block, &planner);
  arena.buffer_planner = &planner;
  iree_host_size_t objects_before = arena.bytes_in_use;

  npukit_hal_buffer_t* persistent = NULL;
  EXPECT_OK(npukit_hal_buffer_allocate(a, 100, 64, 0, 0, &persistent));
  EXPECT(persistent && persistent->data == (uint8_t*)block);
  for (int run = 0; run < 3; ++run) {
    npukit_hal_buffer_t* first = NULL;
    npukit_hal_buffer_t* second = NULL;
    EXPECT_OK(npukit_hal_buffer_allocate(a, 300, 64, 0, 0, &first));
    EXPECT(first && first->data == (uint8_t*)block + 128);
    EXPECT_OK(npukit_hal_buffer_allocate(a, 50, 0, 0, 0, &second));
    EXPECT(second && second->data == (uint8_t*)block + 448);
    npukit_hal_buffer_release(first);
    npukit_hal_buffer_release(second);
  }
  EXPECT(planner.high_water_mark == plan.size && planner.allocations == 7);
  // Only the buffer records came from the arena's free list.
  EXPECT(arena.bytes_in_use - objects_before < 200);

  // A request of another size than the next entry's is refused.
  npukit_hal_buffer_t* wrong = NULL;
  EXPECT_CODE(npukit_hal_buffer_allocate(a, 301, 64, 0, 0, &wrong), IREE_STATUS_FAILED_PRECONDITION);
  EXPECT(wrong == NULL);
  // So is a buffer placed over the bytes of one still alive: entry 1 again
  // while the previous invocation's entry 1 is held.
  npukit_hal_buffer_t* held = NULL;
  EXPECT_OK(npukit_hal_buffer_allocate(a, 300, 64, 0, 0, &held));
  npukit_hal_buffer_t* next = NULL;
  EXPECT_OK(npukit_hal_buffer_allocate(a, 50, 64, 0, 0, &next));
  npukit_hal_buffer_release(next);
  EXPECT_CODE(npukit_hal_buffer_allocate(a, 300, 64, 0, 0, &wrong), IREE_STATUS_FAILED_PRECONDITION);
  npukit_hal_buffer_release(held);
  npukit_hal_buffer_release(persistent);

  // Without a plan, buffers come from the arena's blocks again.
  arena.buffer_planner = NULL;
  npukit_hal_buffer_t* plain = NULL;
  EXPECT_OK(npukit_hal_buffer_allocate(a, 300, 64, 0, 0, &plain));
  EXPECT(plain && (plain->data < (uint8_t*)block || plain->data >= (uint8_t*)block + plan.size));
  npukit_hal_buffer_release(plain);
  iree_allocator_free_aligned(a, block);
  EXPECT(arena.bytes_in_use == 0);
  return TEST_RESULT();
}
