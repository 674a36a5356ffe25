"""The layer sweeps (layer_sweeps.py) on every path that claims TFLite's
integer arithmetic, against TFLite's reference kernels, 0 LSB (and the
dynamic-range layers within 2 ulp of the branch's largest output: the same
integer arithmetic and float operations, except that the code generator may
fuse the final multiply and bias add into one rounding, an error of half an
ulp of the product, which can exceed the sum where the two nearly cancel):

- the host with the tuned pipeline (npukit's x86 kernels),
- the mynpu NPU (the simulator, through npukit's runtime on the host),
- Cortex-M4 (the DSP kernels) and RV32 (the portable kernels) under QEMU.

Each path must also take the layers its parameter space covers: a layer
left to IREE's code would pass for the wrong reason. What a path leaves
out, it leaves with a reason, and the result is still exact.
"""

from __future__ import annotations


import numpy as np
import pytest

import npukit
from kernels.layer_sweeps import SWEEPS, constant_output, mean_window, pool_pads, prepared_sweep
from npukit.layer_recognition.layer_spec import TABLE_OPERATION as TABLE
from support.tflite_builder import run_reference


def _kernel_space(branch) -> bool:
    """The layers the kernels and the NPU take: every convolution and
    depthwise convolution (any channel multiplier), and fully connected
    layers of more than one input (IREE turns a one-input layer into an
    elementwise product, no contraction, and so a 1x1 convolution of one
    input channel)."""
    if branch.op == "QUANTIZE":
        return True  # a float input quantized to int8: the kernels' s8_quantize
    if branch.inputs[0].dtype == np.float32:
        return False  # dynamic-range (float) layers stay on IREE's code
    if branch.op == "ADD":
        return False  # an ADD of a layer's output (a chained sweep) is that layer's output stage, not a layer
    if branch.op in ("STRIDED_SLICE", "SPLIT_V"):
        return False  # a window a later layer reads (a chained sweep), not a layer
    if branch.op == "LOGISTIC":
        return False  # a product's gate (elementwise_mul): IREE fuses it into the product's dispatch
    if branch.op == "AVERAGE_POOL_2D":
        return not pool_pads(branch)  # a padded average divides by a count per pixel: refused
    if branch.op == "MAX_POOL_2D":
        return True  # a padded max pools a copy IREE pads in a dispatch of its own
    if branch.op == "MEAN":
        return mean_window(branch) <= 256  # the kernels' int16 sums
    if branch.op == "FULLY_CONNECTED":
        return branch.inputs[0].shape[-1] > 1
    if branch.op == "CONV_2D" and branch.inputs[1].shape[1:] == (1, 1, 1):
        return False  # a 1x1 layer of one input channel: an elementwise product, as above
    return True


def _layers(branches) -> int:
    """The layers a path must take: those of the kernels' space, less a
    layer whose only reader (a chained ADD) has an output of one value:
    IREE folds the two to a constant, and no dispatch is left."""
    folded = {id(spec) for b in branches if b.op == "ADD" and constant_output(b) for spec in b.inputs}
    return sum(1 for b in branches if _kernel_space(b) and id(b.outputs[0]) not in folded)


def _cpu_only(branches) -> int:
    """The float quantizations the CPU kernel takes (s8_quantize.c): the NPU
    computes no float, so they stay on the CPU beside it. (Pools run as
    OP_POOL, products as OP_E_MUL.)"""
    return sum(1 for b in branches if b.op == "QUANTIZE")


def _x86_iree(branches) -> int:
    """The pools, means and float quantizations an x86 host leaves to IREE's vectorised code
    (kernel_choice.X86_HOST_IREE_KINDS); the boards take them."""
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return 0
    return sum(1 for b in branches if b.op == "QUANTIZE" or (b.op in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "MEAN")
                                                            and _kernel_space(b)))


def _one_value_layer(branch) -> bool:
    """A fully connected layer of one input and one output: IREE makes it an
    elementwise operation of one int8 value, which the CPU kernels run as a
    256-entry table (layer_recognition/table_lookup.py) and the NPU as OP_TABLE."""
    return branch.op == "FULLY_CONNECTED" and branch.inputs[0].dtype == np.int8 and \
        branch.inputs[0].shape[-1] == 1 and branch.outputs[0].shape[-1] == 1


@pytest.fixture(scope="module", params=sorted(SWEEPS))
def sweep(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param) / f"sweep_{request.param}.tflite"
    return prepared_sweep(request.param, SWEEPS[request.param](), path, seed=11)


