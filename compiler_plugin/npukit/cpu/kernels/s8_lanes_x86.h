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

// The layer's output stage: npk_out's decisions and npk_add's constants
// (made by the caller, as locals: copies of such structs would be memcpy
// calls), and what follows from them.
typedef struct {
  const npukit_s8_output_t* o;
  const npk_out_t* vo;
  const npk_add_t* add;
  int32_t floor;   // the int8 value on one rounding (npk_scale_floor)
  int32_t clamp;   // the activation clamp is applied (not left to a saturating narrowing)
  int32_t left;    // some channel shifts left (general arithmetic)
  const int32_t* weight_sum;
  int32_t in_zp;
} npl_stage_t;

static inline void npl_stage(npl_stage_t* s, const npukit_s8_output_t* o, const npk_out_t* vo, const npk_add_t* add) {
  s->o = o;
  s->vo = vo;
  s->add = add;
  s->floor = vo->small && vo->lo >= 0;
  s->clamp = !vo->saturate;
  s->left = 0;
  for (int32_t c = 0; c < o->p[NPUKIT_S8_W_OUT_C]; ++c) s->left |= o->shift[c] > 0;
  s->weight_sum = o->p + o->p[NPUKIT_S8_W_WEIGHT_SUM_AT];
  s->in_zp = o->p[NPUKIT_S8_W_IN_ZP];
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

// The general arithmetic's constants (npl_requantize) of the lanes' multipliers and shifts.
static inline void npl_general(const int32_t* multiplier, const int32_t* shifts, uint32_t lanes, npl_channels_t* k) {
  const npk_v one = npk_broadcast(1);
  const npk_v shift = npl_min(npl_max(npk_load_lanes(shifts, lanes), npk_broadcast(-31)), npk_broadcast(30));
  k->m = npk_load_lanes(multiplier, lanes);
  k->m_odd = NPK_OP(srli_epi64)(k->m, 32);
  k->left = npl_max(shift, npk_broadcast(0));
  k->right = npl_max(npk_sub32(npk_broadcast(0), shift), npk_broadcast(0));
  k->mask = npk_sub32(NPK_OP(sllv_epi32)(one, k->right), one);
  k->half = NPK_OP(srli_epi32)(k->mask, 1);
  k->over = NPK_OP(srav_epi32)(npk_broadcast(INT32_MAX), k->left);
  k->under = NPK_OP(srav_epi32)(npk_broadcast(INT32_MIN), k->left);
}

// Channels c0 .. c0 + n - 1 (n <= NPK_LANES); lanes past n get zeros.
static inline void npl_channels(const npl_stage_t* s, int32_t c0, int32_t n, npl_channels_t* k) {
  const npukit_s8_output_t* o = s->o;
  const uint32_t lanes = (uint32_t)((1ull << n) - 1u);
  k->c0 = c0, k->n = n, k->lanes = lanes;
  const npk_v bias = npk_load_lanes(o->bias + c0, lanes), sum = npk_load_lanes(s->weight_sum + c0, lanes);
  k->start = npk_sub32(bias, NPK_OP(mullo_epi32)(sum, npk_broadcast((int32_t)((uint32_t)s->in_zp + 128u))));
  const npk_v one = npk_broadcast(1);
  npl_general(o->multiplier + c0, o->shift + c0, lanes, k);
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

// The int8 value (as int32 lanes, before the output zero point is added)
// on the arithmetic `stage` (an NPK_STAGE_*, a constant where the callers
// specialize on it) applies: requantized and, where `clamp`, clamped to the
// activation range (else a saturating narrowing is the clamp).
static inline __attribute__((always_inline)) npk_v npl_int8(const npl_stage_t* s, const npl_channels_t* k,
                                                             npk_v acc, const int32_t stage, const int32_t clamp) {
  npk_v x;
  const int32_t floor = stage == NPK_STAGE_SMALL_FLOOR || (stage == NPK_STAGE_ADD_SMALL && s->floor);
  if (stage == NPK_STAGE_GENERAL || stage == NPK_STAGE_ADD_GENERAL) {
    x = npl_requantize(k, acc, s->left);
  } else if (floor) {
    x = NPK_OP(srav_epi32)(npl_high_words(acc, k->m, k->m_odd, k->round_even, k->round_odd), k->floor_shift);
  } else {
    const npk_v round = npl_set64((int64_t)1 << 31);
    x = npl_high_words(npk_add32(acc, acc), k->m, k->m_odd, round, round);
    x = NPK_OP(srav_epi32)(npk_add32(npk_add32(x, k->e_half), NPK_OP(srai_epi32)(x, 31)), k->e);
  }
  return clamp ? npk_clamp(x, s->vo->lo_v, s->vo->hi_v) : x;
}

// Four vectors of int32 lanes narrowed to bytes with signed saturation, in
// lane order: v0's lanes first. The packs work within 128-bit lanes, which
// leaves each vector's 4-byte pieces spread; one permute gathers them.
static inline npk_v npl_pack(npk_v v0, npk_v v1, npk_v v2, npk_v v3) {
#if NPUKIT_S8_X86 == 512
  const __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(v0, v1), _mm512_packs_epi32(v2, v3));
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), b);
#else
  const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
  return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
