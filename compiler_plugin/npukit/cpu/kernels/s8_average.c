// A global average pool of another layer's int32 accumulators
// (NPUKIT_S8_AVERAGE). IREE fuses a convolution's output stage into the
// dispatch of the average pool after it, so each accumulator arrives
// unrequantized: it is given that layer's TFLite output stage (BIAS_AT,
// MULTIPLIER_AT, SHIFT_AT, OUT_ZP, ACT_MIN/MAX), in a residual network then
// TFLite's ADD with a third layer's requantized accumulators (OUT_ADD, the
// RES_* tables), and the int8 results of each channel are summed and divided
// as TFLite's AVERAGE_POOL_2D divides them. Input element (c, y, x) is int32
// number c * IN_SC + y * IN_SH + x * IN_SW from IN_OFFSET; the output is one
// int8 per channel at OUT_OFFSET + c * OUT_SC.
#include "requantize.h"
#include "s8_layer.h"
#include "s8_output.h"

void npukit_s8_average(const int32_t* p, size_t input, size_t output, size_t residual);

// One layer's output stage for one channel, from the block's tables.
typedef struct {
  int32_t bias, multiplier, shift;
  int32_t e, half;  // the clamped form's right shift and 2^(e - 1), or e = 0 where it does not apply
  int32_t zp, act_min, act_max;
} stage_t;

static stage_t stage(const int32_t* p, int32_t bias_at, int32_t multiplier_at, int32_t shift_at, int32_t c,
                     int32_t zp, int32_t act_min, int32_t act_max) {
  stage_t s = {p[bias_at + c], p[multiplier_at + c], p[shift_at + c], 0, 0, zp, act_min, act_max};
  const int32_t e = -s.shift;
  if (e >= 1 && e <= NPUKIT_S8_CLAMPED_MAX_SHIFT && (s.multiplier >= (1 << 30) || s.multiplier == 0)) {
    s.e = e, s.half = 1 << (e - 1);
  }
  return s;
}

// How a stage computes: TFLite's general arithmetic (0), the clamped form
// with the activation clamp (1), or the clamped form over all of int8 (2:
// one SSAT on DSP cores).
static int32_t stage_form(const stage_t* s) {
  return !s->e ? 0 : npukit_s8_full_range(s->act_min, s->act_max) ? 2 : 1;
}

// The int8 value of accumulator `acc` after the stage; `form` is
// stage_form's, a constant where the callers specialise on it.
static inline __attribute__((always_inline)) int32_t stage_int8(const stage_t* s, int32_t acc, int32_t form) {
  if (form == 0) {
    const int32_t a = (int32_t)((uint32_t)acc + (uint32_t)s->bias);
    return mynpu_clamp(mynpu_sat32((int64_t)mynpu_requantize(a, s->multiplier, s->shift) + s->zp), s->act_min,
                       s->act_max);
  }
  const int32_t v = npukit_s8_requantize_clamped(acc, s->bias, s->multiplier, s->e, s->half);
  return form == 2 ? npukit_s8_narrow(v + s->zp) : npukit_s8_clamp(v, s->act_min - s->zp, s->act_max - s->zp) + s->zp;
}

// TFLite's average pool division: ties away from zero, then the clamp.
static int32_t divide(int32_t sum, int32_t count, int32_t act_min, int32_t act_max) {
  const int32_t half = count / 2;
  return mynpu_clamp((sum > 0 ? sum + half : sum - half) / count, act_min, act_max);
}

static inline __attribute__((always_inline)) int32_t row_sum_as(const stage_t* s, const int32_t* acc, int32_t n,
                                                                 int32_t step, int32_t form) {
  const stage_t k = *s;
  int32_t sum = 0;
  for (const int32_t* end = acc + n * step; acc != end; acc += step) sum += stage_int8(&k, *acc, form);
  return sum;
}

// The sum of the int8 values of `n` accumulators at `acc`, every `step` int32.
static __attribute__((noinline)) int32_t row_sum(const stage_t* s, const int32_t* acc, int32_t n, int32_t step) {
  switch (stage_form(s)) {
    case 2:
      return row_sum_as(s, acc, n, step, 2);
    case 1:
      return row_sum_as(s, acc, n, step, 1);
    default:
      return row_sum_as(s, acc, n, step, 0);
  }
}

static inline __attribute__((always_inline)) void operands_as(const stage_t* s, const int32_t* acc, int32_t n,
                                                              int32_t step, const int32_t* table, int32_t* to,
                                                              int32_t form) {
  const stage_t k = *s;
  for (int32_t i = 0; i < n; ++i, acc += step) to[i] = table[stage_int8(&k, *acc, form) + 128];
}

// An ADD operand's scaled value for each of `n` accumulators: `table` is
// one half of npukit_s8_add_table's (by int8 value + 128).
static __attribute__((noinline)) void operands(const stage_t* s, const int32_t* acc, int32_t n, int32_t step,
                                               const int32_t* table, int32_t* to) {
  switch (stage_form(s)) {
    case 2:
      operands_as(s, acc, n, step, table, to, 2);
      break;
    case 1:
      operands_as(s, acc, n, step, table, to, 1);
      break;
    default:
      operands_as(s, acc, n, step, table, to, 0);
  }
}

