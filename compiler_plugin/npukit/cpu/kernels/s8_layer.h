// The parameter block of npukit's int8 layer kernels: one array of int32
// words, written at compile time by npukit/cpu/layer_kernels.py (which reads
// the word names from this file) and placed in the executable's read-only
// data beside the layer's tables and packed weights. The block is stored in
// one of two encodings (NPUKIT_S8_MAGIC, NPUKIT_S8_COMPACT_MAGIC, below);
// the kernels read the words as the int32 array of enum npukit_s8_word.
//
// Tensors are addressed by element strides per role: element (c, y, x) of a
// tensor is at byte `OFFSET + size * (c * SC + y * SH + x * SW)` of its
// binding, so channel-first, channel-last, windows of larger tensors and
// strided reads are all one case.
#ifndef NPUKIT_CPU_KERNELS_S8_LAYER_H_
#define NPUKIT_CPU_KERNELS_S8_LAYER_H_

#include <stddef.h>
#include <stdint.h>

// The encodings of a block, told apart by its first four bytes:
// - full: the NPUKIT_S8_W_COUNT int32 words themselves (MAGIC first), then
//   the tables and weights at the positions the *_AT words give.
// - compact (32-bit targets only, where a block and the kernels' stack are
//   less than 2^31 bytes apart): the int32 NPUKIT_S8_COMPACT_MAGIC, then a
//   presence bitmask of (NPUKIT_S8_W_COUNT + 7) / 8 bytes (bit i % 8 of byte
//   i / 8 set: word i is not zero), then the value of every word whose bit is
//   set, in enum order, each a zigzag LEB128 varint (v as (v << 1) ^ (v >> 31),
//   7 bits a byte, least significant first, bit 7 set on every byte but the
//   last; at most 5 bytes), then zero bytes up to the first table. Words not
//   present are 0; MAGIC is not stored (it reads NPUKIT_S8_MAGIC). The tables
//   and weights follow with the alignment of the full encoding (int32 tables
//   4 bytes, SCALE and the weights 8 bytes, from the block's 16-byte aligned
//   start), and the position words (NPUKIT_S8_POSITION_WORDS) locate them from
//   the compact block's own start. npukit_s8_layer expands a compact block
//   into the full words on its stack and rebases the position words so that
//   they address the tables and weights where they are, in the block (never
//   a copy): `p + p[NPUKIT_S8_W_BIAS_AT]` is the bias table in flash.
// Any word of the enum is encoded the same way: a new word needs nothing
// here but its enum entry (and, if it locates something, an _AT name and
// its place in NPUKIT_S8_POSITION_WORDS).
#define NPUKIT_S8_MAGIC 0x314b504e          // "NPK1"
#define NPUKIT_S8_COMPACT_MAGIC 0x3143504e  // "NPC1"

// NPUKIT_S8_KIND
#define NPUKIT_S8_CONV 0             // convolution (also 1x1): acc = bias + sum (x - in_zp) * w
#define NPUKIT_S8_DEPTHWISE 1        // one filter per channel
#define NPUKIT_S8_FULLY_CONNECTED 2  // a convolution scaled by a double and rounded once (TFLite's FC)
#define NPUKIT_S8_AVERAGE 3          // a global average pool of another layer's int32 accumulators (s8_average.c)
#define NPUKIT_S8_TABLE 4            // an int8 elementwise operation: OUT_W values looked up in WEIGHTS_AT's
                                     // 256-entry int8 table, input x at index x + 128 (s8_table.c)
#define NPUKIT_S8_MUL 5              // TFLite's int8 MUL of the input and a second tensor (the residual's
                                     // pointer and RES_* words), OUT_W rows of OUT_C channels (s8_mul.c)
#define NPUKIT_S8_AVERAGE_POOL 6     // TFLite's int8 AVERAGE_POOL_2D of an int8 tensor (s8_pool.c)
#define NPUKIT_S8_MAX_POOL 7         // TFLite's int8 MAX_POOL_2D (s8_pool.c)
#define NPUKIT_S8_QUANTIZE 8         // TFLite's QUANTIZE of OUT_W float32 values by FLOAT_OUT_SCALE (s8_quantize.c)
#define NPUKIT_S8_MEAN 9             // TFLite's int8 MEAN: a window's sum plus the channel's bias, requantized by
                                     // its multiplier and shift, plus OUT_ZP, clamped (s8_pool.c)

