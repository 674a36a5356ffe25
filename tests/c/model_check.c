// Runs a compiled model through npukit's runtime in the ways the sanitizer
// tests need. Linked with one model (its vm-c module, the generated wrapper
// built with NPUKIT_MODEL_GENERIC_ENTRY_POINTS and its executables) and with
// -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,
// --wrap=posix_memalign,--wrap=aligned_alloc: while the runtime works in an
// arena, any heap call from runtime or model code aborts the program.
//
//   model_check run ARENA_BYTES IN... -- OUT_BYTES:OUT_PATH...
//       create, load, run twice, write the outputs; prints the statistics.
//       ARENA_BYTES 0 runs on the system heap instead, where AddressSanitizer
//       sees every object (use after free, double free, leaks at exit)
//   model_check arena-sweep ARENA_BYTES STEPS IN... -- OUT_BYTES:OUT_PATH...
//       runs in STEPS+1 exactly-sized heap arenas from 0 to ARENA_BYTES: each
//       must succeed with the outputs of the largest or fail with
//       RESOURCE_EXHAUSTED (or INVALID_ARGUMENT when the arena cannot even
//       hold the runtime); prints the smallest arena that ran
//   model_check bad-input ETYPE:D0xD1x... ...
//       sets every input as given (zero-filled) and invokes: must fail with
//       INVALID_ARGUMENT, whose message is printed
//   model_check load
//       creates the runtime and loads the module; exit 3 with the message on
//       failure

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npukit/hal/modules.h"
#include "npukit/runtime.h"

iree_status_t npukit_model_load(npukit_runtime_t* runtime);
iree_status_t npukit_model_run(npukit_runtime_t* runtime, const void* const* inputs, void* const* outputs);
extern const char npukit_model_entry_name[];

//===----------------------------------------------------------------------===//
// The heap guard
//===----------------------------------------------------------------------===//

static int heap_forbidden = 0;

static void heap_violation(const char* what, size_t size) {
  fprintf(stderr, "model_check: the runtime called %s(%zu) while running in an arena\n", what, size);
  abort();
}

void* __real_malloc(size_t size);
void* __real_calloc(size_t count, size_t size);
void* __real_realloc(void* ptr, size_t size);
void __real_free(void* ptr);
int __real_posix_memalign(void** out, size_t alignment, size_t size);
void* __real_aligned_alloc(size_t alignment, size_t size);

void* __wrap_malloc(size_t size) {
  if (heap_forbidden) heap_violation("malloc", size);
  return __real_malloc(size);
}
void* __wrap_calloc(size_t count, size_t size) {
  if (heap_forbidden) heap_violation("calloc", count * size);
  return __real_calloc(count, size);
}
void* __wrap_realloc(void* ptr, size_t size) {
  if (heap_forbidden) heap_violation("realloc", size);
  return __real_realloc(ptr, size);
}
void __wrap_free(void* ptr) {
  if (heap_forbidden && ptr) heap_violation("free", 0);
  __real_free(ptr);
}
int __wrap_posix_memalign(void** out, size_t alignment, size_t size) {
  if (heap_forbidden) heap_violation("posix_memalign", size);
  return __real_posix_memalign(out, alignment, size);
}
void* __wrap_aligned_alloc(size_t alignment, size_t size) {
  if (heap_forbidden) heap_violation("aligned_alloc", size);
  return __real_aligned_alloc(alignment, size);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

#define MAX_IO 16

typedef struct blob_t {
  void* data;
  size_t size;
  const char* path;  // outputs: where to write
} blob_t;

static void die(const char* message) {
  fprintf(stderr, "model_check: %s\n", message);
  exit(2);
}

static void* aligned_block(size_t size) {
  void* p = NULL;
  if (__real_posix_memalign(&p, 64, size ? size : 1) != 0) die("out of memory");
  return p;
}

static blob_t read_blob(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) die(strerror(errno));
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  blob_t blob = {aligned_block((size_t)size), (size_t)size, path};
  if (fread(blob.data, 1, blob.size, f) != blob.size) die("short read");
  fclose(f);
  return blob;
}

static void write_blob(const blob_t* blob) {
  FILE* f = fopen(blob->path, "wb");
  if (!f || fwrite(blob->data, 1, blob->size, f) != blob->size) die("cannot write an output");
  fclose(f);
}

