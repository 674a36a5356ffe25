# rv32imf: RISC-V RV32IMF: integer multiply/divide, single-precision FPU, ilp32f ABI.
# Debian's riscv64-unknown-elf-gcc with picolibc; install with `apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf`.
# Generated from compiler_plugin/npukit/targets/cpu_presets.py by
# `python -m npukit.deploy.toolchain_files`; edit the preset, not this file.
#
#   cmake -S . -B build -G Ninja -DCMAKE_TOOLCHAIN_FILE=toolchains/rv32imf.cmake -DNPUKIT_BOARD=<board>
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)
set(CMAKE_C_COMPILER riscv64-unknown-elf-gcc)
set(CMAKE_ASM_COMPILER riscv64-unknown-elf-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

set(NPUKIT_CPU rv32imf)
set(NPUKIT_BARE_METAL ON CACHE BOOL "Build for a bare-metal board" FORCE)
set(NPUKIT_CPU_FLAGS "-march=rv32imf -mabi=ilp32f -misa-spec=2.2 --specs=picolibc.specs")
set(CMAKE_C_FLAGS_INIT "${NPUKIT_CPU_FLAGS} -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${NPUKIT_CPU_FLAGS}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "")
