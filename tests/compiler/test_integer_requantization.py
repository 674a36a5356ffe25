"""TFLite's integer requantization in CPU code (npukit.quantization.fixed_point, as the
integer-requantization pass emits it): compiled by IREE for this host and run,
it gives what TFLite's arithmetic, written out in Python integers, gives."""

from __future__ import annotations

import iree.compiler as ireec
import iree.runtime as ireert
import numpy as np
import pytest
from iree.compiler import ir
from iree.compiler.dialects import arith

from npukit.quantization.fixed_point import FixedPoint, reduced_multiplier_64
from npukit.quantization.fixed_point_reference import double_scale_parts, scale_rounded_once_array, srdhm
from npukit.quantization.requantization import quantize_multiplier
from tests.support.tflite_arithmetic import requantize, rounding_divide

N = 4096
DIVISORS = (1, 2, 3, 49, 64, 65536)


def _elementwise(name: str, inputs: int, types: tuple[str, ...] = ()) -> str:
    """A function of ``inputs`` tensors (element types ``types``, default
    i32) whose body yields a placeholder, for _emit to replace."""
    types = types or ("i32",) * inputs
    ident = "affine_map<(d0) -> (d0)>"
    args = ", ".join(f"%a{i}: tensor<{N}x{t}>" for i, t in enumerate(types))
    block = ", ".join(f"%b{i}: {t}" for i, t in enumerate(types))
    return f"""
func.func @{name}({args}) -> tensor<{N}xi32> {{
  %e = tensor.empty() : tensor<{N}xi32>
  %r = linalg.generic {{indexing_maps = [{", ".join([ident] * (inputs + 1))}], iterator_types = ["parallel"]}}
      ins({", ".join(f"%a{i}" for i in range(inputs))} : {", ".join(f"tensor<{N}x{t}>" for t in types)})
      outs(%e : tensor<{N}xi32>) {{
  ^bb0({block}, %out: i32):
    linalg.yield %out : i32
  }} -> tensor<{N}xi32>
  return %r : tensor<{N}xi32>
}}"""


def _generics(module: ir.Module) -> dict[str, ir.Operation]:
    found = {}
    for func in module.body.operations:
        name = ir.StringAttr(func.attributes["sym_name"]).value
        for op in func.regions[0].blocks[0].operations:
            if op.operation.name == "linalg.generic":
                found[name] = op.operation
    return found


def _emit(generic: ir.Operation, build) -> None:
    """Replaces the body's result with build(FixedPoint, block arguments)."""
    block = generic.regions[0].blocks[0]
    terminator = list(block.operations)[-1]
    with ir.InsertionPoint(terminator), terminator.location:
        terminator.operands[0] = build(FixedPoint(), list(block.arguments))


@pytest.fixture(scope="module")
def compiled():
    with ir.Context():
        text = (_elementwise("requantize", 3) + _elementwise("scale_once", 4)
                + _elementwise("requantize_64", 3, ("i64", "i32", "i32")) + _elementwise("srdhm", 2)
                + "".join(_elementwise(f"divide_{d}", 1) for d in DIVISORS))
        module = ir.Module.parse(text)
        generics = _generics(module)

        def requantize_body(fixed, args):
            x, multiplier, shift = args[:3]
            zero = fixed.constant(0)
            left = arith.MaxSIOp(shift, zero).result
            right = arith.MaxSIOp(fixed.sub(zero, shift), zero).result
            return fixed.multiply_by_quantized_multiplier(x, multiplier, left, right)

        _emit(generics["requantize"], requantize_body)
        _emit(generics["scale_once"], lambda fixed, args: fixed.scale_rounded_once(
            args[0], args[1], arith.ExtUIOp(fixed.i64, args[2]).result, args[3]))
        _emit(generics["requantize_64"], lambda fixed, args: fixed.multiply_by_quantized_multiplier_64(*args[:3]))
        _emit(generics["srdhm"], lambda fixed, args: fixed.saturating_doubling_high_multiply(args[0], args[1]))
        for d in DIVISORS:
            _emit(generics[f"divide_{d}"], lambda fixed, args, d=d: fixed.rounding_divide(args[0], d))
        assert module.operation.verify()
        text = str(module)
    vmfb = ireec.compile_str(text, target_backends=["llvm-cpu"], extra_args=["--iree-llvmcpu-target-cpu=host"])
    config = ireert.Config("local-sync")
    context = ireert.SystemContext(config=config)
    context.add_vm_module(ireert.VmModule.copy_buffer(config.vm_instance, vmfb))
    return context.modules.module


