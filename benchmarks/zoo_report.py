"""The model zoo: how long generating it takes, and its catalogue.

    python benchmarks/zoo_report.py [--out benchmarks/reports/zoo]

Generates every zoo model into a fresh temporary cache (one process, as a
test session's first worker does), measuring wall time and the CPU time of
the generating process, then writes ``zoo.md`` (the times, the machine's
load, the catalogue table) and ``zoo.json``. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "zoo")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="npukit-zoo-report-") as scratch:
        env = dict(os.environ, NPUKIT_ZOO_DIR=scratch)
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "tests.zoo.generator"], cwd=REPO, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        load_after = os.getloadavg()[0]

        os.environ["NPUKIT_ZOO_DIR"] = scratch
        from tests.zoo.catalogue import catalogue, format_table

        records = catalogue()
        table = format_table(records)

    generated = [r for r in records if r.source == "generated"]
    figures = {
        "generated_models": len(generated),
        "catalogued_models": len(records),
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(load_after, 2),
        "cores": os.cpu_count(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "zoo.json").write_text(json.dumps(figures, indent=2) + "\n")
    (args.out / "zoo.md").write_text(
        "# The model zoo\n\n"
        f"Generating the {len(generated)} generated models from an empty cache, in one process: "
        f"{wall:.0f} s of wall time, {cpu:.0f} s of CPU time on a {os.cpu_count()}-core machine "
        f"(1-minute load average {load_before:.1f} before, {load_after:.1f} after; other jobs share "
        "the machine, so the CPU time is the steadier figure).\n\n"
        f"## Catalogue ({len(records)} models)\n\n{table}\n"
    )
    print(f"wrote {args.out / 'zoo.md'}: {wall:.0f} s wall, {cpu:.0f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
