// Convolution, 1x1 convolution and fully connected layers on x86 (see
// s8_x86_vector.h for the instruction sets): a GEMM whose rows are output channels,
// whose columns are output pixels (the vector lanes) and whose reduction is
// K = (kernel y, kernel x, input channel).
//
// Up to NPK_VECTORS vectors of pixels at a time, their receptive fields are
// packed as unsigned bytes into a panel [K_PADDED / 4][vector][lane][4]: one
// vector register holds four K values of every pixel of a vector. Each K
// index of a vector is read with one masked load per run of the vector's
// pixels that is contiguous in the input (the whole vector for 1x1
// convolutions over a plane, row segments otherwise), also when horizontally
// adjacent output pixels are 2 or 4 input elements apart (strided layers);
// other layouts are gathered element by element. The weights keep the
// layout the portable kernel uses, [OUT_C / 2][K_PADDED / 4][2][4]: four
// weights of one channel are one 32-bit word, broadcast to every lane.
// A block of channels x vectors of accumulators then takes one multiply-add
// instruction per channel, vector and four K values.
#include "s8_x86_vector.h"

#if NPUKIT_S8_X86

// Bytes of the panel on the stack; K_PADDED * NPK_LANES (the panel of one
// vector) fits even for NPUKIT_S8_K_CHUNK.
#define PANEL_BYTES 40960
#define GROUP_BYTES (4 * NPK_LANES)  // one vector's four K values

#if NPUKIT_S8_X86 == 512
#define MR 4  // channels per block: 4 x 4 accumulators of 32 registers
#else
#define MR 2  // 2 x 4 accumulators of 16 registers
#endif

typedef struct {
  const int8_t* in;
  const int32_t* offsets;  // input element offset of each K index from a pixel's first one
  int32_t k, groups, step, vectors;
  uint64_t spread[NPK_PANEL_LANES];  // run lanes as byte masks of a `step`-strided load
  // Where each K group is four adjacent input bytes (one input channel,
  // kernel rows of four taps; with AVX-512 only with VBMI): with AVX-512,
  // per run, the bytes its lanes read and its lanes as [lane][4] byte
  // masks, and `taps` gives lane l's four bytes from byte l * step; with
  // AVX2, `taps` gives them from a 128-bit half's first lane, and `end` is
  // where the layer's reads end.
  int32_t row_taps;
  uint64_t reach[NPK_PANEL_LANES], words[NPK_PANEL_LANES];
#if NPUKIT_S8_X86 == 512
  __m512i taps;
#else
  __m256i taps;
  const int8_t* end;
#endif
} pack_t;

#if NPUKIT_S8_X86 == 512

static inline uint64_t spread_lanes(uint32_t lanes, int32_t step) {
  uint64_t m = 0;
  for (int32_t i = 0; i < NPK_LANES; ++i) m |= (uint64_t)(lanes >> i & 1) << (i * step);
  return m;
}

#endif

// The values of K index at `src` (+ each lane's pixel offset) for the lanes
// of vector v, as signed bytes, zero in lanes without a pixel.
static inline __m128i gather_row(const pack_t* pk, const int8_t* src, const npk_runs_t* runs, int32_t v) {
  const int32_t first = runs->first[v], end = runs->first[v + 1];
#if NPUKIT_S8_X86 == 512
  if (pk->step == 1) {
    __m128i x = _mm_setzero_si128();
    for (int32_t i = first; i < end; ++i) x = _mm_mask_loadu_epi8(x, (__mmask16)runs->run[i].lanes, src + runs->run[i].offset);
    return x;
  }
  if (pk->step == 2) {
    __m256i x = _mm256_setzero_si256();
    for (int32_t i = first; i < end; ++i) {
      x = _mm256_mask_loadu_epi8(x, (__mmask32)pk->spread[i], src + runs->run[i].offset);
    }
    return _mm256_cvtepi16_epi8(x);
  }
  if (pk->step == 4) {
    __m512i x = _mm512_setzero_si512();
    for (int32_t i = first; i < end; ++i) x = _mm512_mask_loadu_epi8(x, pk->spread[i], src + runs->run[i].offset);
    return _mm512_cvtepi32_epi8(x);
  }
#else
  if (pk->step == 1) {
    if (end == first + 1 && runs->run[first].lanes == 0xffu) {
      return _mm_loadl_epi64((const __m128i*)(src + runs->run[first].offset));
    }
    uint64_t x = 0;
    for (int32_t i = first; i < end; ++i) x |= npk_load_run(src + runs->run[i].offset, runs->run[i].lanes);
    return _mm_cvtsi64_si128((long long)x);
  }
#endif
  // Element by element over the runs' lanes, built in two 64-bit halves in
  // registers (bytes stored one by one and read back as a vector would wait
  // for the stores).
  uint64_t low = 0, high = 0;
  for (int32_t i = first; i < end; ++i) {
    const npk_run_t* r = &runs->run[i];
    for (uint32_t lanes = r->lanes; lanes != 0; lanes &= lanes - 1) {
      const int32_t lane = __builtin_ctz(lanes);
      const uint64_t byte = (uint8_t)src[r->offset + lane * pk->step];
      if (lane < 8) {
        low |= byte << (8 * lane);
      } else {
        high |= byte << (8 * (lane - 8));
      }
    }
  }
  return _mm_set_epi64x((long long)high, (long long)low);
}

