"""Compile time and artifact sizes of the MLPerf Tiny models, per target and mode.

    python benchmarks/compile_report.py [--models DIR] [--out benchmarks/reports/compile]

Writes ``compile.md`` and ``compile.json``: for every model, target and output
mode, the wall-clock compile time and the size of each file (for ELF files
also text/rodata/data/bss). A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import npukit

REPO = Path(__file__).resolve().parent.parent
MODELS = ("kws_int8", "resnet8_int8", "kws_f32", "resnet8_f32")
CONFIGS = (
    ("host", "vmfb"),
    ("mynpu", "vmfb"),
    ("cortex-m4", "static"),
    ("cortex-m4", "embedded"),
    ("rv32imf", "static"),
    ("rv32imf", "embedded"),
)


def _executables_bytes(files: dict) -> tuple[int, int]:
    """(text + rodata) and data + bss of the executables (static .o or embedded ELFs)."""
    flash = ram = 0
    for role, f in files.items():
        if role.startswith(("static_library", "embedded_executable")) and "elf" in f:
            s = f["elf"]["sizes"]
            flash += s["text"] + s["rodata"]
            ram += s["data"] + s["bss"]
    return flash, ram


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", type=Path, default=Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models")))
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "compile")
    p.add_argument("--work", type=Path, default=REPO / "build" / "compile_report")
    args = p.parse_args(argv)

    rows = []
    for model in MODELS:
        for target, mode in CONFIGS:
            t0 = time.perf_counter()
            result = npukit.compile(
                args.models / f"{model}.onnx", target=target, output=mode, out_dir=args.work / f"{model}-{target}-{mode}"
            )
            seconds = time.perf_counter() - t0
            files = result.manifest["files"]
            flash, ram = _executables_bytes(files)
            row = {
                "model": model,
                "target": target,
                "mode": mode,
                "compile_seconds": round(seconds, 2),
                "files": {f["path"]: f["bytes"] for f in files.values()},
                "executables_text_rodata": flash,
                "executables_data_bss": ram,
                "dispatches": len(result.dispatches),
            }
            rows.append(row)
            print(f"{model:14} {target:10} {mode:9} {seconds:6.2f} s  {sum(row['files'].values()):>9} bytes", flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"machine": platform.machine(), "cpus": os.cpu_count(), "iree": result.manifest["iree_version"]}
    (args.out / "compile.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "# Compile time and artifact sizes",
        "",
        f"IREE {meta['iree']}, {meta['machine']}, {meta['cpus']} CPUs. Wall-clock time of `npukit.compile` "
        "(import, worker start-up and IREE). Executables: text+rodata / data+bss of the static "
        "library or the embedded ELF (for vmfb: inside the .vmfb).",
        "",
        "| model | target | mode | compile s | files (bytes) | executables text+rodata | data+bss | dispatches |",
        "|---|---|---|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        files = ", ".join(f"{Path(k).name} {v}" for k, v in r["files"].items())
        lines.append(
            f"| {r['model']} | {r['target']} | {r['mode']} | {r['compile_seconds']:.2f} | {files} | "
            f"{r['executables_text_rodata'] or ''} | {r['executables_data_bss'] or ''} | {r['dispatches']} |"
        )
    (args.out / "compile.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'compile.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
