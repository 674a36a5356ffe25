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
#include "s8_dsp_macros.h"
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
    KERNEL_ENTRY \name
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

    // Two neighbouring output pixels of a row per pass (npukit_s8_pair_3x3_dsp
    // and its variants below): pixel A's window at r0, pixel B's one
    // `stride` window columns right of it, so each input column is loaded and
    // split once for both pixels' taps, and the pass's constants (the
    // starts, the multipliers, shifts and zero point, the bounds) are loaded
    // once for both. The quad's constants are copied to the frame
    // (sp-relative loads free the register that held their address), word
    // offsets as pair_3x3_t (s8_depthwise.c):
    //   0..7    the four channels' doubled starts, twice (pixels A and B)
    //   8..25   the nine taps' doubled weights, as in npukit_s8_quad_3x3_dsp
    //   26..37  per channel its multiplier m, its right shift e (1..22) and
    //           K = (2 zp + 1) << (e - 1)
    //   38, 39  the activation bounds, each as four int8 bytes
    //   40      the bytes between a window's rows (dy)
    //   41      the bytes from a window's last row to the next pair's window
    //   42, 43  the next output pixel pair's first byte, the output pixel step
    //   44, 45  the end of the current output row's pairs, the output row step
    //   46, 47  the bytes from past a row's last pair to the next row's first
    //           pair, input and output
    //   48      output rows (at least one; a row holds at least one pair)
    //   49      the bytes between a window's columns (dx)
    //   50      nonzero where the bounds are narrower than int8's
    // r0 input, r1 dx, r2..r5 pixel A's accumulators of channels 0..3,
    // r6..r9 pixel B's, r10 r11 one input word's halves, r12 lr the tap's
    // weights.
    //
    // The output stage is the small path's arithmetic (npukit_s8_scale)
    // rearranged: with h = SMMULR(2 acc, m), ((h - [h < 0]) >> (e - 1) +
    // 2 zp + 1) >> 1 is (h - [h < 0] + K) >> e (adding a multiple of
    // 2^(e - 1) commutes with the floored shift, and two floored shifts are
    // one), and [h < 0] may be [acc < 0]: they differ only where h is 0 and
    // acc negative, where (-1 >> (e - 1) + 2 zp + 1) >> 1 = zp as well. So one
    // SMMLAR adds K - [acc < 0] (one ADD with the accumulator's sign), then
    // ASR by e and SSAT: four instructions per output. |h| <= 2^30 and
    // |K| < 2^29 for e <= 22, so the sum stays within int32.
    .equ .LPAIR_FRAME, 208
    .equ .LP_W, 32
    .equ .LP_MEK, 104
    .equ .LP_BOUNDS, 152
    .equ .LP_DY, 160
    .equ .LP_REWIND, 164
    .equ .LP_OUT, 168
    .equ .LP_ROW_END, 176
    .equ .LP_ROW_IN, 184
    .equ .LP_ROW_OUT, 188
    .equ .LP_ROWS, 192
    .equ .LP_DX, 196
    .equ .LP_CLAMP, 200

    .macro PMACS acc0, acc1, acc2, acc3, m2
    .if \m2
    smlabb \acc0, r11, r12, \acc0
    smlabt \acc1, r11, r12, \acc1
    smlabb \acc2, r10, lr, \acc2
    smlabt \acc3, r10, lr, \acc3
    .else
    smlabb \acc0, r11, r12, \acc0
    smlatt \acc2, r11, r12, \acc2
    smlabb \acc1, r10, lr, \acc1
    smlatt \acc3, r10, lr, \acc3
    .endif
    .endm

    .macro PLOAD address, m2
    .if \m2
    ldrh r10, \address
    .else
    ldr r10, \address
    .endif
    .endm

    // Window column j of row i (counted from pixel A's window): tap (i, j)
    // of pixel A and tap (i, j - stride) of pixel B, where they exist.
    .macro PCOL i, j, stride, m2
    .if \j == 0
    PLOAD "[r0]", \m2
    .elseif \j == 1
    PLOAD "[r0, r1]", \m2
    .elseif \j == 2
    PLOAD "[r0, r1, lsl #1]", \m2
    .elseif \j == 3
    add r10, r0, r1, lsl #1
    PLOAD "[r10, r1]", \m2
    .else
    PLOAD "[r0, r1, lsl #2]", \m2
    .endif
    sxtb16 r11, r10
    sxtb16 r10, r10, ror #8
    .if \j <= 2
    ldrd r12, lr, [sp, #(.LP_W + 8 * (3 * \i + \j))]
    PMACS r2, r3, r4, r5, \m2
    .endif
    .if \j >= \stride
    .if \j - \stride <= 2
    ldrd r12, lr, [sp, #(.LP_W + 8 * (3 * \i + \j - \stride))]
    PMACS r6, r7, r8, r9, \m2
    .endif
    .endif
    .endm

    .macro PROW i, stride, m2
    PCOL \i, 0, \stride, \m2
    PCOL \i, 1, \stride, \m2
    PCOL \i, 2, \stride, \m2
    PCOL \i, 3, \stride, \m2
    .if \stride == 2
    PCOL \i, 4, \stride, \m2
    .endif
    .endm

    // Channel k of both pixels requantized to int8 (r10 m, r11 e, lr K).
    .macro PSCALE a, b, k
    ldrd r10, r11, [sp, #(.LP_MEK + 12 * \k)]
    ldr lr, [sp, #(.LP_MEK + 12 * \k + 8)]
    add r12, lr, \a, asr #31
    smmlar \a, \a, r10, r12
    add r12, lr, \b, asr #31
    smmlar \b, \b, r10, r12
    asr \a, \a, r11
    asr \b, \b, r11
    ssat \a, #8, \a
    ssat \b, #8, \b
    .endm

    // A packed word of four int8 outputs clamped bytewise to the bounds
    // r10 (lower) and r11 (upper).
    .macro PCLAMP a
    ssub8 r12, \a, r10         // GE where the byte is at least the lower bound
    sel \a, \a, r10
    ssub8 r12, r11, \a         // GE where it is at most the upper bound
    sel \a, \a, r11
    .endm

    .macro PAIR_3X3 name, stride, m2
    .section .text.\name, "ax", %progbits
    KERNEL_ENTRY \name
    sub sp, sp, #.LPAIR_FRAME
    mov r12, sp
    .rept 6
    ldmia r1!, {r2-r9}
    stmia r12!, {r2-r9}
    .endr
    ldmia r1!, {r2-r5}
    stmia r12!, {r2-r5}
    ldr r1, [sp, #.LP_DX]
.Lpair\@:
    ldm sp, {r2-r9}
    PROW 0, \stride, \m2
    ldr r10, [sp, #.LP_DY]
    add r0, r0, r10
    PROW 1, \stride, \m2
    ldr r10, [sp, #.LP_DY]
    add r0, r0, r10
    PROW 2, \stride, \m2
    PSCALE r2, r6, 0
    PSCALE r3, r7, 1
    PSCALE r4, r8, 2
    PSCALE r5, r9, 3
    bfi r2, r3, #8, #8
    bfi r2, r4, #16, #8
    bfi r2, r5, #24, #8
    bfi r6, r7, #8, #8
    bfi r6, r8, #16, #8
    bfi r6, r9, #24, #8
    ldr r10, [sp, #.LP_CLAMP]
    cmp r10, #0
    beq .Lstore\@
    ldrd r10, r11, [sp, #.LP_BOUNDS]
    PCLAMP r2
    PCLAMP r6
.Lstore\@:
    ldrd r10, r11, [sp, #.LP_OUT]  // the pair's output, the output pixel step
    str r2, [r10]
    str r6, [r10, r11]
    add r10, r10, r11, lsl #1
    str r10, [sp, #.LP_OUT]
    ldr r11, [sp, #.LP_REWIND]
    add r0, r0, r11
    ldr r11, [sp, #.LP_ROW_END]
    cmp r10, r11
    bne .Lpair\@
    // The next row's first pair.
    ldr r11, [sp, #.LP_ROW_IN]
    add r0, r0, r11
    ldr r11, [sp, #.LP_ROW_OUT]
    add r10, r10, r11
    str r10, [sp, #.LP_OUT]
    ldrd r11, r12, [sp, #.LP_ROW_END]
    add r11, r11, r12
    str r11, [sp, #.LP_ROW_END]
    ldr r11, [sp, #.LP_ROWS]
    subs r11, r11, #1
    str r11, [sp, #.LP_ROWS]
    bne .Lpair\@
    add sp, sp, #.LPAIR_FRAME
    pop {r4-r11, pc}
    .size \name, . - \name
    .endm

    // Pixel B one window column right of A (the input's column step equals
    // the window's: stride 1, dilation 1 and the like) or two (stride 2,
    // dilation 1); channel multipliers 1 and 2.
    PAIR_3X3 npukit_s8_pair_3x3_dsp, 1, 0
    PAIR_3X3 npukit_s8_pair_3x3_s2_dsp, 2, 0
    PAIR_3X3 npukit_s8_pair_3x3_m2_dsp, 1, 1
    PAIR_3X3 npukit_s8_pair_3x3_m2_s2_dsp, 2, 1
#endif

    .section .note.GNU-stack, "", %progbits
