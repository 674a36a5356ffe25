# QEMU virt, riscv32 restricted to RV32IMF.
set(NPUKIT_BOARD_FAMILY riscv)
set(NPUKIT_BOARD_CPU rv32imf)
