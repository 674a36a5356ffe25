// Depthwise convolution on x86 (see s8_x86_vector.h), for layers whose adjacent
// output pixels are adjacent in the input (horizontal stride 1, W
// contiguous); other layers stay with the portable kernel.
//
// The lanes of a vector are consecutive positions of a channel's input
// plane: with `flat` pixels they run across rows, so a 25x5 output read from
// a padded 27x7 plane takes 173 positions (5 of each 7 are output pixels),
// not 25 vectors of 5; otherwise each output row is its own vectors. Up to
// four taps of one kernel row are one 32-bit lane: the bytes of a row of the
// plane, loaded once, are spread into the taps of every lane with two
// shuffles, and one multiply-add takes the four taps of all lanes against
// that kernel row's weights, broadcast. Lanes that are no output pixel
// (between rows) read bytes that lie between the reads of real outputs and
// are not stored.
#include "s8_x86_vector.h"

#if NPUKIT_S8_X86

#define CHANNEL_BLOCK 64
#define MAX_ROW_WORDS 64  // kernel rows x 4-tap chunks per channel

typedef struct {
  const int8_t* in;
  int32_t kh, kw, dy, dx, chunk, chunks, sc;
  int32_t multiplier;  // output channel c reads input plane c / multiplier
  int32_t reach;  // input elements a plane's outputs read, from its first
  const int8_t* end;  // the end of the last plane's reach: whole loads below it stay in the tensor
#if NPUKIT_S8_X86 == 512
  __m512i index, shuffle;
  __m512i row1, row2;  // channel_moved's lanes of kernel rows 1 and 2
#else
  __m256i index, shuffle;
#endif
} dw_t;

// The unsigned input bytes of vector lanes starting at `src` for one chunk of
// taps, spread into [lane][tap]; `bytes` are those the lanes read (with
// AVX2, the whole 32 bytes are read where they lie in the tensor: below the
// last plane's reach, past the plane's own into the next plane).
static inline npk_v taps(const dw_t* d, const int8_t* src, int32_t bytes) {
#if NPUKIT_S8_X86 == 512
  const __m256i row = _mm256_maskz_loadu_epi8((__mmask32)((1ull << bytes) - 1), src);
  const __m512i spread = _mm512_permutexvar_epi32(d->index, npk_u8(_mm512_castsi256_si512(row)));
  return _mm512_shuffle_epi8(spread, d->shuffle);
#else
  __m256i row;
  if (src + 32 <= d->end) {
    row = _mm256_loadu_si256((const __m256i*)src);
  } else {
    int8_t copy[32] __attribute__((aligned(32)));
    _mm256_store_si256((__m256i*)copy, _mm256_setzero_si256());
    for (int32_t i = 0; i < bytes; ++i) copy[i] = src[i];
    row = _mm256_load_si256((const __m256i*)copy);
  }
  const __m256i spread = _mm256_permutevar8x32_epi32(npk_u8(row), d->index);
  return _mm256_shuffle_epi8(spread, d->shuffle);
#endif
}

