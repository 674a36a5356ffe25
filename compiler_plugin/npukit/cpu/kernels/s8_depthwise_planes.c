// Channel-last 3x3 depthwise layers at stride 1 on DSP cores, from int16
// channel planes: each channel's input rows, padding included, copied into
// a stack strip as int16 values (a group of four channels and a band of
// rows at a time), so one word holds two neighbouring columns of one
// channel and the kernel (s8_depthwise_planes_dsp.S) computes four output
// pixels per pass with two multiply-accumulates per instruction.
//
// The parameter space (npukit_s8_depthwise_planes checks it and returns 0,
// leaving the layer to npukit_s8_depthwise's other paths, outside it):
// - KIND DEPTHWISE, a 3x3 kernel, stride 1 and dilation 1 along both axes;
// - a channel multiplier of 1 or 2 (output channel c reads input channel
//   c / M), any channel count (a last group of fewer than four channels is
//   copied value by value), weights NPUKIT_S8_WEIGHTS_TAPS or
//   NPUKIT_S8_WEIGHTS_INT8;
// - input and output channel-last (IN_SC = 1, OUT_SC = 1), any row and
//   pixel strides;
// - any padding (PAD_* words, PAD_VALUE written into the planes; SAME,
//   VALID or explicit), any output size whose padded rows (the output
//   width + 2 values, + 1 where the width is odd) of three rows of four
//   channels fit NPUKIT_S8_STRIP_BYTES: output widths up to 167, or with
//   the planes transposed (below) heights up to 167;
// - TFLite's fixed-point output stage on the small-accumulator path, int8
//   out (no fused ADD, no float output stage), every channel's right shift
//   1..PLANES_MAX_SHIFT (K = (2 zp + 1) << (e - 1) stays below 2^29: the
//   output stage's sum stays within int32, s8_depthwise_dsp.S's PSCALE), any
//   activation bounds.
// Stack: the strip (NPUKIT_S8_STRIP_BYTES + 8 bytes; the function's frame
// with it about 4.5 KiB, as the other padded paths' strips) and the
// kernel's frame (116 bytes); tests/compiler/test_stack_bound.py bounds it.
//
// The planes run along the output's rows, or transposed (a plane row per
// input column, the weights transposed alike) where that costs less
// (planes_cost: a layer 5 wide and 25 high runs as 5 rows of 25). With
// tap-ordered weights, s8_depthwise.c's four-channel kernels take the layer
// where they cost less (quads_cost against planes_cost, both from counts on
// Cortex-M4: small planes, such as 4x4, and 6x6 with an activation clamp).
// Per output channel: the kernel's 60 instructions per four pixels (70 with
// a clamp), 15 per row, and the copy's about 2.2 per value.
#include "s8_output.h"
#include "s8_strip.h"

int32_t npukit_s8_depthwise_planes(const int32_t* p, size_t input, size_t output, size_t residual);

#if defined(__ARM_FEATURE_DSP)
// The largest right shift the kernel's output stage takes.
#define PLANES_MAX_SHIFT 22

// One channel's call of the kernel (s8_depthwise_planes_dsp.S copies it to
// its frame; its word offsets are fixed there).
typedef struct {
  int32_t w[6];  // per window row i: (2 w(i, 0), 2 w(i, 1)), (2 w(i, 2), 2 w(i, 1))
  int32_t m, e, k, step;
  int32_t lo4, hi4;
  int32_t start2, pitch, pass_bytes, skip, out_skip, rows;
} npukit_s8_planes_channel_t;
_Static_assert(sizeof(npukit_s8_planes_channel_t) == 72, "s8_depthwise_planes_dsp.S reads these offsets");

