"""``npukit tune``: for every layer the kernels run, measure each kernel
choice the target offers (npukit.cpu.kernel_choice.candidates) and keep the
best in the tuning database.

The search runs in rounds: round r compiles the model with every layer on
its r-th candidate (round 0: every layer on its default) and measures each
dispatch of that build on its own, so a model is built once per round, not
once per layer and candidate. Layers are independent (each dispatch reads
its own parameter block), so a layer's best choice is its best round.

- A board (``--target BOARD``): the firmware counts each dispatch's
  instructions under QEMU ``-icount`` (npukit's runtime dispatch hook).
  Deterministic: the smaller count wins, a tie keeps the default.
- The host: npukit's runtime times each dispatch over repeated runs; the
  median per dispatch over the runs counts, and a candidate must be at least
  ``HOST_MARGIN`` faster than the default to replace it.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


from npukit.cpu.kernel_choice import KernelChoice
from npukit.cpu.tuning_database import TunedLayer, TuningDatabase
from npukit.errors import NpukitError

HOST_MARGIN = 0.03
HOST_RUNS = 200

Progress = Callable[[str], None]


@dataclass
class LayerResult:
    key: str
    dispatches: list[str]
    candidates: list[KernelChoice]
    measured: list[float]  # per candidate
    best: int = 0

    @property
    def choice(self) -> KernelChoice:
        return self.candidates[self.best]


@dataclass
class TuneResult:
    target: str
    unit: str  # "instructions" or "seconds"
    layers: list[LayerResult]
    seconds: float
    database: Path
    # A board: the instructions per inference with the defaults and with the winners (measured).
    default_total: float = 0.0
    tuned_total: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "target": self.target, "unit": self.unit, "seconds": round(self.seconds, 1),
            "database": str(self.database), "default_total": self.default_total, "tuned_total": self.tuned_total,
            "layers": [{"layer": r.key, "dispatches": r.dispatches, "choice": r.choice.to_json(),
                        "measured": {c.describe(): m for c, m in zip(r.candidates, r.measured)}} for r in self.layers],
            "notes": self.notes,
        }


def _layers(manifest: dict) -> dict[str, tuple[list[str], list[KernelChoice]]]:
    """Layer key -> (its dispatches, its candidates) from a tuned compile's manifest."""
    found: dict[str, tuple[list[str], list[KernelChoice]]] = {}
    for export, entry in (manifest.get("cpu_kernels") or {}).items():
        if "layer" not in entry:
            continue
        dispatches, _ = found.setdefault(entry["layer"], ([], [KernelChoice.from_json(c) for c in entry["candidates"]]))
        dispatches.append(export)
    return found


def _round_choices(layers, r: int) -> dict[str, KernelChoice]:
    """Round r's choices: each layer that has an r-th candidate on it."""
    return {key: cands[r] for key, (_, cands) in layers.items() if r < len(cands)}


class _BoardMeasure:
    """Each build is a deploy whose firmware counts every dispatch's
    instructions; ``total`` builds once more without the counting."""

    unit = "instructions"

    def __init__(self, model: Path, board: str, mode: str | None, empty_db: Path):
        self.model, self.board, self.mode, self.empty_db = model, board, mode, empty_db
        self.rounds: list[dict[str, float]] = []

    def _deploy(self, choices: dict[str, KernelChoice] | None, profile: bool):
        from npukit.deploy.deploy_model import deploy

        result = deploy(self.model, self.board, mode=self.mode, cpu_pipeline="tuned", tuning_db=self.empty_db,
                        kernel_choices=choices, profile_dispatches=profile)
        if not result.outputs_match_host:
            raise NpukitError(f"{self.model.name} on {self.board}: the outputs differ from the host's with the "
                              f"choices {choices}; nothing was recorded")
        return result

    def build(self, choices: dict[str, KernelChoice] | None) -> dict:
        result = self._deploy(choices, profile=True)
        self.rounds.append({k: float(v) for k, v in result.dispatch_instructions.items()})
        return result.artifact.manifest

    def per_dispatch(self, _say: Progress) -> list[dict[str, float]]:
        return self.rounds

    def total(self, choices: dict[str, KernelChoice] | None) -> float:
        return float(self._deploy(choices, profile=False).instructions)


