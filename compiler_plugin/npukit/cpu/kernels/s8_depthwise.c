// Depthwise convolution: one filter of KERNEL_H x KERNEL_W taps per channel.
// With a channel multiplier M (NPUKIT_S8_W_MULTIPLIER), output channel c
// reads the plane of input channel c / M (weight form NPUKIT_S8_WEIGHTS_INT8).
// The input zero point is taken out once per channel (zp * the sum of its
// weights, summed here from the weights: kh * kw additions per channel and
// layer call), so the inner loop multiplies the int8 values as they are.
//
// On cores with the DSP extension, 3x3 filters with stride 1 over rows of
// contiguous values compute two neighbouring outputs from one word of each
// input row: SXTB16 splits bytes (0..3) into (0, 2) and (1, 3), SMLAD takes
// taps 0 and 2 of a row at once and SMLABB / SMLATB the middle tap.
// Channel-last layers (weights NPUKIT_S8_WEIGHTS_TAPS) take four channels at
// a time instead: one word of input and one of weights per tap hold the four
// channels' values, SXTB16 splits both, and SMLABB / SMLATT accumulate each
// channel. 3x3 windows with TFLite's output stage run in s8_depthwise_dsp.S:
// the four accumulators stay in registers, are requantized there and stored
// as one word per pixel; two neighbouring pixels per pass where the input's
// column step is the window's or twice it (quads_3x3_dsp).
#include "s8_output.h"
#include "s8_strip.h"

void npukit_s8_depthwise(const int32_t* p, size_t input, size_t output, size_t residual);

typedef struct {
  int32_t oh, ow, sh, sw, step_y, step_x, dy, dx, zp;
} plane_t;

// The sum of `n` weights, `step` bytes apart.
static inline int32_t weight_sum(const int8_t* w, int32_t n, int32_t step) {
  int32_t sum = 0;
  for (int32_t t = 0; t < n; ++t, w += step) sum += *w;
  return sum;
}

// Output channel `c` at (y, x) from its accumulator, through the
// small-accumulator path (the channel's multiplier `m` and shift `s`, or
// the float stage's) when it applies.
static inline void store(const npukit_s8_output_t* o, int32_t acc, int32_t c, int32_t y, int32_t x, int32_t m,
                         int32_t s) {
  if (o->small && o->fl.table) {
    const int32_t v = npukit_s8_float_one(&o->fl.out_clamp, o->fl.table + 3 * c, acc);
    o->out[c * o->sc + y * o->sh + x * o->sw] = (uint8_t)v;
  } else if (o->small) {
    const int32_t v = npukit_s8_narrow(npukit_s8_scale(acc * 2, m, s, o->zp));
    o->out[c * o->sc + y * o->sh + x * o->sw] = (uint8_t)npukit_s8_clamp(v, o->act_min, o->act_max);
  } else {
    npukit_s8_store(o, acc, c, y, x);
  }
}

// One channel, its accumulators starting at `base`; `kh` and `kw` are
// constants where the caller specializes it, so the compiler unrolls the
// window.
static inline __attribute__((always_inline)) void channel(const plane_t* g, const npukit_s8_output_t* o,
                                                          const int8_t* plane, const int8_t* w, int32_t m,
                                                          int32_t s, int32_t base, int32_t c, int32_t kh,
                                                          int32_t kw) {
  for (int32_t y = 0; y < g->oh; ++y) {
    const int8_t* at = plane + y * g->step_y;
    for (int32_t x = 0; x < g->ow; ++x, at += g->step_x) {
      int32_t acc = base;
      for (int32_t i = 0; i < kh; ++i) {
        for (int32_t j = 0; j < kw; ++j) acc += at[i * g->dy + j * g->dx] * w[i * kw + j];
      }
      store(o, acc, c, y, x, m, s);
    }
  }
}

#if defined(__ARM_FEATURE_DSP)
typedef int32_t __attribute__((aligned(1), may_alias)) unaligned_word_t;

// Accumulators per pass of the 3x3 path: computed first, then requantized.
#define ACC_MAX 256

// Accumulators (doubled, without the bias) of the output pairs from `at` on
// until `to` reaches `end`: the bytes x .. x + 3 of each of the three input
// rows give outputs x (taps 0..2, bytes 0..2) and x + 1 (bytes 1..3).
// `taps`: the outer pairs of rows 0..2, then the middle taps (rows 0 and 1;
// row 2), as channel_3x3_dsp packs them.
static __attribute__((noinline)) npukit_s8_word_t* row_pairs_3x3(const int8_t* at, int32_t sh, npukit_s8_word_t* to,
                                                                 const npukit_s8_word_t* end, const int32_t* taps) {
  const int32_t o0 = taps[0], o1 = taps[1], o2 = taps[2], m01 = taps[3], m2 = taps[4];
  int32_t wd, ev, a0, a1;
  __asm__ volatile(
      "1:\n"
      "ldr %[wd], [%[at]]\n"
      "sxtb16 %[ev], %[wd]\n"
      "sxtb16 %[wd], %[wd], ror #8\n"
      "smuad %[a0], %[ev], %[o0]\n"
      "smlabb %[a0], %[wd], %[m01], %[a0]\n"
      "smuad %[a1], %[wd], %[o0]\n"
      "smlatb %[a1], %[ev], %[m01], %[a1]\n"
      "ldr %[wd], [%[at], %[sh]]\n"
      "sxtb16 %[ev], %[wd]\n"
      "sxtb16 %[wd], %[wd], ror #8\n"
      "smlad %[a0], %[ev], %[o1], %[a0]\n"
      "smlabt %[a0], %[wd], %[m01], %[a0]\n"
      "smlad %[a1], %[wd], %[o1], %[a1]\n"
      "smlatt %[a1], %[ev], %[m01], %[a1]\n"
      "ldr %[wd], [%[at], %[sh], lsl #1]\n"
      "sxtb16 %[ev], %[wd]\n"
      "sxtb16 %[wd], %[wd], ror #8\n"
      "smlad %[a0], %[ev], %[o2], %[a0]\n"
      "smlabb %[a0], %[wd], %[m2], %[a0]\n"
      "smlad %[a1], %[wd], %[o2], %[a1]\n"
      "smlatb %[a1], %[ev], %[m2], %[a1]\n"
      "strd %[a0], %[a1], [%[to]], #8\n"
      "adds %[at], #2\n"
      "cmp %[to], %[end]\n"
      "bne 1b\n"
      : [at] "+r"(at), [to] "+r"(to), [wd] "=&r"(wd), [ev] "=&r"(ev), [a0] "=&r"(a0), [a1] "=&r"(a1)
      : [sh] "r"(sh), [end] "r"(end), [o0] "r"(o0), [o1] "r"(o1), [o2] "r"(o2), [m01] "r"(m01), [m2] "r"(m2)
      : "cc", "memory");
  return to;
}

