"""C that npukit writes beside IREE's output (the per-model wrapper) or corrects in it (vm_c_ref_fix)."""
