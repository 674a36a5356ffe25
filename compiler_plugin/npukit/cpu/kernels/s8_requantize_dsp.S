// The convolution's output stage for channel-last outputs on cores with the
// DSP extension (Cortex-M4, M7): npukit_s8_requantize_pairs (s8_output.h)
// where the channels of a pixel are consecutive bytes.
//
// void npukit_s8_requantize_pairs_dsp(const int32_t* acc, int32_t n,
//                                     const int32_t* multiplier,
//                                     const int32_t* shift, int32_t zp,
//                                     int32_t bounds, uint8_t* at0,
//                                     uint8_t* at1);
//
// Accumulators `acc` as [n][2] (pixel 0, pixel 1) of n consecutive channels
// (n even), the channels' multipliers and shifts (-31..-1), the output zero
// point, the activation bounds as bytes (`bounds`: the lower in bits 0..7,
// the upper in bits 8..15), and the pixels' first output bytes; channel c
// goes to at0[c] and at1[c]. Per output the small path's requantization
// (npukit_s8_scale, SSAT to int8); two channels of both pixels at a time,
// packed into one word, clamped bytewise (SSUB8 and SEL) and stored as a
// halfword per pixel. npukit_s8_requantize_pairs_full_dsp: the same with
// the bounds of int8 itself, which SSAT alone keeps.
#if defined(__ARM_FEATURE_DSP)
    .syntax unified
    .thumb
#include "s8_dsp_macros.h"
    .text

    // One doubled accumulator scaled: r11 the multiplier, r12 the shift
    // less one, r6 2 zp + 1.
    .macro SCALE acc
    lsls \acc, \acc, #1
    smmulr \acc, \acc, r11
    add \acc, \acc, \acc, asr #31
    asr \acc, \acc, r12
    add \acc, \acc, r6
    ssat \acc, #8, \acc, asr #1
    .endm

    .macro REQUANTIZE_PAIRS name, clamp
    KERNEL_ENTRY \name
    sub sp, sp, #8
    // r0 acc, r1 multipliers, r2 shifts, r3 at0, r4 at1 - at0, r5 the end
    // of acc, r6 2 zp + 1; [sp] the lower bound's bytes, [sp, #4] the upper's
    add r5, r0, r1, lsl #3
    mov r1, r2
    mov r2, r3
    ldrd r6, r7, [sp, #44]     // zp, bounds
    ldrd r3, r4, [sp, #52]     // at0, at1
    sub r4, r4, r3
    lsls r6, r6, #1
    adds r6, r6, #1
    uxtb r8, r7
    orr r8, r8, r8, lsl #8
    orr r8, r8, r8, lsl #16
    ubfx r9, r7, #8, #8
    orr r9, r9, r9, lsl #8
    orr r9, r9, r9, lsl #16
    strd r8, r9, [sp]
    cmp r0, r5
    beq .Ldone\@
.Lloop\@:
    ldm r0!, {r7, r8, r9, r10}  // channel 0: pixels 0, 1; channel 1: pixels 0, 1
    ldr r11, [r1], #4
    ldr r12, [r2], #4
    mvn r12, r12
    SCALE r7
    SCALE r8
    ldr r11, [r1], #4
    ldr r12, [r2], #4
    mvn r12, r12
    SCALE r9
    SCALE r10
    bfi r7, r9, #8, #8         // pixel 0's two channels, then pixel 1's
    bfi r7, r8, #16, #8
    bfi r7, r10, #24, #8
    .if \clamp
    ldrd r11, r12, [sp]
    ssub8 lr, r7, r11          // GE where the byte is at least the lower bound
    sel r7, r7, r11
    ssub8 lr, r12, r7          // GE where it is at most the upper bound
    sel r7, r7, r12
    .endif
    lsrs lr, r7, #16
    strh lr, [r3, r4]
    strh r7, [r3], #2
    cmp r0, r5
    bne .Lloop\@
.Ldone\@:
    add sp, sp, #8
    pop {r4-r11, pc}
    .size \name, . - \name
    .endm

    REQUANTIZE_PAIRS npukit_s8_requantize_pairs_dsp, 1
    // The same for the whole int8 range (bounds 0x7f80): no clamp.
    REQUANTIZE_PAIRS npukit_s8_requantize_pairs_full_dsp, 0
#endif

    .section .note.GNU-stack, "", %progbits