// 3x3, stride 1, dilation 1, input rows contiguous (sw == 1), small path,
// 2 <= ow <= ACC_MAX. Outputs are computed on the input's row pitch: output
// (y, x) is accumulator y * sh + x of a pass, and the columns between the
// output rows are computed and dropped, so a pass over several rows is one
// run of pairs. Weights are doubled (int16 pairs hold them exactly), so the
// accumulators come out as 2 * acc, the operand SMMULR needs.
static void channel_3x3_dsp(const plane_t* g, const npukit_s8_output_t* o, const int8_t* plane, const int8_t* w,
                            int32_t m, int32_t s, int32_t base, int32_t c) {
  // Row i's outer taps as an int16 pair (w0, w2); the middle taps of rows 0
  // and 1 as one pair, row 2's alone.
#define PAIR(a, b) ((int32_t)((uint32_t)(uint16_t)(2 * (a)) | (uint32_t)(uint16_t)(2 * (b)) << 16))
  const int32_t taps[5] = {PAIR(w[0], w[2]), PAIR(w[3], w[5]), PAIR(w[6], w[8]), PAIR(w[1], w[4]), PAIR(w[7], 0)};
#undef PAIR
  const int32_t sh = g->sh, rows_per_pass = (ACC_MAX - g->ow) / sh + 1;
  int32_t acc[ACC_MAX];
  for (int32_t y0 = 0; y0 < g->oh; y0 += rows_per_pass) {
    const int32_t rows = g->oh - y0 < rows_per_pass ? g->oh - y0 : rows_per_pass;
    const int32_t n = (rows - 1) * sh + g->ow;  // >= 2
    const int8_t* at = plane + y0 * sh;
    npukit_s8_word_t* to = row_pairs_3x3(at, sh, acc, acc + (n & ~1), taps);
    if (n & 1) {
      // An odd last output: bytes n - 2 .. n + 1 hold its taps as bytes 1..3.
      const int8_t* last = at + n - 2;
      const int32_t r0 = *(const unaligned_word_t*)last, r1 = *(const unaligned_word_t*)(last + sh),
                    r2 = *(const unaligned_word_t*)(last + 2 * sh);
      int32_t a = __smuad(npukit_s8_sxtb16_ror8(r0), taps[0]);
      a = __smlad(npukit_s8_sxtb16_ror8(r1), taps[1], a);
      a = __smlad(npukit_s8_sxtb16_ror8(r2), taps[2], a);
      a += (int16_t)(__sxtb16(r0) >> 16) * (int16_t)taps[3] + (int16_t)(__sxtb16(r1) >> 16) * (int16_t)(taps[3] >> 16) +
           (int16_t)(__sxtb16(r2) >> 16) * (int16_t)taps[4];
      *to = a;
    }
    if (o->fl.table) {
      npukit_s8_float_doubled(&o->fl, acc, rows, g->ow, sh, 1, 2 * base, o->fl.table + 3 * c,
                              o->out + c * o->sc + y0 * o->sh, o->sh, o->sw);
    } else {
      npukit_s8_requantize_rows(acc, rows, g->ow, sh, 2 * base, m, s, o->zp, o->act_min, o->act_max,
                                o->out + c * o->sc + y0 * o->sh, o->sh, o->sw);
    }
  }
}
#endif

// Channel-last layers (NPUKIT_S8_WEIGHTS_TAPS): weights [OUT_C / 4][taps][4],
// a word per tap of four neighbouring channels.

// The weight of channel `c` at tap `t` of `taps`.
static inline int32_t tap_weight(const int8_t* w, int32_t taps, int32_t c, int32_t t) {
  return w[((c / 4) * taps + t) * 4 + c % 4];
}

// The sum of channel `c`'s weights.
static inline int32_t tap_weight_sum(const int8_t* w, int32_t taps, int32_t c) {
  return weight_sum(w + (c / 4) * taps * 4 + c % 4, taps, 4);
}

// All output pixels of channels [c0, c1), one at a time, through the
// general store; `in` holds the input channel of output channel `first` of
// the first pixel's window (output channel c reads input channel c / m).
static void channels_last_plain(const plane_t* g, const npukit_s8_output_t* o, const int8_t* in, const int8_t* w,
                                int32_t kh, int32_t kw, int32_t m, int32_t first, int32_t c0, int32_t c1) {
  for (int32_t c = c0; c < c1; ++c) {
    const int32_t base = o->bias[c] - g->zp * tap_weight_sum(w, kh * kw, c);
    for (int32_t y = 0; y < g->oh; ++y) {
      for (int32_t x = 0; x < g->ow; ++x) {
        const int8_t* at = in + y * g->step_y + x * g->step_x;
        int32_t acc = base;
        for (int32_t i = 0; i < kh; ++i) {
          for (int32_t j = 0; j < kw; ++j) {
            acc += at[i * g->dy + j * g->dx + c / m - first / m] * tap_weight(w, kh * kw, c, i * kw + j);
          }
        }
        npukit_s8_store(o, acc, c, y, x);
      }
    }
  }
}

#if defined(__ARM_FEATURE_DSP)
// Accumulates tap word `wd` times input word `xd` into four channels.
#define NPUKIT_S8_QUAD_TAP(xd, wd)                                                                 \
  do {                                                                                             \
    const int32_t x02 = __sxtb16(xd), x13 = npukit_s8_sxtb16_ror8(xd);                             \
    const int32_t w02 = __sxtb16(wd), w13 = npukit_s8_sxtb16_ror8(wd);                             \
    a0 = __smlabb(x02, w02, a0);                                                                   \
    a2 = __smlatt(x02, w02, a2);                                                                   \
    a1 = __smlabb(x13, w13, a1);                                                                   \
    a3 = __smlatt(x13, w13, a3);                                                                   \
  } while (0)

// One 3x3 window of four channels, doubled, for each of `n` output pixels
// `step` bytes apart from `at`: the tap at row i, column j is the input word
// at + i * dy + j * dx (column 2 as a register offset shifted by 1), its
// weights wu[2t] = {2 w(c0), 2 w(c2)} and wu[2t + 1] = {2 w(c1), 2 w(c3)}
// (t = 3i + j, unpacked once per layer call, quad_weights_3x3), so a tap is
// one word load, one LDRD, two SXTB16 and four 16x16 multiply-accumulates.
// Each pixel's four sums, from start2 (the doubled bias with the input zero
// point folded in), are stored at acc2 + 4 * pixel.
#define NPUKIT_S8_QUAD_3X3_TAP(dx_operand, w_offset)                                                             \
  "ldr %[x], [%[p]" dx_operand "]\n"                                                                            \
  "ldrd %[u], %[w], [%[wu], #" w_offset "]\n"                                                                   \
  "sxtb16 %[t], %[x]\n"                                                                                         \
  "sxtb16 %[x], %[x], ror #8\n"                                                                                 \
  "smlabb %[a0], %[t], %[u], %[a0]\n"                                                                           \
  "smlatt %[a2], %[t], %[u], %[a2]\n"                                                                           \
  "smlabb %[a1], %[x], %[w], %[a1]\n"                                                                           \
  "smlatt %[a3], %[x], %[w], %[a3]\n"
#define NPUKIT_S8_QUAD_3X3_ROW(w0, w1, w2)                                                                       \
  NPUKIT_S8_QUAD_3X3_TAP("", w0) NPUKIT_S8_QUAD_3X3_TAP(", %[dx]", w1) NPUKIT_S8_QUAD_3X3_TAP(", %[dx], lsl #1", w2)

static __attribute__((noinline)) void quad_run_3x3(const int8_t* at, int32_t step, int32_t dx, int32_t dy,
                                                   const int32_t* wu, const int32_t* start2, int32_t* acc2,
                                                   int32_t n) {
  for (int32_t* end = acc2 + 4 * n; acc2 != end; acc2 += 4, at += step) {
    int32_t a0 = start2[0], a1 = start2[1], a2 = start2[2], a3 = start2[3], x, w, t, u;
    const int8_t* p = at;
    __asm__(NPUKIT_S8_QUAD_3X3_ROW("0", "8", "16") "add %[p], %[p], %[dy]\n"
            NPUKIT_S8_QUAD_3X3_ROW("24", "32", "40") "add %[p], %[p], %[dy]\n"
            NPUKIT_S8_QUAD_3X3_ROW("48", "56", "64")
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [p] "+r"(p), [x] "=&r"(x), [w] "=&r"(w),
              [t] "=&r"(t), [u] "=&r"(u)
            : [dx] "r"(dx), [dy] "r"(dy), [wu] "r"(wu)
            : "memory");
    acc2[0] = a0, acc2[1] = a1, acc2[2] = a2, acc2[3] = a3;
  }
}
#undef NPUKIT_S8_QUAD_3X3_ROW
#undef NPUKIT_S8_QUAD_3X3_TAP

// The doubled, unpacked weights quad_run_3x3 reads, from a quad's nine tap
// words (SADD16 doubles each halfword: |2w| <= 256 fits), and the four
// channels' weight sums (halfword sums of the nine: |sum| <= 9 * 256).
static void quad_weights_3x3(const npukit_s8_word_t* wq, int32_t* wu, int32_t* sums) {
  int32_t even_sum = 0, odd_sum = 0;
  for (int32_t t = 0; t < 9; ++t) {
    const int32_t even = (int32_t)__sxtb16(wq[t]), odd = npukit_s8_sxtb16_ror8(wq[t]);
    wu[2 * t] = (int32_t)__sadd16(even, even), wu[2 * t + 1] = (int32_t)__sadd16(odd, odd);
    even_sum = (int32_t)__sadd16(even_sum, wu[2 * t]), odd_sum = (int32_t)__sadd16(odd_sum, wu[2 * t + 1]);
  }
  // Channels 0, 1, 2, 3: the low and high halves, each twice the sum.
  sums[0] = (int16_t)even_sum / 2, sums[1] = (int16_t)odd_sum / 2;
  sums[2] = (even_sum >> 16) / 2, sums[3] = (odd_sum >> 16) / 2;
}

