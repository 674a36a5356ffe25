"""The limits a model must keep to before anything but npukit's own checks reads it.

A malformed or hostile file can claim tensors of any size, any rank and any
number of operators; IREE and the frontends would try to honour the claims
(allocate, loop, recurse). These limits are far above what a model for a
microcontroller or a host CPU needs, and each refusal says which limit was
hit and how to raise it: every limit can be changed with an environment
variable, ``NPUKIT_LIMIT_<NAME>`` (for example ``NPUKIT_LIMIT_OPERATORS=50000``).

The time limit stops an import or a compile that runs too long (IREE has no
limit of its own); ``npukit compile --time-limit`` and
``npukit.compile(time_limit=...)`` set it per compile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from npukit.errors import ModelLimitError

GIB = 1 << 30


@dataclass(frozen=True)
class ModelLimits:
    #: Size of the model file (and of each external data file).
    file_bytes: int = 2 * GIB
    #: Bytes of all constant tensors together (weights, biases, tables).
    constant_bytes: int = 2 * GIB
    #: Bytes of any one tensor, constant or computed.
    tensor_bytes: int = 2 * GIB
    #: Elements of any one tensor.
    tensor_elements: int = 1 << 31
    #: Dimensions of any one tensor.
    rank: int = 8
    #: Operators (graph nodes) of the model, subgraphs included.
    operators: int = 10_000
    #: Tensors (values) of the model.
    tensors: int = 100_000
    #: Seconds an import or a compile may run.
    seconds: float = 1800.0

    @staticmethod
    def from_environment() -> "ModelLimits":
        values = {}
        for f in fields(ModelLimits):
            variable = env_variable(f.name)
            text = os.environ.get(variable)
            if text is None:
                continue
            try:
                value = float(text) if f.type in (float, "float") else int(text)
            except ValueError:
                raise ModelLimitError(f"{variable}={text!r} is not a number") from None
            if value <= 0:
                raise ModelLimitError(f"{variable}={text!r} must be positive")
            values[f.name] = value
        return ModelLimits(**values)

    def exceeded(self, path: object, what: str, value: int, name: str, unit: str = "") -> ModelLimitError:
        """The one-line refusal of ``what`` (``value`` over the limit ``name``)."""
        limit = getattr(self, name)
        unit = f" {unit}" if unit else ""
        return ModelLimitError(
            f"{path}: {what} has {value:,}{unit}, over npukit's limit of {limit:,}{unit} "
            f"(set {env_variable(name)} to raise it)"
        )


def env_variable(name: str) -> str:
    return "NPUKIT_LIMIT_" + ("TIME" if name == "seconds" else name.upper())


def limits() -> ModelLimits:
    """The limits in force (the defaults, changed by NPUKIT_LIMIT_* variables)."""
    return ModelLimits.from_environment()