// One channel's vectors of a panel, computed together; `kh` and `chunks`
// are constants where the caller specializes it (3x3 kernels), so the taps
// unroll.
static inline __attribute__((always_inline)) void channel(const dw_t* d, const npk_out_t* vo, const npk_add_t* add,
                                                          int32_t c, const int32_t* words, int32_t fold,
                                                          const int32_t* start, const int32_t* bytes, int32_t nv,
                                                          const npk_runs_t* out, const npk_runs_t* res,
                                                          const npk_lanes_t* lanes, const int32_t kh,
                                                          const int32_t chunks) {
  const int8_t* plane = d->in + c / d->multiplier * d->sc;
  // Named accumulators, so that they stay in registers.
  const npk_v start_value = npk_broadcast(fold);
  npk_v a0 = start_value, a1 = start_value, a2 = start_value, a3 = start_value;
  const int32_t live0 = bytes[0] > 0, live1 = nv > 1 && bytes[1] > 0;
  const int32_t live2 = nv > 2 && bytes[2] > 0, live3 = nv > 3 && bytes[3] > 0;
  for (int32_t i = 0; i < kh; ++i) {
    for (int32_t ch = 0; ch < chunks; ++ch) {
      const int32_t in_chunk = d->kw - ch * d->chunk < d->chunk ? d->kw - ch * d->chunk : d->chunk;
      const int8_t* src = plane + i * d->dy + ch * d->chunk * d->dx;
      const npk_v w = npk_broadcast(words[i * chunks + ch]);
      const int32_t extra = (in_chunk - 1) * d->dx;
      if (live0) a0 = npk_dot(a0, taps(d, src + start[0], bytes[0] + extra), w);
      if (live1) a1 = npk_dot(a1, taps(d, src + start[1], bytes[1] + extra), w);
      if (live2) a2 = npk_dot(a2, taps(d, src + start[2], bytes[2] + extra), w);
      if (live3) a3 = npk_dot(a3, taps(d, src + start[3], bytes[3] + extra), w);
    }
  }
  const npk_channel_t k = npk_channel(vo, c);
  if (live0) npk_store(vo, &k, add, a0, c, 0, out, res, lanes);
  if (live1) npk_store(vo, &k, add, a1, c, 1, out, res, lanes);
  if (live2) npk_store(vo, &k, add, a2, c, 2, out, res, lanes);
  if (live3) npk_store(vo, &k, add, a3, c, 3, out, res, lanes);
}

#if NPUKIT_S8_X86 == 512

// 3x3 kernels (taps of a kernel row in one chunk) over flat lanes whose
// kernel rows lie within one vector of each other ((KH - 1) * dy < 16): the
// lanes of kernel row i are those of row 0 moved by i * dy lanes, so the
// row-0 spreads of the panel's vectors and one more (`spread_bytes` each)
// give every row's operands with one two-source permute, instead of a load
// and two shuffles per row.
static inline __attribute__((always_inline)) void channel_moved(const dw_t* d, const npk_out_t* vo,
                                                                const npk_add_t* add, int32_t c,
                                                                const int32_t* words, int32_t fold,
                                                                const int32_t* start, const int32_t* bytes,
                                                                const int32_t* spread_bytes, int32_t nv,
                                                                const npk_runs_t* out, const npk_runs_t* res,
                                                                const npk_lanes_t* lanes) {
  const int8_t* plane = d->in + c / d->multiplier * d->sc;
  // Named vectors, so that they stay in registers (a spread stored and read
  // back as a whole vector stalls on store forwarding).
#define SPREAD(u) (nv >= (u) && spread_bytes[u] > 0 ? taps(d, plane + start[u], spread_bytes[u]) : zero)
  const __m512i zero = _mm512_setzero_si512();
  const __m512i s0 = SPREAD(0), s1 = SPREAD(1), s2 = SPREAD(2), s3 = SPREAD(3), s4 = SPREAD(4);
#undef SPREAD
  const __m512i w0 = npk_broadcast(words[0]), w1 = npk_broadcast(words[1]), w2 = npk_broadcast(words[2]);
  const __m512i start_value = npk_broadcast(fold);
  const npk_channel_t k = npk_channel(vo, c);
#define MOVED(v, here, next)                                                               \
  if (nv > (v) && bytes[v] > 0) {                                                          \
    __m512i a = npk_dot(start_value, here, w0);                                            \
    a = npk_dot(a, _mm512_permutex2var_epi32(here, d->row1, next), w1);                    \
    a = npk_dot(a, _mm512_permutex2var_epi32(here, d->row2, next), w2);                    \
    npk_store(vo, &k, add, a, c, v, out, res, lanes);                                      \
  }
  MOVED(0, s0, s1)
  MOVED(1, s1, s2)
  MOVED(2, s2, s3)
  MOVED(3, s3, s4)
#undef MOVED
}

#endif