// The same for a channel multiplier of 2 (npukit_s8_quad_3x3_m2_dsp): per
// tap {2 w(c), 2 w(c + 1)}, {2 w(c + 2), 2 w(c + 3)}.
static void quad_weights_3x3_m2(const npukit_s8_word_t* wq, int32_t* wu, int32_t* sums) {
  const int8_t* b = (const int8_t*)(const void*)wq;
  for (int32_t k = 0; k < 4; ++k) sums[k] = 0;
  for (int32_t t = 0; t < 9; ++t, b += 4) {
    wu[2 * t] = (int32_t)((uint32_t)(uint16_t)(2 * b[0]) | (uint32_t)(uint16_t)(2 * b[1]) << 16);
    wu[2 * t + 1] = (int32_t)((uint32_t)(uint16_t)(2 * b[2]) | (uint32_t)(uint16_t)(2 * b[3]) << 16);
    for (int32_t k = 0; k < 4; ++k) sums[k] += b[k];
  }
}

// Four channels' accumulators at one output pixel: the window's taps (kh x
// kw, constants where the caller specializes) from `at`, weights from `wq`
// on, doubled (the operand SMMULR needs) into `acc2`.
static inline __attribute__((always_inline)) void quad_pixel(const plane_t* g, const int8_t* at,
                                                             const npukit_s8_word_t* wq, const int32_t* start,
                                                             int32_t* acc2, int32_t kh, int32_t kw) {
  int32_t a0 = start[0], a1 = start[1], a2 = start[2], a3 = start[3];
  for (int32_t i = 0; i < kh; ++i, at += g->dy) {
    const int8_t* row = at;
    for (int32_t j = 0; j < kw; ++j, row += g->dx) {
      const int32_t xd = *(const unaligned_word_t*)(const void*)row;
      const int32_t wd = *wq++;
      NPUKIT_S8_QUAD_TAP(xd, wd);
    }
  }
  acc2[0] = 2 * a0, acc2[1] = 2 * a1, acc2[2] = 2 * a2, acc2[3] = 2 * a3;
}

// A quad of channels as s8_depthwise_dsp.S reads it (its word offsets are
// fixed there): the 3x3 window's doubled weights, the doubled starts, the
// requantization constants, the activation bounds as bytes and the steps
// through the input and output planes.
typedef struct {
  int32_t wu[18];
  int32_t start2[4];
  int32_t ms[8];  // per channel its multiplier and its right shift less one
  int32_t zp2;    // 2 * zp + 1
  int32_t lo4, hi4;
  int32_t dx, dy, rewind, out_sw, cols, rows, row_in, row_out;
} quad_3x3_t;
_Static_assert(__builtin_offsetof(quad_3x3_t, row_out) == 160, "s8_depthwise_dsp.S reads these offsets");

void npukit_s8_quad_3x3_dsp(const int8_t* at, uint8_t* out, const quad_3x3_t* q);
void npukit_s8_quad_3x3_full_dsp(const int8_t* at, uint8_t* out, const quad_3x3_t* q);
void npukit_s8_quad_3x3_m2_dsp(const int8_t* at, uint8_t* out, const quad_3x3_t* q);
void npukit_s8_quad_3x3_m2_full_dsp(const int8_t* at, uint8_t* out, const quad_3x3_t* q);

// Two output pixels of a row per pass (s8_depthwise_dsp.S copies this to its
// frame; its word offsets are fixed there): pixel B's window `stride` window
// columns right of pixel A's, so the input's column step is the window's
// (npukit_s8_pair_3x3_dsp) or twice it (_s2_dsp). Per channel its
// multiplier, its right shift e and K = (2 zp + 1) << (e - 1), for right
// shifts of at most PAIR_MAX_SHIFT (K then stays below 2^29).
#define PAIR_MAX_SHIFT 22
typedef struct {
  int32_t start2[8];  // the four channels' doubled starts, twice
  int32_t wu[18];
  int32_t mek[12];
  int32_t lo4, hi4;
  int32_t dy, rewind;
  uint8_t* out;  // the next pair's output
  int32_t out_sw;
  uint8_t* row_end;  // past the current row's last pair
  int32_t out_sh, row_in, row_out, rows, dx, clamp, unused;
} pair_3x3_t;
_Static_assert(sizeof(pair_3x3_t) == 208 && __builtin_offsetof(pair_3x3_t, clamp) == 200,
               "s8_depthwise_dsp.S reads these offsets");

void npukit_s8_pair_3x3_dsp(const int8_t* at, const pair_3x3_t* q);
void npukit_s8_pair_3x3_s2_dsp(const int8_t* at, const pair_3x3_t* q);
void npukit_s8_pair_3x3_m2_dsp(const int8_t* at, const pair_3x3_t* q);
void npukit_s8_pair_3x3_m2_s2_dsp(const int8_t* at, const pair_3x3_t* q);

// Channel-last 3x3 layers on the small path with TFLite's output stage
// (int8 out, sc 1): each quad of channels [4 q0, 4 q1) over the whole plane
// in one call of npukit_s8_quad_3x3_dsp, which keeps the accumulators in
// registers (a channel multiplier `m` of 2: npukit_s8_quad_3x3_m2_dsp), or
// of a pair kernel (npukit_s8_pair_3x3_dsp and its variants) for the pairs
// of pixels of each row; `in` holds input channel 4 q0 / m of the first
// pixel's window.
static void quads_3x3_dsp(const plane_t* g, const npukit_s8_output_t* o, const int8_t* in, const int8_t* w,
                          int32_t m, int32_t q0, int32_t q1) {
  const int32_t lo = o->act_min > -128 ? o->act_min : -128, hi = o->act_max < 127 ? o->act_max : 127;
  // Pairs of output pixels where pixel B's window is one or two window
  // columns right of A's, for quads whose right shifts are at most
  // PAIR_MAX_SHIFT; an odd last column, and the other quads, on the
  // single-pixel loop. A pair saves about 35 instructions against two
  // single pixels (counted from the loops) and its call costs about 60 more
  // than the single loop's (its constants, its frame); with an odd last
  // column the single loop is called as well, about 200 more per quad
  // (measured on Cortex-M4: a 3x3 plane lost 205 per quad to one pair per
  // row), so small planes stay on the single-pixel loop.
  const int32_t pair_stride = g->ow < 2 || g->oh < 1   ? 0
                              : g->step_x == g->dx     ? 1
                              : g->step_x == 2 * g->dx ? 2
                                                       : 0;
  const int32_t pairs = pair_stride && g->oh * (g->ow / 2) >= (g->ow % 2 ? 9 : 3) ? g->ow / 2 : 0;
  quad_3x3_t q;
  pair_3x3_t pq;
  q.zp2 = 2 * o->zp + 1;
  q.lo4 = (int32_t)((uint32_t)(uint8_t)lo * 0x01010101u), q.hi4 = (int32_t)((uint32_t)(uint8_t)hi * 0x01010101u);
  q.dx = g->dx, q.dy = g->dy, q.rewind = g->step_x - 2 * g->dy, q.out_sw = o->sw;
  q.rows = g->oh, q.cols = g->ow;  // (the odd last column of a paired quad: one column)
  q.row_in = g->step_y - g->ow * g->step_x, q.row_out = o->sh - g->ow * o->sw;
  if (pairs) {
    pq.lo4 = q.lo4, pq.hi4 = q.hi4, pq.dx = g->dx, pq.dy = g->dy, pq.clamp = lo != -128 || hi != 127;
    pq.rewind = 2 * g->step_x - 2 * g->dy, pq.out_sw = o->sw, pq.out_sh = o->sh;
    pq.row_in = g->step_y - 2 * pairs * g->step_x, pq.row_out = o->sh - 2 * pairs * o->sw;
    pq.unused = 0;
  }
  for (int32_t k = q0; k < q1; ++k) {
    const int32_t c = 4 * k;
    int32_t sums[4];
    int32_t paired = 0;
    if (pairs) {
      paired = 1;
      for (int32_t j = 0; j < 4; ++j) {
        if (o->shift[c + j] < -PAIR_MAX_SHIFT) paired = 0;
      }
    }
    // The quad's weights where the loop that runs first reads them.
    int32_t* const wu = paired ? pq.wu : q.wu;
    if (m == 2) {
      quad_weights_3x3_m2((const npukit_s8_word_t*)(const void*)(w + (size_t)k * 36), wu, sums);
    } else {
      quad_weights_3x3((const npukit_s8_word_t*)(const void*)(w + (size_t)k * 36), wu, sums);
    }
    for (int32_t j = 0; j < 4; ++j) {
      q.start2[j] = 2 * (o->bias[c + j] - g->zp * sums[j]);
      q.ms[2 * j] = o->multiplier[c + j], q.ms[2 * j + 1] = ~o->shift[c + j];
    }
    const int8_t* at = in + (c - 4 * q0) / m;
    uint8_t* out = o->out + c;
    if (paired) {
      for (int32_t j = 0; j < 4; ++j) {
        const int32_t e = -o->shift[c + j];
        pq.start2[j] = pq.start2[4 + j] = q.start2[j];
        pq.mek[3 * j] = o->multiplier[c + j], pq.mek[3 * j + 1] = e;
        pq.mek[3 * j + 2] = (int32_t)((uint32_t)(2 * o->zp + 1) << (e - 1));
      }
      pq.out = o->out + c, pq.row_end = o->out + c + 2 * pairs * o->sw, pq.rows = g->oh;
      // (Direct calls: a function's address would need the GOT in position-independent code.)
      if (m == 2 && pair_stride == 1) {
        npukit_s8_pair_3x3_m2_dsp(at, &pq);
      } else if (m == 2) {
        npukit_s8_pair_3x3_m2_s2_dsp(at, &pq);
      } else if (pair_stride == 1) {
        npukit_s8_pair_3x3_dsp(at, &pq);
      } else {
        npukit_s8_pair_3x3_s2_dsp(at, &pq);
      }
      if (g->ow == 2 * pairs) continue;
      at += 2 * pairs * g->step_x, out += 2 * pairs * o->sw;  // the odd last column
      for (int32_t j = 0; j < 18; ++j) q.wu[j] = pq.wu[j];
      q.cols = 1, q.row_in = g->step_y - g->step_x, q.row_out = o->sh - o->sw;
    }
    if (m == 2) {
      if (lo == -128 && hi == 127) {
        npukit_s8_quad_3x3_m2_full_dsp(at, out, &q);
      } else {
        npukit_s8_quad_3x3_m2_dsp(at, out, &q);
      }
    } else if (lo == -128 && hi == 127) {
      npukit_s8_quad_3x3_full_dsp(at, out, &q);
    } else {
      npukit_s8_quad_3x3_dsp(at, out, &q);
    }
    if (paired) q.cols = g->ow, q.row_in = g->step_y - g->ow * g->step_x, q.row_out = o->sh - g->ow * o->sw;
  }
}

