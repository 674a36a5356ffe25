// mynpu command streams: validation, bit-exact execution and the cycle
// model of docs/mynpu-isa.md.

#include "npukit/mynpu/stream.h"

#include <string.h>

#include "requantize.h"

#define MAX_LAYER_DMA_WRITES 256

typedef struct {
  const npukit_mynpu_stream_t* s;
  uint32_t reg[NPUKIT_MYNPU_REGISTER_COUNT];
  size_t index;  // the command being run
  uint8_t opcode;  // its opcode
  uint32_t instruction_count;
  npukit_mynpu_counters_t* total;
  npukit_mynpu_counters_t layer;
  uint32_t layer_index;
  int layer_double_buffered;
  uint64_t sram_writes[MAX_LAYER_DMA_WRITES][2];  // [start, end) written by DMA in this layer
  uint32_t sram_write_count;
} machine_t;

static iree_status_t reject(const machine_t* m, const char* what) {
  return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu stream: command %zu: %s", m->index, what);
}

static int32_t sreg(const machine_t* m, int r) { return (int32_t)m->reg[r]; }

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Range checks -------------------------------------------------------------

static iree_status_t check_dims(const machine_t* m, int first, const char* what) {
  for (int r = first; r < first + 3; ++r) {
    if (m->reg[r] < 1 || m->reg[r] > 65535) return reject(m, what);
  }
  return iree_ok_status();
}

static iree_status_t check_signed8(const machine_t* m, int r, const char* what) {
  int32_t v = sreg(m, r);
  return v < -128 || v > 127 ? reject(m, what) : iree_ok_status();
}

static iree_status_t check_sram(machine_t* m, uint64_t address, uint64_t bytes, int written, const char* what) {
  if (bytes == 0 || address + bytes > m->s->config->sram_bytes) return reject(m, what);
  uint64_t end = address + bytes;
  if (m->s->sram && end > m->s->sram_length) return reject(m, "the simulator's SRAM is smaller than the stream needs");
  if (end > m->total->sram_extent) m->total->sram_extent = (uint32_t)end;
  if (written && end > m->total->sram_high_water) m->total->sram_high_water = (uint32_t)end;
  return iree_ok_status();
}

// Kernel size, stride and padding of convolutions and pools.
static int pair_in_range(const machine_t* m, int first, uint32_t lo, uint32_t hi) {
  return m->reg[first] >= lo && m->reg[first] <= hi && m->reg[first + 1] >= lo && m->reg[first + 1] <= hi;
}

static iree_status_t check_window(const machine_t* m) {
  if (!pair_in_range(m, NPUKIT_MYNPU_KERNEL_H, 1, 255)) return reject(m, "kernel size out of 1..255");
  if (!pair_in_range(m, NPUKIT_MYNPU_STRIDE_H, 1, 255)) return reject(m, "stride out of 1..255");
  if (!pair_in_range(m, NPUKIT_MYNPU_PAD_TOP, 0, 255)) return reject(m, "padding out of 0..255");
  return iree_ok_status();
}

static iree_status_t check_activation(const machine_t* m) {
  IREE_RETURN_IF_ERROR(check_signed8(m, NPUKIT_MYNPU_OFM_ZP, "OFM_ZP out of -128..127"));
  IREE_RETURN_IF_ERROR(check_signed8(m, NPUKIT_MYNPU_ACT_MIN, "ACT_MIN out of -128..127"));
  IREE_RETURN_IF_ERROR(check_signed8(m, NPUKIT_MYNPU_ACT_MAX, "ACT_MAX out of -128..127"));
  if (sreg(m, NPUKIT_MYNPU_ACT_MIN) > sreg(m, NPUKIT_MYNPU_ACT_MAX)) return reject(m, "ACT_MIN above ACT_MAX");
  return iree_ok_status();
}

static iree_status_t check_multiplier(const machine_t* m, int mult, int shift) {
  if (sreg(m, mult) < 0) return reject(m, "negative multiplier");
  if (sreg(m, shift) < -31 || sreg(m, shift) > 30) return reject(m, "shift out of -31..30");
  return iree_ok_status();
}

