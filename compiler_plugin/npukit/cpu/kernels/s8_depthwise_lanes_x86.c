// Channel-last depthwise convolution on x86 (NPUKIT_S8_WEIGHTS_LANES,
// s8_lanes.h): the lanes of a vector are consecutive channels of one output
// pixel, any stride, dilation and kernel size.
//
// Per block of 64 channels and output pixel, four taps' 64 channel bytes
// (one load each, unsigned as x XOR 0x80) are interleaved with two rounds of
// byte and word unpacks into four vectors of [lane][tap]: lane 4L + i of
// vector k holds channel 16L + 4k + i (the unpacks stay within 128-bit
// lanes), which is the order the weights are packed in. One VPDPBUSD per
// vector then takes the four taps of 16 channels (AVX2: 32 channels per
// block half, the products as two VPMADDWD). After the last taps the
// accumulators are put back into channel order (128-bit lanes transposed),
// and the output stage (s8_lanes_x86.h) stores 16 channels (AVX2: 8) at a time.
// Taps past the kernel's (its count rounded up to 4) read the first tap's
// bytes against zero weights.
//
// With AVX-512, a layer of C < 32 channels would leave most of a block's 64
// lanes empty. Where neighbouring output pixels' channels follow each other
// in the input (horizontal stride 1 over a dense row) and in the output (and
// residual), a block is instead P = 64 / C neighbouring pixels of the same
// row: byte b of a tap's load is pixel b / C's channel b % C, the weights and
// the output stage's constants are the channels' repeated P times (made on
// the stack per call), and the stores write P pixels' channels at once.
//
// With AVX-512 VBMI the pixel blocks take a horizontal stride of 2 too (M =
// 1): the P pixels' channels lie in (2P - 1) * C < 128 input bytes, two
// masked loads, from which one VPERMT2B picks every other pixel's.
//
// With a channel multiplier M of 2 or 4 (output channel c reads input
// channel c / M), lane l of a block reads input byte l / M from the block's
// first (in both forms, as the output's C is M times the input's): a tap's
// load is 64 / M input bytes (AVX2: 32 / M), each widened to M copies. Other
// multipliers go to the portable kernel (kernel_choice offers lane weights
// for these only).
#include "s8_lanes_x86.h"

#if NPUKIT_S8_X86

#define MAX_TAPS 256  // more go to the portable kernel
#define PACKED_GROUPS 16  // groups of four taps the pixel-packed form takes (a 7x7 kernel: 13)

#if NPUKIT_S8_X86 == 512
#define HALVES 1
#define OUT_VECTORS 4  // channel vectors of a block's output
#else
#define HALVES 2  // a block's two halves of 32 channels
#define OUT_VECTORS 8
#endif

// Four taps' bytes of a pixel's channels -> four vectors of [lane][tap].
static inline __attribute__((always_inline)) void interleave_taps(npk_v r0, npk_v r1, npk_v r2, npk_v r3, npk_v* q) {
  const npk_v ab0 = NPK_OP(unpacklo_epi8)(r0, r1), ab1 = NPK_OP(unpackhi_epi8)(r0, r1);
  const npk_v cd0 = NPK_OP(unpacklo_epi8)(r2, r3), cd1 = NPK_OP(unpackhi_epi8)(r2, r3);
  q[0] = NPK_OP(unpacklo_epi16)(ab0, cd0), q[1] = NPK_OP(unpackhi_epi16)(ab0, cd0);
  q[2] = NPK_OP(unpacklo_epi16)(ab1, cd1), q[3] = NPK_OP(unpackhi_epi16)(ab1, cd1);
}

typedef struct {
  const int32_t* toff;  // each tap's first input byte from the pixel's
  int32_t groups;
  int32_t n;  // channels of this block
  int32_t m;  // the channel multiplier: 1, 2 or 4
#if NPUKIT_S8_X86 == 512
  __mmask64 mask;  // the input bytes a tap's load reads (n / m of them)
  int32_t pick;    // the stride-2 pixel blocks: bytes from two loads (below)
  __mmask64 mask_hi;
  __m512i index;   // byte l: pixel l / C's channel l % C in the two loads
#else
  const int8_t* end;  // the end of the layer's reads: whole 32-byte loads below it stay in the input
#endif
} taps_t;

