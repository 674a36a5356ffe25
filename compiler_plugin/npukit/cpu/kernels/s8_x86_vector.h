// What the x86 vector kernels (s8_conv_x86.c, s8_depthwise_x86.c) share:
// pixel vectors and their runs in memory, and the output stage over a
// vector of pixels of one channel.
//
// With NPUKIT_S8_X86 (s8_x86.h) 512, a vector is 16 pixels and VPDPBUSD
// takes four u8 x s8 products per 32-bit lane; with 256 (AVX2), a vector
// is 8 pixels and the same products are two VPMADDWD of the even and odd
// bytes widened to 16 bits.
//
// Both multiply unsigned inputs, x + 128 (x XOR 0x80), by the signed
// weights; the input zero point comes back in the bias once per channel:
// bias + sum((x - zp) * w) = bias - (zp + 128) * sum(w) + sum((x + 128) * w),
// in wrapping 32-bit arithmetic like the accumulators themselves.
//
// A vector's lanes are consecutive output pixels; a run is a set of lanes
// whose elements are consecutive in a tensor (one row segment, or the whole
// vector when rows are contiguous), read or written with one masked access.
#ifndef NPUKIT_CPU_KERNELS_S8_X86_VECTOR_H_
#define NPUKIT_CPU_KERNELS_S8_X86_VECTOR_H_

#include "s8_output.h"
#include "s8_x86.h"

#if NPUKIT_S8_X86

#include <immintrin.h>

#if NPUKIT_S8_X86 == 512
#define NPK_LANES 16
typedef __m512i npk_v;
typedef __m512 npk_f;  // the float output stage's lanes
#define NPK_PS(op) _mm512_##op##_ps
#define NPK_CVT_F(v) _mm512_cvtepi32_ps(v)
#define NPK_CVT_I(f) _mm512_cvttps_epi32(f)
#else
#define NPK_LANES 8
typedef __m256i npk_v;
typedef __m256 npk_f;
#define NPK_PS(op) _mm256_##op##_ps
#define NPK_CVT_F(v) _mm256_cvtepi32_ps(v)
#define NPK_CVT_I(f) _mm256_cvttps_epi32(f)
#endif

static inline npk_v npk_broadcast(int32_t x) {
#if NPUKIT_S8_X86 == 512
  return _mm512_set1_epi32(x);
#else
  return _mm256_set1_epi32(x);
#endif
}

// A whole vector read from, or written to, memory of any alignment.
static inline npk_v npk_load_vector(const void* at) {
#if NPUKIT_S8_X86 == 512
  return _mm512_loadu_si512(at);
#else
  return _mm256_loadu_si256((const __m256i*)at);
#endif
}
static inline void npk_store_vector(void* at, npk_v v) {
#if NPUKIT_S8_X86 == 512
  _mm512_storeu_si512(at, v);
#else
  _mm256_storeu_si256((__m256i*)at, v);
#endif
}

#if NPUKIT_S8_X86 == 256
// The int32 lanes whose bits are set in `lanes`, as an AVX2 mask (all ones).
static inline __m256i npk_lane_mask(uint32_t lanes) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int32_t)lanes), bit), bit);
}

// AVX2 has no byte-masked access. A run of adjacent lanes (npk_run_t) of
// bytes is read or written as two 4-, 2- or 1-byte accesses at its two ends,
// overlapping where it is shorter than twice that: only its own bytes, in
// a few instructions and branches that follow the run's length.
static inline uint32_t npk_get32(const int8_t* at) {
  uint32_t x;
  __builtin_memcpy(&x, at, 4);
  return x;
}
static inline uint16_t npk_get16(const int8_t* at) {
  uint16_t x;
  __builtin_memcpy(&x, at, 2);
  return x;
}

// The bytes at `at + lane` for the adjacent lanes of `lanes`, in their
// lanes' bytes of the result; zero elsewhere.
static inline uint64_t npk_load_run(const int8_t* at, uint32_t lanes) {
  const int32_t lo = __builtin_ctz(lanes), n = __builtin_ctz(~(lanes >> lo));
  const int8_t* from = at + lo;
  uint64_t x;
  if (n >= 4) {
    x = (uint64_t)npk_get32(from) | (uint64_t)npk_get32(from + n - 4) << (8 * (n - 4));
  } else if (n >= 2) {
    x = (uint64_t)npk_get16(from) | (uint64_t)npk_get16(from + n - 2) << (8 * (n - 2));
  } else {
    x = (uint8_t)*from;
  }
  return x << (8 * lo);
}

// Bytes `lanes` (adjacent) of `bytes` stored at `at + lane`.
static inline void npk_store_run(int8_t* at, uint64_t bytes, uint32_t lanes) {
  const int32_t lo = __builtin_ctz(lanes), n = __builtin_ctz(~(lanes >> lo));
  int8_t* to = at + lo;
  bytes >>= 8 * lo;
  if (n >= 4) {
    const uint32_t first = (uint32_t)bytes, last = (uint32_t)(bytes >> (8 * (n - 4)));
    __builtin_memcpy(to, &first, 4);
    __builtin_memcpy(to + n - 4, &last, 4);
  } else if (n >= 2) {
    const uint16_t first = (uint16_t)bytes, last = (uint16_t)(bytes >> (8 * (n - 2)));
    __builtin_memcpy(to, &first, 2);
    __builtin_memcpy(to + n - 2, &last, 2);
  } else {
    *to = (int8_t)bytes;
  }
}
#endif

// The int32 at `at` of the lanes whose bits are set in `lanes`, zero in the others.
static inline __attribute__((always_inline)) npk_v npk_load_lanes(const void* at, uint32_t lanes) {
#if NPUKIT_S8_X86 == 512
  return _mm512_maskz_loadu_epi32((__mmask16)lanes, at);
#else
  if (lanes == 0xffu) return npk_load_vector(at);
  return _mm256_maskload_epi32((const int*)at, npk_lane_mask(lanes));
#endif
}

// Pixel vectors are handled up to NPK_VECTORS at a time (a panel).
#define NPK_VECTORS 4
#define NPK_PANEL_LANES (NPK_LANES * NPK_VECTORS)

// The output pixel of each lane of a panel; y < 0: the lane has none.
typedef struct {
  int32_t n;
  int32_t y[NPK_PANEL_LANES], x[NPK_PANEL_LANES];
} npk_lanes_t;

// Lanes `lanes` (bits, within vector `vector`) of a tensor whose element
// for lane i of that vector is at `offset + i * step` elements.
typedef struct {
  int32_t offset;
  uint32_t lanes;
  int32_t vector;
} npk_run_t;