static int overlaps(uint64_t a, uint64_t a_bytes, uint64_t b, uint64_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

static uint64_t elements(const machine_t* m, int first) {
  return (uint64_t)m->reg[first] * m->reg[first + 1] * m->reg[first + 2];
}

// Counting -----------------------------------------------------------------

// Adds one instruction's cost to its layer (and records it when asked).
static void count(machine_t* m, uint64_t macs, uint64_t compute_cycles, uint64_t dma_bytes, uint64_t dma_cycles) {
  const npukit_mynpu_stream_t* s = m->s;
  if (s->instructions && m->instruction_count < s->instruction_capacity) {
    npukit_mynpu_instruction_cost_t* record = &s->instructions[m->instruction_count];
    record->command_index = (uint32_t)m->index;
    record->layer = m->layer_index;
    record->opcode = m->opcode;
    record->reserved = 0;
    record->macs = macs;
    record->compute_cycles = compute_cycles;
    record->dma_bytes = dma_bytes;
    record->dma_cycles = dma_cycles;
  }
  m->instruction_count++;
  m->layer.macs += macs;
  m->layer.compute_cycles += compute_cycles;
  m->layer.dma_bytes += dma_bytes;
  m->layer.dma_cycles += dma_cycles;
  m->layer.instructions++;
}

static void count_compute(machine_t* m, uint64_t macs, uint64_t cycles) {
  count(m, macs, cycles + NPUKIT_MYNPU_OP_OVERHEAD_CYCLES, 0, 0);
}

// Cycles of |channels| x |pixels| outputs on a grid of PEs: the P PEs form
// c x (P / c) output channels by output pixels for the divisor c of P that
// finishes soonest (ties: more channels).
static uint64_t grid_steps(uint64_t channels, uint64_t pixels, uint32_t pes) {
  uint64_t best = UINT64_MAX;
  for (uint64_t d = 1; d * d <= pes; ++d) {
    if (pes % d) continue;
    uint64_t pair[2] = {pes / d, d};  // larger channel count first
    for (int i = 0; i < 2; ++i) {
      uint64_t steps = ceil_div(channels, pair[i]) * ceil_div(pixels, pes / pair[i]);
      if (steps < best) best = steps;
    }
  }
  return best;
}

// Steps of a windowed or matmul instruction producing |channels| channels of
// |pixels| pixels, each output needing |taps| MACs.
static uint64_t output_steps(const machine_t* m, uint64_t channels, uint64_t pixels, uint64_t taps) {
  const npukit_mynpu_config_t* c = m->s->config;
  if (c->parallelism == NPUKIT_MYNPU_PARALLEL_OUTPUT_PIXELS) return taps * grid_steps(channels, pixels, c->pes);
  return pixels * taps * ceil_div(channels, c->pes);
}

static void close_layer(machine_t* m) {
  npukit_mynpu_counters_t* l = &m->layer;
  l->cycles = m->layer_double_buffered ? (l->compute_cycles > l->dma_cycles ? l->compute_cycles : l->dma_cycles)
                                       : l->compute_cycles + l->dma_cycles;
  l->layers = 1;
  l->sram_high_water = m->total->sram_high_water;
  l->sram_extent = m->total->sram_extent;
  npukit_mynpu_counters_accumulate(m->total, l);
  if (m->s->layers && m->layer_index < m->s->layer_capacity) m->s->layers[m->layer_index] = *l;
  memset(l, 0, sizeof(*l));
  m->sram_write_count = 0;
}

// Instructions -------------------------------------------------------------

typedef enum { CONV, DEPTHWISE, MATMUL } contraction_t;

// Position of element (y, x, c) in an h x w x c tensor of the given layout.
static uint64_t element_at(uint32_t layout, uint64_t h, uint64_t w, uint64_t c, uint64_t y, uint64_t x,
                           uint64_t ch) {
  return layout == NPUKIT_MYNPU_LAYOUT_CHW ? (ch * h + y) * w + x : (y * w + x) * c + ch;
}

static iree_status_t check_layout(const machine_t* m) {
  return m->reg[NPUKIT_MYNPU_LAYOUT] > NPUKIT_MYNPU_LAYOUT_CHW ? reject(m, "LAYOUT is not 0 (HWC) or 1 (CHW)")
                                                               : iree_ok_status();
}

static iree_status_t contraction(machine_t* m, contraction_t kind, int relu) {
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_IFM_H, "IFM shape out of 1..65535"));
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_OFM_H, "OFM shape out of 1..65535"));
  IREE_RETURN_IF_ERROR(check_signed8(m, NPUKIT_MYNPU_IFM_ZP, "IFM_ZP out of -128..127"));
  const uint32_t* r = m->reg;
  uint64_t ih = r[NPUKIT_MYNPU_IFM_H], iw = r[NPUKIT_MYNPU_IFM_W], ic = r[NPUKIT_MYNPU_IFM_C];
  uint64_t oh = r[NPUKIT_MYNPU_OFM_H], ow = r[NPUKIT_MYNPU_OFM_W], oc = r[NPUKIT_MYNPU_OFM_C];
  uint64_t kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0, dh = 1, dw = 1;
  if (kind != MATMUL) {
    kh = r[NPUKIT_MYNPU_KERNEL_H], kw = r[NPUKIT_MYNPU_KERNEL_W], sh = r[NPUKIT_MYNPU_STRIDE_H];
    sw = r[NPUKIT_MYNPU_STRIDE_W], pt = r[NPUKIT_MYNPU_PAD_TOP], pl = r[NPUKIT_MYNPU_PAD_LEFT];
    dh = r[NPUKIT_MYNPU_DILATION_H], dw = r[NPUKIT_MYNPU_DILATION_W];
    IREE_RETURN_IF_ERROR(check_window(m));
    IREE_RETURN_IF_ERROR(check_layout(m));
    if (!pair_in_range(m, NPUKIT_MYNPU_DILATION_H, 1, 255)) return reject(m, "dilation out of 1..255");
    if (kind == DEPTHWISE && ic != oc) return reject(m, "depthwise IFM_C differs from OFM_C");
  } else if (oh * ow != ih * iw) {
    return reject(m, "matmul OFM rows differ from IFM rows");
  }
  int out32 = r[NPUKIT_MYNPU_OUT_INT32] != 0;
  if (r[NPUKIT_MYNPU_OUT_INT32] > 1) return reject(m, "OUT_INT32 is not 0 or 1");
  if (!out32) IREE_RETURN_IF_ERROR(check_activation(m));
  uint64_t taps = kind == DEPTHWISE ? kh * kw : kh * kw * ic;  // weights per output channel
  uint64_t out_elems = oh * ow * oc;
  IREE_RETURN_IF_ERROR(check_sram(m, r[NPUKIT_MYNPU_IFM_ADDR], ih * iw * ic, 0, "IFM outside the SRAM"));
  IREE_RETURN_IF_ERROR(check_sram(m, r[NPUKIT_MYNPU_WEIGHT_ADDR], taps * oc, 0, "weights outside the SRAM"));
  if (r[NPUKIT_MYNPU_BIAS_ADDR] % 4 || r[NPUKIT_MYNPU_QUANT_ADDR] % 4) return reject(m, "bias or quant unaligned");
  IREE_RETURN_IF_ERROR(check_sram(m, r[NPUKIT_MYNPU_BIAS_ADDR], 4 * oc, 0, "biases outside the SRAM"));
  if (!out32) IREE_RETURN_IF_ERROR(check_sram(m, r[NPUKIT_MYNPU_QUANT_ADDR], 8 * oc, 0, "quant table outside the SRAM"));
  uint64_t ofm_at = r[NPUKIT_MYNPU_OFM_ADDR], ofm_bytes = out_elems * (out32 ? 4 : 1);
  IREE_RETURN_IF_ERROR(check_sram(m, ofm_at, ofm_bytes, 1, "OFM outside the SRAM"));
  if (overlaps(ofm_at, ofm_bytes, r[NPUKIT_MYNPU_IFM_ADDR], ih * iw * ic) ||
      overlaps(ofm_at, ofm_bytes, r[NPUKIT_MYNPU_WEIGHT_ADDR], taps * oc) ||
      overlaps(ofm_at, ofm_bytes, r[NPUKIT_MYNPU_BIAS_ADDR], 4 * oc) ||
      (!out32 && overlaps(ofm_at, ofm_bytes, r[NPUKIT_MYNPU_QUANT_ADDR], 8 * oc))) {
    return reject(m, "the OFM overlaps an input");
  }

  const npukit_mynpu_config_t* c = m->s->config;
  uint64_t macs = out_elems * taps;
  uint64_t cycles;
  if (kind != DEPTHWISE && c->parallelism == NPUKIT_MYNPU_PARALLEL_INPUT) {
    cycles = out_elems * kh * kw * ceil_div(ic, c->pes);
  } else {
    // Output channels (a depthwise convolution's under input parallelism too),
    // or the grid of output channels x output pixels.
    cycles = output_steps(m, oc, oh * ow, taps);
  }
  count_compute(m, macs, cycles);
  if (!m->s->sram) return iree_ok_status();

  // Execute.
  uint8_t* sram = m->s->sram;
  const int8_t* ifm = (const int8_t*)(sram + r[NPUKIT_MYNPU_IFM_ADDR]);
  const int8_t* w = (const int8_t*)(sram + r[NPUKIT_MYNPU_WEIGHT_ADDR]);
  const uint8_t* bias = sram + r[NPUKIT_MYNPU_BIAS_ADDR];
  const uint8_t* quant = sram + r[NPUKIT_MYNPU_QUANT_ADDR];
  uint8_t* ofm = sram + r[NPUKIT_MYNPU_OFM_ADDR];
  int32_t izp = sreg(m, NPUKIT_MYNPU_IFM_ZP), ozp = sreg(m, NPUKIT_MYNPU_OFM_ZP);
  int32_t lo = sreg(m, NPUKIT_MYNPU_ACT_MIN), hi = sreg(m, NPUKIT_MYNPU_ACT_MAX);
  uint32_t layout = kind == MATMUL ? NPUKIT_MYNPU_LAYOUT_HWC : r[NPUKIT_MYNPU_LAYOUT];
  if (relu && ozp > lo) lo = ozp;
  for (uint64_t y = 0; y < oh; ++y) {
    for (uint64_t x = 0; x < ow; ++x) {
      for (uint64_t o = 0; o < oc; ++o) {
        int32_t b;
        memcpy(&b, bias + 4 * o, 4);
        uint32_t acc = (uint32_t)b;  // wraps, as int32 hardware accumulators do
        if (kind == MATMUL) {
          const int8_t* row = ifm + (y * ow + x) * ic;
          for (uint64_t k = 0; k < ic; ++k) acc += (uint32_t)((row[k] - izp) * w[o * ic + k]);
        } else {
          for (uint64_t ky = 0; ky < kh; ++ky) {
            int64_t iy = (int64_t)(y * sh + ky * dh) - (int64_t)pt;
            if (iy < 0 || iy >= (int64_t)ih) continue;
            for (uint64_t kx = 0; kx < kw; ++kx) {
              int64_t ix = (int64_t)(x * sw + kx * dw) - (int64_t)pl;
              if (ix < 0 || ix >= (int64_t)iw) continue;
              if (kind == DEPTHWISE) {
                int32_t v = ifm[element_at(layout, ih, iw, ic, (uint64_t)iy, (uint64_t)ix, o)];
                acc += (uint32_t)((v - izp) * w[(ky * kw + kx) * oc + o]);
              } else {
                const int8_t* wk = w + ((o * kh + ky) * kw + kx) * ic;
                for (uint64_t k = 0; k < ic; ++k) {
                  int32_t v = ifm[element_at(layout, ih, iw, ic, (uint64_t)iy, (uint64_t)ix, k)];
                  acc += (uint32_t)((v - izp) * wk[k]);
                }
              }
            }
          }
        }
        uint64_t at = element_at(layout, oh, ow, oc, y, x, o);
        if (out32) {
          memcpy(ofm + 4 * at, &acc, 4);
        } else {
          int32_t v;
          if (kind == MATMUL) {
            double scale;
            memcpy(&scale, quant + 8 * o, 8);
            v = mynpu_scale_once((int32_t)acc, scale);
          } else {
            int32_t q[2];
            memcpy(q, quant + 8 * o, 8);
            v = mynpu_requantize((int32_t)acc, q[0], q[1]);
          }
          ofm[at] = (uint8_t)(int8_t)mynpu_clamp(mynpu_sat32((int64_t)v + ozp), lo, hi);
        }
      }
    }
  }
  return iree_ok_status();
}

