// The model sample: runs a compiled model on a board with its inputs built
// into the firmware and checks the outputs against the ones computed on the
// host. The first input set runs twice (the first run and the steady state,
// measured); the others run once each and are checked. `npukit deploy MODEL
// --board BOARD` generates model_data.h (inputs, host outputs) and builds this
// file with the model; the console lines that start with "npukit: " are what
// npukit deploy reads back. A model compiled
// for mynpu (`--npu mynpu`) also reports the NPU's counted cycles.

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

#if defined(MODEL_PROFILE_DISPATCHES)
// Instructions per export over the dispatches while `recording`, printed as
// "npukit: dispatch_instructions <export> <count>". The hook's own
// instructions (a few dozen per dispatch) are counted in the run's total.
#define PROFILE_MAX_EXPORTS 128
static struct {
  int recording;
  uint64_t started;
  uint32_t count;
  iree_string_view_t names[PROFILE_MAX_EXPORTS];
  uint64_t instructions[PROFILE_MAX_EXPORTS];
} profile;

static void profile_dispatch(void* user_data, iree_string_view_t name, int done) {
  (void)user_data;
  const uint64_t now = board_instructions();
  if (!profile.recording) return;
  if (!done) {
    profile.started = now;
    return;
  }
  uint32_t i = 0;
  while (i < profile.count && !iree_string_view_equal(profile.names[i], name)) ++i;
  if (i == PROFILE_MAX_EXPORTS) return;
  if (i == profile.count) profile.names[profile.count++] = name;
  profile.instructions[i] += now - profile.started;
}

static void profile_print(void) {
  for (uint32_t i = 0; i < profile.count; ++i) {
    board_print("npukit: dispatch_instructions ");
    board_write(profile.names[i].data, profile.names[i].size);
    board_print(" ");
    board_print_u64(profile.instructions[i]);
    board_print("\n");
  }
}
#endif

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

#if defined(MODEL_MYNPU_SRAM_BYTES)
// A model compiled for mynpu: its NPU dispatches run on the mynpu simulator,
// wrapped here to count the CPU instructions the simulation itself takes. A
// real NPU does that work in its own hardware, so the firmware reports the
// CPU's instructions without them and the NPU's work as counted NPU cycles.
typedef struct {
  npukit_mynpu_backend_t base;
  npukit_mynpu_simulator_backend_t simulator;
  uint64_t simulation_instructions;
  uint64_t streams;
} measured_npu_t;

static measured_npu_t npu;

static void npu_query_capabilities(const npukit_mynpu_backend_t* base, npukit_mynpu_capabilities_t* out) {
  (void)base;
  npu.simulator.base.vtable->query_capabilities(&npu.simulator.base, out);
}

static iree_status_t npu_submit(npukit_mynpu_backend_t* base, const npukit_mynpu_submission_t* submission) {
  (void)base;
  uint64_t before = board_instructions();
  iree_status_t status = npu.simulator.base.vtable->submit(&npu.simulator.base, submission);
  npu.simulation_instructions += board_instructions() - before;
  ++npu.streams;
  return status;
}

static iree_status_t npu_wait(npukit_mynpu_backend_t* base) {
  (void)base;
  return npu.simulator.base.vtable->wait(&npu.simulator.base);
}

static void npu_read_counters(const npukit_mynpu_backend_t* base, npukit_mynpu_counters_t* out_last,
                              npukit_mynpu_counters_t* out_total) {
  (void)base;
  npu.simulator.base.vtable->read_counters(&npu.simulator.base, out_last, out_total);
}

static const npukit_mynpu_backend_vtable_t npu_vtable = {
    npu_query_capabilities,
    npu_submit,
    npu_wait,
    npu_read_counters,
};

typedef struct {
  uint64_t cycles, macs, streams, simulation_instructions;
} npu_snapshot_t;

static npu_snapshot_t npu_snapshot(void) {
  npukit_mynpu_counters_t total;
  npu_read_counters(&npu.base, NULL, &total);
  npu_snapshot_t s = {total.cycles, total.macs, npu.streams, npu.simulation_instructions};
  return s;
}
#endif  // MODEL_MYNPU_SRAM_BYTES

