# QEMU mps2-an500: Arm Cortex-M7 (FPv5-D16).
set(NPUKIT_BOARD_FAMILY cortex_m)
set(NPUKIT_BOARD_CPU cortex-m7)
