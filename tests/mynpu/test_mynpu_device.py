"""The mynpu device in npukit's runtime: a program whose executable is
mynpu-v1 loads through hal_loader (inline-dynamic) and through the full HAL
(async), its dispatch runs the export's stream on the simulator, and the
counters come back through the runtime API.

The program's CPU code computes max(x, 3); the hand-written NPU stream
computes max(x, 5), so the outputs show which one ran. Dispatches without an
NPU stream run from the CPU code the executable carries."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from npukit.mynpu.executable import HEADER_BYTES, Executable, Export
from npukit.mynpu.isa import DMA_OVERHEAD_CYCLES, OP_OVERHEAD_CYCLES, HardwareConfig
from support.mynpu_device import build_npu_program, elementwise_program
from support.mynpu_streams import relu_stream

N = 64
EXPORT = "main_dispatch_0_elementwise_64_i8"
PROGRAM = elementwise_program(N, "%c = arith.constant 3 : i8\n      %y = arith.maxsi %a, %c : i8")
EXECUTION_MODELS = ["inline-dynamic", "async-internal"]


def executable(config: HardwareConfig = HardwareConfig(), sizes=(N, N), stream: bytes | None = None) -> bytes:
    return Executable(config, [Export(EXPORT, stream or relu_stream(N, zp=5), sizes)]).to_bytes()


@pytest.mark.parametrize("execution_model", EXECUTION_MODELS)
def test_dispatch_runs_the_stream_on_the_simulator(execution_model, tmp_path):
    config = HardwareConfig(dma_bytes_per_cycle=8)
    program = build_npu_program(PROGRAM, executable(config), execution_model, tmp_path)
    assert program.replaced == ["main_dispatch_0"]
    x = np.arange(-32, 32, dtype=np.int8)
    run = program.run(x, tmp_path)
    np.testing.assert_array_equal(run.output, np.maximum(x, 5))
    dma = -(-N // config.dma_bytes_per_cycle) + DMA_OVERHEAD_CYCLES
    relu = -(-N // config.pes) + OP_OVERHEAD_CYCLES
    assert run.counters["cycles"] == 2 * dma + relu
    assert run.counters["instructions"] == 3 and run.counters["layers"] == 1
    # The program ran twice: one dispatch each, and the totals add up.
    assert run.counters["dispatches"] == 2
    assert run.counters["total_cycles"] == 2 * run.counters["cycles"]


@pytest.mark.parametrize("execution_model", EXECUTION_MODELS)
def test_an_executable_needing_more_sram_than_the_device_is_refused(execution_model, tmp_path):
    program = build_npu_program(PROGRAM, executable(HardwareConfig(sram_bytes=8192)), execution_model, tmp_path)
    with pytest.raises(RuntimeError, match="compiled for 8192 bytes of SRAM; this device has 4096"):
        program.run(np.zeros(N, np.int8), tmp_path, sram_limit=4096)


def test_a_256_mib_configuration_takes_only_the_sram_its_stream_touches(tmp_path):
    """The simulator allocates the SRAM a stream touches, not the
    configuration's: an executable compiled for 256 MiB of SRAM runs with
    everything in a 1 MiB arena."""
    sram = 256 << 20
    program = build_npu_program(PROGRAM, executable(HardwareConfig(sram_bytes=sram)), "inline-dynamic", tmp_path)
    x = np.arange(-32, 32, dtype=np.int8)
    run = program.run(x, tmp_path, sram_limit=sram, arena=1 << 20)
    np.testing.assert_array_equal(run.output, np.maximum(x, 5))
    assert run.counters["sram_extent"] == 2 * N  # relu_stream's input and output
    assert run.counters["arena_high_water"] < 1 << 20


def test_a_binding_smaller_than_the_export_declares_is_refused(tmp_path):
    stream = relu_stream(N, zp=5)
    program = build_npu_program(PROGRAM, executable(sizes=(N, 2 * N), stream=stream), "inline-dynamic", tmp_path)
    with pytest.raises(RuntimeError, match=f"binding 1 has {N} bytes, the stream needs {2 * N}"):
        program.run(np.zeros(N, np.int8), tmp_path)


def test_a_malformed_executable_fails_the_module_load(tmp_path):
    bad = bytearray(executable())
    stream_at, stream_bytes = struct.unpack_from("<II", bad, HEADER_BYTES + 8)
    bad[stream_at + stream_bytes - 8] = 0x7E  # the END command becomes an unknown opcode
    program = build_npu_program(PROGRAM, bytes(bad), "inline-dynamic", tmp_path)
    with pytest.raises(RuntimeError, match="load: .*unknown opcode; in export 0"):
        program.run(np.zeros(N, np.int8), tmp_path)


@pytest.mark.parametrize("execution_model", EXECUTION_MODELS)
def test_dispatches_without_a_stream_run_from_the_host_code(execution_model, tmp_path):
    # Two dispatches linked into one executable: the first on the NPU, the
    # second (x + 7) from the CPU code IREE compiled, carried as host code.
    program_text = elementwise_program(N, "%c = arith.constant 3 : i8\n      %y = arith.maxsi %a, %c : i8",
                                       "%c = arith.constant 7 : i8\n      %y = arith.addi %a, %c : i8")

    def with_host_code(cpu_code: bytes) -> bytes:
        return Executable(HardwareConfig(), [Export(EXPORT, relu_stream(N, zp=5), (N, N))],
                          host_format="embedded-elf-x86_64", host_code=cpu_code).to_bytes()

    program = build_npu_program(program_text, with_host_code, execution_model, tmp_path)
    x = np.arange(-64, 64, 2, dtype=np.int8)
    run = program.run(x, tmp_path)
    np.testing.assert_array_equal(run.output, (np.maximum(x, 5) + 7).astype(np.int8))
    assert run.counters["dispatches"] == 4 and run.counters["instructions"] == 3
    assert run.counters["total_cycles"] == 2 * run.counters["cycles"]  # only the NPU dispatch counts cycles


def test_an_executable_of_host_code_only_runs_every_dispatch_on_the_cpu(tmp_path):
    def cpu_only(cpu_code: bytes) -> bytes:
        return Executable(HardwareConfig(), [], host_format="embedded-elf-x86_64", host_code=cpu_code).to_bytes()

    program = build_npu_program(PROGRAM, cpu_only, "inline-dynamic", tmp_path)
    x = np.arange(-32, 32, dtype=np.int8)
    run = program.run(x, tmp_path)
    np.testing.assert_array_equal(run.output, np.maximum(x, 3))
    assert run.counters["total_cycles"] == 0
