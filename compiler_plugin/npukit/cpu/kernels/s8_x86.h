// Which x86 vector kernels a build has (s8_conv_x86.c, s8_depthwise_x86.c,
// s8_depthwise_vbmi.c, s8_accumulators_x86.c, s8_conv_lanes_x86.c,
// s8_depthwise_lanes_x86.c;
// their shared code is s8_x86_vector.h).
//
// NPUKIT_S8_X86 is 512 with AVX-512 VNNI (VL, BW), 256 with AVX2, and 0 on
// every other target, where only the portable kernels are built.
#ifndef NPUKIT_CPU_KERNELS_S8_X86_H_
#define NPUKIT_CPU_KERNELS_S8_X86_H_

#include "s8_layer.h"

#if defined(__x86_64__) && defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__)
#define NPUKIT_S8_X86 512
#elif defined(__x86_64__) && defined(__AVX2__)
#define NPUKIT_S8_X86 256
#else
#define NPUKIT_S8_X86 0
#endif

// Whether the block carries the weight sums every x86 convolution and
// depthwise kernel reads (NPUKIT_S8_W_WEIGHT_SUM_AT): without them the
// portable kernels run the layer.
static inline int npukit_s8_x86_tables(const int32_t* p) { return p[NPUKIT_S8_W_WEIGHT_SUM_AT] != 0; }

// Both return 0 when they leave the layer to the portable kernel.
int npukit_s8_conv_x86(const int32_t* p, size_t input, size_t output, size_t residual);
int npukit_s8_depthwise_x86(const int32_t* p, size_t input, size_t output, size_t residual);
// With AVX-512 VBMI only (s8_depthwise_vbmi.c); npukit_s8_depthwise_x86 tries it first.
int npukit_s8_depthwise_vbmi(const int32_t* p, size_t input, size_t output, size_t residual);
int npukit_s8_average_x86(const int32_t* p, size_t input, size_t output, size_t residual);
int npukit_s8_residual_int8_x86(const int32_t* p, size_t residual, size_t output);
// Channel-last layers with NPUKIT_S8_WEIGHTS_LANES weights (s8_lanes.h): output channels as lanes.
int npukit_s8_conv_lanes_x86(const int32_t* p, size_t input, size_t output, size_t residual);
int npukit_s8_depthwise_lanes_x86(const int32_t* p, size_t input, size_t output, size_t residual);

#endif  // NPUKIT_CPU_KERNELS_S8_X86_H_