// NPUKIT_S8_OUTPUT
#define NPUKIT_S8_OUT_INT8 0   // requantized, + out_zp, clamped to the activation range
#define NPUKIT_S8_OUT_INT32 1  // the accumulators themselves
#define NPUKIT_S8_OUT_ADD 2    // int8 as above, then TFLite's int8 ADD with a residual tensor

// NPUKIT_S8_WEIGHT_FORM. Convolution and fully connected layers:
#define NPUKIT_S8_WEIGHTS_INT8 0   // int8, [OUT_C / 2][K_PADDED / 4][2][4]
#define NPUKIT_S8_WEIGHTS_INT16 1  // DSP cores only: the same, widened to int16 with each group of four in the
                                   // order (0, 2, 1, 3) SMLAD pairs them in: twice the bytes, no SXTB16
// Depthwise layers: NPUKIT_S8_WEIGHTS_INT8 is [OUT_C][KERNEL_H * KERNEL_W];
#define NPUKIT_S8_WEIGHTS_TAPS 2  // [OUT_C / 4 rounded up][KERNEL_H * KERNEL_W][4], int8: a word holds one tap of
                                  // four neighbouring channels (channel-last layers on DSP cores)
// Channel-last layers whose output channels are vector lanes (s8_lanes.h):
#define NPUKIT_S8_WEIGHTS_LANES 3  // conv: [OUT_C / 16 rounded up][groups][16][4]; depthwise: [OUT_C / 64 rounded
                                   // up][KERNEL_H * KERNEL_W / 4 rounded up][4][16][4] (s8_lanes.h)

// NPUKIT_S8_CONV_FORM (x86 vector convolution)
#define NPUKIT_S8_CONV_AUTO 0    // the kernel's own rule
#define NPUKIT_S8_CONV_PACKED 1  // im2col panels
#define NPUKIT_S8_CONV_DIRECT 2  // the interleaved input read in place, where the layer allows it
#define NPUKIT_S8_CONV_ROWS 3    // lane weights: a row's taps from one load of each input word (s8_conv_lanes_x86.c)

