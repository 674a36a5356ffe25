# cortex-m3: Arm Cortex-M3: Armv7-M, no FPU, soft-float ABI.
# Debian's arm-none-eabi-gcc with newlib (nano); install with `apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi`.
# Generated from compiler_plugin/npukit/targets/cpu_presets.py by
# `python -m npukit.deploy.toolchain_files`; edit the preset, not this file.
#
#   cmake -S . -B build -G Ninja -DCMAKE_TOOLCHAIN_FILE=toolchains/cortex-m3.cmake -DNPUKIT_BOARD=<board>
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

set(NPUKIT_CPU cortex-m3)
set(NPUKIT_BARE_METAL ON CACHE BOOL "Build for a bare-metal board" FORCE)
set(NPUKIT_CPU_FLAGS "-mcpu=cortex-m3 -mthumb -mfloat-abi=soft")
set(CMAKE_C_FLAGS_INIT "${NPUKIT_CPU_FLAGS} -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${NPUKIT_CPU_FLAGS}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=nano.specs")
