// The inner loop of s8_depthwise_planes.c on cores with the DSP extension
// (Cortex-M4, M7): one channel's 3x3 depthwise outputs along the rows of
// its int16 plane, four output pixels per pass with two multiply-accumulates
// per instruction.
//
// void npukit_s8_planes_3x3_t<T>[_clamp]_dsp(const int16_t* plane, uint8_t* out,
//                                            const npukit_s8_planes_channel_t* k);
//
// `plane`: the channel's first plane row (int16 values, padding written
// out, rows `pitch` bytes apart, each row word-aligned), `out`: the first
// output (int8). `k` (s8_depthwise_planes.c, copied to the frame) holds,
// word by word:
//   0..5    per window row i its doubled weights as int16 pairs
//           A_i = (2 w(i, 0), 2 w(i, 1)) and B_i = (2 w(i, 2), 2 w(i, 1))
//   6, 7    the multiplier m and the right shift e (1..22)
//   8, 9    K = (2 zp + 1) << (e - 1), the bytes between output pixels
//   10, 11  the activation bounds, each as four int8 bytes (_clamp only)
//   12      the doubled start, 2 (bias - input zp * the weights' sum)
//   13      the plane's row pitch (bytes)
//   14      the bytes a row's passes read on: 8 * (its outputs / 4)
//   15      the bytes from there to the next row (pitch - word 14)
//   16      the bytes from past a row's last pass output to the next row's
//           first output
//   17      output rows (at least one)
// Output row r reads plane rows r .. r + 2; its pixel o (o = 0 .. L - 1,
// L = 4 * passes + T) reads columns o .. o + 2, and the plane holds L + 2
// columns (L + 3 where T is odd: T = 1 and T = 3 read one past them).
//
// A pass of pixels o .. o + 3 per window row: one LDRD and one LDR of three
// data words P0 = (x0, x1), P1 = (x2, x3), P2 = (x4, x5), one LDRD of A, B:
//   o:     SMLAD(P0, A)  + SMLABB(P1, B)    x0 w0 + x1 w1 + x2 w2
//   o + 1: SMLATB(P0, A) + SMLADX(P1, B)    x1 w0 + x2 w1 + x3 w2
//   o + 2: SMLAD(P1, A)  + SMLABB(P2, B)
//   o + 3: SMLATB(P1, A) + SMLADX(P2, B)
// 8 multiplies for 12 MACs, the first row's starting from the doubled start
// (weights and start doubled: the accumulators come out as 2 acc, the
// operand SMMLAR needs). The output stage is PSCALE's (s8_depthwise_dsp.S):
// SMMLAR with K - [acc < 0], ASR by e, SSAT: TFLite's arithmetic on the
// small-accumulator path; the _clamp variants then clamp the four bytes to
// the activation bounds (SSUB8 and SEL). The last T = L mod 4 pixels of a
// row (T = 1..3: the variant named for it) take one shortened pass.
#if defined(__ARM_FEATURE_DSP)
    .syntax unified
    .thumb
