// An int8 elementwise operation as a 256-entry table (NPUKIT_S8_TABLE): the
// compiler evaluated the dispatch's own arithmetic on every int8 value
// (npukit/layer_recognition/table_lookup.py), so each of the OUT_W elements
// from IN_OFFSET is looked up, at index x + 128 of the table at WEIGHTS_AT,
// and stored at the same place from OUT_OFFSET. Every pass loads its
// elements before it stores them, so an output that is the input itself
// (IREE may reuse a buffer in place) reads every element before it is
// written. With AVX-512 VBMI, 64 elements a pass: x + 128 as an unsigned
// byte indexes the table's two halves with one two-table byte permute
// (VPERMI2B) each, and its top bit picks the half.
#include "s8_layer.h"
#include "s8_x86.h"

#if NPUKIT_S8_X86 == 512 && defined(__AVX512VBMI__)
#include <immintrin.h>
#endif

void npukit_s8_table(const int32_t* p, size_t input, size_t output);

void npukit_s8_table(const int32_t* p, size_t input, size_t output) {
  const int8_t* base = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const int8_t* table = base + 128;
  const int8_t* x = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  int8_t* y = (int8_t*)output + p[NPUKIT_S8_W_OUT_OFFSET];
  const int32_t n = p[NPUKIT_S8_W_OUT_W];
  int32_t i = 0;
#if NPUKIT_S8_X86 == 512 && defined(__AVX512VBMI__)
  const __m512i t0 = _mm512_loadu_si512(base), t1 = _mm512_loadu_si512(base + 64);
  const __m512i t2 = _mm512_loadu_si512(base + 128), t3 = _mm512_loadu_si512(base + 192);
  const __m512i bias = _mm512_set1_epi8((char)0x80);
  for (; i + 64 <= n; i += 64) {
    const __m512i index = _mm512_xor_si512(_mm512_loadu_si512(x + i), bias);  // x + 128, unsigned
    const __m512i low = _mm512_permutex2var_epi8(t0, index, t1), high = _mm512_permutex2var_epi8(t2, index, t3);
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(index), low, high));
  }
#endif
  for (; i + 4 <= n; i += 4) {
    const int8_t a = table[x[i]], b = table[x[i + 1]], c = table[x[i + 2]], d = table[x[i + 3]];
    y[i] = a, y[i + 1] = b, y[i + 2] = c, y[i + 3] = d;
  }
  for (; i < n; ++i) y[i] = table[x[i]];
}
