// The channel-last 3x3 depthwise kernel's inner loop on cores with the DSP
// extension (Cortex-M4, M7): four neighbouring channels of every output
// pixel of a layer, accumulated and requantized in registers and stored as
// one word. See s8_depthwise.c (channels_last_dsp) for when it runs.
//
// void npukit_s8_quad_3x3_dsp(const int8_t* at, uint8_t* out,
//                             const npukit_s8_quad_3x3_t* q);
//
// `at`: the first input pixel's channel c (the window's top left tap),
// `out`: the first output pixel's channel c; `q` (s8_depthwise.c) holds the
// rest, word by word:
//   0..17   the nine taps' weights, doubled: per tap {2 w(c), 2 w(c + 2)},
//           {2 w(c + 1), 2 w(c + 3)} as int16 pairs
//   18..21  the four channels' doubled starts (2 * (bias - zp * sum w))
//   22..29  per channel its multiplier and its right shift less one (~shift)
//   30      2 * the output zero point + 1
//   31, 32  the activation bounds, each as four int8 bytes
//   33, 34  the bytes between a window's columns (dx) and rows (dy)
//   35      the bytes from a window's last row to the next pixel's window
//   36      the bytes between output pixels of a row
//   37, 38  output columns and rows
//   39, 40  the bytes from past a row's last pixel to the next row's first,
//           input and output
//
// Per pixel and tap: one word of the four channels' inputs, an LDRD of the
// weights, two SXTB16 and four 16x16 multiply-accumulates (doubled
// accumulators, the operand SMMULR needs). Per channel the small path's
// requantization (npukit_s8_scale, s8_output.h): SMMULR, the rounding
// correction, the shift, the zero point and SSAT with the last halving;
// then the four bytes are packed, clamped bytewise to the activation range
// (SSUB8 and SEL) and stored as one word. npukit_s8_quad_3x3_full_dsp: the
// same for the bounds of int8 itself, which SSAT alone keeps.
//
// npukit_s8_quad_3x3_m2_dsp and _m2_full_dsp: a channel multiplier of 2,
// output channels c .. c + 3 reading input channels c / 2 and c / 2 + 1:
// `at` is input channel c / 2, each tap one halfword of the two inputs and
// its weights {2 w(c), 2 w(c + 1)}, {2 w(c + 2), 2 w(c + 3)}.
#if defined(__ARM_FEATURE_DSP)
    .syntax unified
    .thumb
    .text

    // r0 input, r1 output, r2 q, r3..r6 accumulators of channels 0..3, r7
    // r8 one input word's halves, r9 r10 the tap's weights, r11 dx, r12 dy,
    // lr the row's columns left; [sp] the rows left.
    .macro TAP address, w_offset, m2
    .if \m2
    ldrh r7, \address
    .else
    ldr r7, \address
    .endif
    ldrd r9, r10, [r2, #\w_offset]
    sxtb16 r8, r7
    sxtb16 r7, r7, ror #8
    .if \m2
    smlabb r3, r8, r9, r3
    smlabt r4, r8, r9, r4
    smlabb r5, r7, r10, r5
    smlabt r6, r7, r10, r6
    .else
    smlabb r3, r8, r9, r3
    smlatt r5, r8, r9, r5
    smlabb r4, r7, r10, r4
    smlatt r6, r7, r10, r6
    .endif
    .endm

    .macro ROW w0, w1, w2, m2
    TAP "[r0]", \w0, \m2
    TAP "[r0, r11]", \w1, \m2
    TAP "[r0, r11, lsl #1]", \w2, \m2
    .endm

    // Channel a's accumulator scaled down by its multiplier and shift, to
    // the rounded quotient before the zero point.
    .macro SCALE acc, ms_offset
    ldrd r9, r10, [r2, #\ms_offset]
    smmulr \acc, \acc, r9
    add \acc, \acc, \acc, asr #31
    asr \acc, \acc, r10
    .endm

    .macro QUAD_3X3 name, clamp, m2
    .align 2
    .global \name
    .hidden \name
    .type \name, %function
    .thumb_func
\name:
    push {r4-r11, lr}
    sub sp, sp, #4
    ldr r3, [r2, #152]         // rows
    cmp r3, #0
    beq .Lend\@
    str r3, [sp]
    ldrd r11, r12, [r2, #132]  // dx, dy
.Lrow\@:  // a row (by a count of columns: the output's steps may be 0 along a dimension of 1)
    ldr lr, [r2, #148]
    cmp lr, #0
    beq .Lrow_end\@
.Lpixel\@:  // a pixel
    ldrd r3, r4, [r2, #72]
    ldrd r5, r6, [r2, #80]
    ROW 0, 8, 16, \m2
    add r0, r0, r12
    ROW 24, 32, 40, \m2
    add r0, r0, r12
    ROW 48, 56, 64, \m2
    SCALE r3, 88
    SCALE r4, 96
    SCALE r5, 104
    SCALE r6, 112
    ldr r9, [r2, #120]         // 2 zp + 1
    add r3, r3, r9
    ssat r3, #8, r3, asr #1
    add r4, r4, r9
    ssat r4, #8, r4, asr #1
    add r5, r5, r9
    ssat r5, #8, r5, asr #1
    add r6, r6, r9
    ssat r6, #8, r6, asr #1
    bfi r3, r4, #8, #8
    bfi r3, r5, #16, #8
    bfi r3, r6, #24, #8
    .if \clamp
    ldrd r9, r10, [r2, #124]   // the bounds' bytes
    ssub8 r8, r3, r9           // GE where the byte is at least the lower bound
    sel r3, r3, r9
    ssub8 r8, r10, r3          // GE where it is at most the upper bound
    sel r3, r3, r10
    .endif
    str r3, [r1]
    ldrd r9, r10, [r2, #140]   // to the next window, the output pixel step
    add r0, r0, r9
    add r1, r1, r10
    subs lr, lr, #1
    bne .Lpixel\@
.Lrow_end\@:
    ldrd r9, r10, [r2, #156]   // to the next row's first pixel
    add r0, r0, r9
    add r1, r1, r10
    ldr r3, [sp]
    subs r3, r3, #1
    str r3, [sp]
    bne .Lrow\@
.Lend\@:
    add sp, sp, #4
    pop {r4-r11, pc}
    .size \name, . - \name
    .endm

    QUAD_3X3 npukit_s8_quad_3x3_dsp, 1, 0
    // The same for the whole int8 range: no clamp.
    QUAD_3X3 npukit_s8_quad_3x3_full_dsp, 0, 0
    // A channel multiplier of 2.
    QUAD_3X3 npukit_s8_quad_3x3_m2_dsp, 1, 1
    QUAD_3X3 npukit_s8_quad_3x3_m2_full_dsp, 0, 1
#endif

    .section .note.GNU-stack, "", %progbits
