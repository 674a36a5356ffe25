"""The stack analysis (npukit.stack) on programs built here with the boards'
GCC: frames read from the machine code equal GCC's own -fstack-usage
figures, and the bound follows calls, tail calls and calls through
pointers, refuses recursion and run-time sized frames unless a limit is
stated, and states the limits it relied on."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from npukit.stack.stack_bound import bound, read_call_graph

PROGRAM = r"""
#include <stdint.h>
#include <string.h>
typedef int (*op_fn)(int);
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int big_locals(int x) {
  volatile int32_t a[300];
  for (int i = 0; i < 300; ++i) a[i] = x + i;
  return a[x & 255] + leaf(a[7]);
}
__attribute__((noinline)) float floats(float a, float b, int n) {
  float acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = a * (float)i + b;
  for (int k = 0; k < n; ++k) for (int i = 0; i < 8; ++i) acc[i] = acc[i] * acc[(i + 1) & 7] + (float)leaf(k);
  return acc[0] + acc[5];
}
__attribute__((noinline)) int deep_op(int x) { volatile char pad[2000]; pad[x & 1023] = 1; return pad[5] + big_locals(x); }
__attribute__((noinline)) int shallow_op(int x) { return leaf(x) + 2; }
__attribute__((noinline)) int never_pointed(int x) { volatile char pad[5000]; pad[x & 7] = 2; return pad[3]; }
const op_fn ops[2] = {deep_op, shallow_op};
__attribute__((noinline)) int through_pointer(int which, int x) { return ops[which & 1](x) + 1; }
__attribute__((noinline)) int recursive(int n) { volatile int keep = n; return n <= 0 ? 0 : recursive(n - 1) + keep; }
__attribute__((noinline)) int sized_at_run_time(int n) { volatile char buf[n]; buf[0] = 1; return buf[n - 1] + leaf(n); }
__attribute__((noinline)) int tail(int x) { volatile int keep[20]; keep[1] = x; return big_locals(keep[1]); }
__attribute__((noinline)) int switch_on(int op, int x) {
  switch (op) {
    case 0: return leaf(x);
    case 1: return x + 7;
    case 2: return big_locals(x);
    case 3: return x * x;
    case 4: return leaf(x + 1) * 3;
    case 5: return x - 9;
    case 6: return x ^ 0x55;
    case 7: return x << 3;
    case 8: return x / 3;
    default: return 0;
  }
}
int entry_switch(int op, int x) { return switch_on(op, x); }
int entry(int x) { return through_pointer(x, x) + (int)floats(1.0f, 2.0f, x) + tail(x) + never_pointed(x); }
int entry_recursive(int x) { return recursive(x) + leaf(x); }
int entry_sized(int x) { return sized_at_run_time(x); }
"""

FUNCTIONS = ("leaf", "big_locals", "floats", "deep_op", "shallow_op", "never_pointed", "through_pointer", "recursive",
             "tail", "entry", "entry_recursive", "entry_sized", "switch_on")

TOOLCHAINS = {
    "cortex-m4": ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
                  ["--specs=nano.specs"]),
    "cortex-m3": ("arm-none-eabi-gcc", ["-mcpu=cortex-m3", "-mthumb", "-mfloat-abi=soft"], ["--specs=nano.specs"]),
    "rv32imf": ("riscv64-unknown-elf-gcc", ["-march=rv32imf", "-mabi=ilp32f", "--specs=picolibc.specs"],
                ["-Wl,--defsym=__flash_size=0x1000000", "-Wl,--defsym=__ram_size=0x100000"]),
}


def _build(tmp_path: Path, cpu: str, optimize: str) -> tuple[Path, dict[str, tuple[int, str]]]:
    gcc, cflags, link = TOOLCHAINS[cpu]
    source = tmp_path / "program.c"
    source.write_text(PROGRAM)
    obj, elf = tmp_path / "program.o", tmp_path / "program.elf"
    subprocess.run([gcc, *cflags, optimize, "-ffunction-sections", "-fstack-usage", "-c", str(source), "-o", str(obj)],
                   check=True, cwd=tmp_path)
    subprocess.run([gcc, *cflags, *link, "-nostartfiles", "-Wl,-e,entry", "-Wl,--emit-relocs",
                    "-Wl,--undefined=entry_recursive", "-Wl,--undefined=entry_sized",
                    "-Wl,--undefined=entry_switch", "-o", str(elf), str(obj)],
                   check=True, cwd=tmp_path)
    usage = {}
    for line in (tmp_path / "program.su").read_text().splitlines():
        location, size, kind = line.split("\t")
        usage[location.rsplit(":", 1)[1]] = (int(size), kind)
    return elf, usage


@pytest.mark.parametrize("optimize", ["-O2", "-Os"])
@pytest.mark.parametrize("cpu", sorted(TOOLCHAINS))
def test_frames_equal_gcc_stack_usage(tmp_path, cpu, optimize):
    elf, usage = _build(tmp_path, cpu, optimize)
    graph = read_call_graph(elf)
    for name in FUNCTIONS:
        size, kind = usage[name]
        (address,) = graph.named(name)
        f = graph.functions[address]
        assert kind == "static" and f.frame == size and not f.dynamic, (cpu, name, f.frame, usage[name])
    f = graph.functions[graph.named("sized_at_run_time")[0]]
    assert usage["sized_at_run_time"][1].startswith("dynamic") and f.dynamic


@pytest.mark.parametrize("cpu", sorted(TOOLCHAINS))
def test_bound_follows_calls_and_pointers(tmp_path, cpu):
    elf, usage = _build(tmp_path, cpu, "-O2")
    graph = read_call_graph(elf)
    frame = {name: usage[name][0] for name in FUNCTIONS}
    # through_pointer reaches the functions in ops[], not never_pointed (whose address nobody takes).
    via_pointer = frame["through_pointer"] + frame["deep_op"] + frame["big_locals"] + frame["leaf"]
    got = bound(graph, "through_pointer")
    assert got.bytes == via_pointer and got.reason is None, got
    assert [f for f, _ in got.path] == ["through_pointer", "deep_op", "big_locals", "leaf"]
    assert bound(graph, "tail").bytes == frame["tail"] + frame["big_locals"] + frame["leaf"]
    # A switch's jump table is a branch inside the function, not a call through a pointer.
    switch = graph.functions[graph.named("switch_on")[0]]
    assert not switch.indirect_sites
    assert bound(graph, "switch_on").bytes == frame["switch_on"] + frame["big_locals"] + frame["leaf"]
    expected = frame["entry"] + max(via_pointer, frame["floats"] + frame["leaf"],
                                    frame["tail"] + frame["big_locals"] + frame["leaf"], frame["never_pointed"])
    assert bound(graph, "entry").bytes == expected


@pytest.mark.parametrize("cpu", sorted(TOOLCHAINS))
def test_recursion_and_run_time_frames_have_no_bound_unless_limited(tmp_path, cpu):
    elf, usage = _build(tmp_path, cpu, "-O2")
    graph = read_call_graph(elf)
    got = bound(graph, "entry_recursive", recursion_limits={})
    assert got.bytes is None and re.match(r"recursion: recursive -> recursive", got.reason), got
    limited = bound(graph, "entry_recursive", recursion_limits={"recursive": 3})
    assert limited.bytes == usage["entry_recursive"][0] + 3 * usage["recursive"][0]
    assert limited.assumptions == ("recursive at most 3 deep",)
    got = bound(graph, "entry_sized")
    assert got.bytes is None and "only known at run time" in got.reason, got
    stated = bound(graph, "entry_sized", dynamic_bounds={"sized_at_run_time": 400})
    frame = graph.functions[graph.named("sized_at_run_time")[0]].frame
    assert stated.bytes == usage["entry_sized"][0] + frame + 400 + usage["leaf"][0]


@pytest.mark.parametrize("target", ["cortex-m4", "rv32imf"])
def test_static_library_header_states_the_dispatch_stack(artifact_cache, shared_models, target):
    artifact = artifact_cache(shared_models / "kws_int8.tflite", target, "static")
    stack = artifact.manifest["stack"]
    assert stack["reason"] is None and stack["dispatch_stack"] > 0, stack
    assert re.match(r"main_dispatch_\d+", stack["deepest_dispatch"])
    header = artifact.files["model_wrapper_h"].read_text()
    assert f"#define KWS_INT8_DISPATCH_STACK_SIZE {stack['dispatch_stack']}u" in header
    # Every convolution's reduction is recorded, so the kernel's columns are
    # bounded by the model's largest one, not by the kernels' chunk.
    layers = [e for e in artifact.manifest["cpu_kernels"].values() if "operation" in e]
    assert layers and all("k_padded" in e for e in layers)
    assert stack["dispatch_stack"] < 5 * 2048
