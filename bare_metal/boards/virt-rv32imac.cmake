# QEMU virt, riscv32 restricted to RV32IMAC.
set(NPUKIT_BOARD_FAMILY riscv)
set(NPUKIT_BOARD_CPU rv32imac)
