"""A ref returned at several positions reaches every one of them on npukit's runtime.

IREE 3.13's vm-c emitter writes each distinct ref operand of a ``vm.return``
only at its last position (codegen/vm_c_ref_fix.py completes the others).
Checked in the C of a VM program, where each result's source register is
known, and end to end on ONNX models whose outputs IREE folds into one value
(identical operators, a zero-size split), against IREE's runtime. The same
fault in branches (one ref passed to two block arguments) is corrected on the
VM module before emission (passes/vm_branch_ref_copies.py) and checked on a
loop against IREE's runtime, where IREE's own output fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import npukit
from npukit.codegen.vm_c_ref_fix import DuplicateResultError, complete_duplicate_ref_results
from npukit.passes.vm_return_copies import vm_return_copies
from support.vm_programs import compile_vm

PROGRAM = Path(__file__).parent / "programs" / "duplicate_ref_results.mlir"
# Function -> the argument each ref result returns (None: not a ref).
RETURNS = {
    "aba": ["a", "b", "a"],
    "aab": ["a", "a", "b"],
    "abb": ["a", "b", "b"],
    "aaa": ["a", "a", "a"],
    "aia": ["a", None, "a"],
    "ab": ["a", "b"],
}


def _function_bodies(source: str) -> dict[str, tuple[list[str], list[str]]]:
    """C function name -> (parameter names after the module state, body lines)."""
    found = {}
    for m in re.finditer(r"^static iree_status_t dup_(\w+)\(iree_vm_stack_t\* v1, struct dup_t\* v2, "
                         r"struct dup_state_t\* v3, ([^)]*)\) \{\n(.*?)\n\}", source, re.M | re.S):
        params = [p.strip().rsplit(" ", 1)[1] for p in m.group(2).split(",")]
        found[m.group(1)] = (params, m.group(3).split("\n"))
    return found


def _result_sources(params: list[str], body: list[str], results: int) -> list[str | None]:
    """For each result parameter, the argument register its ref comes from
    (through the return's temporaries), following moves and retains."""
    holds: dict[str, str] = {}
    for line in body:
        m = re.match(r"\s*iree_vm_ref_(move|retain)\((v\d+), (v\d+)\);", line)
        if m:
            holds[m.group(3)] = holds.get(m.group(2), m.group(2))
    return [holds.get(p) for p in params[-results:]]


@pytest.fixture(scope="module")
def program_c(tmp_path_factory) -> tuple[str, dict]:
    from iree.compiler import ir
    from iree.compiler.api import Session

    work = tmp_path_factory.mktemp("dup")
    compile_vm(PROGRAM, work / "dup.c", "vm-c")
    session = Session()
    with session.context:
        copies = vm_return_copies(ir.Module.parse(PROGRAM.read_text()).operation)
    return (work / "dup.c").read_text(), copies


def test_the_record_names_each_repeated_position(program_c):
    _, copies = program_c
    assert copies == {"dup_aba": [{0: 2}], "dup_aab": [{0: 1}], "dup_abb": [{1: 2}], "dup_aaa": [{0: 2, 1: 2}],
                      "dup_aia": [{0: 2}]}


def test_every_ref_result_is_written_from_its_operand(program_c):
    source, copies = program_c
    raw = _function_bodies(source)
    # IREE's own output leaves a result unset in every function that repeats a ref.
    for name, operands in RETURNS.items():
        params, body = raw[name]
        sources = _result_sources(params, body, len(operands))
        unset = [k for k, (s, o) in enumerate(zip(sources, operands)) if o is not None and s is None]
        assert bool(unset) == (len({o for o in operands if o}) < len([o for o in operands if o])), name
    fixed, written = complete_duplicate_ref_results(source, copies)
    assert written == 6  # aba, aab, abb and aia one each, aaa two
    for name, operands in RETURNS.items():
        params, body = _function_bodies(fixed)[name]
        arguments = {"a": params[0], "b": params[1]}
        sources = _result_sources(params, body, len(operands))
        want = [arguments[o] if o else None for o in operands]
        got = [s if o else None for s, o in zip(sources, operands)]
        assert got == want, name


def test_without_the_record_only_unambiguous_results_are_completed(program_c):
    source, _ = program_c
    with pytest.raises(DuplicateResultError, match="more than one later result"):
        complete_duplicate_ref_results(source)
    # aaa, abb and aia say by themselves which ref the unset results hold.
    only = source
    for name in ("aba", "aab"):
        only = only.replace(f"dup_{name}(iree_vm_stack_t* v1", f"skip_{name}(int v1")
    _, written = complete_duplicate_ref_results(only)
    assert written == 4


def _model(pattern: str, path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    ops = {"a": "Relu", "b": "Neg"}
    nodes = [helper.make_node(ops[c], ["x"], [f"y{i}"]) for i, c in enumerate(pattern)]
    outputs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [4]) for i in range(len(pattern))]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outputs), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def _zero_size_split(path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [0])
    outputs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [0]) for i in range(3)]
    split = helper.make_tensor("split", TensorProto.INT64, [3], [0, 0, 0])
    node = helper.make_node("Split", ["x", "split"], ["y0", "y1", "y2"])
    model = helper.make_model(helper.make_graph([node], "g", [x], outputs, initializer=[split]),
                              opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, path)


CASES = ["aab", "aba", "abb", "aaa", "zero_size_split"]


@pytest.mark.parametrize("execution_model", ["async", "inline-dynamic"])
@pytest.mark.parametrize("case", CASES)
def test_model_outputs_match_iree(case, execution_model, tmp_path):
    path = tmp_path / f"{case}.onnx"
    if case == "zero_size_split":
        _zero_size_split(path)
        x = np.zeros((0,), np.float32)
    else:
        _model(case, path)
        x = np.array([-1.5, 2.0, -3.0, 4.0], np.float32)
    want = npukit.run(npukit.compile(path, out_dir=tmp_path / "vmfb"), x)
    artifact = npukit.compile(path, output="static", execution_model=execution_model, out_dir=tmp_path / "static")
    got = npukit.run(artifact, x, runtime="npukit")
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


BRANCH_PROGRAM = Path(__file__).parent / "programs" / "repeated_branch_refs.mlir"


def test_a_ref_passed_to_two_block_arguments_reaches_both(tmp_path):
    from iree.compiler import ir
    from iree.compiler.api import Session

    from npukit.passes.vm_branch_ref_copies import copy_repeated_branch_refs
    from support.vm_programs import Call, NpukitProgram, StockProgram

    with Session().context:
        module = ir.Module.parse(BRANCH_PROGRAM.read_text())
        assert copy_repeated_branch_refs(module.operation) == 1
        assert module.operation.verify()
        fixed = str(module)
    # IREE's own vm-c output leaves the loop's second argument unset.
    compile_vm(BRANCH_PROGRAM, tmp_path / "unfixed.c", "vm-c")
    unfixed = NpukitProgram((tmp_path / "unfixed.c").read_text(), "branches", tmp_path / "unfixed")
    calls = [Call("lengths", "i", "I", (n,)) for n in range(4)]
    want = [("ok", 111), ("ok", 121), ("ok", 122), ("ok", 122)]
    assert unfixed.call(calls) != want
    source = tmp_path / "branches.mlir"
    source.write_text(fixed)
    compile_vm(source, tmp_path / "branches.c", "vm-c")
    compile_vm(source, tmp_path / "branches.vmfb")
    assert StockProgram(tmp_path / "branches.vmfb").call(calls) == want
    npukit_program = NpukitProgram((tmp_path / "branches.c").read_text(), "branches", tmp_path / "npukit")
    assert npukit_program.call(calls) == want
