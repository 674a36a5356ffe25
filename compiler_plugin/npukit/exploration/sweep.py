"""Evaluating every configuration of a sweep on all cores: worker processes
forked after the recognised layers and the simulator library are loaded,
so each configuration costs only its scheduling, tiling, streams and cycle
model."""

from __future__ import annotations

import multiprocessing
import os
from typing import Callable

from npukit.exploration.configuration import Configuration
from npukit.exploration.cpu_cost import CpuCostModel
from npukit.exploration.evaluation import evaluate
from npukit.mynpu.recognised_model import RecognisedModel

#: Called with (configurations done, configurations in all).
Step = Callable[[int, int], None]

_shared: tuple[RecognisedModel, CpuCostModel] | None = None


def _initialise(model: RecognisedModel | None = None, cpu: CpuCostModel | None = None) -> None:
    global _shared
    if model is not None and cpu is not None:
        _shared = (model, cpu)


def _evaluate(job: tuple[int, Configuration]) -> tuple[int, dict]:
    index, configuration = job
    assert _shared is not None
    model, cpu = _shared
    return index, evaluate(model, configuration, cpu)


def run_sweep(model: RecognisedModel, grid: list[Configuration], cpu: CpuCostModel, jobs: int | None = None,
              step: Step | None = None) -> list[dict]:
    """``explore.json``'s configurations, in ``grid``'s order. ``jobs``: worker
    processes (default: every core; 1 evaluates in this process)."""
    from npukit.mynpu.simulator import _library

    _library()  # loaded once, before the workers fork
    tick = step or (lambda _done, _total: None)
    workers = min(jobs or os.cpu_count() or 1, len(grid))
    results: list[dict | None] = [None] * len(grid)
    tick(0, len(grid))
    if workers <= 1:
        _initialise(model, cpu)
        for done, job in enumerate(enumerate(grid), 1):
            index, result = _evaluate(job)
            results[index] = result
            tick(done, len(grid))
        return [r for r in results if r is not None]
    if "fork" in multiprocessing.get_all_start_methods():
        _initialise(model, cpu)  # the forked workers inherit it
        context, arguments = multiprocessing.get_context("fork"), ()
    else:
        context, arguments = multiprocessing.get_context("spawn"), (model, cpu)
    with context.Pool(workers, initializer=_initialise, initargs=arguments) as pool:
        for done, (index, result) in enumerate(pool.imap_unordered(_evaluate, enumerate(grid)), 1):
            results[index] = result
            tick(done, len(grid))
    return [r for r in results if r is not None]
