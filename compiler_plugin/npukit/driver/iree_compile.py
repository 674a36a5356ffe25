"""``iree-compile`` with npukit's additions.

Without npukit's additions the command line goes to IREE's own binary,
unchanged. With them (``--iree-hal-target-backends=mynpu``, ``--npukit-*``),
this driver hosts the compile itself: IREE's pipeline runs through its C API
in phases (npukit.driver.phases) with npukit's passes between them, and the
output is written the way iree-compile writes it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from npukit.driver.command_line import NPUKIT_FLAGS, CommandLine, parse_command_line
from npukit.driver.stock_tools import stock_tool
from npukit.errors import NpukitError

PROG = "iree-compile"

HELP = """
npukit additions (npukit's iree-compile driver):

  --iree-hal-target-backends=mynpu   the mynpu NPU target; dispatches the NPU does not
                                     run are compiled for the CPU (the host unless
                                     --iree-llvmcpu-target-* flags or --npukit-target
                                     say otherwise). The result runs on the stock runtime.
{flags}
  Command lines without these additions are passed to IREE's iree-compile unchanged.
  With them, write flag values as --flag=value.
"""


def _help_text() -> str:
    from npukit.mynpu.options import MYNPU_FLAGS

    lines = [f"  --{name}=<value>".ljust(37) + text for name, text in {**NPUKIT_FLAGS, **MYNPU_FLAGS}.items()]
    return HELP.format(flags="\n".join(lines))


def _exec_stock(argv: list[str]) -> None:
    exe = str(stock_tool("iree-compile"))
    os.execv(exe, [exe, *argv])


def _print_help(argv: list[str]) -> int:
    import subprocess

    sys.stdout.flush()
    rc = subprocess.call([str(stock_tool("iree-compile")), *argv])
    print(_help_text())
    return rc


def _tuned_cpu(cl: CommandLine, plan):
    """(the layer kernel calls, the static library to merge the kernels into
    afterwards) for --npukit-cpu-pipeline=tuned; (None, None) for stock.
    Without the flag: tuned where the command line gives a CPU preset, else
    IREE's own code."""
    from npukit.driver.compile_plan import links_static, static_library_path
    from npukit.targets.cpu_pipeline import DEFAULT_CPU_PIPELINE, CpuPipeline

    default = DEFAULT_CPU_PIPELINE if plan.preset is not None else CpuPipeline.STOCK
    pipeline = CpuPipeline.parse(cl.npukit.get("npukit-cpu-pipeline", default.value))
    if pipeline is not CpuPipeline.TUNED:
        return None, None
    if plan.preset is None:
        raise NpukitError("--npukit-cpu-pipeline=tuned builds npukit's kernels for a CPU preset, and the "
                          "--iree-llvmcpu-target-* flags do not name one: add --npukit-target=PRESET")
    from npukit.cpu.kernel_choice import LayerChoices
    from npukit.cpu.target_kernels import TargetKernels
    from npukit.cpu.tuning_database import TuningDatabase
    from npukit.passes.layer_kernel_calls import LayerKernelCalls

    chosen, notes = TuningDatabase().choices_with_notes(plan.preset)
    for note in notes:
        print(f"npukit: {note}", file=sys.stderr)
    choices = LayerChoices(plan.preset, chosen)
    if links_static(plan.flags):
        library = static_library_path(plan.flags)
        if library is None:
            raise NpukitError("--iree-llvmcpu-link-static needs --iree-llvmcpu-static-library-output-path=FILE.o")
        # IREE writes a static library as one object: the kernels are merged into it after the compile.
        return LayerKernelCalls([], choices), library
    return LayerKernelCalls(list(TargetKernels.build(plan.preset).link_objects), choices), None


def run_hosted(cl: CommandLine) -> int:
    from iree.compiler.api import Output, Session, Source

    from npukit.driver import iree_capi
    from npukit.driver.compile_plan import plan_for_command_line
    from npukit.driver.phases import PhasedPipeline
    from npukit.passes.registry import passes_for

    if not cl.inputs:
        raise NpukitError("no input file (give a .mlir/.mlirbc file or '-' for stdin)")
    if len(cl.inputs) > 1:
        raise NpukitError(
            f"more than one input file ({', '.join(cl.inputs)}); with npukit's additions "
            "write flag values as --flag=value"
        )
    if cl.tool.get("split-input-file", "false") == "true":
        raise NpukitError("--split-input-file cannot be combined with npukit's additions")
    if cl.tool.get("compile-mode", "std") != "std":
        raise NpukitError("npukit's additions work with --compile-mode=std only")
    output_format = cl.tool.get("output-format", "vm-bytecode")
    if output_format not in ("vm-bytecode", "vm-c", "vm-asm"):
        raise NpukitError(f"unknown --output-format={output_format}; use vm-bytecode, vm-c or vm-asm")

    plan = plan_for_command_line(cl)
    kernels, static_library = _tuned_cpu(cl, plan)
    mynpu = None
    if cl.npu is not None:
        from npukit.mynpu.options import MynpuOptions
        from npukit.passes.mynpu_partition import MynpuTarget
        from npukit.passes.registry import is_inline_execution

        mynpu = MynpuTarget(MynpuOptions.from_flags(cl.mynpu), inline=is_inline_execution(plan.flags))
    elif cl.mynpu:
        raise NpukitError("--mynpu-* flags need the mynpu target (--iree-hal-target-backends=mynpu)")
    os.environ.update(plan.environment)
    iree_capi.setup_global_command_line([PROG, *plan.flags])
    session = Session()
    input_path = cl.inputs[0]
    try:
        if input_path == "-":
            source = Source.wrap_buffer(session, sys.stdin.buffer.read())
        else:
            source = Source.open_file(session, input_path)
    except ValueError as e:
        print(f"error opening input file: {e}", file=sys.stderr)
        return 1

    pipeline = PhasedPipeline(
        session,
        hooks=passes_for(plan.flags, output_format, mynpu, kernels),
        verify_ir=cl.tool.get("verify", "true") not in ("false", "0"),
        dump_phases_to=cl.tool.get("dump-compilation-phases-to"),
    )
    compile_to = cl.tool.get("compile-to", "end")
    try:
        inv = pipeline.run(source, compile_from=cl.tool.get("compile-from", "start"), compile_to=compile_to)
    except NpukitError as e:
        if not getattr(e, "on_console", False):  # an npukit pass refused the module: say why
            print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1  # otherwise IREE's diagnostics are already on the console

    output = Output.open_file(cl.tool.get("o", "-"))
    bytecode = cl.tool.get("emit-mlir-bytecode", "false") not in ("false", "0")

    def write_ir() -> None:
        if bytecode:
            inv.output_ir_bytecode(output, int(cl.tool.get("emit-mlir-bytecode-version", "-1")))
        else:
            inv.output_ir(output)

    try:
        if compile_to != "end" or output_format == "vm-asm":
            write_ir()
        elif output_format == "vm-c":
            iree_capi.output_vm_c_source(inv, output)
        else:
            inv.output_vm_bytecode(output)
    except ValueError as e:
        print(f"error writing output: {e}", file=sys.stderr)
        return 1
    output.keep()
    output.close()
    if static_library is not None and compile_to == "end":
        from npukit.cpu.target_kernels import TargetKernels

        leave_out = mynpu.library_leaves_out() if mynpu is not None else []
        kept = TargetKernels.build(plan.preset).link_into(Path(static_library), leave_out)
        if kept:
            print(f"npukit: the static library keeps IREE's executable-library tables: {kept}", file=sys.stderr)
    if mynpu is not None and mynpu.report is not None:
        from npukit.compile_model import publish_mynpu_report

        publish_mynpu_report(mynpu.report, mynpu.options)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        cl = parse_command_line(argv)
        if not cl.uses_npukit:
            if cl.wants_help:
                return _print_help(argv)
            _exec_stock(argv)
        if cl.wants_help:
            return _print_help([a for a in argv if a.lstrip("-").startswith("help")])
        return run_hosted(cl)
    except NpukitError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