// Each input byte as `m` copies (2 or 4), from bytes widened to 16- or
// 32-bit lanes (zero-extended): one byte shuffle within 128-bit lanes.
static inline __attribute__((always_inline)) npk_v copies(npk_v wide, int32_t m) {
  const __m128i pairs = _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
  const __m128i quads = _mm_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
#if NPUKIT_S8_X86 == 512
  return _mm512_shuffle_epi8(wide, _mm512_broadcast_i32x4(m == 2 ? pairs : quads));
#else
  return _mm256_shuffle_epi8(wide, _mm256_broadcastsi128_si256(m == 2 ? pairs : quads));
#endif
}

// Whether a tap's load is one load of the channels' bytes (no multiplier, no picking).
static inline int32_t plain_taps(const taps_t* t) {
#if NPUKIT_S8_X86 == 512
  return t->m == 1 && !t->pick;
#else
  return t->m == 1;
#endif
}

// The unsigned bytes of 64 (AVX2: 32, from half `h`) channels of a tap;
// `plain` (a constant where the callers specialize) as plain_taps says.
static inline __attribute__((always_inline)) npk_v load_tap(const taps_t* t, const int8_t* at, const int32_t plain) {
#if NPUKIT_S8_X86 == 512
  if (plain) return npk_u8(_mm512_maskz_loadu_epi8(t->mask, at));
#if defined(__AVX512VBMI__)
  if (t->pick) {
    const __m512i lo = _mm512_maskz_loadu_epi8(t->mask, at), hi = _mm512_maskz_loadu_epi8(t->mask_hi, at + 64);
    return npk_u8(_mm512_permutex2var_epi8(lo, t->index, hi));
  }
#endif
  if (t->m == 1) return npk_u8(_mm512_maskz_loadu_epi8(t->mask, at));
  if (t->m == 2) return npk_u8(copies(_mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8((__mmask32)t->mask, at)), 2));
  return npk_u8(copies(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8((__mmask16)t->mask, at)), 4));
#else
  const int32_t reads = plain ? 32 : 32 / t->m;  // input bytes per load
  __m128i part;
  if (at + reads <= t->end) {
    if (plain) return npk_u8(_mm256_loadu_si256((const __m256i*)at));
    part = t->m == 2 ? _mm_loadu_si128((const __m128i*)at) : _mm_loadl_epi64((const __m128i*)at);
  } else {
    int8_t bytes[32] __attribute__((aligned(32)));
    const int32_t n = (int32_t)(t->end - at) < reads ? (int32_t)(t->end - at) : reads;
    for (int32_t i = 0; i < 32; ++i) bytes[i] = i < n ? at[i] : 0;
    if (plain) return npk_u8(_mm256_load_si256((const __m256i*)bytes));
    part = _mm_load_si128((const __m128i*)bytes);
  }
  return npk_u8(copies(t->m == 2 ? _mm256_cvtepu8_epi16(part) : _mm256_cvtepu8_epi32(part), t->m));
#endif
}

// One pixel's accumulators of a block (half): a[k] start at start[k], the
// taps from `at`, the weights of the block (half) from `w`, 256 bytes per group.
static inline __attribute__((always_inline)) void pixel(const taps_t* t, const int8_t* at, const int8_t* w,
                                                        const npk_v* start, npk_v* a, const int32_t plain) {
  npk_v a0 = start[0], a1 = start[1], a2 = start[2], a3 = start[3];
  for (int32_t g = 0; g < t->groups; ++g, w += 256) {
    const int32_t* off = t->toff + 4 * g;
    npk_v q[4];
    interleave_taps(load_tap(t, at + off[0], plain), load_tap(t, at + off[1], plain),
                    load_tap(t, at + off[2], plain), load_tap(t, at + off[3], plain), q);
    a0 = npk_dot(a0, q[0], npk_load_vector(w));
    a1 = npk_dot(a1, q[1], npk_load_vector(w + 64));
    a2 = npk_dot(a2, q[2], npk_load_vector(w + 128));
    a3 = npk_dot(a3, q[3], npk_load_vector(w + 192));
  }
  a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;
}

