// The static-library sample: simple_mul compiled to a vm-c module plus a
// static library (`npukit compile simple_mul.mlir -t <cpu> -m static`), linked
// into the firmware and run through npukit's runtime.

#include "simple_mul_check.h"
#include "simple_mul_executables.h"  // simple_mul_dispatch_0_library_query, from the compile
#include "simple_mul_module.h"       // simple_mul_create, from the compile

int main(void) {
  npukit_runtime_t* runtime = NULL;
  iree_status_t status = simple_mul_runtime(&runtime);
  // The application tells the runtime which static libraries it linked. IREE
  // names a library's query after its executable (here the program's only
  // dispatch; programs with several get one <name>_linked_library_query).
  const iree_hal_executable_library_query_fn_t queries[] = {simple_mul_dispatch_0_library_query};
  if (iree_status_is_ok(status)) status = npukit_runtime_register_static_libraries(runtime, queries, 1);
  if (iree_status_is_ok(status)) status = npukit_runtime_load_module(runtime, simple_mul_create);
  int result = iree_status_is_ok(status) ? simple_mul_check(runtime) : simple_mul_fail("loading", status);
  npukit_runtime_destroy(runtime);
  return result;
}
