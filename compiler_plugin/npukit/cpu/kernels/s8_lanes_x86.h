// What the x86 kernels whose lanes are output channels share
// (s8_conv_lanes_x86.c, s8_depthwise_lanes_x86.c): the output stage over a
// vector of consecutive channels of one output pixel, with each lane's own
// multiplier and shift, bit-exact with npukit_s8_store.
//
// Which arithmetic applies is decided once per layer by s8_x86_vector.h's
// npk_out, as for the kernels whose lanes are pixels: int32 accumulators;
// int8 on the general arithmetic (saturating left shift, rounding doubling
// high multiply, rounding right shift), on the small-accumulator one
// (accumulators below 2^30, right shifts of 1 to 31), or on that with one
// rounding where the clamp's low bound is at or above the zero point; then
// TFLite's ADD, whose constants are the same in every lane. Fully connected
// layers (rounded once) and parameters outside the vector arithmetic's exact
// range go through npukit_s8_store lane by lane.
#ifndef NPUKIT_CPU_KERNELS_S8_LANES_X86_H_
#define NPUKIT_CPU_KERNELS_S8_LANES_X86_H_

#include "s8_lanes.h"
#include "s8_x86_vector.h"

#if NPUKIT_S8_X86

// A lane's int32 from memory of any alignment.
typedef int32_t __attribute__((may_alias, aligned(1))) npl_word_t;

// The layer's output stage.
typedef struct {
  const npukit_s8_output_t* o;
  npk_out_t vo;
  npk_add_t add;
  int32_t floor;   // the int8 value on one rounding (npk_scale_floor)
  int32_t clamp;   // the activation clamp is applied (not left to a saturating narrowing)
  int32_t left;    // some channel shifts left (general arithmetic)
  const int32_t* weight_sum;
  int32_t in_zp;
} npl_stage_t;

static inline npl_stage_t npl_stage(const npukit_s8_output_t* o) {
  npl_stage_t s;
  s.o = o;
  s.vo = npk_out(o);
  s.add = npk_add(&s.vo);
  s.floor = s.vo.small && s.vo.lo >= 0;
  s.clamp = !s.vo.saturate;
  s.left = 0;
  for (int32_t c = 0; c < o->p[NPUKIT_S8_W_OUT_C]; ++c) s.left |= o->shift[c] > 0;
  s.weight_sum = o->p + o->p[NPUKIT_S8_W_WEIGHT_SUM_AT];
  s.in_zp = o->p[NPUKIT_S8_W_IN_ZP];
  return s;
}

// The constants of NPK_LANES consecutive output channels.
typedef struct {
  npk_v start;  // bias - (in_zp + 128) * sum(w): the accumulators' start
  npk_v m, m_odd;
  npk_v left, right, mask, half, over, under;  // general
  npk_v e, e_half;                             // small: right shift and 2^(e - 1)
  npk_v round_even, round_odd, floor_shift;    // small on one rounding: 2^30 + 2^(30 + e) per 64-bit lane, e - 1
  int32_t c0, n;
  uint32_t lanes;
} npl_channels_t;

static inline npk_v npl_max(npk_v a, npk_v b) { return NPK_OP(max_epi32)(a, b); }
static inline npk_v npl_set64(int64_t x) {
#if NPUKIT_S8_X86 == 512
  return _mm512_set1_epi64(x);
#else
  return _mm256_set1_epi64x(x);
#endif
}
static inline npk_v npl_min(npk_v a, npk_v b) { return NPK_OP(min_epi32)(a, b); }