// With AVX-512 VBMI2, a vector of several runs of bytes whose elements
// increase lane by lane within 32 of its first (5-wide rows written into a
// plane of 7, or rows of a plane with the lanes between them skipped) is
// stored with one masked store: its lanes' bytes compressed, then expanded
// to their places (NPK_SPOTS).
#if NPUKIT_S8_X86 == 512 && defined(__AVX512VBMI2__)
#define NPK_SPOTS 1
#else
#define NPK_SPOTS 0
#endif

// Runs of a panel in vector order, and where each vector's runs begin.
typedef struct {
  int32_t count;
  int32_t first[NPK_VECTORS + 1];
  npk_run_t run[NPK_PANEL_LANES];
  // NPK_SPOTS: per vector of two or more runs of step 1 so placed, its first
  // element, its lanes and the bits (element - first) of their elements;
  // spots 0 otherwise.
  int32_t base[NPK_VECTORS];
  uint32_t valid[NPK_VECTORS], spots[NPK_VECTORS];
  // Per vector, the offset of its one run where that run has every lane
  // (one plain access), or NPK_NOT_WHOLE.
  int32_t whole[NPK_VECTORS];
} npk_runs_t;

#define NPK_NOT_WHOLE INT32_MIN
#define NPK_ALL_LANES ((1u << NPK_LANES) - 1u)

// npk_runs_t's first, then its spots (runs of lanes `step` apart).
static inline void npk_runs_index(npk_runs_t* r, int32_t step) {
  int32_t v = 0;
  for (int32_t i = 0; i < r->count; ++i) {
    while (v <= r->run[i].vector) r->first[v++] = i;
  }
  while (v <= NPK_VECTORS) r->first[v++] = r->count;
  for (v = 0; v < NPK_VECTORS; ++v) {
    const int32_t i = r->first[v];
    r->whole[v] = r->first[v + 1] - i == 1 && r->run[i].lanes == NPK_ALL_LANES ? r->run[i].offset : NPK_NOT_WHOLE;
  }
  for (v = 0; v < NPK_VECTORS; ++v) {
    r->spots[v] = 0;
    if (!NPK_SPOTS || step != 1 || r->first[v + 1] - r->first[v] < 2) continue;
    const npk_run_t* run = &r->run[r->first[v]];
    const int32_t base = run[0].offset + __builtin_ctz(run[0].lanes);
    uint32_t spots = 0, valid = 0;
    int32_t last = base - 1, placed = 1;
    // A run's elements rise with its lanes (offset + lane): it is so placed
    // when its lowest follows the previous run's highest and its highest is
    // within 32 of the base; its spots are then its lanes moved by offset - base.
    for (int32_t i = 0; i < r->first[v + 1] - r->first[v] && placed; ++i) {
      const uint32_t lanes = run[i].lanes;
      const int32_t low = run[i].offset + __builtin_ctz(lanes), high = run[i].offset + 31 - __builtin_clz(lanes);
      const int32_t shift = run[i].offset - base;
      placed = low > last && high - base < 32;
      spots |= (uint32_t)(shift >= 0 ? (uint64_t)lanes << shift : (uint64_t)lanes >> -shift);
      valid |= lanes, last = high;
    }
    if (!placed) continue;
    r->base[v] = base, r->valid[v] = valid, r->spots[v] = spots;
  }
}

// A panel whose lanes are the `n` consecutive positions from `p0` of rows
// of `pitch`, of which the first `width` of each row are output pixels (the
// others have none): every lane a pixel where pitch == width (convolutions),
// and the positions between rows too on the grid and flat depthwise lanes.
static inline void npk_lanes_rows(npk_lanes_t* l, int32_t p0, int32_t n, int32_t pitch, int32_t width) {
  l->n = n;
  for (int32_t i = 0, y = p0 / pitch, x = p0 % pitch; i < n; ++i) {
    l->y[i] = x < width ? y : -1, l->x[i] = x;
    if (++x == pitch) x = 0, ++y;
  }
}

// The runs of the elements y * sy + x * sx of the pixels of such a panel,
// where consecutive lanes of one run are `step` elements apart; found a row
// segment at a time. A run continues into the next segment only from the
// lane before it (no position between).
static inline void npk_runs_rows(int32_t p0, int32_t n, int32_t pitch, int32_t width, int32_t sy, int32_t sx,
                                 int32_t step, npk_runs_t* r) {
  int32_t count = 0, y = p0 / pitch, x = p0 % pitch, last = 0, end = -1;
  for (int32_t i = 0; i < n;) {
    if (x >= width) {  // positions between rows
      i += pitch - x, x = 0, ++y;
      continue;
    }
    const int32_t lane = i % NPK_LANES;
    int32_t len = NPK_LANES - lane;
    if (len > width - x) len = width - x;
    if (len > n - i) len = n - i;
    if (sx != step) len = 1;  // lanes of a row are not `step` apart: one run each
    const int32_t at = y * sy + x * sx;
    const uint32_t bits = (uint32_t)((1ull << len) - 1u) << lane;
    if (end == i && lane != 0 && at == last + step) {
      r->run[count - 1].lanes |= bits;
    } else {
      r->run[count].offset = at - lane * step;
      r->run[count].lanes = bits;
      r->run[count].vector = i / NPK_LANES;
      ++count;
    }
    last = at + (len - 1) * step;
    i += len, x += len, end = i;
    if (x == pitch) x = 0, ++y;
  }
  r->count = count;
  npk_runs_index(r, step);
}


// The layer's output stage as vectors apply it.
typedef struct {
  const npukit_s8_output_t* o;
  int32_t vector;  // 0: every output goes through npukit_s8_store
  // The vector stage on the small-accumulator arithmetic (npukit_s8_output_t's
  // `small`, or `add_small` with the ADD).
  int32_t small;
  int32_t lo, hi;  // activation range minus the output zero point
  int32_t add_lo, add_hi;  // the ADD's activation range minus its output zero point
  int32_t stage;           // NPK_STAGE_*: which of npk_store's arithmetic applies
  // On the small arithmetic with AVX-512, the activation range is all of
  // int8: npk_put's saturating narrowing is the clamp, which is left out.
  int32_t saturate;
  npk_v lo_v, hi_v, zp_v;  // lo, hi and the output zero point in every lane
  // The float output stage (NPK_STAGE_FLOAT, NPK_STAGE_ADD_FLOAT): the
  // quantization of the layer's output and of the ADD's, s8_output.h's
  // npukit_s8_float_quantize in every lane.
  npk_f f_scale, f_upper, f_zp, f_low, f_high;
  npk_f a_conv_scale, a_res_scale, a_conv_zp, a_res_zp;
  npk_f a_scale, a_upper, a_zp, a_low, a_high;
  int32_t f_relu, a_relu;
} npk_out_t;