// Output pixels per pass of the channel-last path: their four channels'
// accumulators are computed first, then each channel's are requantized in
// one run with its constants in registers.
#define QUAD_PASS 64

static inline __attribute__((always_inline)) void quad_channel_loop(const npukit_s8_output_t* o,
                                                                    const int32_t* acc2, int32_t rows,
                                                                    int32_t cols, int32_t m, int32_t s,
                                                                    uint8_t* to, int32_t range) {
  const int32_t zp = o->zp, lo = o->act_min, hi = o->act_max;
  const int32_t sh = o->sh, sw = o->sw;
  for (int32_t r = 0; r < rows; ++r, to += sh) {
    uint8_t* at = to;
    for (const int32_t* end = acc2 + 4 * cols; acc2 != end; acc2 += 4, at += sw) {
      *at = (uint8_t)npukit_s8_output_small(*acc2, m, s, zp, lo, hi, range);
    }
  }
}

// One channel's outputs of a pass: `rows` x `cols` pixels, doubled
// accumulators every 4 words from `acc2`, stored from `to` on.
static void requantize_quad_channel(const npukit_s8_output_t* o, const int32_t* acc2, int32_t rows, int32_t cols,
                                    int32_t m, int32_t s, uint8_t* to) {
  NPUKIT_S8_BY_RANGE(o->act_min, o->act_max, quad_channel_loop(o, acc2, rows, cols, m, s, to, range))
}

// Channel-last, small path, int8 out: channels [c0, c1) (c0 a multiple of
// four, `in` holding the input channel of c0 of the first pixel's window)
// four at a time, each from its bias with the input zero point folded in
// (3x3 windows without the float stage: quads_3x3_dsp); channels beyond a
// multiple of four take the plain loop. A channel multiplier `m` of 2 runs
// on quads_3x3_dsp only, every other layer with one on the plain loop.
static void channels_last_dsp(const plane_t* g, const npukit_s8_output_t* o, const int8_t* in, const int8_t* w,
                              int32_t m, int32_t c0, int32_t c1, int32_t kh, int32_t kw) {
  const int32_t q0 = c0 / 4, q1 = q0 + (c1 - c0) / 4, taps = kh * kw;
  const int32_t rows_per_pass = g->ow <= QUAD_PASS ? QUAD_PASS / g->ow : 1;
  const int32_t cols_per_pass = g->ow <= QUAD_PASS ? g->ow : QUAD_PASS;
  const int32_t three = kh == 3 && kw == 3;
  if (three && !o->fl.table && (m == 1 || m == 2)) {
    quads_3x3_dsp(g, o, in, w, m, q0, q1);
    channels_last_plain(g, o, in, w, kh, kw, m, c0, 4 * q1, c1);
    return;
  }
  if (m != 1) {
    channels_last_plain(g, o, in, w, kh, kw, m, c0, c0, c1);
    return;
  }
  int32_t acc2[4 * QUAD_PASS];
  int32_t wu[18];  // a 3x3 quad's unpacked weights
  for (int32_t q = q0; q < q1; ++q) {
    const int32_t c = 4 * q;
    const npukit_s8_word_t* wq = (const npukit_s8_word_t*)(const void*)(w + (size_t)q * taps * 4);
    int32_t sums[4], start[4], start2[4];
    if (three) {
      quad_weights_3x3(wq, wu, sums);
    } else {
      for (int32_t k = 0; k < 4; ++k) sums[k] = tap_weight_sum(w, taps, c + k);
    }
    for (int32_t k = 0; k < 4; ++k) {
      start[k] = o->bias[c + k] - g->zp * sums[k];
      start2[k] = 2 * start[k];
    }
    for (int32_t y0 = 0; y0 < g->oh; y0 += rows_per_pass) {
      const int32_t rows = g->oh - y0 < rows_per_pass ? g->oh - y0 : rows_per_pass;
      for (int32_t x0 = 0; x0 < g->ow; x0 += cols_per_pass) {
        const int32_t cols = g->ow - x0 < cols_per_pass ? g->ow - x0 : cols_per_pass;
        int32_t* a = acc2;
        for (int32_t r = 0; r < rows; ++r, a += 4 * cols) {
          const int8_t* at = in + (y0 + r) * g->step_y + x0 * g->step_x + (c - c0);
          if (three) {
            quad_run_3x3(at, g->step_x, g->dx, g->dy, wu, start2, a, cols);
          } else {
            int32_t* b = a;
            for (int32_t x = 0; x < cols; ++x, at += g->step_x, b += 4) quad_pixel(g, at, wq, start, b, kh, kw);
          }
        }
        uint8_t* to = o->out + y0 * o->sh + x0 * o->sw + c;
        for (int32_t k = 0; k < 4; ++k) {
          if (o->fl.table) {
            npukit_s8_float_doubled(&o->fl, acc2 + k, rows, cols, 4 * cols, 4, 0, o->fl.table + 3 * (c + k), to + k,
                                    o->sh, o->sw);
          } else {
            requantize_quad_channel(o, acc2 + k, rows, cols, o->multiplier[c + k], o->shift[c + k], to + k);
          }
        }
      }
    }
  }
  channels_last_plain(g, o, in, w, kh, kw, 1, c0, 4 * q1, c1);
}
#endif