#include "s8_dsp_macros.h"
    .text

    .equ .LPL_FRAME, 80
    .equ .LPL_M, 24
    .equ .LPL_K, 32
    .equ .LPL_BOUNDS, 40
    .equ .LPL_START, 48
    .equ .LPL_PITCH, 52
    .equ .LPL_PASS_BYTES, 56
    .equ .LPL_SKIP, 60
    .equ .LPL_OUT_SKIP, 64
    .equ .LPL_ROWS, 68
    .equ .LPL_ROW_END, 72

    // r0 r1 r2 the three plane rows' read pointers, r3 the doubled start,
    // r4..r7 the accumulators of pixels o .. o + 3, r8 r9 r10 the data words
    // P0 P1 P2, r11 r12 the row's weights A B, lr the output.
    .macro PL_ROW ptr, woff, first, n
    .if \n == 4
    ldrd r8, r9, [\ptr], #8
    ldr r10, [\ptr]
    .else
    ldrd r8, r9, [\ptr]
    .if \n == 3
    ldr r10, [\ptr, #8]
    .endif
    .endif
    ldrd r11, r12, [sp, #\woff]
    .if \first
    smlad r4, r8, r11, r3
    .else
    smlad r4, r8, r11, r4
    .endif
    smlabb r4, r9, r12, r4
    .if \n >= 2
    .if \first
    smlatb r5, r8, r11, r3
    .else
    smlatb r5, r8, r11, r5
    .endif
    smladx r5, r9, r12, r5
    .endif
    .if \n >= 3
    .if \first
    smlad r6, r9, r11, r3
    .else
    smlad r6, r9, r11, r6
    .endif
    smlabb r6, r10, r12, r6
    .endif
    .if \n >= 4
    .if \first
    smlatb r7, r9, r11, r3
    .else
    smlatb r7, r9, r11, r7
    .endif
    smladx r7, r10, r12, r7
    .endif
    .endm

    // Accumulator a requantized to int8 (r8 m, r9 e, r10 K; r11 scratch).
    .macro PL_SCALE a
    add r11, r10, \a, asr #31
    smmlar \a, \a, r8, r11
    .endm

    // The first n accumulators requantized, clamped where `clamp`, and
    // stored `step` (r12) apart from lr; lr moves on by 4 steps where n is 4.
    .macro PL_OUT n, clamp
    ldrd r8, r9, [sp, #.LPL_M]
    ldrd r10, r12, [sp, #.LPL_K]
    PL_SCALE r4
    .if \n >= 2
    PL_SCALE r5
    .endif
    .if \n >= 3
    PL_SCALE r6
    .endif
    .if \n >= 4
    PL_SCALE r7
    .endif
    asr r4, r4, r9
    .if \n >= 2
    asr r5, r5, r9
    .endif
    .if \n >= 3
    asr r6, r6, r9
    .endif
    .if \n >= 4
    asr r7, r7, r9
    .endif
    ssat r4, #8, r4
    .if \n >= 2
    ssat r5, #8, r5
    .endif
    .if \n >= 3
    ssat r6, #8, r6
    .endif
    .if \n >= 4
    ssat r7, #8, r7
    .endif
    .if \clamp
    .if \n >= 2
    bfi r4, r5, #8, #8
    .endif
    .if \n >= 3
    bfi r4, r6, #16, #8
    .endif
    .if \n >= 4
    bfi r4, r7, #24, #8
    .endif
    ldrd r8, r9, [sp, #.LPL_BOUNDS]
    ssub8 r11, r4, r8          // GE where the byte is at least the lower bound
    sel r4, r4, r8
    ssub8 r11, r9, r4          // GE where it is at most the upper bound
    sel r4, r4, r9
    strb r4, [lr]
    .if \n >= 2
    lsr r11, r4, #8
    strb r11, [lr, r12]
    .endif
    .if \n >= 3
    lsr r11, r4, #16
    strb r11, [lr, r12, lsl #1]
    .endif
    .if \n >= 4
    add lr, lr, r12, lsl #1
    lsr r11, r4, #24
    strb r11, [lr, r12]
    add lr, lr, r12, lsl #1
    .endif
    .else
    strb r4, [lr]
    .if \n >= 2
    strb r5, [lr, r12]
    .endif
    .if \n >= 3
    strb r6, [lr, r12, lsl #1]
    .endif
    .if \n >= 4
    add lr, lr, r12, lsl #1
    strb r7, [lr, r12]
    add lr, lr, r12, lsl #1
    .endif
    .endif
    .endm

    .macro PLANES_3X3 name, tail, clamp
    .section .text.\name, "ax", %progbits
    KERNEL_ENTRY \name
    sub sp, sp, #.LPL_FRAME
    ldmia r2!, {r3-r11}
    stmia sp, {r3-r11}
    ldmia r2, {r3-r11}
    add r12, sp, #36
    stmia r12, {r3-r11}
    mov lr, r1
    ldr r12, [sp, #.LPL_PITCH]
    add r1, r0, r12
    add r2, r1, r12
    ldr r3, [sp, #.LPL_START]
.Lrow\@:
    ldr r12, [sp, #.LPL_PASS_BYTES]
    add r12, r0, r12
    str r12, [sp, #.LPL_ROW_END]
    cmp r0, r12
    beq .Ltail\@
.Lpass\@:
    PL_ROW r0, 0, 1, 4
    PL_ROW r1, 8, 0, 4
    PL_ROW r2, 16, 0, 4
    PL_OUT 4, \clamp
    ldr r12, [sp, #.LPL_ROW_END]
    cmp r0, r12
    bne .Lpass\@
.Ltail\@:
    .if \tail
    PL_ROW r0, 0, 1, \tail
    PL_ROW r1, 8, 0, \tail
    PL_ROW r2, 16, 0, \tail
    PL_OUT \tail, \clamp
    .endif
    ldr r12, [sp, #.LPL_SKIP]
    add r0, r0, r12
    add r1, r1, r12
    add r2, r2, r12
    ldr r12, [sp, #.LPL_OUT_SKIP]
    add lr, lr, r12
    ldr r12, [sp, #.LPL_ROWS]
    subs r12, r12, #1
    str r12, [sp, #.LPL_ROWS]
    bne .Lrow\@
    add sp, sp, #.LPL_FRAME
    pop {r4-r11, pc}
    .size \name, . - \name
    .endm

    PLANES_3X3 npukit_s8_planes_3x3_t0_dsp, 0, 0
    PLANES_3X3 npukit_s8_planes_3x3_t1_dsp, 1, 0
    PLANES_3X3 npukit_s8_planes_3x3_t2_dsp, 2, 0
    PLANES_3X3 npukit_s8_planes_3x3_t3_dsp, 3, 0
    PLANES_3X3 npukit_s8_planes_3x3_t0_clamp_dsp, 0, 1
    PLANES_3X3 npukit_s8_planes_3x3_t1_clamp_dsp, 1, 1
    PLANES_3X3 npukit_s8_planes_3x3_t2_clamp_dsp, 2, 1
    PLANES_3X3 npukit_s8_planes_3x3_t3_clamp_dsp, 3, 1
#endif

    .section .note.GNU-stack, "", %progbits
