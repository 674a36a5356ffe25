// A firmware that faults on purpose: the board must report the fault on the
// console and end QEMU with NPUKIT_BOARD_EXIT_FAULT.
#include "npukit/board.h"

int main(void) {
  board_print("about to fault\n");
  __builtin_trap();
}
