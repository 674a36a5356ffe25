// Depthwise layers one column wide on DSP cores: a K x 1 filter per channel
// over an input of width 1 (a 1-D depthwise convolution along the rows, as
// temporal keyword-spotting networks run it over [1, T, 1, C]).
//
// The parameter space (npukit_s8_depthwise_column checks it and returns 0,
// leaving the layer to npukit_s8_depthwise's other paths, outside it):
// - KIND DEPTHWISE, KERNEL_W = IN_W = OUT_W = 1 and PAD_LEFT = PAD_RIGHT = 0
//   (one column wide), or the same with rows and columns swapped (one row
//   high: the layer runs along its columns alike);
// - along that axis any kernel length from 1 to NPUKIT_S8_COLUMN_MAX_TAPS,
//   any stride, dilation 1, any padding before and after (PAD_VALUE);
// - any channel count and channel multiplier (output channel c reads input
//   channel c / M), weights NPUKIT_S8_WEIGHTS_TAPS or NPUKIT_S8_WEIGHTS_INT8;
// - any input and output strides (channel-last or channel-first);
// - TFLite's fixed-point output stage on the small-accumulator path, int8
//   out (no fused ADD, no float output stage);
// - with tap-ordered weights on a channel-last input, at least
//   NPUKIT_S8_COLUMN_MIN_OUTPUTS outputs per channel (fewer run cheaper on
//   s8_depthwise.c's four-channel loop).
//
// Each channel's input column, padding included, is copied into a stack
// strip as int16 values (a band of rows at a time where the column is
// longer than the strip), so the values of neighbouring taps are one
// halfword pair: a word read at any row gives SMLAD two taps, against the
// channel's doubled weights packed in pairs (a zero weight after an odd
// last tap). One channel's band of doubled accumulators is then
// requantized in one run with its constants in registers. A channel-last
// input with a channel multiplier of 1 fills four channels' strips (a
// quarter of the strip each) from one word per row (column_fill4): on
// Cortex-M4, a 98-long stride-2 layer of 120 channels fills its strips and
// pairs its weights in 50,694 instructions against 88,094 value by value.
#include "s8_output.h"

int32_t npukit_s8_depthwise_column(const int32_t* p, size_t input, size_t output, size_t residual);

#define NPUKIT_S8_COLUMN_MAX_TAPS 64
// Outputs per channel from which a tap-ordered channel-last layer runs here.
#define NPUKIT_S8_COLUMN_MIN_OUTPUTS 6
// Input rows (int16) and output rows (int32 accumulators) per band.
#define COLUMN_STRIP_ROWS 1024
#define COLUMN_BAND_OUTPUTS 256

#if defined(__ARM_FEATURE_DSP)
typedef int32_t __attribute__((aligned(2), may_alias)) half_pair_t;
typedef int32_t __attribute__((aligned(1), may_alias)) half_word_t;  // a word at any address

// Doubled accumulators of `n` outputs `step` halfwords apart from `at`, a
// window of `pairs` tap pairs each; `KP` is `pairs` where the caller
// specialises it (0: the loop).
static inline __attribute__((always_inline)) void column_run(const int16_t* at, int32_t step, int32_t n,
                                                             const int32_t* wp, int32_t pairs, int32_t* acc,
                                                             int32_t kp) {
  if (kp) {
    int32_t w[NPUKIT_S8_COLUMN_MAX_TAPS / 2];
#pragma GCC unroll 32
    for (int32_t j = 0; j < kp; ++j) w[j] = wp[j];
    const int32_t step2 = 2 * step;
    for (const int32_t* last = acc + (n & ~1); acc != last; acc += 2, at += step2) {
      const int16_t* b = at + step;
      int32_t a0 = 0, a1 = 0;
#pragma GCC unroll 32
      for (int32_t j = 0; j < kp; ++j) {
        a0 = __smlad(*(const half_pair_t*)(const void*)(at + 2 * j), w[j], a0);
        a1 = __smlad(*(const half_pair_t*)(const void*)(b + 2 * j), w[j], a1);
      }
      acc[0] = a0, acc[1] = a1;
    }
    if (n & 1) {
      int32_t a0 = 0;
#pragma GCC unroll 32
      for (int32_t j = 0; j < kp; ++j) a0 = __smlad(*(const half_pair_t*)(const void*)(at + 2 * j), w[j], a0);
      acc[0] = a0;
    }
    return;
  }
  for (int32_t y = 0; y < n; ++y, at += step) {
    int32_t a0 = 0;
    for (int32_t j = 0; j < pairs; ++j) a0 = __smlad(*(const half_pair_t*)(const void*)(at + 2 * j), wp[j], a0);
    acc[y] = a0;
  }
}

