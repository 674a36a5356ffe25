// Fully connected layers of one input row (batch 1) on DSP cores: a
// matrix-vector product whose input is split into int16 once and shared by
// every row, four rows at a time (s8_fully_connected_dsp.S), and TFLite's
// fully connected output scaling (round(double(acc) * scale), ties away from
// zero, requantize.h's mynpu_scale_once) computed exactly in integers
// (s8_scale_once.h). The input zero point is subtracted as the input is
// split (SSUB16), once per value, so the weights and bias stay as stored.
//
// The parameter space (npukit_s8_fully_connected checks it from the block's
// words and returns 0, leaving the layer to npukit_s8_conv, outside it; a
// layer's weight form, int8 or int16, is the kernel choice's as for the
// convolution kernel, whose weight layout this kernel reads):
// - KIND FULLY_CONNECTED with one output pixel (OUT_H = OUT_W = 1, no input
//   padding): the input is the K = KERNEL_H * KERNEL_W * IN_C values of the
//   window at (0, 0), in the order (kernel y, kernel x, input channel),
//   one after the other in memory (read as words at any alignment);
// - any K (a K_PADDED above NPUKIT_S8_K_CHUNK a chunk at a time, the
//   weights' blocks of s8_layer.h, each chunk's sums added to the previous
//   chunks'), any OUT_C, any input zero point (subtracted when the input is
//   split);
// - weights NPUKIT_S8_WEIGHTS_INT8 or _INT16 ([OUT_C / 2][K_PADDED / 4][2][4]);
// - OUTPUT INT8 with TFLite's fixed-point stage (any binary64 scales: a
//   zero or normal one in integers, any other on the double arithmetic)
//   and any activation range within int8; any output stride. No int32
//   output, no fused ADD, no float output stage.
//
// The input's int16 copy takes 2 * min(K_PADDED, NPUKIT_S8_K_CHUNK) bytes of
// stack (npukit.stack.dynamic_frames bounds it).
#include "s8_output.h"
#include "s8_scale_once.h"

int32_t npukit_s8_fully_connected(const int32_t* p, size_t input, size_t output);

// The output scaling off npukit_s8_scale_fast's path (s8_scale_once.h), for this kernel's store and the
// other kernels' general stores on cores without double-precision hardware.
__attribute__((noinline)) int32_t npukit_s8_scale_exact(int32_t acc, const uint32_t* bits) {
  return npukit_s8_scale_bits(acc, bits);
}

#if defined(__ARM_FEATURE_DSP)

// Rows whose accumulators are requantized together (a multiple of 4).
#define FC_BLOCK 64

void npukit_s8_fc_quads_dsp(const int32_t* x, const int8_t* weights, const int32_t* x_end, const int32_t* bias,
                            int32_t quads, int32_t* out);
void npukit_s8_fc_quads_dsp16(const int32_t* x, const int8_t* weights, const int32_t* x_end, const int32_t* bias,
                              int32_t quads, int32_t* out);

// Whether the input window's K values lie one after the other in memory:
// a kernel row's channels (IN_C = 1 or IN_SC = 1), its taps and the kernel
// rows side by side.
static int32_t contiguous_input(const int32_t* p) {
  const int32_t ic = p[NPUKIT_S8_W_IN_C], kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  return (ic == 1 || p[NPUKIT_S8_W_IN_SC] == 1) && (kw == 1 || p[NPUKIT_S8_W_IN_SW] == ic) &&
         (kh == 1 || p[NPUKIT_S8_W_IN_SH] == kw * ic);
}

