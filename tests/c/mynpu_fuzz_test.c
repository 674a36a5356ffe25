// Mutation testing of the mynpu device's validator and simulator: random bit
// flips and truncations of valid mynpu-v1 executables are parsed (load-time
// validation) and, when accepted, executed on the simulator with bindings and
// an SRAM of exactly the declared sizes (run under AddressSanitizer, so any
// access outside them is caught).
//
//   mynpu_fuzz_test <executable.mnpu>... <mutations> <seed>
//
// Every seed executable must load and run unmutated. Accepted mutants whose
// validated cost exceeds a work budget are counted, not executed: their
// running time follows from their size, which validation has already bounded.

#include <string.h>

#include "npukit/mynpu/executable_format.h"
#include "test_main.h"

#define WORK_BUDGET (16ull << 20)

static uint64_t state = 0x9E3779B97F4A7C15ull;
static uint64_t next_random(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

typedef struct {
  unsigned rejected, accepted, executed, over_budget;
} tally_t;

// Runs every export of a parsed executable: validation only first, then for
// real when the validated cost is within the budget.
static iree_status_t run_all(const npukit_mynpu_executable_info_t* info, tally_t* tally) {
  for (uint32_t e = 0; e < info->export_count; ++e) {
    npukit_mynpu_export_t ex;
    npukit_mynpu_executable_export(info, e, &ex);
    npukit_mynpu_binding_t bindings[NPUKIT_MYNPU_MAX_BINDINGS];
    uint64_t binding_bytes = 0;
    for (uint32_t i = 0; i < ex.binding_count; ++i) binding_bytes += ex.binding_sizes[i];
    if (binding_bytes > WORK_BUDGET) {  // declared sizes larger than anything real; not allocated
      tally->over_budget++;
      continue;
    }
    for (uint32_t i = 0; i < ex.binding_count; ++i) {
      bindings[i].length = ex.binding_sizes[i];
      bindings[i].data = (uint8_t*)malloc(ex.binding_sizes[i] ? ex.binding_sizes[i] : 1);
      for (uint32_t j = 0; j < ex.binding_sizes[i]; ++j) bindings[i].data[j] = (uint8_t)(j * 131u + i * 17u);
    }
    npukit_mynpu_stream_t stream;
    npukit_mynpu_export_stream(info, &ex, bindings, &stream);
    npukit_mynpu_counters_t estimate, counted;
    iree_status_t status = npukit_mynpu_run_stream(&stream, &estimate);
    if (iree_status_is_ok(status)) {
      uint64_t work = estimate.compute_cycles * info->config.pes + estimate.dma_bytes;
      if (work > WORK_BUDGET) {
        tally->over_budget++;
      } else {
        // Exactly the SRAM validation found the stream touches, as the simulator allocates.
        stream.sram = (uint8_t*)calloc(1, estimate.sram_extent ? estimate.sram_extent : 1);
        stream.sram_length = estimate.sram_extent;
        status = npukit_mynpu_run_stream(&stream, &counted);
        free(stream.sram);
        if (iree_status_is_ok(status)) {
          tally->executed++;
          if (counted.cycles != estimate.cycles || counted.macs != estimate.macs) {
            status = iree_make_status(IREE_STATUS_INTERNAL, "execution counted other cycles than validation");
          }
        }
      }
    }
    for (uint32_t i = 0; i < ex.binding_count; ++i) free(bindings[i].data);
    IREE_RETURN_IF_ERROR(status);
  }
  return iree_ok_status();
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s <executable>... <mutations> <seed>\n", argv[0]);
    return 2;
  }
  int seeds = argc - 3;
  unsigned long mutations = strtoul(argv[argc - 2], NULL, 10);
  state ^= strtoull(argv[argc - 1], NULL, 10) * 0x2545F4914F6CDD1Dull;
  uint8_t* data[16];
  size_t size[16];
  tally_t seed_tally = {0};
  for (int s = 0; s < seeds && s < 16; ++s) {
    data[s] = npukit_test_read_file(argv[1 + s], &size[s]);
    if (!data[s]) return 2;
    npukit_mynpu_executable_info_t info;
    EXPECT_OK(npukit_mynpu_executable_parse(iree_make_const_byte_span(data[s], size[s]), &info));
    EXPECT_OK(run_all(&info, &seed_tally));
  }
  if (npukit_test_failures) return 1;

  tally_t tally = {0};
  unsigned truncations = 0;
  for (unsigned long n = 0; n < mutations; ++n) {
    int s = (int)(next_random() % (uint64_t)seeds);
    size_t length = size[s];
    uint8_t* copy = (uint8_t*)malloc(length);
    memcpy(copy, data[s], length);
    uint64_t kind = next_random() % 8;
    if (kind == 0) {
      // Truncate, and in half the cases make the header agree with the new length.
      length = (size_t)(next_random() % length);
      if ((next_random() & 1) && length >= 12) {
        uint32_t total = (uint32_t)length;
        memcpy(copy + 8, &total, 4);
      }
      truncations++;
    } else {
      // Three flips in four land in the header, tables and streams (before
      // the constants); the rest anywhere.
      uint32_t structure;
      memcpy(&structure, data[s] + 40, 4);
      size_t span = (next_random() % 4) && structure > 0 && structure < length ? structure : length;
      int flips = 1 + (int)(next_random() % 4);
      for (int f = 0; f < flips; ++f) {
        size_t at = (size_t)(next_random() % span);
        copy[at] ^= (uint8_t)(1u << (next_random() % 8));
      }
    }
    // An exact-size heap copy, so reads past the end are caught.
    uint8_t* exact = (uint8_t*)malloc(length ? length : 1);
    memcpy(exact, copy, length);
    free(copy);
    npukit_mynpu_executable_info_t info;
    iree_status_t status = npukit_mynpu_executable_parse(iree_make_const_byte_span(exact, length), &info);
    if (iree_status_is_ok(status)) {
      tally.accepted++;
      status = run_all(&info, &tally);
      if (!iree_status_is_ok(status)) {
        // A stream that validation accepted must execute: only the bindings'
        // contents differ, and no instruction depends on them for its ranges.
        npukit_test_consume(status, "an accepted mutant failed to execute");
        npukit_test_failures++;
      }
    } else {
      tally.rejected++;
      iree_status_free(status);
    }
    free(exact);
  }
  printf("mutations: %lu (%u truncations); rejected %u, accepted %u; executed %u exports, %u over the work budget\n",
         mutations, truncations, tally.rejected, tally.accepted, tally.executed, tally.over_budget);
  for (int s = 0; s < seeds; ++s) free(data[s]);
  return npukit_test_failures ? 1 : 0;
}
