// The arena allocator: reuse, merging of neighbours, high-water mark, errors.

#include "npukit/arena.h"

#include "test_main.h"

int main(void) {
  static uint8_t memory[4096 + 8];
  npukit_arena_t arena;
  npukit_arena_initialize(memory + 3, sizeof(memory) - 3, &arena);  // unaligned start
  EXPECT(((uintptr_t)arena.base & 15) == 0);
  iree_allocator_t a = npukit_arena_allocator(&arena);

  void *p = NULL, *q = NULL, *r = NULL;
  EXPECT_OK(iree_allocator_malloc(a, 100, &p));
  EXPECT_OK(iree_allocator_malloc(a, 200, &q));
  EXPECT_OK(iree_allocator_malloc(a, 300, &r));
  EXPECT(((uintptr_t)p & 15) == 0 && ((uintptr_t)q & 15) == 0 && ((uintptr_t)r & 15) == 0);
  EXPECT(((uint8_t*)q)[199] == 0);  // calloc semantics
  iree_host_size_t peak = arena.high_water_mark;
  EXPECT(arena.allocation_count == 3);

  // Freeing the middle then the first merges them into one block the size of both.
  iree_allocator_free(a, q);
  iree_allocator_free(a, p);
  void* big = NULL;
  EXPECT_OK(iree_allocator_malloc(a, 300, &big));
  EXPECT(big == p);
  iree_allocator_free(a, big);
  iree_allocator_free(a, r);
  EXPECT(arena.bytes_in_use == 0 && arena.allocation_count == 0);
  EXPECT(arena.high_water_mark == peak);
  EXPECT(npukit_arena_largest_free_block(&arena) + 16 == arena.capacity);

  // Exhaustion is an error with a message, not a crash.
  void* huge = NULL;
  EXPECT_CODE(iree_allocator_malloc(a, 1u << 20, &huge), IREE_STATUS_RESOURCE_EXHAUSTED);
  EXPECT(huge == NULL);

  // Aligned allocations on top of the arena.
  void* aligned = NULL;
  EXPECT_OK(iree_allocator_malloc_aligned(a, 64, 256, &aligned));
  EXPECT(((uintptr_t)aligned & 255) == 0);
  iree_allocator_free_aligned(a, aligned);
  EXPECT(arena.bytes_in_use == 0);

  // Freeing memory the arena does not own is reported.
  static uint8_t elsewhere[32];
  iree_status_t status = arena.free_list ? npukit_arena_allocator(&arena).ctl(&arena, IREE_ALLOCATOR_COMMAND_FREE, NULL,
                                                                              (void**)&(void*){elsewhere})
                                         : iree_ok_status();
  EXPECT(iree_status_consume_code(status) == IREE_STATUS_INVALID_ARGUMENT);

  // A double free is refused (and counted) and leaves the free list intact.
  void* once = NULL;
  EXPECT_OK(iree_allocator_malloc(a, 48, &once));
  iree_allocator_free(a, once);
  iree_host_size_t free_bytes = npukit_arena_largest_free_block(&arena);
  EXPECT_CODE(a.ctl(&arena, IREE_ALLOCATOR_COMMAND_FREE, NULL, &once), IREE_STATUS_INTERNAL);
  EXPECT(arena.invalid_free_count == 1);
  EXPECT(npukit_arena_largest_free_block(&arena) == free_bytes && arena.bytes_in_use == 0);
  void* again = NULL;
  EXPECT_OK(iree_allocator_malloc(a, 48, &again));
  EXPECT(again == once);
  iree_allocator_free(a, again);
  return TEST_RESULT();
}
