// The convolution kernel's dot products on cores with the DSP extension
// (Cortex-M4, M7): see s8_conv.c for the column and weight layouts.
//
// void npukit_s8_dot_pairs_dsp(const int16_t* columns, const int8_t* weights,
//                              int32_t k_padded, const int32_t* bias,
//                              int32_t pairs, int32_t* out);
//
// For each of `pairs` channel pairs (weights [K_PADDED / 4][2][4] per pair,
// one pair after the other), out[2c + i][j] = bias[2c + i] + the dot product
// of channel 2c + i's weights with column j, over k_padded (a multiple of 4).
// Per group of four K: an LDM of both columns' words, an LDRD of the
// weights, four SXTB16 and eight SMLAD for sixteen multiply-accumulates; eight
// groups per loop iteration, the first entered where the groups left over
// by eight begin.
//
// void npukit_s8_dot_pairs_dsp16(const int16_t* columns, const int16_t* weights,
//                                int32_t k_padded, const int32_t* bias,
//                                int32_t pairs, int32_t* out);
//
// The same with weights already widened to int16 (NPUKIT_S8_WEIGHTS_INT16:
// per group both channels' four halves in the columns' order): per group of
// four K one LDM of the columns, one of the weights and eight SMLAD; eight
// groups per loop iteration, entered the same way.
#if defined(__ARM_FEATURE_DSP)
    .syntax unified
    .thumb
