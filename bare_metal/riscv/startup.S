// Reset entry of the RISC-V virt boards: QEMU (-bios none) jumps to
// 0x80000000, where the linker script puts this code.

  .section .text.start, "ax"
  .globl _start
_start:
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  la sp, __npukit_stack_top
  la t0, npukit_trap_entry
  csrw mtvec, t0
#if defined(__riscv_flen)
  li t0, 0x2000  // mstatus.FS = initial: floating-point instructions are allowed
  csrs mstatus, t0
  csrw fcsr, zero
#endif
  call npukit_reset
1:
  j 1b

// Any trap is a fault here: report it and stop.
  .text
  .balign 4
  .globl npukit_trap_entry
npukit_trap_entry:
  csrr a0, mcause
  csrr a1, mepc
  csrr a2, mtval
  j board_trap