// Accumulators of quarters k = 0..3 -> channel order: out[v] holds channels
// 16v .. 16v + 15 of the block (AVX2: 8v .. 8v + 7 of the half).
static inline void channel_order(const npk_v* a, npk_v* out) {
#if NPUKIT_S8_X86 == 512
  const __m512i t0 = _mm512_shuffle_i32x4(a[0], a[1], 0x44), t1 = _mm512_shuffle_i32x4(a[0], a[1], 0xee);
  const __m512i t2 = _mm512_shuffle_i32x4(a[2], a[3], 0x44), t3 = _mm512_shuffle_i32x4(a[2], a[3], 0xee);
  out[0] = _mm512_shuffle_i32x4(t0, t2, 0x88), out[1] = _mm512_shuffle_i32x4(t0, t2, 0xdd);
  out[2] = _mm512_shuffle_i32x4(t1, t3, 0x88), out[3] = _mm512_shuffle_i32x4(t1, t3, 0xdd);
#else
  out[0] = _mm256_permute2x128_si256(a[0], a[1], 0x20), out[1] = _mm256_permute2x128_si256(a[2], a[3], 0x20);
  out[2] = _mm256_permute2x128_si256(a[0], a[1], 0x31), out[3] = _mm256_permute2x128_si256(a[2], a[3], 0x31);
#endif
}

// The output pixels of one block (half) of `n` channels: `ch` their
// channel vectors (`live` of them), `w` the block's (half's) weights.
static inline __attribute__((always_inline)) void rows(const taps_t* tp, const npl_stage_t* s,
                                                       const npl_channels_t* ch, int32_t live, int32_t n,
                                                       const int8_t* in, const int8_t* w, const npk_v* start,
                                                       int32_t oh, int32_t ow, int32_t step_y, int32_t step_x,
                                                       const int32_t stage, const int32_t clamp) {
  const int32_t plain = plain_taps(tp);
  for (int32_t y = 0; y < oh; ++y) {
    const int8_t* row = in + y * step_y;
    for (int32_t x = 0; x < ow; ++x) {
      npk_v a[4], out[4];
      if (plain) {
        pixel(tp, row + x * step_x, w, start, a, 1);
      } else {
        pixel(tp, row + x * step_x, w, start, a, 0);
      }
      channel_order(a, out);
      npl_store_pixel(s, ch, out, live, n, y, x, stage, clamp);
    }
  }
}

#define ROWS_CASE(STAGE, CLAMP)                                                      \
  case (STAGE) * 2 + (CLAMP):                                                       \
    rows(tp, s, ch, live, n, in, w, start, oh, ow, step_y, step_x, STAGE, CLAMP);   \
    break;

__attribute__((noinline)) static void block_rows(const taps_t* tp, const npl_stage_t* s, int32_t form,
                                                const npl_channels_t* ch, int32_t live, int32_t n, const int8_t* in,
                                                const int8_t* w, const npk_v* start, int32_t oh, int32_t ow,
                                                int32_t step_y, int32_t step_x) {
  switch (form) {
    NPL_FORMS(ROWS_CASE)
    default:
      break;
  }
}