// npk_store's forms, fixed per layer by npk_out.
enum {
  NPK_STAGE_LANES,        // lane by lane (npukit_s8_store)
  NPK_STAGE_INT32,        // the accumulators themselves
  NPK_STAGE_GENERAL,      // int8 on the general arithmetic
  NPK_STAGE_SMALL,        // int8 on the small arithmetic
  NPK_STAGE_SMALL_FLOOR,  // the same, on one rounding (npk_scale_floor)
  NPK_STAGE_ADD_GENERAL,  // the ADD on the general arithmetic
  NPK_STAGE_ADD_SMALL,    // the ADD on the small arithmetic
  NPK_STAGE_FLOAT,        // int8 on the float output stage (an ONNX QDQ layer)
  NPK_STAGE_ADD_FLOAT,    // the same, then the float ADD
};

static inline int32_t npk_fits(int64_t x) { return x >= INT32_MIN && x <= INT32_MAX; }

// Whether a clamp to [act_min, act_max] can be taken before adding the zero
// point `zp` (the vector stages' order): an ordered range whose bounds
// minus the zero point fit int32.
static inline int32_t npk_range_exact(int32_t act_min, int32_t act_max, int32_t zp) {
  return act_min <= act_max && npk_fits((int64_t)act_min - zp) && npk_fits((int64_t)act_max - zp);
}

// Whether the vector output stage computes exactly what npukit_s8_store
// does: int32 out always; int8 (and the ADD) for convolutions whose
// multipliers are not INT32_MIN (the one saturating doubling product), whose
// ranges are ordered, and whose ADD left shifts cannot overflow.
static inline npk_out_t npk_out(const npukit_s8_output_t* o) {
  const int32_t* p = o->p;
  const npukit_s8_add_t* k = &o->add;
  npk_out_t v;
  v.o = o;
  v.lo = v.hi = 0;
  v.add_lo = v.add_hi = 0;
  v.small = 0;
  v.saturate = 0;
  v.lo_v = v.hi_v = v.zp_v = npk_broadcast(0);
  if (o->mode == NPUKIT_S8_OUT_INT32) {
    v.vector = 1;
    v.stage = NPK_STAGE_INT32;
    return v;
  }
  if (o->fl.table) {
    const npukit_s8_float_t* f = &o->fl;
    v.vector = 1;
    v.stage = o->mode == NPUKIT_S8_OUT_ADD ? NPK_STAGE_ADD_FLOAT : NPK_STAGE_FLOAT;
    v.f_scale = NPK_PS(set1)(f->out.out_scale), v.f_upper = NPK_PS(set1)(f->out.upper);
    v.f_zp = NPK_PS(set1)(f->out.zp), v.f_low = NPK_PS(set1)(f->out.low), v.f_high = NPK_PS(set1)(f->out.high);
    v.f_relu = f->out.relu;
    v.a_conv_scale = NPK_PS(set1)(f->add_conv_scale), v.a_res_scale = NPK_PS(set1)(f->add_res_scale);
    v.a_conv_zp = NPK_PS(set1)(f->add_conv_zp), v.a_res_zp = NPK_PS(set1)(f->add_res_zp);
    v.a_scale = NPK_PS(set1)(f->add.out_scale), v.a_upper = NPK_PS(set1)(f->add.upper);
    v.a_zp = NPK_PS(set1)(f->add.zp), v.a_low = NPK_PS(set1)(f->add.low), v.a_high = NPK_PS(set1)(f->add.high);
    v.a_relu = f->add.relu;
    return v;
  }
  int32_t narrow = 1;  // the ADD's operands fit npk_operand
  // The float output stage (o->fl) goes lane by lane through npukit_s8_store.
  v.vector = !o->once && !o->fl.table && npk_range_exact(o->act_min, o->act_max, o->zp);
  v.lo = (int32_t)((int64_t)o->act_min - o->zp), v.hi = (int32_t)((int64_t)o->act_max - o->zp);
  v.vector = v.vector && !NPUKIT_S8_SOME_CHANNEL(p[NPUKIT_S8_W_OUT_C], o->multiplier[c] == INT32_MIN);
  if (v.vector && o->mode == NPUKIT_S8_OUT_ADD) {
    const int32_t lo = k->act_min, hi = k->act_max, shift = k->left_shift;
    // The int8 operands before the left shift: the conv's value is within its
    // activation range, the residual is any int8.
    const int64_t conv_span = (int64_t)o->act_max - k->conv_zp, conv_span2 = (int64_t)o->act_min - k->conv_zp;
    const int64_t res_span = 127 - (int64_t)k->res_zp, res_span2 = -128 - (int64_t)k->res_zp;
    v.vector = shift >= 0 && shift < 31 && k->conv_mult != INT32_MIN && k->res_mult != INT32_MIN &&
               k->out_mult != INT32_MIN && npk_range_exact(lo, hi, k->out_zp) &&
               npk_fits(conv_span * ((int64_t)1 << shift)) &&
               npk_fits(conv_span2 * ((int64_t)1 << shift)) && npk_fits(res_span * ((int64_t)1 << shift)) &&
               npk_fits(res_span2 * ((int64_t)1 << shift));
    v.add_lo = (int32_t)((int64_t)lo - k->out_zp), v.add_hi = (int32_t)((int64_t)hi - k->out_zp);
    // npk_operand's 32-bit products need operands (an int8 minus a zero point) below 2^10.
    const int64_t spans[4] = {conv_span, conv_span2, res_span, res_span2};
    for (int32_t i = 0; i < 4; ++i) {
      if (spans[i] > 1023 || spans[i] < -1023) narrow = 0;
    }
  }
  v.small = v.vector && (o->mode == NPUKIT_S8_OUT_ADD ? o->add_small && narrow : o->small);
  v.saturate = NPUKIT_S8_X86 == 512 && v.small && o->mode == NPUKIT_S8_OUT_INT8 && o->act_min == -128 &&
               o->act_max == 127;
  v.lo_v = npk_broadcast(v.lo), v.hi_v = npk_broadcast(v.hi), v.zp_v = npk_broadcast(o->zp);
  if (!v.vector) {
    v.stage = NPK_STAGE_LANES;
  } else if (o->mode == NPUKIT_S8_OUT_ADD) {
    v.stage = v.small ? NPK_STAGE_ADD_SMALL : NPK_STAGE_ADD_GENERAL;
  } else {
    v.stage = !v.small ? NPK_STAGE_GENERAL : v.lo >= 0 ? NPK_STAGE_SMALL_FLOOR : NPK_STAGE_SMALL;
  }
  return v;
}