void npukit_s8_planes_3x3_t0_dsp(const int16_t* plane, uint8_t* out, const npukit_s8_planes_channel_t* k);
void npukit_s8_planes_3x3_t1_dsp(const int16_t* plane, uint8_t* out, const npukit_s8_planes_channel_t* k);
void npukit_s8_planes_3x3_t2_dsp(const int16_t* plane, uint8_t* out, const npukit_s8_planes_channel_t* k);
void npukit_s8_planes_3x3_t3_dsp(const int16_t* plane, uint8_t* out, const npukit_s8_planes_channel_t* k);
void npukit_s8_planes_3x3_t0_clamp_dsp(const int16_t* plane, uint8_t* out, const npukit_s8_planes_channel_t* k);
void npukit_s8_planes_3x3_t1_clamp_dsp(const int16_t* plane, uint8_t* out, const npukit_s8_planes_channel_t* k);
void npukit_s8_planes_3x3_t2_clamp_dsp(const int16_t* plane, uint8_t* out, const npukit_s8_planes_channel_t* k);
void npukit_s8_planes_3x3_t3_clamp_dsp(const int16_t* plane, uint8_t* out, const npukit_s8_planes_channel_t* k);

typedef int32_t __attribute__((aligned(1), may_alias)) planes_input_word_t;

// The layer along the planes' rows: `len` outputs per row, `lines` rows;
// the input `in_len` values per row (`step` bytes apart) after `pad` padding
// values, `in_lines` rows (`line_step` bytes apart) after `pad_line` rows of
// padding; the output `out_step` bytes between a row's pixels, `out_line`
// between rows.
typedef struct {
  int32_t len, lines, in_len, in_lines, pad, pad_line, step, line_step, out_step, out_line, transposed;
} planes_geometry_t;

static planes_geometry_t planes_geometry(const int32_t* p, int32_t transposed) {
  planes_geometry_t g;
  if (!transposed) {
    g.len = p[NPUKIT_S8_W_OUT_W], g.lines = p[NPUKIT_S8_W_OUT_H];
    g.in_len = p[NPUKIT_S8_W_IN_W], g.in_lines = p[NPUKIT_S8_W_IN_H];
    g.pad = p[NPUKIT_S8_W_PAD_LEFT], g.pad_line = p[NPUKIT_S8_W_PAD_TOP];
    g.step = p[NPUKIT_S8_W_IN_SW], g.line_step = p[NPUKIT_S8_W_IN_SH];
    g.out_step = p[NPUKIT_S8_W_OUT_SW], g.out_line = p[NPUKIT_S8_W_OUT_SH];
  } else {
    g.len = p[NPUKIT_S8_W_OUT_H], g.lines = p[NPUKIT_S8_W_OUT_W];
    g.in_len = p[NPUKIT_S8_W_IN_H], g.in_lines = p[NPUKIT_S8_W_IN_W];
    g.pad = p[NPUKIT_S8_W_PAD_TOP], g.pad_line = p[NPUKIT_S8_W_PAD_LEFT];
    g.step = p[NPUKIT_S8_W_IN_SH], g.line_step = p[NPUKIT_S8_W_IN_SW];
    g.out_step = p[NPUKIT_S8_W_OUT_SH], g.out_line = p[NPUKIT_S8_W_OUT_SW];
  }
  g.transposed = transposed;
  return g;
}

// Int16 values per plane row: the row's len + 2 padded values, one more
// where len is odd (the last pass of 1 or 3 pixels reads it), an even count
// (rows word-aligned).
static inline int32_t planes_pitch(int32_t len) { return (len + 3) & ~1; }

// Output rows per band: as many as the strip holds of four channels' planes
// (each band's planes hold its rows + 2).
static inline int32_t planes_band(const planes_geometry_t* g) {
  const int32_t band = NPUKIT_S8_STRIP_BYTES / (4 * 2 * planes_pitch(g->len)) - 2;
  return band > g->lines ? g->lines : band;
}