static iree_status_t pool(machine_t* m, uint32_t variant) {
  if (variant > 2) return reject(m, "OP_POOL variant is not 0 (max), 1 (average) or 2 (mean)");
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_IFM_H, "IFM shape out of 1..65535"));
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_OFM_H, "OFM shape out of 1..65535"));
  IREE_RETURN_IF_ERROR(check_activation(m));
  const uint32_t* r = m->reg;
  uint64_t ih = r[NPUKIT_MYNPU_IFM_H], iw = r[NPUKIT_MYNPU_IFM_W], c = r[NPUKIT_MYNPU_IFM_C];
  uint64_t oh = r[NPUKIT_MYNPU_OFM_H], ow = r[NPUKIT_MYNPU_OFM_W];
  uint64_t kh = r[NPUKIT_MYNPU_KERNEL_H], kw = r[NPUKIT_MYNPU_KERNEL_W];
  uint64_t sh = r[NPUKIT_MYNPU_STRIDE_H], sw = r[NPUKIT_MYNPU_STRIDE_W];
  uint64_t pt = r[NPUKIT_MYNPU_PAD_TOP], pl = r[NPUKIT_MYNPU_PAD_LEFT];
  if (r[NPUKIT_MYNPU_OFM_C] != c) return reject(m, "pool OFM_C differs from IFM_C");
  if (variant == 2) {
    IREE_RETURN_IF_ERROR(check_signed8(m, NPUKIT_MYNPU_IFM_ZP, "IFM_ZP out of -128..127"));
    IREE_RETURN_IF_ERROR(check_multiplier(m, NPUKIT_MYNPU_OUT_MULT, NPUKIT_MYNPU_OUT_SHIFT));
  }
  IREE_RETURN_IF_ERROR(check_window(m));
  IREE_RETURN_IF_ERROR(check_layout(m));
  uint32_t layout = r[NPUKIT_MYNPU_LAYOUT];
  IREE_RETURN_IF_ERROR(check_sram(m, r[NPUKIT_MYNPU_IFM_ADDR], ih * iw * c, 0, "IFM outside the SRAM"));
  IREE_RETURN_IF_ERROR(check_sram(m, r[NPUKIT_MYNPU_OFM_ADDR], oh * ow * c, 1, "OFM outside the SRAM"));
  if (overlaps(r[NPUKIT_MYNPU_OFM_ADDR], oh * ow * c, r[NPUKIT_MYNPU_IFM_ADDR], ih * iw * c)) {
    return reject(m, "the OFM overlaps the IFM");
  }
  count_compute(m, 0, output_steps(m, c, oh * ow, kh * kw));
  if (!m->s->sram) return iree_ok_status();
  const int8_t* ifm = (const int8_t*)(m->s->sram + r[NPUKIT_MYNPU_IFM_ADDR]);
  int8_t* ofm = (int8_t*)(m->s->sram + r[NPUKIT_MYNPU_OFM_ADDR]);
  int32_t lo = sreg(m, NPUKIT_MYNPU_ACT_MIN), hi = sreg(m, NPUKIT_MYNPU_ACT_MAX);
  int32_t izp = sreg(m, NPUKIT_MYNPU_IFM_ZP), ozp = sreg(m, NPUKIT_MYNPU_OFM_ZP);
  for (uint64_t y = 0; y < oh; ++y) {
    for (uint64_t x = 0; x < ow; ++x) {
      for (uint64_t ch = 0; ch < c; ++ch) {
        int32_t best = -128, sum = 0, count = 0;  // |sum| <= 255 * 255 * 255 for a mean
        for (uint64_t ky = 0; ky < kh; ++ky) {
          int64_t iy = (int64_t)(y * sh + ky) - (int64_t)pt;
          if (iy < 0 || iy >= (int64_t)ih) continue;
          for (uint64_t kx = 0; kx < kw; ++kx) {
            int64_t ix = (int64_t)(x * sw + kx) - (int64_t)pl;
            if (ix < 0 || ix >= (int64_t)iw) continue;
            int32_t v = ifm[element_at(layout, ih, iw, c, (uint64_t)iy, (uint64_t)ix, ch)];
            best = v > best ? v : best;
            sum += v;
            count++;
          }
        }
        int32_t out;
        if (count == 0) {
          out = 0;  // a window entirely in the padding
        } else if (variant == 0) {
          out = best;
        } else if (variant == 2) {
          int32_t centred = sum - count * izp;
          out = mynpu_sat32((int64_t)mynpu_requantize(centred, sreg(m, NPUKIT_MYNPU_OUT_MULT),
                                                      sreg(m, NPUKIT_MYNPU_OUT_SHIFT)) + ozp);
        } else {
          out = sum >= 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
        }
        ofm[element_at(layout, oh, ow, c, y, x, ch)] = (int8_t)mynpu_clamp(out, lo, hi);
      }
    }
  }
  return iree_ok_status();
}

