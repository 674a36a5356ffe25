// The simulator behind the mynpu device's backend interface.

#include <string.h>

#include "npukit/mynpu/backend.h"

static void simulator_query_capabilities(const npukit_mynpu_backend_t* base, npukit_mynpu_capabilities_t* out) {
  const npukit_mynpu_simulator_backend_t* backend = (const npukit_mynpu_simulator_backend_t*)base;
  out->max_sram_bytes = backend->max_sram_bytes;
  out->instruction_mask = 0xFFFFFFFFu;  // the simulator has every instruction
}

static iree_status_t simulator_reserve_sram(npukit_mynpu_simulator_backend_t* backend, uint32_t bytes) {
  if (bytes <= backend->sram_capacity) return iree_ok_status();
  if (bytes > backend->max_sram_bytes) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED,
                            "mynpu simulator: the stream needs %u bytes of SRAM, the simulator was given at most %u",
                            bytes, backend->max_sram_bytes);
  }
  iree_allocator_free(backend->allocator, backend->sram);
  backend->sram = NULL;
  backend->sram_capacity = 0;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(backend->allocator, bytes, (void**)&backend->sram));
  backend->sram_capacity = bytes;
  return iree_ok_status();
}

static iree_status_t simulator_submit(npukit_mynpu_backend_t* base, const npukit_mynpu_submission_t* submission) {
  npukit_mynpu_simulator_backend_t* backend = (npukit_mynpu_simulator_backend_t*)base;
  iree_status_free(backend->pending);
  backend->pending = iree_ok_status();
  if (submission->config->sram_bytes > backend->max_sram_bytes) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED,
                            "mynpu simulator: the stream was compiled for %u bytes of SRAM, the simulator was given "
                            "at most %u",
                            submission->config->sram_bytes, backend->max_sram_bytes);
  }
  npukit_mynpu_stream_t stream;
  memset(&stream, 0, sizeof(stream));
  stream.config = submission->config;
  stream.commands = submission->commands;
  stream.command_bytes = submission->command_bytes;
  stream.bindings = submission->bindings;
  stream.binding_count = submission->binding_count;
  stream.constants = submission->constants;
  stream.constants_length = submission->constants_length;
  stream.register_defaults = submission->register_defaults;
  // A validation run first: it finds the SRAM the stream touches, so only
  // that much is simulated (a 256 MiB configuration does not need 256 MiB).
  npukit_mynpu_counters_t extent;
  backend->pending = npukit_mynpu_run_stream(&stream, &extent);
  if (!iree_status_is_ok(backend->pending)) return iree_ok_status();
  IREE_RETURN_IF_ERROR(simulator_reserve_sram(backend, extent.sram_extent));
  // SRAM starts as zeros for every stream, so results never depend on what ran before.
  if (extent.sram_extent) memset(backend->sram, 0, extent.sram_extent);
  stream.sram = backend->sram;
  stream.sram_length = extent.sram_extent;
  backend->pending = npukit_mynpu_run_stream(&stream, &backend->last);
  if (iree_status_is_ok(backend->pending)) npukit_mynpu_counters_accumulate(&backend->total, &backend->last);
  return iree_ok_status();
}

static iree_status_t simulator_wait(npukit_mynpu_backend_t* base) {
  npukit_mynpu_simulator_backend_t* backend = (npukit_mynpu_simulator_backend_t*)base;
  iree_status_t status = backend->pending;
  backend->pending = iree_ok_status();
  return status;
}

static void simulator_read_counters(const npukit_mynpu_backend_t* base, npukit_mynpu_counters_t* out_last,
                                    npukit_mynpu_counters_t* out_total) {
  const npukit_mynpu_simulator_backend_t* backend = (const npukit_mynpu_simulator_backend_t*)base;
  if (out_last) *out_last = backend->last;
  if (out_total) *out_total = backend->total;
}

static const npukit_mynpu_backend_vtable_t simulator_vtable = {
    simulator_query_capabilities,
    simulator_submit,
    simulator_wait,
    simulator_read_counters,
};

void npukit_mynpu_simulator_backend_initialize(iree_allocator_t allocator, uint32_t max_sram_bytes,
                                               npukit_mynpu_simulator_backend_t* out) {
  memset(out, 0, sizeof(*out));
  out->base.vtable = &simulator_vtable;
  out->allocator = allocator;
  out->max_sram_bytes = max_sram_bytes;
}

void npukit_mynpu_simulator_backend_deinitialize(npukit_mynpu_simulator_backend_t* backend) {
  iree_status_free(backend->pending);
  backend->pending = iree_ok_status();
  iree_allocator_free(backend->allocator, backend->sram);
  backend->sram = NULL;
  backend->sram_capacity = 0;
}
