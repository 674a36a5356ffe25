// Routines that LLVM calls instead of emitting instructions, for embedded ELF
// executables. An embedded ELF is linked without a C library, so a call to
// fminf/fmaxf (no min/max instruction on Armv7E-M or without an FPU) would be
// left undefined. Software floating point (__aeabi_f*, __addsf3, ...) comes
// from the toolchain's libgcc, linked after this archive.
//
// Built with -fPIC -fvisibility=hidden: the definitions bind inside the
// executable and need no dynamic symbol lookup at load time.

float fmaxf(float a, float b) {
  if (a != a) return b;  // NaN operands lose, as C99 specifies.
  if (b != b) return a;
  return a > b ? a : b;
}

float fminf(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  return a < b ? a : b;
}

#if defined(__arm__)
// libgcc's C objects name the Arm EHABI personality routines in their unwind
// tables. Executables never throw, so these are never called; defining them
// keeps the unwinder (which needs absolute relocations) out of the link.
void __aeabi_unwind_cpp_pr0(void) { __builtin_trap(); }
void __aeabi_unwind_cpp_pr1(void) { __builtin_trap(); }
void __aeabi_unwind_cpp_pr2(void) { __builtin_trap(); }
#endif
