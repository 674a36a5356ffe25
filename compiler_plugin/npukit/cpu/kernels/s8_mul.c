// TFLite's int8 MUL (NPUKIT_S8_MUL, npukit/layer_recognition/elementwise_product.py): OUT_W rows of OUT_C
// channels, output (r, c) = clamp(zp + MBQM(fx(x) * fy(y), M, shift), ACT_MIN, ACT_MAX) with x the input's
// element (r, c) and y the second tensor's (its pointer is the one a fused ADD's residual takes, its strides
// the RES_* words: 0 along what it is broadcast over). Each factor is its value plus a constant (x - zx and
// y - zy for TFLite's MUL) or an int8 table entry plus a constant (a gate the compiler fused into the product,
// whatever the recogniser proved the dispatch computes); at WEIGHTS_AT: int32 cx, cy and the factors' forms
// (two bits each, x's the low ones: 0 the value, 1 a table stored as 4-bit steps, 128 bytes, 2 a table of 256
// int8 values indexed by the value + 128), then x's table, then y's. A table of steps (one factor's at most)
// is unpacked on the stack once a call. M and shift are the one entry of the multiplier and shift tables.
//
// The parameter space (the recogniser checks it): |fx(x) * fy(y)| below 2^30 for every pair, M in
// [0, 2^31), shift in [-31, 30]. Where shift is a right shift (-31..-1), the small path's arithmetic
// (s8_output.h, npukit_s8_output_small) on the doubled product; otherwise mynpu_requantize. A second tensor
// that is one vector along the channels (RES_SW 0) has its factor computed once per channel, the rows
// innermost; otherwise each element reads both. Every element is read before its output is written, so an
// output that is an input itself (IREE may reuse a buffer in place) is computed correctly.
#include "s8_output.h"
#include "s8_x86_vector.h"

void npukit_s8_mul(const int32_t* p, size_t input, size_t output, size_t operand);

typedef struct {
  const int8_t *tx, *ty;  // each factor's table (at the value + 128 already), or null: the value itself
  int32_t cx, cy;         // the constant added to each
  const int8_t *x, *y;
  uint8_t* out;
  int32_t channels, rows, xc, xw, yc, yw, oc, ow;
  int32_t m, shift, zp, lo, hi;
} product_t;

// A table stored as 4-bit steps (two a byte, low nibble first) unpacked into `table`: entry -128 is -128, each
// next one the previous plus its step. Returns the entry of the value 0.
static const int8_t* unpack_steps(const uint8_t* steps, int8_t table[256]) {
  int32_t value = -128;
  table[0] = (int8_t)value;
  for (int32_t i = 0; i < 127; ++i) {  // two entries a byte
    const uint32_t pair = steps[i];
    value += (int32_t)(pair & 15);
    table[2 * i + 1] = (int8_t)value;
    value += (int32_t)(pair >> 4);
    table[2 * i + 2] = (int8_t)value;
  }
  table[255] = (int8_t)(value + (steps[127] & 15));
  return table + 128;
}

// A factor's table in its form (see above) at `*data`, which moves past it; null for the value itself.
static const int8_t* factor_table(int32_t form, const uint8_t** data, int8_t unpacked[256]) {
  const uint8_t* at = *data;
  if (form == 1) {
    *data = at + 128;
    return unpack_steps(at, unpacked);
  }
  if (form == 2) {
    *data = at + 256;
    return (const int8_t*)at + 128;
  }
  return 0;
}

// A factor of the int8 value v: its table's entry, or v itself, plus the constant.
static inline __attribute__((always_inline)) int32_t factor(const int8_t* table, int32_t c, int32_t v) {
  return (table ? table[v] : v) + c;
}

// The output of the doubled product `prod2` (2 fx(x) fy(y), below 2^31 in magnitude).
static inline __attribute__((always_inline)) int32_t product_out(const product_t* k, int32_t prod2, int32_t small,
                                                                 int32_t range) {
  if (small) return npukit_s8_output_small(prod2, k->m, k->shift, k->zp, k->lo, k->hi, range);
  return npukit_s8_clamp(mynpu_sat32((int64_t)mynpu_requantize(prod2 / 2, k->m, k->shift) + k->zp), k->lo, k->hi);
}

// `tx` is k->tx, passed apart so that a call with a null constant drops the table lookup from the loops.
static inline __attribute__((always_inline)) void product_loop(const product_t* k, const int8_t* tx, int32_t small,
                                                               int32_t range) {
  if (k->yw == 0) {  // one factor of y per channel, doubled once
    for (int32_t c = 0; c < k->channels; ++c) {
      int32_t f2 = 2 * factor(k->ty, k->cy, k->y[c * k->yc]);
      __asm__("" : "+r"(f2));  // doubled here, not after each product (what the compiler would make of it)
      const int8_t* x = k->x + c * k->xc;
      uint8_t* out = k->out + c * k->oc;
      for (const int8_t* end = x + k->rows * k->xw; x != end; x += k->xw, out += k->ow) {
        *out = (uint8_t)product_out(k, factor(tx, k->cx, *x) * f2, small, range);
      }
    }
    return;
  }
  for (int32_t r = 0; r < k->rows; ++r) {
    const int8_t* x = k->x + r * k->xw;
    const int8_t* y = k->y + r * k->yw;
    uint8_t* out = k->out + r * k->ow;
    for (int32_t c = 0; c < k->channels; ++c, x += k->xc, y += k->yc, out += k->oc) {
      *out = (uint8_t)product_out(k, 2 * (factor(tx, k->cx, *x) * factor(k->ty, k->cy, *y)), small, range);
    }
  }
}

