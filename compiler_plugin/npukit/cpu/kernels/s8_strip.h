// Strips of padded input rows on the stack: a padded layer (PAD_* words,
// s8_layer.h) runs in bands of output rows, each band's input rows copied
// with their padding written out (rows and columns of PAD_VALUE), so the
// unpadded paths of the kernels run it (s8_conv.c, s8_depthwise.c).
#ifndef NPUKIT_CPU_KERNELS_S8_STRIP_H_
#define NPUKIT_CPU_KERNELS_S8_STRIP_H_

#include <stdint.h>

#include "s8_output.h"

// Stack bytes a strip may take (a layer whose window rows do not fit takes
// the kernels' border paths).
#define NPUKIT_S8_STRIP_BYTES 4096

// The input a strip is copied from: element (c, y, x) at in + c + y * sh + x * sw
// (channels side by side), `channels` per pixel.
typedef struct {
  const int8_t* in;
  int32_t ih, iw, sh, sw, channels, top, left, right;
  int8_t pad;
} npukit_s8_strip_source_t;

#if defined(__ARM_FEATURE_UNALIGNED)
// Words at any byte address: cores that load and store them unaligned (LDR, STR) copy a strip's rows, whose
// starts a row of an odd number of bytes leaves unaligned, a word at a time.
typedef int32_t __attribute__((aligned(1), may_alias)) npukit_s8_strip_word_t;
#define NPUKIT_S8_WORDS_AT(to, from) 1
#else
// Elsewhere words only where both ends are word-aligned.
typedef npukit_s8_word_t npukit_s8_strip_word_t;
#define NPUKIT_S8_WORDS_AT(to, from) ((((uintptr_t)(to) | (uintptr_t)(from)) & 3) == 0)
#endif

// Copies n bytes, four words at a time where both ends are word-aligned or the core reads and writes words at
// any address.
static inline void npukit_s8_copy_bytes(int8_t* restrict to, const int8_t* restrict from, int32_t n) {
  if (NPUKIT_S8_WORDS_AT(to, from)) {
    npukit_s8_strip_word_t* t = (npukit_s8_strip_word_t*)(void*)to;
    const npukit_s8_strip_word_t* f = (const npukit_s8_strip_word_t*)(const void*)from;
    for (; n >= 16; n -= 16, t += 4, f += 4) {
      const int32_t a = f[0], b = f[1], c = f[2], d = f[3];
      t[0] = a, t[1] = b, t[2] = c, t[3] = d;
    }
    for (; n >= 4; n -= 4) *t++ = *f++;
    to = (int8_t*)(void*)t, from = (const int8_t*)(const void*)f;
  }
  while (n-- > 0) *to++ = *from++;
}

// Sets n bytes to `value`, words where `to` is word-aligned.
static inline void npukit_s8_fill_bytes(int8_t* to, int8_t value, int32_t n) {
  if (((uintptr_t)to & 3) == 0) {
    const int32_t word = (int32_t)((uint32_t)(uint8_t)value * 0x01010101u);
    npukit_s8_word_t* t = (npukit_s8_word_t*)(void*)to;
    for (; n >= 4; n -= 4) *t++ = word;
    to = (int8_t*)(void*)t;
  }
  while (n-- > 0) *to++ = value;
}

// Bytes of one padded row of the strip.
static inline int32_t npukit_s8_strip_row_bytes(const npukit_s8_strip_source_t* s) {
  return (s->left + s->iw + s->right) * s->channels;
}

// The padded input rows [first, first + count) (first counted in the padded
// input, from its top) into `strip`, one padded row after the other.
static inline void npukit_s8_fill_strip(int8_t* strip, const npukit_s8_strip_source_t* s, int32_t first,
                                        int32_t count) {
  const int32_t row_bytes = npukit_s8_strip_row_bytes(s), c = s->channels;
  for (int32_t r = 0; r < count; ++r) {
    int8_t* to = strip + r * row_bytes;
    const int32_t iy = first + r - s->top;
    if (iy < 0 || iy >= s->ih) {
      npukit_s8_fill_bytes(to, s->pad, row_bytes);
      continue;
    }
    npukit_s8_fill_bytes(to, s->pad, s->left * c);
    to += s->left * c;
    const int8_t* from = s->in + iy * s->sh;
    if (s->sw == c) {  // the row's values side by side
      npukit_s8_copy_bytes(to, from, s->iw * c);
      to += s->iw * c;
    } else {
      for (int32_t x = 0; x < s->iw; ++x, from += s->sw) {
        for (int32_t k = 0; k < c; ++k) *to++ = from[k];
      }
    }
    npukit_s8_fill_bytes(to, s->pad, s->right * c);
  }
}

#endif  // NPUKIT_CPU_KERNELS_S8_STRIP_H_