// Four K indices' rows -> [lane][4] unsigned bytes.
static inline npk_v interleave(__m128i r0, __m128i r1, __m128i r2, __m128i r3) {
  const __m128i ab0 = _mm_unpacklo_epi8(r0, r1), cd0 = _mm_unpacklo_epi8(r2, r3);
#if NPUKIT_S8_X86 == 512
  const __m128i ab1 = _mm_unpackhi_epi8(r0, r1), cd1 = _mm_unpackhi_epi8(r2, r3);
  __m512i z = _mm512_castsi128_si512(_mm_unpacklo_epi16(ab0, cd0));
  z = _mm512_inserti32x4(z, _mm_unpackhi_epi16(ab0, cd0), 1);
  z = _mm512_inserti32x4(z, _mm_unpacklo_epi16(ab1, cd1), 2);
  z = _mm512_inserti32x4(z, _mm_unpackhi_epi16(ab1, cd1), 3);
  return npk_u8(z);
#else
  return npk_u8(_mm256_set_m128i(_mm_unpackhi_epi16(ab0, cd0), _mm_unpacklo_epi16(ab0, cd0)));
#endif
}

#if NPUKIT_S8_X86 == 256

// A K group of four adjacent input bytes per lane (pk->row_taps) for the
// lanes of vector v, as signed bytes, zero in lanes without a pixel: per
// run, the two 128-bit halves' bytes loaded and spread into their lanes
// with one shuffle, where those 32 bytes lie in the layer's reads.
static inline __m256i row_taps(const pack_t* pk, const int8_t* src, const npk_runs_t* runs, int32_t v) {
  __m256i x = _mm256_setzero_si256();
  for (int32_t i = runs->first[v]; i < runs->first[v + 1]; ++i) {
    const int8_t* at = src + runs->run[i].offset;
    const uint32_t lanes = runs->run[i].lanes;
    if (at >= pk->in && at + 4 * pk->step + 16 <= pk->end) {
      const __m256i bytes = _mm256_loadu2_m128i((const __m128i*)(at + 4 * pk->step), (const __m128i*)at);
      x = _mm256_or_si256(x, _mm256_and_si256(_mm256_shuffle_epi8(bytes, pk->taps), npk_lane_mask(lanes)));
    } else {  // at the layer's first or last reads: lane by lane
      uint32_t words[NPK_LANES] __attribute__((aligned(32)));
      for (int32_t lane = 0; lane < NPK_LANES; ++lane) {
        words[lane] = lanes >> lane & 1 ? npk_get32(at + lane * pk->step) : 0;
      }
      x = _mm256_or_si256(x, _mm256_load_si256((const __m256i*)words));
    }
  }
  return x;
}

#endif

static void pack(const pack_t* pk, const npk_runs_t* runs, int32_t vectors, uint8_t* panel) {
#if NPUKIT_S8_X86 == 256
  if (pk->row_taps) {
    for (int32_t g = 0; g < pk->groups; ++g) {
      const int8_t* src = pk->in + pk->offsets[4 * g];
      for (int32_t v = 0; v < vectors; ++v) {
        npk_store_vector(panel + (g * pk->vectors + v) * GROUP_BYTES, npk_u8(row_taps(pk, src, runs, v)));
      }
    }
    return;
  }
#endif
#if NPUKIT_S8_X86 == 512 && defined(__AVX512VBMI__)
  if (pk->row_taps) {  // each run's four bytes per lane: one load and one byte permute per K group
    for (int32_t g = 0; g < pk->groups; ++g) {
      const int8_t* src = pk->in + pk->offsets[4 * g];
      for (int32_t v = 0; v < vectors; ++v) {
        __m512i x = _mm512_setzero_si512();
        for (int32_t i = runs->first[v]; i < runs->first[v + 1]; ++i) {
          const __m512i bytes = _mm512_maskz_loadu_epi8(pk->reach[i], src + runs->run[i].offset);
          x = _mm512_mask_permutexvar_epi8(x, pk->words[i], pk->taps, bytes);
        }
        npk_store_vector(panel + (g * pk->vectors + v) * GROUP_BYTES, npk_u8(x));
      }
    }
    return;
  }
#endif
  for (int32_t g = 0; g < pk->groups; ++g) {
    for (int32_t v = 0; v < vectors; ++v) {
      __m128i row[4];
      for (int32_t t = 0; t < 4; ++t) {
        const int32_t k = 4 * g + t;
        row[t] = k < pk->k ? gather_row(pk, pk->in + pk->offsets[k], runs, v) : _mm_setzero_si128();
      }
      npk_store_vector(panel + (g * pk->vectors + v) * GROUP_BYTES, interleave(row[0], row[1], row[2], row[3]));
    }
  }
}

