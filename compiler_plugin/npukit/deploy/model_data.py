"""The data a model firmware carries: its input sets ("samples") and the
host's outputs for each.

``render`` writes ``model_data.h`` for samples/model/main.c; ``read_outputs``
turns the "npukit: output <i> <hex>" console lines (one per output of each
sample, in order) back into arrays.
"""

from __future__ import annotations

import numpy as np

from npukit.deploy.environment import template_environment
from npukit.errors import RunError
from npukit.frontends.signature import TensorSpec


def _describe(array: np.ndarray) -> str:
    return f"{array.dtype}[{'x'.join(map(str, array.shape)) or 'scalar'}], {array.nbytes} bytes"


def _c_bytes(array: np.ndarray) -> str:
    data = np.ascontiguousarray(array).tobytes()
    lines = []
    for start in range(0, len(data), 16):
        lines.append("    " + ", ".join(f"0x{b:02x}" for b in data[start:start + 16]) + ",")
    return "\n".join(lines)


def _tensor(array: np.ndarray) -> dict:
    return {
        "description": _describe(array),
        "bytes": max(array.nbytes, 1),
        "hex": _c_bytes(array) if array.nbytes else "    0,",
        "kind": {np.dtype(np.float32): "MODEL_OUTPUT_FLOAT32", np.dtype(np.int8): "MODEL_OUTPUT_INT8",
                 np.dtype(np.uint8): "MODEL_OUTPUT_UINT8"}.get(array.dtype, "MODEL_OUTPUT_EXACT"),
    }


def render(model_name: str, inputs: list[list[np.ndarray]], expected_outputs: list[list[np.ndarray]],
           arena_limit: int | None = None, mynpu_sram_bytes: int | None = None,
           profile_dispatches: bool = False) -> str:
    """model_data.h: per sample the inputs and the expected outputs, buffers
    for the outputs, if given a cap on the runtime's arena in bytes and, for a
    model compiled for mynpu, the simulated NPU's SRAM size; with
    ``profile_dispatches`` the firmware prints each dispatch's instructions."""
    if not inputs or len(inputs) != len(expected_outputs):
        raise RunError(f"{len(inputs)} input sets and {len(expected_outputs)} output sets for {model_name}")
    for a in expected_outputs[0]:
        if a.dtype.kind == "f" and a.dtype != np.float32:
            raise RunError(f"the board sample compares float32 outputs; {model_name} returns {a.dtype}")
    return template_environment().get_template("model_data.h.j2").render(
        model=model_name,
        samples=[{"inputs": [_tensor(a) for a in i], "outputs": [_tensor(a) for a in o]}
                 for i, o in zip(inputs, expected_outputs)],
        arena_limit=arena_limit,
        mynpu_sram_bytes=mynpu_sram_bytes,
        profile_dispatches=profile_dispatches,
    )


def read_outputs(console_values: list[str], like: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """Per sample, arrays from the firmware's "output <i> <hex>" values (the
    samples' outputs in order), shaped and typed like |like|."""
    count = len(like[0])
    if len(console_values) != count * len(like):
        raise RunError(f"the firmware printed {len(console_values)} outputs, expected {count} for each of "
                       f"{len(like)} samples")
    return [_read_sample(console_values[k * count:(k + 1) * count], expected)
            for k, expected in enumerate(like)]


def _read_sample(console_values: list[str], like: list[np.ndarray]) -> list[np.ndarray]:
    found: dict[int, str] = {}
    for value in console_values:
        index, _, hex_text = value.partition(" ")
        if index.isdigit():
            found[int(index)] = hex_text.strip()
    outputs = []
    for i, reference in enumerate(like):
        if i not in found:
            raise RunError(f"the firmware printed no output {i}")
        try:
            data = bytes.fromhex(found[i])
        except ValueError:
            raise RunError(f"the firmware's output {i} is not hexadecimal") from None
        if len(data) != reference.nbytes:
            raise RunError(f"the firmware's output {i} has {len(data)} bytes, expected {reference.nbytes}")
        outputs.append(np.frombuffer(data, dtype=reference.dtype).reshape(reference.shape).copy())
    return outputs


def outputs_match(got: list[np.ndarray], expected: list[np.ndarray]) -> bool:
    """The firmware's rule: floats within 1e-4 relative, 8-bit quantized
    values within 1 (float operations on the CPU, such as a softmax or an
    average, compiled for the board's CPU can round one value the other way
    than the host's code), other integers equal."""
    for g, e in zip(got, expected, strict=True):
        if e.dtype.kind == "f":
            g64, e64 = g.astype(np.float64), e.astype(np.float64)
            if not np.all(np.abs(g64 - e64) <= 1e-4 * np.abs(e64) + 1e-6):
                return False
        elif e.dtype in (np.int8, np.uint8):
            if np.abs(g.astype(np.int32) - e.astype(np.int32)).max(initial=0) > 1:
                return False
        elif not np.array_equal(g, e):
            return False
    return True


def outputs_identical(got: list[np.ndarray], expected: list[np.ndarray]) -> bool:
    return all(np.array_equal(g, e) for g, e in zip(got, expected, strict=True))


def random_inputs(specs: list[TensorSpec], seed: int) -> list[np.ndarray]:
    """One input per spec, seeded: full-range integers, normal floats; unknown dims are 1."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        shape = [1 if d is None else d for d in spec.shape]
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            info = np.iinfo(dtype)
            low, high = max(info.min, -128), min(info.max, 127)
            arrays.append(rng.integers(low, high, shape, endpoint=True).astype(dtype))
    return arrays
