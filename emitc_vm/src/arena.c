#include "npukit/arena.h"

// Every block starts with a 16-byte header; payloads are 16-byte aligned.
// A free block keeps the next free block's address in its header; a block in
// use holds the arena's address there instead, which catches double frees
// and frees of blocks that are not (or no longer) allocated.
struct npukit_arena_block_t {
  iree_host_size_t size;  // whole block, header included; a multiple of 16
  npukit_arena_block_t* next_free;
};

#define ARENA_ALIGNMENT 16u
#define ARENA_HEADER_SIZE 16u

_Static_assert(sizeof(npukit_arena_block_t) <= ARENA_HEADER_SIZE, "arena header must fit 16 bytes");

static npukit_arena_block_t* block_of(void* payload) {
  return (npukit_arena_block_t*)((uint8_t*)payload - ARENA_HEADER_SIZE);
}

static void* payload_of(npukit_arena_block_t* block) { return (uint8_t*)block + ARENA_HEADER_SIZE; }

void npukit_arena_initialize(void* memory, iree_host_size_t capacity, npukit_arena_t* out_arena) {
  memset(out_arena, 0, sizeof(*out_arena));
  uintptr_t start = iree_host_align((uintptr_t)memory, ARENA_ALIGNMENT);
  iree_host_size_t lost = (iree_host_size_t)(start - (uintptr_t)memory);
  if (!memory || capacity < lost + 2 * ARENA_HEADER_SIZE) return;
  capacity = (capacity - lost) & ~(iree_host_size_t)(ARENA_ALIGNMENT - 1);
  out_arena->base = (uint8_t*)start;
  out_arena->capacity = capacity;
  npukit_arena_block_t* block = (npukit_arena_block_t*)start;
  block->size = capacity;
  block->next_free = NULL;
  out_arena->free_list = block;
}

static void* arena_malloc(npukit_arena_t* arena, iree_host_size_t byte_length) {
  if (byte_length > arena->capacity) return NULL;
  iree_host_size_t need = iree_host_align(byte_length ? byte_length : 1, ARENA_ALIGNMENT) + ARENA_HEADER_SIZE;
  npukit_arena_block_t** link = &arena->free_list;
  for (npukit_arena_block_t* block = arena->free_list; block; link = &block->next_free, block = block->next_free) {
    if (block->size < need) continue;
    if (block->size - need >= ARENA_HEADER_SIZE + ARENA_ALIGNMENT) {
      npukit_arena_block_t* rest = (npukit_arena_block_t*)((uint8_t*)block + need);
      rest->size = block->size - need;
      rest->next_free = block->next_free;
      *link = rest;
      block->size = need;
    } else {
      *link = block->next_free;
    }
    block->next_free = (npukit_arena_block_t*)arena;
    arena->bytes_in_use += block->size;
    arena->allocation_count++;
    if (arena->bytes_in_use > arena->high_water_mark) arena->high_water_mark = arena->bytes_in_use;
    return payload_of(block);
  }
  return NULL;
}

static void arena_free(npukit_arena_t* arena, void* payload) {
  npukit_arena_block_t* block = block_of(payload);
  arena->bytes_in_use -= block->size;
  arena->allocation_count--;
  // Insert in address order, then merge with the neighbours that touch it.
  npukit_arena_block_t* prev = NULL;
  npukit_arena_block_t* next = arena->free_list;
  while (next && next < block) {
    prev = next;
    next = next->next_free;
  }
  block->next_free = next;
  if (prev)
    prev->next_free = block;
  else
    arena->free_list = block;
  if (next && (uint8_t*)block + block->size == (uint8_t*)next) {
    block->size += next->size;
    block->next_free = next->next_free;
  }
  if (prev && (uint8_t*)prev + prev->size == (uint8_t*)block) {
    prev->size += block->size;
    prev->next_free = block->next_free;
  }
}

static bool arena_owns(const npukit_arena_t* arena, const void* p) {
  return (const uint8_t*)p >= arena->base + ARENA_HEADER_SIZE && (const uint8_t*)p < arena->base + arena->capacity;
}

static iree_status_t arena_ctl(void* self, iree_allocator_command_t command, const void* params, void** inout_ptr) {
  npukit_arena_t* arena = (npukit_arena_t*)self;
  if (command == IREE_ALLOCATOR_COMMAND_FREE) {
    if (!arena_owns(arena, *inout_ptr)) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "freeing %p, which is not from this arena", *inout_ptr);
    }
    if (block_of(*inout_ptr)->next_free != (npukit_arena_block_t*)arena) {
      arena->invalid_free_count++;
      return iree_make_status(IREE_STATUS_INTERNAL, "freeing %p, which is not an allocated block (double free?)",
                              *inout_ptr);
    }
    arena_free(arena, *inout_ptr);
    return iree_ok_status();
  }
  iree_host_size_t n = ((const iree_allocator_alloc_params_t*)params)->byte_length;
  void* old = command == IREE_ALLOCATOR_COMMAND_REALLOC ? *inout_ptr : NULL;
  if (old && (!arena_owns(arena, old) || block_of(old)->next_free != (npukit_arena_block_t*)arena)) {
    arena->invalid_free_count++;
    return iree_make_status(IREE_STATUS_INTERNAL, "reallocating %p, which is not an allocated block of this arena",
                            old);
  }
  void* p = arena_malloc(arena, n);
  if (!p) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED,
                            "arena exhausted: %zu bytes requested, %zu of %zu in use, largest free block %zu", n,
                            arena->bytes_in_use, arena->capacity, npukit_arena_largest_free_block(arena));
  }
  if (command == IREE_ALLOCATOR_COMMAND_CALLOC) {
    memset(p, 0, n);
  } else if (old) {
    iree_host_size_t old_size = block_of(old)->size - ARENA_HEADER_SIZE;
    memcpy(p, old, old_size < n ? old_size : n);
    arena_free(arena, old);
  }
  *inout_ptr = p;
  return iree_ok_status();
}

iree_allocator_t npukit_arena_allocator(npukit_arena_t* arena) {
  iree_allocator_t a = {arena, arena_ctl};
  return a;
}

npukit_arena_t* npukit_arena_from_allocator(iree_allocator_t allocator) {
  return allocator.ctl == arena_ctl ? (npukit_arena_t*)allocator.self : NULL;
}

iree_host_size_t npukit_arena_largest_free_block(const npukit_arena_t* arena) {
  iree_host_size_t largest = 0;
  for (npukit_arena_block_t* b = arena->free_list; b; b = b->next_free) {
    if (b->size > largest) largest = b->size;
  }
  return largest > ARENA_HEADER_SIZE ? largest - ARENA_HEADER_SIZE : 0;
}
