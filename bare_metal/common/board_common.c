// The parts of board support every board shares: console helpers, the arena
// region, stack painting and its high-water mark, and the C library hooks.

#include <errno.h>
#include <sys/types.h>

#include "npukit/board.h"

// From the linker script (boards/*.ld).
extern uint8_t __npukit_arena_start[];
extern uint8_t __npukit_arena_end[];
extern uint32_t __npukit_stack_limit[];
extern uint32_t __npukit_stack_top[];

#define STACK_PAINT 0xC5A5C5A5u

void board_print(const char* text) {
  size_t n = 0;
  while (text[n]) ++n;
  board_write(text, n);
}

void board_print_u64(uint64_t value) {
  char out[20];
  size_t n = sizeof(out);
  do {
    out[--n] = (char)('0' + (unsigned)(value % 10u));
    value /= 10u;
  } while (value);
  board_write(out + n, sizeof(out) - n);
}

void board_print_hex(const void* data, size_t length) {
  static const char hex[] = "0123456789abcdef";
  const uint8_t* bytes = (const uint8_t*)data;
  char chunk[64];
  size_t used = 0;
  for (size_t i = 0; i < length; ++i) {
    chunk[used++] = hex[bytes[i] >> 4];
    chunk[used++] = hex[bytes[i] & 15];
    if (used == sizeof(chunk)) {
      board_write(chunk, used);
      used = 0;
    }
  }
  if (used) board_write(chunk, used);
}

void board_free_ram(void** out_start, size_t* out_size) {
  *out_start = __npukit_arena_start;
  *out_size = (size_t)(__npukit_arena_end - __npukit_arena_start);
}

size_t board_stack_size(void) { return (size_t)((uint8_t*)__npukit_stack_top - (uint8_t*)__npukit_stack_limit); }

// Paints the stack below the caller's frame (called once, early).
void board_paint_stack(void) {
  volatile uint32_t marker = 0;
  uint32_t* below = (uint32_t*)((uintptr_t)&marker & ~(uintptr_t)3) - 16;
  for (volatile uint32_t* p = __npukit_stack_limit; p < below; ++p) *p = STACK_PAINT;
}

size_t board_stack_high_water(void) {
  const uint32_t* p = __npukit_stack_limit;
  while (p < __npukit_stack_top && *p == STACK_PAINT) ++p;
  return (size_t)((const uint8_t*)__npukit_stack_top - (const uint8_t*)p);
}

//===----------------------------------------------------------------------===//
// C library hooks (newlib and picolibc): no heap, console output, exit.
//===----------------------------------------------------------------------===//

void _exit(int status) { board_exit(status); }

void* _sbrk(ptrdiff_t increment) {
  (void)increment;
  errno = ENOMEM;  // the runtime allocates from its arena; there is no heap
  return (void*)-1;
}

int _write(int fd, const char* data, int length) {
  (void)fd;
  board_write(data, (size_t)length);
  return length;
}
