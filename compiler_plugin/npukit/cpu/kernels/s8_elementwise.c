// The entry point of the elementwise layers' dispatches (an int8 table,
// s8_table.c; an int8 product, s8_mul.c): what npukit_s8_layer does for
// them, in an archive member of its own, so that an executable or firmware
// whose CPU layers are all elementwise (an NPU build's gates and products)
// links these kernels and not every convolution's.
#include "s8_layer.h"

void npukit_s8_table(const int32_t* p, size_t input, size_t output);
void npukit_s8_mul(const int32_t* p, size_t input, size_t output, size_t operand);

int npukit_s8_run_elementwise(const int32_t* p, size_t input, size_t output, size_t operand) {
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_TABLE) {
    npukit_s8_table(p, input, output);
    return 1;
  }
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_MUL) {
    npukit_s8_mul(p, input, output, operand);
    return 1;
  }
  return 0;
}

void npukit_s8_elementwise(size_t params, size_t input, size_t output, size_t operand) {
  int32_t words[NPUKIT_S8_W_COUNT];
  const int32_t* p = npukit_s8_layer_params(params, words);
  if (!npukit_s8_run_elementwise(p, input, output, operand)) __builtin_trap();  // not an elementwise block
}
