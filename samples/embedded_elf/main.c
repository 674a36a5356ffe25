// The embedded-ELF sample: simple_mul compiled to a vm-c module that carries
// its executable as an embedded ELF (`npukit compile simple_mul.mlir -t <cpu>
// -m embedded`); the runtime loads and relocates the ELF at start-up.

#include "simple_mul_check.h"
#include "simple_mul_module.h"  // simple_mul_create, from the compile

int main(void) {
  npukit_runtime_t* runtime = NULL;
  iree_status_t status = simple_mul_runtime(&runtime);
  if (iree_status_is_ok(status)) status = npukit_runtime_register_embedded_elf_loader(runtime);
  if (iree_status_is_ok(status)) status = npukit_runtime_load_module(runtime, simple_mul_create);
  int result = iree_status_is_ok(status) ? simple_mul_check(runtime) : simple_mul_fail("loading", status);
  npukit_runtime_destroy(runtime);
  return result;
}
