// Depthwise convolution with AVX-512 VBMI (see s8_x86_vector.h): the lanes
// of a vector are consecutive output pixels, whatever the strides, and each
// lane's taps are picked from the input with one byte permute (VPERMB).
//
// A vector's 16 pixels read a stretch of their channel's input plane; where
// it is at most 64 bytes (a 25x5 output of a padded 27x7 plane: 16 pixels
// span four output rows, six input rows, 42 bytes), one masked load takes
// it, and each group of four taps (in the order kernel row, kernel column;
// 3 groups for a 3x3 kernel) is one VPERMB of those bytes into [lane][tap]
// and one VPDPBUSD against that group's four weights. Where the stretch is
// longer, each kernel row is a window of its own, loaded once per row.
// The permute indices depend on the pixels only, so they are made once per
// panel of vectors and serve every channel. Layers whose stretches exceed
// 64 bytes even per kernel row (wide rows with large horizontal strides),
// or with more than MAX_GROUPS groups, stay with s8_depthwise_x86.c.
#include "s8_x86_vector.h"

#if NPUKIT_S8_X86 == 512 && defined(__AVX512VBMI__)

#define CHANNEL_BLOCK 64
#define MAX_GROUPS 16  // groups of four taps per channel (a 7x7 kernel, row by row: 14)

typedef struct {
  int32_t groups;            // of four taps, per channel
  int32_t windows;           // 1, or one per kernel row
  int32_t groups_per_window;
  int32_t window_step;       // elements from one window's start to the next (a kernel row)
  uint32_t taps[MAX_GROUPS]; // per group, the element offsets of its four taps in its window, one per byte
} gather_t;

// The groups' taps as bytes (offsets below 64), and each channel's weights in
// the same order (npk_dot's signed operand); missing taps weigh 0.
static void group_taps(gather_t* g, int32_t kh, int32_t kw, int32_t dy, int32_t dx) {
  for (int32_t i = 0; i < MAX_GROUPS; ++i) g->taps[i] = 0;
  for (int32_t i = 0; i < kh; ++i) {
    for (int32_t j = 0; j < kw; ++j) {
      const int32_t t = g->windows == 1 ? i * kw + j : i * g->groups_per_window * 4 + j;
      const int32_t at = g->windows == 1 ? i * dy + j * dx : j * dx;
      g->taps[t / 4] |= (uint32_t)at << (8 * (t % 4));
    }
  }
}

static void group_weights(const gather_t* g, const int8_t* w, int32_t kh, int32_t kw, int32_t* words) {
  // A group's four taps: in one window, taps 4i.. of the kernel in order;
  // per kernel row, taps 4j.. of row i / groups_per_window.
  for (int32_t i = 0; i < g->groups; ++i) {
    const int32_t row = g->windows == 1 ? 0 : i / g->groups_per_window;
    const int32_t first = g->windows == 1 ? 4 * i : 4 * (i % g->groups_per_window);
    const int32_t end = g->windows == 1 ? kh * kw : kw;
    const int8_t* from = w + row * kw + first;
    uint32_t word = 0;
    for (int32_t j = 0; j < 4 && first + j < end; ++j) word |= (uint32_t)(uint8_t)from[j] << (8 * j);
    words[i] = (int32_t)word;
  }
}

// One channel's vectors of a panel; `groups` and `windows` are constants
// where the caller specializes it, so the loops unroll.
static inline __attribute__((always_inline)) void channel(const gather_t* g, const npk_out_t* vo,
                                                          const npk_add_t* add, const int8_t* plane, int32_t c,
                                                          const int32_t* words, int32_t fold,
                                                          const __m512i (*index)[MAX_GROUPS], const int32_t* start,
                                                          const __mmask64* reads, int32_t nv, const npk_runs_t* out,
                                                          const npk_runs_t* res, const npk_lanes_t* lanes,
                                                          const int32_t groups, const int32_t windows) {
  npk_v acc[NPK_VECTORS];
  const int32_t per_window = groups / windows;
  for (int32_t v = 0; v < NPK_VECTORS; ++v) {
    if (v >= nv) break;
    npk_v a = npk_broadcast(fold);
    for (int32_t w = 0; w < windows; ++w) {
      const __m512i bytes = npk_u8(_mm512_maskz_loadu_epi8(reads[v], plane + start[v] + w * g->window_step));
      for (int32_t i = w * per_window; i < (w + 1) * per_window; ++i) {
        a = npk_dot(a, _mm512_permutexvar_epi8(index[v][i], bytes), npk_broadcast(words[i]));
      }
    }
    acc[v] = a;
  }
  const npk_channel_t k = npk_channel(vo, c);
  npk_store_channel(vo, &k, add, acc, c, nv, out, res, lanes);
}