def _check(got_outputs, want_outputs, branches, context: str) -> None:
    for b, (got, want) in enumerate(zip(got_outputs, want_outputs)):
        got = np.asarray(got).reshape(want.shape)
        if want.dtype == np.float32:
            unit = np.spacing(np.max(np.abs(want)))
            ulps = float(np.abs(got - want).max() / unit)
            assert ulps <= 2, f"{context}: branch {b} ({branches[b].op}) differs by {ulps:.1f} ulp of its largest output"
            continue
        assert np.array_equal(got, want), \
            f"{context}: branch {b} ({branches[b].op} {branches[b].options}) differs by up to " \
            f"{np.abs(got.astype(np.int32) - want).max()} LSB"


def _taken(entries: dict, device_of) -> int:
    return sum(1 for e in entries if device_of(e))


def test_host_tuned_kernels(sweep, tmp_path):
    name, branches, path, inputs, wants = sweep
    result = npukit.compile(path, out_dir=tmp_path / "host")
    assert result.manifest["cpu_pipeline"] == "tuned" and not result.manifest["warnings"]
    loaded = npukit.load(result)
    for x, want in zip(inputs, wants):
        _check(loaded(*x), want, branches, f"{name} on the host")
    kernels = result.manifest["cpu_kernels"]
    tables = sum(1 for e in kernels.values() if e.get("operation") == TABLE)
    taken = sum(1 for e in kernels.values() if "operation" in e) - tables
    assert taken == _layers(branches) - _x86_iree(branches), kernels
    assert tables == sum(map(_one_value_layer, branches)), kernels


@pytest.mark.parametrize("name", ["conv_rows", "conv_add_rows"])
def test_host_row_taps_sweeps_take_the_row_taps_form(name, tmp_path):
    """The row-taps sweeps run on that form by default where it fits
    (kernel_choice.rows_fit) and on the lane kernel's other form for 8 and 17
    output channels, 0 LSB against TFLite's reference kernels (the host
    sweep above); its parameter space is the one the layers' specs check."""
    from npukit.cpu.kernel_choice import KernelChoice

    _, branches, path, inputs, wants = prepared_sweep(name, SWEEPS[name](), tmp_path / f"{name}.tflite", seed=11)
    result = npukit.compile(path, out_dir=tmp_path / "host")
    loaded = npukit.load(result)
    for x, want in zip(inputs, wants):
        _check(loaded(*x), want, branches, f"{name} on the host")
    rows = KernelChoice(weights="lanes", conv_form="rows")
    choices = {}
    for entry in result.manifest["cpu_kernels"].values():
        if entry.get("operation", "").startswith("convolution"):
            out_c = int(entry["layer"].split(" out ")[1].split("x")[0])
            choices.setdefault(out_c, set()).add(KernelChoice.from_json(entry["choice"]))
    convs = [b for b in branches if b.op == "CONV_2D"]
    assert sorted(choices) == sorted({b.outputs[0].shape[-1] for b in convs}), choices
    for out_c, chosen in choices.items():
        assert chosen == ({KernelChoice(weights="lanes")} if out_c in (8, 17) else {rows}), (out_c, chosen)


def test_mynpu(sweep, tmp_path):
    name, branches, path, inputs, wants = sweep
    result = npukit.compile(path, target="mynpu", output="embedded", out_dir=tmp_path / "npu")
    for x, want in zip(inputs, wants):
        _check(npukit.run(result, *x, runtime="npukit"), want, branches, f"{name} on mynpu")
    rows = result.manifest["mynpu"]["dispatches"]
    on_npu = sum(1 for r in rows if r["device"] == "mynpu" and r["operation"] != TABLE)
    tables = sum(1 for r in rows if r["device"] == "mynpu" and r["operation"] == TABLE)
    assert on_npu == _layers(branches) - _cpu_only(branches), [(r["name"], r.get("reason")) for r in rows]
    assert tables == sum(map(_one_value_layer, branches)), [(r["name"], r.get("reason")) for r in rows]


def test_mynpu_without_the_pool_instruction(tmp_path):
    """A hardware configuration without OP_POOL leaves the pools to the CPU
    part of the build (the pool kernel), each with the reason, exact."""
    from npukit.mynpu.options import MynpuOptions

    _, branches, path, inputs, wants = prepared_sweep("pool", SWEEPS["pool"](), tmp_path / "sweep_pool.tflite",
                                                      seed=11)
    result = npukit.compile(path, target="mynpu", output="embedded", out_dir=tmp_path / "npu",
                            mynpu=MynpuOptions(pool=False))
    for x, want in zip(inputs, wants):
        _check(npukit.run(result, *x, runtime="npukit"), want, branches, "pools on the CPU of a mynpu build")
    rows = result.manifest["mynpu"]["dispatches"]
    refused = [r for r in rows if "no OP_POOL (--mynpu-pool=off)" in r["reason"]]
    assert not [r for r in rows if r["device"] == "mynpu"] and len(refused) == _layers(branches), rows
    assert not result.manifest["mynpu"]["hardware"]["pool"]