// The layer's instructions per output channel on Cortex-M4 along these
// planes (channel multiplier `m`, activation bounds narrower than int8's
// where `clamp`): the kernel's, counted from its code (per row 15, per pass
// of four pixels 60 and 10 more to clamp, a last pass of 1..3 pixels 24, 36,
// 50 and 3 more to clamp), and the copy's, measured (about 2.2 per value, 8
// per plane row and 230 per band for the copy's ends), shared by the M
// output channels of an input channel, and about 30 per band for the
// channel's constants and the kernel's call.
static int32_t planes_cost(const planes_geometry_t* g, int32_t m, int32_t clamp) {
  static const int32_t tail[4] = {0, 24, 36, 50};
  const int32_t band = planes_band(g), bands = (g->lines + band - 1) / band, rows = g->lines + 2 * bands;
  const int32_t kernel = g->lines * (15 + (60 + 10 * clamp) * (g->len / 4) + tail[g->len % 4] +
                                     (g->len % 4 ? 3 * clamp : 0));
  return kernel + 30 * bands + (rows * planes_pitch(g->len) * 22 / 10 + rows * 8 + 230 * bands) / m;
}

// The same for s8_depthwise.c's four-channel kernels (quads_3x3_dsp, the
// strips and tiles around them), measured on Cortex-M4 over
// benchmarks/depthwise_layers.py's stride-1 layers: about 25 per output
// value and 24 per row and column of an output channel.
static int32_t quads_cost(const int32_t* p) {
  const int32_t h = p[NPUKIT_S8_W_OUT_H], w = p[NPUKIT_S8_W_OUT_W];
  return 25 * h * w + 24 * (h + w);
}

// Words [k0, k1) of one plane row of four channels, both columns of each
// inside the input: `at` holds input column 2 k0 - pad's first channel.
static __attribute__((noinline)) void planes_words(npukit_s8_word_t* to, const int8_t* at, int32_t step, int32_t wp,
                                                   int32_t n) {
  for (const npukit_s8_word_t* end = to + n; to != end; ++to, at += 2 * step) {
    npukit_s8_channel_pairs(to, wp, *(const planes_input_word_t*)(const void*)at,
                            *(const planes_input_word_t*)(const void*)(at + step));
  }
}

// The plane rows [first, first + rows) (counted from the padded input's
// first row) of `n` channels from `in` (the first channel of the input's
// first row), channel j's plane at strip + j * plane values; the rows of
// padding only where `pad_rows` (the band's first group of channels: the
// later groups' planes are in the same places).
static void planes_fill(int16_t* strip, const planes_geometry_t* g, const int8_t* in, int32_t n, int32_t first,
                        int32_t rows, int32_t plane, int8_t pad_value, int32_t pad_rows) {
  const int32_t pitch = planes_pitch(g->len), words = pitch / 2, step = g->step, wp = plane / 2;
  const int32_t pad4 = (int32_t)((uint32_t)(uint8_t)pad_value * 0x01010101u);
  const int32_t pad2 = (int32_t)((uint32_t)(uint16_t)(int16_t)pad_value * 0x00010001u);
  // Words k of a row hold padded columns 2k, 2k + 1, input columns 2k - pad
  // and 2k + 1 - pad: [k0, k1) both inside the input.
  const int32_t k0 = (g->pad + 1) / 2;
  int32_t k1 = g->in_len + g->pad >= 2 ? (g->in_len + g->pad) / 2 : 0;
  if (k1 > words) k1 = words;
  if (k1 < k0) k1 = k0;
  for (int32_t r = 0; r < rows; ++r) {
    const int32_t line = first + r - g->pad_line;
    npukit_s8_word_t* row = (npukit_s8_word_t*)(void*)(strip + r * pitch);
    if (line < 0 || line >= g->in_lines) {
      for (int32_t j = 0; j < n && pad_rows; ++j) {
        for (int32_t k = 0; k < words; ++k) row[j * wp + k] = pad2;
      }
      continue;
    }
    const int8_t* from = in + line * g->line_step;
    if (n < 4) {  // value by value
      for (int32_t j = 0; j < n; ++j) {
        int16_t* to = (int16_t*)(void*)(row + j * wp);
        for (int32_t col = 0; col < pitch; ++col) {
          const int32_t x = col - g->pad;
          to[col] = x >= 0 && x < g->in_len ? from[x * step + j] : pad_value;
        }
      }
      continue;
    }
    // The words with a column outside the input (four copies of PAD_VALUE
    // for it), then those inside.
    for (int32_t k = 0; k < words; ++k) {
      if (k == k0) k = k1;
      if (k >= words) break;
      const int32_t x = 2 * k - g->pad;
      const int32_t a = x >= 0 && x < g->in_len ? *(const planes_input_word_t*)(const void*)(from + x * step) : pad4;
      const int32_t b =
          x + 1 >= 0 && x + 1 < g->in_len ? *(const planes_input_word_t*)(const void*)(from + (x + 1) * step) : pad4;
      npukit_s8_channel_pairs(row + k, wp, a, b);  // input columns 2k - pad, 2k + 1 - pad
    }
    if (k1 > k0) planes_words(row + k0, from + (2 * k0 - g->pad) * step, step, wp, k1 - k0);
  }
}