#endif
}

// The first n bytes of v stored at `at` (n <= 4 * NPK_LANES).
static inline void npl_store_bytes(int8_t* at, npk_v v, int32_t n) {
#if NPUKIT_S8_X86 == 512
  if (n == 64) {
    _mm512_storeu_si512(at, v);
  } else {
    _mm512_mask_storeu_epi8(at, n == 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1, v);
  }
#else
  if (n == 32) {
    _mm256_storeu_si256((__m256i*)at, v);
    return;
  }
  const int32_t words = n / 4;
  if (words > 0) _mm256_maskstore_epi32((int*)at, npk_lane_mask((1u << words) - 1u), v);
  int8_t bytes[32] __attribute__((aligned(32)));
  _mm256_store_si256((__m256i*)bytes, v);
  for (int32_t i = 4 * words; i < n; ++i) at[i] = bytes[i];
#endif
}

// n bytes from `at` (n <= 4 * NPK_LANES), zeros after them.
static inline npk_v npl_load_bytes(const int8_t* at, int32_t n) {
#if NPUKIT_S8_X86 == 512
  return _mm512_maskz_loadu_epi8(n == 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1, at);
#else
  if (n == 32) return _mm256_loadu_si256((const __m256i*)at);
  const int32_t words = n / 4;
  const __m256i whole = words > 0 ? _mm256_maskload_epi32((const int*)at, npk_lane_mask((1u << words) - 1u))
                                  : _mm256_setzero_si256();
  int8_t bytes[32] __attribute__((aligned(32)));
  _mm256_store_si256((__m256i*)bytes, whole);
  for (int32_t i = 4 * words; i < n; ++i) bytes[i] = at[i];
  return _mm256_load_si256((const __m256i*)bytes);
#endif
}

// Bytes NPK_LANES * i .. of b as int32 lanes.
static inline npk_v npl_widen(npk_v b, const int32_t i) {
#if NPUKIT_S8_X86 == 512
  const __m128i part = i == 0   ? _mm512_castsi512_si128(b)
                       : i == 1 ? _mm512_extracti32x4_epi32(b, 1)
                       : i == 2 ? _mm512_extracti32x4_epi32(b, 2)
                                : _mm512_extracti32x4_epi32(b, 3);
  return _mm512_cvtepi8_epi32(part);
#else
  const __m128i half = i < 2 ? _mm256_castsi256_si128(b) : _mm256_extracti128_si256(b, 1);
  return _mm256_cvtepi8_epi32(i % 2 ? _mm_srli_si128(half, 8) : half);
#endif
}

// Whether the int8 stages may narrow by signed saturation (npl_pack): every
// value they store is within the activation ranges, which lie in int8.
static inline int32_t npl_packs(const npukit_s8_output_t* o) {
  const int32_t add = o->mode == NPUKIT_S8_OUT_ADD;
  return o->act_min >= -128 && o->act_max <= 127 &&
         (!add || (o->add.act_min >= -128 && o->add.act_max <= 127));
}

