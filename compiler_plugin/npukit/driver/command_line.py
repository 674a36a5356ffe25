"""Reads an ``iree-compile`` command line and finds npukit's additions in it.

Three kinds of arguments:

- iree-compile's own tool options (input file, ``-o``, ``--output-format``,
  ``--compile-to`` ...), which the hosted driver implements itself;
- npukit's additions: ``mynpu`` in ``--iree-hal-target-backends`` and the
  ``--npukit-*`` flags;
- everything else, handed to IREE's option parser unchanged.

A command line without npukit's additions is passed to IREE's own binary
untouched, so its output is byte-identical to stock ``iree-compile``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npukit.errors import TargetError
from npukit.mynpu.options import MYNPU_FLAGS
from npukit.targets.target_spec import NPU_NAMES

# iree-compile tool options that take a value (from IREE's iree_compile_lib).
_TOOL_VALUE_OPTIONS = {
    "o",
    "output-format",
    "compile-mode",
    "compile-from",
    "compile-to",
    "dump-compilation-phases-to",
    "emit-mlir-bytecode-version",
    "remarks-filter",
    "remarks-output-file",
}
_TOOL_BOOL_OPTIONS = {"verify", "emit-mlir-bytecode", "split-input-file"}

#: npukit's own flags, with their help text.
NPUKIT_FLAGS = {
    "npukit-target": "CPU preset for llvm-cpu dispatches (host, cortex-m4, cortex-m7, cortex-m3, rv32imf, rv32imac)",
    "npukit-cpu-pipeline": "tuned (int8 layers call npukit's kernels for the preset; TFLite's integer arithmetic "
                           "throughout; the default where --npukit-target or the mynpu backend gives a preset) "
                           "or stock (IREE's own CPU code)",
}

_BACKENDS_FLAG = "iree-hal-target-backends"


@dataclass
class CommandLine:
    """A parsed iree-compile command line."""

    argv: list[str]
    inputs: list[str] = field(default_factory=list)
    # Tool options by name (without dashes); booleans are stored as "true"/"false".
    tool: dict[str, str] = field(default_factory=dict)
    # Arguments for IREE's global option parser, in order.
    iree_flags: list[str] = field(default_factory=list)
    # Backends named in --iree-hal-target-backends (all occurrences, in order).
    backends: list[str] = field(default_factory=list)
    npukit: dict[str, str] = field(default_factory=dict)
    # --mynpu-* flags by name (without dashes).
    mynpu: dict[str, str] = field(default_factory=dict)
    wants_help: bool = False

    @property
    def uses_npukit(self) -> bool:
        return bool(self.npukit) or bool(self.mynpu) or any(b in NPU_NAMES for b in self.backends)

    @property
    def npu(self) -> str | None:
        for b in self.backends:
            if b in NPU_NAMES:
                return b
        return None

    def flag_names(self) -> set[str]:
        """Names of the IREE flags given (without dashes or values)."""
        return {_split(a)[0] for a in self.iree_flags if a.startswith("-")}


def _split(arg: str) -> tuple[str, str | None]:
    name = arg.lstrip("-")
    if "=" in name:
        key, value = name.split("=", 1)
        return key, value
    return name, None


def parse_command_line(argv: list[str]) -> CommandLine:
    cl = CommandLine(argv=list(argv))
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            cl.inputs.append(arg)
            continue
        name, value = _split(arg)
        if name in ("help", "h", "help-hidden", "help-list"):
            cl.wants_help = True
            cl.iree_flags.append(arg)
            continue
        if name in _TOOL_VALUE_OPTIONS:
            if value is None:
                if name == "o" and len(arg) > 2 and not arg.startswith("--") and arg[1] == "o":
                    value = arg[2:]  # -ofile
                elif i < len(argv):
                    value = argv[i]
                    i += 1
                else:
                    raise TargetError(f"flag '{arg}' needs a value")
            cl.tool[name] = value
            continue
        if name in _TOOL_BOOL_OPTIONS:
            cl.tool[name] = "true" if value is None else value
            continue
        if name.startswith("mynpu-"):
            if name not in MYNPU_FLAGS:
                known = ", ".join(f"--{f}" for f in MYNPU_FLAGS)
                raise TargetError(f"unknown mynpu flag '{arg}'; the mynpu flags: {known}")
            cl.mynpu[name] = "true" if value is None and name == "mynpu-show-cpu-operations" else value or ""
            if not cl.mynpu[name]:
                raise TargetError(f"flag '{arg}' needs a value (--{name}=VALUE)")
            continue
        if name.startswith("npukit-"):
            if name not in NPUKIT_FLAGS:
                known = ", ".join(f"--{f}" for f in NPUKIT_FLAGS)
                raise TargetError(f"unknown npukit flag '{arg}'; npukit's flags: {known}")
            if value is None:
                if i >= len(argv):
                    raise TargetError(f"flag '{arg}' needs a value (--{name}=VALUE)")
                value = argv[i]
                i += 1
            cl.npukit[name] = value
            continue
        if name == _BACKENDS_FLAG:
            if value is None and i < len(argv) and not argv[i].startswith("-"):
                value = argv[i]
                i += 1
                arg = f"--{name}={value}"
            cl.backends.extend(b.strip() for b in (value or "").split(",") if b.strip())
        cl.iree_flags.append(arg)
    return cl
