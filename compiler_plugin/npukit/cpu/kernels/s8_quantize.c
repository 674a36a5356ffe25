// TFLite's QUANTIZE of a float32 tensor to int8 (NPUKIT_S8_QUANTIZE, npukit/layer_recognition/float_quantize.py):
// OUT_W values, out = clamp(zp + round(x / scale), ACT_MIN, ACT_MAX) with scale the binary32 bit pattern
// FLOAT_OUT_SCALE and zp OUT_ZP. The division is in binary32 and the rounding half away from zero; a quotient
// that does not fit int32 (NaN, an infinity, |x / scale| >= 2^31) gives INT32_MIN, to which zp is added with
// int32 wrap-around, as TFLite's conversion on x86 and the TFLite frontend's dispatch do. These are the
// dispatch's own binary32 operations in its order (the division, the truncation, the fraction; no
// reciprocal, no fused multiply-add: the kernels build with -ffp-contract=off), except that the fraction f
// is compared with +-0.5 as the truncation of 2 f (exact: 1 where f >= 0.5, -1 where f <= -0.5, else 0),
// so the kernel gives what the dispatch gives on every input; the recogniser checks that the dispatch is
// this one.
#include "s8_layer.h"

void npukit_s8_quantize(const int32_t* p, size_t input, size_t output);

void npukit_s8_quantize(const int32_t* p, size_t input, size_t output) {
  const float* x = (const float*)(const void*)((const uint8_t*)input + p[NPUKIT_S8_W_IN_OFFSET]);
  int8_t* out = (int8_t*)output + p[NPUKIT_S8_W_OUT_OFFSET];
  union {
    int32_t bits;
    float value;
  } scale = {p[NPUKIT_S8_W_FLOAT_OUT_SCALE]};
  const uint32_t zp = (uint32_t)p[NPUKIT_S8_W_OUT_ZP];
  const int32_t lo = p[NPUKIT_S8_W_ACT_MIN], hi = p[NPUKIT_S8_W_ACT_MAX], n = p[NPUKIT_S8_W_OUT_W];
  for (int32_t i = 0; i < n; ++i) {
    const float r = x[i] / scale.value;
    const int32_t inside = __builtin_fabsf(r) < 2147483648.0f;
    const float safe = inside ? r : 0.0f;
    const int32_t whole = (int32_t)safe;
    const float fraction = safe - (float)whole;
    const int32_t q = inside ? whole + (int32_t)(fraction * 2.0f) : INT32_MIN;
    const int32_t v = (int32_t)((uint32_t)q + zp);
    out[i] = (int8_t)(v < lo ? lo : v > hi ? hi : v);
  }
}
