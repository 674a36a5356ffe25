// TFLite's int8 AVERAGE_POOL_2D, MAX_POOL_2D and MEAN on int8 tensors (NPUKIT_S8_AVERAGE_POOL,
// NPUKIT_S8_MAX_POOL, NPUKIT_S8_MEAN; npukit/layer_recognition/int8_pool.py): output (oy, ox, c) from the
// KERNEL_H x KERNEL_W window at (oy * STRIDE_H, ox * STRIDE_W) of channel c, the input and output addressed by
// their IN_* and OUT_* words. An average is (sum + n / 2) / n for a positive sum of the window's n values,
// (sum - n / 2) / n otherwise, truncated; a max the largest value; a mean MBQM(sum + bias, multiplier, shift)
// + OUT_ZP with the one entry of BIAS_AT, MULTIPLIER_AT and SHIFT_AT every channel shares (TFLite's MEAN is
// quantized per tensor; any shift -31..30, a non-negative multiplier, |bias| <= 2^29); then clamped to
// [ACT_MIN, ACT_MAX].
//
// The parameter space (the recogniser checks it): windows of 1 to 256 values (the sums fit int16), no
// padding, every window inside the input. Channels side by side in input and output (IN_SC = OUT_SC = 1)
// go four at a time through one word on Cortex-M's DSP extension (SXTB16 and SADD16 for sums, SSUB8 and SEL
// for maxima) and a block of channels at a time elsewhere; other layouts one value at a time.
#include "s8_output.h"

void npukit_s8_pool(const int32_t* p, size_t input, size_t output);

#define POOL_BLOCK 64  // channels whose accumulators one pass keeps (the portable path)

typedef struct {
  const int8_t* in;
  int8_t* out;
  int32_t channels, out_h, out_w, sy, sx;
  int32_t in_sc, in_sh, in_sw, out_sc, out_sh, out_sw;
  int32_t lo, hi;
  int32_t bias, multiplier, shift, zp;  // a mean's
} pool_t;

// The functions below take the window (`kh` x `kw` values), `average` (1: an average, 2: a mean, both of the
// window's sum; 0: a max) and `clamp` (0 where the activation range is all of int8) apart from `k`, so that
// the entry's calls with constants specialise them.

// A mean's output of a window sum: TFLite's MultiplyByQuantizedMultiplier(sum + bias, m, shift) for
// shift -31..30 and m >= 0, plus the zero point, clamped. A right shift takes the small path's arithmetic
// (npukit_s8_scale: sum + bias within 2^30), and so does a left shift that keeps the value within 2^30 (the
// rounding doubling high multiply alone, one SMMULR); otherwise the left shift saturated to int32, then the
// rounding doubling high multiply (npukit_s8_requantize_right), the scaled value held within +-2^30 (which
// leaves every clamped result as it is and keeps the addition in int32).
static inline __attribute__((always_inline)) int8_t mean_output(const pool_t* k, int32_t sum) {
  const int32_t shift = k->shift, m = k->multiplier;
  int32_t a = sum + k->bias, e = 0;  // |sum| <= 256 * 128, |bias| <= 2^29 (the recogniser)
  if (shift < 0) return (int8_t)npukit_s8_clamp(npukit_s8_scale(2 * a, m, shift, k->zp), k->lo, k->hi);
  if (shift <= 13 && a < (1 << 17) && a > -(1 << 17)) {
    return (int8_t)npukit_s8_clamp(npukit_s8_rdhm_doubled(2 * a * (1 << shift), m) + k->zp, k->lo, k->hi);
  }
  if (shift > 0) {
    const int64_t wide = (int64_t)a * ((int64_t)1 << shift);
    a = wide > INT32_MAX ? INT32_MAX : wide < INT32_MIN ? INT32_MIN : (int32_t)wide;
  } else {
    e = -shift;
  }
  const int32_t mask = (int32_t)(((uint32_t)1 << e) - 1u);
  int32_t r = npukit_s8_requantize_right(a, 0, m, e, mask, mask >> 1);
  r = r > (1 << 30) ? (1 << 30) : r < -(1 << 30) ? -(1 << 30) : r;
  return (int8_t)npukit_s8_clamp(r + k->zp, k->lo, k->hi);
}