int npukit_s8_depthwise_x86(const int32_t* p, const npukit_s8_x86_input_t* view, size_t output,
                            size_t residual) {
#if NPUKIT_S8_X86 == 512 && defined(__AVX512VBMI__)
  if (npukit_s8_depthwise_vbmi(p, view, output, residual)) return 1;
#endif
  const int32_t sw = view->sw, sh = view->sh;
  if (p[NPUKIT_S8_W_STRIDE_W] * sw != 1) return 0;
  dw_t d;
  d.kh = p[NPUKIT_S8_W_KERNEL_H], d.kw = p[NPUKIT_S8_W_KERNEL_W];
  d.dy = p[NPUKIT_S8_W_DILATION_H] * sh, d.dx = p[NPUKIT_S8_W_DILATION_W];
  if (d.dx < 1 || d.kh < 1 || d.kw < 1) return 0;
  // Four lanes' chunk of taps must lie in 16 bytes: 3 + (chunk - 1) * dx <= 15.
  d.chunk = d.dx > 12 ? 1 : 1 + 12 / d.dx;
  if (d.chunk > 4) d.chunk = 4;
  d.chunks = (d.kw + d.chunk - 1) / d.chunk;
  if (d.kh * d.chunks > MAX_ROW_WORDS) return 0;
  d.in = view->in;
  d.sc = view->sc;
  d.multiplier = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], oh = view->oh, ow = view->ow;
  const int32_t step_y = p[NPUKIT_S8_W_STRIDE_H] * sh;
  d.reach = (oh - 1) * step_y + ow + (d.kh - 1) * d.dy + (d.kw - 1) * d.dx;
  const int64_t last_plane = (int64_t)((channels - 1) / d.multiplier) * d.sc;
  d.end = d.in + (last_plane > 0 ? last_plane : 0) + d.reach;

  // Lane (dword) l of each 128-bit group takes tap j from byte l + j * dx of
  // the group's 16 bytes, which start at the group's first lane.
  int8_t control[16];
  for (int32_t l = 0; l < 4; ++l) {
    for (int32_t j = 0; j < 4; ++j) control[4 * l + j] = (int8_t)(j < d.chunk ? l + j * d.dx : -1);
  }
  const __m128i lane_control = _mm_loadu_si128((const __m128i*)control);
#if NPUKIT_S8_X86 == 512
  d.index = _mm512_setr_epi32(0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6);
  d.shuffle = _mm512_broadcast_i32x4(lane_control);
#else
  d.index = _mm256_setr_epi32(0, 1, 2, 3, 1, 2, 3, 4);
  d.shuffle = _mm256_broadcastsi128_si256(lane_control);
#endif

  // Flat lanes when they are fewer than row-by-row vectors (and rows do not overlap).
  const int32_t flat_positions = oh == 1 ? ow : (oh - 1) * step_y + ow;
  const int32_t flat_vectors = (flat_positions + NPK_LANES - 1) / NPK_LANES;
  const int32_t row_vectors = oh * ((ow + NPK_LANES - 1) / NPK_LANES);
  const int32_t flat = (oh == 1 || step_y >= ow) && flat_vectors <= row_vectors;
  const int32_t row_panels = (ow + NPK_PANEL_LANES - 1) / NPK_PANEL_LANES;
#if NPUKIT_S8_X86 == 512
  const int32_t moved = flat && d.kh == 3 && d.chunks == 1 && 2 * d.dy < NPK_LANES;
  d.row1 = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32(d.dy));
  d.row2 = _mm512_add_epi32(d.row1, _mm512_set1_epi32(d.dy));
