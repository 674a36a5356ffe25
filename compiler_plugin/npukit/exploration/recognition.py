"""The one IREE compile of ``npukit explore``: the model through npukit's
normal mynpu pipeline (import, IREE up to 'stream', the mynpu target's
partitioning) in the compile worker, stopping there. What it keeps is the
recognised layers (npukit.mynpu.recognised_model); no CPU code is
generated."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Callable

from npukit.errors import CompileError, TargetError
from npukit.mynpu.recognised_model import RecognisedModel

Progress = Callable[[str], None]


def recognise(model: "str | os.PathLike[str]", target: str = "mynpu", iree_flags: tuple[str, ...] = (),
              progress: Progress | None = None) -> RecognisedModel:
    """Compiles ``model`` for ``target`` (``mynpu`` or ``mynpu+<cpu>``, as
    ``npukit compile -t`` takes it, with a .vmfb's flags) up to the NPU's
    partitioning and returns its dispatches with their recognised layers."""
    from npukit.compile_model import _explain_failure, _run_worker
    from npukit.driver.compile_job import CompileJob
    from npukit.driver.compile_plan import OutputPaths, flag_name, plan_for_target
    from npukit.frontends.isolated_import import import_isolated
    from npukit.frontends.limits import limits
    from npukit.mynpu.options import MynpuOptions
    from npukit.passes.fused_padding import FUSE_PADDING_FLAG
    from npukit.passes.module_naming import c_identifier
    from npukit.targets.output_modes import ExecutionModel, OutputMode
    from npukit.targets.target_spec import Target

    say = progress or (lambda _msg: None)
    started = time.monotonic()
    tgt = Target.parse(target)
    if tgt.npu is None:
        raise TargetError(f"npukit explore needs an NPU target ('mynpu' or 'mynpu+<cpu>'), got '{tgt.name}'")
    seconds = limits().seconds
    deadline = started + seconds
    with tempfile.TemporaryDirectory(prefix="npukit-explore-") as work_name:
        work = Path(work_name)
        say(f"importing {model}")
        imported = import_isolated(Path(model), None, work, seconds, None)
        module_name = c_identifier(imported.name)
        plan = plan_for_target(tgt, OutputMode.VMFB, ExecutionModel.ASYNC, OutputPaths(work, module_name),
                               [*imported.iree_flags, *iree_flags])
        if imported.mlir is not None:
            input_path = work / "input.mlirbc"
            input_path.write_bytes(imported.mlir)
        else:
            input_path = imported.path.resolve()
        layers = work / "recognised.pickle"
        flags = list(plan.flags)
        if not any(flag_name(f) == flag_name(FUSE_PADDING_FLAG) for f in flags):
            flags.append(FUSE_PADDING_FLAG)  # as npukit compile's NPU builds: the layers read their padding
        job = CompileJob(input_path=str(input_path), flags=flags, module_name=module_name,
                         output_format="vm-bytecode", output_path=str(work / "unused.vmfb"),
                         environment=plan.environment, mynpu=MynpuOptions().to_json(),
                         recognised_layers=str(layers))
        say(f"compiling {imported.name} for {tgt.name} up to the NPU's partitioning")
        try:
            _run_worker(job, work, say, deadline, seconds, None)
        except CompileError as e:
            raise _explain_failure(e, imported) from None
        recognised = RecognisedModel.load(layers)
    recognised.model = str(Path(model))
    recognised.compile_seconds = round(time.monotonic() - started, 3)
    return recognised