// Per-channel accumulator start: bias - (zp + 128) * sum(w), wrapping.
static inline int32_t npk_fold(int32_t bias, int32_t in_zp, int32_t weight_sum) {
  return (int32_t)((uint32_t)bias - ((uint32_t)in_zp + 128u) * (uint32_t)weight_sum);
}

// mynpu_requantize's constants for one multiplier and shift, set up once
// (per channel, or per ADD operand) for npk_requantize.
typedef struct {
  npk_v multiplier, over, under, mask, half;
  int32_t left, right;
} npk_rq_t;

static inline npk_rq_t npk_rq(int32_t multiplier, int32_t shift) {
  npk_rq_t r;
  shift = mynpu_clamp(shift, -31, 30);
  r.left = shift > 0 ? shift : 0;
  r.right = shift < 0 ? -shift : 0;
  const int32_t mask = (int32_t)((1u << r.right) - 1u);
  r.multiplier = npk_broadcast(multiplier);
  r.over = npk_broadcast(INT32_MAX >> r.left);
  r.under = npk_broadcast(INT32_MIN >> r.left);
  r.mask = npk_broadcast(mask);
  r.half = npk_broadcast(mask >> 1);
  return r;
}

#if NPUKIT_S8_X86 == 512

static inline __m512i npk_u8(__m512i x) { return _mm512_xor_si512(x, _mm512_set1_epi8((char)0x80)); }

static inline __m512i npk_dot(__m512i acc, __m512i u, __m512i w) { return _mm512_dpbusd_epi32(acc, u, w); }

// mynpu_requantize over 16 lanes (multiplier != INT32_MIN): saturating left
// shift, rounding doubling high multiply ((a * m + 2^30) >> 31, which is
// TFLite's nudged division for both signs), rounding right shift with ties
// away from zero. Its constants are set up once per channel (npk_rq).
static inline __attribute__((always_inline)) __m512i npk_requantize(const npk_rq_t* r, __m512i acc) {
  if (r->left > 0) {
    const __mmask16 over = _mm512_cmpgt_epi32_mask(acc, r->over);
    const __mmask16 under = _mm512_cmplt_epi32_mask(acc, r->under);
    acc = _mm512_sll_epi32(acc, _mm_cvtsi32_si128(r->left));
    acc = _mm512_mask_mov_epi32(acc, over, _mm512_set1_epi32(INT32_MAX));
    acc = _mm512_mask_mov_epi32(acc, under, _mm512_set1_epi32(INT32_MIN));
  }
  const __m512i nudge = _mm512_set1_epi64((int64_t)1 << 30);
  __m512i even = _mm512_add_epi64(_mm512_mul_epi32(acc, r->multiplier), nudge);
  __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(acc, 32), r->multiplier), nudge);
  __m512i x = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
  if (r->right == 0) return x;
  const __m512i remainder = _mm512_and_si512(x, r->mask);
  const __m512i threshold = _mm512_sub_epi32(r->half, _mm512_srai_epi32(x, 31));
  x = _mm512_sra_epi32(x, _mm_cvtsi32_si128(r->right));
  return _mm512_mask_add_epi32(x, _mm512_cmpgt_epi32_mask(remainder, threshold), x, _mm512_set1_epi32(1));
}

// a + b saturated to int32.
static inline __m512i npk_add_sat(__m512i a, __m512i b) {
  const __m512i s = _mm512_add_epi32(a, b);
  const __m512i overflow = _mm512_and_si512(_mm512_xor_si512(a, s), _mm512_xor_si512(b, s));
  const __mmask16 m = _mm512_movepi32_mask(overflow);
  const __m512i limit = _mm512_xor_si512(_mm512_srai_epi32(a, 31), _mm512_set1_epi32(INT32_MAX));
  return _mm512_mask_mov_epi32(s, m, limit);
}

static inline __m512i npk_load_residual(const npk_out_t* vo, const npk_runs_t* res, int32_t vector, int32_t c) {
  const int8_t* base = (const int8_t*)vo->o->residual + c * vo->o->add.res_sc;
  if (res->whole[vector] != NPK_NOT_WHOLE) {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(base + res->whole[vector])));
  }
  __m128i r = _mm_setzero_si128();
  for (int32_t i = res->first[vector]; i < res->first[vector + 1]; ++i) {
    r = _mm_mask_loadu_epi8(r, (__mmask16)res->run[i].lanes, base + res->run[i].offset);
  }
  return _mm512_cvtepi8_epi32(r);
}

#else  // AVX2

static inline __m256i npk_u8(__m256i x) { return _mm256_xor_si256(x, _mm256_set1_epi8((char)0x80)); }

// VPDPBUSD's sum of four u8 x s8 products per lane: the even and the odd
// bytes widened to 16 bits, two VPMADDWD (no product pair overflows).
static inline __m256i npk_dot(__m256i acc, __m256i u, __m256i w) {
  const __m256i u_even = _mm256_and_si256(u, _mm256_set1_epi16(0xff)), u_odd = _mm256_srli_epi16(u, 8);
  const __m256i w_even = _mm256_srai_epi16(_mm256_slli_epi16(w, 8), 8), w_odd = _mm256_srai_epi16(w, 8);
  acc = _mm256_add_epi32(acc, _mm256_madd_epi16(u_even, w_even));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(u_odd, w_odd));
}

static inline __attribute__((always_inline)) __m256i npk_requantize(const npk_rq_t* r, __m256i acc) {
  if (r->left > 0) {
    const __m256i over = _mm256_cmpgt_epi32(acc, r->over);
    const __m256i under = _mm256_cmpgt_epi32(r->under, acc);
    acc = _mm256_sll_epi32(acc, _mm_cvtsi32_si128(r->left));
    acc = _mm256_blendv_epi8(acc, _mm256_set1_epi32(INT32_MAX), over);
    acc = _mm256_blendv_epi8(acc, _mm256_set1_epi32(INT32_MIN), under);
  }
  const __m256i nudge = _mm256_set1_epi64x((int64_t)1 << 30);
  __m256i even = _mm256_add_epi64(_mm256_mul_epi32(acc, r->multiplier), nudge);
  __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), r->multiplier), nudge);
  __m256i x = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
  if (r->right == 0) return x;
  const __m256i remainder = _mm256_and_si256(x, r->mask);
  const __m256i threshold = _mm256_sub_epi32(r->half, _mm256_srai_epi32(x, 31));
  x = _mm256_sra_epi32(x, _mm_cvtsi32_si128(r->right));
  return _mm256_sub_epi32(x, _mm256_cmpgt_epi32(remainder, threshold));
}

