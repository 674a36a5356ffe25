"""A model's dispatches as the mynpu target's partitioning found them, before
any hardware configuration decides where they run: each dispatch's name,
operation, MACs and calls per inference, and its recognised layer (a
``LayerSpec``) or the reason it is not one. Everything after this point
(the NPU's predicates, scheduling, tiling, streams, the cycle model) depends
on the configuration; ``npukit explore`` reruns only that part."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path

from npukit.layer_recognition.layer_spec import LayerSpec

#: Written with the record, checked when it is read back.
FORMAT_VERSION = 1


@dataclass
class RecognisedDispatch:
    name: str
    operation: str  # the dispatch's linalg operation kinds
    kind: str  # npukit.mynpu.operation_kind.KINDS
    macs: int  # of one call
    calls: int  # per inference
    spec: LayerSpec | None  # None: not a layer the NPU could run, for ``reason``
    reason: str
    binding_count: int


@dataclass
class RecognisedModel:
    model: str
    dispatches: list[RecognisedDispatch] = field(default_factory=list)
    compile_seconds: float = 0.0

    @property
    def macs(self) -> int:
        return sum(d.macs * d.calls for d in self.dispatches)

    def save(self, path: Path) -> None:
        path.write_bytes(pickle.dumps((FORMAT_VERSION, self), protocol=pickle.HIGHEST_PROTOCOL))

    @staticmethod
    def load(path: Path) -> "RecognisedModel":
        version, model = pickle.loads(path.read_bytes())
        if version != FORMAT_VERSION:
            raise ValueError(f"{path}: recognised layers of format {version}, this npukit reads {FORMAT_VERSION}")
        return model
