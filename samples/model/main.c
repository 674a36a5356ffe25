// The model sample: runs a compiled model on a board with its input built
// into the firmware and checks the output against the one computed on the
// host. `npukit deploy MODEL --board BOARD` generates model_data.h (inputs,
// host outputs) and builds this file with the model; the console lines that
// start with "npukit: " are what npukit deploy reads back.

#include <math.h>
#include <string.h>

#include "model_data.h"
#include "npukit/board.h"
#include "npukit/hal/modules.h"
#include "npukit/runtime.h"

// The model's generic entry points (its <name>_model.c with
// NPUKIT_MODEL_GENERIC_ENTRY_POINTS).
iree_status_t npukit_model_load(npukit_runtime_t* runtime);
iree_status_t npukit_model_run(npukit_runtime_t* runtime, const void* const* inputs, void* const* outputs);

static void print_value(const char* key, uint64_t value) {
  board_print("npukit: ");
  board_print(key);
  board_print(" ");
  board_print_u64(value);
  board_print("\n");
}

static int fail(const char* stage, iree_status_t status) {
  char message[384];
  iree_status_format(status, message, sizeof(message));
  iree_status_free(status);
  board_print("npukit: error ");
  board_print(stage);
  board_print(": ");
  board_print(message);
  board_print("\n");
  return 2;
}

// Integers must be equal; floats within 1e-4 relative (1e-6 absolute near 0).
static int output_matches(const model_output_t* output, const uint8_t* got) {
  if (!output->is_float32) return memcmp(got, output->expected, output->bytes) == 0;
  for (size_t i = 0; i < output->bytes / 4; ++i) {
    float a, b;
    memcpy(&a, got + 4 * i, 4);
    memcpy(&b, output->expected + 4 * i, 4);
    if (!(fabsf(a - b) <= 1e-4f * fabsf(b) + 1e-6f)) return 0;
  }
  return 1;
}

int main(void) {
  board_print("npukit: board ");
  board_print(board_name());
  board_print("\n");
  void* arena;
  size_t arena_size;
  board_free_ram(&arena, &arena_size);
#if defined(MODEL_ARENA_LIMIT)
  // The deploy asked for a smaller arena (a board with less RAM).
  if (arena_size > MODEL_ARENA_LIMIT) arena_size = MODEL_ARENA_LIMIT;
#endif
  print_value("arena_capacity", arena_size);
  npukit_runtime_options_t options = npukit_runtime_default_options(arena, arena_size);
#if defined(NPUKIT_MODEL_FULL_HAL)
  options.full_hal = &npukit_full_hal;
#endif
  npukit_runtime_t* runtime = NULL;
  iree_status_t status = npukit_runtime_create(&options, &runtime);
  if (!iree_status_is_ok(status)) return fail("creating the runtime", status);
  uint64_t before = board_instructions();
  status = npukit_model_load(runtime);
  if (!iree_status_is_ok(status)) return fail("loading the model", status);
  print_value("load_instructions", board_instructions() - before);

  // The first run and a second, steady-state one; the second is the figure.
  for (int run = 0; run < 2; ++run) {
    before = board_instructions();
    status = npukit_model_run(runtime, model_inputs, model_output_buffers);
    uint64_t instructions = board_instructions() - before;
    if (!iree_status_is_ok(status)) return fail("running the model", status);
    print_value(run == 0 ? "first_run_instructions" : "instructions", instructions);
  }
  print_value("instruction_step", board_instruction_step());

  int all_match = 1;
  for (int i = 0; i < MODEL_OUTPUT_COUNT; ++i) {
    board_print("npukit: output ");
    board_print_u64((uint64_t)i);
    board_print(" ");
    board_print_hex(model_output_buffers[i], model_outputs[i].bytes);
    board_print("\n");
    all_match &= output_matches(&model_outputs[i], (const uint8_t*)model_output_buffers[i]);
  }
  npukit_runtime_stats_t stats = npukit_runtime_stats(runtime);
  print_value("arena_high_water", stats.arena_high_water_mark);
  print_value("dispatches", stats.dispatch_count);
  npukit_runtime_destroy(runtime);
  print_value("stack_high_water", board_stack_high_water());
  print_value("stack_size", board_stack_size());
  board_print(all_match ? "npukit: outputs match the host\n" : "npukit: outputs differ from the host\n");
  return all_match ? 0 : 1;
}