// Words of the parameter block.
enum npukit_s8_word {
  NPUKIT_S8_W_MAGIC,
  NPUKIT_S8_W_KIND,
  NPUKIT_S8_W_OUTPUT,
  NPUKIT_S8_W_IN_C,
  NPUKIT_S8_W_IN_H,
  NPUKIT_S8_W_IN_W,
  NPUKIT_S8_W_OUT_C,
  NPUKIT_S8_W_OUT_H,
  NPUKIT_S8_W_OUT_W,
  NPUKIT_S8_W_KERNEL_H,
  NPUKIT_S8_W_KERNEL_W,
  NPUKIT_S8_W_STRIDE_H,
  NPUKIT_S8_W_STRIDE_W,
  NPUKIT_S8_W_DILATION_H,
  NPUKIT_S8_W_DILATION_W,
  NPUKIT_S8_W_IN_OFFSET,
  NPUKIT_S8_W_IN_SC,
  NPUKIT_S8_W_IN_SH,
  NPUKIT_S8_W_IN_SW,
  NPUKIT_S8_W_OUT_OFFSET,
  NPUKIT_S8_W_OUT_SC,
  NPUKIT_S8_W_OUT_SH,
  NPUKIT_S8_W_OUT_SW,
  NPUKIT_S8_W_RES_OFFSET,
  NPUKIT_S8_W_RES_SC,
  NPUKIT_S8_W_RES_SH,
  NPUKIT_S8_W_RES_SW,
  NPUKIT_S8_W_IN_ZP,
  NPUKIT_S8_W_OUT_ZP,
  NPUKIT_S8_W_ACT_MIN,
  NPUKIT_S8_W_ACT_MAX,
  // Reduction length of one output channel rounded up to 4 (zero weights pad it).
  NPUKIT_S8_W_K_PADDED,
  // How the kernel runs this layer, chosen at compile time (by tuning):
  // NPUKIT_S8_WEIGHTS_*, NPUKIT_S8_CONV_*.
  NPUKIT_S8_W_WEIGHT_FORM,
  NPUKIT_S8_W_CONV_FORM,
  // TFLite ADD (NPUKIT_S8_OUT_ADD only).
  NPUKIT_S8_W_ADD_CONV_ZP,
  NPUKIT_S8_W_ADD_RES_ZP,
  NPUKIT_S8_W_ADD_LEFT_SHIFT,
  NPUKIT_S8_W_ADD_CONV_MULT,
  NPUKIT_S8_W_ADD_CONV_SHIFT,
  NPUKIT_S8_W_ADD_RES_MULT,
  NPUKIT_S8_W_ADD_RES_SHIFT,
  NPUKIT_S8_W_ADD_OUT_MULT,
  NPUKIT_S8_W_ADD_OUT_SHIFT,
  NPUKIT_S8_W_ADD_OUT_ZP,
  NPUKIT_S8_W_ADD_ACT_MIN,
  NPUKIT_S8_W_ADD_ACT_MAX,
  // Where the tables are, in words from the block's start, and the weights in bytes:
  // bias[OUT_C], multiplier[OUT_C], shift[OUT_C]; weights: conv as WEIGHT_FORM says, with K
  // ordered (kernel y, kernel x, input channel); depthwise int8 [OUT_C][KERNEL_H * KERNEL_W].
  // Every layer's per-channel tables are these three (a board's flash holds
  // nothing else per channel), plus, where the layer has them, the RES_*
  // tables of a fused residual layer's output stage, the FLOAT table of a
  // float output stage and a fully connected layer's SCALE table (below);
  // the portable and DSP kernels derive anything else per layer call. A
  // float output stage's bias is zeros, and a NPUKIT_S8_FULLY_CONNECTED
  // block without one scales by SCALE: in both, no kernel reads a multiplier
  // or shift, and MULTIPLIER_AT and SHIFT_AT locate the bias table.
  NPUKIT_S8_W_BIAS_AT,
  NPUKIT_S8_W_MULTIPLIER_AT,
  NPUKIT_S8_W_SHIFT_AT,
  NPUKIT_S8_W_WEIGHTS_AT,
  // weight_sum[OUT_C], the sum of each output channel's weights, for the x86
  // host kernels only (they fold the input zero point into the bias with
  // it; s8_conv_x86.c, s8_depthwise_x86.c, s8_depthwise_vbmi.c,
  // s8_*_lanes_x86.c); 0 in blocks made for other presets
  // (npukit.cpu.kernel_choice.KernelChoice.weight_sums), which the x86
  // kernels then leave to the portable ones. Not written for an AVERAGE.
  NPUKIT_S8_W_WEIGHT_SUM_AT,
  // An ADD whose residual is another layer's int32 accumulators (RES_* then
  // address them), given that layer's output stage: its tables bias[OUT_C]
  // (the zero-point correction folded in), multiplier[OUT_C], shift[OUT_C],
  // and its activation range; the int8 zero point is ADD_RES_ZP. RES_BIAS_AT
  // is 0 when the residual is an int8 tensor.
  NPUKIT_S8_W_RES_BIAS_AT,
  NPUKIT_S8_W_RES_MULTIPLIER_AT,
  NPUKIT_S8_W_RES_SHIFT_AT,
  NPUKIT_S8_W_RES_ACT_MIN,
  NPUKIT_S8_W_RES_ACT_MAX,
  // NPUKIT_S8_AVERAGE: TFLite's int8 average of each channel's IN_H x IN_W
  // values (the sum divided by COUNT, ties away from zero, clamped).
  // NPUKIT_S8_FULLY_CONNECTED: scale[OUT_C], binary64 at an 8-byte aligned
  // word; each output is round(double(acc) * scale), ties away from zero.
  NPUKIT_S8_W_SCALE_AT,
  NPUKIT_S8_W_AVERAGE_COUNT,
  NPUKIT_S8_W_AVERAGE_ACT_MIN,
  NPUKIT_S8_W_AVERAGE_ACT_MAX,
  // NPUKIT_S8_WEIGHTS_LANES convolutions: the input bytes of one segment of
  // the reduction that lie side by side (a kernel row's taps and channels,
  // or one tap's channels), each segment padded to a multiple of 4.
  NPUKIT_S8_W_LANE_SEGMENT,
  // NPUKIT_S8_DEPTHWISE: the channel multiplier M (TFLite's depth_multiplier;
  // 1 without one): output channel c reads input channel c / M. Weight form
  // NPUKIT_S8_WEIGHTS_INT8, or NPUKIT_S8_WEIGHTS_LANES with M of 2 or 4, when M > 1.
  NPUKIT_S8_W_MULTIPLIER,
  // The float output stage of an ONNX QDQ layer (s8_output.h), 0 where the
  // layer takes TFLite's fixed-point one: where the table float[OUT_C][3]
  // {scale0, scale1, bias} (binary32) is, in words from the block's start.
  // Each output is computed in binary32 in the order the graph's
  // DequantizeLinear -> layer -> QuantizeLinear gives it:
  //   v = ((float)acc * scale0) * scale1 + bias, acc without the integer BIAS
  //   v = min(relu ? max(v, 0) : v, FLOAT_UPPER)
  //   out = clamp(roundeven(v / FLOAT_OUT_SCALE) + OUT_ZP, FLOAT_LOW, FLOAT_HIGH)
  // FLOAT_OUT_SCALE and FLOAT_UPPER are binary32 bit patterns (FLOAT_UPPER
  // +infinity without a bound).
  NPUKIT_S8_W_FLOAT_AT,
  NPUKIT_S8_W_FLOAT_OUT_SCALE,
  NPUKIT_S8_W_FLOAT_RELU,
  NPUKIT_S8_W_FLOAT_UPPER,
  NPUKIT_S8_W_FLOAT_LOW,
  NPUKIT_S8_W_FLOAT_HIGH,
  // The float ADD of a float output stage (NPUKIT_S8_OUT_ADD): with the
  // ADD_CONV_ZP, ADD_RES_ZP and ADD_OUT_ZP words,
  //   v = (float)(out - ADD_CONV_ZP) * CONV_SCALE + (float)(res - ADD_RES_ZP) * RES_SCALE
  // then the activation and quantization above with the ADD's own words.
  NPUKIT_S8_W_FLOAT_ADD_CONV_SCALE,
  NPUKIT_S8_W_FLOAT_ADD_RES_SCALE,
  NPUKIT_S8_W_FLOAT_ADD_OUT_SCALE,
  NPUKIT_S8_W_FLOAT_ADD_RELU,
  NPUKIT_S8_W_FLOAT_ADD_UPPER,
  NPUKIT_S8_W_FLOAT_ADD_LOW,
  NPUKIT_S8_W_FLOAT_ADD_HIGH,
  // Input padding the layer reads itself (CONV and DEPTHWISE; 0 for the
  // others): the input's rows -PAD_TOP .. -1 and IN_H .. IN_H + PAD_BOTTOM - 1
  // and columns -PAD_LEFT .. -1 and IN_W .. IN_W + PAD_RIGHT - 1 hold
  // PAD_VALUE (int8), so output pixel (y, x) reads input row y * STRIDE_H -
  // PAD_TOP + i * DILATION_H (likewise x), and a tap outside rows 0 .. IN_H - 1
  // or columns 0 .. IN_W - 1 reads PAD_VALUE. PAD_VALUE is
  // what those positions hold, not a zero point: with IN_ZP 0 (a zero point
  // folded into the bias) it is that zero point. The portable kernels read
  // it (s8_conv.c: the im2col gather; s8_depthwise.c: strips of padded
  // rows, or the interior and the border pixels; s8_lanes.c: tap by tap);
  // the x86 vector and lane kernels run tiles of the output from stack
  // strips of the padded input (s8_padded_x86.c).
  NPUKIT_S8_W_PAD_TOP,
  NPUKIT_S8_W_PAD_BOTTOM,
  NPUKIT_S8_W_PAD_LEFT,
  NPUKIT_S8_W_PAD_RIGHT,
  NPUKIT_S8_W_PAD_VALUE,
  NPUKIT_S8_W_COUNT
};

