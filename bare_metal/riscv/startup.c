// C run-time set-up for the RISC-V virt boards (everything is loaded into
// RAM, so only .bss is cleared) and the trap report.

#include "npukit/board.h"

extern uint32_t __npukit_bss_start[];
extern uint32_t __npukit_bss_end[];

int main(void);
void board_paint_stack(void);
void npukit_reset(void) __attribute__((noreturn, used));
void board_trap(uint32_t mcause, uint32_t mepc, uint32_t mtval) __attribute__((noreturn, used));

void npukit_reset(void) {
  for (uint32_t* dst = __npukit_bss_start; dst < __npukit_bss_end;) *dst++ = 0;
  board_paint_stack();
  board_init();
  board_exit(main());
}

static void print_word(const char* label, uint32_t value) {
  uint8_t be[4] = {(uint8_t)(value >> 24), (uint8_t)(value >> 16), (uint8_t)(value >> 8), (uint8_t)value};
  board_print(label);
  board_print_hex(be, 4);
}

void board_trap(uint32_t mcause, uint32_t mepc, uint32_t mtval) {
  board_print("\nnpukit: fault trap:");
  print_word(" mcause=0x", mcause);
  print_word(" mepc=0x", mepc);
  print_word(" mtval=0x", mtval);
  board_print("\n");
  board_exit(NPUKIT_BOARD_EXIT_FAULT);
}