// Channels c0 .. c0 + n - 1 (n <= NPK_LANES); lanes past n get zeros.
static inline void npl_channels(const npl_stage_t* s, int32_t c0, int32_t n, npl_channels_t* k) {
  const npukit_s8_output_t* o = s->o;
  const uint32_t lanes = (uint32_t)((1ull << n) - 1u);
  k->c0 = c0, k->n = n, k->lanes = lanes;
  const npk_v bias = npk_load_lanes(o->bias + c0, lanes), sum = npk_load_lanes(s->weight_sum + c0, lanes);
  k->start = npk_sub32(bias, NPK_OP(mullo_epi32)(sum, npk_broadcast((int32_t)((uint32_t)s->in_zp + 128u))));
  const npk_v one = npk_broadcast(1);
  const npk_v shift = npl_min(npl_max(npk_load_lanes(o->shift + c0, lanes), npk_broadcast(-31)), npk_broadcast(30));
  k->m = npk_load_lanes(o->multiplier + c0, lanes);
  k->m_odd = NPK_OP(srli_epi64)(k->m, 32);
  k->left = npl_max(shift, npk_broadcast(0));
  k->right = npl_max(npk_sub32(npk_broadcast(0), shift), npk_broadcast(0));
  k->mask = npk_sub32(NPK_OP(sllv_epi32)(one, k->right), one);
  k->half = NPK_OP(srli_epi32)(k->mask, 1);
  k->over = NPK_OP(srav_epi32)(npk_broadcast(INT32_MAX), k->left);
  k->under = NPK_OP(srav_epi32)(npk_broadcast(INT32_MIN), k->left);
  // The small arithmetic's e = -shift is 1..31 in every lane it is used for.
  k->e = k->right;
  k->e_half = NPK_OP(srli_epi32)(NPK_OP(sllv_epi32)(one, k->e), 1);
  k->floor_shift = npk_sub32(k->e, one);
  const npk_v low = NPK_OP(srli_epi64)(NPK_OP(slli_epi64)(k->e, 32), 32), high = NPK_OP(srli_epi64)(k->e, 32);
  const npk_v round = npl_set64((int64_t)1 << 30), thirty = npl_set64(30), one64 = npl_set64(1);
  k->round_even = NPK_OP(add_epi64)(NPK_OP(sllv_epi64)(one64, NPK_OP(add_epi64)(low, thirty)), round);
  k->round_odd = NPK_OP(add_epi64)(NPK_OP(sllv_epi64)(one64, NPK_OP(add_epi64)(high, thirty)), round);
}

// The high word of a * m + round per lane, m and round per lane (round in
// 64-bit lanes: those of the even and of the odd lanes).
static inline __attribute__((always_inline)) npk_v npl_high_words(npk_v a, npk_v m, npk_v m_odd, npk_v round_even,
                                                                   npk_v round_odd) {
  const npk_v even = NPK_OP(add_epi64)(NPK_OP(mul_epi32)(a, m), round_even);
  const npk_v odd = NPK_OP(add_epi64)(NPK_OP(mul_epi32)(NPK_OP(srli_epi64)(a, 32), m_odd), round_odd);
#if NPUKIT_S8_X86 == 512
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
#else
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
#endif
}

// mynpu_requantize per lane (multipliers other than INT32_MIN).
static inline __attribute__((always_inline)) npk_v npl_requantize(const npl_channels_t* k, npk_v acc,
                                                                   const int32_t left) {
#if NPUKIT_S8_X86 == 512
  if (left) {
    const __mmask16 over = _mm512_cmpgt_epi32_mask(acc, k->over), under = _mm512_cmplt_epi32_mask(acc, k->under);
    acc = _mm512_sllv_epi32(acc, k->left);
    acc = _mm512_mask_mov_epi32(acc, over, _mm512_set1_epi32(INT32_MAX));
    acc = _mm512_mask_mov_epi32(acc, under, _mm512_set1_epi32(INT32_MIN));
  }
  const __m512i nudge = _mm512_set1_epi64((int64_t)1 << 30);
  const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(acc, k->m), nudge);
  const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(acc, 32), k->m_odd), nudge);
  __m512i x = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
  const __m512i remainder = _mm512_and_si512(x, k->mask);
  const __m512i threshold = _mm512_sub_epi32(k->half, _mm512_srai_epi32(x, 31));
  x = _mm512_srav_epi32(x, k->right);
  return _mm512_mask_add_epi32(x, _mm512_cmpgt_epi32_mask(remainder, threshold), x, _mm512_set1_epi32(1));
#else
  if (left) {
    const __m256i over = _mm256_cmpgt_epi32(acc, k->over), under = _mm256_cmpgt_epi32(k->under, acc);
    acc = _mm256_sllv_epi32(acc, k->left);
    acc = _mm256_blendv_epi8(acc, _mm256_set1_epi32(INT32_MAX), over);
    acc = _mm256_blendv_epi8(acc, _mm256_set1_epi32(INT32_MIN), under);
  }
  const __m256i nudge = _mm256_set1_epi64x((int64_t)1 << 30);
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(acc, k->m), nudge);
  const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), k->m_odd), nudge);
  __m256i x = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
  const __m256i remainder = _mm256_and_si256(x, k->mask);
  const __m256i threshold = _mm256_sub_epi32(k->half, _mm256_srai_epi32(x, 31));
  x = _mm256_srav_epi32(x, k->right);
  return _mm256_sub_epi32(x, _mm256_cmpgt_epi32(remainder, threshold));
#endif
}