class _HostMeasure:
    """Compiles each round for the host; ``per_dispatch`` then runs all
    rounds' builds interleaved (one run of each in turn, so drift in the
    machine's speed falls on every candidate alike) and gives each
    dispatch's median."""

    unit = "seconds"

    def __init__(self, model: Path, runs: int, empty_db: Path, work: Path):
        self.model, self.runs, self.empty_db, self.work = model, runs, empty_db, work
        self.artifacts = []

    def build(self, choices: dict[str, KernelChoice] | None) -> dict:
        import npukit

        artifact = npukit.compile(self.model, target="host", output="embedded",
                                  out_dir=self.work / f"round{len(self.artifacts)}", cpu_pipeline="tuned",
                                  tuning_db=self.empty_db, kernel_choices=choices)
        self.artifacts.append(artifact)
        return artifact.manifest

    def per_dispatch(self, say: Progress) -> list[dict[str, float]]:
        """Each build's median per dispatch; NpukitError when a build's
        outputs differ from round 0's (the defaults') on the timing input or
        on inputs at the ends of int8, so that nothing is recorded."""
        import numpy as np

        from npukit.deploy.model_data import random_inputs
        from npukit.runtime.binding import NpukitRuntimeModel

        say(f"timing the {len(self.artifacts)} builds, {self.runs} runs each, interleaved")
        models = [NpukitRuntimeModel(a, profile_dispatches=True) for a in self.artifacts]
        try:
            inputs = random_inputs(models[0].entry.inputs, 0)
            checks = [inputs] + [[np.full_like(x, np.iinfo(x.dtype).min if end else np.iinfo(x.dtype).max)
                                  if np.issubdtype(x.dtype, np.integer) else x for x in inputs] for end in (0, 1)]
            for check in checks:
                expected = [np.array(y, copy=True) for y in models[0](*check)]
                for r, model in enumerate(models[1:], 1):
                    got = model(*check)
                    if not all(np.array_equal(np.asarray(g), e) for g, e in zip(got, expected)):
                        raise NpukitError(f"{self.model.name} on the host: round {r}'s build computes other outputs "
                                          "than the defaults' build; nothing was recorded")
            samples: list[dict[str, list[float]]] = [{} for _ in models]
            for run in range(self.runs + 5):  # the first five warm the caches
                for model, found in zip(models, samples):
                    model.dispatch_seconds.clear()
                    model(*inputs)
                    for k, v in model.dispatch_seconds.items():
                        if run >= 5:
                            found.setdefault(k, []).append(v)
        finally:
            for model in models:
                model.close()
        return [{k: statistics.median(v) for k, v in found.items()} for found in samples]


