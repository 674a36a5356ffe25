"""The ONNX backend node tests on IREE's runtime and on npukit's.

The node tests are the cases ``onnx`` generates (``onnx.backend.test.case.node``:
one model per test with its inputs and reference outputs, the same data as
the package's ``backend/test/data/node/*``). A seeded shuffle of all of them
is the order; the sample is a prefix of it, each kept if ``npukit compile``
accepts it for the host (``tests/runtime/onnx_node_sample.json``, written by
``benchmarks/onnx_node_suite.py``).

Each kept test is compiled twice for the host, as a ``.vmfb`` for IREE's
runtime and as a static artifact (``-m static``, vm-c module and static
library) for npukit's runtime; both runtimes' outputs are compared with the
reference outputs with the ONNX backend runner's default tolerances.
"""

from __future__ import annotations

import json
import random
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parents[2]
SAMPLE_PATH = REPO / "tests" / "runtime" / "onnx_node_sample.json"
SEED = 30
# The ONNX backend test runner's defaults (onnx.backend.test.runner).
RTOL, ATOL = 1e-3, 1e-7


def node_cases() -> dict:
    """Test name -> onnx.backend.test.case TestCase (model, data sets)."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c.name: c for c in node.collect_testcases(None)}


def seeded_order(names, seed: int = SEED) -> list[str]:
    order = sorted(names)
    random.Random(seed).shuffle(order)
    return order


@dataclass
class Sample:
    seed: int
    onnx_version: str
    # How many names of the seeded order were tried, and of those the ones
    # npukit compiles for the host and the ones it refuses (name -> reason).
    considered: int
    accepted: list[str]
    refused: dict[str, str]

    @staticmethod
    def load(path: Path = SAMPLE_PATH) -> "Sample":
        return Sample(**json.loads(path.read_text()))

    def save(self, path: Path = SAMPLE_PATH) -> None:
        path.write_text(json.dumps(asdict(self), indent=1, sort_keys=True) + "\n")


PASS = "pass"


@dataclass
class Outcome:
    name: str
    compiled: bool
    # "pass", or why the runtime's outputs are not the reference's; "" when
    # not compiled.
    iree: str = ""
    npukit: str = ""
    # npukit's outputs equal IREE's bit for bit (None when either failed).
    identical: bool | None = None
    compile_error: str = ""
    seconds: float = 0.0


def compare(got: list[np.ndarray], want: list[np.ndarray]) -> str:
    """PASS, or the first difference of |got| from the reference |want|."""
    if len(got) != len(want):
        return f"{len(got)} outputs, the reference has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        if g.dtype != w.dtype:
            return f"output {i} has dtype {g.dtype}, the reference {w.dtype}"
        if g.shape != w.shape:
            return f"output {i} has shape {g.shape}, the reference {w.shape}"
        if w.dtype.kind in "fc":
            close = np.isclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True)
        else:
            close = g == w
        if not np.all(close):
            return f"output {i}: {int(np.size(close) - np.count_nonzero(close))} of {np.size(close)} values differ"
    return PASS


def _first_line(e: Exception, work: Path) -> str:
    text = str(e).replace(f"{work}/", "").strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


def _array(value) -> np.ndarray:
    """A data set's value as an array (the suite keeps some as TensorProto)."""
    from onnx import numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)


def _run(artifact, inputs, runtime: str, work: Path) -> tuple[str, list[np.ndarray] | None]:
    import npukit

    try:
        return PASS, npukit.run(artifact, *inputs, runtime=runtime)
    except Exception as e:  # noqa: BLE001 - every failure of a runtime is an outcome here
        return _first_line(e, work), None


def compile_static(case, work: Path):
    """The static host artifact of |case| (raises what npukit.compile raises)."""
    import npukit

    work.mkdir(parents=True, exist_ok=True)
    model = work / f"{case.name}.onnx"
    onnx.save(case.model, model)
    return npukit.compile(model, output="static", out_dir=work / "static")


def run_case(case, work: Path) -> Outcome:
    """Compiles |case| for both runtimes and runs both on its first data set."""
    import npukit
    from npukit.errors import NpukitError

    started = time.monotonic()
    try:
        static = compile_static(case, work)
    except NpukitError as e:
        return Outcome(case.name, False, compile_error=_first_line(e, work), seconds=time.monotonic() - started)
    inputs, expected = ([_array(v) for v in values] for values in case.data_sets[0])
    outcome = Outcome(case.name, True)
    try:
        vmfb = npukit.compile(work / f"{case.name}.onnx", out_dir=work / "vmfb")
        outcome.iree, stock = _run(vmfb, inputs, "stock", work)
    except NpukitError as e:
        outcome.iree, stock = f"the .vmfb compile failed: {_first_line(e, work)}", None
    outcome.npukit, ours = _run(static, inputs, "npukit", work)
    if outcome.iree == PASS:
        outcome.iree = compare(stock, expected)
    if outcome.npukit == PASS:
        outcome.npukit = compare(ours, expected)
    if stock is not None and ours is not None:
        outcome.identical = len(stock) == len(ours) and all(
            s.dtype == o.dtype and s.shape == o.shape and s.tobytes() == o.tobytes() for s, o in zip(stock, ours))
    outcome.seconds = time.monotonic() - started
    return outcome