static __attribute__((noinline)) void column_run_any(const int16_t* at, int32_t step, int32_t n, const int32_t* wp,
                                                     int32_t pairs, int32_t* acc) {
  switch (pairs) {
    case 1:
      column_run(at, step, n, wp, pairs, acc, 1);
      break;
    case 2:
      column_run(at, step, n, wp, pairs, acc, 2);
      break;
    case 3:
      column_run(at, step, n, wp, pairs, acc, 3);
      break;
    case 4:
      column_run(at, step, n, wp, pairs, acc, 4);
      break;
    case 5:
      column_run(at, step, n, wp, pairs, acc, 5);
      break;
    default:
      column_run(at, step, n, wp, pairs, acc, 0);
  }
}

// Input rows [r0, r0 + n) of the column at `in` (rows `sh` bytes apart,
// rows outside [0, ih) holding `pad`) as int16 into `to`.
static void column_fill(int16_t* to, const int8_t* in, int32_t sh, int32_t ih, int32_t r0, int32_t n, int8_t pad) {
  int32_t r = r0;
  const int32_t end = r0 + n;
  for (; r < end && r < 0; ++r) *to++ = pad;
  const int32_t inside_end = end < ih ? end : ih;
  const int8_t* from = in + (r < inside_end ? r * sh : 0);
  for (; r + 4 <= inside_end; r += 4, to += 4, from += 4 * sh) {
    const int32_t v0 = from[0], v1 = from[sh], v2 = from[2 * sh], v3 = from[3 * sh];
    to[0] = (int16_t)v0, to[1] = (int16_t)v1, to[2] = (int16_t)v2, to[3] = (int16_t)v3;
  }
  for (; r < inside_end; ++r, from += sh) *to++ = *from;
  for (; r < end; ++r) *to++ = pad;
}

// The same for four neighbouring channels of a channel-last input (`in` their first, each row one word of the
// four), each into its own strip, `pitch` halfwords apart: two rows at a time, their words split (SXTB16) and
// paired by channel (PKHBT, PKHTB), one word store per channel and pair of rows (the strips word-aligned).
static void column_fill4(int16_t* to, int32_t pitch, const int8_t* in, int32_t sh, int32_t ih, int32_t r0, int32_t n,
                         int8_t pad) {
  const int32_t pad4 = (int32_t)((uint32_t)(uint8_t)pad * 0x01010101u);
  npukit_s8_word_t* t = (npukit_s8_word_t*)(void*)to;
  const int32_t wp = pitch / 2;
  int32_t i = 0;
  for (; i + 2 <= n; i += 2, ++t) {
    const int32_t r = r0 + i;
    int32_t a, b;
    if (r >= 0 && r + 1 < ih) {  // both rows inside the input
      const int8_t* at = in + r * sh;
      a = *(const half_word_t*)(const void*)at, b = *(const half_word_t*)(const void*)(at + sh);
    } else {
      a = r >= 0 && r < ih ? *(const half_word_t*)(const void*)(in + r * sh) : pad4;
      b = r + 1 >= 0 && r + 1 < ih ? *(const half_word_t*)(const void*)(in + (r + 1) * sh) : pad4;
    }
    npukit_s8_channel_pairs(t, wp, a, b);
  }
  if (i < n) {  // an odd last row
    const int32_t r = r0 + i;
    const int8_t* v = r >= 0 && r < ih ? in + r * sh : (const int8_t*)0;
    for (int32_t j = 0; j < 4; ++j) to[j * pitch + i] = v ? v[j] : pad;
  }
}