// A block's accumulators as named variables a<i><v> (channel i, vector v),
// so that they stay in registers across the K loop; those past `mr` x `nv`
// (constants where the callers specialize) are never used.
#define FOR_VECTORS(F, i) F(i, 0) F(i, 1) F(i, 2) F(i, 3)
#if MR == 4
#define FOR_BLOCK(F) FOR_VECTORS(F, 0) FOR_VECTORS(F, 1) FOR_VECTORS(F, 2) FOR_VECTORS(F, 3)
#define FOR_CHANNELS(F) F(0) F(1) F(2) F(3)
#else
#define FOR_BLOCK(F) FOR_VECTORS(F, 0) FOR_VECTORS(F, 1)
#define FOR_CHANNELS(F) F(0) F(1)
#endif
#define ACC_LOAD(i, v) npk_v a##i##v = (i) < mr && (v) < nv ? npk_broadcast(start[i]) : npk_broadcast(0);
#define ACC_STORE(i, v) \
  if ((i) < mr && (v) < nv) acc[i][v] = a##i##v;
#define ACC_DOT(i, v) \
  if ((i) < mr && (v) < nv) a##i##v = npk_dot(a##i##v, x##v, w##i);
#define WEIGHT(i) const npk_v w##i = (i) < mr ? npk_broadcast(w[i][2 * g]) : npk_broadcast(0);

// acc[i][v] = start[i] + the panel's vector v . channel i's weights (word 2g of w[i]).
static inline __attribute__((always_inline)) void dot(const uint8_t* panel, int32_t groups, int32_t stride,
                                                      const int32_t* const* w, const int32_t* start,
                                                      npk_v acc[MR][NPK_VECTORS], const int32_t mr, const int32_t nv) {
  FOR_BLOCK(ACC_LOAD)
  for (int32_t g = 0; g < groups; ++g) {
    const uint8_t* at = panel + g * stride;
    const npk_v x0 = npk_load_vector(at), x1 = nv > 1 ? npk_load_vector(at + GROUP_BYTES) : x0;
    const npk_v x2 = nv > 2 ? npk_load_vector(at + 2 * GROUP_BYTES) : x0;
    const npk_v x3 = nv > 3 ? npk_load_vector(at + 3 * GROUP_BYTES) : x0;
    FOR_CHANNELS(WEIGHT)
    FOR_BLOCK(ACC_DOT)
  }
  FOR_BLOCK(ACC_STORE)
}

#define DOT_CASE(MRC, NVC) \
  case (MRC) * 8 + (NVC):  \
    dot(panel, groups, stride, w, start, acc, MRC, NVC); \
    break

__attribute__((noinline)) static void dot_block(const uint8_t* panel, int32_t groups, int32_t stride,
                                               const int32_t* const* w, const int32_t* start,
                                               npk_v acc[MR][NPK_VECTORS], int32_t mr, int32_t nv) {
  switch (mr * 8 + nv) {
    DOT_CASE(2, 1);
    DOT_CASE(2, 2);
    DOT_CASE(2, 3);
    DOT_CASE(2, 4);
#if MR == 4
    DOT_CASE(4, 1);
    DOT_CASE(4, 2);
    DOT_CASE(4, 3);
    DOT_CASE(4, 4);
#endif
    default:
      break;
  }
}