def tune(model: "str | Path", target: str, *, database: "str | Path | None" = None, mode: str | None = None,
         runs: int = HOST_RUNS, progress: Progress | None = None,
         step: Callable[[int, int], None] | None = None) -> TuneResult:
    """Tunes ``model``'s layers for ``target`` (a board name, or ``host``)
    and records the winners in ``database`` (default: the tuning database
    compiles read). ``step(done, total)`` is called after each build (for a
    progress bar; the total is an estimate until the first build is done)."""
    from npukit.targets.boards import get_board, list_boards
    from npukit.targets.cpu_presets import HOST

    say = progress or (lambda _m: None)
    builds = {"done": 0, "total": 0}

    def tick() -> None:
        builds["done"] += 1
        if step:
            step(builds["done"], builds["total"])

    model = Path(model)
    if not model.is_file():
        raise NpukitError(f"{model}: no such model file")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="npukit-tune-") as tmp:
        empty_db = Path(tmp) / "no-tuning.json"  # the rounds choose for themselves
        if target == "host":
            preset, measure = HOST, _HostMeasure(model, runs, empty_db, Path(tmp))
        else:
            names = [b.name for b in list_boards()]
            if target not in names:
                raise NpukitError(f"unknown tuning target '{target}': give 'host' or a board ({', '.join(names)})")
            preset, measure = get_board(target).cpu, _BoardMeasure(model, target, mode, empty_db)
        db = TuningDatabase(database)
        builds["total"] = _expected_builds(preset, target)
        say("round 0: every layer on its default choice")
        manifests = [measure.build(None)]
        layers = _layers(manifests[0])
        tick()
        if not layers:
            raise NpukitError(f"{model.name}: no layer runs on npukit's kernels for {target}, so there is nothing to "
                              "tune (see the manifest's cpu_kernels for why)")
        rounds = max(len(c) for _, c in layers.values())
        checks = target != "host" and rounds > 1  # a board builds the winners and the defaults once more
        builds["total"] = rounds + (2 if checks else 0)
        for r in range(1, rounds):
            choices = _round_choices(layers, r)
            say(f"round {r} of {rounds - 1}: {len(choices)} layers on their candidate {r}")
            manifests.append(measure.build(choices))
            tick()
        per_round = measure.per_dispatch(say)
        results, unmeasured = [], []
        for key, (ds, cands) in layers.items():
            m = [_measured(per_round[r], manifests[r], ds, cands[r]) for r in range(len(cands))]
            if m[0] == float("inf"):  # its dispatches do not all run the same default: nothing to compare with
                unmeasured.append(key)
                continue
            best = min(range(len(cands)), key=lambda i: (m[i], i))
            if target == "host" and m[best] > (1 - HOST_MARGIN) * m[0]:
                best = 0  # within the timing noise of the default
            results.append(LayerResult(key, ds, cands, m, best))
        result = TuneResult(target, measure.unit, results, 0.0, db.path)
        if unmeasured:
            result.notes.append(f"{len(unmeasured)} layers not recorded: their dispatches did not all run and get "
                                f"measured on the default in the defaults' build ({'; '.join(unmeasured)})")
        if rounds == 1:
            result.notes.append(f"every layer has one choice on {target}: the defaults are recorded")
        if checks:
            say("checking the tuned choices on the board")
            result.tuned_total = measure.total({r.key: r.choice for r in results})
            tick()
            result.default_total = measure.total(None)
            tick()
        for r in results:
            db.record(preset, r.key, TunedLayer(r.choice, {c.describe(): v for c, v in zip(r.candidates, r.measured)},
                                                measure.unit, f"{model.name}: {', '.join(r.dispatches)}"))
        db.save()
    result.seconds = time.monotonic() - started
    return result


def _measured(timings: dict[str, float], manifest: dict, dispatches: list[str], choice: KernelChoice) -> float:
    """A layer's measure in one round: the sum over its dispatches, or
    infinity (never the best) unless every dispatch of the layer ran on
    ``choice`` in that round's build and was measured. A round's build may
    name its dispatches otherwise (another compile path) or run a layer on
    its default (a choice refused for one of the layers of that key)."""
    kernels = manifest.get("cpu_kernels") or {}
    total = 0.0
    for d in dispatches:
        entry = kernels.get(d, {})
        if d not in timings or "choice" not in entry or KernelChoice.from_json(entry["choice"]) != choice:
            return float("inf")
        total += timings[d]
    return total


def _expected_builds(preset, target: str) -> int:
    """Builds a tune makes, before the model's layers are known: one per
    round, plus two checking builds on a board."""
    from npukit.cpu.kernel_choice import CONV_FORMS, WEIGHT_FORMS, has_dsp

    if target == "host":
        return len(CONV_FORMS)
    return (len(WEIGHT_FORMS) if has_dsp(preset) else 1) + 2
