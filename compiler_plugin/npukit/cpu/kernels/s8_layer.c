// The one entry point the compiled dispatches call (see s8_layer.h): it
// expands a compact block's words (s8_layer.h) and runs the layer. On x86
// with AVX2 or AVX-512 VNNI the vector kernels (s8_x86.h) take the layer
// unless they leave it to the portable ones.
#include "s8_layer.h"
#include "s8_lanes.h"
#include "s8_x86.h"

void npukit_s8_conv(const int32_t* p, size_t input, size_t output, size_t residual);
void npukit_s8_depthwise(const int32_t* p, size_t input, size_t output, size_t residual);
void npukit_s8_residual_int8(const int32_t* p, size_t residual, size_t output);
void npukit_s8_average(const int32_t* p, size_t input, size_t output, size_t residual);
void npukit_s8_table(const int32_t* p, size_t input, size_t output);
int32_t npukit_s8_fully_connected(const int32_t* p, size_t input, size_t output);

static uint32_t read_u32(const uint8_t* b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

int npukit_s8_layer_words(const uint8_t* block, int32_t words[NPUKIT_S8_W_COUNT]) {
  if (read_u32(block) != (uint32_t)NPUKIT_S8_COMPACT_MAGIC) return 0;
  const uint8_t* present = block + 4;
  const uint8_t* at = present + (NPUKIT_S8_W_COUNT + 7) / 8;
  for (int32_t i = 0; i < NPUKIT_S8_W_COUNT; ++i) words[i] = 0;
  for (int32_t i0 = 0; i0 < NPUKIT_S8_W_COUNT; i0 += 8) {
    // The set bits of one mask byte, lowest first; a zero byte costs nothing more.
    for (uint32_t bits = present[i0 / 8], i = (uint32_t)i0; bits; bits >>= 1, ++i) {
      if (!(bits & 1)) continue;
      uint32_t z = *at++;
      if (z & 0x80) {  // more than 7 bits
        uint32_t byte, shift = 7;
        z &= 0x7f;
        do {
          byte = *at++;
          z |= (byte & 0x7f) << shift;
          shift += 7;
        } while ((byte & 0x80) && shift < 35);
      }
      words[i] = (int32_t)((z >> 1) ^ (0u - (z & 1)));  // zigzag back to two's complement
    }
  }
  words[NPUKIT_S8_W_MAGIC] = NPUKIT_S8_MAGIC;
  return 1;
}

// Position words counted from `block` made to count from `words` (the
// kernels add them to the address of the words they read). Both are 4-byte
// aligned, and on a 32-bit target any distance fits the int32 words modulo
// 2^32, the pointers' own arithmetic.
static void rebase(int32_t words[NPUKIT_S8_W_COUNT], size_t block) {
  _Static_assert(NPUKIT_S8_W_COUNT <= 256, "word indices are stored in bytes");
  static const uint8_t positions[] = {NPUKIT_S8_POSITION_WORDS};
  const uintptr_t bytes = (uintptr_t)block - (uintptr_t)words;
#if UINTPTR_MAX > 0xffffffffu
  // The compiler writes compact blocks for 32-bit targets only; elsewhere
  // the distance must still fit an int32 count of bytes.
  if ((intptr_t)bytes != (intptr_t)(int32_t)bytes) __builtin_trap();
#endif
  const uint32_t in_bytes = (uint32_t)bytes, in_words = (uint32_t)((int32_t)in_bytes / 4);
  for (size_t i = 0; i < sizeof positions; ++i) {
    const int32_t w = positions[i];
    if (!words[w]) continue;  // no such table
    const uint32_t delta = w == NPUKIT_S8_W_WEIGHTS_AT ? in_bytes : in_words;
    words[w] = (int32_t)((uint32_t)words[w] + delta);
  }
}

static void run_layer(const int32_t* p, size_t input, size_t output, size_t residual) {
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_TABLE) {
    npukit_s8_table(p, input, output);
    return;
  }
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_AVERAGE) {
#if NPUKIT_S8_X86
    if (npukit_s8_average_x86(p, input, output, residual)) return;
#endif
    npukit_s8_average(p, input, output, residual);
    return;
  }
  if (p[NPUKIT_S8_W_OUTPUT] == NPUKIT_S8_OUT_ADD && p[NPUKIT_S8_W_RES_BIAS_AT]) {
#if NPUKIT_S8_X86
    if (!npukit_s8_residual_int8_x86(p, residual, output))
#endif
      npukit_s8_residual_int8(p, residual, output);
  }
  if (p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_LANES) {
    npukit_s8_lanes(p, input, output, residual);
    return;
  }
  // The vector kernels run a padded layer from strips of its padded input (s8_padded_x86.c).
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_DEPTHWISE) {
#if NPUKIT_S8_X86
    // The vector kernels read [OUT_C][taps] weights (NPUKIT_S8_WEIGHTS_INT8).
    if (p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_INT8 && npukit_s8_x86_tables(p) &&
        npukit_s8_x86_run(p, input, output, residual, npukit_s8_depthwise_x86, NPUKIT_S8_STRIP_PLANES)) {
      return;
    }
#endif
    npukit_s8_depthwise(p, input, output, residual);
  } else {
#if NPUKIT_S8_X86
    if (npukit_s8_x86_tables(p) &&
        npukit_s8_x86_run(p, input, output, residual, npukit_s8_conv_x86, NPUKIT_S8_STRIP_PLANES)) {
      return;
    }
#endif
    // DSP cores: a batch-1 fully connected layer as a matrix-vector product (s8_fully_connected.c).
    if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_FULLY_CONNECTED && npukit_s8_fully_connected(p, input, output)) return;
    npukit_s8_conv(p, input, output, residual);
  }
}

void npukit_s8_layer(size_t params, size_t input, size_t output, size_t residual) {
  int32_t words[NPUKIT_S8_W_COUNT];
  if (!npukit_s8_layer_words((const uint8_t*)params, words)) {
    run_layer((const int32_t*)params, input, output, residual);
    return;
  }
  rebase(words, params);
  // The kernels address the block's tables from `words`: hide where the
  // pointer comes from, so that no analysis bounds those reads by the array.
  const int32_t* p = words;
  __asm__("" : "+r"(p) : : "memory");
  run_layer(p, input, output, residual);
}
