"""The mynpu NPU: its instruction set (isa), command streams and the
simulator reached through npukit's C runtime (simulator)."""
