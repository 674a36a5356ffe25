"""Arguments for the VM operation tests: the edge cases of each register type
(zero, signs, extremes, widths, ties, infinities, NaN), as bits."""

from __future__ import annotations

import itertools
import math
import struct

from support.vm_ops import ScalarOp

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

I32 = [0, 1, -1, 2, -2, 3, -7, 31, 32, 33, 127, 128, 255, 256, -129, 32767, -32768, 65535, 65536, 0x12345678,
       -0x12345678, I32_MAX, I32_MIN, I32_MIN + 1]
I64 = [0, 1, -1, 2, -7, 31, 32, 63, 64, 65, 255, I32_MAX, I32_MIN, 1 << 32, (1 << 32) + 5, 0x123456789ABCDEF0,
       -0x123456789ABCDEF0, I64_MAX, I64_MIN, I64_MIN + 1]
F32 = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.75, -3.75, 0.49999997, 0.1, -0.1, 1e-45, -1e-40,
       1e-30, 1e30, 3.4028235e38, -3.4028235e38, 2.0**31, -(2.0**31), 2.0**32, 4294967040.0, 2.0**63, -(2.0**63),
       2.0**64, 8388609.0, 16777217.0, 123.456, math.pi, math.inf, -math.inf, math.nan, -math.nan]
SHIFTS = [0, 1, 7, 8, 31, 32, 33, 63, 64, 65, -1, 100]
CONDITIONS = [0, 1, -1, 2]
EXPONENTS = [0, 1, -1, 2, -2, 3, 7, -7, 31, 64, 127, 1 << 40, -(1 << 40)]

# Pairs and triples take fewer values so that every combination is tried.
_FEW = {"i32": [0, 1, -1, 2, -7, 31, 32, 255, 65536, 0x12345678, I32_MAX, I32_MIN],
        "i64": [0, 1, -1, 2, -7, 63, 64, I32_MAX, 1 << 32, 0x123456789ABCDEF0, I64_MAX, I64_MIN],
        "f32": [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.75, 1e-45, 1e30, 2.0**31, math.inf, -math.inf, math.nan]}
_FEWER = {"i32": [0, 1, -1, 7, I32_MAX, I32_MIN], "i64": [0, 1, -1, 7, I64_MAX, I64_MIN],
          "f32": [0.0, -0.0, 1.5, -3.0, 1e30, math.inf, math.nan]}
_ALL = {"i32": I32, "i64": I64, "f32": F32}


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _bits(value, register: str) -> int:
    if register == "f32":
        return f32_bits(value)
    return value & (0xFFFFFFFF if register == "i32" else (1 << 64) - 1)


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def traps_in_iree(op: ScalarOp, values: tuple) -> bool:
    """Integer division by zero and INT_MIN / -1: undefined in IREE's VM, whose
    runtime raises SIGFPE on them (tests/runtime/test_vm_ops.py checks)."""
    head = op.name.split(".")[1]
    if head not in ("div", "rem") or op.result == "f32":
        return False
    bits = 32 if op.result == "i32" else 64
    lhs, rhs = _signed(values[0], bits), _signed(values[1], bits)
    return rhs == 0 or (op.name.endswith(".s") and rhs == -1 and lhs == -(1 << (bits - 1)))


def arguments(op: ScalarOp) -> list[tuple[int, ...]]:
    """Every argument tuple the test calls |op| with, as bits."""
    head = op.name.split(".")[1]
    ts = op.operands
    if head in ("shl", "shr"):
        combos = itertools.product(_FEW[ts[0]], SHIFTS)
        return [(_bits(a, ts[0]), _bits(n, "i32")) for a, n in combos]
    if head == "fpowi":
        return [(_bits(a, "f32"), _bits(n, "i64")) for a, n in itertools.product(_FEW["f32"], EXPONENTS)]
    if head == "select":
        return [(_bits(c, "i32"), _bits(a, ts[1]), _bits(b, ts[2]))
                for c, a, b in itertools.product(CONDITIONS, _FEWER[ts[1]], _FEWER[ts[2]])]
    if len(ts) == 1:
        return [(_bits(a, ts[0]),) for a in _ALL[ts[0]]]
    if len(ts) == 2:
        return [(_bits(a, ts[0]), _bits(b, ts[1])) for a, b in itertools.product(_FEW[ts[0]], _FEW[ts[1]])]
    return [tuple(_bits(v, t) for v, t in zip(vs, ts)) for vs in itertools.product(*(_FEWER[t] for t in ts))]