// Channel-last layers (NPUKIT_S8_WEIGHTS_TAPS): channels [c0, c1) (c0 a
// multiple of four), `in` holding the input channel of c0 (c0 / the channel
// multiplier) of the first pixel's window.
static void channels_last(const int32_t* p, const plane_t* g, const npukit_s8_output_t* o, const int8_t* in,
                          const int8_t* w, int32_t c0, int32_t c1) {
  const int32_t kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
#if defined(__ARM_FEATURE_DSP)
  if (o->small && o->mode == NPUKIT_S8_OUT_INT8 && o->sc == 1 && p[NPUKIT_S8_W_IN_SC] == 1) {
    channels_last_dsp(g, o, in, w, m, c0, c1, kh, kw);
    return;
  }
#endif
  channels_last_plain(g, o, in, w, kh, kw, m, c0, c0, c1);
}

// The output pixels `g` gives, their windows read from `in` on (the whole
// layer, or the interior of a padded one); with `planes`, a channel-first
// layer's input channels each copied with its padding into `strip` first
// and read from there (`g` then addresses the strip).
static void depthwise_plane(const int32_t* p, const plane_t* gp, const npukit_s8_output_t* o, const int8_t* in,
                            const int8_t* weights, npukit_s8_strip_source_t* planes, int8_t* strip) {
  const plane_t g = *gp;
  const int32_t channels = p[NPUKIT_S8_W_OUT_C];
  const int32_t kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  if (p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_TAPS) {
    channels_last(p, &g, o, in, weights, 0, channels);
    return;
  }
#if defined(__ARM_FEATURE_DSP)
  const int32_t word_pairs = kh == 3 && kw == 3 && p[NPUKIT_S8_W_STRIDE_H] == 1 && p[NPUKIT_S8_W_STRIDE_W] == 1 &&
                             p[NPUKIT_S8_W_DILATION_H] == 1 && p[NPUKIT_S8_W_DILATION_W] == 1 && g.sw == 1 &&
                             g.ow >= 2 && g.ow <= ACC_MAX && o->small;
#endif
  const int32_t multiplier = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
  const int32_t padded_h = planes ? planes->top + planes->ih + p[NPUKIT_S8_W_PAD_BOTTOM] : 0;
  for (int32_t c = 0, filled = -1; c < channels; ++c) {
    const int8_t* plane = in + (c / multiplier) * p[NPUKIT_S8_W_IN_SC];
    if (planes) {
      if (c / multiplier != filled) {
        filled = c / multiplier;
        planes->in = plane;
        npukit_s8_fill_strip(strip, planes, 0, padded_h);
      }
      plane = strip;
    }
    const int8_t* w = weights + c * kh * kw;
    const int32_t m = o->multiplier[c], s = o->shift[c];
    // The input zero point folded into the bias: bias - zp * sum(w).
    const int32_t base = o->bias[c] - g.zp * weight_sum(w, kh * kw, 1);
#if defined(__ARM_FEATURE_DSP)
    if (word_pairs) {
      channel_3x3_dsp(&g, o, plane, w, m, s, base, c);
      continue;
    }
#endif
    if (kh == 3 && kw == 3) {
      channel(&g, o, plane, w, m, s, base, c, 3, 3);
    } else {
      channel(&g, o, plane, w, m, s, base, c, kh, kw);
    }
  }
}

// Input padding (s8_layer.h). The output rows [lo, hi) whose windows lie
// within the input along one dimension: y * stride - pad >= 0 and
// y * stride - pad + reach <= size - 1.
static void inside_range(int32_t pad, int32_t stride, int32_t reach, int32_t size, int32_t out, int32_t* lo,
                         int32_t* hi) {
  const int32_t last = size - 1 - reach + pad;  // the largest y * stride inside
  *lo = (pad + stride - 1) / stride;
  *hi = last < 0 ? 0 : last / stride + 1;
  if (*hi > out) *hi = out;
  if (*lo > *hi) *lo = *hi;
}

// Channels a border pixel's accumulators are computed for at a time.
#define BORDER_CHANNELS 32

// The output pixels outside rows [y0, y1) x columns [x0, x1). Each channel
// starts from bias + (PAD_VALUE - IN_ZP) * the sum of its weights, as if
// every tap read the padding, and each tap inside the input adds
// (x - PAD_VALUE) * w: the taps in the padding cost nothing, those inside
// one multiply-accumulate each, channels innermost (a channel-last pixel's
// values side by side).
static void border_pixels(const int32_t* p, const npukit_s8_output_t* o, const int8_t* in, const int8_t* weights,
                          int32_t y0, int32_t y1, int32_t x0, int32_t x1) {
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], oh = p[NPUKIT_S8_W_OUT_H], ow = p[NPUKIT_S8_W_OUT_W];
  const int32_t kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W], taps = kh * kw;
  const int32_t ih = p[NPUKIT_S8_W_IN_H], iw = p[NPUKIT_S8_W_IN_W], pad = p[NPUKIT_S8_W_PAD_VALUE];
  const int32_t sc = p[NPUKIT_S8_W_IN_SC], sh = p[NPUKIT_S8_W_IN_SH], sw = p[NPUKIT_S8_W_IN_SW];
  const int32_t stride_h = p[NPUKIT_S8_W_STRIDE_H], stride_w = p[NPUKIT_S8_W_STRIDE_W];
  const int32_t dil_h = p[NPUKIT_S8_W_DILATION_H], dil_w = p[NPUKIT_S8_W_DILATION_W];
  const int32_t top = p[NPUKIT_S8_W_PAD_TOP], left = p[NPUKIT_S8_W_PAD_LEFT];
  const int32_t tap_form = p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_TAPS;
  const int32_t multiplier = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
  const int32_t tap_step = tap_form ? 4 : 1;  // bytes from a channel's weight of tap t to that of tap t + 1
  int32_t base[BORDER_CHANNELS], acc[BORDER_CHANNELS], x_at[BORDER_CHANNELS], w_at[BORDER_CHANNELS];
  for (int32_t c0 = 0; c0 < channels; c0 += BORDER_CHANNELS) {
    const int32_t n = channels - c0 < BORDER_CHANNELS ? channels - c0 : BORDER_CHANNELS;
    for (int32_t k = 0; k < n; ++k) {
      const int32_t c = c0 + k;
      const int32_t sum = tap_form ? tap_weight_sum(weights, taps, c) : weight_sum(weights + c * taps, taps, 1);
      base[k] = o->bias[c] + (pad - p[NPUKIT_S8_W_IN_ZP]) * sum;
      x_at[k] = (c / multiplier) * sc;
      w_at[k] = tap_form ? ((c / 4) * taps * 4 + c % 4) : c * taps;
    }
    for (int32_t y = 0; y < oh; ++y) {
      const int32_t iy0 = y * stride_h - top;
      int32_t i0 = 0, i1 = kh;  // the kernel rows inside the input
      while (i0 < kh && iy0 + i0 * dil_h < 0) ++i0;
      while (i1 > i0 && iy0 + (i1 - 1) * dil_h >= ih) --i1;
      const int32_t row_inside = y >= y0 && y < y1;
      for (int32_t x = 0; x < ow; ++x) {
        if (row_inside && x == x0) {  // the interior's pixels are done
          x = x1 - 1;
          continue;
        }
        const int32_t ix0 = x * stride_w - left;
        int32_t j0 = 0, j1 = kw;
        while (j0 < kw && ix0 + j0 * dil_w < 0) ++j0;
        while (j1 > j0 && ix0 + (j1 - 1) * dil_w >= iw) --j1;
        for (int32_t k = 0; k < n; ++k) acc[k] = base[k];
        for (int32_t i = i0; i < i1; ++i) {
          for (int32_t j = j0; j < j1; ++j) {
            const int8_t* xp = in + (iy0 + i * dil_h) * sh + (ix0 + j * dil_w) * sw;
            const int8_t* wp = weights + (i * kw + j) * tap_step;
            for (int32_t k = 0; k < n; ++k) acc[k] += (xp[x_at[k]] - pad) * wp[w_at[k]];
          }
        }
        for (int32_t k = 0; k < n; ++k) npukit_s8_store(o, acc[k], c0 + k, y, x);
      }
    }
  }
}