// The int8 value (as int32 lanes, before the output zero point is added):
// requantized and, unless the narrowing saturates instead, clamped.
static inline __attribute__((always_inline)) npk_v npl_int8(const npl_stage_t* s, const npl_channels_t* k,
                                                             npk_v acc) {
  npk_v x;
  if (!s->vo.small) {
    x = npl_requantize(k, acc, s->left);
  } else if (s->floor) {
    x = NPK_OP(srav_epi32)(npl_high_words(acc, k->m, k->m_odd, k->round_even, k->round_odd), k->floor_shift);
  } else {
#if NPUKIT_S8_X86 == 512
    const __m512i round = _mm512_set1_epi64((int64_t)1 << 31);
#else
    const __m256i round = _mm256_set1_epi64x((int64_t)1 << 31);
#endif
    x = npl_high_words(npk_add32(acc, acc), k->m, k->m_odd, round, round);
    x = NPK_OP(srav_epi32)(npk_add32(npk_add32(x, k->e_half), NPK_OP(srai_epi32)(x, 31)), k->e);
  }
  return s->clamp || s->o->mode == NPUKIT_S8_OUT_ADD ? npk_clamp(x, s->vo.lo_v, s->vo.hi_v) : x;
}

// Bytes of a residual (TFLite ADD) at `at` for the lanes of `lanes`, as int32 lanes.
static inline npk_v npl_load_bytes(const int8_t* at, uint32_t lanes) {
#if NPUKIT_S8_X86 == 512
  return _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8((__mmask16)lanes, at));
#else
  if (lanes == 0xffu) return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)at));
  return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128((long long)npk_load_run(at, lanes)));
#endif
}

// The low byte of each lane (`saturate`: each lane narrowed with signed
// saturation instead, AVX-512 only) stored at `at` for the lanes of `lanes`.
static inline void npl_store_bytes(int8_t* at, npk_v v, uint32_t lanes, const int32_t saturate) {
#if NPUKIT_S8_X86 == 512
  const __m128i bytes = saturate ? _mm512_cvtsepi32_epi8(v) : _mm512_cvtepi32_epi8(v);
  if (lanes == 0xffffu) {
    _mm_storeu_si128((__m128i*)at, bytes);
  } else {
    _mm_mask_storeu_epi8(at, (__mmask16)lanes, bytes);
  }
#else
  (void)saturate;
  const __m128i bytes = npk_low_bytes(v);
  if (lanes == 0xffu) {
    _mm_storel_epi64((__m128i*)at, bytes);
  } else {
    npk_store_run(at, (uint64_t)_mm_cvtsi128_si64(bytes), lanes);
  }
#endif
}

// Output pixel (y, x)'s channels k->c0 .. from their accumulators.
static inline __attribute__((always_inline)) void npl_store(const npl_stage_t* s, const npl_channels_t* k, npk_v acc,
                                                             int32_t y, int32_t x) {
  const npukit_s8_output_t* o = s->o;
  const int32_t at = y * o->sh + x * o->sw + k->c0;  // channels side by side (sc == 1)
  switch (s->vo.stage) {
    case NPK_STAGE_INT32:
#if NPUKIT_S8_X86 == 512
      _mm512_mask_storeu_epi32((int32_t*)o->out + at, (__mmask16)k->lanes, acc);
#else
      _mm256_maskstore_epi32((int32_t*)o->out + at, npk_lane_mask(k->lanes), acc);
#endif
      return;
    case NPK_STAGE_LANES: {
      int32_t values[NPK_LANES];
      npk_store_vector(values, acc);
      for (int32_t i = 0; i < k->n; ++i) npukit_s8_store(o, values[i], k->c0 + i, y, x);
      return;
    }
    case NPK_STAGE_ADD_GENERAL:
    case NPK_STAGE_ADD_SMALL: {
      const npk_v v = npl_int8(s, k, acc);  // clamped, before the zero point
      const int8_t* res = (const int8_t*)o->residual + y * o->add.res_sh + x * o->add.res_sw + k->c0;
      const npk_v r = npl_load_bytes(res, k->lanes);
      npk_v sum;
      if (s->vo.stage == NPK_STAGE_ADD_GENERAL) {
        sum = npk_add_general(&s->add, npk_add32(v, s->vo.zp_v), r);
      } else {  // the value minus the ADD's conv_zp
        const npk_v d = npk_add32(v, s->add.conv_offset);
        sum = s->add.saturate ? npk_add_small(&s->add, d, r, 0) : npk_add_small(&s->add, d, r, 1);
      }
      npl_store_bytes((int8_t*)o->out + at, sum, k->lanes, s->add.saturate);
      return;
    }
    default:
      npl_store_bytes((int8_t*)o->out + at, npk_add32(npl_int8(s, k, acc), s->vo.zp_v), k->lanes, !s->clamp);
      return;
  }
}

#endif  // NPUKIT_S8_X86
#endif  // NPUKIT_CPU_KERNELS_S8_LANES_X86_H_
