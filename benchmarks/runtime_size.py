"""Code size of npukit's runtime on Cortex-M4, and the arena each model needs.

    python benchmarks/runtime_size.py [--models DIR] [--out benchmarks/reports/runtime]

Code size: the kws_int8 model, compiled for cortex-m4 in static mode with
each execution model, is linked with the runtime and a minimal main() by
arm-none-eabi-gcc at -Os with section garbage collection; the linker map
attributes every byte of text and rodata that ends up in the firmware to the
runtime, the model's vm-c module, its executables or the C library. The
inline-dynamic firmware shows the inline path (hal_inline + hal_loader); the
async firmware adds the full HAL.

Arena: every shared model, compiled for the host in static mode with each
execution model, runs once on npukit's runtime; the arena high-water mark is
reported (the memory a board must give the runtime, headers included).

Writes ``runtime.md`` and ``runtime.json``. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import npukit
from npukit.deploy.firmware_size import map_sections
from npukit.runtime.sources import include_dirs, runtime_source_root, source_files

REPO = Path(__file__).resolve().parent.parent
MODELS = ("kws_int8", "resnet8_int8", "kws_f32", "resnet8_f32")
EXECUTION_MODELS = ("inline-dynamic", "async")
CORTEX_M4_FLAGS = [
    "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-Os",
    "-ffunction-sections", "-fdata-sections", "-DNPUKIT_BARE_METAL=1", "-DNPUKIT_NO_SYSTEM_ALLOCATOR=1",
]
# The default board build (errors carry only their codes), and the one with
# error messages (CMake NPUKIT_STATUS_MESSAGES=ON, `npukit deploy --status-messages`).
VARIANTS = (("", ()), (" with messages", ("-DNPUKIT_STATUS_MESSAGES=1",)))
LINK_FLAGS = ["--specs=nano.specs", "--specs=nosys.specs", "-Wl,--gc-sections"]

MAIN_C = """\
#include "{name}_model.h"
#include "npukit/hal/modules.h"

static uint8_t arena[{arena}] __attribute__((aligned(16)));
static uint8_t input[{NAME}_INPUT0_BYTES];
static uint8_t output[{NAME}_OUTPUT0_BYTES];

