// Runs a one-function vm-c module whose executable is mynpu-v1 on npukit's
// runtime with the mynpu simulator, through the hal_loader path (inline
// modules) or the full HAL (async modules): one int8 vector in, one out.
//
//   npu_dispatch_main <function> <input.bin> <output.bin> [sram-limit-bytes [arena-bytes]]
//
// With arena-bytes, everything (the simulated SRAM too) comes from an arena
// of that size instead of the heap. Prints the NPU counters and the arena's
// high-water mark; exits 0 on success, 1 with the status otherwise.

#include <stdio.h>
#include <stdlib.h>

#include "module.h"
#include "npukit/hal/hal_types.h"
#include "npukit/hal/modules.h"
#include "npukit/runtime.h"

static int fail(iree_status_t status, const char* what) {
  char message[1024];
  iree_status_format(status, message, sizeof(message));
  iree_status_free(status);
  printf("error: %s: %s\n", what, message);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  FILE* f = fopen(argv[2], "rb");
  if (!f) return 2;
  static int8_t input[1 << 16], output[1 << 16];
  size_t length = fread(input, 1, sizeof(input), f);
  fclose(f);
  uint32_t sram_limit = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 0) : 16u << 20;
  size_t arena_bytes = argc > 5 ? (size_t)strtoul(argv[5], NULL, 0) : 0;
  void* arena = arena_bytes ? malloc(arena_bytes) : NULL;
  if (arena_bytes && !arena) return 2;

  npukit_runtime_options_t options = npukit_runtime_default_options(arena, arena_bytes);
  options.full_hal = &npukit_full_hal;
  npukit_runtime_t* rt = NULL;
  iree_status_t status = npukit_runtime_create(&options, &rt);
  if (!iree_status_is_ok(status)) {
    free(arena);
    return fail(status, "create");
  }
  status = npukit_runtime_register_mynpu_simulator(rt, sram_limit);
  if (iree_status_is_ok(status)) status = npukit_runtime_load_module(rt, module_create);
  if (!iree_status_is_ok(status)) {
    npukit_runtime_destroy(rt);
    free(arena);
    return fail(status, "load");
  }
  int64_t shape[1] = {(int64_t)length};
  status = npukit_runtime_set_input(rt, 0, NPUKIT_HAL_ELEMENT_TYPE_INT_8, 1, shape, input, length);
  // Twice: counters sum over dispatches, and the second run must equal the first.
  for (int run = 0; run < 2 && iree_status_is_ok(status); ++run) status = npukit_runtime_invoke(rt, argv[1]);
  iree_host_size_t written = 0;
  if (iree_status_is_ok(status)) status = npukit_runtime_read_output(rt, 0, output, sizeof(output), &written);
  npukit_mynpu_counters_t last, total;
  if (iree_status_is_ok(status)) status = npukit_runtime_mynpu_counters(rt, &last, &total);
  if (!iree_status_is_ok(status)) {
    npukit_runtime_destroy(rt);
    free(arena);
    return fail(status, "run");
  }
  npukit_runtime_stats_t stats = npukit_runtime_stats(rt);
  printf("dispatches=%llu macs=%llu cycles=%llu instructions=%llu layers=%u total_cycles=%llu sram_extent=%u "
         "arena_high_water=%llu\n",
         (unsigned long long)stats.dispatch_count, (unsigned long long)last.macs, (unsigned long long)last.cycles,
         (unsigned long long)last.instructions, last.layers, (unsigned long long)total.cycles, last.sram_extent,
         (unsigned long long)stats.arena_high_water_mark);
  npukit_runtime_destroy(rt);
  free(arena);
  f = fopen(argv[3], "wb");
  fwrite(output, 1, written, f);
  fclose(f);
  return 0;
}