// A padded channel-last layer whose windows' rows fit NPUKIT_S8_STRIP_BYTES: bands
// of output rows, each from a strip of its input rows with the padding
// written out (rows and columns of PAD_VALUE), on the paths above. Returns 0
// when the layer does not fit (the caller then takes interior and borders).
// (Not inlined: its strip is on the stack only while a padded layer runs.)
static __attribute__((noinline)) int32_t padded_strips(const int32_t* p, const plane_t* g, const int8_t* in,
                                                       const int8_t* weights, size_t output, size_t residual) {
  const int32_t c_in = p[NPUKIT_S8_W_IN_C], ih = p[NPUKIT_S8_W_IN_H], iw = p[NPUKIT_S8_W_IN_W];
  const int32_t left = p[NPUKIT_S8_W_PAD_LEFT], right = p[NPUKIT_S8_W_PAD_RIGHT], top = p[NPUKIT_S8_W_PAD_TOP];
  const int32_t stride_h = p[NPUKIT_S8_W_STRIDE_H];
  const int32_t reach = (p[NPUKIT_S8_W_KERNEL_H] - 1) * p[NPUKIT_S8_W_DILATION_H] + 1;
  const int32_t row_bytes = (left + iw + right) * c_in;
  if (p[NPUKIT_S8_W_IN_SC] != 1 || (int64_t)reach * row_bytes > NPUKIT_S8_STRIP_BYTES) return 0;
  int32_t band = (NPUKIT_S8_STRIP_BYTES / row_bytes - reach) / stride_h + 1;  // output rows per strip
  if (band > g->oh) band = g->oh;
  int8_t strip[NPUKIT_S8_STRIP_BYTES + 4] __attribute__((aligned(4)));  // + 4: word reads of the last values
  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  uint8_t* const out = o.out;
  const uint8_t* const res = o.residual;
  const int32_t out_bytes = o.mode == NPUKIT_S8_OUT_INT32 ? 4 : 1;
  const plane_t s = {
      .oh = band, .ow = g->ow, .sh = row_bytes, .sw = c_in, .step_y = stride_h * row_bytes,
      .step_x = p[NPUKIT_S8_W_STRIDE_W] * c_in, .dy = p[NPUKIT_S8_W_DILATION_H] * row_bytes,
      .dx = p[NPUKIT_S8_W_DILATION_W] * c_in, .zp = g->zp,
  };
  const npukit_s8_strip_source_t source = {
      .in = in, .ih = ih, .iw = iw, .sh = p[NPUKIT_S8_W_IN_SH], .sw = p[NPUKIT_S8_W_IN_SW], .channels = c_in,
      .top = top, .left = left, .right = right, .pad = (int8_t)p[NPUKIT_S8_W_PAD_VALUE],
  };
  for (int32_t y = 0; y < g->oh; y += band) {
    const int32_t rows = g->oh - y < band ? g->oh - y : band;
    npukit_s8_fill_strip(strip, &source, y * stride_h, (rows - 1) * stride_h + reach);
    plane_t band_plane = s;
    band_plane.oh = rows;
    o.out = out + y * o.sh * out_bytes;
    if (res) o.residual = res + y * o.add.res_sh;
    depthwise_plane(p, &band_plane, &o, strip, weights, 0, 0);
  }
  return 1;
}

// A padded channel-first layer whose padded input plane fits
// NPUKIT_S8_STRIP_BYTES: each input channel's plane copied with its padding
// into a strip, the channel's outputs computed from it on the unpadded
// paths. Returns 0 when the layer does not fit.
// (Not inlined: its strip is on the stack only while a padded layer runs.)
static __attribute__((noinline)) int32_t padded_planes(const int32_t* p, const plane_t* g,
                                                       const npukit_s8_output_t* o, const int8_t* in,
                                                       const int8_t* weights) {
  const int32_t left = p[NPUKIT_S8_W_PAD_LEFT], right = p[NPUKIT_S8_W_PAD_RIGHT];
  const int32_t top = p[NPUKIT_S8_W_PAD_TOP], bottom = p[NPUKIT_S8_W_PAD_BOTTOM];
  const int32_t ih = p[NPUKIT_S8_W_IN_H], iw = p[NPUKIT_S8_W_IN_W];
  const int32_t width = left + iw + right;
  if (p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_TAPS ||
      (int64_t)(top + ih + bottom) * width > NPUKIT_S8_STRIP_BYTES) {
    return 0;
  }
  int8_t strip[NPUKIT_S8_STRIP_BYTES + 4] __attribute__((aligned(4)));  // + 4: word reads of the last values
  npukit_s8_strip_source_t planes = {
      .in = in, .ih = ih, .iw = iw, .sh = p[NPUKIT_S8_W_IN_SH], .sw = p[NPUKIT_S8_W_IN_SW], .channels = 1,
      .top = top, .left = left, .right = right, .pad = (int8_t)p[NPUKIT_S8_W_PAD_VALUE],
  };
  const plane_t s = {
      .oh = g->oh, .ow = g->ow, .sh = width, .sw = 1, .step_y = p[NPUKIT_S8_W_STRIDE_H] * width,
      .step_x = p[NPUKIT_S8_W_STRIDE_W], .dy = p[NPUKIT_S8_W_DILATION_H] * width,
      .dx = p[NPUKIT_S8_W_DILATION_W], .zp = g->zp,
  };
  depthwise_plane(p, &s, o, in, weights, &planes, strip);
  return 1;
}

// Padded channel-last layers (NPUKIT_S8_WEIGHTS_TAPS) whose padded window
// rows do not fit a strip: the interior (every window within the input) read
// in place, the border pixels (the rows above and below it, the columns
// left and right of it) in tiles, each a window of the padded input (its
// padding written out) holding a group of channels, run on the same paths.

// A word of the input at any address (single loads on Armv7E-M).
typedef int32_t __attribute__((aligned(1), may_alias)) input_word_t;

// The padded input's rows [r0, r0 + nr) x columns [x0, x0 + nx) (counted in
// the padded input from its top left corner), channels [c0, c0 + n), into
// `strip`: `width` bytes per pixel (n rounded up to four), row after row.
static void fill_window(int8_t* strip, const int32_t* p, const int8_t* in, int32_t r0, int32_t nr, int32_t x0,
                        int32_t nx, int32_t c0, int32_t n, int32_t width) {
  const int32_t ih = p[NPUKIT_S8_W_IN_H], iw = p[NPUKIT_S8_W_IN_W];
  const int32_t sh = p[NPUKIT_S8_W_IN_SH], sw = p[NPUKIT_S8_W_IN_SW];
  const int8_t pad = (int8_t)p[NPUKIT_S8_W_PAD_VALUE];
  const int32_t ix0 = x0 - p[NPUKIT_S8_W_PAD_LEFT];
  // The window's columns left of the input, then those inside it.
  int32_t lead = -ix0 < 0 ? 0 : -ix0;
  if (lead > nx) lead = nx;
  int32_t inside = iw - ix0 < nx ? iw - ix0 : nx;
  inside = inside > lead ? inside - lead : 0;
  const int32_t words = n == width ? n / 4 : 0;  // per pixel, where the group is whole quads
  for (int32_t r = 0; r < nr; ++r) {
    int8_t* to = strip + r * nx * width;
    const int32_t iy = r0 + r - p[NPUKIT_S8_W_PAD_TOP];
    if (iy < 0 || iy >= ih) {
      npukit_s8_fill_bytes(to, pad, nx * width);
      continue;
    }
    npukit_s8_fill_bytes(to, pad, lead * width);
    to += lead * width;
    const int8_t* from = in + iy * sh + (ix0 + lead) * sw + c0;
    if (words) {
      npukit_s8_word_t* t = (npukit_s8_word_t*)(void*)to;
      for (int32_t x = 0; x < inside; ++x, from += sw) {
        const input_word_t* f = (const input_word_t*)(const void*)from;
        for (int32_t k = 0; k < words; ++k) *t++ = f[k];
      }
      to = (int8_t*)(void*)t;
    } else {
      for (int32_t x = 0; x < inside; ++x, from += sw, to += width) npukit_s8_copy_bytes(to, from, n);
    }
    npukit_s8_fill_bytes(to, pad, (nx - lead - inside) * width);
  }
}