static iree_status_t elementwise(machine_t* m, uint8_t opcode) {
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_IFM_H, "IFM shape out of 1..65535"));
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_OFM_H, "OFM shape out of 1..65535"));
  uint64_t n = elements(m, NPUKIT_MYNPU_IFM_H);
  if (elements(m, NPUKIT_MYNPU_OFM_H) != n) return reject(m, "elementwise OFM size differs from the IFM's");
  int wide = opcode == NPUKIT_MYNPU_OP_E32_ADD;
  int binary = opcode == NPUKIT_MYNPU_OP_C_MIN || opcode == NPUKIT_MYNPU_OP_C_MAX || opcode == NPUKIT_MYNPU_OP_E_ADD ||
               wide;
  uint64_t bytes = n * (wide ? 4 : 1);
  const uint32_t* r = m->reg;
  if (wide && (r[NPUKIT_MYNPU_IFM_ADDR] % 4 || r[NPUKIT_MYNPU_IFM2_ADDR] % 4 || r[NPUKIT_MYNPU_OFM_ADDR] % 4)) {
    return reject(m, "OP_E32_ADD operands unaligned");
  }
  if (!wide) {
    IREE_RETURN_IF_ERROR(check_signed8(m, NPUKIT_MYNPU_IFM_ZP, "IFM_ZP out of -128..127"));
    IREE_RETURN_IF_ERROR(check_activation(m));
  }
  if (opcode == NPUKIT_MYNPU_OP_E_ADD) {
    IREE_RETURN_IF_ERROR(check_signed8(m, NPUKIT_MYNPU_IFM2_ZP, "IFM2_ZP out of -128..127"));
    IREE_RETURN_IF_ERROR(check_multiplier(m, NPUKIT_MYNPU_IFM_MULT, NPUKIT_MYNPU_IFM_SHIFT));
    IREE_RETURN_IF_ERROR(check_multiplier(m, NPUKIT_MYNPU_IFM2_MULT, NPUKIT_MYNPU_IFM2_SHIFT));
    IREE_RETURN_IF_ERROR(check_multiplier(m, NPUKIT_MYNPU_OUT_MULT, NPUKIT_MYNPU_OUT_SHIFT));
    if (r[NPUKIT_MYNPU_LEFT_SHIFT] > 20) return reject(m, "LEFT_SHIFT out of 0..20");
  }
  if (opcode == NPUKIT_MYNPU_OP_ACT_LRELU) {
    IREE_RETURN_IF_ERROR(check_multiplier(m, NPUKIT_MYNPU_IFM_MULT, NPUKIT_MYNPU_IFM_SHIFT));
  }
  IREE_RETURN_IF_ERROR(check_sram(m, r[NPUKIT_MYNPU_IFM_ADDR], bytes, 0, "IFM outside the SRAM"));
  if (binary) IREE_RETURN_IF_ERROR(check_sram(m, r[NPUKIT_MYNPU_IFM2_ADDR], bytes, 0, "IFM2 outside the SRAM"));
  IREE_RETURN_IF_ERROR(check_sram(m, r[NPUKIT_MYNPU_OFM_ADDR], bytes, 1, "OFM outside the SRAM"));
  count_compute(m, 0, ceil_div(n, m->s->config->pes));
  if (!m->s->sram) return iree_ok_status();

  uint8_t* sram = m->s->sram;
  const uint8_t* a = sram + r[NPUKIT_MYNPU_IFM_ADDR];
  const uint8_t* b = sram + r[NPUKIT_MYNPU_IFM2_ADDR];
  uint8_t* out = sram + r[NPUKIT_MYNPU_OFM_ADDR];
  int32_t izp = sreg(m, NPUKIT_MYNPU_IFM_ZP), ozp = sreg(m, NPUKIT_MYNPU_OFM_ZP);
  int32_t lo = sreg(m, NPUKIT_MYNPU_ACT_MIN), hi = sreg(m, NPUKIT_MYNPU_ACT_MAX);
  for (uint64_t i = 0; i < n; ++i) {
    if (wide) {
      int32_t x, y;
      memcpy(&x, a + 4 * i, 4);
      memcpy(&y, b + 4 * i, 4);
      int32_t s = mynpu_sat32((int64_t)x + y);
      memcpy(out + 4 * i, &s, 4);
      continue;
    }
    int32_t x = (int8_t)a[i], v;
    switch (opcode) {
      case NPUKIT_MYNPU_OP_ACT_RELU:
        v = x > izp ? x : izp;
        break;
      case NPUKIT_MYNPU_OP_ACT_LRELU: {
        int32_t d = x - izp;
        v = d >= 0 ? x
                   : mynpu_sat32((int64_t)izp + mynpu_requantize(d, sreg(m, NPUKIT_MYNPU_IFM_MULT),
                                                                 sreg(m, NPUKIT_MYNPU_IFM_SHIFT)));
        break;
      }
      case NPUKIT_MYNPU_OP_E_ABS: {
        int32_t d = x - izp;
        v = (d < 0 ? -d : d) + ozp;
        break;
      }
      case NPUKIT_MYNPU_OP_C_MIN:
        v = x < (int8_t)b[i] ? x : (int8_t)b[i];
        break;
      case NPUKIT_MYNPU_OP_C_MAX:
        v = x > (int8_t)b[i] ? x : (int8_t)b[i];
        break;
      default: {  // OP_E_ADD
        int shift = (int)r[NPUKIT_MYNPU_LEFT_SHIFT];
        int32_t xa = mynpu_requantize((x - izp) * (1 << shift), sreg(m, NPUKIT_MYNPU_IFM_MULT),
                                      sreg(m, NPUKIT_MYNPU_IFM_SHIFT));
        int32_t xb = mynpu_requantize(((int8_t)b[i] - sreg(m, NPUKIT_MYNPU_IFM2_ZP)) * (1 << shift),
                                      sreg(m, NPUKIT_MYNPU_IFM2_MULT), sreg(m, NPUKIT_MYNPU_IFM2_SHIFT));
        int32_t sum = mynpu_sat32((int64_t)xa + xb);
        v = mynpu_sat32((int64_t)mynpu_requantize(sum, sreg(m, NPUKIT_MYNPU_OUT_MULT), sreg(m, NPUKIT_MYNPU_OUT_SHIFT)) +
                        ozp);
        break;
      }
    }
    out[i] = (uint8_t)(int8_t)mynpu_clamp(v, lo, hi);
  }
  return iree_ok_status();
}

