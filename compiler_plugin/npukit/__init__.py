"""npukit: an IREE compiler extension and bare-metal deployment kit.

Quick start::

    import npukit
    result = npukit.compile("model.onnx", target="host")
    outputs = npukit.run(result, input_array)

The public names are imported lazily so that ``import npukit`` stays cheap (the
package is imported at interpreter start-up by the ``iree-compile`` hook).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "compile": ("npukit.compile_model", "compile"),
    "CompileResult": ("npukit.artifact", "CompileResult"),
    "load_artifact": ("npukit.artifact", "load_artifact"),
    "run": ("npukit.run_model", "run"),
    "explore": ("npukit.exploration.explore_model", "explore"),
    "load": ("npukit.run_model", "load"),
    "Target": ("npukit.targets.target_spec", "Target"),
    "targets": ("npukit.targets.cpu_presets", "list_presets"),
    "NpukitError": ("npukit.errors", "NpukitError"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'npukit' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value