// The tiles of `ny` x `nx` output pixels: as many output pixels per tile as
// a window of four channels allows (all of them where they fit; the window
// of one pixel fits: padded_tiles checks it), and how many tiles.
typedef struct {
  int32_t rows, cols, in_rows, in_cols, count;
} tiling_t;

static tiling_t tiling(const int32_t* p, int32_t ny, int32_t nx) {
  const int32_t stride_h = p[NPUKIT_S8_W_STRIDE_H], stride_w = p[NPUKIT_S8_W_STRIDE_W];
  const int32_t reach_h = (p[NPUKIT_S8_W_KERNEL_H] - 1) * p[NPUKIT_S8_W_DILATION_H] + 1;
  const int32_t reach_w = (p[NPUKIT_S8_W_KERNEL_W] - 1) * p[NPUKIT_S8_W_DILATION_W] + 1;
  tiling_t t = {.rows = ny, .cols = nx, .in_rows = 0, .in_cols = 0, .count = 0};
  if (ny <= 0 || nx <= 0) return t;
  if ((int64_t)reach_h * ((nx - 1) * stride_w + reach_w) * 4 > NPUKIT_S8_STRIP_BYTES) {
    t.cols = (NPUKIT_S8_STRIP_BYTES / (4 * reach_h) - reach_w) / stride_w + 1;
  }
  t.in_cols = (t.cols - 1) * stride_w + reach_w;
  if ((int64_t)((ny - 1) * stride_h + reach_h) * t.in_cols * 4 > NPUKIT_S8_STRIP_BYTES) {
    t.rows = (NPUKIT_S8_STRIP_BYTES / (4 * t.in_cols) - reach_h) / stride_h + 1;
  }
  t.in_rows = (t.rows - 1) * stride_h + reach_h;
  t.count = ((ny + t.rows - 1) / t.rows) * ((nx + t.cols - 1) / t.cols);
  return t;
}

// The output pixels [ya, yb) x [xa, xb) of a padded channel-last layer in
// tiles of `strip` (tiling), each with as many channels (a multiple of
// four) as fit its window. `o` is moved to each tile's first output pixel
// (`out`, `res`: the layer's first).
static void padded_region(const int32_t* p, const plane_t* g, npukit_s8_output_t* o, uint8_t* out,
                          const uint8_t* res, const int8_t* in, const int8_t* weights, int8_t* strip, int32_t ya,
                          int32_t yb, int32_t xa, int32_t xb) {
  if (ya >= yb || xa >= xb) return;
  const int32_t channels = p[NPUKIT_S8_W_OUT_C];
  const int32_t stride_h = p[NPUKIT_S8_W_STRIDE_H], stride_w = p[NPUKIT_S8_W_STRIDE_W];
  const int32_t dil_h = p[NPUKIT_S8_W_DILATION_H], dil_w = p[NPUKIT_S8_W_DILATION_W];
  const int32_t reach_h = (p[NPUKIT_S8_W_KERNEL_H] - 1) * dil_h + 1;
  const int32_t reach_w = (p[NPUKIT_S8_W_KERNEL_W] - 1) * dil_w + 1;
  const int32_t out_bytes = o->mode == NPUKIT_S8_OUT_INT32 ? 4 : 1;
  const int32_t m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
  const tiling_t tiles = tiling(p, yb - ya, xb - xa);
  const int32_t rows = tiles.rows, cols = tiles.cols;
  // Output channels per tile: m times the input channels (a multiple of
  // four) its window holds.
  int32_t group = ((NPUKIT_S8_STRIP_BYTES / (tiles.in_rows * tiles.in_cols)) & ~3) * m;
  if (group > ((channels + 3) & ~3)) group = (channels + 3) & ~3;
  for (int32_t c0 = 0; c0 < channels; c0 += group) {
    // n output channels, n / m input channels (the layer's channels and
    // c0 are multiples of m), `width` bytes per pixel.
    const int32_t n = channels - c0 < group ? channels - c0 : group, width = (n / m + 3) & ~3;
    for (int32_t y = ya; y < yb; y += rows) {
      const int32_t r = yb - y < rows ? yb - y : rows, nr = (r - 1) * stride_h + reach_h;
      for (int32_t x = xa; x < xb; x += cols) {
        const int32_t k = xb - x < cols ? xb - x : cols, nx = (k - 1) * stride_w + reach_w;
        fill_window(strip, p, in, y * stride_h, nr, x * stride_w, nx, c0 / m, n / m, width);
        const plane_t t = {
            .oh = r, .ow = k, .sh = nx * width, .sw = width, .step_y = stride_h * nx * width,
            .step_x = stride_w * width, .dy = dil_h * nx * width, .dx = dil_w * width, .zp = g->zp,
        };
        o->out = out + (y * o->sh + x * o->sw) * out_bytes;
        if (res) o->residual = res + y * o->add.res_sh + x * o->add.res_sw;
        channels_last(p, &t, o, strip, weights, c0, c0 + n);
      }
    }
  }
}

// How a padded layer runs: TILES_NONE in strips of whole rows
// (padded_strips) or the paths after it, TILES_BORDER its interior in place
// and its border pixels in tiles, TILES_WHOLE every output pixel in tiles
// (padded_tiles). Tiles need a channel-last layer whose window of four
// channels fits; of the three, the cheapest. Each kernel call costs about
// 300 instructions per quad of channels (its weights unpacked, its sums and
// constants) and each byte copied about 3/4 (measured on Cortex-M4): strips
// copy every input row (those their bands share twice) and call the kernel
// once per band, TILES_BORDER copies only the border pixels' windows but
// calls it for the interior and up to four regions, TILES_WHOLE copies
// every window (a small layer: one tile, one call per quad). A tile's copy
// also costs about 3 instructions per pixel of its window (fill_window's
// loop over pixels), paid once per group of channels: what makes a layer
// whose window holds only a quad or two of its channels (035's stride-1
// 24x24x48: 12 tiles of one quad) cheaper with border tiles.
enum { TILES_NONE, TILES_BORDER, TILES_WHOLE };

// The cost of the tiles `t` of a region, in quarters of an instruction
// (tiles_first): per tile the kernel's calls and the bytes copied, and per
// group of channels (padded_region) the window's pixels.
static int64_t tiles_cost(const int32_t* p, const tiling_t* t, int32_t quads) {
  if (t->count == 0) return 0;
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
  const int64_t pixels = (int64_t)t->in_rows * t->in_cols;
  int32_t group = ((NPUKIT_S8_STRIP_BYTES / (t->in_rows * t->in_cols)) & ~3) * m;
  if (group > ((channels + 3) & ~3)) group = (channels + 3) & ~3;
  const int64_t groups = (channels + group - 1) / group;
  return (int64_t)t->count * (quads * 1200 + pixels * p[NPUKIT_S8_W_IN_C] * 3 + groups * pixels * 12);
}

static int32_t tiles_first(const int32_t* p, const plane_t* g) {
  const int32_t stride_h = p[NPUKIT_S8_W_STRIDE_H];
  const int32_t reach_h = (p[NPUKIT_S8_W_KERNEL_H] - 1) * p[NPUKIT_S8_W_DILATION_H] + 1;
  const int32_t reach_w = (p[NPUKIT_S8_W_KERNEL_W] - 1) * p[NPUKIT_S8_W_DILATION_W] + 1;
  if (p[NPUKIT_S8_W_WEIGHT_FORM] != NPUKIT_S8_WEIGHTS_TAPS || p[NPUKIT_S8_W_IN_SC] != 1 ||
      (int64_t)reach_h * reach_w * 4 > NPUKIT_S8_STRIP_BYTES) {
    return 0;
  }
  const int32_t c_in = p[NPUKIT_S8_W_IN_C], quads = (p[NPUKIT_S8_W_OUT_C] + 3) / 4;
  const int64_t row_bytes = (int64_t)(p[NPUKIT_S8_W_PAD_LEFT] + p[NPUKIT_S8_W_IN_W] + p[NPUKIT_S8_W_PAD_RIGHT]) * c_in;
  // Costs, in quarters of an instruction (strips: none where their rows do not fit).
  int64_t strips = INT64_MAX;
  if (reach_h * row_bytes <= NPUKIT_S8_STRIP_BYTES) {
    const int32_t band = (int32_t)((NPUKIT_S8_STRIP_BYTES / row_bytes - reach_h) / stride_h + 1);
    const int32_t bands = (g->oh + band - 1) / band;
    strips = (int64_t)bands * quads * 1200 + (int64_t)bands * ((band - 1) * stride_h + reach_h) * row_bytes * 3;
  }
  const tiling_t all = tiling(p, g->oh, g->ow);
  const int64_t whole = tiles_cost(p, &all, quads);
  int32_t y0, y1, x0, x1;
  inside_range(p[NPUKIT_S8_W_PAD_TOP], stride_h, reach_h - 1, p[NPUKIT_S8_W_IN_H], g->oh, &y0, &y1);
  inside_range(p[NPUKIT_S8_W_PAD_LEFT], p[NPUKIT_S8_W_STRIDE_W], reach_w - 1, p[NPUKIT_S8_W_IN_W], g->ow, &x0, &x1);
  if (y1 <= y0 || x1 <= x0) y0 = y1 = x0 = x1 = 0;
  const tiling_t regions[4] = {tiling(p, y0, g->ow), tiling(p, g->oh - y1, g->ow), tiling(p, y1 - y0, x0),
                               tiling(p, y1 - y0, g->ow - x1)};
  int64_t tiles = y1 > y0 ? (int64_t)quads * 1200 : 0;
  for (int32_t r = 0; r < 4; ++r) tiles += tiles_cost(p, &regions[r], quads);
  if (whole <= tiles && whole < strips) return TILES_WHOLE;
  return tiles < strips ? TILES_BORDER : TILES_NONE;
}

