// Returns a status from main: QEMU must exit with exactly that status.
#include "npukit/board.h"

int main(void) {
  board_print("returning 42\n");
  return 42;
}