// Input values [k0, k0 + n) (n a multiple of 4), zero point subtracted, into
// `x` as two words per group of four (halfwords (0, 2), (1, 3)); the
// padding of K is 0.
static void split_input(const int32_t* p, const int8_t* in, int32_t k0, int32_t n, int32_t* x) {
  const int32_t zp = p[NPUKIT_S8_W_IN_ZP];
  const int32_t k_left = p[NPUKIT_S8_W_KERNEL_H] * p[NPUKIT_S8_W_KERNEL_W] * p[NPUKIT_S8_W_IN_C] - k0;
  const int32_t k = k_left < n ? k_left : n, k_padded = n;
  const int32_t zp_pair = (int32_t)((uint32_t)(uint16_t)zp * 0x10001u);
  typedef int32_t __attribute__((aligned(1), may_alias)) unaligned_word_t;
  in += k0;
  const unaligned_word_t* words = (const unaligned_word_t*)in;
  int32_t done = 0;
  for (; done + 4 <= k; done += 4, ++words, x += 2) {
    const int32_t w = *words;
    x[0] = (int32_t)__ssub16(__sxtb16(w), zp_pair);
    x[1] = (int32_t)__ssub16(npukit_s8_sxtb16_ror8(w), zp_pair);
  }
  // The last group one value at a time (position r of a group is halfword (0, 2, 1, 3)[r]), zeros after K.
  npukit_s8_half_t* half = (npukit_s8_half_t*)x;
  static const uint8_t order[4] = {0, 2, 1, 3};
  for (int32_t i = done; i < k_padded; ++i) half[order[i - done]] = (int16_t)(i < k ? in[i] - zp : 0);
}

// One channel pair's two sums (an odd last pair of the layer).
static void pair_sums(const int32_t* x, const int8_t* weights, int32_t groups, int32_t wide, const int32_t* bias,
                      int32_t* out) {
  int32_t a0 = bias[0], a1 = bias[1];
  if (wide) {
    const npukit_s8_word_t* w = (const npukit_s8_word_t*)(const void*)weights;
    for (int32_t g = 0; g < groups; ++g, x += 2, w += 4) {
      a0 = __smlad(w[0], x[0], a0), a0 = __smlad(w[1], x[1], a0);
      a1 = __smlad(w[2], x[0], a1), a1 = __smlad(w[3], x[1], a1);
    }
  } else {
    const npukit_s8_word_t* w = (const npukit_s8_word_t*)(const void*)weights;
    for (int32_t g = 0; g < groups; ++g, x += 2, w += 2) {
      a0 = __smlad(__sxtb16(w[0]), x[0], a0), a0 = __smlad(npukit_s8_sxtb16_ror8(w[0]), x[1], a0);
      a1 = __smlad(__sxtb16(w[1]), x[0], a1), a1 = __smlad(npukit_s8_sxtb16_ror8(w[1]), x[1], a1);
    }
  }
  out[0] = a0, out[1] = a1;
}

// Whether the layer is in the parameter space above.
static int32_t fits(const int32_t* p) {
  if (p[NPUKIT_S8_W_KIND] != NPUKIT_S8_FULLY_CONNECTED || p[NPUKIT_S8_W_OUT_H] != 1 || p[NPUKIT_S8_W_OUT_W] != 1 ||
      npukit_s8_padded(p) || !contiguous_input(p) || p[NPUKIT_S8_W_FLOAT_AT] ||
      (p[NPUKIT_S8_W_WEIGHT_FORM] != NPUKIT_S8_WEIGHTS_INT8 && p[NPUKIT_S8_W_WEIGHT_FORM] != NPUKIT_S8_WEIGHTS_INT16)) {
    return 0;
  }
  if (p[NPUKIT_S8_W_OUTPUT] != NPUKIT_S8_OUT_INT8 || !p[NPUKIT_S8_W_SCALE_AT] || p[NPUKIT_S8_W_ACT_MIN] < -128 ||
      p[NPUKIT_S8_W_ACT_MAX] > 127 || p[NPUKIT_S8_W_ACT_MIN] > p[NPUKIT_S8_W_ACT_MAX]) {
    return 0;
  }
  return 1;
}

// `n` outputs from their accumulators.
static __attribute__((noinline)) void store(const int32_t* p, const int32_t* acc, int32_t c0, int32_t n, uint8_t* out, int32_t sc) {
  const uint32_t* scales = (const uint32_t*)(p + p[NPUKIT_S8_W_SCALE_AT]) + 2 * c0;
  const int32_t zp = p[NPUKIT_S8_W_OUT_ZP];
  const int32_t lo = p[NPUKIT_S8_W_ACT_MIN] - zp, hi = p[NPUKIT_S8_W_ACT_MAX] - zp;
  uint8_t* o = out + c0 * sc;
  for (const int32_t* end = acc + n; acc != end; ++acc, o += sc, scales += 2) {
    int32_t v;
    if (__builtin_expect(!npukit_s8_scale_fast(*acc, scales, &v), 0)) v = npukit_s8_scale_exact(*acc, scales);
    // clamp(v + zp, min, max) as clamp(v, min - zp, max - zp) + zp: no overflow.
    *o = (uint8_t)(int8_t)(mynpu_clamp(v, lo, hi) + zp);
  }
}

