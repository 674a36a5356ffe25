// Validating and executing one mynpu command stream.
//
// One function does both, so the validator and the simulator cannot
// disagree: with |sram| NULL it only evaluates the stream (register state,
// every range, the cycle model) against the bindings' declared sizes; with
// an SRAM it also executes every instruction bit-exactly.
#ifndef NPUKIT_MYNPU_STREAM_H_
#define NPUKIT_MYNPU_STREAM_H_

#include <stddef.h>
#include <stdint.h>

#include "iree/base/status.h"
#include "npukit/mynpu/isa.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint8_t* data;  // NULL when only validating
  size_t length;  // bytes the stream may address
} npukit_mynpu_binding_t;

typedef struct {
  const npukit_mynpu_config_t* config;
  const uint8_t* commands;
  size_t command_bytes;
  const npukit_mynpu_binding_t* bindings;
  uint32_t binding_count;
  const uint8_t* constants;  // binding 0xFF (may be NULL when validating)
  size_t constants_length;
  // NULL: validate only. Otherwise |sram_length| bytes of simulated SRAM,
  // at least the stream's sram_extent (a validation run gives it), so a
  // large configuration needs only the SRAM its stream touches.
  uint8_t* sram;
  size_t sram_length;
  // Optional: per-layer counters (layer i at index i, up to layer_capacity).
  npukit_mynpu_counters_t* layers;
  uint32_t layer_capacity;
  // Optional: one record per instruction, in order, up to instruction_capacity.
  npukit_mynpu_instruction_cost_t* instructions;
  uint32_t instruction_capacity;
  // Nonzero: the registers start at version 1.2's reset values (1 for
  // KERNEL_*, STRIDE_* and DILATION_*, -128 and 127 for ACT_MIN and
  // ACT_MAX, 0 for the others); zero: all at 0 (versions 1.0 and 1.1).
  uint32_t register_defaults;
} npukit_mynpu_stream_t;

// Validates (and with an SRAM, executes) |stream|. Counters are summed into
// |out_counters| (zeroed first). A malformed stream gives INVALID_ARGUMENT
// naming the command index and the reason.
iree_status_t npukit_mynpu_run_stream(const npukit_mynpu_stream_t* stream, npukit_mynpu_counters_t* out_counters);

// Adds |counters| to |total| (the sums; the SRAM high-water is the larger).
void npukit_mynpu_counters_accumulate(npukit_mynpu_counters_t* total, const npukit_mynpu_counters_t* counters);

// Checks a hardware configuration against the ranges of docs/mynpu-isa.md.
iree_status_t npukit_mynpu_config_check(const npukit_mynpu_config_t* config);

#ifdef __cplusplus
}
#endif

#endif  // NPUKIT_MYNPU_STREAM_H_