// Direct mode (W contiguous, horizontal stride 1 or 2): the input is
// interleaved once per call into [IN_C4 / 4][phase][row][column][4] unsigned
// bytes (IN_C4: IN_C rounded up to 4), the columns of a stride-2
// layer split into even and odd phases. Four K values of an output pixel
// (one kernel tap, four input channels) are then one 32-bit word of it, the
// words of horizontally adjacent pixels are adjacent, and a vector's operand
// is one load per run of its pixels (one per output row segment) with no
// per-tap packing.
typedef struct {
  int32_t phases, rows, columns, pitch;  // pitch: words per row of a phase
  int32_t plane;                         // bytes per (channel group, phase)
} direct_t;

// `n` bytes of a row of the input, `step` apart (1 or 2), as 16 bytes.
static inline __m128i load_columns(const int8_t* src, int32_t n, int32_t step) {
#if NPUKIT_S8_X86 == 512
  if (step == 1) return _mm_maskz_loadu_epi8((__mmask16)((1u << n) - 1u), src);
  const __m256i x = _mm256_maskz_loadu_epi8((__mmask32)(0x55555555u & ((n == 16 ? 0u : 1u << 2 * n) - 1u)), src);
  return _mm256_cvtepi16_epi8(x);
#else
  if (step == 1 && n == 16) return _mm_loadu_si128((const __m128i*)src);
  int8_t bytes[16] __attribute__((aligned(16)));
  _mm_store_si128((__m128i*)bytes, _mm_setzero_si128());
  for (int32_t j = 0; j < n; ++j) bytes[j] = src[j * step];
  return _mm_load_si128((const __m128i*)bytes);
#endif
}

// Channels past IN_C (a last group of fewer than four) read as zeros; their
// weights are zero.
static void interleave_input(const int32_t* p, const npukit_s8_x86_input_t* view, const direct_t* d,
                             uint8_t* out) {
  const int32_t ic = p[NPUKIT_S8_W_IN_C], sc = view->sc, sh = view->sh;
  const int8_t* in = view->in;
  const __m128i flip = _mm_set1_epi8((char)0x80);
  // Rows that follow each other in the input as in the interleaved copy
  // (one phase, no gap between rows) are copied as one row.
  const int32_t merged = d->phases == 1 && sh == d->columns;
  const int32_t rows = merged ? 1 : d->rows;
  for (int32_t cg = 0; cg < (ic + 3) / 4; ++cg) {
    const int32_t present = ic - 4 * cg;  // channels of this group that exist
    for (int32_t phase = 0; phase < d->phases; ++phase) {
      const int32_t columns = merged ? d->rows * d->columns : (d->columns - phase + d->phases - 1) / d->phases;
      for (int32_t r = 0; r < rows; ++r) {
        const int8_t* src = in + 4 * cg * sc + r * sh + phase;
        uint8_t* dst = out + (cg * d->phases + phase) * d->plane + r * d->pitch * 4;
        for (int32_t j = 0; j < columns; j += 16) {
          // A partial last chunk writes up to 64 bytes past the row's end,
          // into rows written later (the buffer has room for the last).
          const int32_t n = columns - j < 16 ? columns - j : 16;
          const int8_t* at = src + j * d->phases;
          const __m128i zero = _mm_setzero_si128(), r0 = load_columns(at, n, d->phases);
          const __m128i r1 = present > 1 ? load_columns(at + sc, n, d->phases) : zero;
          const __m128i r2 = present > 2 ? load_columns(at + 2 * sc, n, d->phases) : zero;
          const __m128i r3 = present > 3 ? load_columns(at + 3 * sc, n, d->phases) : zero;
          const __m128i ab0 = _mm_unpacklo_epi8(r0, r1), cd0 = _mm_unpacklo_epi8(r2, r3);
          const __m128i ab1 = _mm_unpackhi_epi8(r0, r1), cd1 = _mm_unpackhi_epi8(r2, r3);
          __m128i* to = (__m128i*)(dst + 4 * j);
          _mm_storeu_si128(to, _mm_xor_si128(_mm_unpacklo_epi16(ab0, cd0), flip));
          _mm_storeu_si128(to + 1, _mm_xor_si128(_mm_unpackhi_epi16(ab0, cd0), flip));
          _mm_storeu_si128(to + 2, _mm_xor_si128(_mm_unpacklo_epi16(ab1, cd1), flip));
          _mm_storeu_si128(to + 3, _mm_xor_si128(_mm_unpackhi_epi16(ab1, cd1), flip));
        }
      }
    }
  }
}