static inline __attribute__((always_inline)) int8_t finish(const pool_t* k, int32_t v, int32_t count,
                                                           int32_t average, int32_t clamp) {
  if (average == 2) return mean_output(k, v);
  if (average && count > 1 && (count & (count - 1)) == 0) {
    // A power of two 2^k: (v + count / 2) >> k for v >= 0; for v < 0, (v - count / 2) / count truncated is
    // the floor of (v + count / 2 - 1) / count: one addition of the sign more.
    v = (v + count / 2 + (v >> 31)) >> __builtin_ctz((uint32_t)count);
  } else if (average) {
    v = (v > 0 ? v + count / 2 : v - count / 2) / count;
  }
  if (clamp) v = v < k->lo ? k->lo : v > k->hi ? k->hi : v;
  return (int8_t)v;
}

// One output pixel's channels [c0, c0 + n) from window origin `in`, any strides.
static inline __attribute__((always_inline)) void pool_any(const pool_t* k, const int8_t* in, int8_t* out,
                                                           int32_t c0, int32_t n, int32_t kh, int32_t kw,
                                                           int32_t average, int32_t clamp) {
  for (int32_t c = c0; c < c0 + n; ++c) {
    int32_t v = average ? 0 : -128;
    for (int32_t y = 0; y < kh; ++y) {
      for (int32_t x = 0; x < kw; ++x) {
        const int32_t e = in[c * k->in_sc + y * k->in_sh + x * k->in_sw];
        v = average ? v + e : (e > v ? e : v);
      }
    }
    out[c * k->out_sc] = finish(k, v, kh * kw, average, clamp);
  }
}

#if defined(__ARM_FEATURE_DSP)
// Four channels side by side at `in` (window origin) into out[0..3]: sums as int16 lanes, channels (0, 2) and
// (1, 3) apart, each word added by one SXTAB16 per pair of lanes (a window of one column, or a plane IREE
// flattened into one, two rows per pass); maxima as int8 lanes (SSUB8 sets each lane's GE flag where the word
// is not below the maxima so far, SEL takes those lanes from it; one asm statement, so that nothing comes
// between the two).
static inline __attribute__((always_inline)) void pool_four(const pool_t* k, const int8_t* in, int8_t* out,
                                                            int32_t kh, int32_t kw, int32_t average,
                                                            int32_t clamp) {
  if (average) {
    int32_t s02 = 0, s13 = 0;
    if (kw == 1) {
      const int8_t* row = in;
      int32_t y = 0;
      for (; y + 2 <= kh; y += 2, row += 2 * k->in_sh) {
        const int32_t w0 = *(const npukit_s8_word_t*)(const void*)row;
        const int32_t w1 = *(const npukit_s8_word_t*)(const void*)(row + k->in_sh);
        s02 = (int32_t)__sxtab16(s02, w0), s13 = npukit_s8_sxtab16_ror8(s13, w0);
        s02 = (int32_t)__sxtab16(s02, w1), s13 = npukit_s8_sxtab16_ror8(s13, w1);
      }
      if (y < kh) {
        const int32_t w = *(const npukit_s8_word_t*)(const void*)row;
        s02 = (int32_t)__sxtab16(s02, w), s13 = npukit_s8_sxtab16_ror8(s13, w);
      }
    } else {
      for (int32_t y = 0; y < kh; ++y) {
        const int8_t* row = in + y * k->in_sh;
        for (int32_t x = 0; x < kw; ++x, row += k->in_sw) {
          const int32_t w = *(const npukit_s8_word_t*)(const void*)row;
          s02 = (int32_t)__sxtab16(s02, w), s13 = npukit_s8_sxtab16_ror8(s13, w);
        }
      }
    }
    out[0] = finish(k, (int16_t)s02, kh * kw, average, clamp);
    out[1] = finish(k, (int16_t)s13, kh * kw, average, clamp);
    out[2] = finish(k, s02 >> 16, kh * kw, average, clamp);
    out[3] = finish(k, s13 >> 16, kh * kw, average, clamp);
    return;
  }
  int32_t m = (int32_t)0x80808080u;
  for (int32_t y = 0; y < kh; ++y) {
    const int8_t* row = in + y * k->in_sh;
    for (int32_t x = 0; x < kw; ++x, row += k->in_sw) {
      const int32_t w = *(const npukit_s8_word_t*)(const void*)row;
      int32_t t;
      __asm__("ssub8 %0, %1, %2\n\tsel %0, %1, %2" : "=&r"(t) : "r"(w), "r"(m) : "cc");
      m = t;
    }
  }
  if (!clamp) {
    *(npukit_s8_word_t*)(void*)out = m;
    return;
  }
  for (int32_t j = 0; j < 4; ++j) out[j] = finish(k, (int8_t)(m >> (8 * j)), 1, 0, 1);
}
#endif

