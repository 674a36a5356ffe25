// Shared by the static-library and embedded-ELF samples: runs simple_mul on
// fixed inputs through npukit's runtime and checks the product.

#ifndef NPUKIT_SAMPLES_SIMPLE_MUL_CHECK_H_
#define NPUKIT_SAMPLES_SIMPLE_MUL_CHECK_H_

#include "npukit/board.h"
#include "npukit/hal/hal_types.h"
#include "npukit/runtime.h"

static int simple_mul_fail(const char* what, iree_status_t status) {
  char message[256];
  iree_status_format(status, message, sizeof(message));
  iree_status_free(status);
  board_print("simple_mul: ");
  board_print(what);
  board_print(": ");
  board_print(message);
  board_print("\n");
  return 1;
}

// Sets the inputs, calls simple_mul and compares its output; prints "passed".
static int simple_mul_check(npukit_runtime_t* runtime) {
  static const float lhs[4] = {1.0f, 1.1f, 1.2f, 1.3f};
  static const float rhs[4] = {10.0f, 100.0f, 1000.0f, 10000.0f};
  const int64_t shape[1] = {4};
  iree_status_t status = npukit_runtime_set_input(runtime, 0, NPUKIT_HAL_ELEMENT_TYPE_FLOAT_32, 1, shape, lhs,
                                                  sizeof(lhs));
  if (iree_status_is_ok(status)) {
    status = npukit_runtime_set_input(runtime, 1, NPUKIT_HAL_ELEMENT_TYPE_FLOAT_32, 1, shape, rhs, sizeof(rhs));
  }
  if (iree_status_is_ok(status)) status = npukit_runtime_invoke(runtime, "simple_mul");
  float product[4] = {0};
  if (iree_status_is_ok(status)) status = npukit_runtime_read_output(runtime, 0, product, sizeof(product), NULL);
  if (!iree_status_is_ok(status)) return simple_mul_fail("running", status);
  for (int i = 0; i < 4; ++i) {
    // The same float multiplication on the board's FPU (or soft float) and here.
    if (product[i] != lhs[i] * rhs[i]) {
      board_print("simple_mul: wrong product at index ");
      board_print_u64((uint64_t)i);
      board_print("\n");
      return 1;
    }
  }
  board_print("simple_mul: 1.0 1.1 1.2 1.3 times 10 100 1000 10000 on ");
  board_print(board_name());
  board_print(": passed\n");
  return 0;
}

// Creates the runtime over the board's free RAM.
static iree_status_t simple_mul_runtime(npukit_runtime_t** out_runtime) {
  void* arena;
  size_t arena_size;
  board_free_ram(&arena, &arena_size);
  npukit_runtime_options_t options = npukit_runtime_default_options(arena, arena_size);
  return npukit_runtime_create(&options, out_runtime);
}

#endif  // NPUKIT_SAMPLES_SIMPLE_MUL_CHECK_H_