// A vector's operand: the words of its runs (`count` runs from `run`).
static inline __attribute__((always_inline)) npk_v load_runs(const uint8_t* at, const npk_run_t* run,
                                                             int32_t count) {
#if NPUKIT_S8_X86 == 512
  __m512i x = _mm512_maskz_loadu_epi32((__mmask16)run[0].lanes, at + 4 * run[0].offset);
  for (int32_t i = 1; i < count; ++i) {
    x = _mm512_mask_loadu_epi32(x, (__mmask16)run[i].lanes, at + 4 * run[i].offset);
  }
  return x;
#else
  // The runs of one vector have disjoint lanes.
  __m256i x = _mm256_setzero_si256();
  for (int32_t i = 0; i < count; ++i) x = _mm256_or_si256(x, npk_load_lanes(at + 4 * run[i].offset, run[i].lanes));
  return x;
#endif
}

// acc[i][v] = start[i] + the interleaved input of vector v at group g . channel i's
// weights: `at[g]` is group g's byte offset in the interleaved input.
static inline __attribute__((always_inline)) void dot_direct(const uint8_t* base, const int32_t* at, int32_t groups,
                                                             const npk_runs_t* runs, const int32_t* const* w,
                                                             const int32_t* start, npk_v acc[MR][NPK_VECTORS],
                                                             const int32_t mr, const int32_t nv,
                                                             const int32_t single) {
  FOR_BLOCK(ACC_LOAD)
  // A vector of one run: its first word and lanes, read once.
  const npk_run_t* r0 = &runs->run[runs->first[0]];
  const npk_run_t* r1 = nv > 1 ? &runs->run[runs->first[1]] : r0;
  const npk_run_t* r2 = nv > 2 ? &runs->run[runs->first[2]] : r0;
  const npk_run_t* r3 = nv > 3 ? &runs->run[runs->first[3]] : r0;
  const uint8_t* b0 = base + 4 * r0->offset;
  const uint8_t* b1 = base + 4 * r1->offset;
  const uint8_t* b2 = base + 4 * r2->offset;
  const uint8_t* b3 = base + 4 * r3->offset;
  const uint32_t m0 = r0->lanes, m1 = r1->lanes, m2 = r2->lanes, m3 = r3->lanes;
  for (int32_t g = 0; g < groups; ++g) {
    const int32_t from = at[g];
    npk_v x0, x1, x2, x3;
    if (single) {
      x0 = npk_load_lanes(b0 + from, m0);
      x1 = nv > 1 ? npk_load_lanes(b1 + from, m1) : x0;
      x2 = nv > 2 ? npk_load_lanes(b2 + from, m2) : x0;
      x3 = nv > 3 ? npk_load_lanes(b3 + from, m3) : x0;
    } else {
      const int32_t* f = runs->first;
      x0 = load_runs(base + from, &runs->run[f[0]], f[1] - f[0]);
      x1 = nv > 1 ? load_runs(base + from, &runs->run[f[1]], f[2] - f[1]) : x0;
      x2 = nv > 2 ? load_runs(base + from, &runs->run[f[2]], f[3] - f[2]) : x0;
      x3 = nv > 3 ? load_runs(base + from, &runs->run[f[3]], f[4] - f[3]) : x0;
    }
    FOR_CHANNELS(WEIGHT)
    FOR_BLOCK(ACC_DOT)
  }
  FOR_BLOCK(ACC_STORE)
}

#define DIRECT_CASE(MRC, NVC)                                                 \
  case (MRC) * 8 + (NVC):                                                     \
    if (single) {                                                             \
      dot_direct(base, at, groups, runs, w, start, acc, MRC, NVC, 1);         \
    } else {                                                                  \
      dot_direct(base, at, groups, runs, w, start, acc, MRC, NVC, 0);         \
    }                                                                         \
    break

__attribute__((noinline)) static void direct_block(const uint8_t* base, const int32_t* at, int32_t groups,
                                                  const npk_runs_t* runs, int32_t single, const int32_t* const* w,
                                                  const int32_t* start, npk_v acc[MR][NPK_VECTORS], int32_t mr,
                                                  int32_t nv) {
  switch (mr * 8 + nv) {
    DIRECT_CASE(2, 1);
    DIRECT_CASE(2, 2);
    DIRECT_CASE(2, 3);
    DIRECT_CASE(2, 4);
#if MR == 4
    DIRECT_CASE(4, 1);
    DIRECT_CASE(4, 2);
    DIRECT_CASE(4, 3);
    DIRECT_CASE(4, 4);
#endif
    default:
      break;
  }
}

