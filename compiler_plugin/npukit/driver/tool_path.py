"""Puts npukit's ``iree-compile`` in front of IREE's.

IREE's ``iree-compile`` console script finds the real compiler through
``iree.compiler.tools.binaries.find_tool``, which searches ``IREE_TOOL_PATH``
first. A ``.pth`` file installed with npukit imports this module at interpreter
start-up, so in npukit's environment ``iree-compile`` (and IREE's Python
``compile_file``) reach npukit's driver, which hands stock command lines to
IREE's own binary unchanged.

This module runs at every interpreter start-up: keep it tiny and never fail.
"""

import os
import sys

TOOLS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools")


def install(environ=os.environ) -> None:
    parts = [p for p in environ.get("IREE_TOOL_PATH", "").split(os.pathsep) if p]
    if TOOLS_DIR not in parts:
        environ["IREE_TOOL_PATH"] = os.pathsep.join([TOOLS_DIR, *parts])
    # The driver scripts in TOOLS_DIR run with the interpreter that has npukit.
    environ["NPUKIT_PYTHON"] = sys.executable


try:
    install()
except Exception:  # never break interpreter start-up
    pass
