// npukit's runtime API: run a model compiled by npukit (a vm-c module plus its
// executables) from C, on the host or on a board.
//
//   static uint8_t arena[256 * 1024];
//   npukit_runtime_t* rt;
//   npukit_runtime_options_t options = npukit_runtime_default_options(arena, sizeof(arena));
//   IREE_RETURN_IF_ERROR(npukit_runtime_create(&options, &rt));
//   IREE_RETURN_IF_ERROR(npukit_runtime_register_static_libraries(rt, queries, 1));  // static mode
//   IREE_RETURN_IF_ERROR(npukit_runtime_register_embedded_elf_loader(rt));           // embedded mode
//   IREE_RETURN_IF_ERROR(npukit_runtime_register_mynpu_simulator(rt, 256 * 1024));  // mynpu targets
//   IREE_RETURN_IF_ERROR(npukit_runtime_load_module(rt, kws_int8_create));
//   IREE_RETURN_IF_ERROR(npukit_runtime_set_input(rt, 0, element_type, rank, shape, data, bytes));
//   IREE_RETURN_IF_ERROR(npukit_runtime_invoke(rt, "tf2onnx"));
//   IREE_RETURN_IF_ERROR(npukit_runtime_read_output(rt, 0, out, sizeof(out), &written));
//   npukit_runtime_destroy(rt);
//
// Everything, the runtime included, is allocated from the arena; nothing uses
// the heap. The generated <name>_model.h wraps these calls as
// <name>_load(rt) and <name>_run(rt, inputs, outputs).

#ifndef NPUKIT_RUNTIME_H_
#define NPUKIT_RUNTIME_H_

#include "iree/hal/local/executable_library.h"
#include "iree/vm/api.h"
#include "npukit/hal/buffer_plan.h"
#include "npukit/hal/executable.h"
#include "npukit/mynpu/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npukit_runtime_t npukit_runtime_t;

// The <name>_create function of a vm-c module.
typedef iree_status_t (*npukit_module_create_fn_t)(iree_vm_instance_t* instance, iree_allocator_t allocator,
                                                   iree_vm_module_t** out_module);

struct npukit_full_hal_t;

typedef struct npukit_runtime_options_t {
  // The memory everything is allocated from (16-byte alignment is best).
  // NULL: the system heap (hosted builds only; statistics then report no arena).
  void* arena;
  iree_host_size_t arena_size;
  // &npukit_full_hal (npukit/hal/modules.h) to run modules compiled with the
  // async execution model; NULL keeps that code out of a firmware.
  const struct npukit_full_hal_t* full_hal;
  // Optional, for profiling: told of every dispatch with its export's name
  // (npukit/hal/executable.h).
  npukit_hal_dispatch_hook_t dispatch_hook;
} npukit_runtime_options_t;

static inline npukit_runtime_options_t npukit_runtime_default_options(void* arena, iree_host_size_t arena_size) {
  npukit_runtime_options_t options = {arena, arena_size, NULL, {NULL, NULL}};
  return options;
}

typedef struct npukit_runtime_stats_t {
  iree_host_size_t arena_capacity;
  iree_host_size_t arena_in_use;
  iree_host_size_t arena_high_water_mark;  // bytes, headers included
  uint64_t dispatch_count;                 // executable dispatches so far
  uint64_t invocation_count;
  iree_host_size_t arena_invalid_frees;  // frees the arena refused (0 unless there is a bug)
  // With a memory plan in use: its block (inside the arena, counted once in
  // its high-water mark) and the largest offset + length handed out from it.
  iree_host_size_t buffer_plan_size;
  iree_host_size_t buffer_plan_high_water_mark;
} npukit_runtime_stats_t;

IREE_API_EXPORT iree_status_t npukit_runtime_create(const npukit_runtime_options_t* options,
                                                    npukit_runtime_t** out_runtime);
IREE_API_EXPORT void npukit_runtime_destroy(npukit_runtime_t* runtime);

// Registers static libraries (their <name>_library_query functions) before
// the module that uses them is loaded.
IREE_API_EXPORT iree_status_t npukit_runtime_register_static_libraries(
    npukit_runtime_t* runtime, const iree_hal_executable_library_query_fn_t* queries, iree_host_size_t count);

// Lets the runtime load embedded-ELF executables (the embedded output mode).
// Firmware that never calls this carries no ELF loader.
IREE_API_EXPORT iree_status_t npukit_runtime_register_embedded_elf_loader(npukit_runtime_t* runtime);