// OP_TABLE: y = table[x + 128] for each int8 x of the IFM, the 256-byte
// table at TABLE_ADDR. The IFM and OFM may be the same bytes (in place); the
// OFM must not overlap the table.
static iree_status_t table(machine_t* m) {
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_IFM_H, "IFM shape out of 1..65535"));
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_OFM_H, "OFM shape out of 1..65535"));
  uint64_t n = elements(m, NPUKIT_MYNPU_IFM_H);
  if (elements(m, NPUKIT_MYNPU_OFM_H) != n) return reject(m, "elementwise OFM size differs from the IFM's");
  const uint32_t* r = m->reg;
  uint64_t ifm_at = r[NPUKIT_MYNPU_IFM_ADDR], ofm_at = r[NPUKIT_MYNPU_OFM_ADDR], table_at = r[NPUKIT_MYNPU_TABLE_ADDR];
  IREE_RETURN_IF_ERROR(check_sram(m, table_at, NPUKIT_MYNPU_TABLE_BYTES, 0, "the table outside the SRAM"));
  IREE_RETURN_IF_ERROR(check_sram(m, ifm_at, n, 0, "IFM outside the SRAM"));
  IREE_RETURN_IF_ERROR(check_sram(m, ofm_at, n, 1, "OFM outside the SRAM"));
  if (overlaps(ofm_at, n, table_at, NPUKIT_MYNPU_TABLE_BYTES)) return reject(m, "the OFM overlaps the table");
  if (ofm_at != ifm_at && overlaps(ofm_at, n, ifm_at, n)) return reject(m, "the OFM overlaps the IFM (not in place)");
  count_compute(m, 0, ceil_div(n, m->s->config->pes));
  if (!m->s->sram) return iree_ok_status();
  const uint8_t* lookup = m->s->sram + table_at;
  const uint8_t* in = m->s->sram + ifm_at;
  uint8_t* out = m->s->sram + ofm_at;
  for (uint64_t i = 0; i < n; ++i) out[i] = lookup[(int8_t)in[i] + 128];
  return iree_ok_status();
}

