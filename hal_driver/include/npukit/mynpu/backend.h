// The mynpu device's backend interface: what executes command streams.
//
// The mynpu device (the mynpu-v1 executable loader in npukit's HAL) validates
// executables when they are loaded and, per dispatch, hands a backend one
// validated stream with the dispatch's buffers. Two backends implement this
// interface: the bit-exact, cycle-counting simulator
// (npukit_mynpu_simulator_backend_initialize) and, for real silicon, a
// register-level driver that writes the stream and the binding addresses to
// the NPU's registers, starts it and waits for its interrupt.
#ifndef NPUKIT_MYNPU_BACKEND_H_
#define NPUKIT_MYNPU_BACKEND_H_

#include "iree/base/api.h"
#include "npukit/mynpu/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npukit_mynpu_backend_t npukit_mynpu_backend_t;

// What a backend can run: executables compiled for at most |max_sram_bytes|
// of SRAM and only the instructions in |instruction_mask|.
typedef struct {
  uint32_t max_sram_bytes;
  uint32_t instruction_mask;
} npukit_mynpu_capabilities_t;

// One stream to run. Everything it points to stays valid until wait returns.
typedef struct {
  const npukit_mynpu_config_t* config;  // the configuration the stream was compiled for
  const uint8_t* commands;
  size_t command_bytes;
  const npukit_mynpu_binding_t* bindings;  // the dispatch's buffers, in the export's binding order
  uint32_t binding_count;
  const uint8_t* constants;  // the executable's constant segment (binding 0xFF)
  size_t constants_length;
  uint32_t register_defaults;  // the registers' reset values (npukit_mynpu_stream_t)
} npukit_mynpu_submission_t;

typedef struct {
  void (*query_capabilities)(const npukit_mynpu_backend_t* backend, npukit_mynpu_capabilities_t* out_capabilities);
  // Starts |submission| (a stream the device has validated). At most one
  // submission is in flight: the device waits before it submits again.
  iree_status_t (*submit)(npukit_mynpu_backend_t* backend, const npukit_mynpu_submission_t* submission);
  // Blocks until the submitted stream has finished; its failure, if any.
  iree_status_t (*wait)(npukit_mynpu_backend_t* backend);
  // The counters of the last finished stream and the sum over all streams
  // since the backend was initialized (either may be NULL).
  void (*read_counters)(const npukit_mynpu_backend_t* backend, npukit_mynpu_counters_t* out_last,
                        npukit_mynpu_counters_t* out_total);
} npukit_mynpu_backend_vtable_t;

struct npukit_mynpu_backend_t {
  const npukit_mynpu_backend_vtable_t* vtable;
};

//===----------------------------------------------------------------------===//
// The simulator backend
//===----------------------------------------------------------------------===//

typedef struct {
  npukit_mynpu_backend_t base;
  iree_allocator_t allocator;  // for the simulated SRAM
  uint32_t max_sram_bytes;
  uint8_t* sram;
  uint32_t sram_capacity;
  iree_status_t pending;  // the result of the submitted stream, returned by wait
  npukit_mynpu_counters_t last;
  npukit_mynpu_counters_t total;
} npukit_mynpu_simulator_backend_t;

// The simulator runs a submitted stream to completion in submit (wait returns
// its status). Its SRAM is allocated from |allocator| lazily: as large as
// the most any stream run so far touched (its sram_extent), not the
// configuration's whole SRAM; streams compiled for more than
// |max_sram_bytes| are refused.
void npukit_mynpu_simulator_backend_initialize(iree_allocator_t allocator, uint32_t max_sram_bytes,
                                               npukit_mynpu_simulator_backend_t* out_backend);
void npukit_mynpu_simulator_backend_deinitialize(npukit_mynpu_simulator_backend_t* backend);

#ifdef __cplusplus
}
#endif

#endif  // NPUKIT_MYNPU_BACKEND_H_