static inline __m256i npk_add_sat(__m256i a, __m256i b) {
  const __m256i s = _mm256_add_epi32(a, b);
  const __m256i overflow = _mm256_srai_epi32(_mm256_and_si256(_mm256_xor_si256(a, s), _mm256_xor_si256(b, s)), 31);
  const __m256i limit = _mm256_xor_si256(_mm256_srai_epi32(a, 31), _mm256_set1_epi32(INT32_MAX));
  return _mm256_blendv_epi8(s, limit, overflow);
}

static inline __m256i npk_load_residual(const npk_out_t* vo, const npk_runs_t* res, int32_t vector, int32_t c) {
  const int8_t* base = (const int8_t*)vo->o->residual + c * vo->o->add.res_sc;
  if (res->whole[vector] != NPK_NOT_WHOLE) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(base + res->whole[vector])));
  }
  uint64_t bytes = 0;
  for (int32_t i = res->first[vector]; i < res->first[vector + 1]; ++i) {
    bytes |= npk_load_run(base + res->run[i].offset, res->run[i].lanes);
  }
  return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128((long long)bytes));
}

#endif

// Lane-wise arithmetic of either width.
#if NPUKIT_S8_X86 == 512
#define NPK_OP(name) _mm512_##name
#else
#define NPK_OP(name) _mm256_##name
#endif

// The small-accumulator arithmetic of s8_output.h for one multiplier and
// right shift e = 0..31, over vectors of doubled values below 2^31:
// npukit_s8_rdbpot_half0(npukit_s8_rdhm_doubled(a2, m), e, 2^(e - 1)).
typedef struct {
  npk_v multiplier, half;
  __m128i e;
  int32_t shifts;  // e > 0
  // npk_scale_floor's: 2^30 + 2^(30 + e) in 64-bit lanes, and e - 1.
  npk_v floor_round;
  __m128i floor_shift;
} npk_scale_t;

static inline npk_scale_t npk_scale_of(int32_t multiplier, int32_t e) {
  npk_scale_t s;
  s.multiplier = npk_broadcast(multiplier);
  s.half = npk_broadcast(e > 0 ? (int32_t)(1u << (e - 1)) : 0);
  s.e = _mm_cvtsi32_si128(e);
  s.shifts = e > 0;
  const int64_t floor_round = ((int64_t)1 << 30) + (e > 0 ? (int64_t)1 << (30 + e) : 0);
#if NPUKIT_S8_X86 == 512
  s.floor_round = _mm512_set1_epi64(floor_round);
#else
  s.floor_round = _mm256_set1_epi64x(floor_round);
#endif
  s.floor_shift = _mm_cvtsi32_si128(e > 0 ? e - 1 : 0);
  return s;
}

// x / 2^e rounded, ties away from zero (npukit_s8_rdbpot_half0).
static inline __attribute__((always_inline)) npk_v npk_round_shift(const npk_scale_t* s, npk_v x) {
  if (!s->shifts) return x;
#if NPUKIT_S8_X86 == 512
  return _mm512_sra_epi32(_mm512_add_epi32(_mm512_add_epi32(x, s->half), _mm512_srai_epi32(x, 31)), s->e);
#else
  return _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(x, s->half), _mm256_srai_epi32(x, 31)), s->e);
#endif
}

// The high word of a * m + round per lane (`round` in 64-bit lanes), from
// the 64-bit products of the even and the odd lanes.
static inline __attribute__((always_inline)) npk_v npk_high_words(npk_v a, npk_v m, npk_v round) {
#if NPUKIT_S8_X86 == 512
  const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(a, m), round);
  const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(a, 32), m), round);
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
#else
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(a, m), round);
  const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), m), round);
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
#endif
}

// The rounded high word of a2 * m: (a2 * m + 2^31) >> 32; then the rounding shift.
static inline __attribute__((always_inline)) npk_v npk_scale(const npk_scale_t* s, npk_v a2) {
#if NPUKIT_S8_X86 == 512
  const __m512i round = _mm512_set1_epi64((int64_t)1 << 31);
#else
  const __m256i round = _mm256_set1_epi64x((int64_t)1 << 31);
#endif
  return npk_round_shift(s, npk_high_words(a2, s->multiplier, round));
}

// npk_scale's value where it is then clamped to a range whose low bound is
// 0 or more, for e >= 1, with one rounding: npk_scale(2a) is RDBP(x, e) with
// x = floor((a * m + 2^30) / 2^31) and RDBP(x, e) = floor((x + 2^(e-1) -
// [x < 0]) / 2^e). For x >= 0, nested floors make that
// floor((a * m + 2^30 + 2^(30 + e)) / 2^(31 + e)): the high word of the
// 64-bit sum, shifted right by e - 1. For x < 0 both values are 0 or less,
// which the clamp maps to its low bound alike.
static inline __attribute__((always_inline)) npk_v npk_scale_floor(const npk_scale_t* s, npk_v a) {
  return NPK_OP(sra_epi32)(npk_high_words(a, s->multiplier, s->floor_round), s->floor_shift);
}

// npk_scale(2a) clamped to [lo, hi]: on one rounding where `floor` (lo >= 0
// and e >= 1). Unclamped where not `clamp` (the caller's saturating
// narrowing is the clamp); the value is then below 2^30 in magnitude.
static inline __attribute__((always_inline)) npk_v npk_scale_clamped(const npk_scale_t* s, int32_t floor, npk_v a,
                                                                     npk_v lo, npk_v hi, int32_t clamp) {
  const npk_v x = floor ? npk_scale_floor(s, a) : npk_scale(s, NPK_OP(add_epi32)(a, a));
  return clamp ? NPK_OP(min_epi32)(NPK_OP(max_epi32)(x, lo), hi) : x;
}

// One ADD operand on the small arithmetic: npk_scale of (d << 21) for
// |d| <= 255 (an int8 minus a zero point). That is floor((d * m + 2^10) /
// 2^11), and with m = high * 2^11 + low (0 <= low < 2^11) it is
// d * high + ((d * low + 2^10) >> 11): 32-bit products (|d * high| < 2^28),
// the low one a VPMADDWD of d's low half (its high half times low's, 0).
// Where low is 0 the second term is 0: TFLite gives the ADD's input of the
// larger scale the multiplier 2^30 with no shift, which leaves d * 2^19.
typedef struct {
  npk_scale_t scale;
  npk_v high, low;
  int32_t has_low;
} npk_operand_t;

