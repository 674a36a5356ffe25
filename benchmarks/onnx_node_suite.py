"""The ONNX backend node tests on IREE's runtime and on npukit's runtime.

    python benchmarks/onnx_node_suite.py [--count 150] [--jobs 2] [--sample]
                                         [--out benchmarks/reports/runtime]

Walks a seeded shuffle of every node test the installed ``onnx`` generates
(tests/support/onnx_node_suite.py) and compiles each for the host as a
static artifact until ``--count`` compile; those are also compiled as a
``.vmfb`` and run on both runtimes, and both runtimes' outputs are compared
with the reference outputs. Writes ``onnx_node_suite.md`` and ``.json``:
how many tests were sampled, compiled, passed on IREE's runtime and on
npukit's, npukit's outputs against IREE's bit for bit, and every refusal and
failure with its reason. With ``--sample`` it also writes the sample the
test tests/runtime/test_onnx_node_suite.py runs (tests/runtime/onnx_node_sample.json).
A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.onnx_node_suite import PASS, SEED, Outcome, Sample, node_cases, run_case, seeded_order  # noqa: E402

_CASES: dict = {}


def _measure(name: str, work: str) -> Outcome:
    """One node test (in a worker process, which generates the cases once)."""
    if not _CASES:
        _CASES.update(node_cases())
    return run_case(_CASES[name], Path(work) / name)


def _reason(text: str) -> str:
    """A failure's kind, for counting: its text without the model's file,
    numbers and names."""
    import re

    text = re.sub(r"^(\w+: )test_\w+\.onnx: ", r"\1", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", text)
    return re.sub(r"\d+", "N", text)[:160]


def _table(counter: Counter, header: str) -> list[str]:
    lines = [f"| {header} | tests |", "|---|---|"]
    lines += [f"| {k.replace('|', '/')} | {n} |" for k, n in counter.most_common()]
    return lines


def _report(outcomes: list[Outcome], count: int, onnx_version: str, total: int, seconds: float) -> str:
    compiled = [o for o in outcomes if o.compiled]
    iree = [o for o in compiled if o.iree == PASS]
    ours = [o for o in compiled if o.npukit == PASS]
    lost = [o for o in iree if o.npukit != PASS]
    gained = [o for o in ours if o.iree != PASS]
    identical = [o for o in compiled if o.identical]
    lines = [
        "# ONNX node tests on IREE's runtime and npukit's runtime",
        "",
        f"`python benchmarks/onnx_node_suite.py --count {count}`: onnx {onnx_version} ({total} node tests), "
        f"seed {SEED}, host, npukit's default (tuned) pipeline; {seconds / 60:.1f} min. Each test is compiled "
        "as a `.vmfb` for IREE's runtime and as a static artifact (`-m static`, async execution model) for "
        "npukit's runtime; a runtime passes a test when its outputs match the reference outputs in dtype, "
        "shape and value (rtol 1e-3, atol 1e-7, the ONNX backend runner's defaults; integers exactly).",
        "",
        "| | tests |",
        "|---|---|",
        f"| sampled (a prefix of the seeded order) | {len(outcomes)} |",
        f"| compiled by `npukit compile` for the host | {len(compiled)} |",
        f"| pass on IREE's runtime | {len(iree)} |",
        f"| pass on npukit's runtime | {len(ours)} |",
        f"| pass on IREE's runtime, fail on npukit's | {len(lost)} |",
        f"| pass on npukit's runtime, fail on IREE's | {len(gained)} |",
        f"| npukit's outputs bit-identical to IREE's | {len(identical)} |",
        "",
        f"A compiled test took {sorted(o.seconds for o in compiled)[len(compiled) // 2]:.1f} s (median; both "
        f"compiles and both runs) and {sum(o.seconds for o in compiled) / 60:.1f} min in all, on a machine shared "
        "with other work during this run.",
        "",
    ]
    if lost:
        lines += ["## Passing on IREE's runtime, failing on npukit's", ""]
        lines += [f"- `{o.name}`: {o.npukit}" for o in lost] + [""]
    failing = [o for o in compiled if o.iree != PASS]
    if failing:
        lines += ["## Failing on IREE's runtime", "", "| test | IREE's runtime | npukit's runtime |", "|---|---|---|"]
        lines += [f"| `{o.name}` | {o.iree.replace('|', '/')} | {o.npukit.replace('|', '/')} |" for o in failing]
        lines += [""]
    different = [o for o in compiled if o.identical is False]
    if different:
        lines += ["## Outputs not bit-identical to IREE's (both runtimes ran)", ""]
        lines += [f"- `{o.name}`: IREE {o.iree}; npukit {o.npukit}" for o in different] + [""]
    refused = [o for o in outcomes if not o.compiled]
    lines += ["## Not compiled, by reason", ""]
    lines += _table(Counter(_reason(o.compile_error) for o in refused), "`npukit compile`'s error") + [""]
    lines += ["## Not compiled, by test", ""]
    lines += [f"- `{o.name}`: {o.compile_error}" for o in refused] + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import onnx

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=150, help="compiled tests to reach (default 150)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--sample", action="store_true", help="also write tests/runtime/onnx_node_sample.json")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "runtime")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite onnx_node_suite.md from the run in onnx_node_suite.json")
    args = parser.parse_args(argv)
    if args.report_only:
        run = json.loads((args.out / "onnx_node_suite.json").read_text())
        outcomes = [Outcome(**o) for o in run["outcomes"]]
        (args.out / "onnx_node_suite.md").write_text(
            _report(outcomes, run.get("count", args.count), run["onnx_version"], run["node_tests"], run["seconds"]))
        return 0
    names = list(node_cases())
    order = seeded_order(names)
    started = time.perf_counter()
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="npukit-onnx-nodes-") as work, \
            ProcessPoolExecutor(max_workers=args.jobs) as pool:
        # In order, a few ahead: the sample is the shortest prefix with --count compiled tests.
        pending = [pool.submit(_measure, n, work) for n in order[:args.jobs * 2]]
        position = len(pending)
        while pending and sum(o.compiled for o in outcomes) < args.count:
            outcome = pending.pop(0).result()
            outcomes.append(outcome)
            said = f"iree {outcome.iree[:40]}, npukit {outcome.npukit[:40]}" if outcome.compiled else "refused"
            print(f"{len(outcomes):4d} {outcome.name}: {said}", file=sys.stderr)
            if position < len(order):
                pending.append(pool.submit(_measure, order[position], work))
                position += 1
        for future in pending:
            future.cancel()
    seconds = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "onnx_node_suite.json").write_text(json.dumps(
        {"seed": SEED, "count": args.count, "onnx_version": onnx.__version__, "node_tests": len(names),
         "seconds": round(seconds, 1),
         "outcomes": [asdict(o) for o in outcomes]}, indent=1) + "\n")
    (args.out / "onnx_node_suite.md").write_text(
        _report(outcomes, args.count, onnx.__version__, len(names), seconds))
    if args.sample:
        Sample(SEED, onnx.__version__, len(outcomes), [o.name for o in outcomes if o.compiled],
               {o.name: o.compile_error for o in outcomes if not o.compiled}).save()
    print(args.out / "onnx_node_suite.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