// Whether the layer's geometry is in the parameter space above.
static int32_t planes_layer(const int32_t* p) {
  const int32_t m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
  return p[NPUKIT_S8_W_KIND] == NPUKIT_S8_DEPTHWISE && p[NPUKIT_S8_W_KERNEL_H] == 3 && p[NPUKIT_S8_W_KERNEL_W] == 3 &&
         p[NPUKIT_S8_W_STRIDE_H] == 1 && p[NPUKIT_S8_W_STRIDE_W] == 1 && p[NPUKIT_S8_W_DILATION_H] == 1 &&
         p[NPUKIT_S8_W_DILATION_W] == 1 && (m == 1 || m == 2) && p[NPUKIT_S8_W_IN_SC] == 1 &&
         p[NPUKIT_S8_W_OUT_SC] == 1 && p[NPUKIT_S8_W_OUTPUT] == NPUKIT_S8_OUT_INT8 &&
         (p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_TAPS || p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_INT8) &&
         p[NPUKIT_S8_W_OUT_H] >= 1 && p[NPUKIT_S8_W_OUT_W] >= 1 && p[NPUKIT_S8_W_OUT_C] == m * p[NPUKIT_S8_W_IN_C];
}

// Whether its output stage is (`o`): the small-accumulator path without
// the float stage, every right shift 1..PLANES_MAX_SHIFT.
static int32_t planes_output(const int32_t* p, const npukit_s8_output_t* o) {
  if (!o->small || o->mode != NPUKIT_S8_OUT_INT8 || o->fl.table || o->sc != 1) return 0;
  for (int32_t c = 0; c < p[NPUKIT_S8_W_OUT_C]; ++c) {
    if (o->shift[c] > -1 || o->shift[c] < -PLANES_MAX_SHIFT) return 0;
  }
  return 1;
}