#if NPUKIT_S8_X86 == 512
// The output rows of a layer whose block is `per` neighbouring pixels of a
// row (`channels` each): `full` and `ch_full` for a whole block, `tail` and
// `ch_tail` for a row's last, shorter one.
static inline __attribute__((always_inline)) void packed_rows(const taps_t* full, const taps_t* tail,
                                                              const npl_stage_t* s, const npl_channels_t* ch_full,
                                                              const npl_channels_t* ch_tail, int32_t per,
                                                              int32_t channels, const int8_t* in, const int8_t* w,
                                                              const npk_v* start, int32_t oh, int32_t ow,
                                                              int32_t step_y, int32_t step_x, const int32_t stage,
                                                              const int32_t clamp) {
  const int32_t plain = plain_taps(full);
  for (int32_t y = 0; y < oh; ++y) {
    const int8_t* row = in + y * step_y;
    for (int32_t x = 0; x < ow; x += per) {
      const int32_t whole = ow - x >= per, n = (whole ? per : ow - x) * channels;
      npk_v a[4], out[4];
      if (plain) {
        pixel(whole ? full : tail, row + x * step_x, w, start, a, 1);
      } else {
        pixel(whole ? full : tail, row + x * step_x, w, start, a, 0);
      }
      channel_order(a, out);
      npl_store_pixel(s, whole ? ch_full : ch_tail, out, (n + 15) / 16, n, y, x, stage, clamp);
    }
  }
}

#define PACKED_CASE(STAGE, CLAMP)                                                                               \
  case (STAGE) * 2 + (CLAMP):                                                                                  \
    packed_rows(full, tail, s, ch_full, ch_tail, per, channels, in, w, start, oh, ow, step_y, step_x, STAGE, \
                CLAMP);                                                                                       \
    break;

__attribute__((noinline)) static void packed_block_rows(const taps_t* full, const taps_t* tail, const npl_stage_t* s,
                                                       int32_t form, const npl_channels_t* ch_full,
                                                       const npl_channels_t* ch_tail, int32_t per, int32_t channels,
                                                       const int8_t* in, const int8_t* w, const npk_v* start,
                                                       int32_t oh, int32_t ow, int32_t step_y, int32_t step_x) {
  switch (form) {
    NPL_FORMS(PACKED_CASE)
    default:
      break;
  }
}

// The layer with blocks of neighbouring pixels (above), where it allows them: 1 if it ran.
static int32_t packed_pixels(const int32_t* p, const npukit_s8_x86_input_t* view, const npukit_s8_output_t* o,
                             const npk_out_t* vo, const npk_add_t* add,
                             const int32_t* toff, int32_t groups, const int8_t* in, const int8_t* weights,
                             int32_t step_x, int32_t step_y) {
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], oh = view->oh, ow = view->ow;
  const int32_t m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;
  const int32_t per = NPUKIT_S8_DW_BLOCK / channels, used = per * channels;
  // Stride 1 (the pixels' input bytes follow each other), or 2 where VBMI picks every other pixel's.
#if defined(__AVX512VBMI__)
  const int32_t pick = m == 1 && step_x == 2 * channels;
#else
  const int32_t pick = 0;