// Floats within 1e-4 relative (1e-6 absolute near 0); 8-bit quantized values
// within 1 (a float operation on the CPU, such as a softmax or an average,
// compiled for this CPU can round one value the other way than the host's
// code does); other integers equal.
static int output_matches(const model_output_t* output, const uint8_t* got) {
  switch (output->kind) {
    case MODEL_OUTPUT_FLOAT32:
      for (size_t i = 0; i < output->bytes / 4; ++i) {
        float a, b;
        memcpy(&a, got + 4 * i, 4);
        memcpy(&b, output->expected + 4 * i, 4);
        if (!(fabsf(a - b) <= 1e-4f * fabsf(b) + 1e-6f)) return 0;
      }
      return 1;
    case MODEL_OUTPUT_INT8:
    case MODEL_OUTPUT_UINT8:
      for (size_t i = 0; i < output->bytes; ++i) {
        int a = output->kind == MODEL_OUTPUT_INT8 ? (int8_t)got[i] : got[i];
        int b = output->kind == MODEL_OUTPUT_INT8 ? (int8_t)output->expected[i] : output->expected[i];
        if (a - b > 1 || b - a > 1) return 0;
      }
      return 1;
    default:
      return memcmp(got, output->expected, output->bytes) == 0;
  }
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
#if defined(MODEL_PROFILE_DISPATCHES)
  options.dispatch_hook.fn = profile_dispatch;
#endif
  npukit_runtime_t* runtime = NULL;
  iree_status_t status = npukit_runtime_create(&options, &runtime);
  if (!iree_status_is_ok(status)) return fail("creating the runtime", status);
#if defined(MODEL_MYNPU_SRAM_BYTES)
  npukit_mynpu_simulator_backend_initialize(npukit_runtime_allocator(runtime), MODEL_MYNPU_SRAM_BYTES, &npu.simulator);
  npu.base.vtable = &npu_vtable;
  status = npukit_runtime_register_mynpu(runtime, &npu.base);
  if (!iree_status_is_ok(status)) return fail("registering the mynpu simulator", status);
#endif
  uint64_t before = board_instructions();
  status = npukit_model_load(runtime);
  if (!iree_status_is_ok(status)) return fail("loading the model", status);
  print_value("load_instructions", board_instructions() - before);

  // The first run and a second, steady-state one; the second is the figure.
  uint64_t dispatches = 0;
  for (int run = 0; run < 2; ++run) {
    uint64_t dispatches_before = npukit_runtime_stats(runtime).dispatch_count;
#if defined(MODEL_MYNPU_SRAM_BYTES)
    npu_snapshot_t npu_before = npu_snapshot();
#endif
#if defined(MODEL_PROFILE_DISPATCHES)
    profile.recording = run == 1;
#endif
    before = board_instructions();
    status = npukit_model_run(runtime, model_inputs[0], model_output_buffers);
    uint64_t instructions = board_instructions() - before;
    if (!iree_status_is_ok(status)) return fail("running the model", status);
    print_value(run == 0 ? "first_run_instructions" : "instructions", instructions);
    dispatches = npukit_runtime_stats(runtime).dispatch_count - dispatches_before;
#if defined(MODEL_MYNPU_SRAM_BYTES)
    if (run == 1) {
      npu_snapshot_t npu_after = npu_snapshot();
      print_value("npu_cycles", npu_after.cycles - npu_before.cycles);
      print_value("npu_macs", npu_after.macs - npu_before.macs);
      print_value("npu_dispatches", npu_after.streams - npu_before.streams);
      print_value("simulation_instructions", npu_after.simulation_instructions - npu_before.simulation_instructions);
    }
#endif
  }
  print_value("instruction_step", board_instruction_step());
#if defined(MODEL_PROFILE_DISPATCHES)
  profile.recording = 0;
  profile_print();
#endif

  // Every sample's outputs: the first's are in the buffers, the others run now.
  int all_match = 1;
  uint64_t matching = 0;
  for (int sample = 0; sample < MODEL_SAMPLE_COUNT; ++sample) {
    if (sample > 0) {
      status = npukit_model_run(runtime, model_inputs[sample], model_output_buffers);
      if (!iree_status_is_ok(status)) return fail("running the model", status);
    }
    int sample_matches = 1;
    for (int i = 0; i < MODEL_OUTPUT_COUNT; ++i) {
      board_print("npukit: output ");
      board_print_u64((uint64_t)i);
      board_print(" ");
      board_print_hex(model_output_buffers[i], model_outputs[sample][i].bytes);
      board_print("\n");
      sample_matches &= output_matches(&model_outputs[sample][i], (const uint8_t*)model_output_buffers[i]);
    }
    matching += (uint64_t)sample_matches;
    all_match &= sample_matches;
  }
  print_value("samples", MODEL_SAMPLE_COUNT);
  print_value("samples_matching", matching);
  npukit_runtime_stats_t stats = npukit_runtime_stats(runtime);
  print_value("arena_high_water", stats.arena_high_water_mark);
  // The compile-time memory plan's block (inside the arena) and how much of it the runs used.
  print_value("buffer_plan_size", stats.buffer_plan_size);
  print_value("buffer_plan_high_water", stats.buffer_plan_high_water_mark);
  print_value("dispatches", dispatches);  // in the steady-state run
#if defined(MODEL_MYNPU_SRAM_BYTES)
  print_value("npu_sram_bytes", npu.simulator.sram_capacity);  // simulated, taken from the arena
  npukit_mynpu_simulator_backend_deinitialize(&npu.simulator);
#endif
  npukit_runtime_destroy(runtime);
  print_value("stack_high_water", board_stack_high_water());
  print_value("stack_size", board_stack_size());
  board_print(all_match ? "npukit: outputs match the host\n" : "npukit: outputs differ from the host\n");
  return all_match ? 0 : 1;
}