int32_t npukit_s8_depthwise_planes(const int32_t* p, size_t input, size_t output, size_t residual) {
  if (!planes_layer(p)) return 0;
  const int32_t lo = p[NPUKIT_S8_W_ACT_MIN] > -128 ? p[NPUKIT_S8_W_ACT_MIN] : -128;
  const int32_t hi = p[NPUKIT_S8_W_ACT_MAX] < 127 ? p[NPUKIT_S8_W_ACT_MAX] : 127;
  const int32_t clamp = lo != -128 || hi != 127, m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
  // Along the output's rows or transposed, whichever costs less (three plane rows of four channels must fit the
  // strip); tap-ordered weights on the four-channel kernels where those cost less (small planes).
  const planes_geometry_t rows = planes_geometry(p, 0), columns = planes_geometry(p, 1);
  const int32_t rows_cost = planes_band(&rows) >= 1 ? planes_cost(&rows, m, clamp) : INT32_MAX;
  const int32_t columns_cost = planes_band(&columns) >= 1 ? planes_cost(&columns, m, clamp) : INT32_MAX;
  const planes_geometry_t g = columns_cost < rows_cost ? columns : rows;
  const int32_t cost = columns_cost < rows_cost ? columns_cost : rows_cost;
  const int32_t taps_form = p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_TAPS;
  if (cost == INT32_MAX || (taps_form && quads_cost(p) <= cost)) return 0;
  const npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  if (!planes_output(p, &o)) return 0;
  const int8_t* in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const int32_t in_c = p[NPUKIT_S8_W_IN_C], zp = p[NPUKIT_S8_W_IN_ZP];
  const int32_t tail = g.len % 4;
  const int32_t pitch = planes_pitch(g.len), band = planes_band(&g);
  const int8_t pad_value = (int8_t)p[NPUKIT_S8_W_PAD_VALUE];
  int16_t strip[NPUKIT_S8_STRIP_BYTES / 2 + 4] __attribute__((aligned(4)));
  npukit_s8_planes_channel_t k;
  k.lo4 = (int32_t)((uint32_t)(uint8_t)lo * 0x01010101u), k.hi4 = (int32_t)((uint32_t)(uint8_t)hi * 0x01010101u);
  k.step = g.out_step, k.pitch = 2 * pitch, k.pass_bytes = 8 * (g.len / 4), k.skip = 2 * pitch - k.pass_bytes;
  k.out_skip = g.out_line - 4 * (g.len / 4) * g.out_step;
  for (int32_t y0 = 0; y0 < g.lines; y0 += band) {
    const int32_t rows_here = g.lines - y0 < band ? g.lines - y0 : band, plane = (rows_here + 2) * pitch;
    // Groups of four input channels, each filled once for its M * 4 output channels.
    for (int32_t i0 = 0; i0 < in_c; i0 += 4) {
      const int32_t n = in_c - i0 < 4 ? in_c - i0 : 4;
      planes_fill(strip, &g, in + i0, n, y0, rows_here + 2, plane, pad_value, i0 == 0);
      for (int32_t c = m * i0; c < m * (i0 + n); ++c) {
        // Tap t of the layer's window is (t / 3, t % 3); along transposed planes window row i holds column i.
        const int8_t* wc = taps_form ? weights + (c / 4) * 36 + c % 4 : weights + c * 9;
        const int32_t ws = taps_form ? 4 : 1, across = g.transposed ? 3 * ws : ws, down = g.transposed ? ws : 3 * ws;
        int32_t sum = 0;
        for (int32_t i = 0; i < 3; ++i, wc += down) {
          const int32_t w0 = wc[0], w1 = wc[across], w2 = wc[2 * across];
          const uint32_t hi = (uint32_t)(2 * w1) << 16;
          k.w[2 * i] = (int32_t)((uint32_t)(uint16_t)(2 * w0) | hi);
          k.w[2 * i + 1] = (int32_t)((uint32_t)(uint16_t)(2 * w2) | hi);
          sum += w0 + w1 + w2;
        }
        const int32_t e = -o.shift[c];
        k.m = o.multiplier[c], k.e = e, k.k = (int32_t)((uint32_t)(2 * o.zp + 1) << (e - 1));
        k.start2 = 2 * (o.bias[c] - zp * sum), k.rows = rows_here;
        const int16_t* at = strip + (c / m - i0) * plane;
        uint8_t* out = o.out + c + y0 * g.out_line;
        // (Direct calls: a function's address would need the GOT in position-independent code.)
        if (clamp) {
          if (tail == 0) npukit_s8_planes_3x3_t0_clamp_dsp(at, out, &k);
          else if (tail == 1) npukit_s8_planes_3x3_t1_clamp_dsp(at, out, &k);
          else if (tail == 2) npukit_s8_planes_3x3_t2_clamp_dsp(at, out, &k);
          else npukit_s8_planes_3x3_t3_clamp_dsp(at, out, &k);
        } else {
          if (tail == 0) npukit_s8_planes_3x3_t0_dsp(at, out, &k);
          else if (tail == 1) npukit_s8_planes_3x3_t1_dsp(at, out, &k);
          else if (tail == 2) npukit_s8_planes_3x3_t2_dsp(at, out, &k);
          else npukit_s8_planes_3x3_t3_dsp(at, out, &k);
        }
      }
    }
  }
  return 1;
}
#else
int32_t npukit_s8_depthwise_planes(const int32_t* p, size_t input, size_t output, size_t residual) {
  (void)p, (void)input, (void)output, (void)residual;
  return 0;
}
#endif