def _accumulators(rng) -> np.ndarray:
    edges = [-(2**31), -(2**31) + 1, -(2**30), -65536, -3, -2, -1, 0, 1, 2, 3, 65535, 2**30, 2**31 - 1]
    x = np.concatenate([edges * 8, rng.integers(-(2**31), 2**31, N - 8 * len(edges), dtype=np.int64)])
    x[len(edges) * 8:len(edges) * 8 + 1024] = rng.integers(-70000, 70000, 1024)  # accumulator-sized values
    return x


def test_multiply_by_quantized_multiplier(compiled):
    rng = np.random.default_rng(5)
    x = _accumulators(rng)
    scales = np.exp(rng.uniform(np.log(1e-9), np.log(2e8), N))
    pairs = [quantize_multiplier(float(s)) for s in scales]
    multiplier = np.array([m for m, _ in pairs], np.int64)
    shift = np.array([s for _, s in pairs], np.int64)
    multiplier[:4], shift[:4] = [2**30, 2**31 - 1, 2**30, 2**31 - 1], [30, 30, -31, -31]
    assert shift.min() == -31 and shift.max() == 30 and (shift > 0).sum() > 100
    got = np.asarray(compiled.requantize(x.astype(np.int32), multiplier.astype(np.int32), shift.astype(np.int32)))
    want = [requantize(int(a), int(m), int(s)) for a, m, s in zip(x, multiplier, shift)]
    np.testing.assert_array_equal(got, np.array(want, np.int64))


def test_fully_connected_scaling(compiled):
    """round(fl64(x * scale)), ties away from zero, in 64-bit integers: what
    TFLite's fully connected kernel computes with a double."""
    rng = np.random.default_rng(6)
    x = _accumulators(rng)
    scales = np.exp(rng.uniform(np.log(1e-9), np.log(20.0), N))
    scales[:64] = 0.5  # exact ties, both signs
    x[:64] = np.arange(-32, 32) * 2 + 1
    parts = np.array([double_scale_parts(float(s)) for s in scales], np.int64)
    got = np.asarray(compiled.scale_once(x.astype(np.int32), parts[:, 0].astype(np.int32),
                                         parts[:, 1].astype(np.uint32).view(np.int32), parts[:, 2].astype(np.int32)))
    np.testing.assert_array_equal(got, scale_rounded_once_array(x, scales))
    assert list(got[:4]) == [-32, -31, -30, -29]  # -31.5 -> -32, -30.5 -> -31, ...


def test_multiply_by_quantized_multiplier_64(compiled):
    """The int64 accumulators of 16-bit activations: a 16-bit multiplier, one rounding."""
    rng = np.random.default_rng(7)
    x = rng.integers(-(2**40), 2**40, N, dtype=np.int64)
    pairs = [quantize_multiplier(float(s)) for s in np.exp(rng.uniform(np.log(1e-6), np.log(1.0), N))]
    reduced = [reduced_multiplier_64(m, s) for m, s in pairs]
    multiplier = np.array([m for m, _ in reduced], np.int32)
    total = np.array([t for _, t in reduced], np.int32)
    got = np.asarray(compiled.requantize_64(x, multiplier, total))
    want = [((int(a) * int(m) + (1 << (int(t) - 1))) >> int(t)) for a, m, t in zip(x, multiplier, total)]
    want = [(v + (1 << 31)) % (1 << 32) - (1 << 31) for v in want]  # truncated to int32
    np.testing.assert_array_equal(got, np.array(want, np.int64))


def test_saturating_doubling_high_multiply(compiled):
    rng = np.random.default_rng(8)
    a = rng.integers(-(2**31), 2**31, N, dtype=np.int64)
    b = rng.integers(-(2**31), 2**31, N, dtype=np.int64)
    a[:3], b[:3] = [-(2**31), -(2**31), 2**31 - 1], [-(2**31), 2**31 - 1, -(2**31)]
    got = np.asarray(compiled.srdhm(a.astype(np.int32), b.astype(np.int32)))
    np.testing.assert_array_equal(got, [srdhm(int(x), int(y)) for x, y in zip(a, b)])
    assert got[0] == 2**31 - 1


@pytest.mark.parametrize("divisor", DIVISORS)
def test_rounding_divide(compiled, divisor):
    rng = np.random.default_rng(divisor)
    ties = (np.arange(-64, 64) * divisor + divisor // 2) * np.where(np.arange(128) % 2, 1, -1)
    x = np.concatenate([ties, rng.integers(-(2**24), 2**24, N - ties.size)]).astype(np.int32)
    got = np.asarray(getattr(compiled, f"divide_{divisor}")(x))
    np.testing.assert_array_equal(got, [rounding_divide(int(v), divisor) for v in x])