#include "s8_dsp_macros.h"
    .text

    // What both functions share. DOT_ENTRY: the entry, with a frame of
    // \frame bytes whose [sp] holds the columns, [sp, #8] the end of out,
    // [sp, #12] the next bias,
    // [sp, #16] the next out and [sp, #20] where the loop over the groups
    // is entered (r7 the bias, r8 out). ENTER: that address for \groups
    // groups (a register, overwritten): the loop takes eight groups at a
    // time (its first two at \first and \second), so its first pass
    // skips (-groups) & 7 of them (none when none is left over), and each
    // pair needs no test of the rest. PAIR_START: a channel
    // pair's accumulators from its bias, the columns from their start (the
    // loop over the groups ends at the columns' end, the same for every
    // pair; the weights run on from one pair to the next). PAIR_END: the pair's four sums stored, then on to the next pair at
    // \loop or the return.
    .macro DOT_ENTRY name, frame
    KERNEL_ENTRY \name
    ldr r4, [sp, #36]          // pairs
    ldr r5, [sp, #40]          // out
    sub sp, sp, #\frame
    str r0, [sp]
    add r4, r5, r4, lsl #4
    str r4, [sp, #8]
    mov r7, r3
    mov r8, r5
    .endm

    .macro ENTER groups, first, second
    rsb \groups, \groups, #0
    and \groups, \groups, #7     // the groups the first pass skips
    adr.w lr, \first
    adr.w r11, \second
    sub r11, r11, lr           // the bytes of one group
    mla lr, \groups, r11, lr
    orr lr, lr, #1             // a Thumb address
    str lr, [sp, #20]
    .endm

    .macro PAIR_START
    ldrd r3, r5, [r7], #8
    mov r4, r3
    mov r6, r5
    strd r7, r8, [sp, #12]
    ldr r0, [sp]
    .endm

    .macro PAIR_END name, frame, loop
    ldrd r7, r8, [sp, #12]
    stmia r8!, {r3, r4, r5, r6}
    ldr r0, [sp, #8]
    cmp r8, r0
    bne \loop
    add sp, sp, #\frame
    pop {r4-r11, pc}
    .size \name, . - \name
    .endm

    // r0 columns, r1 weights, r3..r6 accumulators a00 a01 a10 a11,
    // r7..r10 column words of pixel 0 (r7, r8) and pixel 1 (r9, r10),
    // r11 r12 the weight words of the pair, lr one sign-extended half.
    .macro GROUP
    ldm r0!, {r7, r8, r9, r10}
    ldrd r11, r12, [r1], #8
    sxtb16 lr, r11
    smlad r3, r7, lr, r3
    smlad r4, r9, lr, r4
    sxtb16 r11, r11, ror #8
    smlad r3, r8, r11, r3
    smlad r4, r10, r11, r4
    sxtb16 lr, r12
    smlad r5, r7, lr, r5
    smlad r6, r9, lr, r6
    sxtb16 r12, r12, ror #8
    smlad r5, r8, r12, r5
    smlad r6, r10, r12, r6
    .endm

    DOT_ENTRY npukit_s8_dot_pairs_dsp, 24
    lsr r12, r2, #2            // groups
    add r2, r0, r2, lsl #2     // the end of the columns (16 bytes per group), kept in r2
    ENTER r12, 40f, 41f
1:  // one channel pair
    PAIR_START
    ldr pc, [sp, #20]
40: GROUP
41: GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    cmp r0, r2
    bne 40b
    PAIR_END npukit_s8_dot_pairs_dsp, 24, 1b

    // r0 columns, r1 weights, r3..r6 accumulators a00 a01 a10 a11, r7..r10
    // column words of pixel 0 (r7, r8) and pixel 1 (r9, r10), r2 r11 the
    // first channel's weight words, r12 lr the second's.
    .macro GROUP16
    ldm r0!, {r7, r8, r9, r10}
    ldm r1!, {r2, r11, r12, lr}
    smlad r3, r7, r2, r3
    smlad r4, r9, r2, r4
    smlad r5, r7, r12, r5
    smlad r6, r9, r12, r6
    smlad r3, r8, r11, r3
    smlad r4, r10, r11, r4
    smlad r5, r8, lr, r5
    smlad r6, r10, lr, r6
    .endm

    DOT_ENTRY npukit_s8_dot_pairs_dsp16, 32
    // Frame: [sp, #24] the end of the columns (r2 holds weights in the loop).
    lsr r12, r2, #2            // groups
    add r2, r0, r2, lsl #2     // the end of the columns (16 bytes per group)
    str r2, [sp, #24]
    ENTER r12, 40f, 41f
1:  // one channel pair
    PAIR_START
    ldr pc, [sp, #20]
40: GROUP16
41: GROUP16
    GROUP16
    GROUP16
    GROUP16
    GROUP16
    GROUP16
    GROUP16
    ldr r2, [sp, #24]
    cmp r0, r2
    bne 40b
    PAIR_END npukit_s8_dot_pairs_dsp16, 32, 1b

    // void npukit_s8_conv_few_dsp(int16_t* columns, const int8_t* weights,
    //                             const int32_t* table, const npukit_s8_few_args_t* args);
    //
    // A convolution's outputs for one pixel pair where the reduction is at
    // most twelve groups of four (K_PADDED <= 48: few input channels): per
    // channel pair its dot products (the loop above, fully unrolled and
    // entered where args' groups begin) and their output stage in registers,
    // nothing stored but the outputs. The columns come doubled (2 (x - zp),
    // |2 (x - zp)| <= 510: the gathers of s8_conv.c write them so for this
    // kernel at no cost), so the sums start from doubled biases and end as
    // the doubled accumulators a2 = 2a (|a| < 2^30) the output stage takes. `table` holds per channel pair eight words {2 bias0,
    // 2 bias1, m0, m1, e0, e1, c0, c1} (s8_conv.c, conv_few_dsp): the
    // multipliers (non-negative), e = -shift - 1 and c = (2 zp + 1) << e.
    // Per output:
    //   ssat8(((c + (a2 >> 31)) + rounded high word of a2 * m) >> e >> 1)
    // which is npukit_s8_scale's ((h - [h < 0]) >> e + 2 zp + 1) >> 1 with h
    // that high word: SMMLAR adds c - [a2 < 0] to it, and [a2 < 0] equals
    // [h < 0] wherever h is not 0 (m >= 0), while for h = 0 both give zp. c
    // being a multiple of 2^e, the shift moves it out whole as 2 zp + 1
    // (exact while |c| + 2^30 < 2^31, which the caller checks). The four
    // outputs of a pair are packed into a word, clamped bytewise to args'
    // bounds (SSUB8 and SEL: _upper only the upper bound, _full none) and
    // stored as a halfword per pixel.
    //
    // args: [0] groups (1..12; _one: 0..11 and a last one of one value),
    // [4] channel pairs (>= 1), [8] pixel 0's first
    // output byte, [12] pixel 1's less pixel 0's, [16] the lower bound in
    // every byte, [20] the upper bound in every byte.
    // Frame: [sp] columns, [sp, #4] the loop's entry, [sp, #8] the next
    // output, [sp, #12] pixel 1's offset, [sp, #16] the end of the outputs,
    // [sp, #20] the lower bounds, [sp, #24] the upper ones.

    // As GROUP16 with the table pointer kept in r2: each channel's words
    // loaded on their own.
    .macro GROUP16_FEW
    ldm r0!, {r7, r8, r9, r10}
    ldrd r11, r12, [r1], #8
    smlad r3, r7, r11, r3
    smlad r4, r9, r11, r4
    smlad r3, r8, r12, r3
    smlad r4, r10, r12, r4
    ldrd r11, r12, [r1], #8
    smlad r5, r7, r11, r5
    smlad r6, r9, r11, r6
    smlad r5, r8, r12, r5
    smlad r6, r10, r12, r6
    .endm

    // A last group holding one value of K (K = 4 n + 1: a 3x3 or 5x5 window
    // of one channel), its other three weights zero: only the columns' first
    // words (K index 4 n and a padding index) and each channel's first
    // weights, nine instructions for the group's fourteen.
    .macro GROUP_ONE
    ldr r7, [r0]
    ldr r9, [r0, #8]
    ldrd r11, r12, [r1], #8
    sxtb16 lr, r11
    smlad r3, r7, lr, r3
    smlad r4, r9, lr, r4
    sxtb16 lr, r12
    smlad r5, r7, lr, r5
    smlad r6, r9, lr, r6
    .endm

    // clamp: 0 none, 1 the upper bound, 2 both; one: the full groups (args'
    // groups, 0..11) are followed by a group of one value (GROUP_ONE).
    .macro CONV_FEW name, wide, clamp, one=0
    KERNEL_ENTRY \name
    sub sp, sp, #32
    ldm r3, {r4, r5, r6, r7, r8, r9}
    str r0, [sp]
    rsb r4, r4, #12            // the groups the entry skips
    adr.w lr, 40f
    adr.w r11, 41f
    sub r11, r11, lr           // the bytes of one group
    mla lr, r4, r11, lr
    orr lr, lr, #1             // a Thumb address
    str lr, [sp, #4]
    add r5, r6, r5, lsl #1     // the end of pixel 0's outputs (2 per pair)
    strd r6, r7, [sp, #8]
    str r5, [sp, #16]
    strd r8, r9, [sp, #20]
1:  // one channel pair
    ldrd r3, r5, [r2], #8
    mov r4, r3
    mov r6, r5
    ldr r0, [sp]
    ldr pc, [sp, #4]
    .if \wide
40: GROUP16_FEW
41: GROUP16_FEW
    GROUP16_FEW
    GROUP16_FEW
    GROUP16_FEW
    GROUP16_FEW
    GROUP16_FEW
    GROUP16_FEW
    GROUP16_FEW
    GROUP16_FEW
    GROUP16_FEW
    GROUP16_FEW
    .else
40: GROUP
41: GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    GROUP
    .endif
    .if \one
    GROUP_ONE
    .endif
    ldm r2!, {r7, r8, r9, r10, r11, r12}  // m0 m1 e0 e1 c0 c1
    SCALE_TO_INT8 r3, r7, r9, r11, lr
    SCALE_TO_INT8 r4, r7, r9, r11, lr
    SCALE_TO_INT8 r5, r8, r10, r12, lr
    SCALE_TO_INT8 r6, r8, r10, r12, lr
    bfi r3, r5, #8, #8         // pixel 0's two channels, then pixel 1's
    bfi r3, r4, #16, #8
    bfi r3, r6, #24, #8
    .if \clamp == 2
    ldr r11, [sp, #20]
    ssub8 lr, r3, r11          // GE where the byte is at least the lower bound
    sel r3, r3, r11
    .endif
    .if \clamp
    ldr r12, [sp, #24]
    ssub8 lr, r12, r3          // GE where it is at most the upper bound
    sel r3, r3, r12
    .endif
    ldrd r7, r8, [sp, #8]
    lsrs lr, r3, #16
    strh lr, [r7, r8]
    strh r3, [r7], #2
    ldr r9, [sp, #16]
    str r7, [sp, #8]
    cmp r7, r9
    bne 1b
    add sp, sp, #32
    pop {r4-r11, pc}
    .size \name, . - \name
    .endm

    CONV_FEW npukit_s8_conv_few_dsp, 0, 2
    CONV_FEW npukit_s8_conv_few_upper_dsp, 0, 1
    CONV_FEW npukit_s8_conv_few_full_dsp, 0, 0
    CONV_FEW npukit_s8_conv_few_dsp16, 1, 2
    CONV_FEW npukit_s8_conv_few_full_dsp16, 1, 0
    CONV_FEW npukit_s8_conv_few_one_dsp, 0, 2, 1
    CONV_FEW npukit_s8_conv_few_upper_one_dsp, 0, 1, 1
    CONV_FEW npukit_s8_conv_few_full_one_dsp, 0, 0, 1
#endif

    .section .note.GNU-stack, "", %progbits
