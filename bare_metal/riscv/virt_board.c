// The RISC-V virt board under QEMU: NS16550A UART for the console, minstret
// as the instruction counter (exact under `-icount shift=0`), and the SiFive
// test device for the exit status.

#include "npukit/board.h"

#define UART_BASE 0x10000000u
#define UART_THR (*(volatile uint8_t*)(UART_BASE + 0u))
#define UART_LSR (*(volatile uint8_t*)(UART_BASE + 5u))
#define UART_LSR_THR_EMPTY 0x20u

#define TEST_DEVICE (*(volatile uint32_t*)0x00100000u)
#define TEST_PASS 0x5555u
#define TEST_FAIL 0x3333u  // exit status in the upper 16 bits

const char* board_name(void) { return NPUKIT_BOARD_NAME; }

void board_init(void) {}

void board_write(const char* data, size_t length) {
  for (size_t i = 0; i < length; ++i) {
    while (!(UART_LSR & UART_LSR_THR_EMPTY)) {
    }
    UART_THR = (uint8_t)data[i];
  }
}

uint64_t board_instructions(void) {
  uint32_t high, low, again;
  do {
    __asm volatile("csrr %0, minstreth" : "=r"(high));
    __asm volatile("csrr %0, minstret" : "=r"(low));
    __asm volatile("csrr %0, minstreth" : "=r"(again));
  } while (high != again);
  return ((uint64_t)high << 32) | low;
}

uint32_t board_instruction_step(void) { return 1; }

void board_exit(int status) {
  uint32_t code = (uint32_t)status & 0xFFu;
  TEST_DEVICE = code == 0 ? TEST_PASS : (code << 16) | TEST_FAIL;
  for (;;) {
  }
}
