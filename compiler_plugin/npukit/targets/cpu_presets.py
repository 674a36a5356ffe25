"""Named CPU targets: the host and the microcontroller cores npukit deploys to.

A preset is the one place where a core's LLVM triple, CPU, features, ABI and
float ABI are written down, together with the GCC toolchain that builds
firmware for it. Everything else (compile flags, the embedded linker, ELF
checks, board support) reads them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npukit.errors import TargetError


@dataclass(frozen=True)
class CrossToolchain:
    """The Debian GCC toolchain that builds C for a preset, and its multilib flags."""

    gcc: str
    cflags: tuple[str, ...]
    debian_packages: tuple[str, ...]
    # Extra GCC options that select the C library (e.g. picolibc's specs file).
    libc_flags: tuple[str, ...] = ()

    def describe_install(self) -> str:
        return "apt-get install " + " ".join(self.debian_packages)


@dataclass(frozen=True)
class CpuPreset:
    """A CPU that IREE's llvm-cpu backend compiles dispatches for.

    ``cpu`` is the LLVM CPU name given to IREE. The Arm presets leave it empty
    and spell the ISA out in ``features`` (with the architecture in the
    triple): IREE 3.13 cannot map an Arm CPU name to features and prints a
    warning on every compile that names one, while explicit features select
    the same instructions. ``core`` names the core itself.
    """

    name: str
    description: str
    core: str
    triple: str
    cpu: str
    features: str
    # LLVM target ABI (-mabi); empty means the triple's default.
    abi: str = ""
    # "hard", "soft" or "" (the triple's default); Arm only.
    float_abi: str = ""
    # Width of the VM's index type: 32 on the 32-bit boards.
    index_bits: int = 64
    # What the produced ELF objects must say about themselves.
    elf_machine: str = "EM_X86_64"
    elf_class: int = 64
    # "hard", "soft", "single" (RISC-V ilp32f) or "" when not applicable.
    elf_float_abi: str = ""
    # Execution model used for vm-c output unless the user asks otherwise.
    default_execution_model: str = "async"
    toolchain: CrossToolchain | None = None
    # Embedded ELFs for this core call routines that are not instructions
    # (fminf/fmaxf on Armv7E-M, software floating point on cores without an
    # FPU); they are linked from npukit's builtins and the toolchain's libgcc.
    embedded_needs_builtins: bool = False
    aliases: tuple[str, ...] = field(default=())

    @property
    def is_host(self) -> bool:
        return self.name == "host"

    def iree_flags(self) -> list[str]:
        """The llvm-cpu flags that select this CPU."""
        flags = []
        if self.triple:
            flags.append(f"--iree-llvmcpu-target-triple={self.triple}")
        if self.cpu:
            flags.append(f"--iree-llvmcpu-target-cpu={self.cpu}")
        if self.features:
            flags.append(f"--iree-llvmcpu-target-cpu-features={self.features}")
        if self.abi:
            flags.append(f"--iree-llvmcpu-target-abi={self.abi}")
        if self.float_abi:
            flags.append(f"--iree-llvmcpu-target-float-abi={self.float_abi}")
        if self.index_bits != 64:
            flags.append(f"--iree-vm-target-index-bits={self.index_bits}")
        return flags


_ARM_GCC_PACKAGES = ("gcc-arm-none-eabi", "libnewlib-arm-none-eabi")
_RISCV_GCC_PACKAGES = ("gcc-riscv64-unknown-elf", "picolibc-riscv64-unknown-elf")

HOST = CpuPreset(
    name="host",
    description="this machine's CPU (x86-64 with its native features); runs on the host",
    core="host",
    triple="",
    cpu="host",
    features="host",
)

CORTEX_M4 = CpuPreset(
    name="cortex-m4",
    description="Arm Cortex-M4F: Armv7E-M, DSP extension, FPv4-SP-D16, hard-float ABI",
    triple="thumbv7em-none-eabihf",
    core="cortex-m4",
    cpu="",
    features="+thumb-mode,+hwdiv,+dsp,+vfp4d16sp",
    float_abi="hard",
    index_bits=32,
    elf_machine="EM_ARM",
    elf_class=32,
    elf_float_abi="hard",
    default_execution_model="inline-dynamic",
    toolchain=CrossToolchain(
        gcc="arm-none-eabi-gcc",
        cflags=("-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"),
        debian_packages=_ARM_GCC_PACKAGES,
    ),
    embedded_needs_builtins=True,
    aliases=("m4",),
)

CORTEX_M7 = CpuPreset(
    name="cortex-m7",
    description="Arm Cortex-M7: Armv7E-M, DSP extension, FPv5-D16 (double precision), hard-float ABI",
    triple="thumbv7em-none-eabihf",
    core="cortex-m7",
    cpu="",
    features="+thumb-mode,+hwdiv,+dsp,+fp-armv8d16",
    float_abi="hard",
    index_bits=32,
    elf_machine="EM_ARM",
    elf_class=32,
    elf_float_abi="hard",
    default_execution_model="inline-dynamic",
    toolchain=CrossToolchain(
        gcc="arm-none-eabi-gcc",
        cflags=("-mcpu=cortex-m7", "-mthumb", "-mfpu=fpv5-d16", "-mfloat-abi=hard"),
        debian_packages=_ARM_GCC_PACKAGES,
    ),
    aliases=("m7",),
)

CORTEX_M3 = CpuPreset(
    name="cortex-m3",
    description="Arm Cortex-M3: Armv7-M, no FPU, soft-float ABI",
    triple="thumbv7m-none-eabi",
    core="cortex-m3",
    cpu="",
    features="+thumb-mode,+hwdiv,+soft-float",
    float_abi="soft",
    index_bits=32,
    elf_machine="EM_ARM",
    elf_class=32,
    elf_float_abi="soft",
    default_execution_model="inline-dynamic",
    toolchain=CrossToolchain(
        gcc="arm-none-eabi-gcc",
        cflags=("-mcpu=cortex-m3", "-mthumb", "-mfloat-abi=soft"),
        debian_packages=_ARM_GCC_PACKAGES,
    ),
    embedded_needs_builtins=True,
    aliases=("m3",),
)

RV32IMF = CpuPreset(
    name="rv32imf",
    description="RISC-V RV32IMF: integer multiply/divide, single-precision FPU, ilp32f ABI",
    core="rv32imf",
    triple="riscv32-unknown-elf",
    cpu="generic-rv32",
    features="+m,+f",
    abi="ilp32f",
    index_bits=32,
    elf_machine="EM_RISCV",
    elf_class=32,
    elf_float_abi="single",
    default_execution_model="inline-dynamic",
    toolchain=CrossToolchain(
        gcc="riscv64-unknown-elf-gcc",
        cflags=("-march=rv32imf", "-mabi=ilp32f", "-misa-spec=2.2"),
        debian_packages=_RISCV_GCC_PACKAGES,
        libc_flags=("--specs=picolibc.specs",),
    ),
)

RV32IMAC = CpuPreset(
    name="rv32imac",
    description="RISC-V RV32IMAC: multiply/divide, atomics, compressed, no FPU, ilp32 ABI",
    core="rv32imac",
    triple="riscv32-unknown-elf",
    cpu="generic-rv32",
    features="+m,+a,+c",
    abi="ilp32",
    index_bits=32,
    elf_machine="EM_RISCV",
    elf_class=32,
    elf_float_abi="soft",
    default_execution_model="inline-dynamic",
    toolchain=CrossToolchain(
        gcc="riscv64-unknown-elf-gcc",
        cflags=("-march=rv32imac", "-mabi=ilp32", "-misa-spec=2.2"),
        debian_packages=_RISCV_GCC_PACKAGES,
        libc_flags=("--specs=picolibc.specs",),
    ),
    embedded_needs_builtins=True,
)

_PRESETS: tuple[CpuPreset, ...] = (HOST, CORTEX_M4, CORTEX_M7, CORTEX_M3, RV32IMF, RV32IMAC)


def list_presets() -> list[CpuPreset]:
    """All CPU presets, host first."""
    return list(_PRESETS)


def get_preset(name: str) -> CpuPreset:
    """Looks a preset up by name or alias; unknown names raise TargetError."""
    key = name.strip().lower()
    for preset in _PRESETS:
        if key == preset.name or key in preset.aliases:
            return preset
    known = ", ".join(p.name for p in _PRESETS)
    raise TargetError(f"unknown target '{name}'; known CPU targets: {known} (see `npukit targets`)")

