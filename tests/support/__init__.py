"""Test helpers (oracles, model inputs, ELF checks)."""
