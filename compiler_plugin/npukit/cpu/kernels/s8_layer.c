// The one entry point the compiled dispatches call (see s8_layer.h).
#include "s8_layer.h"

void npukit_s8_conv(const int32_t* p, size_t input, size_t output, size_t residual);
void npukit_s8_depthwise(const int32_t* p, size_t input, size_t output, size_t residual);

void npukit_s8_layer(size_t params, size_t input, size_t output, size_t residual) {
  const int32_t* p = (const int32_t*)params;
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_DEPTHWISE) {
    npukit_s8_depthwise(p, input, output, residual);
  } else {
    npukit_s8_conv(p, input, output, residual);
  }
}
