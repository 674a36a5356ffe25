// TFLite's int8 MUL (NPUKIT_S8_MUL, npukit/layer_recognition/elementwise_product.py): OUT_W rows of OUT_C
// channels, output (r, c) = clamp(zp + MBQM(fx[x] * fy[y], M, shift), ACT_MIN, ACT_MAX) with x the input's
// element (r, c) and y the second tensor's (its pointer is the one a fused ADD's residual takes, its strides
// the RES_* words: 0 along what it is broadcast over). fx and fy are the two factors' tables (int32 [2][256]
// at WEIGHTS_AT, indexed by the value + 128: x - zx and y - zy for TFLite's MUL, or whatever the compiler
// proved the dispatch computes), M and shift the one entry of the multiplier and shift tables.
//
// The parameter space (the recogniser checks it): |fx[x] * fy[y]| below 2^30 for every pair, M in
// [0, 2^31), shift in [-31, 30]. Where shift is a right shift (-31..-1), the small path's arithmetic
// (s8_output.h, npukit_s8_output_small) on the doubled product; otherwise mynpu_requantize. A second tensor
// that is one vector along the channels (RES_SW 0) has its factor looked up once per channel, the rows
// innermost; otherwise each element reads both. Every element is read before its output is written, so an
// output that is an input itself (IREE may reuse a buffer in place) is computed correctly.
#include "s8_output.h"
#include "s8_x86_vector.h"

void npukit_s8_mul(const int32_t* p, size_t input, size_t output, size_t operand);

typedef struct {
  const int32_t *fx, *fy;
  const int8_t *x, *y;
  uint8_t* out;
  int32_t channels, rows, xc, xw, yc, yw, oc, ow;
  int32_t m, shift, zp, lo, hi;
} product_t;

// The output of the doubled product `prod2` (2 fx[x] fy[y], below 2^31 in magnitude).
static inline __attribute__((always_inline)) int32_t product_out(const product_t* k, int32_t prod2, int32_t small,
                                                                 int32_t range) {
  if (small) return npukit_s8_output_small(prod2, k->m, k->shift, k->zp, k->lo, k->hi, range);
  return npukit_s8_clamp(mynpu_sat32((int64_t)mynpu_requantize(prod2 / 2, k->m, k->shift) + k->zp), k->lo, k->hi);
}

static inline __attribute__((always_inline)) void product_loop(const product_t* k, int32_t small, int32_t range) {
  if (k->yw == 0) {  // one factor of y per channel, doubled once
    for (int32_t c = 0; c < k->channels; ++c) {
      int32_t f2 = 2 * k->fy[k->y[c * k->yc]];
      __asm__("" : "+r"(f2));  // doubled here, not after each product (what the compiler would make of it)
      const int8_t* x = k->x + c * k->xc;
      uint8_t* out = k->out + c * k->oc;
      for (const int8_t* end = x + k->rows * k->xw; x != end; x += k->xw, out += k->ow) {
        *out = (uint8_t)product_out(k, k->fx[*x] * f2, small, range);
      }
    }
    return;
  }
  for (int32_t r = 0; r < k->rows; ++r) {
    const int8_t* x = k->x + r * k->xw;
    const int8_t* y = k->y + r * k->yw;
    uint8_t* out = k->out + r * k->ow;
    for (int32_t c = 0; c < k->channels; ++c, x += k->xc, y += k->yc, out += k->oc) {
      *out = (uint8_t)product_out(k, 2 * (k->fx[*x] * k->fy[*y]), small, range);
    }
  }
}

#if NPUKIT_S8_X86
// x86 with AVX2 or AVX-512: where the channels lie side by side in the input and output and the second tensor
// is every element's, one vector along the channels or one value (RES_SC 1 or 0), NPK_LANES channels at a time:
// each factor from its table, or where the table is the value plus a constant (TFLite's x - zx) by one
// addition, multiplied, requantized as mynpu_requantize (npk_requantize: TFLite's MBQM on every path), the zero
// point added, clamped and narrowed to int8. A second tensor broadcast over the rows has its factors looked up
// once per vector of channels, the rows innermost. The channels past the last whole vector are left to the
// portable loop: returns the channels done per row.

// Whether table[v] = v + table[0] for every int8 v.
static int32_t affine_table(const int32_t* table) {
  for (int32_t v = -128; v < 128; ++v) {
    if (table[v] != v + table[0]) return 0;
  }
  return 1;
}

#if NPUKIT_S8_X86 == 512
static inline __m512i lanes_of(const int8_t* at) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(const void*)at));
}
static inline __m512i factors(__m512i v, const int32_t* table, int32_t affine) {
  return affine ? _mm512_add_epi32(v, _mm512_set1_epi32(table[0])) : _mm512_i32gather_epi32(v, table, 4);
}
static inline void store_lanes(int8_t* at, __m512i v) { _mm_storeu_si128((__m128i*)(void*)at, _mm512_cvtepi32_epi8(v)); }
#else
static inline __m256i lanes_of(const int8_t* at) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(const void*)at));
}
static inline __m256i factors(__m256i v, const int32_t* table, int32_t affine) {
  return affine ? _mm256_add_epi32(v, _mm256_set1_epi32(table[0])) : _mm256_i32gather_epi32(table, v, 4);
}
static inline void store_lanes(int8_t* at, __m256i v) {
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64((__m128i*)(void*)at, _mm_packs_epi16(words, words));
}
#endif