// A padded layer in tiles (`how`: TILES_BORDER or TILES_WHOLE, tiles_first).
// (Not inlined: its strip is on the stack only while a padded layer runs.)
static __attribute__((noinline)) void padded_tiles(const int32_t* p, const plane_t* g, const int8_t* in,
                                                   const int8_t* weights, size_t output, size_t residual,
                                                   int32_t how) {
  const int32_t reach_h = (p[NPUKIT_S8_W_KERNEL_H] - 1) * p[NPUKIT_S8_W_DILATION_H] + 1;
  const int32_t reach_w = (p[NPUKIT_S8_W_KERNEL_W] - 1) * p[NPUKIT_S8_W_DILATION_W] + 1;
  int8_t strip[NPUKIT_S8_STRIP_BYTES + 4] __attribute__((aligned(4)));  // + 4: word reads of the last values
  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  uint8_t* const out = o.out;
  const uint8_t* const res = o.residual;
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], oh = g->oh, ow = g->ow;
  int32_t y0, y1, x0, x1;
  inside_range(p[NPUKIT_S8_W_PAD_TOP], p[NPUKIT_S8_W_STRIDE_H], reach_h - 1, p[NPUKIT_S8_W_IN_H], oh, &y0, &y1);
  inside_range(p[NPUKIT_S8_W_PAD_LEFT], p[NPUKIT_S8_W_STRIDE_W], reach_w - 1, p[NPUKIT_S8_W_IN_W], ow, &x0, &x1);
  if (how == TILES_BORDER && y1 > y0 && x1 > x0) {
    o.out = out + (y0 * o.sh + x0 * o.sw) * (o.mode == NPUKIT_S8_OUT_INT32 ? 4 : 1);
    if (res) o.residual = res + y0 * o.add.res_sh + x0 * o.add.res_sw;
    plane_t interior = *g;
    interior.oh = y1 - y0, interior.ow = x1 - x0;
    const int8_t* first = in + (y0 * p[NPUKIT_S8_W_STRIDE_H] - p[NPUKIT_S8_W_PAD_TOP]) * g->sh +
                          (x0 * p[NPUKIT_S8_W_STRIDE_W] - p[NPUKIT_S8_W_PAD_LEFT]) * g->sw;
    channels_last(p, &interior, &o, first, weights, 0, channels);
  } else {
    y0 = y1 = x0 = x1 = 0;  // every pixel in tiles (the region below the empty top)
  }
  padded_region(p, g, &o, out, res, in, weights, strip, 0, y0, 0, ow);
  padded_region(p, g, &o, out, res, in, weights, strip, y1, oh, 0, ow);
  padded_region(p, g, &o, out, res, in, weights, strip, y0, y1, 0, x0);
  padded_region(p, g, &o, out, res, in, weights, strip, y0, y1, x1, ow);
}

// Layers one column wide (K x 1 filters on inputs of width 1): s8_depthwise_column.c, which checks its
// parameter space and returns 0 outside it.
int32_t npukit_s8_depthwise_column(const int32_t* p, size_t input, size_t output, size_t residual);
// Channel-last 3x3 layers at stride 1 from int16 channel planes: s8_depthwise_planes.c, likewise.
int32_t npukit_s8_depthwise_planes(const int32_t* p, size_t input, size_t output, size_t residual);

void npukit_s8_depthwise(const int32_t* p, size_t input, size_t output, size_t residual) {
  if (npukit_s8_depthwise_column(p, input, output, residual)) return;
  if (npukit_s8_depthwise_planes(p, input, output, residual)) return;
  const int8_t* in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  plane_t g = {
      .oh = p[NPUKIT_S8_W_OUT_H], .ow = p[NPUKIT_S8_W_OUT_W], .sh = p[NPUKIT_S8_W_IN_SH], .sw = p[NPUKIT_S8_W_IN_SW],
      .step_y = p[NPUKIT_S8_W_STRIDE_H] * p[NPUKIT_S8_W_IN_SH], .step_x = p[NPUKIT_S8_W_STRIDE_W] * p[NPUKIT_S8_W_IN_SW],
      .dy = p[NPUKIT_S8_W_DILATION_H] * p[NPUKIT_S8_W_IN_SH], .dx = p[NPUKIT_S8_W_DILATION_W] * p[NPUKIT_S8_W_IN_SW],
      .zp = p[NPUKIT_S8_W_IN_ZP],
  };
  if (!npukit_s8_padded(p)) {
    depthwise_plane(p, &g, &o, in, weights, 0, 0);
    return;
  }
  const int32_t tiles = tiles_first(p, &g);
  if (tiles != TILES_NONE) {
    padded_tiles(p, &g, in, weights, output, residual, tiles);
    return;
  }
  if (padded_strips(p, &g, in, weights, output, residual)) return;
  if (padded_planes(p, &g, &o, in, weights)) return;
  // A padded layer: the interior (every window within the input) on the paths above, as a layer of its own
  // whose input and output start at its first pixel, then the border pixels tap by tap.
  int32_t y0, y1, x0, x1;
  inside_range(p[NPUKIT_S8_W_PAD_TOP], p[NPUKIT_S8_W_STRIDE_H],
               (p[NPUKIT_S8_W_KERNEL_H] - 1) * p[NPUKIT_S8_W_DILATION_H], p[NPUKIT_S8_W_IN_H], g.oh, &y0, &y1);
  inside_range(p[NPUKIT_S8_W_PAD_LEFT], p[NPUKIT_S8_W_STRIDE_W],
               (p[NPUKIT_S8_W_KERNEL_W] - 1) * p[NPUKIT_S8_W_DILATION_W], p[NPUKIT_S8_W_IN_W], g.ow, &x0, &x1);
  if (y1 > y0 && x1 > x0) {
    npukit_s8_output_t inner = npukit_s8_output(p, output, residual);  // (filled in place: no struct copy)
    inner.out += (y0 * o.sh + x0 * o.sw) * (o.mode == NPUKIT_S8_OUT_INT32 ? 4 : 1);  // (bytes)
    if (inner.residual) inner.residual += y0 * o.add.res_sh + x0 * o.add.res_sw;
    plane_t interior = g;
    interior.oh = y1 - y0, interior.ow = x1 - x0;
    const int8_t* first = in + (y0 * p[NPUKIT_S8_W_STRIDE_H] - p[NPUKIT_S8_W_PAD_TOP]) * g.sh +
                          (x0 * p[NPUKIT_S8_W_STRIDE_W] - p[NPUKIT_S8_W_PAD_LEFT]) * g.sw;
    depthwise_plane(p, &interior, &inner, first, weights, 0, 0);
  } else {
    y0 = y1 = x0 = x1 = 0;  // no interior: every pixel is a border pixel
  }
  border_pixels(p, &o, in, weights, y0, y1, x0, x1);
}
