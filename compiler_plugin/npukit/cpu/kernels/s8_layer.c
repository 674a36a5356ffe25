// The entry point the compiled dispatches of contractions and averages call
// (see s8_layer.h; the layers without weights have their own, s8_unweighted.c): it
// expands a compact block's words (s8_layer_words.c) and runs the layer. On
// x86 with AVX2 or AVX-512 VNNI the vector kernels (s8_x86.h) take the layer
// unless they leave it to the portable ones.
#include "s8_layer.h"
#include "s8_lanes.h"
#include "s8_x86.h"

void npukit_s8_conv(const int32_t* p, size_t input, size_t output, size_t residual);
void npukit_s8_depthwise(const int32_t* p, size_t input, size_t output, size_t residual);
void npukit_s8_residual_int8(const int32_t* p, size_t residual, size_t output);
void npukit_s8_average(const int32_t* p, size_t input, size_t output, size_t residual);
int32_t npukit_s8_fully_connected(const int32_t* p, size_t input, size_t output);

static void run_layer(const int32_t* p, size_t input, size_t output, size_t residual) {
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_AVERAGE) {
#if NPUKIT_S8_X86
    if (npukit_s8_average_x86(p, input, output, residual)) return;
#endif
    npukit_s8_average(p, input, output, residual);
    return;
  }
  if (p[NPUKIT_S8_W_OUTPUT] == NPUKIT_S8_OUT_ADD && p[NPUKIT_S8_W_RES_BIAS_AT]) {
#if NPUKIT_S8_X86
    if (!npukit_s8_residual_int8_x86(p, residual, output))
#endif
      npukit_s8_residual_int8(p, residual, output);
  }
  if (p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_LANES) {
    npukit_s8_lanes(p, input, output, residual);
    return;
  }
  // The vector kernels run a padded layer from strips of its padded input (s8_padded_x86.c).
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_DEPTHWISE) {
#if NPUKIT_S8_X86
    // The vector kernels read [OUT_C][taps] weights (NPUKIT_S8_WEIGHTS_INT8).
    if (p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_INT8 && npukit_s8_x86_tables(p) &&
        npukit_s8_x86_run(p, input, output, residual, npukit_s8_depthwise_x86, NPUKIT_S8_STRIP_PLANES)) {
      return;
    }
#endif
    npukit_s8_depthwise(p, input, output, residual);
  } else {
#if NPUKIT_S8_X86
    if (npukit_s8_x86_tables(p) &&
        npukit_s8_x86_run(p, input, output, residual, npukit_s8_conv_x86, NPUKIT_S8_STRIP_PLANES)) {
      return;
    }
#endif
    // DSP cores: a batch-1 fully connected layer as a matrix-vector product (s8_fully_connected.c).
    if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_FULLY_CONNECTED && npukit_s8_fully_connected(p, input, output)) return;
    npukit_s8_conv(p, input, output, residual);
  }
}

void npukit_s8_layer(size_t params, size_t input, size_t output, size_t residual) {
  int32_t words[NPUKIT_S8_W_COUNT];
  run_layer(npukit_s8_layer_params(params, words), input, output, residual);
}
