# QEMU mps2-an385: Arm Cortex-M3 (no FPU).
set(NPUKIT_BOARD_FAMILY cortex_m)
set(NPUKIT_BOARD_CPU cortex-m3)