static inline npk_operand_t npk_operand_of(int32_t multiplier, int32_t e) {
  npk_operand_t s;
  s.scale = npk_scale_of(multiplier, e);
  s.high = npk_broadcast(multiplier >> 11);
  s.low = npk_broadcast(multiplier & 2047);
  s.has_low = (multiplier & 2047) != 0;
  return s;
}

static inline __attribute__((always_inline)) npk_v npk_operand(const npk_operand_t* s, npk_v d) {
  const npk_v high = NPK_OP(mullo_epi32)(d, s->high);
  if (!s->has_low) return npk_round_shift(&s->scale, high);
  const npk_v low = NPK_OP(srai_epi32)(NPK_OP(add_epi32)(NPK_OP(madd_epi16)(d, s->low), npk_broadcast(1 << 10)), 11);
  return npk_round_shift(&s->scale, NPK_OP(add_epi32)(high, low));
}

// The constants of one output channel's vector stage, and the layer's ADD.
typedef struct {
  npk_rq_t rq;
  npk_scale_t scale;  // npk_out_t's small
  int32_t floor;      // npk_scale_clamped's
  npk_v lo, hi, zp;
  npk_f f0, f1, fb;  // the float output stage's scale0, scale1 and bias
} npk_channel_t;

typedef struct {
  npk_rq_t conv, res, out;
  // npk_out_t's small: the operands (x << 20) and their sum scaled; the
  // first operand comes from the output stage's int8 value minus the output
  // zero point, plus conv_offset (output zero point - the ADD's conv_zp).
  npk_operand_t small_conv, small_res;
  npk_scale_t small_out;
  int32_t small_floor;  // npk_scale_clamped's for small_out
  int32_t saturate;     // npk_out_t's, for the ADD's sum: its clamp is int8's range
  npk_v conv_offset;
  npk_v small_lo, small_hi;  // int8's range and the activation range, both minus the output zero point
  npk_v conv_zp, res_zp, lo, hi, zp;
  __m128i shift;
} npk_add_t;

static inline npk_channel_t npk_channel(const npk_out_t* vo, int32_t c) {
  npk_channel_t k;
  const npukit_s8_output_t* o = vo->o;
  const int32_t vector = vo->vector && o->mode != NPUKIT_S8_OUT_INT32;
  if (vo->small) {
    k.scale = npk_scale_of(o->multiplier[c], -o->shift[c]);
  } else {
    k.rq = npk_rq(vector ? o->multiplier[c] : 0, vector ? o->shift[c] : 0);
  }
  k.floor = vo->small && vo->lo >= 0;  // the small arithmetic's e is 1..31
  k.lo = vo->lo_v, k.hi = vo->hi_v, k.zp = vo->zp_v;
  const float* f = o->fl.table ? o->fl.table + 3 * c : (const float*)0;
  k.f0 = NPK_PS(set1)(f ? f[0] : 0.0f), k.f1 = NPK_PS(set1)(f ? f[1] : 0.0f), k.fb = NPK_PS(set1)(f ? f[2] : 0.0f);
  return k;
}

// s8_output.h's npukit_s8_float_quantize in every lane, operation for
// operation: MAXPS and MINPS give what its comparisons give (no lane is NaN).
static inline __attribute__((always_inline)) npk_v npk_float_quantize(npk_f v, int32_t relu, npk_f upper,
                                                                     npk_f scale, npk_f zp, npk_f low, npk_f high) {
  const npk_f limit = NPK_PS(set1)(4194304.0f), magic = NPK_PS(set1)(12582912.0f);
  if (relu) v = NPK_PS(max)(v, NPK_PS(setzero)());
  v = NPK_PS(min)(v, upper);
  npk_f x = NPK_PS(div)(v, scale);
  x = NPK_PS(min)(NPK_PS(max)(x, NPK_PS(sub)(NPK_PS(setzero)(), limit)), limit);
  x = NPK_PS(add)(NPK_PS(sub)(NPK_PS(add)(x, magic), magic), zp);
  x = NPK_PS(min)(NPK_PS(max)(x, low), high);
  return NPK_CVT_I(x);
}

// A channel's int8 outputs (as int32 lanes) on the float output stage.
static inline __attribute__((always_inline)) npk_v npk_int8_float(const npk_out_t* vo, const npk_channel_t* k,
                                                                  npk_v acc) {
  npk_f v = NPK_PS(mul)(NPK_CVT_F(acc), k->f0);
  v = NPK_PS(mul)(v, k->f1);
  v = NPK_PS(add)(v, k->fb);
  return npk_float_quantize(v, vo->f_relu, vo->f_upper, vo->f_scale, vo->f_zp, vo->f_low, vo->f_high);
}

// The float ADD of int8 values v and r (as int32 lanes).
static inline __attribute__((always_inline)) npk_v npk_add_float(const npk_out_t* vo, npk_v v, npk_v r) {
  const npk_f a = NPK_PS(mul)(NPK_PS(sub)(NPK_CVT_F(v), vo->a_conv_zp), vo->a_conv_scale);
  const npk_f b = NPK_PS(mul)(NPK_PS(sub)(NPK_CVT_F(r), vo->a_res_zp), vo->a_res_scale);
  return npk_float_quantize(NPK_PS(add)(a, b), vo->a_relu, vo->a_upper, vo->a_scale, vo->a_zp, vo->a_low,
                            vo->a_high);
}