// OP_E_MUL: TFLite's int8 MUL, y = clamp(requant((a - IFM_ZP) * (b - IFM2_ZP),
// OUT_MULT, OUT_SHIFT) + OFM_ZP, ACT_MIN, ACT_MAX), with b the IFM2 element
// `broadcast` gives. The OFM may be the IFM itself (in place) but must not
// otherwise overlap it, nor overlap the IFM2.
static iree_status_t product(machine_t* m, uint32_t broadcast) {
  if (broadcast > NPUKIT_MYNPU_E_MUL_ONE) return reject(m, "OP_E_MUL arg is not 0 (same), 1 (channels) or 2 (one)");
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_IFM_H, "IFM shape out of 1..65535"));
  IREE_RETURN_IF_ERROR(check_dims(m, NPUKIT_MYNPU_OFM_H, "OFM shape out of 1..65535"));
  uint64_t n = elements(m, NPUKIT_MYNPU_IFM_H);
  if (elements(m, NPUKIT_MYNPU_OFM_H) != n) return reject(m, "elementwise OFM size differs from the IFM's");
  const uint32_t* r = m->reg;
  uint64_t channels = r[NPUKIT_MYNPU_IFM_C];
  uint64_t n2 = broadcast == NPUKIT_MYNPU_E_MUL_SAME ? n : broadcast == NPUKIT_MYNPU_E_MUL_CHANNELS ? channels : 1;
  IREE_RETURN_IF_ERROR(check_signed8(m, NPUKIT_MYNPU_IFM_ZP, "IFM_ZP out of -128..127"));
  IREE_RETURN_IF_ERROR(check_signed8(m, NPUKIT_MYNPU_IFM2_ZP, "IFM2_ZP out of -128..127"));
  IREE_RETURN_IF_ERROR(check_activation(m));
  IREE_RETURN_IF_ERROR(check_multiplier(m, NPUKIT_MYNPU_OUT_MULT, NPUKIT_MYNPU_OUT_SHIFT));
  uint64_t ifm_at = r[NPUKIT_MYNPU_IFM_ADDR], ifm2_at = r[NPUKIT_MYNPU_IFM2_ADDR], ofm_at = r[NPUKIT_MYNPU_OFM_ADDR];
  IREE_RETURN_IF_ERROR(check_sram(m, ifm_at, n, 0, "IFM outside the SRAM"));
  IREE_RETURN_IF_ERROR(check_sram(m, ifm2_at, n2, 0, "IFM2 outside the SRAM"));
  IREE_RETURN_IF_ERROR(check_sram(m, ofm_at, n, 1, "OFM outside the SRAM"));
  if (ofm_at != ifm_at && overlaps(ofm_at, n, ifm_at, n)) return reject(m, "the OFM overlaps the IFM (not in place)");
  if (overlaps(ofm_at, n, ifm2_at, n2)) return reject(m, "the OFM overlaps the IFM2");
  count_compute(m, 0, ceil_div(n, m->s->config->pes));
  if (!m->s->sram) return iree_ok_status();
  const uint8_t* a = m->s->sram + ifm_at;
  const uint8_t* b = m->s->sram + ifm2_at;
  uint8_t* out = m->s->sram + ofm_at;
  int32_t izp = sreg(m, NPUKIT_MYNPU_IFM_ZP), i2zp = sreg(m, NPUKIT_MYNPU_IFM2_ZP), ozp = sreg(m, NPUKIT_MYNPU_OFM_ZP);
  int32_t lo = sreg(m, NPUKIT_MYNPU_ACT_MIN), hi = sreg(m, NPUKIT_MYNPU_ACT_MAX);
  int32_t mult = sreg(m, NPUKIT_MYNPU_OUT_MULT), shift = sreg(m, NPUKIT_MYNPU_OUT_SHIFT);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t j = broadcast == NPUKIT_MYNPU_E_MUL_SAME ? i : broadcast == NPUKIT_MYNPU_E_MUL_CHANNELS ? i % channels : 0;
    int32_t p = ((int8_t)a[i] - izp) * ((int8_t)b[j] - i2zp);
    int32_t v = mynpu_sat32((int64_t)mynpu_requantize(p, mult, shift) + ozp);
    out[i] = (uint8_t)(int8_t)mynpu_clamp(v, lo, hi);
  }
  return iree_ok_status();
}

