// Board support for npukit's QEMU boards: console, exit status, a
// deterministic instruction counter, the RAM left for the runtime's arena,
// and the stack high-water mark.
//
// One implementation per board family (cortex_m/, riscv/) over a common part
// (common/); the board is chosen at build time (NPUKIT_BOARD in CMake).

#ifndef NPUKIT_BOARD_H_
#define NPUKIT_BOARD_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Exit statuses the board support itself uses (an application returns its own
// from main; QEMU exits with it).
#define NPUKIT_BOARD_EXIT_FAULT 120  // a CPU fault or trap (the console says which)

// The board's name ("mps2-an386", ...).
const char* board_name(void);

// Writes bytes to the console (UART).
void board_write(const char* data, size_t length);

// Ends the program: QEMU exits with |status|.
void board_exit(int status) __attribute__((noreturn));

// Retired instructions since reset: exact on RISC-V (minstret); on the MPS2
// boards counted by a 25 MHz timer, in steps of NPUKIT_BOARD_INSTRUCTION_STEP
// instructions under `-icount shift=0`.
uint64_t board_instructions(void);
// The resolution of board_instructions (1 = exact).
uint32_t board_instruction_step(void);

// The RAM between the end of static data and the stack, for the arena.
void board_free_ram(void** out_start, size_t* out_size);

// Bytes of stack used at the deepest point so far (the stack is painted at
// reset and checked for the highest overwritten word).
size_t board_stack_high_water(void);
// The stack reserved by the linker script.
size_t board_stack_size(void);

// Console helpers.
void board_print(const char* text);
void board_print_u64(uint64_t value);
void board_print_hex(const void* data, size_t length);  // two lowercase hex digits per byte

// Called by the start-up code before main (console, counters, FPU).
void board_init(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_BOARD_H_
