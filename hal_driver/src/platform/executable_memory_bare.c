// Executable memory on bare-metal boards: plain RAM from the runtime's
// allocator (Cortex-M and RV32 boards execute from RAM; no MPU is set up).

#if defined(NPUKIT_BARE_METAL)

#include "npukit/hal/executable_memory.h"

#define BARE_ALIGNMENT 64

iree_host_size_t npukit_executable_memory_page_size(void) { return BARE_ALIGNMENT; }

iree_status_t npukit_executable_memory_reserve(iree_host_size_t size, iree_allocator_t allocator,
                                               npukit_executable_memory_t* out_memory) {
  memset(out_memory, 0, sizeof(*out_memory));
  out_memory->allocator = allocator;
  void* p = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc_aligned(allocator, size ? size : 1, BARE_ALIGNMENT, &p));
  memset(p, 0, size);
  out_memory->base = (uint8_t*)p;
  out_memory->size = size;
  return iree_ok_status();
}

iree_status_t npukit_executable_memory_protect(npukit_executable_memory_t* memory, iree_host_size_t offset,
                                               iree_host_size_t length, bool writable, bool executable) {
  (void)memory;
  (void)offset;
  (void)length;
  (void)writable;
  (void)executable;
  return iree_ok_status();
}

void npukit_executable_memory_flush_icache(npukit_executable_memory_t* memory) {
  (void)memory;
#if defined(__arm__)
  __asm__ volatile("dsb 0xF\n\tisb 0xF" ::: "memory");
#elif defined(__riscv)
  __asm__ volatile("fence.i" ::: "memory");
#endif
}

void npukit_executable_memory_release(npukit_executable_memory_t* memory) {
  if (memory->base) iree_allocator_free_aligned(memory->allocator, memory->base);
  memory->base = NULL;
}

#endif  // NPUKIT_BARE_METAL