#if NPUKIT_S8_X86
// x86 with AVX2 or AVX-512: where the channels lie side by side in the input and output and the second tensor
// is every element's, one vector along the channels or one value (RES_SC 1 or 0), NPK_LANES channels at a time:
// each factor the value plus its constant (one addition) or gathered from its table, widened to int32 with
// the constant added once per call, multiplied, requantized as mynpu_requantize (npk_requantize: TFLite's
// MBQM on every path), the zero point added, clamped and narrowed to int8. A second tensor broadcast over the rows has its factors looked up
// once per vector of channels, the rows innermost. The channels past the last whole vector are left to the
// portable loop: returns the channels done per row.

// A factor for the vectors: `c` added to the value, or where `table` is one, gathered from `wide` (the table plus
// c as int32, at the value + 128).
typedef struct {
  const int32_t* wide;
  int32_t c;
} factor_t;

static factor_t factor_of(const int8_t* table, int32_t c, int32_t* wide) {
  factor_t f = {0, c};
  if (table) {
    for (int32_t v = -128; v < 128; ++v) wide[v + 128] = table[v] + c;
    f.wide = wide + 128;
  }
  return f;
}

#if NPUKIT_S8_X86 == 512
static inline __m512i lanes_of(const int8_t* at) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(const void*)at));
}
static inline __m512i factors(__m512i v, const factor_t* f) {
  return f->wide ? _mm512_i32gather_epi32(v, f->wide, 4) : _mm512_add_epi32(v, _mm512_set1_epi32(f->c));
}
static inline void store_lanes(int8_t* at, __m512i v) {
  _mm_storeu_si128((__m128i*)(void*)at, _mm512_cvtepi32_epi8(v));
}
#else
static inline __m256i lanes_of(const int8_t* at) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(const void*)at));
}
static inline __m256i factors(__m256i v, const factor_t* f) {
  return f->wide ? _mm256_i32gather_epi32(f->wide, v, 4) : _mm256_add_epi32(v, _mm256_set1_epi32(f->c));
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
  int32_t wide[2][256];
  const factor_t fx = factor_of(k->tx, k->cx, wide[0]), fy = factor_of(k->ty, k->cy, wide[1]);
  product_stage_t st;
  st.rq = npk_rq(k->m, k->shift);
  st.zp = npk_broadcast(k->zp), st.lo = npk_broadcast(k->lo), st.hi = npk_broadcast(k->hi);
  if (k->yw == 0) {  // y's factors once per vector of channels
    for (int32_t c = 0; c < whole; c += NPK_LANES) {
      const npk_v vy = k->yc ? factors(lanes_of(k->y + c), &fy) : npk_broadcast(factor(k->ty, k->cy, *k->y));
      const int8_t* x = k->x + c;
      int8_t* out = (int8_t*)k->out + c;
      for (int32_t r = 0; r < k->rows; ++r, x += k->xw, out += k->ow) {
        store_product(&st, out, product_of(factors(lanes_of(x), &fx), vy));
      }
    }
    return whole;
  }
  for (int32_t r = 0; r < k->rows; ++r) {
    const int8_t* x = k->x + r * k->xw;
    const int8_t* y = k->y + r * k->yw;
    int8_t* out = (int8_t*)k->out + r * k->ow;
    for (int32_t c = 0; c < whole; c += NPK_LANES) {
      const npk_v vy = k->yc ? factors(lanes_of(y + c), &fy) : npk_broadcast(factor(k->ty, k->cy, *y));
      store_product(&st, out + c, product_of(factors(lanes_of(x + c), &fx), vy));
    }
  }
  return whole;
}
#endif

void npukit_s8_mul(const int32_t* p, size_t input, size_t output, size_t operand) {
  product_t k;
  const int32_t* factors_at = (const int32_t*)(const void*)((const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT]);
  const uint8_t* data = (const uint8_t*)(factors_at + 3);
  int8_t unpacked[256];
  const int32_t form_x = factors_at[2] & 3, form_y = factors_at[2] >> 2 & 3;
  if (form_x == 1 && form_y == 1) __builtin_trap();  // one table of steps at most
  k.cx = factors_at[0], k.cy = factors_at[1];
  k.tx = factor_table(form_x, &data, unpacked);
  k.ty = factor_table(form_y, &data, unpacked);
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
  // The loops specialised where they run most: x the value plus a constant, a right shift.
  if (k.tx == 0 && k.shift <= -1 && k.m >= 0) {
    NPUKIT_S8_BY_RANGE(k.lo, k.hi, product_loop(&k, 0, 1, range))
  } else {
    product_loop(&k, k.tx, k.shift <= -1 && k.m >= 0, NPUKIT_S8_RANGE_ANY);
  }
}
