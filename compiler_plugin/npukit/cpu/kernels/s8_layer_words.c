// A block's words as the kernels read them (s8_layer.h): a full block as it
// is, a compact one expanded into int32 words. The entry points call this
// first; kept apart from them so that each links only its own kernels.
#include "s8_layer.h"

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

const int32_t* npukit_s8_layer_params(size_t params, int32_t words[NPUKIT_S8_W_COUNT]) {
  if (!npukit_s8_layer_words((const uint8_t*)params, words)) return (const int32_t*)params;
  rebase(words, params);
  // The kernels address the block's tables from `words`: hide where the
  // pointer comes from, so that no analysis bounds those reads by the array.
  const int32_t* p = words;
  __asm__("" : "+r"(p) : : "memory");
  return p;
}