#endif
  const int32_t panels = flat ? (flat_positions + NPK_PANEL_LANES - 1) / NPK_PANEL_LANES : oh * row_panels;

  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  const npk_out_t vo = npk_out(&o);
  const npk_add_t add = npk_add(&vo);
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const int32_t* weight_sum = p + p[NPUKIT_S8_W_WEIGHT_SUM_AT];
  const int32_t in_zp = p[NPUKIT_S8_W_IN_ZP];

  int32_t words[CHANNEL_BLOCK][MAX_ROW_WORDS];
  int32_t fold[CHANNEL_BLOCK];
  npk_lanes_t lanes;
  npk_runs_t out_runs, res_runs;
  npk_runs_none(&res_runs);
  int32_t start[NPK_VECTORS + 1], bytes[NPK_VECTORS];
  for (int32_t c0 = 0; c0 < channels; c0 += CHANNEL_BLOCK) {
    const int32_t block = channels - c0 < CHANNEL_BLOCK ? channels - c0 : CHANNEL_BLOCK;
    for (int32_t b = 0; b < block; ++b) {
      const int8_t* w = weights + (c0 + b) * d.kh * d.kw;
      fold[b] = npk_fold(o.bias[c0 + b], in_zp, weight_sum[c0 + b]);
      if (d.kh == 3 && d.kw == 3 && d.chunks == 1) {  // 3x3: a row's three taps are one word
        for (int32_t i = 0; i < 3; ++i) {
          words[b][i] = (int32_t)((uint32_t)(uint8_t)w[3 * i] | (uint32_t)(uint8_t)w[3 * i + 1] << 8 |
                                  (uint32_t)(uint8_t)w[3 * i + 2] << 16);
        }
        continue;
      }
      for (int32_t i = 0; i < d.kh; ++i) {
        for (int32_t ch = 0; ch < d.chunks; ++ch) {
          uint32_t word = 0;
          for (int32_t j = 0; j < d.chunk && ch * d.chunk + j < d.kw; ++j) {
            word |= (uint32_t)(uint8_t)w[i * d.kw + ch * d.chunk + j] << (8 * j);
          }
          words[b][i * d.chunks + ch] = (int32_t)word;
        }
      }
    }
    for (int32_t panel = 0; panel < panels; ++panel) {
      // Position (from the plane's first read) of each lane, and its output
      // pixel: flat lanes run across rows of step_y positions, of which the
      // first ow are pixels; otherwise each is a pixel of one output row.
      int32_t first, p0, pitch, n;
      if (flat) {
        first = panel * NPK_PANEL_LANES;
        n = flat_positions - first < NPK_PANEL_LANES ? flat_positions - first : NPK_PANEL_LANES;
        p0 = first, pitch = oh > 1 ? step_y : ow;
      } else {
        const int32_t y_row = panel / row_panels, x0 = panel % row_panels * NPK_PANEL_LANES;
        first = y_row * step_y + x0;
        n = ow - x0 < NPK_PANEL_LANES ? ow - x0 : NPK_PANEL_LANES;
        p0 = y_row * ow + x0, pitch = ow;
      }
      npk_panel_runs(&vo, p0, n, pitch, ow, &lanes, &out_runs, &res_runs);
      const int32_t nv = (n + NPK_LANES - 1) / NPK_LANES;
      for (int32_t v = 0; v < nv; ++v) {
        uint32_t pixels = 0;  // the vector's lanes that are output pixels
        for (int32_t i = out_runs.first[v]; i < out_runs.first[v + 1]; ++i) pixels |= out_runs.run[i].lanes;
        start[v] = first + v * NPK_LANES;
        bytes[v] = pixels == 0 ? 0 : 32 - __builtin_clz(pixels);
      }
#if NPUKIT_S8_X86 == 512
      if (moved) {
        // Lanes each vector's row-0 spread must hold: up to the panel's last
        // output's read of kernel row 2, plus the taps after the first.
        int32_t last = -1, spread_bytes[NPK_VECTORS + 1];
        for (int32_t v = 0; v < nv; ++v) {
          if (bytes[v] > 0) last = v * NPK_LANES + bytes[v] - 1;
        }
        start[nv] = first + nv * NPK_LANES;
        for (int32_t u = 0; u <= nv; ++u) {
          int32_t need = last < 0 ? 0 : last + 2 * d.dy - u * NPK_LANES + 1;
          need = need < 0 ? 0 : need > NPK_LANES ? NPK_LANES : need;
          spread_bytes[u] = need > 0 ? need + (d.kw - 1) * d.dx : 0;
        }
        for (int32_t b = 0; b < block; ++b) {
          channel_moved(&d, &vo, &add, c0 + b, words[b], fold[b], start, bytes, spread_bytes, nv, &out_runs,
                        &res_runs, &lanes);
        }
        continue;
      }
#endif
      for (int32_t b = 0; b < block; ++b) {
        const int32_t c = c0 + b;
        if (d.kh == 3 && d.chunks == 1) {
          channel(&d, &vo, &add, c, words[b], fold[b], start, bytes, nv, &out_runs, &res_runs, &lanes, 3, 1);
        } else {
          channel(&d, &vo, &add, c, words[b], fold[b], start, bytes, nv, &out_runs, &res_runs, &lanes, d.kh, d.chunks);
        }
      }
    }
  }
  return 1;
}

#else

// Built for a target without the x86 kernels: nothing here.
typedef int npukit_s8_depthwise_x86_unused;

#endif