int npukit_s8_depthwise_vbmi(const int32_t* p, const npukit_s8_x86_input_t* view, size_t output,
                             size_t residual) {
  const int32_t kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t sc = view->sc, sh = view->sh, sw = view->sw;
  const int32_t oh = view->oh, ow = view->ow, channels = p[NPUKIT_S8_W_OUT_C];
  // Element steps: to the next output pixel's read in a row and in a column, and between taps.
  const int64_t step_x = (int64_t)p[NPUKIT_S8_W_STRIDE_W] * sw, step_y = (int64_t)p[NPUKIT_S8_W_STRIDE_H] * sh;
  const int64_t dy = (int64_t)p[NPUKIT_S8_W_DILATION_H] * sh, dx = (int64_t)p[NPUKIT_S8_W_DILATION_W] * sw;
  if (kh < 1 || kw < 1 || oh < 1 || ow < 1 || step_x < 0 || step_y < 0 || dy < 0 || dx < 0) return 0;
  // Pixels' reads must rise with the pixel (so a vector's first and last
  // lanes bound its stretch): along a row, and from a row's end to the next.
  if (oh > 1 && step_y < (int64_t)(ow - 1) * step_x) return 0;
  // The longest stretch over which a vector's pixels start (vectors start
  // at every 16th pixel).
  const int32_t pixels = oh * ow;
  int64_t spread = 0;
  for (int32_t q = 0; q < pixels; q += NPK_LANES) {
    const int32_t e = q + NPK_LANES - 1 < pixels ? q + NPK_LANES - 1 : pixels - 1;
    const int64_t d = (e / ow - q / ow) * step_y + (int64_t)(e % ow - q % ow) * step_x;
    if (d > spread) spread = d;
  }
  const int64_t row_reach = (int64_t)(kw - 1) * dx;  // one kernel row's taps, from its first
  gather_t g;
  if (spread + (kh - 1) * dy + row_reach < 64) {
    g.windows = 1;
    g.groups = (kh * kw + 3) / 4;
    g.groups_per_window = g.groups;
    g.window_step = 0;
  } else if (spread + row_reach < 64) {
    g.windows = kh;
    g.groups_per_window = (kw + 3) / 4;
    g.groups = kh * g.groups_per_window;
    g.window_step = (int32_t)dy;
  } else {
    return 0;
  }
  if (g.groups > MAX_GROUPS) return 0;
  group_taps(&g, kh, kw, (int32_t)dy, (int32_t)dx);
  const int32_t reach = (int32_t)(g.windows == 1 ? (kh - 1) * dy + row_reach : row_reach);  // past a lane's first read

  const int8_t* in = view->in;
  const int32_t multiplier = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;  // input plane c / M
  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  const npk_out_t vo = npk_out(&o);
  const npk_add_t add = npk_add(&vo);
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const int32_t* weight_sum = p + p[NPUKIT_S8_W_WEIGHT_SUM_AT];
  const int32_t in_zp = p[NPUKIT_S8_W_IN_ZP];

  int32_t words[CHANNEL_BLOCK][MAX_GROUPS];
  int32_t fold[CHANNEL_BLOCK];
  __m512i index[NPK_VECTORS][MAX_GROUPS];
  int32_t start[NPK_VECTORS];
  __mmask64 reads[NPK_VECTORS];
  int32_t lane_at[NPK_LANES] __attribute__((aligned(64)));
  npk_lanes_t lanes;
  lanes.n = 0;
  npk_runs_t out_runs, res_runs;
  npk_runs_none(&res_runs);
  // Byte 0 of each lane's index repeated into its four bytes.
  const __m512i spread_byte = _mm512_set1_epi32(0x01010101);
  for (int32_t c0 = 0; c0 < channels; c0 += CHANNEL_BLOCK) {
    const int32_t block = channels - c0 < CHANNEL_BLOCK ? channels - c0 : CHANNEL_BLOCK;
    for (int32_t b = 0; b < block; ++b) {
      group_weights(&g, weights + (c0 + b) * kh * kw, kh, kw, words[b]);
      fold[b] = npk_fold(o.bias[c0 + b], in_zp, weight_sum[c0 + b]);
    }
    for (int32_t p0 = 0; p0 < pixels; p0 += NPK_PANEL_LANES) {
      const int32_t n = pixels - p0 < NPK_PANEL_LANES ? pixels - p0 : NPK_PANEL_LANES;
      const int32_t nv = (n + NPK_LANES - 1) / NPK_LANES;
      npk_panel_runs(&vo, p0, n, ow, ow, &lanes, &out_runs, &res_runs);
      for (int32_t v = 0; v < nv; ++v) {
        // Each lane's first read, from the vector's first; lanes past the
        // panel repeat the first.
        int32_t y = (p0 + v * NPK_LANES) / ow, x = (p0 + v * NPK_LANES) % ow, last = 0;
        const int64_t first = y * step_y + x * step_x;
        for (int32_t l = 0; l < NPK_LANES; ++l) {
          const int32_t live = v * NPK_LANES + l < n;
          lane_at[l] = live ? (int32_t)(y * step_y + x * step_x - first) : 0;
          if (live) last = lane_at[l];
          if (++x == ow) x = 0, ++y;
        }
        start[v] = (int32_t)first;
        const int32_t bytes = last + reach + 1;
        reads[v] = bytes >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << bytes) - 1;
        const __m512i at = _mm512_mullo_epi32(_mm512_load_si512(lane_at), spread_byte);
        for (int32_t i = 0; i < g.groups; ++i) {
          index[v][i] = _mm512_add_epi32(at, _mm512_set1_epi32((int32_t)g.taps[i]));
        }
      }
      for (int32_t b = 0; b < block; ++b) {
        const int32_t c = c0 + b;
        const int8_t* plane = in + (int64_t)(c / multiplier) * sc;
        if (g.windows == 1 && g.groups == 3) {  // 3x3 kernels
          channel(&g, &vo, &add, plane, c, words[b], fold[b], index, start, reads, nv, &out_runs, &res_runs,
                  &lanes, 3, 1);
        } else {
          channel(&g, &vo, &add, plane, c, words[b], fold[b], index, start, reads, nv, &out_runs, &res_runs,
                  &lanes, g.groups, g.windows);
        }
      }
    }
  }
  return 1;
}

#else

// Built for a target without AVX-512 VBMI: nothing here.
typedef int npukit_s8_depthwise_vbmi_unused;

#endif