// The words that are positions in the block: of int32 tables, counted in
// int32 words from the block's start (0: no such table), and, last, the
// weights, counted in bytes.
#define NPUKIT_S8_POSITION_WORDS                                                                           \
  NPUKIT_S8_W_BIAS_AT, NPUKIT_S8_W_MULTIPLIER_AT, NPUKIT_S8_W_SHIFT_AT, NPUKIT_S8_W_WEIGHT_SUM_AT,       \
      NPUKIT_S8_W_RES_BIAS_AT, NPUKIT_S8_W_RES_MULTIPLIER_AT, NPUKIT_S8_W_RES_SHIFT_AT, NPUKIT_S8_W_SCALE_AT, \
      NPUKIT_S8_W_FLOAT_AT, NPUKIT_S8_W_WEIGHTS_AT

// Whether the layer reads input padding (the PAD_* words).
static inline int32_t npukit_s8_padded(const int32_t* p) {
  return p[NPUKIT_S8_W_PAD_TOP] || p[NPUKIT_S8_W_PAD_BOTTOM] || p[NPUKIT_S8_W_PAD_LEFT] || p[NPUKIT_S8_W_PAD_RIGHT];
}

// The convolution kernel (s8_conv.c) takes the reduction NPUKIT_S8_K_CHUNK
// values at a time: its im2col columns live on the stack (2 * 2 bytes per
// value, plus one byte for the input row), so a board's stack holds at most
// 5 * NPUKIT_S8_K_CHUNK bytes for them whatever K is. A longer reduction adds
// the chunks' int32 partial sums. Its weights (NPUKIT_S8_WEIGHTS_INT8 and
// _INT16) are then one block per chunk, one after the other: chunk j holds K
// values [j * K_CHUNK, j * K_CHUNK + n_j) of every channel as [OUT_C / 2][n_j
// / 4][2][4] (n_j = K_CHUNK except for the last chunk, K_PADDED's
// remainder); a reduction of at most K_CHUNK is the one block described
// above.
#define NPUKIT_S8_K_CHUNK 2048
// The largest K_PADDED the kernels take: sum (x - in_zp) * w over it cannot
// leave int32 (|x - in_zp| <= 255, |w| <= 128: 65536 * 32640 < 2^31).
#define NPUKIT_S8_MAX_K 65536

