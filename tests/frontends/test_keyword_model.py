"""The zoo's keyword_scrambled_8bit.tflite (int16 input quantized to int8,
seven SVDFs with int8 state between fully connected layers, an int8 to
int16 softmax and an int16 to int32 quantize) against TFLite Micro's
interpreter, the only one that runs its int8-state SVDFs, over several calls
with the state carried; and the int16 interface operators it needs against
TFLite's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from support.tflite_builder import Branch, Spec, build_model, random_input, run_reference
from support.tflite_recurrent import MicroInterpreter

SVDF = 27  # the builtin operator code


def _with_svdf_outputs(model: bytes) -> tuple[bytes, int]:
    """The model with every SVDF's output also a model output (after its own),
    so each layer is checked, not only the saturated final scores."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    m = schema.ModelT.InitFromObj(schema.Model.GetRootAs(model, 0))
    subgraph = m.subgraphs[0]
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in m.operatorCodes]
    extra = [op.outputs[0] for op in subgraph.operators if codes[op.opcodeIndex] == SVDF]
    subgraph.outputs = list(subgraph.outputs) + extra
    builder = flatbuffers.Builder(1024)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output()), 1 + len(extra)


def test_keyword_model_equals_tflite_micro(shared_models, tmp_path):
    model, outputs = _with_svdf_outputs((shared_models / "zoo" / "keyword_scrambled_8bit.tflite").read_bytes())
    assert outputs == 8
    path = tmp_path / "keyword_svdf_outputs.tflite"
    path.write_bytes(model)
    result = npukit.compile(path, out_dir=tmp_path / "host")
    assert result.manifest["cpu_pipeline"] == "tuned" and not result.manifest["warnings"]
    reference, compiled = MicroInterpreter(model, outputs), npukit.load(result)
    rng = np.random.default_rng(7)
    for call in range(5):
        x = rng.integers(-2000, 2000, (1, 96)).astype(np.int16)
        want, got = reference(x), compiled(x)
        for k, (w, g) in enumerate(zip(want, got)):
            assert g.dtype == w.dtype and np.array_equal(g, w), f"call {call}, output {k}: {g} instead of {w}"


@pytest.fixture(scope="module")
def interface_branches():
    return [
        Branch("QUANTIZE", [Spec((1, 96), np.int16, 0.000625, 0)], [Spec((1, 96), np.int8, 0.059208333, -128)]),
        Branch("QUANTIZE", [Spec((2, 40), np.int16, 0.0011, 7)], [Spec((2, 40), np.int8, 0.021, 3)]),
        Branch("QUANTIZE", [Spec((1, 50), np.int16, 1.5259022e-05, -32768)],
               [Spec((1, 50), np.int32, 3.051851e-05, 0)]),
        Branch("QUANTIZE", [Spec((3, 7), np.int16, 0.37, -5)], [Spec((3, 7), np.int32, 0.0021, 11)]),
        Branch("SOFTMAX", [Spec((4, 10), np.int8, 0.06996273, 2)], [Spec((4, 10), np.int16, 1.5259022e-05, -32768)],
               {"beta": 1.0}),
        Branch("SOFTMAX", [Spec((2, 33), np.int8, 0.11, -9)], [Spec((2, 33), np.int16, 1 / 65536, -32768)],
               {"beta": 0.7}),
    ]


def test_int16_interface_operators_equal_reference_kernels(interface_branches, tmp_path):
    path = tmp_path / "interfaces.tflite"
    build_model(interface_branches, path)
    result = npukit.compile(path, out_dir=tmp_path / "host")
    compiled = npukit.load(result)
    rng = np.random.default_rng(17)
    for _ in range(3):
        xs = [random_input(b.inputs[0], rng) for b in interface_branches]
        for b, (want, got) in enumerate(zip(run_reference(path, xs), compiled(*xs))):
            branch = interface_branches[b]
            assert got.dtype == want.dtype and np.array_equal(got, want), \
                f"{branch.op} {branch.inputs[0].dtype.__name__} to {branch.outputs[0].dtype.__name__}: " \
                f"{np.sum(got != want)} of {want.size} outputs differ"
