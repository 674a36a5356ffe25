# QEMU mps2-an386: Arm Cortex-M4F.
set(NPUKIT_BOARD_FAMILY cortex_m)
set(NPUKIT_BOARD_CPU cortex-m4)