#endif
  if (per < 2 || ow < 2 || groups > PACKED_GROUPS || (step_x != channels / m && !pick) || o->sw != channels) return 0;
  if (o->mode == NPUKIT_S8_OUT_ADD && o->add.res_sw != channels) return 0;
  // Lane l of the block is channel l % channels (of pixel l / channels): the tables repeated.
  int32_t bias[NPUKIT_S8_DW_BLOCK], multiplier[NPUKIT_S8_DW_BLOCK], shift[NPUKIT_S8_DW_BLOCK];
  int32_t weight_sum[NPUKIT_S8_DW_BLOCK];
  const int32_t* sums = p + p[NPUKIT_S8_W_WEIGHT_SUM_AT];
  for (int32_t l = 0; l < NPUKIT_S8_DW_BLOCK; ++l) {
    const int32_t c = l < used ? l % channels : 0;
    bias[l] = o->bias[c], multiplier[l] = o->multiplier[c], shift[l] = o->shift[c], weight_sum[l] = sums[c];
  }
  npukit_s8_output_t repeated = *o;
  repeated.bias = bias, repeated.multiplier = multiplier, repeated.shift = shift;
  npl_stage_t stage;
  npl_stage(&stage, &repeated, vo, add);
  stage.weight_sum = weight_sum;
  const int32_t form = npl_form(&stage);
  if (form / 2 == NPK_STAGE_LANES) return 0;  // the scalar stage stores by channel index
  int8_t w[PACKED_GROUPS * 256] __attribute__((aligned(64)));
  for (int32_t l = 0; l < NPUKIT_S8_DW_BLOCK; ++l) {
    for (int32_t t = 0; t < 4 * groups; ++t) {
      w[npukit_s8_dw_weight_at(l, t, groups)] = l < used ? weights[npukit_s8_dw_weight_at(l % channels, t, groups)] : 0;
    }
  }
  int32_t starts[NPUKIT_S8_DW_BLOCK] __attribute__((aligned(64)));
  for (int32_t k = 0; k < 4; ++k) {
    for (int32_t lane = 0; lane < 16; ++lane) {
      const int32_t l = lane / 4 * 16 + 4 * k + lane % 4;
      starts[16 * k + lane] = l < used ? npk_fold(bias[l], stage.in_zp, weight_sum[l]) : 0;
    }
  }
  npk_v start[4];
  for (int32_t k = 0; k < 4; ++k) start[k] = npk_load_vector(starts + 16 * k);
  const int32_t tail_n = ow % per * channels;
  taps_t full, tail;
  full.toff = tail.toff = toff, full.groups = tail.groups = groups;
  full.n = used, tail.n = tail_n, full.m = tail.m = m;
  full.mask = used / m == 64 ? ~(__mmask64)0 : ((__mmask64)1 << used / m) - 1;
  tail.mask = ((__mmask64)1 << tail_n / m) - 1;
  full.pick = tail.pick = pick;
  full.mask_hi = tail.mask_hi = 0;
  full.index = tail.index = _mm512_setzero_si512();
  if (pick) {  // the pixels' bytes span (2P - 1) * C of the two loads (P of a block or of the tail)
    int8_t index[64];
    for (int32_t l = 0; l < 64; ++l) index[l] = (int8_t)(l < used ? l / channels * 2 * channels + l % channels : 0);
    full.index = tail.index = _mm512_loadu_si512(index);
    const int32_t spans[2] = {used ? 2 * used - channels : 0, tail_n ? 2 * tail_n - channels : 0};
    taps_t* forms[2] = {&full, &tail};
    for (int32_t i = 0; i < 2; ++i) {
      const int32_t low = spans[i] < 64 ? spans[i] : 64, high = spans[i] - low;
      forms[i]->mask = low == 64 ? ~(__mmask64)0 : ((__mmask64)1 << low) - 1;
      forms[i]->mask_hi = high == 64 ? ~(__mmask64)0 : ((__mmask64)1 << high) - 1;
    }
  }
  npl_channels_t ch_full[4], ch_tail[4];
  for (int32_t v = 0; v < 4; ++v) {
    const int32_t left = used - 16 * v, tail_left = tail_n - 16 * v;
    npl_channels(&stage, 16 * v, left < 0 ? 0 : left < 16 ? left : 16, &ch_full[v]);
    npl_channels(&stage, 16 * v, tail_left < 0 ? 0 : tail_left < 16 ? tail_left : 16, &ch_tail[v]);
  }
  packed_block_rows(&full, &tail, &stage, form, ch_full, ch_tail, per, channels, in, w, start, oh, ow, step_y, step_x);
  return 1;
}
#endif

int npukit_s8_depthwise_lanes_x86(const int32_t* p, const npukit_s8_x86_input_t* view, size_t output,
                                  size_t residual) {
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], oh = view->oh, ow = view->ow;
  const int32_t kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W], taps = kh * kw;
  const int32_t sc = view->sc, sh = view->sh, sw = view->sw;
  const int32_t dy = p[NPUKIT_S8_W_DILATION_H] * sh, dx = p[NPUKIT_S8_W_DILATION_W] * sw;
  const int32_t step_y = p[NPUKIT_S8_W_STRIDE_H] * sh, step_x = p[NPUKIT_S8_W_STRIDE_W] * sw;
  if (channels < 1 || oh < 1 || ow < 1 || kh < 1 || kw < 1 || taps > MAX_TAPS) return 0;
  const int32_t m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1, in_c = p[NPUKIT_S8_W_IN_C];
  if ((m != 1 && m != 2 && m != 4) || in_c * m != channels) return 0;
  if ((in_c > 1 && sc != 1) || dy < 0 || dx < 0 || step_y < 0 || step_x < 0) return 0;
  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  if (channels > 1 && (o.sc != 1 || (o.mode == NPUKIT_S8_OUT_ADD && o.add.res_sc != 1))) return 0;

  const int8_t* in = view->in;
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const int32_t groups = (taps + 3) / 4;
  int32_t toff[MAX_TAPS];
  int32_t reach = 0;  // the last tap's offset
  for (int32_t t = 0; t < 4 * groups; ++t) {
    toff[t] = t < taps ? t / kw * dy + t % kw * dx : 0;
    if (toff[t] > reach) reach = toff[t];
  }
  taps_t tp;
  tp.toff = toff, tp.groups = groups, tp.m = m;