// Channel c's `k` weights (tap-ordered or channel by channel) doubled in pairs into `wp` (a zero weight after an
// odd last tap); returns their sum.
static int32_t column_weights(const int8_t* weights, int32_t taps_form, int32_t c, int32_t k, int32_t* wp) {
  const int8_t* w = taps_form ? weights + (size_t)(c / 4) * k * 4 + c % 4 : weights + (size_t)c * k;
  const int32_t w_step = taps_form ? 4 : 1;
  int32_t sum = 0;
  for (int32_t j = 0; j < (k + 1) / 2; ++j) {
    const int32_t w0 = w[2 * j * w_step], w1 = 2 * j + 1 < k ? w[(2 * j + 1) * w_step] : 0;
    sum += w0 + w1;
    wp[j] = (int32_t)((uint32_t)(uint16_t)(2 * w0) | (uint32_t)(uint16_t)(2 * w1) << 16);
  }
  return sum;
}

// The axis a layer one column (or one row) wide runs along.
typedef struct {
  int32_t k, stride, pad_before, in_len, out_len, in_step, out_step;
} line_t;

// Returns 0 (nothing done) unless the outputs are int8 on the small-accumulator stage.
static __attribute__((noinline)) int32_t column_layer(const int32_t* p, line_t* l, int32_t column, size_t output,
                                                      size_t residual, const int8_t* in, const int8_t* weights) {
  npukit_s8_output_t out = npukit_s8_output(p, output, residual);  // (filled in place: no struct copy)
  if (!out.small || out.mode != NPUKIT_S8_OUT_INT8 || out.fl.table) return 0;
  l->out_step = column ? out.sh : out.sw;
  const npukit_s8_output_t* o = &out;
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], k = l->k, stride = l->stride, oh = l->out_len;
  const int32_t sc = p[NPUKIT_S8_W_IN_SC], zp = p[NPUKIT_S8_W_IN_ZP];
  const int32_t m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
  const int8_t pad = (int8_t)p[NPUKIT_S8_W_PAD_VALUE];
  const int32_t taps_form = p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_TAPS;
  const int32_t pairs = (k + 1) / 2;
  // Outputs per band: their input rows (and the halfword past an odd last
  // tap) within the strip.
  int32_t band = (COLUMN_STRIP_ROWS - 2 * pairs) / stride + 1;
  if (band > COLUMN_BAND_OUTPUTS) band = COLUMN_BAND_OUTPUTS;
  if (band > oh) band = oh;
  int16_t strip[COLUMN_STRIP_ROWS] __attribute__((aligned(4)));
  int32_t acc[COLUMN_BAND_OUTPUTS];
  int32_t wp[NPUKIT_S8_COLUMN_MAX_TAPS / 2];
  // A channel-last input of one output channel per input channel: four channels' strips filled at once, a
  // quarter of the strip each (band4 outputs per band).
  const int32_t quads = sc == 1 && m == 1 ? channels / 4 : 0, quarter = COLUMN_STRIP_ROWS / 4;
  int32_t band4 = (quarter - 2 * pairs) / stride + 1;
  if (band4 > COLUMN_BAND_OUTPUTS) band4 = COLUMN_BAND_OUTPUTS;
  if (band4 > oh) band4 = oh;
  for (int32_t q = 0; q < quads && band4 >= 1; ++q) {
    const int8_t* column = in + 4 * q;
    for (int32_t y0 = 0; y0 < oh; y0 += band4) {
      const int32_t n = oh - y0 < band4 ? oh - y0 : band4;
      const int32_t rows = (n - 1) * stride + 2 * pairs;
      column_fill4(strip, quarter, column, l->in_step, l->in_len, y0 * stride - l->pad_before, rows, pad);
      for (int32_t j = 0; j < 4; ++j) {
        const int32_t c = 4 * q + j;
        const int32_t sum = column_weights(weights, taps_form, c, k, wp);
        column_run_any(strip + j * quarter, stride, n, wp, pairs, acc);
        npukit_s8_requantize_rows(acc, 1, n, 0, 2 * (o->bias[c] - zp * sum), o->multiplier[c], o->shift[c], o->zp,
                                  o->act_min, o->act_max, o->out + c * o->sc + y0 * l->out_step, 0, l->out_step);
      }
    }
  }
  for (int32_t c = band4 >= 1 ? 4 * quads : 0; c < channels; ++c) {
    const int32_t sum = column_weights(weights, taps_form, c, k, wp);
    const int32_t add2 = 2 * (o->bias[c] - zp * sum);
    const int8_t* column = in + (c / m) * sc;
    for (int32_t y0 = 0; y0 < oh; y0 += band) {
      const int32_t n = oh - y0 < band ? oh - y0 : band;
      const int32_t rows = (n - 1) * stride + 2 * pairs;
      column_fill(strip, column, l->in_step, l->in_len, y0 * stride - l->pad_before, rows, pad);
      column_run_any(strip, stride, n, wp, pairs, acc);
      npukit_s8_requantize_rows(acc, 1, n, 0, add2, o->multiplier[c], o->shift[c], o->zp, o->act_min, o->act_max,
                                o->out + c * o->sc + y0 * l->out_step, 0, l->out_step);
    }
  }
  return 1;
}
#endif