// One output pixel whose channels lie side by side (IN_SC = OUT_SC = 1).
static inline __attribute__((always_inline)) void pool_dense(const pool_t* k, const int8_t* in, int8_t* out,
                                                             int32_t kh, int32_t kw, int32_t average,
                                                             int32_t clamp) {
  int32_t c = 0;
#if defined(__ARM_FEATURE_DSP)
  for (; c + 4 <= k->channels; c += 4) pool_four(k, in + c, out + c, kh, kw, average, clamp);
  if (c < k->channels) pool_any(k, in, out, c, k->channels - c, kh, kw, average, clamp);
#else
  for (int32_t n; c < k->channels; c += n) {
    n = k->channels - c < POOL_BLOCK ? k->channels - c : POOL_BLOCK;
    int32_t acc[POOL_BLOCK];
    for (int32_t j = 0; j < n; ++j) acc[j] = average ? 0 : -128;
    for (int32_t y = 0; y < kh; ++y) {
      for (int32_t x = 0; x < kw; ++x) {
        const int8_t* at = in + c + y * k->in_sh + x * k->in_sw;
        if (average) {
          for (int32_t j = 0; j < n; ++j) acc[j] += at[j];
        } else {
          for (int32_t j = 0; j < n; ++j) acc[j] = at[j] > acc[j] ? at[j] : acc[j];
        }
      }
    }
    for (int32_t j = 0; j < n; ++j) out[c + j] = finish(k, acc[j], kh * kw, average, clamp);
  }
#endif
}

static inline __attribute__((always_inline)) void pool_rows(const pool_t* k, int32_t kh, int32_t kw,
                                                            int32_t average, int32_t clamp) {
  for (int32_t oy = 0; oy < k->out_h; ++oy) {
    for (int32_t ox = 0; ox < k->out_w; ++ox) {
      const int8_t* in = k->in + oy * k->sy * k->in_sh + ox * k->sx * k->in_sw;
      int8_t* out = k->out + oy * k->out_sh + ox * k->out_sw;
      if (k->in_sc == 1 && k->out_sc == 1) {
        pool_dense(k, in, out, kh, kw, average, clamp);
      } else {
        pool_any(k, in, out, 0, k->channels, kh, kw, average, clamp);
      }
    }
  }
}

void npukit_s8_pool(const int32_t* p, size_t input, size_t output) {
  pool_t k;
  k.in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  k.out = (int8_t*)output + p[NPUKIT_S8_W_OUT_OFFSET];
  k.channels = p[NPUKIT_S8_W_OUT_C], k.out_h = p[NPUKIT_S8_W_OUT_H], k.out_w = p[NPUKIT_S8_W_OUT_W];
  k.sy = p[NPUKIT_S8_W_STRIDE_H], k.sx = p[NPUKIT_S8_W_STRIDE_W];
  k.in_sc = p[NPUKIT_S8_W_IN_SC], k.in_sh = p[NPUKIT_S8_W_IN_SH], k.in_sw = p[NPUKIT_S8_W_IN_SW];
  k.out_sc = p[NPUKIT_S8_W_OUT_SC], k.out_sh = p[NPUKIT_S8_W_OUT_SH], k.out_sw = p[NPUKIT_S8_W_OUT_SW];
  k.lo = p[NPUKIT_S8_W_ACT_MIN], k.hi = p[NPUKIT_S8_W_ACT_MAX];
  const int32_t kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t average = p[NPUKIT_S8_W_KIND] == NPUKIT_S8_AVERAGE_POOL;
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_MEAN) {
    k.bias = p[p[NPUKIT_S8_W_BIAS_AT]], k.multiplier = p[p[NPUKIT_S8_W_MULTIPLIER_AT]];
    k.shift = p[p[NPUKIT_S8_W_SHIFT_AT]], k.zp = p[NPUKIT_S8_W_OUT_ZP];
    pool_rows(&k, kh, kw, 2, 1);
    return;
  }
  // 2x2 windows over all of int8, the commonest, unrolled (an average's division by a constant).
  if (kh == 2 && kw == 2 && k.lo == -128 && k.hi == 127) {
    if (average) {
      pool_rows(&k, 2, 2, 1, 0);
    } else {
      pool_rows(&k, 2, 2, 0, 0);
    }
  } else if (average) {
    pool_rows(&k, kh, kw, 1, 1);
  } else {
    pool_rows(&k, kh, kw, 0, 1);
  }
}