// The direct form's gathered panel: vector v's operand at group g, read
// from the interleaved input at `base + at[g]`, stored at [g][v].
static void gather(const uint8_t* base, const int32_t* at, int32_t groups, const npk_runs_t* runs, int32_t nv,
                   int32_t vectors, uint8_t* panel) {
  const int32_t* f = runs->first;
  for (int32_t g = 0; g < groups; ++g) {
    for (int32_t v = 0; v < nv; ++v) {
      const npk_v x = load_runs(base + at[g], &runs->run[f[v]], f[v + 1] - f[v]);
      npk_store_vector(panel + (g * vectors + v) * GROUP_BYTES, x);
    }
  }
}

// Direct mode over IN_C % 4 != 0: the weights again with each kernel tap's
// channels padded to IN_C4 (a multiple of four) with zero weights, from the
// block's [OUT_C / 2][K_PADDED / 4][2][4] bytes to [OUT_C / 2][taps * IN_C4 /
// 4][2][4].
static void pad_taps(const int8_t* from, int32_t oc, int32_t taps, int32_t ic, int32_t k_padded, int8_t* to) {
  const uint32_t ic4 = (uint32_t)(ic + 3) & ~3u, groups = (uint32_t)taps * ic4 / 4;
  uint32_t* words = (uint32_t*)to;
  for (uint32_t i = 0; i < (uint32_t)(oc + 1) / 2 * 2 * groups; ++i) words[i] = 0;
  for (uint32_t pair = 0; pair < (uint32_t)(oc + 1) / 2; ++pair) {
    const int8_t* src = from + pair * 2 * (uint32_t)k_padded;
    int8_t* dst = to + pair * 8 * groups;
    for (uint32_t t = 0, k = 0; t < (uint32_t)taps; ++t) {
      for (uint32_t c = 0, padded = t * ic4; c < (uint32_t)ic; ++c, ++k, ++padded) {
        // Byte (group, half, index) of a pair's weights is at group * 8 + half * 4 + index.
        dst[padded / 4 * 8 + padded % 4] = src[k / 4 * 8 + k % 4];
        dst[padded / 4 * 8 + 4 + padded % 4] = src[k / 4 * 8 + 4 + k % 4];
      }
    }
  }
}

int npukit_s8_conv_x86(const int32_t* p, const npukit_s8_x86_input_t* view, size_t output, size_t residual) {
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], oh = view->oh, ow = view->ow;
  const int32_t ic = p[NPUKIT_S8_W_IN_C], kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t k_padded = p[NPUKIT_S8_W_K_PADDED], groups = k_padded / 4;
  if (k_padded > NPUKIT_S8_K_CHUNK || k_padded < 4 || (k_padded & 3) != 0) return 0;
  const int32_t sc = view->sc, sh = view->sh, sw = view->sw;
  const int32_t dil_h = p[NPUKIT_S8_W_DILATION_H], dil_w = p[NPUKIT_S8_W_DILATION_W];
  const int32_t stride_h = p[NPUKIT_S8_W_STRIDE_H], stride_w = p[NPUKIT_S8_W_STRIDE_W];
  const int32_t dy = dil_h * sh, dx = dil_w * sw;

  uint8_t panel[PANEL_BYTES] __attribute__((aligned(64)));
  int32_t offsets[NPUKIT_S8_K_CHUNK];
  pack_t pk;
  pk.in = view->in;
  pk.offsets = offsets;
  pk.k = kh * kw * ic;
  pk.groups = groups;
  pk.step = stride_w * sw;
  pk.vectors = PANEL_BYTES / (k_padded * NPK_LANES);
  if (pk.vectors > NPK_VECTORS) pk.vectors = NPK_VECTORS;
  // Lane l's taps are bytes l * step .. l * step + 3 of a 64-byte load: step 4 at most.
  pk.row_taps = ic == 1 && kw == 4 && dil_w == 1 && sw == 1 && pk.step <= 4;
#if NPUKIT_S8_X86 == 512 && defined(__AVX512VBMI__)
  {
    int8_t taps[64];
    for (int32_t b = 0; b < 64; ++b) taps[b] = (int8_t)(b / 4 * pk.step + b % 4);
    pk.taps = _mm512_loadu_si512(taps);
  }
#elif NPUKIT_S8_X86 == 256
  {
    int8_t taps[16];
    for (int32_t b = 0; b < 16; ++b) taps[b] = (int8_t)(b / 4 * pk.step + b % 4);
    pk.taps = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)taps));
    pk.end = pk.in + (oh - 1) * stride_h * sh + (ow - 1) * pk.step + (kh - 1) * dy + 4;
  }
#else
  pk.row_taps = 0;