int32_t npukit_s8_depthwise_column(const int32_t* p, size_t input, size_t output, size_t residual) {
#if defined(__ARM_FEATURE_DSP)
  const int32_t form = p[NPUKIT_S8_W_WEIGHT_FORM];
  if (p[NPUKIT_S8_W_KIND] != NPUKIT_S8_DEPTHWISE || p[NPUKIT_S8_W_OUTPUT] != NPUKIT_S8_OUT_INT8 ||
      p[NPUKIT_S8_W_FLOAT_AT] != 0 || (form != NPUKIT_S8_WEIGHTS_TAPS && form != NPUKIT_S8_WEIGHTS_INT8)) {
    return 0;
  }
  // Along the rows where the layer is one column wide, else along the
  // columns where it is one row high.
  const int32_t column = p[NPUKIT_S8_W_KERNEL_W] == 1 && p[NPUKIT_S8_W_IN_W] == 1 && p[NPUKIT_S8_W_OUT_W] == 1 &&
                         p[NPUKIT_S8_W_PAD_LEFT] == 0 && p[NPUKIT_S8_W_PAD_RIGHT] == 0;
  const int32_t row = p[NPUKIT_S8_W_KERNEL_H] == 1 && p[NPUKIT_S8_W_IN_H] == 1 && p[NPUKIT_S8_W_OUT_H] == 1 &&
                      p[NPUKIT_S8_W_PAD_TOP] == 0 && p[NPUKIT_S8_W_PAD_BOTTOM] == 0;
  if (!column && !row) return 0;
  const int32_t dilation = column ? p[NPUKIT_S8_W_DILATION_H] : p[NPUKIT_S8_W_DILATION_W];
  line_t l = {  // (filled in place: a copy of the struct would be a memcpy call, which embedded ELFs lack)
      .k = column ? p[NPUKIT_S8_W_KERNEL_H] : p[NPUKIT_S8_W_KERNEL_W],
      .stride = column ? p[NPUKIT_S8_W_STRIDE_H] : p[NPUKIT_S8_W_STRIDE_W],
      .pad_before = column ? p[NPUKIT_S8_W_PAD_TOP] : p[NPUKIT_S8_W_PAD_LEFT],
      .in_len = column ? p[NPUKIT_S8_W_IN_H] : p[NPUKIT_S8_W_IN_W],
      .out_len = column ? p[NPUKIT_S8_W_OUT_H] : p[NPUKIT_S8_W_OUT_W],
      .in_step = column ? p[NPUKIT_S8_W_IN_SH] : p[NPUKIT_S8_W_IN_SW],
      .out_step = 0,
  };
  if (dilation != 1 || l.k < 1 || l.k > NPUKIT_S8_COLUMN_MAX_TAPS || l.stride < 1 || l.out_len < 1) return 0;
  // A channel costs about 250 instructions beyond its outputs here (its
  // weights paired, its strip filled, two calls), which the four-channel
  // loop of tap-ordered channel-last layers shares among four channels and
  // the whole window: on Cortex-M4 that loop is the cheaper one below
  // NPUKIT_S8_COLUMN_MIN_OUTPUTS outputs per channel (keyword spotting's
  // 9 x 1 layers over 120 channels: 4 outputs 55,400 instructions there,
  // 61,120 here; 7 outputs 74,880 there, 71,440 here).
  if (form == NPUKIT_S8_WEIGHTS_TAPS && p[NPUKIT_S8_W_IN_SC] == 1 && l.out_len < NPUKIT_S8_COLUMN_MIN_OUTPUTS) return 0;
  return column_layer(p, &l, column, output, residual, (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET],
                      (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT]);
#else
  (void)p, (void)input, (void)output, (void)residual;
  return 0;
#endif
}