// The sum of the ADD's int8 results from its operands' scaled values.
static __attribute__((noinline)) int32_t add_sum(const npukit_s8_add_t* k, const int32_t* a, const int32_t* b,
                                                 int32_t n) {
  int32_t sum = 0;
  if (npukit_s8_add_is_small(k) && k->out_shift < 0 && npukit_s8_full_range(k->act_min, k->act_max)) {
    const int32_t mult = k->out_mult, e = -k->out_shift, half = 1 << (e - 1), zp = k->out_zp;
    for (int32_t i = 0; i < n; ++i) {
      sum += npukit_s8_narrow(npukit_s8_rdbpot_half(npukit_s8_rdhm_doubled((a[i] + b[i]) * 2, mult), e, half) + zp);
    }
  } else if (npukit_s8_add_is_small(k)) {
    const int32_t mult = k->out_mult, e = -k->out_shift, half = e ? 1 << (e - 1) : 0, zp = k->out_zp;
    const int32_t lo = k->act_min, hi = k->act_max;
    for (int32_t i = 0; i < n; ++i) sum += npukit_s8_add_result_small(a[i] + b[i], mult, e, half, zp, lo, hi);
  } else {
    for (int32_t i = 0; i < n; ++i) sum += npukit_s8_add_result(k, a[i], b[i]);
  }
  return sum;
}

// Pixels per pass of the ADD (its operands live on the stack).
#define CHUNK 64

void npukit_s8_average(const int32_t* p, size_t input, size_t output, size_t residual) {
  const int32_t* in = (const int32_t*)(input + (size_t)p[NPUKIT_S8_W_IN_OFFSET]);
  int8_t* out = (int8_t*)(output + (size_t)p[NPUKIT_S8_W_OUT_OFFSET]);
  const int32_t channels = p[NPUKIT_S8_W_IN_C], rows = p[NPUKIT_S8_W_IN_H], cols = p[NPUKIT_S8_W_IN_W];
  const int32_t sc = p[NPUKIT_S8_W_IN_SC], sh = p[NPUKIT_S8_W_IN_SH], sw = p[NPUKIT_S8_W_IN_SW];
  const int32_t count = p[NPUKIT_S8_W_AVERAGE_COUNT];
  const int32_t lo = p[NPUKIT_S8_W_AVERAGE_ACT_MIN], hi = p[NPUKIT_S8_W_AVERAGE_ACT_MAX];
  const int32_t out_sc = p[NPUKIT_S8_W_OUT_SC];
  const int32_t add = p[NPUKIT_S8_W_OUTPUT] == NPUKIT_S8_OUT_ADD;
  const npukit_s8_add_t k = npukit_s8_add_words(p);
  npukit_s8_add_table_t table;
  if (add) npukit_s8_add_table(&k, &table);
  const int32_t* res = (const int32_t*)(residual + (size_t)p[NPUKIT_S8_W_RES_OFFSET]);
  const int32_t rc = p[NPUKIT_S8_W_RES_SC], rh = p[NPUKIT_S8_W_RES_SH], rw = p[NPUKIT_S8_W_RES_SW];
  int32_t scaled_a[CHUNK], scaled_b[CHUNK];
  for (int32_t c = 0; c < channels; ++c) {
    // OUT_ZP is also the ADD's zero point of this operand (ADD_CONV_ZP).
    const stage_t a = stage(p, p[NPUKIT_S8_W_BIAS_AT], p[NPUKIT_S8_W_MULTIPLIER_AT], p[NPUKIT_S8_W_SHIFT_AT], c,
                            p[NPUKIT_S8_W_OUT_ZP], p[NPUKIT_S8_W_ACT_MIN], p[NPUKIT_S8_W_ACT_MAX]);
    int32_t sum = 0;
    if (!add) {
      for (int32_t y = 0; y < rows; ++y) sum += row_sum(&a, in + c * sc + y * sh, cols, sw);
    } else {
      const stage_t b = stage(p, p[NPUKIT_S8_W_RES_BIAS_AT], p[NPUKIT_S8_W_RES_MULTIPLIER_AT],
                              p[NPUKIT_S8_W_RES_SHIFT_AT], c, k.res_zp, p[NPUKIT_S8_W_RES_ACT_MIN],
                              p[NPUKIT_S8_W_RES_ACT_MAX]);
      for (int32_t y = 0; y < rows; ++y) {
        for (int32_t x = 0; x < cols; x += CHUNK) {
          const int32_t n = cols - x < CHUNK ? cols - x : CHUNK;
          operands(&a, in + c * sc + y * sh + x * sw, n, sw, table.conv, scaled_a);
          operands(&b, res + c * rc + y * rh + x * rw, n, rw, table.res, scaled_b);
          sum += add_sum(&k, scaled_a, scaled_b, n);
        }
      }
    }
    out[c * out_sc] = (int8_t)divide(sum, count, lo, hi);
  }
}
