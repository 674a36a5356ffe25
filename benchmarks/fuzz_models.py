"""Fuzzing npukit with mutated .tflite and .onnx models: what becomes of them.

Mutated copies of the shared models (tests/support/model_mutations.py: bit
flips, byte runs, truncations, splices, and mutations of shapes, offsets,
indices, types, graph references, external data and field sizes through the
formats' own object models) go

1. through import and validation (npukit.frontends.import_model, what
   `npukit compile` runs first), ``--import-count`` files per format, in
   long-lived child processes on every core, a timeout per file;
2. through the whole `npukit compile` command, ``--compile-count`` files per
   format (another sample), each command with a timeout.

Each file ends accepted, refused with one line naming the file, stopped by
npukit's time limit (one line), or as a failure: an internal error, a
traceback, a crash, a hang, or bad output (several stderr lines, no file
name, files left behind). The counts, the failures and the most common
refusals go to reports/fuzz/fuzz.md and fuzz.json; every sample can be made
again from its format, seed and index (``--reproduce tflite 123 DIR``).

    .venv/bin/python benchmarks/fuzz_models.py                 # 10,000 + 200 per format
    .venv/bin/python benchmarks/fuzz_models.py --import-count 500 --compile-count 20
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support.fuzzing import BAD, ImportFuzzer, Outcome, compile_outcome  # noqa: E402
from support.model_mutations import Mutant, mutant, seed_models as find_seeds  # noqa: E402

REPORT_DIR = REPO / "benchmarks" / "reports" / "fuzz"
RESULTS = ("accepted", "refused", "time limit", *BAD)
# The second stage's samples are numbered from here (independent of the first's).
COMPILE_START = 1_000_000
BATCH = 400


def seed_models(fmt: str) -> list[Path]:
    models = Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models"))
    seeds = find_seeds(models, fmt)
    if not seeds:
        sys.exit(f"no .{fmt} seed models in {models}; set NPUKIT_MODELS_DIR")
    return seeds


def _make(args: tuple[list[Path], int, int, Path]) -> tuple[str, str, str]:
    seeds, seed, index, directory = args
    m: Mutant = mutant(seeds, seed, index)
    # External data files may sit beside the model or one level above it: one directory per such sample.
    where = directory / f"s{index}" / "model" if m.extra_files else directory
    path = m.write(where)
    return str(path), m.kind, m.seed_model


def make_mutants(pool: ProcessPoolExecutor, seeds: list[Path], seed: int, indices: range,
                 directory: Path) -> list[tuple[Path, str, str]]:
    jobs = [(seeds, seed, i, directory) for i in indices]
    return [(Path(p), k, s) for p, k, s in pool.map(_make, jobs, chunksize=8)]


def run_imports(fmt: str, count: int, seed: int, jobs: int, timeout: float, work: Path,
                pool: ProcessPoolExecutor) -> list[Outcome]:
    seeds = seed_models(fmt)
    fuzzer = ImportFuzzer(jobs, timeout, log=work / f"import-{fmt}.stderr")
    outcomes: list[Outcome] = []
    for start in range(0, count, BATCH):
        batch_dir = work / f"{fmt}-import-{start}"
        items = make_mutants(pool, seeds, seed, range(start, min(start + BATCH, count)), batch_dir)
        outcomes += fuzzer.run(items)
        shutil.rmtree(batch_dir, ignore_errors=True)
        bad = sum(o.result in BAD for o in outcomes)
        print(f"  {fmt} import: {len(outcomes)}/{count} done, {bad} failures", flush=True)
    return outcomes


def run_compiles(fmt: str, count: int, seed: int, jobs: int, timeout: float, time_limit: float, work: Path,
                 pool: ProcessPoolExecutor) -> list[Outcome]:
    seeds = seed_models(fmt)
    directory = work / f"{fmt}-compile"
    items = make_mutants(pool, seeds, seed, range(COMPILE_START, COMPILE_START + count), directory)
    env = {"NPUKIT_LIMIT_TIME": str(time_limit)}
    outcomes: list[Outcome] = []

    def one(item: tuple[Path, str, str]) -> Outcome:
        path, kind, seed_model = item
        out = path.parent / f"{path.stem}-out"
        outcome = compile_outcome(path, kind, seed_model, out, timeout, env)
        shutil.rmtree(out, ignore_errors=True)
        return outcome

    with ThreadPoolExecutor(jobs) as threads:
        for outcome in threads.map(one, items):
            outcomes.append(outcome)
            if len(outcomes) % 25 == 0 or len(outcomes) == count:
                bad = sum(o.result in BAD for o in outcomes)
                print(f"  {fmt} compile: {len(outcomes)}/{count} done, {bad} failures", flush=True)
    shutil.rmtree(directory, ignore_errors=True)
    return outcomes


def pathological(work: Path, timeout: float) -> list[dict]:
    """Well-formed models that push IREE: `npukit compile` on each, its time and first stderr line."""
    import onnx
    from onnx import TensorProto, helper

    from support.fuzzing import child_environment, npukit_command
    from support.tflite_models import int8_add_model

    directory = work / "pathological"
    directory.mkdir()

    def chain(path: Path, count: int) -> Path:
        nodes = [helper.make_node("Neg" if i % 2 else "Relu", [f"t{i}"], [f"t{i + 1}"], name=f"n{i}")
                 for i in range(count)]
        graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [64])],
                                  [helper.make_tensor_value_info(f"t{count}", TensorProto.FLOAT, [64])])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
        return path

    def add(path: Path, n: int) -> Path:
        v = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [n]) for x in "abc"]
        graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "add", v[:2], v[2:])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
        return path

    cases = [
        ("ONNX Add of two 2^28-element float tensors (1 GiB each)", add(directory / "add28.onnx", 1 << 28), []),
        ("TFLite int8 ADD of two [1, 2^28] tensors", int8_add_model(directory / "add28.tflite", (1, 1 << 28)), []),
        ("ONNX Add of two (2^31 + 1)-element tensors", add(directory / "add31.onnx", (1 << 31) + 1), []),
        ("ONNX chain of 1,000 Relu/Neg operators", chain(directory / "chain1k.onnx", 1000), []),
        ("ONNX chain of 10,000 Relu/Neg operators (the operator limit)", chain(directory / "chain10k.onnx", 10_000),
         []),
        ("the same with --time-limit 20", directory / "chain10k.onnx", ["--time-limit", "20"]),
        ("ONNX chain of 10,001 Relu/Neg operators", chain(directory / "chain10k1.onnx", 10_001), []),
    ]
    rows = []
    for what, path, flags in cases:
        started = time.monotonic()
        try:
            proc = subprocess.run([*npukit_command(), "compile", str(path), "-o", str(directory / "out"), "-q",
                                   *flags], capture_output=True, text=True, timeout=timeout,
                                  env=child_environment())
            status, line = proc.returncode, (proc.stderr.splitlines() or [""])[0]
        except subprocess.TimeoutExpired:
            status, line = None, f"no exit within {timeout:g} s"
        seconds = time.monotonic() - started
        shutil.rmtree(directory / "out", ignore_errors=True)
        line = line.replace(str(directory) + "/", "")
        rows.append({"model": what, "exit": status, "seconds": round(seconds, 1), "stderr": line})
        print(f"  {what}: exit {status} in {seconds:.1f} s {line[:100]}", flush=True)
    return rows


def _index(path: str) -> int:
    m = re.search(r"m(\d+)\.", Path(path).name)
    return int(m.group(1)) if m else -1


def _generic(message: str) -> str:
    """A refusal with the file, numbers and names taken out, to count kinds of refusal."""
    text = re.sub(r"^(npukit: error: )?\S+?\.(tflite|onnx): ", "", message)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\([^()]*\)", "(…)", text)
    return re.sub(r"-?\d+(\.\d+)?", "N", text)[:110]


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    c = Counter(o.result for o in outcomes)
    return {r: c.get(r, 0) for r in RESULTS}


def write_report(results: dict, args: argparse.Namespace, seconds: float, extremes: list[dict]) -> Path:
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Fuzzing: mutated models through import and `npukit compile`",
        "",
        f"`benchmarks/fuzz_models.py --import-count {args.import_count} --compile-count {args.compile_count} "
        f"--seed {args.seed}`: {platform.machine()}, {os.cpu_count()} CPUs, {args.jobs} processes, "
        f"{seconds / 60:.1f} minutes in all. Seed models: the shared MLPerf Tiny models, the zoo's models up "
        f"to 1 MiB and the bundled digits model. Mutations: tests/support/model_mutations.py. Timeouts: "
        f"{args.import_timeout:g} s per import, {args.compile_timeout:g} s per compile command "
        f"(npukit's own time limit set to {args.time_limit:g} s).",
        "",
        "A file is *refused* when `npukit` exits with status 1 and exactly one stderr line that names the "
        "file (stage 1: an NpukitError whose message is one line naming the file). *time limit*: refused by "
        "npukit's time limit, also one line. The failures: *internal error* (npukit's one-line report of a "
        "fault in its own code), *traceback*, *crash* (a signal), *hang* (past the harness's timeout), "
        "*bad output* (more than one stderr line, no file name, another exit status or files left behind).",
        "",
        "| format | stage | files | " + " | ".join(RESULTS) + " |",
        "|---|---|---:|" + "---:|" * len(RESULTS),
    ]
    for fmt, stages in results.items():
        for stage, outcomes in stages.items():
            c = counts(outcomes)
            lines.append(f"| {fmt} | {stage} | {len(outcomes)} | " + " | ".join(str(c[r]) for r in RESULTS) + " |")
    if extremes:
        lines += ["", "## Pathological but well-formed models", "",
                  "`npukit compile -q` on the host target. Tensor sizes do not slow IREE down (shapes are static and "
                  "nothing is allocated at compile time); compile time grows with the operator count, so npukit "
                  "refuses more than 10,000 operators (NPUKIT_LIMIT_OPERATORS) and stops any import or compile at "
                  "its time limit (30 minutes; --time-limit, NPUKIT_LIMIT_TIME).", "",
                  "| model | exit status | seconds | stderr |", "|---|---:|---:|---|"]
        for row in extremes:
            lines.append(f"| {row['model']} | {row['exit']} | {row['seconds']} | {row['stderr'][:160]} |")
    for fmt, stages in results.items():
        for stage, outcomes in stages.items():
            failures = [o for o in outcomes if o.result in BAD]
            lines += ["", f"## {fmt}, {stage}", ""]
            seconds_each = sorted(o.seconds for o in outcomes)
            if seconds_each:
                lines.append(f"Seconds per file: median {seconds_each[len(seconds_each) // 2]:.2f}, "
                             f"longest {seconds_each[-1]:.1f}.")
                lines.append("")
            by_kind: dict[str, Counter] = {}
            for o in outcomes:
                by_kind.setdefault(o.kind.split(" (")[0].split(" + ")[0], Counter())[o.result] += 1
            lines += ["Structure mutations are followed by bit flips in a fifth of the files.", "",
                      "| mutation | files | accepted | refused | time limit | failures |", "|---|---:|---:|---:|---:|---:|"]
            for kind in sorted(by_kind):
                c = by_kind[kind]
                lines.append(f"| {kind} | {sum(c.values())} | {c['accepted']} | {c['refused']} | {c['time limit']} | "
                             f"{sum(c[r] for r in BAD)} |")
            common = Counter(_generic(o.message) for o in outcomes if o.result in ("refused", "time limit"))
            lines += ["", "The most common refusals (numbers, names and parentheses replaced):", ""]
            lines += [f"- {n} × `{text}`" for text, n in common.most_common(12)]
            if failures:
                lines += ["", "Failures (reproduce with `--reproduce FORMAT INDEX DIR`):", ""]
                for o in failures[:40]:
                    lines.append(f"- index {_index(o.path)} ({o.kind}, from {o.seed_model}): {o.result}: "
                                 f"`{o.message[:200]}`")
    path = REPORT_DIR / "fuzz.md"
    path.write_text("\n".join(lines) + "\n")
    (REPORT_DIR / "fuzz.json").write_text(json.dumps({
        "arguments": vars(args), "seconds": round(seconds, 1), "pathological": extremes,
        "counts": {fmt: {stage: counts(o) for stage, o in stages.items()} for fmt, stages in results.items()},
        "failures": {fmt: {stage: [o.to_json() for o in outs if o.result in BAD] for stage, outs in stages.items()}
                     for fmt, stages in results.items()},
    }, indent=1) + "\n")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--import-count", type=int, default=10_000, help="files per format through import")
    parser.add_argument("--compile-count", type=int, default=200, help="files per format through `npukit compile`")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--import-timeout", type=float, default=60.0)
    parser.add_argument("--compile-timeout", type=float, default=900.0)
    parser.add_argument("--time-limit", type=float, default=600.0, help="npukit's own time limit per compile")
    parser.add_argument("--formats", default="tflite,onnx")
    parser.add_argument("--no-pathological", action="store_true", help="leave out the well-formed extremes")
    parser.add_argument("--reproduce", nargs=3, metavar=("FORMAT", "INDEX", "DIR"),
                        help="write one sample (and its external files) to DIR and stop")
    args = parser.parse_args()
    if args.reproduce:
        fmt, index, directory = args.reproduce
        m = mutant(seed_models(fmt), args.seed, int(index))
        print(m.write(Path(directory)), m.kind, m.seed_model)
        return 0
    started = time.monotonic()
    results: dict[str, dict[str, list[Outcome]]] = {}
    with tempfile.TemporaryDirectory(prefix="npukit-fuzz-") as tmp, ProcessPoolExecutor(args.jobs) as pool:
        work = Path(tmp)
        for fmt in args.formats.split(","):
            print(f"{fmt}: {args.import_count} files through import and validation", flush=True)
            results.setdefault(fmt, {})["import and validation"] = run_imports(
                fmt, args.import_count, args.seed, args.jobs, args.import_timeout, work, pool)
            print(f"{fmt}: {args.compile_count} files through `npukit compile`", flush=True)
            results[fmt]["npukit compile"] = run_compiles(
                fmt, args.compile_count, args.seed, args.jobs, args.compile_timeout, args.time_limit, work, pool)
        extremes = [] if args.no_pathological else pathological(work, args.compile_timeout)
    path = write_report(results, args, time.monotonic() - started, extremes)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
