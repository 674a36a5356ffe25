// The convolution's few-reduction kernel on cores with the DSP extension
// (Cortex-M4, M7): one output channel of four output pixels at a time, its
// dot products and output stage in registers (s8_conv.c, conv_four_dsp).
//
// void npukit_s8_conv_four_dsp(const int32_t* columns, uint8_t* out,
//                              const npukit_s8_four_table_t* t, int32_t quads);
//
// `quads` (>= 1) groups of four output pixels of one channel. The columns
// of a group are [G][2][4] words: per group of four K indices, the four
// pixels' (k0, k2) halfword pairs, then their (k1, k3) pairs (input less its
// zero point, int16); the groups of four pixels follow one another. The table
// (s8_conv.c, npukit_s8_four_table_t) holds the channel's doubled bias four
// times, its multiplier m (non-negative), e = -shift - 1, c = (2 zp + 1) << e,
// the output's bytes from one pixel to the next (s), the activation bounds in
// every byte, G (1..16) and the channel's doubled weights as int16 pairs in
// the columns' order, group g of G in slot 16 - G + g: the unrolled groups
// below read slot j at a fixed offset and are entered G groups before their
// end. Per K group of four pixels: one LDRD of the weights, two LDM of the
// columns and eight SMLAD (sixteen multiply-accumulates). The sums come out
// doubled (the weights are), the doubled accumulators a2 the output stage of
// npukit_s8_conv_few_dsp (s8_dot_dsp.S) takes:
//   ssat8(((c + (a2 >> 31)) + rounded high word of a2 * m) >> e >> 1)
// Output pixel i of a group goes to out + i * s; the next group starts at
// out + 4 * s. npukit_s8_conv_four_dsp clamps to the table's bounds (the
// four outputs packed into a word, SSUB8 and SEL); _full keeps int8's
// range, which SSAT alone gives.
#if defined(__ARM_FEATURE_DSP)
    .syntax unified
    .thumb
#include "s8_dsp_macros.h"
    .text

    // r0 columns, r1 out, r2 table, r3 the groups of pixels left,
    // r4..r7 the four pixels' accumulators, r8..r11 column words,
    // r12 lr the weight pairs of one group of K.
    .macro GROUP4 slot
    ldrd r12, lr, [r2, #(48 + 8 * \slot)]
    ldm r0!, {r8, r9, r10, r11}
    smlad r4, r8, r12, r4
    smlad r5, r9, r12, r5
    smlad r6, r10, r12, r6
    smlad r7, r11, r12, r7
    ldm r0!, {r8, r9, r10, r11}
    smlad r4, r8, lr, r4
    smlad r5, r9, lr, r5
    smlad r6, r10, lr, r6
    smlad r7, r11, lr, r7
    .endm

    .macro CONV_FOUR name, clamp
    KERNEL_ENTRY \name
    sub sp, sp, #4
    // The entry into the unrolled groups: 16 - G groups skipped.
    ldr r4, [r2, #40]          // G
    rsb r4, r4, #16
    adr.w r5, 40f
    adr.w r6, 41f
    sub r6, r6, r5             // the bytes of one group
    mla r5, r4, r6, r5
    orr r5, r5, #1             // a Thumb address
    str r5, [sp]
1:  // four pixels
    ldm r2, {r4, r5, r6, r7}   // the doubled bias
    ldr pc, [sp]
40: GROUP4 0
41: GROUP4 1
    GROUP4 2
    GROUP4 3
    GROUP4 4
    GROUP4 5
    GROUP4 6
    GROUP4 7
    GROUP4 8
    GROUP4 9
    GROUP4 10
    GROUP4 11
    GROUP4 12
    GROUP4 13
    GROUP4 14
    GROUP4 15
    ldrd r8, r9, [r2, #16]     // m, e
    ldrd r10, r11, [r2, #24]   // c, s
    // r8 m, r9 e, r10 c (s8_dsp_macros.h)
    SCALE_TO_INT8 r4, r8, r9, r10, r12
    SCALE_TO_INT8 r5, r8, r9, r10, r12
    SCALE_TO_INT8 r6, r8, r9, r10, r12
    SCALE_TO_INT8 r7, r8, r9, r10, r12
    .if \clamp
    bfi r4, r5, #8, #8         // the four pixels' outputs in one word
    bfi r4, r6, #16, #8
    bfi r4, r7, #24, #8
    ldrd r8, r9, [r2, #32]     // the bounds
    ssub8 r12, r4, r8          // GE where the byte is at least the lower bound
    sel r4, r4, r8
    ssub8 r12, r9, r4          // GE where it is at most the upper bound
    sel r4, r4, r9
    strb r4, [r1]
    lsrs r5, r4, #8
    strb r5, [r1, r11]
    lsrs r6, r4, #16
    strb r6, [r1, r11, lsl #1]
    add r1, r1, r11, lsl #1
    lsrs r7, r4, #24
    strb r7, [r1, r11]
    .else
    strb r4, [r1]
    strb r5, [r1, r11]
    strb r6, [r1, r11, lsl #1]
    add r1, r1, r11, lsl #1
    strb r7, [r1, r11]
    .endif
    add r1, r1, r11, lsl #1
    subs r3, r3, #1
    bne 1b
    add sp, sp, #4
    pop {r4-r11, pc}
    .size \name, . - \name
    .endm

    CONV_FOUR npukit_s8_conv_four_dsp, 1
    CONV_FOUR npukit_s8_conv_four_full_dsp, 0
#endif

    .section .note.GNU-stack, "", %progbits
