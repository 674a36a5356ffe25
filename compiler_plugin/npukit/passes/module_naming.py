"""Names the top-level module so that generated C symbols carry the model's name.

IREE derives the VM module name (and with it ``<name>_create`` in vm-c output
and the static library's query function) from the module's ``sym_name``; an
unnamed module becomes ``module``, which collides as soon as a firmware links
two models.
"""

from __future__ import annotations

import re

from iree.compiler import ir


def c_identifier(name: str) -> str:
    """A C identifier made from ``name`` (letters, digits, underscores)."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", name).strip("_") or "model"
    if ident[0].isdigit():
        ident = "m_" + ident
    return ident


class NameModule:
    """Run at 'start': sets the module's sym_name."""

    def __init__(self, name: str):
        self.name = c_identifier(name)

    def __call__(self, module: ir.Operation) -> None:
        with module.context:
            module.attributes["sym_name"] = ir.StringAttr.get(self.name)
