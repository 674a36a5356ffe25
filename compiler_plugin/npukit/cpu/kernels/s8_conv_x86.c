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
// vector) fits even for NPUKIT_S8_MAX_K.
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
  if (pk->step == 1 && end == first + 1 && runs->run[first].lanes == 0xffu) {
    return _mm_loadl_epi64((const __m128i*)(src + runs->run[first].offset));
  }
#endif
  int8_t bytes[16] __attribute__((aligned(16)));
  _mm_store_si128((__m128i*)bytes, _mm_setzero_si128());
  for (int32_t i = first; i < end; ++i) {
    const npk_run_t* r = &runs->run[i];
    for (int32_t lane = 0; lane < NPK_LANES; ++lane) {
      if (r->lanes >> lane & 1) bytes[lane] = src[r->offset + lane * pk->step];
    }
  }
  return _mm_load_si128((const __m128i*)bytes);
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

static void pack(const pack_t* pk, const npk_runs_t* runs, int32_t vectors, uint8_t* panel) {
  for (int32_t g = 0; g < pk->groups; ++g) {
    for (int32_t v = 0; v < vectors; ++v) {
      __m128i row[4];
      for (int32_t t = 0; t < 4; ++t) {
        const int32_t k = 4 * g + t;
        row[t] = k < pk->k ? gather_row(pk, pk->in + pk->offsets[k], runs, v) : _mm_setzero_si128();
      }
      npk_v z = interleave(row[0], row[1], row[2], row[3]);
#if NPUKIT_S8_X86 == 512
      _mm512_store_si512(panel + (g * pk->vectors + v) * GROUP_BYTES, z);
#else
      _mm256_store_si256((__m256i*)(panel + (g * pk->vectors + v) * GROUP_BYTES), z);
#endif
    }
  }
}

static inline npk_v load_group(const uint8_t* at) {
#if NPUKIT_S8_X86 == 512
  return _mm512_load_si512(at);
#else
  return _mm256_load_si256((const __m256i*)at);
#endif
}

static inline npk_v broadcast(int32_t x) {
#if NPUKIT_S8_X86 == 512
  return _mm512_set1_epi32(x);
#else
  return _mm256_set1_epi32(x);
#endif
}

// acc[i][v] += the panel's vector v . channel i's weights (word 2g of w[i]).
static inline __attribute__((always_inline)) void dot(const uint8_t* panel, int32_t groups, int32_t stride,
                                                      const int32_t* const* w, npk_v acc[MR][NPK_VECTORS],
                                                      const int32_t mr, const int32_t nv) {
  for (int32_t g = 0; g < groups; ++g) {
    const uint8_t* at = panel + g * stride;
    npk_v x[NPK_VECTORS];
    for (int32_t v = 0; v < nv; ++v) x[v] = load_group(at + v * GROUP_BYTES);
    for (int32_t i = 0; i < mr; ++i) {
      const npk_v wi = broadcast(w[i][2 * g]);
      for (int32_t v = 0; v < nv; ++v) acc[i][v] = npk_dot(acc[i][v], x[v], wi);
    }
  }
}

#define DOT_CASE(MRC, NVC) \
  case (MRC) * 8 + (NVC):  \
    dot(panel, groups, stride, w, acc, MRC, NVC); \
    break

