// The layers whose input is another layer's int32 accumulators, on x86 (see
// s8_x86_vector.h): the residual of an ADD (s8_residual.c) and the average
// pool (s8_average.c). Each accumulator gets its layer's output stage with
// the general vector arithmetic, 16 (AVX-512) or 8 (AVX2) at a time along a
// row whose elements are contiguous, or, for a channel-last residual, along
// a pixel's channels with each lane's own multiplier and shift
// (s8_lanes_x86.h); other layouts, and the stages the vector arithmetic does
// not compute exactly (a multiplier of INT32_MIN, an unordered activation
// range), stay with the portable code.
#include "s8_lanes_x86.h"

#if NPUKIT_S8_X86

// One layer's output stage for one channel: bias added wrapping, then
// TFLite's requantization, the zero point and the activation clamp.
typedef struct {
  npk_channel_t k;
  npk_v bias;
} stage_t;

static inline int32_t stage_exact(int32_t multiplier, int32_t act_min, int32_t act_max, int32_t zp) {
  return multiplier != INT32_MIN && npk_range_exact(act_min, act_max, zp);
}

static inline stage_t stage_of(int32_t bias, int32_t multiplier, int32_t shift, int32_t act_min, int32_t act_max,
                               int32_t zp) {
  stage_t s;
  s.k.rq = npk_rq(multiplier, shift);
  s.k.lo = npk_broadcast(act_min - zp), s.k.hi = npk_broadcast(act_max - zp), s.k.zp = npk_broadcast(zp);
  s.bias = npk_broadcast(bias);
  return s;
}

static inline __attribute__((always_inline)) npk_v stage_int8(const stage_t* s, npk_v acc) {
  return npk_int8_general(&s->k, npk_add32(acc, s->bias));
}

// The first `n` (1..NPK_LANES) int32 at `at`, zero beyond.
static inline npk_v load_n(const int32_t* at, int32_t n) { return npk_load_lanes(at, (1u << n) - 1u); }

// The low bytes of every lane stored at `to`.
static inline void store_all(int8_t* to, npk_v v) {
#if NPUKIT_S8_X86 == 512
  _mm_storeu_si128((__m128i*)to, npk_low_bytes(v));
#else
  _mm_storel_epi64((__m128i*)to, npk_low_bytes(v));
#endif
}

// The low bytes of the first `n` lanes stored at `to`.
static inline void store_n(int8_t* to, npk_v v, int32_t n) {
#if NPUKIT_S8_X86 == 512
  _mm_mask_storeu_epi8(to, (__mmask16)((1u << n) - 1u), _mm512_cvtepi32_epi8(v));
#else
  int32_t lanes[NPK_LANES] __attribute__((aligned(32)));
  _mm256_store_si256((__m256i*)lanes, v);
  for (int32_t i = 0; i < n; ++i) to[i] = (int8_t)lanes[i];
#endif
}

// total + the first `n` lanes of v, lane by lane.
static inline npk_v add_n(npk_v total, npk_v v, int32_t n) {
#if NPUKIT_S8_X86 == 512
  return _mm512_mask_add_epi32(total, (__mmask16)((1u << n) - 1u), total, v);
#else
  return _mm256_add_epi32(total, _mm256_and_si256(v, npk_lane_mask((1u << n) - 1u)));
#endif
}

// The sum of all lanes.
static inline int32_t sum_lanes(npk_v v) {
#if NPUKIT_S8_X86 == 512
  return _mm512_reduce_add_epi32(v);
#else
  const __m128i half = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i quarter = _mm_add_epi32(half, _mm_unpackhi_epi64(half, half));
  return _mm_cvtsi128_si32(_mm_add_epi32(quarter, _mm_shuffle_epi32(quarter, 1)));
#endif
}