@pytest.mark.slow
@pytest.mark.parametrize("board", ["mps2-an386", "virt-rv32imf"])
def test_boards(sweep, board):
    from npukit.deploy.deploy_model import deploy

    name, branches, path, _, _ = sweep
    result = deploy(path, board, samples=2, seed=3)
    context = f"{name} on {board}"
    for sample in result.samples:
        assert sample.identical_to_host, context
        _check(sample.outputs, run_reference(path, sample.inputs), branches, context)


@pytest.mark.slow
def test_board_few_channels_with_int16_weights(tmp_path):
    """The few-input-channel sweep on Cortex-M4 with every convolution's
    weights widened to int16 (a flash budget that holds them all): the int16
    forms of the DSP kernels, against TFLite's reference kernels, 0 LSB."""
    from npukit.deploy.deploy_model import deploy

    name, branches, path, _, _ = prepared_sweep("conv_few", SWEEPS["conv_few"](), tmp_path / "sweep_conv_few.tflite",
                                                seed=11)
    result = deploy(path, "mps2-an386", samples=2, seed=3, flash_budget=1 << 30)
    constants = result.to_json()["kernel_constants"]
    assert constants["int16_layers"] == constants["layers"] == len(branches)
    for sample in result.samples:
        assert sample.identical_to_host, name
        _check(sample.outputs, run_reference(path, sample.inputs), branches, f"{name} with int16 weights")


@pytest.mark.slow
def test_board_depthwise_planes_with_int8_weights(tmp_path):
    """The int16-plane depthwise sweep on Cortex-M4 with every layer given
    channel-order ("int8") weights, the tuning candidate beside "taps": the
    planes kernel reads either form (and takes every layer of its space with
    this one, where the four-channel kernels do not compete), against
    TFLite's reference kernels, 0 LSB."""
    from npukit.cpu.kernel_choice import KernelChoice
    from npukit.deploy.deploy_model import deploy

    name, branches, path, _, _ = prepared_sweep("depthwise_planes", SWEEPS["depthwise_planes"](),
                                                tmp_path / "sweep_depthwise_planes.tflite", seed=11)
    host = npukit.compile(path, out_dir=tmp_path / "host")
    layers = {e["layer"] for e in host.manifest["cpu_kernels"].values() if "layer" in e}
    chosen = {key: KernelChoice(weights="int8") for key in layers}
    result = deploy(path, "mps2-an386", samples=2, seed=3, kernel_choices=chosen)
    kernels = result.artifact.manifest["cpu_kernels"]
    assert [e["choice"]["weights"] for e in kernels.values() if "layer" in e] == ["int8"] * len(branches), kernels
    for sample in result.samples:
        assert sample.identical_to_host, name
        _check(sample.outputs, run_reference(path, sample.inputs), branches, f"{name} with int8 weights")


@pytest.mark.slow
@pytest.mark.parametrize("sweep_name", ["fully_connected_matvec", "fully_connected"])
def test_board_fully_connected_with_int16_weights(tmp_path, sweep_name):
    """The batch-1 fully connected sweeps on Cortex-M4 with every layer's
    weights widened to int16 (a flash budget that holds them all): the
    matrix-vector kernel's int16 form (fully_connected: reductions of more
    than one chunk), against TFLite's reference kernels, 0 LSB."""
    from npukit.deploy.deploy_model import deploy

    name, branches, path, _, _ = prepared_sweep(sweep_name, SWEEPS[sweep_name](), tmp_path / f"sweep_{sweep_name}.tflite",
                                                seed=11)
    result = deploy(path, "mps2-an386", samples=2, seed=3, flash_budget=1 << 30)
    constants = result.to_json()["kernel_constants"]
    assert constants["int16_layers"] == sum(map(_kernel_space, branches))  # every layer but a one-value table
    assert constants["layers"] == constants["int16_layers"] + sum(map(_one_value_layer, branches))
    for sample in result.samples:
        assert sample.identical_to_host, name
        _check(sample.outputs, run_reference(path, sample.inputs), branches, f"{name} with int16 weights")
