// The MPS2 boards under QEMU (mps2-an385, -an386, -an500): CMSDK UART0 for
// the console, CMSDK timer0 (25 MHz) as the instruction counter, and Arm
// semihosting SYS_EXIT_EXTENDED for the exit status.

#include "npukit/board.h"

#define UART0_BASE 0x40004000u
#define UART_DATA (*(volatile uint32_t*)(UART0_BASE + 0x00u))
#define UART_STATE (*(volatile uint32_t*)(UART0_BASE + 0x04u))
#define UART_CTRL (*(volatile uint32_t*)(UART0_BASE + 0x08u))
#define UART_BAUDDIV (*(volatile uint32_t*)(UART0_BASE + 0x10u))
#define UART_STATE_TX_FULL 1u
#define UART_CTRL_TX_ENABLE 1u

#define TIMER0_BASE 0x40000000u
#define TIMER_CTRL (*(volatile uint32_t*)(TIMER0_BASE + 0x00u))
#define TIMER_VALUE (*(volatile uint32_t*)(TIMER0_BASE + 0x04u))
#define TIMER_RELOAD (*(volatile uint32_t*)(TIMER0_BASE + 0x08u))
#define TIMER_CTRL_ENABLE 1u

// SYSCLK is 25 MHz; with `-icount shift=0` the CPU runs 1e9 instructions per
// virtual second, so the timer counts once per 40 instructions.
#define INSTRUCTIONS_PER_TICK 40u

#define SEMIHOSTING_SYS_EXIT_EXTENDED 0x20u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

const char* board_name(void) { return NPUKIT_BOARD_NAME; }

void board_init(void) {
  UART_BAUDDIV = 16;
  UART_CTRL = UART_CTRL_TX_ENABLE;
  TIMER_CTRL = 0;
  TIMER_RELOAD = 0xFFFFFFFFu;  // also loads VALUE
  TIMER_CTRL = TIMER_CTRL_ENABLE;
}

void board_write(const char* data, size_t length) {
  for (size_t i = 0; i < length; ++i) {
    while (UART_STATE & UART_STATE_TX_FULL) {
    }
    UART_DATA = (uint8_t)data[i];
  }
}

uint64_t board_instructions(void) {
  // The timer counts down and wraps every 2^32 ticks; reads more often than
  // that (every 171 s of virtual time) keep the sum exact.
  static uint32_t last = 0xFFFFFFFFu;
  static uint64_t ticks = 0;
  uint32_t now = TIMER_VALUE;
  ticks += (uint32_t)(last - now);
  last = now;
  return ticks * INSTRUCTIONS_PER_TICK;
}

uint32_t board_instruction_step(void) { return INSTRUCTIONS_PER_TICK; }

void board_exit(int status) {
  // QEMU exits with the subcode of an application exit (its low 8 bits).
  volatile uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)status};
  register uint32_t r0 __asm("r0") = SEMIHOSTING_SYS_EXIT_EXTENDED;
  register volatile uint32_t* r1 __asm("r1") = block;
  __asm volatile("bkpt 0xab" : : "r"(r0), "r"(r1) : "memory");
  for (;;) {
  }
}