static inline npk_add_t npk_add(const npk_out_t* vo) {
  const npukit_s8_add_t* k = &vo->o->add;
  npk_add_t a;
  a.conv = npk_rq(k->conv_mult, k->conv_shift);
  a.res = npk_rq(k->res_mult, k->res_shift);
  a.out = npk_rq(k->out_mult, k->out_shift);
  const int32_t small = vo->small && vo->o->mode == NPUKIT_S8_OUT_ADD;  // every shift then 0..-31
  a.small_conv = npk_operand_of(small ? k->conv_mult : 0, small ? -k->conv_shift : 0);
  a.small_res = npk_operand_of(small ? k->res_mult : 0, small ? -k->res_shift : 0);
  a.small_out = npk_scale_of(small ? k->out_mult : 0, small ? -k->out_shift : 0);
  a.conv_offset = npk_broadcast(small ? vo->o->zp - k->conv_zp : 0);
  // The clamp to int8, then to the activation range, as one clamp to both
  // (where they do not meet, every value ends at the bound the first is beyond).
  const int32_t narrow_lo = -128 - k->out_zp, narrow_hi = 127 - k->out_zp;
  int32_t lo = vo->add_lo > narrow_lo ? vo->add_lo : narrow_lo, hi = vo->add_hi < narrow_hi ? vo->add_hi : narrow_hi;
  if (lo > hi) lo = hi = narrow_hi < vo->add_lo ? vo->add_lo : vo->add_hi;
  a.small_lo = npk_broadcast(small ? lo : 0), a.small_hi = npk_broadcast(small ? hi : 0);
  a.small_floor = small && lo >= 0 && k->out_shift < 0;
  a.saturate = NPUKIT_S8_X86 == 512 && small && lo == narrow_lo && hi == narrow_hi;
  a.conv_zp = npk_broadcast(k->conv_zp), a.res_zp = npk_broadcast(k->res_zp);
  a.lo = npk_broadcast(vo->add_lo), a.hi = npk_broadcast(vo->add_hi), a.zp = npk_broadcast(k->out_zp);
  a.shift = _mm_cvtsi32_si128(k->left_shift);
  return a;
}

// Each lane as a byte, in lane order: 16 bytes, or 8 and zeros with AVX2;
// lanes outside int8 saturate with AVX-512 (npk_out_t's saturate), their low
// byte is taken with AVX2.
static inline __m128i npk_low_bytes(npk_v v) {
#if NPUKIT_S8_X86 == 512
  return _mm512_cvtsepi32_epi8(v);
#else
  const __m256i low = _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                              -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                              -1, -1));
  return _mm_unpacklo_epi32(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1));
#endif
}

// Lane-wise int32 arithmetic of either width.
static inline npk_v npk_add32(npk_v a, npk_v b) { return NPK_OP(add_epi32)(a, b); }
static inline npk_v npk_sub32(npk_v a, npk_v b) { return NPK_OP(sub_epi32)(a, b); }
static inline npk_v npk_clamp(npk_v x, npk_v lo, npk_v hi) {
  return NPK_OP(min_epi32)(NPK_OP(max_epi32)(x, lo), hi);
}
static inline npk_v npk_sll(npk_v x, __m128i count) { return NPK_OP(sll_epi32)(x, count); }

// A channel's int8 outputs (as int32 lanes) from its accumulators: the
// general arithmetic, and the small-accumulator one (npk_out_t's small:
// the doubled accumulator scaled, as s8_output.h's small path does).
static inline __attribute__((always_inline)) npk_v npk_int8_general(const npk_channel_t* k, npk_v acc) {
  return npk_add32(npk_clamp(npk_requantize(&k->rq, acc), k->lo, k->hi), k->zp);
}
static inline __attribute__((always_inline)) npk_v npk_int8_small(const npk_channel_t* k, npk_v acc,
                                                                  int32_t floor, int32_t clamp) {
  return npk_add32(npk_scale_clamped(&k->scale, floor, acc, k->lo, k->hi, clamp), k->zp);
}

// TFLite's int8 ADD of int8 values v and r (as int32 lanes): the general
// arithmetic, and the small one from d = v - conv_zp (each operand (x << 20)
// doubled and scaled, then their doubled sum; s8_output.h's
// npukit_s8_add_result_small).
static inline __attribute__((always_inline)) npk_v npk_add_general(const npk_add_t* add, npk_v v, npk_v r) {
  const npk_v a = npk_requantize(&add->conv, npk_sll(npk_sub32(v, add->conv_zp), add->shift));
  const npk_v b = npk_requantize(&add->res, npk_sll(npk_sub32(r, add->res_zp), add->shift));
  return npk_add32(npk_clamp(npk_requantize(&add->out, npk_add_sat(a, b)), add->lo, add->hi), add->zp);
}
static inline __attribute__((always_inline)) npk_v npk_add_small(const npk_add_t* add, npk_v d, npk_v r,
                                                                 int32_t clamp) {
  const npk_v sum = npk_add32(npk_operand(&add->small_conv, d), npk_operand(&add->small_res, npk_sub32(r, add->res_zp)));
  return npk_add32(npk_scale_clamped(&add->small_out, add->small_floor, sum, add->small_lo, add->small_hi, clamp),
                   add->zp);
}

// The runs of a layer without a residual: none in any vector.
static inline void npk_runs_none(npk_runs_t* r) {
  r->count = 0;
  for (int32_t v = 0; v <= NPK_VECTORS; ++v) r->first[v] = 0;
  for (int32_t v = 0; v < NPK_VECTORS; ++v) r->whole[v] = NPK_NOT_WHOLE, r->spots[v] = 0;
}

// What npk_store needs of a panel whose lanes are npk_lanes_rows's (`n`
// positions from `p0` of rows of `pitch`, the first `width` of each a
// pixel): the runs of the output tensor and of the residual (an ADD only),
// and the lanes' pixels where the stage goes lane by lane.
static inline void npk_panel_runs(const npk_out_t* vo, int32_t p0, int32_t n, int32_t pitch, int32_t width,
                                  npk_lanes_t* lanes, npk_runs_t* out, npk_runs_t* res) {
  const npukit_s8_output_t* o = vo->o;
  if (!vo->vector) npk_lanes_rows(lanes, p0, n, pitch, width);
  npk_runs_rows(p0, n, pitch, width, o->sh, o->sw, 1, out);
  if (o->mode == NPUKIT_S8_OUT_ADD) npk_runs_rows(p0, n, pitch, width, o->add.res_sh, o->add.res_sw, 1, res);
}