typedef struct {
  npk_rq_t rq;
  npk_v zp, lo, hi;
} product_stage_t;

// Requantized, the zero point added, clamped (within int8) and stored.
static inline __attribute__((always_inline)) void store_product(const product_stage_t* st, int8_t* at, npk_v prod) {
#if NPUKIT_S8_X86 == 512
  const npk_v v = _mm512_add_epi32(npk_requantize(&st->rq, prod), st->zp);
  store_lanes(at, _mm512_min_epi32(_mm512_max_epi32(v, st->lo), st->hi));
#else
  const npk_v v = _mm256_add_epi32(npk_requantize(&st->rq, prod), st->zp);
  store_lanes(at, _mm256_min_epi32(_mm256_max_epi32(v, st->lo), st->hi));
#endif
}

static inline npk_v product_of(npk_v a, npk_v b) {
#if NPUKIT_S8_X86 == 512
  return _mm512_mullo_epi32(a, b);
#else
  return _mm256_mullo_epi32(a, b);
#endif
}

static int32_t product_vectors(const product_t* k) {
  if (k->xc != 1 || k->oc != 1 || (k->yc != 0 && k->yc != 1)) return 0;
  const int32_t whole = k->channels / NPK_LANES * NPK_LANES;
  const int32_t x_affine = affine_table(k->fx), y_affine = affine_table(k->fy);
  product_stage_t st;
  st.rq = npk_rq(k->m, k->shift);
  st.zp = npk_broadcast(k->zp), st.lo = npk_broadcast(k->lo), st.hi = npk_broadcast(k->hi);
  if (k->yw == 0) {  // y's factors once per vector of channels
    for (int32_t c = 0; c < whole; c += NPK_LANES) {
      const npk_v fy = k->yc ? factors(lanes_of(k->y + c), k->fy, y_affine) : npk_broadcast(k->fy[*k->y]);
      const int8_t* x = k->x + c;
      int8_t* out = (int8_t*)k->out + c;
      for (int32_t r = 0; r < k->rows; ++r, x += k->xw, out += k->ow) {
        store_product(&st, out, product_of(factors(lanes_of(x), k->fx, x_affine), fy));
      }
    }
    return whole;
  }
  for (int32_t r = 0; r < k->rows; ++r) {
    const int8_t* x = k->x + r * k->xw;
    const int8_t* y = k->y + r * k->yw;
    int8_t* out = (int8_t*)k->out + r * k->ow;
    for (int32_t c = 0; c < whole; c += NPK_LANES) {
      const npk_v fy = k->yc ? factors(lanes_of(y + c), k->fy, y_affine) : npk_broadcast(k->fy[*y]);
      store_product(&st, out + c, product_of(factors(lanes_of(x + c), k->fx, x_affine), fy));
    }
  }
  return whole;
}
#endif

void npukit_s8_mul(const int32_t* p, size_t input, size_t output, size_t operand) {
  product_t k;
  k.fx = (const int32_t*)(const void*)((const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT]) + 128;
  k.fy = k.fx + 256;
  k.x = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  k.y = (const int8_t*)operand + p[NPUKIT_S8_W_RES_OFFSET];
  k.out = (uint8_t*)output + p[NPUKIT_S8_W_OUT_OFFSET];
  k.channels = p[NPUKIT_S8_W_OUT_C], k.rows = p[NPUKIT_S8_W_OUT_W];
  k.xc = p[NPUKIT_S8_W_IN_SC], k.xw = p[NPUKIT_S8_W_IN_SW];
  k.yc = p[NPUKIT_S8_W_RES_SC], k.yw = p[NPUKIT_S8_W_RES_SW];
  k.oc = p[NPUKIT_S8_W_OUT_SC], k.ow = p[NPUKIT_S8_W_OUT_SW];
  k.m = p[p[NPUKIT_S8_W_MULTIPLIER_AT]], k.shift = p[p[NPUKIT_S8_W_SHIFT_AT]];
  k.zp = p[NPUKIT_S8_W_OUT_ZP], k.lo = p[NPUKIT_S8_W_ACT_MIN], k.hi = p[NPUKIT_S8_W_ACT_MAX];
#if NPUKIT_S8_X86
  const int32_t done = product_vectors(&k);
  if (done == k.channels) return;
  k.channels -= done, k.x += done * k.xc, k.y += done * k.yc, k.out += done * k.oc;
#endif
  if (k.shift <= -1 && k.m >= 0) {
    NPUKIT_S8_BY_RANGE(k.lo, k.hi, product_loop(&k, 1, range))
  } else {
    product_loop(&k, 0, NPUKIT_S8_RANGE_ANY);
  }
}