static iree_status_t dma(machine_t* m, int to_sram) {
  const npukit_mynpu_stream_t* s = m->s;
  const uint32_t* r = m->reg;
  uint32_t binding = r[NPUKIT_MYNPU_DMA_BINDING];
  uint64_t length = r[NPUKIT_MYNPU_DMA_LENGTH];
  uint64_t rows = r[NPUKIT_MYNPU_DMA_ROWS] ? r[NPUKIT_MYNPU_DMA_ROWS] : 1;
  uint64_t sys_stride = r[NPUKIT_MYNPU_DMA_SYS_STRIDE], sram_stride = r[NPUKIT_MYNPU_DMA_SRAM_STRIDE];
  uint64_t planes = r[NPUKIT_MYNPU_DMA_PLANES] ? r[NPUKIT_MYNPU_DMA_PLANES] : 1;
  uint64_t sys_plane_stride = r[NPUKIT_MYNPU_DMA_SYS_PLANE_STRIDE];
  uint64_t sram_plane_stride = r[NPUKIT_MYNPU_DMA_SRAM_PLANE_STRIDE];
  if (length < 1 || length > (1u << 24)) return reject(m, "DMA_LENGTH out of 1..2^24");
  if (rows > 1 && (sys_stride < length || sram_stride < length)) return reject(m, "DMA rows overlap (stride < length)");
  uint64_t sys_plane = (rows - 1) * sys_stride + length, sram_plane = (rows - 1) * sram_stride + length;
  if (planes > 1 && (sys_plane_stride < sys_plane || sram_plane_stride < sram_plane)) {
    return reject(m, "DMA planes overlap (plane stride < plane)");
  }
  const uint8_t* sys_read = NULL;
  uint8_t* sys_write = NULL;
  size_t sys_length;
  if (binding == NPUKIT_MYNPU_CONSTANTS_BINDING) {
    if (!to_sram) return reject(m, "DMA write to the constants");
    sys_read = s->constants;
    sys_length = s->constants_length;
  } else if (binding < s->binding_count) {
    sys_read = sys_write = s->bindings[binding].data;
    sys_length = s->bindings[binding].length;
  } else {
    return reject(m, "DMA names a binding the export does not have");
  }
  uint64_t sys_span = (planes - 1) * sys_plane_stride + sys_plane;
  uint64_t sram_span = (planes - 1) * sram_plane_stride + sram_plane;
  if (r[NPUKIT_MYNPU_DMA_OFFSET] + sys_span > sys_length) return reject(m, "DMA outside its binding");
  uint64_t sram_at = r[NPUKIT_MYNPU_DMA_SRAM_ADDR];
  IREE_RETURN_IF_ERROR(check_sram(m, sram_at, sram_span, to_sram, "DMA outside the SRAM"));
  if (to_sram) {
    for (uint32_t i = 0; i < m->sram_write_count; ++i) {
      if (sram_at < m->sram_writes[i][1] && m->sram_writes[i][0] < sram_at + sram_span) {
        return reject(m, "overlapping DMA: two transfers of one layer write the same SRAM");
      }
    }
    if (m->sram_write_count == MAX_LAYER_DMA_WRITES) return reject(m, "more than 256 DMA reads in one layer");
    m->sram_writes[m->sram_write_count][0] = sram_at;
    m->sram_writes[m->sram_write_count][1] = sram_at + sram_span;
    m->sram_write_count++;
  }
  uint64_t bytes = planes * rows * length;
  count(m, 0, 0, bytes, ceil_div(bytes, s->config->dma_bytes_per_cycle) + NPUKIT_MYNPU_DMA_OVERHEAD_CYCLES);
  if (!s->sram) return iree_ok_status();
  if (to_sram ? sys_read == NULL : sys_write == NULL) return reject(m, "DMA binding has no memory");
  for (uint64_t plane = 0; plane < planes; ++plane) {
    for (uint64_t row = 0; row < rows; ++row) {
      uint8_t* sram_row = s->sram + sram_at + plane * sram_plane_stride + row * sram_stride;
      uint64_t sys_at = r[NPUKIT_MYNPU_DMA_OFFSET] + plane * sys_plane_stride + row * sys_stride;
      if (to_sram) {
        memcpy(sram_row, sys_read + sys_at, length);
      } else {
        memcpy(sys_write + sys_at, sram_row, length);
      }
    }
  }
  return iree_ok_status();
}

// The stream ---------------------------------------------------------------

void npukit_mynpu_counters_accumulate(npukit_mynpu_counters_t* total, const npukit_mynpu_counters_t* c) {
  total->macs += c->macs;
  total->compute_cycles += c->compute_cycles;
  total->dma_bytes += c->dma_bytes;
  total->dma_cycles += c->dma_cycles;
  total->cycles += c->cycles;
  total->instructions += c->instructions;
  total->layers += c->layers;
  if (c->sram_high_water > total->sram_high_water) total->sram_high_water = c->sram_high_water;
  if (c->sram_extent > total->sram_extent) total->sram_extent = c->sram_extent;
}

iree_status_t npukit_mynpu_config_check(const npukit_mynpu_config_t* c) {
  if (c->pes < 1 || c->pes > 4096) return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu: pes out of 1..4096");
  if (c->sram_bytes < 1024 || c->sram_bytes > NPUKIT_MYNPU_MAX_SRAM_BYTES) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu: sram_bytes out of 1 KiB..1 GiB");
  }
  if (c->parallelism > NPUKIT_MYNPU_PARALLEL_OUTPUT_PIXELS) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu: parallelism is not 0, 1 or 2");
  }
  if (c->dma_bytes_per_cycle < 1 || c->dma_bytes_per_cycle > 1024) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu: dma_bytes_per_cycle out of 1..1024");
  }
  if (c->clock_mhz < 1 || c->clock_mhz > 10000) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu: clock_mhz out of 1..10000");
  }
  return iree_ok_status();
}