// IN... -- OUT_BYTES:OUT_PATH...
static void parse_io(int argc, char** argv, blob_t* inputs, int* input_count, blob_t* outputs, int* output_count) {
  int i = 0;
  *input_count = *output_count = 0;
  for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
    if (*input_count == MAX_IO) die("too many inputs");
    inputs[(*input_count)++] = read_blob(argv[i]);
  }
  for (++i; i < argc; ++i) {
    if (*output_count == MAX_IO) die("too many outputs");
    char* colon = strchr(argv[i], ':');
    if (!colon) die("outputs are BYTES:PATH");
    size_t size = strtoull(argv[i], NULL, 10);
    outputs[(*output_count)++] = (blob_t){aligned_block(size), size, colon + 1};
  }
}

static void free_blobs(blob_t* blobs, int count) {
  for (int i = 0; i < count; ++i) __real_free(blobs[i].data);
}

static void print_status(const char* what, iree_status_t status) {
  char message[1024];
  iree_status_format(status, message, sizeof(message));
  printf("%s: %s\n", what, message);
}

// Creates, loads and runs |runs| times in |arena| with the heap off
// throughout, or on the heap when |arena| is NULL.
static iree_status_t run_in_arena(void* arena, size_t arena_size, const blob_t* inputs, blob_t* outputs,
                                  int output_count, int runs, npukit_runtime_stats_t* out_stats) {
  const void* input_data[MAX_IO];
  void* output_data[MAX_IO];
  for (int i = 0; i < MAX_IO; ++i) input_data[i] = inputs[i].data;
  for (int i = 0; i < output_count; ++i) output_data[i] = outputs[i].data;
  npukit_runtime_options_t options = npukit_runtime_default_options(arena, arena_size);
  options.full_hal = &npukit_full_hal;
  npukit_runtime_t* runtime = NULL;
  heap_forbidden = arena != NULL;
  iree_status_t status = npukit_runtime_create(&options, &runtime);
  if (iree_status_is_ok(status)) status = npukit_model_load(runtime);
  for (int r = 0; r < runs && iree_status_is_ok(status); ++r) {
    status = npukit_model_run(runtime, input_data, output_data);
  }
  if (runtime && out_stats) *out_stats = npukit_runtime_stats(runtime);
  npukit_runtime_destroy(runtime);
  heap_forbidden = 0;
  return status;
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

static int command_run(int argc, char** argv) {
  if (argc < 1) die("run ARENA_BYTES IN... -- OUT_BYTES:OUT_PATH...");
  size_t arena_size = strtoull(argv[0], NULL, 10);
  blob_t inputs[MAX_IO] = {{0}}, outputs[MAX_IO] = {{0}};
  int input_count, output_count;
  parse_io(argc - 1, argv + 1, inputs, &input_count, outputs, &output_count);
  void* arena = arena_size ? aligned_block(arena_size) : NULL;
  npukit_runtime_stats_t stats = {0};
  iree_status_t status = run_in_arena(arena, arena_size, inputs, outputs, output_count, 2, &stats);
  int result = 0;
  if (iree_status_is_ok(status)) {
    for (int i = 0; i < output_count; ++i) write_blob(&outputs[i]);
    printf("arena_high_water_mark=%zu dispatch_count=%llu invocation_count=%llu arena_invalid_frees=%zu\n",
           stats.arena_high_water_mark, (unsigned long long)stats.dispatch_count,
           (unsigned long long)stats.invocation_count, stats.arena_invalid_frees);
  } else {
    print_status("run", status);
    result = 1;
  }
  __real_free(arena);
  free_blobs(inputs, input_count);
  free_blobs(outputs, output_count);
  return result;
}

static int command_arena_sweep(int argc, char** argv) {
  if (argc < 2) die("arena-sweep ARENA_BYTES STEPS IN... -- OUT_BYTES:OUT_PATH...");
  size_t full = strtoull(argv[0], NULL, 10);
  int steps = atoi(argv[1]);
  blob_t inputs[MAX_IO] = {{0}}, want[MAX_IO] = {{0}}, got[MAX_IO] = {{0}};
  int input_count, output_count;
  parse_io(argc - 2, argv + 2, inputs, &input_count, want, &output_count);
  for (int i = 0; i < output_count; ++i) got[i] = (blob_t){aligned_block(want[i].size), want[i].size, NULL};
  int failures = 0;
  {
    void* arena = aligned_block(full);
    iree_status_t status = run_in_arena(arena, full, inputs, want, output_count, 1, NULL);
    __real_free(arena);
    if (!iree_status_is_ok(status)) {
      print_status("the full arena", status);
      failures = steps + 1;
    }
  }
  size_t smallest = 0;
  for (int k = steps; k >= 0 && !failures; --k) {
    size_t size = (size_t)((unsigned long long)full * (unsigned long long)k / (unsigned long long)steps);
    // Exactly |size| bytes of heap: AddressSanitizer catches any access past it.
    void* arena = __real_malloc(size ? size : 1);
    iree_status_t status = run_in_arena(arena, size, inputs, got, output_count, 1, NULL);
    __real_free(arena);
    iree_status_code_t code = iree_status_code(status);
    if (code == IREE_STATUS_OK) {
      for (int i = 0; i < output_count; ++i) {
        if (memcmp(got[i].data, want[i].data, want[i].size) != 0) {
          printf("arena of %zu bytes: output %d differs\n", size, i);
          ++failures;
        }
      }
      smallest = size;
    } else if (code == IREE_STATUS_RESOURCE_EXHAUSTED || code == IREE_STATUS_INVALID_ARGUMENT) {
      if (k == steps) {
        print_status("arena", status);
        ++failures;
      } else if (k % 8 == 0) {
        char label[64];
        snprintf(label, sizeof(label), "arena of %zu bytes", size);
        print_status(label, status);
      } else {
        iree_status_ignore(status);
      }
    } else {
      char label[64];
      snprintf(label, sizeof(label), "arena of %zu bytes: unexpected", size);
      print_status(label, status);
      ++failures;
    }
  }
  printf("smallest_arena_that_ran=%zu failures=%d\n", smallest, failures);
  free_blobs(inputs, input_count);
  free_blobs(want, output_count);
  free_blobs(got, output_count);
  return failures ? 1 : 0;
}

static int command_bad_input(int argc, char** argv) {
  if (argc < 1) die("bad-input ETYPE:D0xD1x... ...");
  static uint8_t arena[64 << 20] __attribute__((aligned(64)));
  npukit_runtime_options_t options = npukit_runtime_default_options(arena, sizeof(arena));
  options.full_hal = &npukit_full_hal;
  npukit_runtime_t* runtime = NULL;
  iree_status_t status = npukit_runtime_create(&options, &runtime);
  if (iree_status_is_ok(status)) status = npukit_model_load(runtime);
  if (!iree_status_is_ok(status)) {
    print_status("load", status);
    return 2;
  }
  for (int i = 0; i < argc && iree_status_is_ok(status); ++i) {
    uint32_t element_type = (uint32_t)strtoul(argv[i], NULL, 16);
    char* dims = strchr(argv[i], ':');
    if (!dims) die("inputs are ETYPE:D0xD1x... (ETYPE in hex)");
    int64_t shape[NPUKIT_HAL_MAX_RANK];
    iree_host_size_t rank = 0;
    uint64_t count = 1;
    for (char* p = dims + 1; *p && rank < NPUKIT_HAL_MAX_RANK;) {
      shape[rank] = strtoll(p, &p, 10);
      count *= (uint64_t)shape[rank++];
      if (*p == 'x') ++p;
    }
    size_t bytes = npukit_hal_element_dense_bytes(element_type, count);
    void* zeros = aligned_block(bytes);
    memset(zeros, 0, bytes);
    status = npukit_runtime_set_input(runtime, (iree_host_size_t)i, element_type, rank, shape, zeros, bytes);
    __real_free(zeros);
  }
  if (iree_status_is_ok(status)) status = npukit_runtime_invoke(runtime, npukit_model_entry_name);
  int result = 1;
  if (iree_status_is_ok(status)) {
    printf("invoke: succeeded on bad inputs\n");
  } else {
    result = iree_status_code(status) == IREE_STATUS_INVALID_ARGUMENT ? 0 : 1;
    print_status("invoke", status);
  }
  npukit_runtime_destroy(runtime);
  return result;
}

static int command_load(void) {
  static uint8_t arena[64 << 20] __attribute__((aligned(64)));
  npukit_runtime_options_t options = npukit_runtime_default_options(arena, sizeof(arena));
  options.full_hal = &npukit_full_hal;
  npukit_runtime_t* runtime = NULL;
  heap_forbidden = 1;
  iree_status_t status = npukit_runtime_create(&options, &runtime);
  if (iree_status_is_ok(status)) status = npukit_model_load(runtime);
  npukit_runtime_destroy(runtime);
  heap_forbidden = 0;
  if (!iree_status_is_ok(status)) {
    print_status("load", status);
    return 3;
  }
  printf("load: ok\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) die("usage: model_check run|arena-sweep|bad-input|load ...");
  if (strcmp(argv[1], "run") == 0) return command_run(argc - 2, argv + 2);
  if (strcmp(argv[1], "arena-sweep") == 0) return command_arena_sweep(argc - 2, argv + 2);
  if (strcmp(argv[1], "bad-input") == 0) return command_bad_input(argc - 2, argv + 2);
  if (strcmp(argv[1], "load") == 0) return command_load();
  die("unknown command");
  return 2;
}