// Output pixel (y, x)'s channels from ch[0].c0: `nv` (1 to 4) consecutive
// channel vectors ch[i] with accumulators acc[i], `n` channels in all.
// `stage` and `clamp` are the layer's (npl_form), constants where the callers
// specialize on them.
static inline __attribute__((always_inline)) void npl_store_pixel(const npl_stage_t* s, const npl_channels_t* ch,
                                                                   const npk_v* acc, int32_t nv, int32_t n,
                                                                   int32_t y, int32_t x, const int32_t stage,
                                                                   const int32_t clamp) {
  const npukit_s8_output_t* o = s->o;
  const int32_t at = y * o->sh + x * o->sw + ch[0].c0;  // channels side by side (sc == 1)
  if (stage == NPK_STAGE_INT32) {
    for (int32_t i = 0; i < nv; ++i) {
      // The vector's channels among the pixel's n (a pixel pair's lone last pixel stores 8 of 16).
      const int32_t left = n - NPK_LANES * i;
      const uint32_t lanes = ch[i].lanes & (left >= NPK_LANES ? ~0u : left > 0 ? (1u << left) - 1u : 0u);
#if NPUKIT_S8_X86 == 512
      _mm512_mask_storeu_epi32((int32_t*)o->out + at + 16 * i, (__mmask16)lanes, acc[i]);
#else
      _mm256_maskstore_epi32((int32_t*)o->out + at + 8 * i, npk_lane_mask(lanes), acc[i]);
#endif
    }
    return;
  }
  if (stage == NPK_STAGE_LANES) {
    for (int32_t i = 0; i < nv; ++i) {
      int32_t values[NPK_LANES];
      npk_store_vector(values, acc[i]);
      for (int32_t l = 0; l < ch[i].n; ++l) npukit_s8_store(o, values[l], ch[i].c0 + l, y, x);
    }
    return;
  }
  const npk_v zero = npk_broadcast(0);
  npk_v v[4];
  for (int32_t i = 0; i < 4; ++i) v[i] = i < nv ? npl_int8(s, &ch[i], acc[i], stage, clamp) : zero;
  if (stage == NPK_STAGE_ADD_GENERAL || stage == NPK_STAGE_ADD_SMALL) {
    const npk_v r = npl_load_bytes((const int8_t*)o->residual + y * o->add.res_sh + x * o->add.res_sw + ch[0].c0, n);
    for (int32_t i = 0; i < 4; ++i) {
      if (i >= nv) continue;
      if (stage == NPK_STAGE_ADD_GENERAL) {
        v[i] = npk_add_general(s->add, npk_add32(v[i], s->vo->zp_v), npl_widen(r, i));
      } else {  // the value minus the ADD's conv_zp
        const npk_v d = npk_add32(v[i], s->add->conv_offset);
        v[i] = s->add->saturate ? npk_add_small(s->add, d, npl_widen(r, i), 0)
                                : npk_add_small(s->add, d, npl_widen(r, i), 1);
      }
    }
  } else {
    for (int32_t i = 0; i < 4; ++i) v[i] = i < nv ? npk_add32(v[i], s->vo->zp_v) : zero;
  }
#if NPUKIT_S8_X86 == 512
  if (nv == 1) {  // one vector: one saturating narrowing (VPMOVSDB) instead of the packs and permute
    _mm_mask_storeu_epi8((int8_t*)o->out + at, (__mmask16)((1u << n) - 1u), _mm512_cvtsepi32_epi8(v[0]));
    return;
  }
#endif
  npl_store_bytes((int8_t*)o->out + at, npl_pack(v[0], v[1], v[2], v[3]), n);
}

// The layer's stage and clamp as one number for the callers' switch:
// stage * 2 + clamp; NPK_STAGE_LANES where the narrowing could not saturate.
static inline int32_t npl_form(const npl_stage_t* s) {
  // The float output stage goes lane by lane (each lane is another channel).
  const int32_t floating = s->vo->stage == NPK_STAGE_FLOAT || s->vo->stage == NPK_STAGE_ADD_FLOAT;
  const int32_t stage = !floating && (s->vo->stage == NPK_STAGE_INT32 || npl_packs(s->o)) ? s->vo->stage
                                                                                          : NPK_STAGE_LANES;
  const int32_t int8 = stage == NPK_STAGE_SMALL || stage == NPK_STAGE_SMALL_FLOOR || stage == NPK_STAGE_GENERAL;
  return stage * 2 + (int8 ? s->clamp : 1);
}

#define NPL_FORMS(F)                                                                                           \
  F(NPK_STAGE_INT32, 1) F(NPK_STAGE_LANES, 1) F(NPK_STAGE_GENERAL, 1) F(NPK_STAGE_SMALL, 1)                    \
  F(NPK_STAGE_SMALL, 0) F(NPK_STAGE_SMALL_FLOOR, 1) F(NPK_STAGE_SMALL_FLOOR, 0) F(NPK_STAGE_ADD_GENERAL, 1)    \
  F(NPK_STAGE_ADD_SMALL, 1)

#endif  // NPUKIT_S8_X86
#endif  // NPUKIT_CPU_KERNELS_S8_LANES_X86_H_