// One block of `n` rows from c0 over input values [k0, k0 + chunk) split in
// `x`: acc[i] = start[i] + the dot product (start: the bias, or the sums of
// the chunks before).
static void block_sums(const int32_t* p, const int32_t* x, int32_t c0, int32_t n, int32_t k0, int32_t chunk,
                       const int32_t* start, int32_t* acc) {
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], groups = chunk / 4, quads = n / 4;
  const int32_t wide = p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_INT16;
  const int32_t unit = wide ? 4 : 2;  // a channel pair's weight bytes per input value
  // The chunk's block of weights follows the blocks of the chunks before, each of every channel pair.
  const int8_t* w = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT] + (oc + 1) / 2 * unit * k0 + (c0 / 2) * unit * chunk;
  if (quads) {
    if (wide) {
      npukit_s8_fc_quads_dsp16(x, w, x + 2 * groups, start, quads, acc);
    } else {
      npukit_s8_fc_quads_dsp(x, w, x + 2 * groups, start, quads, acc);
    }
  }
  // The remaining one to three rows: one or two channel pairs (an odd last channel's partner has zero weights
  // and a start of its own only when it exists).
  for (int32_t c = 4 * quads; c < n; c += 2) {
    int32_t pair_start[2] = {start[c], c0 + c + 1 < oc ? start[c + 1] : 0};
    pair_sums(x, w + (c / 2) * unit * chunk, groups, wide, pair_start, acc + c);
  }
}

// The layer once it fits, with `x` of 2 * min(K_PADDED, NPUKIT_S8_K_CHUNK)
// bytes for the input: split once when it fits there, else a chunk at a
// time for each block of rows.
static __attribute__((noinline)) void run(const int32_t* p, size_t input, size_t output, int32_t* x) {
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], k_padded = p[NPUKIT_S8_W_K_PADDED];
  const int32_t* bias = p + p[NPUKIT_S8_W_BIAS_AT];
  const int8_t* in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  uint8_t* out = (uint8_t*)output + p[NPUKIT_S8_W_OUT_OFFSET];
  const int32_t sc = p[NPUKIT_S8_W_OUT_SC], chunked = k_padded > NPUKIT_S8_K_CHUNK;
  if (!chunked) split_input(p, in, 0, k_padded, x);
  int32_t acc[FC_BLOCK];
  for (int32_t c0 = 0; c0 < oc; c0 += FC_BLOCK) {
    const int32_t n = oc - c0 < FC_BLOCK ? oc - c0 : FC_BLOCK;
    for (int32_t k0 = 0; k0 < k_padded; k0 += NPUKIT_S8_K_CHUNK) {
      const int32_t chunk = k_padded - k0 < NPUKIT_S8_K_CHUNK ? k_padded - k0 : NPUKIT_S8_K_CHUNK;
      if (chunked) split_input(p, in, k0, chunk, x);
      block_sums(p, x, c0, n, k0, chunk, k0 ? acc : bias + c0, acc);
    }
    store(p, acc, c0, n, out, sc);
  }
}

int32_t npukit_s8_fully_connected(const int32_t* p, size_t input, size_t output) {
  if (!fits(p)) return 0;
  const int32_t k_padded = p[NPUKIT_S8_W_K_PADDED];
  int32_t x[(k_padded < NPUKIT_S8_K_CHUNK ? k_padded : NPUKIT_S8_K_CHUNK) / 2] __attribute__((aligned(8)));
  run(p, input, output, x);
  return 1;
}

#else

int32_t npukit_s8_fully_connected(const int32_t* p, size_t input, size_t output) {
  (void)p, (void)input, (void)output;
  return 0;
}

#endif