#endif

  direct_t d;
  d.phases = stride_w;
  d.rows = (oh - 1) * stride_h + (kh - 1) * dil_h + 1;
  d.columns = (ow - 1) * stride_w + (kw - 1) * dil_w + 1;
  d.pitch = (d.columns + d.phases - 1) / d.phases;
  d.plane = d.rows * d.pitch * 4;
  // Direct mode packs nothing per panel where every vector is one run of the
  // interleaved input (whole vectors per output row, or rows that follow
  // each other); vectors of several runs are gathered once per panel
  // (below), or where that does not fit, read with a masked load per run, K
  // group and channel block, which pays only when the blocks are few
  // (measured: 16 output channels yes; 64 at 8x8 no).
  // That rule is the default; a tuned layer says which form it measured faster (NPUKIT_S8_W_CONV_FORM).
  // Input channels that are not a multiple of 4 are padded per kernel tap
  // (zero weights, copied into the panel after the input): worth it where
  // that adds at most a third to K (3 channels, not 1).
  const int32_t one_run = ow % NPK_LANES == 0 || stride_h * d.pitch == ow;
  const int32_t form = p[NPUKIT_S8_W_CONV_FORM];
  const int32_t ic4 = (ic + 3) & ~3, direct_groups = kh * kw * ic4 / 4;
  const int64_t input_bytes = (int64_t)(ic4 / 4) * d.phases * d.plane + 64;
  const int64_t padded_bytes = ic % 4 != 0 ? (int64_t)(oc + 1) / 2 * 8 * direct_groups : 0;
  const int32_t direct_fits = sw == 1 && (stride_w == 1 || stride_w == 2) && direct_groups <= NPUKIT_S8_K_CHUNK &&
                              input_bytes + padded_bytes <= PANEL_BYTES;
  // Otherwise a vector of several runs is gathered from the interleaved
  // input once per panel into [group][vector][lane][4], which every channel
  // block then reads as packed panels are read: a masked load per run and a
  // store per group and vector, instead of packing from the tensor or a
  // load per run and channel block. That panel follows the input (and
  // padded weights) in the buffer: as many vectors as fit, at least one.
  // Where none fits and rows follow each other in the interleaved input
  // (vertical stride 1), vectors can be one run each by computing the
  // columns between output rows too (the grid): where that adds at most a
  // third (3x3 kernels from 6 output columns), it pays.
  const int32_t grid_fits = !one_run && stride_h == 1 && 3 * d.pitch <= 4 * ow;
  const int64_t gathered_at = (input_bytes + padded_bytes + 63) & ~(int64_t)63, room = PANEL_BYTES - gathered_at;
  int32_t gathered_vectors = room > 0 ? (int32_t)(room / ((int64_t)direct_groups * GROUP_BYTES)) : 0;
  if (gathered_vectors > NPK_VECTORS) gathered_vectors = NPK_VECTORS;
  const int32_t gather_fits = !one_run && gathered_vectors > 0;
  const int32_t direct_pays = (one_run || grid_fits || gather_fits || oc <= 4 * MR) && 3 * ic4 <= 4 * ic;
  const int32_t direct = direct_fits && (form == NPUKIT_S8_CONV_AUTO ? direct_pays : form == NPUKIT_S8_CONV_DIRECT);
  const int32_t gathered = direct && gather_fits;
  const int32_t grid = direct && grid_fits && !gathered;
  const int32_t* weights = (const int32_t*)((const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT]);
  int32_t weight_groups = groups;
  if (direct) {
    interleave_input(p, view, &d, panel);
    if (ic % 4 != 0) {
      int8_t* padded = (int8_t*)panel + input_bytes;
      pad_taps((const int8_t*)weights, oc, kh * kw, ic, k_padded, padded);
      weights = (const int32_t*)padded;
    }
    weight_groups = direct_groups;
    for (int32_t i = 0, g = 0; i < kh; ++i) {
      for (int32_t j = 0; j < kw; ++j) {
        const int32_t column = j * dil_w;  // from the pixel's first, in input columns
        for (int32_t cg = 0; cg < ic4 / 4; ++cg, ++g) {
          offsets[g] = (cg * d.phases + column % d.phases) * d.plane + (i * dil_h * d.pitch + column / d.phases) * 4;
        }
      }
    }
  } else {
    for (int32_t i = 0, k = 0; i < kh; ++i) {
      for (int32_t j = 0; j < kw; ++j) {
        for (int32_t c = 0; c < ic; ++c, ++k) offsets[k] = i * dy + j * dx + c * sc;
      }
    }
  }
  const int32_t step_y = stride_h * sh;

  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  const npk_out_t vo = npk_out(&o);
  const npk_add_t add = npk_add(&vo);
  const int32_t* weight_sum = p + p[NPUKIT_S8_W_WEIGHT_SUM_AT];
  const int32_t in_zp = p[NPUKIT_S8_W_IN_ZP];
  // On the grid, lanes are the positions of the interleaved input's rows:
  // the first `ow` of each row of `pitch` are output pixels, the rest are
  // computed and not stored.
  const int32_t positions = grid ? (oh - 1) * d.pitch + ow : oh * ow;
  const int32_t per_panel = gathered ? gathered_vectors * NPK_LANES : direct ? NPK_PANEL_LANES : pk.vectors * NPK_LANES;
  uint8_t* gathered_panel = panel + gathered_at;

  npk_lanes_t lanes;
  lanes.n = 0;
  npk_runs_t in_runs, out_runs, res_runs;
  npk_runs_none(&res_runs);
  for (int32_t p0 = 0; p0 < positions; p0 += per_panel) {
    const int32_t n = positions - p0 < per_panel ? positions - p0 : per_panel;
    const int32_t nv = (n + NPK_LANES - 1) / NPK_LANES;
    int32_t single = 1;
    if (grid) {
      npk_runs_rows(p0, n, positions, positions, 0, 1, 1, &in_runs);  // one run per vector
      npk_panel_runs(&vo, p0, n, d.pitch, ow, &lanes, &out_runs, &res_runs);
    } else {
      npk_panel_runs(&vo, p0, n, ow, ow, &lanes, &out_runs, &res_runs);
      if (direct) {
        // Words of the interleaved input: a pixel's first is at row y * stride, column x of its phase.
        npk_runs_rows(p0, n, ow, ow, stride_h * d.pitch, 1, 1, &in_runs);
        for (int32_t v = 0; v < nv; ++v) single &= in_runs.first[v + 1] - in_runs.first[v] == 1;
        if (gathered) gather(panel, offsets, weight_groups, &in_runs, nv, gathered_vectors, gathered_panel);
      } else {
        npk_runs_rows(p0, n, ow, ow, step_y, pk.step, pk.step, &in_runs);
#if NPUKIT_S8_X86 == 512
        if (pk.row_taps) {
          for (int32_t i = 0; i < in_runs.count; ++i) {
            const uint32_t l = in_runs.run[i].lanes;
            const int32_t low = __builtin_ctz(l), high = 31 - __builtin_clz(l);
            const int32_t bytes = (high - low) * pk.step + 4;
            pk.reach[i] = (bytes == 64 ? ~0ull : (1ull << bytes) - 1u) << (low * pk.step);
            pk.words[i] = spread_lanes(l, 4) * 0xfu;
          }
        } else if (pk.step == 2 || pk.step == 4) {
          for (int32_t i = 0; i < in_runs.count; ++i) pk.spread[i] = spread_lanes(in_runs.run[i].lanes, pk.step);
        }
#endif
        pack(&pk, &in_runs, nv, panel);
      }
    }
    for (int32_t c0 = 0; c0 < oc; c0 += MR) {
      // Channels come in pairs (an odd last one with a zero partner).
      const int32_t left = (oc - c0 + 1) & ~1, mr = left < MR ? left : MR;
      const int32_t* w[MR];
      int32_t start[MR];  // broadcast by the dot itself: a vector stored and read back stalls on store forwarding
      npk_v acc[MR][NPK_VECTORS];
      for (int32_t i = 0; i < mr; ++i) {
        const int32_t c = c0 + i;
        w[i] = weights + (c >> 1) * weight_groups * 2 + (c & 1);
        start[i] = c < oc ? npk_fold(o.bias[c], in_zp, weight_sum[c]) : 0;
      }
      if (gathered) {
        dot_block(gathered_panel, weight_groups, gathered_vectors * GROUP_BYTES, w, start, acc, mr, nv);
      } else if (direct) {
        direct_block(panel, offsets, weight_groups, &in_runs, single, w, start, acc, mr, nv);
      } else {
        dot_block(panel, groups, pk.vectors * GROUP_BYTES, w, start, acc, mr, nv);
      }
      for (int32_t i = 0; i < mr && c0 + i < oc; ++i) {
        const npk_channel_t k = npk_channel(&vo, c0 + i);
        npk_store_channel(&vo, &k, &add, acc[i], c0 + i, nv, &out_runs, &res_runs, &lanes);
      }
    }
  }
  return 1;
}

#else

// Built for a target without the x86 kernels: nothing here.
typedef int npukit_s8_conv_x86_unused;

#endif
