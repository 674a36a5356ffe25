// The entry point of the layers without weights (an int8 table, s8_table.c; an int8 product, s8_mul.c; an
// int8 average or max pool or mean, s8_pool.c; a float32 input's quantization, s8_quantize.c), in an archive
// member of its own apart from npukit_s8_layer's, so that an executable or firmware whose CPU layers are all
// of these (an NPU build's gates, products and pools) links these kernels and not every convolution's.
#include "s8_layer.h"

void npukit_s8_table(const int32_t* p, size_t input, size_t output);
void npukit_s8_mul(const int32_t* p, size_t input, size_t output, size_t operand);
void npukit_s8_pool(const int32_t* p, size_t input, size_t output);
void npukit_s8_quantize(const int32_t* p, size_t input, size_t output);

// Tested kind by kind rather than by a switch: a switch over these dense kinds compiles to a jump table on
// RV32, an indirect jump the firmware's static stack bound cannot follow (tests/compiler/test_stack_bound.py).
static int run_unweighted(const int32_t* p, size_t input, size_t output, size_t operand) {
  const int32_t kind = p[NPUKIT_S8_W_KIND];
  if (kind == NPUKIT_S8_TABLE) {
    npukit_s8_table(p, input, output);
  } else if (kind == NPUKIT_S8_MUL) {
    npukit_s8_mul(p, input, output, operand);
  } else if (kind == NPUKIT_S8_AVERAGE_POOL || kind == NPUKIT_S8_MAX_POOL || kind == NPUKIT_S8_MEAN) {
    npukit_s8_pool(p, input, output);
  } else if (kind == NPUKIT_S8_QUANTIZE) {
    npukit_s8_quantize(p, input, output);
  } else {
    return 0;
  }
  return 1;
}

void npukit_s8_unweighted(size_t params, size_t input, size_t output, size_t operand) {
  int32_t words[NPUKIT_S8_W_COUNT];
  const int32_t* p = npukit_s8_layer_params(params, words);
  if (!run_unweighted(p, input, output, operand)) __builtin_trap();  // a block of another kind
}
