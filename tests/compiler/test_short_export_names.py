"""Short export names (npukit/passes/short_export_names.py): a vm-c build's
exports are d0, d1, ... in everything the program and its executables hold,
IREE's names stay in the manifest, and what reports per dispatch (the
runtime's profile, the stack bound) reports IREE's names."""

from __future__ import annotations

import pytest
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from iree.compiler import ir
from iree.compiler.api import Session, Source

from npukit.deploy.model_data import random_inputs
from npukit.driver import iree_capi
from npukit.driver.phases import PhasedPipeline
from npukit.frontends.model_import import import_model
from npukit.manifest import by_long_export_name, long_export_names
from npukit.passes.short_export_names import ShortExportNames, is_short_name
from npukit.runtime.binding import NpukitRuntimeModel

HELLO = "zoo/hello_world_int8.tflite"


def _stream_module(model, tmp_path) -> str:
    """``model`` compiled by IREE alone up to 'stream', as text."""
    imported = import_model(model)
    source = tmp_path / "in.mlirbc"
    source.write_bytes(imported.mlir)
    iree_capi.ensure_global_command_line()
    session = Session()
    session.set_flags("--iree-hal-target-backends=llvm-cpu", "--iree-execution-model=inline-dynamic",
                      *imported.iree_flags)
    text = []
    PhasedPipeline(session, hooks={"stream": [lambda m: text.append(m.get_asm(large_elements_limit=16))]}).run(
        Source.open_file(session, str(source)), compile_to="stream")
    return text[0]


def _exports_and_calls(module: ir.Module) -> tuple[list[str], list[str], list[tuple[str, ...]]]:
    exports, functions, calls = [], [], []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "stream.executable.export":
            exports.append(ir.StringAttr(op.attributes["sym_name"]).value)
        elif op.name == "func.func":
            functions.append(ir.StringAttr(op.attributes["sym_name"]).value)
        elif op.name == "stream.cmd.dispatch":
            calls.extend(tuple(ir.SymbolRefAttr(r).value) for r in ir.ArrayAttr(op.attributes["entry_points"]))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return exports, functions, calls


def test_the_pass_renames_exports_functions_and_calls_together(shared_models, tmp_path):
    text = _stream_module(shared_models / HELLO, tmp_path)
    with ir.Context():
        module = ir.Module.parse(text)
        before, _, _ = _exports_and_calls(module)
        renamer = ShortExportNames()
        renamer(module.operation)
        assert module.operation.verify()
        exports, functions, calls = _exports_and_calls(module)
    assert exports == [f"d{i}" for i in range(len(before))]
    assert renamer.long == dict(zip(exports, before)) and renamer.short == dict(zip(before, exports))
    assert set(exports) <= set(functions) and not set(before) & set(functions)
    assert {export for _, export in calls} == set(exports)


def test_a_short_name_taken_by_a_function_is_skipped(shared_models, tmp_path):
    text = _stream_module(shared_models / HELLO, tmp_path)
    with ir.Context():
        module = ir.Module.parse(text)
        first = [op for op in module.body.operations if op.operation.name == "stream.executable"][0]
        inner = first.regions[0].blocks[0].operations[1]  # the executable's builtin.module
        ir.InsertionPoint(inner.regions[0].blocks[0]).insert(ir.Operation.parse("func.func private @d0(i32) -> i32"))
        renamer = ShortExportNames()
        renamer(module.operation)
        assert module.operation.verify()
    assert "d0" not in renamer.long and min(renamer.long, key=lambda n: int(n[1:])) == "d1"


@pytest.mark.parametrize("target", ["host", "mynpu"])
def test_a_static_build_holds_short_names_and_profiles_long_ones(target, shared_models, artifact_cache):
    """The vm-c module and the static library name exports d0, d1, ...; a
    mynpu build's static library has no function for the exports the NPU
    runs, whose names its mynpu-v1 executable stores (the run fails on a name
    it cannot find)."""
    result = artifact_cache(shared_models / HELLO, target, "static")
    manifest = result.manifest
    long_names = [d["name"] for d in manifest["dispatches"]]
    names = long_export_names(manifest)
    assert all(is_short_name(n) for n in names) and sorted(names.values()) == sorted(long_names)
    module = result.path("vm_module_c").read_text()
    assert [n for n in long_names if n in module] == [] and all(f'"{short}"' in module for short in names)
    with result.path("static_library").open("rb") as f:
        elf = ELFFile(f)
        loaded = b"".join(s.data() for s in elf.iter_sections()
                          if s["sh_flags"] & SH_FLAGS.SHF_ALLOC and s["sh_type"] != "SHT_NOBITS")
        functions = {s.name for s in elf.get_section_by_name(".symtab").iter_symbols()
                     if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"}
    assert [n for n in long_names if n.encode() in loaded] == []
    short = {long: short for short, long in names.items()}
    on_npu = {d["name"] for d in (manifest["mynpu"]["dispatches"] if target == "mynpu" else ())
              if d["device"] == "mynpu"}
    if target == "mynpu":
        assert on_npu and on_npu != set(long_names), manifest["mynpu"]["summary"]
    assert {short[n] for n in long_names} & functions == {short[n] for n in long_names if n not in on_npu}
    model = NpukitRuntimeModel(result, profile_dispatches=True)
    try:
        model(*random_inputs(model.entry.inputs, 0))
        assert set(model.dispatch_seconds) == set(long_names)
    finally:
        model.close()


def test_profiles_are_keyed_by_iree_names():
    manifest = {"export_names": {"d0": "main_dispatch_0_conv", "d1": "main_dispatch_1_matmul"}}
    assert by_long_export_name({"d1": 7, "d0": 5}, manifest) == {"main_dispatch_1_matmul": 7,
                                                                 "main_dispatch_0_conv": 5}
    # An artifact without the table (a .vmfb) keeps IREE's names.
    assert by_long_export_name({"main_dispatch_0_conv": 5}, {}) == {"main_dispatch_0_conv": 5}
