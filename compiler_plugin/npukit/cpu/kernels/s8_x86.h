// Which x86 vector kernels a build has (s8_conv_x86.c, s8_depthwise_x86.c,
// s8_depthwise_vbmi.c, s8_accumulators_x86.c, s8_conv_lanes_x86.c,
// s8_depthwise_lanes_x86.c, and padded layers' strips: s8_padded_x86.c;
// their shared code is s8_x86_vector.h).
//
// NPUKIT_S8_X86 is 512 with AVX-512 VNNI (VL, BW), 256 with AVX2, and 0 on
// every other target, where only the portable kernels are built.
#ifndef NPUKIT_CPU_KERNELS_S8_X86_H_
#define NPUKIT_CPU_KERNELS_S8_X86_H_

#include "s8_layer.h"

#if defined(__x86_64__) && defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__)
#define NPUKIT_S8_X86 512
#elif defined(__x86_64__) && defined(__AVX2__)
#define NPUKIT_S8_X86 256
#else
#define NPUKIT_S8_X86 0
#endif

// Whether the block carries the weight sums every x86 convolution and
// depthwise kernel reads (NPUKIT_S8_W_WEIGHT_SUM_AT): without them the
// portable kernels run the layer.
static inline int npukit_s8_x86_tables(const int32_t* p) { return p[NPUKIT_S8_W_WEIGHT_SUM_AT] != 0; }

// The input a convolution or depthwise kernel reads and the output pixels
// it writes: the layer's own (npukit_s8_x86_whole), or one tile of a padded
// layer's output read from a stack strip that holds its input rows and
// columns with the padding written out (s8_padded_x86.c). Element (c, y, x)
// of the input is at in + c * sc + y * sh + x * sw, where output pixel (y,
// x) of the tile reads its window from row y * STRIDE_H, column x *
// STRIDE_W (no padding left to read); the kernels take every other word
// (kernel, strides, dilations, channels, output strides, tables) from the
// block, and the output and residual binding addresses they are given are
// moved to the tile's first pixel. A `flipped` input holds each value x as
// x XOR 0x80 (x + 128 as an unsigned byte, the operand VPDPBUSD takes), so
// that a kernel reads it without flipping every word it broadcasts.
typedef struct {
  const int8_t* in;
  int32_t sc, sh, sw;
  int32_t oh, ow;  // the output rows and columns of this call
  int32_t flipped;
} npukit_s8_x86_input_t;

// The layer's own input (binding base `input`) and every output pixel.
static inline npukit_s8_x86_input_t npukit_s8_x86_whole(const int32_t* p, size_t input) {
  npukit_s8_x86_input_t v;
  v.in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  v.sc = p[NPUKIT_S8_W_IN_SC], v.sh = p[NPUKIT_S8_W_IN_SH], v.sw = p[NPUKIT_S8_W_IN_SW];
  v.oh = p[NPUKIT_S8_W_OUT_H], v.ow = p[NPUKIT_S8_W_OUT_W];
  v.flipped = 0;
  return v;
}

// The kernels below return 0 when they leave the layer to the portable
// kernel, and decide that from the block's words and the input's strides
// only, never from the tile's output rows and columns: a padded layer's
// tiles are all taken or all left (s8_padded_x86.c relies on it).
typedef int (*npukit_s8_x86_kernel_t)(const int32_t* p, const npukit_s8_x86_input_t* in, size_t output,
                                      size_t residual);
// Hidden: their addresses are taken (npukit_s8_x86_run's `kernel`), and a
// position-independent archive without a C library has no GOT to read them from.
#pragma GCC visibility push(hidden)
int npukit_s8_conv_x86(const int32_t* p, const npukit_s8_x86_input_t* in, size_t output, size_t residual);
int npukit_s8_depthwise_x86(const int32_t* p, const npukit_s8_x86_input_t* in, size_t output, size_t residual);
// With AVX-512 VBMI only (s8_depthwise_vbmi.c); npukit_s8_depthwise_x86 tries it first (it may leave a tile
// that npukit_s8_depthwise_x86 then takes).
int npukit_s8_depthwise_vbmi(const int32_t* p, const npukit_s8_x86_input_t* in, size_t output, size_t residual);
int npukit_s8_average_x86(const int32_t* p, size_t input, size_t output, size_t residual);
int npukit_s8_residual_int8_x86(const int32_t* p, size_t residual, size_t output);
// Channel-last layers with NPUKIT_S8_WEIGHTS_LANES weights (s8_lanes.h): output channels as lanes.
int npukit_s8_conv_lanes_x86(const int32_t* p, const npukit_s8_x86_input_t* in, size_t output, size_t residual);
int npukit_s8_depthwise_lanes_x86(const int32_t* p, const npukit_s8_x86_input_t* in, size_t output,
                                  size_t residual);

// The strips npukit_s8_x86_run gives a kernel: channel planes, channel-last
// (the lane kernels), or channel-last and flipped (npukit_s8_x86_input_t).
enum { NPUKIT_S8_STRIP_PLANES, NPUKIT_S8_STRIP_CHANNELS_LAST, NPUKIT_S8_STRIP_FLIPPED };

// Runs `kernel` on the layer (s8_padded_x86.c): an unpadded layer in one
// call on its own input; a padded one tile by tile from strips of padded
// input on the stack, of the form `strip` (NPUKIT_S8_STRIP_*). 0 when the
// kernel leaves the layer, or a padded layer's smallest tile does not fit a
// strip: the portable kernels run it.
int npukit_s8_x86_run(const int32_t* p, size_t input, size_t output, size_t residual, npukit_s8_x86_kernel_t kernel,
                      int32_t strip);
#pragma GCC visibility pop

#endif  // NPUKIT_CPU_KERNELS_S8_X86_H_
