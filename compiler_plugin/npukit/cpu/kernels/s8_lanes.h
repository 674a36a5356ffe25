// Channel-last layers whose output channels are vector lanes
// (NPUKIT_S8_WEIGHTS_LANES): the weight layouts, and the geometry the
// portable kernels (s8_lanes.c) and the x86 vector kernels
// (s8_conv_lanes_x86.c, s8_depthwise_lanes_x86.c) share.
//
// Convolution, 1x1 and fully connected layers: the reduction K = (kernel y,
// kernel x, input channel) of one output pixel is cut into segments of
// LANE_SEGMENT values that lie side by side in a channel-last input (a
// kernel row's taps and channels where the input's columns are dense, else
// one tap's channels), each segment padded with zero weights to a multiple
// of four: a group of four K values is then one 32-bit word of the input.
// Weights [OUT_C / 16 rounded up][groups][16][4]: per block of 16 output
// channels and group, a channel's four weights are one 32-bit lane.
//
// Depthwise layers (channel multiplier M of 1, 2 or 4: output channel c
// reads input channel c / M; the weights are the output channels'): taps in kernel order, padded to a multiple of four with
// zero weights; per block of 64 channels, group of four taps g and quarter
// k, [16][4] bytes: lane 4 * L + i holds channel 64 * block + 16 * L + 4 * k
// + i (the order byte interleaves of four taps' 64 channels leave them in,
// within 128-bit lanes), its four taps 4g .. 4g + 3.
#ifndef NPUKIT_CPU_KERNELS_S8_LANES_H_
#define NPUKIT_CPU_KERNELS_S8_LANES_H_

#include "s8_layer.h"

#define NPUKIT_S8_LANE_BLOCK 16  // convolution output channels per weight block
#define NPUKIT_S8_DW_BLOCK 64    // depthwise channels per weight block

typedef struct {
  int32_t segment;         // K values per segment
  int32_t segment_groups;  // words per segment (padded)
  int32_t per_row;         // segments per kernel row (1, or KERNEL_W)
  int32_t segments;        // per output pixel
  int32_t groups;          // words per output pixel
} npukit_s8_lanes_k_t;

// 0 when LANE_SEGMENT is not a whole kernel row's or one tap's channels.
static inline int32_t npukit_s8_lanes_k(const int32_t* p, npukit_s8_lanes_k_t* k) {
  const int32_t ic = p[NPUKIT_S8_W_IN_C], kw = p[NPUKIT_S8_W_KERNEL_W], kh = p[NPUKIT_S8_W_KERNEL_H];
  k->segment = p[NPUKIT_S8_W_LANE_SEGMENT];
  if (ic < 1 || kw < 1 || kh < 1 || (k->segment != ic && k->segment != kw * ic)) return 0;
  k->segment_groups = (k->segment + 3) / 4;
  k->per_row = kw * ic / k->segment;
  k->segments = kh * k->per_row;
  k->groups = k->segments * k->segment_groups;
  return 1;
}

// Segment s's first input element from an output pixel's first, in elements, where kernel rows are dy
// elements apart and a row's taps dx.
static inline int32_t npukit_s8_lanes_segment_at(const npukit_s8_lanes_k_t* k, int32_t dy, int32_t dx, int32_t s) {
  return s / k->per_row * dy + s % k->per_row * dx;
}

// Byte of the depthwise weights for channel c and tap t (`groups` groups of four taps).
static inline int32_t npukit_s8_dw_weight_at(int32_t c, int32_t t, int32_t groups) {
  const int32_t block = c / NPUKIT_S8_DW_BLOCK, in_block = c % NPUKIT_S8_DW_BLOCK;
  const int32_t quarter = in_block / 4 % 4, lane = in_block / 16 * 4 + in_block % 4;
  return (((block * groups + t / 4) * 4 + quarter) * 16 + lane) * 4 + t % 4;
}

// The portable kernels for this weight form (s8_lanes.c); npukit_s8_layer
// calls npukit_s8_lanes, which tries the x86 vector kernels first.
void npukit_s8_lanes(const int32_t* p, size_t input, size_t output, size_t residual);

#endif  // NPUKIT_CPU_KERNELS_S8_LANES_H_