#if NPUKIT_S8_X86 == 512
  tp.pick = 0, tp.mask_hi = 0, tp.index = _mm512_setzero_si512();
#endif
#if NPUKIT_S8_X86 == 256
  tp.end = in + (oh - 1) * step_y + (ow - 1) * step_x + reach + in_c;
#else
  (void)reach;
#endif

  const npk_out_t vo = npk_out(&o);
  const npk_add_t add = npk_add(&vo);
  npl_stage_t stage;
  npl_stage(&stage, &o, &vo, &add);
  const int32_t form = npl_form(&stage);
#if NPUKIT_S8_X86 == 512
  if (packed_pixels(p, view, &o, &vo, &add, toff, groups, in, weights, step_x, step_y)) return 1;
#endif
  const int32_t* bias = o.bias;
  for (int32_t c0 = 0; c0 < channels; c0 += NPUKIT_S8_DW_BLOCK) {
    const int32_t n = channels - c0 < NPUKIT_S8_DW_BLOCK ? channels - c0 : NPUKIT_S8_DW_BLOCK;
    tp.n = n;
#if NPUKIT_S8_X86 == 512
    tp.mask = n / m == 64 ? ~(__mmask64)0 : (((__mmask64)1 << n / m) - 1);
#endif
    // The accumulators' starts in the quarters' lane order (channel 16L + 4k + i at lane 4L + i of k).
    int32_t starts[NPUKIT_S8_DW_BLOCK] __attribute__((aligned(64)));
    for (int32_t k = 0; k < 4; ++k) {
      for (int32_t lane = 0; lane < 16; ++lane) {
        const int32_t c = c0 + lane / 4 * 16 + 4 * k + lane % 4;
        starts[16 * k + lane] = c < channels ? npk_fold(bias[c], stage.in_zp, stage.weight_sum[c]) : 0;
      }
    }
    npl_channels_t ch[OUT_VECTORS];
    int32_t live = 0;  // output vectors with channels
    for (int32_t v = 0; v < OUT_VECTORS && v * NPK_LANES < n; ++v, ++live) {
      const int32_t left = n - v * NPK_LANES;
      npl_channels(&stage, c0 + v * NPK_LANES, left < NPK_LANES ? left : NPK_LANES, &ch[v]);
    }
    const int8_t* block_weights = weights + c0 / NPUKIT_S8_DW_BLOCK * groups * 256;
    for (int32_t h = 0; h < HALVES && 32 * h < n; ++h) {
      // AVX2: half h is channels 32h .. 32h + 31, the weights' bytes 32h .. 32h + 31 of each 64.
      npk_v start[4];
      for (int32_t k = 0; k < 4; ++k) start[k] = npk_load_vector(starts + 16 * k + 8 * h);
      const int32_t half_live = live - 4 * h < 4 ? live - 4 * h : 4;
      const int32_t half_n = n - 32 * h < 4 * NPK_LANES ? n - 32 * h : 4 * NPK_LANES;
      block_rows(&tp, &stage, form, &ch[4 * h], half_live, half_n, in + (c0 + 32 * h) / m, block_weights + 32 * h, start,
                 oh, ow, step_y, step_x);
    }
  }
  return 1;
}

#else

// Built for a target without the x86 kernels: nothing here.
typedef int npukit_s8_depthwise_lanes_x86_unused;

#endif