// Channel `c`'s int8 outputs of pixel vector `vector` (as int32 lanes)
// stored at the panel's runs `out`.
static inline __attribute__((always_inline)) void npk_put(const npukit_s8_output_t* o, const npk_runs_t* out,
                                                          npk_v v, int32_t c, int32_t vector) {
  int8_t* base = (int8_t*)o->out + c * o->sc;
#if NPUKIT_S8_X86 == 512
  const __m128i bytes = npk_low_bytes(v);
  if (out->whole[vector] != NPK_NOT_WHOLE) {
    _mm_storeu_si128((__m128i*)(base + out->whole[vector]), bytes);
    return;
  }
#if NPK_SPOTS
  const uint32_t spots = out->spots[vector];
  if (spots != 0) {
    const __m128i packed = _mm_maskz_compress_epi8((__mmask16)out->valid[vector], bytes);
    if ((spots & (spots + 1)) == 0) {  // next to each other (a dense tensor): the packed bytes as they are
      _mm_mask_storeu_epi8(base + out->base[vector], (__mmask16)spots, packed);
      return;
    }
    const __m256i placed = _mm256_maskz_expand_epi8((__mmask32)spots, _mm256_castsi128_si256(packed));
    _mm256_mask_storeu_epi8(base + out->base[vector], (__mmask32)spots, placed);
    return;
  }
#endif
  for (int32_t i = out->first[vector]; i < out->first[vector + 1]; ++i) {
    if (out->run[i].lanes == 0xffffu) {
      _mm_storeu_si128((__m128i*)(base + out->run[i].offset), bytes);
    } else {
      _mm_mask_storeu_epi8(base + out->run[i].offset, (__mmask16)out->run[i].lanes, bytes);
    }
  }
#else
  const __m128i packed = npk_low_bytes(v);
  if (out->whole[vector] != NPK_NOT_WHOLE) {
    _mm_storel_epi64((__m128i*)(base + out->whole[vector]), packed);
    return;
  }
  const uint64_t bytes = (uint64_t)_mm_cvtsi128_si64(packed);
  for (int32_t i = out->first[vector]; i < out->first[vector + 1]; ++i) {
    npk_store_run(base + out->run[i].offset, bytes, out->run[i].lanes);
  }
#endif
}

// Output channel `c` of pixel vector `vector` from its accumulators: `k`
// the channel's constants (npk_channel), `add` the layer's ADD (npk_add,
// OUT_ADD only), `out` and `res` the panel's runs in the output and
// residual tensors, `l` its lanes (for outputs the vector stage does not
// take).
static inline __attribute__((always_inline)) void npk_store(const npk_out_t* vo, const npk_channel_t* k,
                                                            const npk_add_t* add, npk_v acc, int32_t c,
                                                            int32_t vector, const npk_runs_t* out,
                                                            const npk_runs_t* res, const npk_lanes_t* l) {
  const npukit_s8_output_t* o = vo->o;
  npk_v v;
  switch (vo->stage) {
    case NPK_STAGE_SMALL_FLOOR:
      v = vo->saturate ? npk_int8_small(k, acc, 1, 0) : npk_int8_small(k, acc, 1, 1);
      break;
    case NPK_STAGE_SMALL:
      v = vo->saturate ? npk_int8_small(k, acc, 0, 0) : npk_int8_small(k, acc, 0, 1);
      break;
    case NPK_STAGE_GENERAL:
      v = npk_int8_general(k, acc);
      break;
    case NPK_STAGE_ADD_SMALL: {  // the int8 value minus the ADD's conv_zp, without the output zero point between
      const npk_v d = npk_add32(npk_scale_clamped(&k->scale, k->floor, acc, k->lo, k->hi, 1), add->conv_offset);
      const npk_v r = npk_load_residual(vo, res, vector, c);
      v = add->saturate ? npk_add_small(add, d, r, 0) : npk_add_small(add, d, r, 1);
      break;
    }
    case NPK_STAGE_ADD_GENERAL:
      v = npk_add_general(add, npk_int8_general(k, acc), npk_load_residual(vo, res, vector, c));
      break;
    case NPK_STAGE_FLOAT:
      v = npk_int8_float(vo, k, acc);
      break;
    case NPK_STAGE_ADD_FLOAT:
      v = npk_add_float(vo, npk_int8_float(vo, k, acc), npk_load_residual(vo, res, vector, c));
      break;
    case NPK_STAGE_INT32: {
      int32_t* base = (int32_t*)o->out + c * o->sc;
      if (out->whole[vector] != NPK_NOT_WHOLE) {
        npk_store_vector(base + out->whole[vector], acc);
        return;
      }
      for (int32_t i = out->first[vector]; i < out->first[vector + 1]; ++i) {
#if NPUKIT_S8_X86 == 512
        _mm512_mask_storeu_epi32(base + out->run[i].offset, (__mmask16)out->run[i].lanes, acc);
#else
        _mm256_maskstore_epi32(base + out->run[i].offset, npk_lane_mask(out->run[i].lanes), acc);
#endif
      }
      return;
    }
    default: {  // NPK_STAGE_LANES
      int32_t lanes[NPK_LANES];
      npk_store_vector(lanes, acc);
      for (int32_t i = 0; i < NPK_LANES; ++i) {
        const int32_t at = vector * NPK_LANES + i;
        if (at < l->n && l->y[at] >= 0) npukit_s8_store(o, lanes[i], c, l->y[at], l->x[at]);
      }
      return;
    }
  }
  npk_put(o, out, v, c, vector);
}

// Four vectors of a channel on the one-rounding stage: their arithmetic in
// one straight stretch of code (four independent chains the compiler
// interleaves), then their stores; `clamp` is npk_int8_small's.
static inline __attribute__((always_inline)) void npk_store_four_floor(const npk_out_t* vo, const npk_channel_t* k,
                                                                       const npk_v* acc, int32_t c,
                                                                       const npk_runs_t* out, const int32_t clamp) {
  const npk_v v0 = npk_int8_small(k, acc[0], 1, clamp), v1 = npk_int8_small(k, acc[1], 1, clamp);
  const npk_v v2 = npk_int8_small(k, acc[2], 1, clamp), v3 = npk_int8_small(k, acc[3], 1, clamp);
  npk_put(vo->o, out, v0, c, 0);
  npk_put(vo->o, out, v1, c, 1);
  npk_put(vo->o, out, v2, c, 2);
  npk_put(vo->o, out, v3, c, 3);
}

// A channel's `nv` vectors stored: four on the one-rounding stage together
// (npk_store_four_floor), other cases vector by vector.
static inline __attribute__((always_inline)) void npk_store_channel(const npk_out_t* vo, const npk_channel_t* k,
                                                                   const npk_add_t* add, const npk_v* acc,
                                                                   int32_t c, int32_t nv, const npk_runs_t* out,
                                                                   const npk_runs_t* res, const npk_lanes_t* l) {
  if (nv == 4 && vo->stage == NPK_STAGE_SMALL_FLOOR) {
    if (vo->saturate) {
      npk_store_four_floor(vo, k, acc, c, out, 0);
    } else {
      npk_store_four_floor(vo, k, acc, c, out, 1);
    }
    return;
  }
  for (int32_t v = 0; v < nv; ++v) npk_store(vo, k, add, acc[v], c, v, out, res, l);
}

#endif  // NPUKIT_S8_X86
#endif  // NPUKIT_CPU_KERNELS_S8_X86_VECTOR_H_