// One layer: `params` is the block above; the tensors are at the offsets it
// gives from these binding base addresses (`residual` only for OUT_ADD; for
// an AVERAGE, `input` holds int32 accumulators, and so does `residual`). A
// residual of int32 accumulators is first requantized into the output
// tensor, which the ADD then reads element by element before overwriting it.
// Addresses are passed as integers of the target's pointer width. `params`
// is a block in either encoding.
void npukit_s8_layer(size_t params, size_t input, size_t output, size_t residual);

// The words of a block in the compact encoding, its positions still counted
// from the block's start: 1, or 0 (and nothing written) when `block` is not
// one.
int npukit_s8_layer_words(const uint8_t* block, int32_t words[NPUKIT_S8_W_COUNT]);

// The words the kernels read for `params` (either encoding): the block itself,
// or its compact words expanded into `words` with their positions rebased
// (s8_layer_words.c).
const int32_t* npukit_s8_layer_params(size_t params, int32_t words[NPUKIT_S8_W_COUNT]);

// The entry point of the layers without weights (kinds TABLE, MUL,
// AVERAGE_POOL, MAX_POOL, MEAN and QUANTIZE, s8_unweighted.c; `operand` a
// product's second tensor); npukit_s8_layer runs the other kinds.
void npukit_s8_unweighted(size_t params, size_t input, size_t output, size_t operand);

#endif  // NPUKIT_CPU_KERNELS_S8_LAYER_H_