// Lets the runtime run mynpu-v1 executables (NPU dispatches) on |backend|,
// which must outlive the runtime. A model compiled for mynpu needs this (or
// the simulator below) before its module is loaded.
IREE_API_EXPORT iree_status_t npukit_runtime_register_mynpu(npukit_runtime_t* runtime, npukit_mynpu_backend_t* backend);

// The same with the mynpu simulator as the backend: bit-exact results and
// counted cycles. Its SRAM (as large as the executables' configuration, at
// most |max_sram_bytes|) comes from the runtime's arena on the first dispatch.
IREE_API_EXPORT iree_status_t npukit_runtime_register_mynpu_simulator(npukit_runtime_t* runtime,
                                                                      uint32_t max_sram_bytes);

// Whether a mynpu device is registered. A generated model registers the
// simulator only when the application has not registered a backend of its
// own (a driver for real silicon, or an instrumented simulator).
IREE_API_EXPORT bool npukit_runtime_has_mynpu(const npukit_runtime_t* runtime);

// The mynpu device's counters: the last NPU dispatch's and the sum over all
// of them (either may be NULL). FAILED_PRECONDITION without a mynpu device.
IREE_API_EXPORT iree_status_t npukit_runtime_mynpu_counters(const npukit_runtime_t* runtime,
                                                            npukit_mynpu_counters_t* out_last,
                                                            npukit_mynpu_counters_t* out_total);

// Creates the module, links it to the HAL modules it depends on and runs its
// initializer (which loads its executables). One module per runtime.
IREE_API_EXPORT iree_status_t npukit_runtime_load_module(npukit_runtime_t* runtime, npukit_module_create_fn_t create);

// Places every buffer the module's invocations allocate (inputs, results,
// transients) at the offsets |plan| fixes (the <name>_buffer_plan of a
// generated model), in one block of plan->size bytes taken from the arena.
// Called after the module is loaded and before the first input is set; a
// runtime on the system heap keeps heap buffers. A buffer request that does
// not match the plan fails with FAILED_PRECONDITION.
IREE_API_EXPORT iree_status_t npukit_runtime_use_buffer_plan(npukit_runtime_t* runtime,
                                                             const npukit_buffer_plan_t* plan);

// Copies input |index| into runtime memory (outside the memory plan) (element type and encoding as in
// npukit/hal/hal_types.h; the shape in elements).
IREE_API_EXPORT iree_status_t npukit_runtime_set_input(npukit_runtime_t* runtime, iree_host_size_t index,
                                                       uint32_t element_type, iree_host_size_t rank,
                                                       const int64_t* shape, const void* data,
                                                       iree_host_size_t byte_length);

// The same without a copy: the module reads input |index| where |data| is
// (which must stay valid and unchanged until the invocation returns). Memory
// not aligned to NPUKIT_HAL_BUFFER_ALIGNMENT (64) bytes is copied instead.
// Generated models bind their inputs, so the runtime holds no input copies.
IREE_API_EXPORT iree_status_t npukit_runtime_bind_input(npukit_runtime_t* runtime, iree_host_size_t index,
                                                        uint32_t element_type, iree_host_size_t rank,
                                                        const int64_t* shape, const void* data,
                                                        iree_host_size_t byte_length);

// Calls an exported function ("tf2onnx", or "module.function") on the inputs
// set so far; its outputs replace the previous ones.
IREE_API_EXPORT iree_status_t npukit_runtime_invoke(npukit_runtime_t* runtime, const char* function);

IREE_API_EXPORT iree_host_size_t npukit_runtime_output_count(const npukit_runtime_t* runtime);
// The output's shape (rank <= |capacity|) and element type.
IREE_API_EXPORT iree_status_t npukit_runtime_output_shape(const npukit_runtime_t* runtime, iree_host_size_t index,
                                                          uint32_t* out_element_type, iree_host_size_t capacity,
                                                          int64_t* out_shape, iree_host_size_t* out_rank);
// Copies output |index| (at most |capacity| bytes; the output must fit).
IREE_API_EXPORT iree_status_t npukit_runtime_read_output(const npukit_runtime_t* runtime, iree_host_size_t index,
                                                         void* data, iree_host_size_t capacity,
                                                         iree_host_size_t* out_byte_length);

IREE_API_EXPORT npukit_runtime_stats_t npukit_runtime_stats(const npukit_runtime_t* runtime);

// The allocator over the arena (for objects an application creates itself).
IREE_API_EXPORT iree_allocator_t npukit_runtime_allocator(npukit_runtime_t* runtime);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_RUNTIME_H_