int npukit_s8_residual_int8_x86(const int32_t* p, size_t residual, size_t output) {
  const int32_t* bias = p + p[NPUKIT_S8_W_RES_BIAS_AT];
  const int32_t* multiplier = p + p[NPUKIT_S8_W_RES_MULTIPLIER_AT];
  const int32_t* shift = p + p[NPUKIT_S8_W_RES_SHIFT_AT];
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], rows = p[NPUKIT_S8_W_OUT_H], cols = p[NPUKIT_S8_W_OUT_W];
  const int32_t rc = p[NPUKIT_S8_W_RES_SC], rh = p[NPUKIT_S8_W_RES_SH];
  const int32_t oc = p[NPUKIT_S8_W_OUT_SC], oh = p[NPUKIT_S8_W_OUT_SH];
  const int32_t zp = p[NPUKIT_S8_W_ADD_RES_ZP], lo = p[NPUKIT_S8_W_RES_ACT_MIN], hi = p[NPUKIT_S8_W_RES_ACT_MAX];
  for (int32_t c = 0; c < channels; ++c) {
    if (!stage_exact(multiplier[c], lo, hi, zp)) return 0;
  }
  const int32_t* acc = (const int32_t*)(residual + (size_t)p[NPUKIT_S8_W_RES_OFFSET]);
  int8_t* out = (int8_t*)(output + (size_t)p[NPUKIT_S8_W_OUT_OFFSET]);
  if (channels > 1 && rc == 1 && oc == 1) {  // channel-last: a pixel's channels side by side
    const int32_t rw = p[NPUKIT_S8_W_RES_SW], ow = p[NPUKIT_S8_W_OUT_SW];
    const npk_v low = npk_broadcast(lo - zp), high = npk_broadcast(hi - zp), zero_point = npk_broadcast(zp);
    for (int32_t c0 = 0; c0 < channels; c0 += NPK_LANES) {
      const int32_t n = channels - c0 < NPK_LANES ? channels - c0 : NPK_LANES;
      const uint32_t lanes = (uint32_t)((1ull << n) - 1u);
      npl_channels_t k;
      npl_general(multiplier + c0, shift + c0, lanes, &k);
      int32_t left = 0;
      for (int32_t c = c0; c < c0 + n; ++c) left |= shift[c] > 0;
      const npk_v b = npk_load_lanes(bias + c0, lanes);
      for (int32_t y = 0; y < rows; ++y) {
        for (int32_t x = 0; x < cols; ++x) {
          const npk_v a = npk_add32(npk_load_lanes(acc + y * rh + x * rw + c0, lanes), b);
          const npk_v v = npk_add32(npk_clamp(npl_requantize(&k, a, left), low, high), zero_point);
          store_n(out + y * oh + x * ow + c0, v, n);
        }
      }
    }
    return 1;
  }
  if (p[NPUKIT_S8_W_RES_SW] != 1 || p[NPUKIT_S8_W_OUT_SW] != 1) return 0;
  // Rows that follow each other in both tensors are one row.
  const int32_t dense = rh == cols && oh == cols;
  const int32_t row_count = dense ? 1 : rows, row_length = dense ? rows * cols : cols;
  for (int32_t c = 0; c < channels; ++c) {
    const stage_t s = stage_of(bias[c], multiplier[c], shift[c], lo, hi, zp);
    for (int32_t y = 0; y < row_count; ++y) {
      const int32_t* from = acc + c * rc + y * rh;
      int8_t* to = out + c * oc + y * oh;
      int32_t x = 0;
      for (; x + NPK_LANES <= row_length; x += NPK_LANES) {
        store_all(to + x, stage_int8(&s, npk_load_vector(from + x)));
      }
      if (x < row_length) store_n(to + x, stage_int8(&s, load_n(from + x, row_length - x)), row_length - x);
    }
  }
  return 1;
}