int main(void) {{
  npukit_runtime_options_t options = npukit_runtime_default_options(arena, sizeof(arena));
  {full_hal}
  npukit_runtime_t* runtime = NULL;
  const void* inputs[1] = {{input}};
  void* outputs[1] = {{output}};
  iree_status_t status = npukit_runtime_create(&options, &runtime);
  if (iree_status_is_ok(status)) status = {name}_load(runtime);
  if (iree_status_is_ok(status)) status = {name}_run(runtime, inputs, outputs);
  npukit_runtime_destroy(runtime);
  return (int)iree_status_consume_code(status);
}}
"""


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd[:4])} ...\n{proc.stderr[-3000:]}")


def _category(path: str, objects: dict[str, str]) -> str:
    name = Path(path.split("(")[0]).name
    if path in objects:
        return objects[path]
    if name.startswith("lib"):
        return "C library"
    return "startup"


def firmware_size(result, runtime_dir: Path, work: Path, arena_bytes: int, full_hal: bool,
                  defines: tuple[str, ...] = ()) -> dict:
    """Links |result| (a cortex-m4 static artifact) into a firmware; sizes by origin."""
    root = runtime_source_root()
    work.mkdir(parents=True, exist_ok=True)
    runtime_dir.mkdir(parents=True, exist_ok=True)
    flags = [*CORTEX_M4_FLAGS, *defines]
    includes = [f"-I{d}" for d in include_dirs(root)] + [f"-I{result.directory}"]
    objects: dict[str, str] = {}
    for src in sorted(p for p in source_files(root) if p.suffix == ".c"):
        obj = runtime_dir / (str(src.relative_to(root).with_suffix(".o")).replace("/", "_"))
        if not obj.exists():
            _run(["arm-none-eabi-gcc", *flags, *includes, "-c", str(src), "-o", str(obj)])
        objects[str(obj)] = "runtime"
    main_c = work / "main.c"
    main_c.write_text(MAIN_C.format(
        name=result.name, NAME=result.name.upper(), arena=arena_bytes,
        full_hal="options.full_hal = &npukit_full_hal;" if full_hal else "",
    ))
    for src, role in ((main_c, "application"), (result.files["vm_module_c"], "model module"),
                      (result.files["model_wrapper_c"], "model module")):
        obj = work / f"{Path(src).stem}.o"
        _run(["arm-none-eabi-gcc", *flags, *includes, "-w", "-c", str(src), "-o", str(obj)])
        objects[str(obj)] = role
    objects[str(result.files["static_library"])] = "model executables"
    firmware = work / "firmware.elf"
    _run(["arm-none-eabi-gcc", *flags, *LINK_FLAGS, f"-Wl,-Map={work / 'firmware.map'}",
          *objects, "-lm", "-o", str(firmware)])
    sizes: dict[str, dict[str, int]] = {}
    for kind, path, size in map_sections((work / "firmware.map").read_text()):
        cat = _category(path, objects)
        sizes.setdefault(cat, {"text": 0, "rodata": 0, "data": 0, "bss": 0})[kind] += size
    return sizes


def arena_high_water(result, x: np.ndarray) -> int:
    model = npukit.load(result, runtime="npukit")
    model(x)
    return model.native.stats()["arena_high_water_mark"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", type=Path,
                   default=Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models")))
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "runtime")
    p.add_argument("--work", type=Path, default=REPO / "build" / "runtime_size")
    args = p.parse_args(argv)
    code = {}
    for em in EXECUTION_MODELS:
        result = npukit.compile(args.models / "kws_int8.onnx", target="cortex-m4", output="static",
                                execution_model=em, out_dir=args.work / f"kws_int8-m4-{em}")
        for label, defines in VARIANTS:
            key = em + label
            code[key] = firmware_size(result, args.work / f"runtime-objects{label.replace(' ', '-')}",
                                      args.work / f"firmware-{key.replace(' ', '-')}", 128 * 1024,
                                      em == "async", defines)
            rt = code[key]["runtime"]
            print(f"cortex-m4 -Os, {key}: runtime text+rodata {rt['text'] + rt['rodata']} B", flush=True)

    rng = np.random.default_rng(0)
    arenas = []
    for model in MODELS:
        for em in EXECUTION_MODELS:
            result = npukit.compile(args.models / f"{model}.onnx", output="static", execution_model=em,
                                    out_dir=args.work / f"{model}-host-{em}")
            spec = result.entry_points[0].inputs[0]
            shape = [int(d) for d in spec.shape]
            if np.dtype(spec.dtype) == np.int8:
                x = rng.integers(-128, 128, size=shape, dtype=np.int8)
            else:
                x = rng.standard_normal(shape).astype(spec.dtype)
            hw = arena_high_water(result, x)
            arenas.append({"model": model, "execution_model": em, "arena_high_water_bytes": hw})
            print(f"{model} {em}: arena high-water {hw} B", flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    report = {"cortex_m4_Os_code_bytes": code, "arena_high_water": arenas,
              "flags": CORTEX_M4_FLAGS, "link_flags": LINK_FLAGS}
    (args.out / "runtime.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = ["# npukit runtime: code size and arena", "",
             "Code on Cortex-M4 (`arm-none-eabi-gcc -Os`, `--gc-sections`), kws_int8 static firmware, bytes:", "",
             "| execution model | part | text | rodata | text + rodata | data | bss |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for em, parts in code.items():
        for part in ("runtime", "model module", "model executables", "application", "C library", "startup"):
            if part in parts:
                s = parts[part]
                lines.append(f"| {em} | {part} | {s['text']} | {s['rodata']} | {s['text'] + s['rodata']} | "
                             f"{s['data']} | {s['bss']} |")
    lines += ["", "The inline-dynamic firmware carries the inline path (hal_inline + hal_loader); the async one "
              "adds the full HAL. The default board build has no error messages (errors keep their codes); "
              "\"with messages\" is built with `NPUKIT_STATUS_MESSAGES=1` (CMake option "
              "`NPUKIT_STATUS_MESSAGES`, `npukit deploy --status-messages`). The bss of the application is the "
              "128 KiB arena.", "",
              "Arena high-water mark on the host (64-bit; block headers included), bytes:", "",
              "| model | execution model | arena high-water |", "|---|---|---:|"]
    lines += [f"| {a['model']} | {a['execution_model']} | {a['arena_high_water_bytes']} |" for a in arenas]
    (args.out / "runtime.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'runtime.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
