"""Compile targets: CPU presets, the QEMU boards and their CPUs, the NPU pairing, output modes."""
