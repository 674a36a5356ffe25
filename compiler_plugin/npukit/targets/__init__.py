"""Compile targets: CPU presets, the NPU pairing, output modes."""