static void dot_block(const uint8_t* panel, int32_t groups, int32_t stride, const int32_t* const* w,
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

int npukit_s8_conv_x86(const int32_t* p, size_t input, size_t output, size_t residual) {
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], oh = p[NPUKIT_S8_W_OUT_H], ow = p[NPUKIT_S8_W_OUT_W];
  const int32_t ic = p[NPUKIT_S8_W_IN_C], kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t k_padded = p[NPUKIT_S8_W_K_PADDED], groups = k_padded / 4;
  if (k_padded > NPUKIT_S8_MAX_K || k_padded < 4 || (k_padded & 3) != 0) return 0;
  const int32_t sc = p[NPUKIT_S8_W_IN_SC], sh = p[NPUKIT_S8_W_IN_SH], sw = p[NPUKIT_S8_W_IN_SW];
  const int32_t dy = p[NPUKIT_S8_W_DILATION_H] * sh, dx = p[NPUKIT_S8_W_DILATION_W] * sw;

  uint8_t panel[PANEL_BYTES] __attribute__((aligned(64)));
  int32_t offsets[NPUKIT_S8_MAX_K];
  pack_t pk;
  pk.in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  pk.offsets = offsets;
  pk.k = kh * kw * ic;
  pk.groups = groups;
  pk.step = p[NPUKIT_S8_W_STRIDE_W] * sw;
  pk.vectors = PANEL_BYTES / (k_padded * NPK_LANES);
  if (pk.vectors > NPK_VECTORS) pk.vectors = NPK_VECTORS;
  for (int32_t i = 0, k = 0; i < kh; ++i) {
    for (int32_t j = 0; j < kw; ++j) {
      for (int32_t c = 0; c < ic; ++c, ++k) offsets[k] = i * dy + j * dx + c * sc;
    }
  }
  const int32_t step_y = p[NPUKIT_S8_W_STRIDE_H] * sh;

  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  const npk_out_t vo = npk_out(&o);
  const int32_t* weights = (const int32_t*)((const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT]);
  const int32_t* weight_sum = p + p[NPUKIT_S8_W_WEIGHT_SUM_AT];
  const int32_t in_zp = p[NPUKIT_S8_W_IN_ZP];
  const int32_t pixels = oh * ow, per_panel = pk.vectors * NPK_LANES;

  npk_lanes_t lanes;
  npk_runs_t in_runs, out_runs, res_runs;
  for (int32_t p0 = 0; p0 < pixels; p0 += per_panel) {
    lanes.n = pixels - p0 < per_panel ? pixels - p0 : per_panel;
    for (int32_t i = 0; i < lanes.n; ++i) lanes.y[i] = (p0 + i) / ow, lanes.x[i] = (p0 + i) % ow;
    const int32_t nv = (lanes.n + NPK_LANES - 1) / NPK_LANES;
    npk_runs(&lanes, step_y, pk.step, pk.step, &in_runs);
#if NPUKIT_S8_X86 == 512
    if (pk.step == 2 || pk.step == 4) {
      for (int32_t i = 0; i < in_runs.count; ++i) pk.spread[i] = spread_lanes(in_runs.run[i].lanes, pk.step);
    }
#endif
    npk_runs(&lanes, o.sh, o.sw, 1, &out_runs);
    if (o.mode == NPUKIT_S8_OUT_ADD) npk_runs(&lanes, vo.res_sh, vo.res_sw, 1, &res_runs);
    pack(&pk, &in_runs, nv, panel);
    for (int32_t c0 = 0; c0 < oc; c0 += MR) {
      // Channels come in pairs (an odd last one with a zero partner).
      const int32_t left = (oc - c0 + 1) & ~1, mr = left < MR ? left : MR;
      const int32_t* w[MR];
      npk_v acc[MR][NPK_VECTORS];
      for (int32_t i = 0; i < mr; ++i) {
        const int32_t c = c0 + i;
        w[i] = weights + (c >> 1) * groups * 2 + (c & 1);
        const npk_v start = broadcast(c < oc ? npk_fold(o.bias[c], in_zp, weight_sum[c]) : 0);
        for (int32_t v = 0; v < NPK_VECTORS; ++v) acc[i][v] = start;
      }
      dot_block(panel, groups, pk.vectors * GROUP_BYTES, w, acc, mr, nv);
      for (int32_t i = 0; i < mr && c0 + i < oc; ++i) {
        for (int32_t v = 0; v < nv; ++v) npk_store(&vo, acc[i][v], c0 + i, v, &out_runs, &res_runs, &lanes);
      }
    }
  }
  return 1;
}

#else

// Built for a target without the x86 kernels: nothing here.
typedef int npukit_s8_conv_x86_unused;

#endif