// Decodes the command at |cmd| (|available| bytes left) and runs it; its
// length is stored in |out_length|.
static iree_status_t step(machine_t* m, const uint8_t* cmd, size_t available, size_t* out_length, int* out_end) {
  uint8_t opcode = cmd[0] & (uint8_t)~NPUKIT_MYNPU_SHORT_FORM, arg = cmd[1];
  m->opcode = opcode;
  uint32_t value;
  if (cmd[0] & NPUKIT_MYNPU_SHORT_FORM) {
    // Short form: the value is bytes 2..3, sign-extended.
    int16_t imm;
    memcpy(&imm, cmd + 2, 2);
    value = (uint32_t)(int32_t)imm;
    *out_length = NPUKIT_MYNPU_SHORT_COMMAND_BYTES;
  } else {
    if (available < NPUKIT_MYNPU_COMMAND_BYTES) return reject(m, "a long command is cut off by the stream's end");
    memcpy(&value, cmd + 4, 4);
    if (cmd[2] || cmd[3]) return reject(m, "reserved bytes are not zero");
    *out_length = NPUKIT_MYNPU_COMMAND_BYTES;
  }
  if (cmd[0] & 0x80) return reject(m, "unknown opcode");
  if (opcode == NPUKIT_MYNPU_SET) {
    if (arg >= NPUKIT_MYNPU_REGISTER_COUNT) return reject(m, "register index out of range");
    m->reg[arg] = value;
    return iree_ok_status();
  }
  int known = opcode == NPUKIT_MYNPU_END || opcode == NPUKIT_MYNPU_LAYER ||
              (opcode >= 0x10 && opcode <= NPUKIT_MYNPU_OP_E_MUL) || opcode == NPUKIT_MYNPU_OP_DMA_READ ||
              opcode == NPUKIT_MYNPU_OP_DMA_WRITE;
  if (!known) return reject(m, "unknown opcode");
  if (value != 0) return reject(m, "an instruction's value word is not zero");
  if (opcode == NPUKIT_MYNPU_END) {
    *out_end = 1;
    return iree_ok_status();
  }
  if (opcode == NPUKIT_MYNPU_LAYER) {
    if (arg > 1) return reject(m, "LAYER flags other than double-buffering");
    if (m->layer.instructions || m->layer_index) close_layer(m), m->layer_index++;
    m->layer_double_buffered = arg & 1;
    return iree_ok_status();
  }
  if (!(m->s->config->instruction_mask & (1u << (opcode - 0x10)))) {
    return reject(m, "the instruction is not in this hardware configuration");
  }
  if (opcode != NPUKIT_MYNPU_OP_POOL && opcode != NPUKIT_MYNPU_OP_E_MUL && arg != 0) {
    return reject(m, "an instruction's arg byte is not zero");
  }
  switch (opcode) {
    case NPUKIT_MYNPU_OP_CONV: return contraction(m, CONV, 0);
    case NPUKIT_MYNPU_OP_CONV_RELU: return contraction(m, CONV, 1);
    case NPUKIT_MYNPU_OP_DEPTH_CONV: return contraction(m, DEPTHWISE, 0);
    case NPUKIT_MYNPU_OP_MAT_MUL: return contraction(m, MATMUL, 0);
    case NPUKIT_MYNPU_OP_POOL: return pool(m, arg);
    case NPUKIT_MYNPU_OP_TABLE: return table(m);
    case NPUKIT_MYNPU_OP_E_MUL: return product(m, arg);
    case NPUKIT_MYNPU_OP_DMA_READ: return dma(m, 1);
    case NPUKIT_MYNPU_OP_DMA_WRITE: return dma(m, 0);
    default: return elementwise(m, opcode);
  }
}

iree_status_t npukit_mynpu_run_stream(const npukit_mynpu_stream_t* stream, npukit_mynpu_counters_t* out_counters) {
  memset(out_counters, 0, sizeof(*out_counters));
  IREE_RETURN_IF_ERROR(npukit_mynpu_config_check(stream->config));
  if (stream->binding_count > NPUKIT_MYNPU_MAX_BINDINGS) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu stream: more than %d bindings",
                            NPUKIT_MYNPU_MAX_BINDINGS);
  }
  if (stream->command_bytes == 0 || stream->command_bytes % NPUKIT_MYNPU_SHORT_COMMAND_BYTES) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu stream: %zu bytes is not a whole number of commands",
                            stream->command_bytes);
  }
  machine_t m;
  memset(&m, 0, sizeof(m));
  if (stream->register_defaults) {
    static const uint8_t ones[] = {NPUKIT_MYNPU_KERNEL_H,   NPUKIT_MYNPU_KERNEL_W,   NPUKIT_MYNPU_STRIDE_H,
                                   NPUKIT_MYNPU_STRIDE_W,   NPUKIT_MYNPU_DILATION_H, NPUKIT_MYNPU_DILATION_W};
    for (size_t i = 0; i < sizeof(ones); ++i) m.reg[ones[i]] = 1;
    m.reg[NPUKIT_MYNPU_ACT_MIN] = (uint32_t)-128;
    m.reg[NPUKIT_MYNPU_ACT_MAX] = 127;
  }
  m.s = stream;
  m.total = out_counters;
  size_t at = 0;
  int end = 0;
  for (m.index = 0; at < stream->command_bytes && !end; ++m.index) {
    size_t length = 0;
    IREE_RETURN_IF_ERROR(step(&m, stream->commands + at, stream->command_bytes - at, &length, &end));
    at += length;
  }
  if (!end) {
    m.index--;
    return reject(&m, "the stream does not end with END");
  }
  if (at != stream->command_bytes) return reject(&m, "commands after END");
  close_layer(&m);
  return iree_ok_status();
}