int npukit_s8_average_x86(const int32_t* p, size_t input, size_t output, size_t residual) {
  const int32_t channels = p[NPUKIT_S8_W_IN_C], rows = p[NPUKIT_S8_W_IN_H], cols = p[NPUKIT_S8_W_IN_W];
  const int32_t sc = p[NPUKIT_S8_W_IN_SC], sh = p[NPUKIT_S8_W_IN_SH];
  const int32_t rc = p[NPUKIT_S8_W_RES_SC], rh = p[NPUKIT_S8_W_RES_SH];
  const int32_t add = p[NPUKIT_S8_W_OUTPUT] == NPUKIT_S8_OUT_ADD;
  const int32_t* bias = p + p[NPUKIT_S8_W_BIAS_AT];
  const int32_t* multiplier = p + p[NPUKIT_S8_W_MULTIPLIER_AT];
  const int32_t* shift = p + p[NPUKIT_S8_W_SHIFT_AT];
  const int32_t zp = p[NPUKIT_S8_W_OUT_ZP], act_min = p[NPUKIT_S8_W_ACT_MIN], act_max = p[NPUKIT_S8_W_ACT_MAX];
  const int32_t* res_bias = p + p[NPUKIT_S8_W_RES_BIAS_AT];
  const int32_t* res_multiplier = p + p[NPUKIT_S8_W_RES_MULTIPLIER_AT];
  const int32_t* res_shift = p + p[NPUKIT_S8_W_RES_SHIFT_AT];
  const int32_t res_zp = p[NPUKIT_S8_W_ADD_RES_ZP];
  const int32_t res_min = p[NPUKIT_S8_W_RES_ACT_MIN], res_max = p[NPUKIT_S8_W_RES_ACT_MAX];
  if (p[NPUKIT_S8_W_IN_SW] != 1 || (add && p[NPUKIT_S8_W_RES_SW] != 1)) return 0;
  // The ADD's exactness conditions are npk_out's for the first operand's range.
  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  const npk_out_t vo = npk_out(&o);
  if (!vo.vector || o.fl.table) return 0;
  for (int32_t c = 0; add && c < channels; ++c) {
    if (!stage_exact(res_multiplier[c], res_min, res_max, res_zp)) return 0;
  }
  const npk_add_t k = npk_add(&vo);
  const int32_t* in = (const int32_t*)(input + (size_t)p[NPUKIT_S8_W_IN_OFFSET]);
  const int32_t* res = (const int32_t*)(residual + (size_t)p[NPUKIT_S8_W_RES_OFFSET]);
  int8_t* out = (int8_t*)(output + (size_t)p[NPUKIT_S8_W_OUT_OFFSET]);
  const int32_t count = p[NPUKIT_S8_W_AVERAGE_COUNT], half = count / 2;
  const int32_t lo = p[NPUKIT_S8_W_AVERAGE_ACT_MIN], hi = p[NPUKIT_S8_W_AVERAGE_ACT_MAX];
  for (int32_t c = 0; c < channels; ++c) {
    const stage_t a = stage_of(bias[c], multiplier[c], shift[c], act_min, act_max, zp);
    const stage_t b = add ? stage_of(res_bias[c], res_multiplier[c], res_shift[c], res_min, res_max, res_zp) : a;
    npk_v total = npk_broadcast(0);  // summed across lanes once per channel
    for (int32_t y = 0; y < rows; ++y) {
      const int32_t* from = in + c * sc + y * sh;
      const int32_t* from_res = res + c * rc + y * rh;
      for (int32_t x = 0; x < cols; x += NPK_LANES) {
        const int32_t n = cols - x < NPK_LANES ? cols - x : NPK_LANES;
        npk_v v = stage_int8(&a, load_n(from + x, n));
        if (add) {
          const npk_v r = stage_int8(&b, load_n(from_res + x, n));
          v = vo.small ? npk_add_small(&k, npk_sub32(v, k.conv_zp), r, 1) : npk_add_general(&k, v, r);
        }
        total = add_n(total, v, n);
      }
    }
    const int32_t sum = sum_lanes(total);
    // TFLite's average pool division: ties away from zero, then the clamp.
    out[c * p[NPUKIT_S8_W_OUT_SC]] = (int8_t)mynpu_clamp((sum > 0 ? sum + half : sum - half) / count, lo, hi);
  }
  return 1;
}

#else

// Built for a target without the x86 kernels: nothing here.
typedef int npukit_s8_accumulators_x86_unused;

#endif
