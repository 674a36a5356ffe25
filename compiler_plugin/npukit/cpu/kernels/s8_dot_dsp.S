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
// weights, four SXTB16 and eight SMLAD for sixteen multiply-accumulates; four
// groups per loop iteration.
//
// void npukit_s8_dot_pairs_dsp16(const int16_t* columns, const int16_t* weights,
//                                int32_t k_padded, const int32_t* bias,
//                                int32_t pairs, int32_t* out);
//
// The same with weights already widened to int16 (NPUKIT_S8_WEIGHTS_INT16:
// per group both channels' four halves in the columns' order): per group of
// four K one LDM of the columns, one of the weights and eight SMLAD; four
// groups per loop iteration.
#if defined(__ARM_FEATURE_DSP)
    .syntax unified
    .thumb
    .text

    // What both functions share. DOT_ENTRY: the entry, with a frame of
    // \frame bytes whose [sp] holds the columns, [sp, #8] the end of out,
    // [sp, #12] the next bias and [sp, #16] the next out (r2, k_padded, is
    // left to the function). PAIR_START: a channel pair's accumulators from
    // its bias, the columns from their start. PAIR_END: the pair's four
    // sums stored, then on to the pair at \loop or the return.
    .macro DOT_ENTRY name, frame
    .align 2
    .global \name
    .hidden \name
    .type \name, %function
    .thumb_func
\name:
    push {r4-r11, lr}
    ldr r4, [sp, #36]          // pairs
    ldr r5, [sp, #40]          // out
    sub sp, sp, #\frame
    str r0, [sp]
    add r4, r5, r4, lsl #4
    str r4, [sp, #8]
    str r3, [sp, #12]
    str r5, [sp, #16]
    .endm

    .macro PAIR_START
    ldr lr, [sp, #12]
    ldrd r3, r5, [lr], #8
    str lr, [sp, #12]
    mov r4, r3
    mov r6, r5
    ldr r0, [sp]
    .endm

    .macro PAIR_END name, frame, loop
    ldr lr, [sp, #16]
    stmia lr!, {r3, r4, r5, r6}
    str lr, [sp, #16]
    ldr r0, [sp, #8]
    cmp lr, r0
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
    // Frame: [sp, #4] weight bytes per pair (8 per group).
    lsls r2, r2, #1
    str r2, [sp, #4]
1:  // one channel pair
    PAIR_START
    ldr lr, [sp, #4]
    add r2, r1, lr             // the end of the pair's weights
    lsls lr, lr, #28           // N: an odd group, C: two more (GROUP keeps the flags)
    bpl 2f
    GROUP
2:  bcc 3f
    GROUP
    GROUP
3:  cmp r1, r2
    beq 5f
4:  GROUP
    GROUP
    GROUP
    GROUP
    cmp r1, r2
    bne 4b
5:  PAIR_END npukit_s8_dot_pairs_dsp, 24, 1b

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
    // Frame: [sp, #4] groups, [sp, #20] weight bytes of the groups taken
    // four at a time, [sp, #24] where this pair's four-at-a-time groups end.
    lsrs r2, r2, #2
    str r2, [sp, #4]
    bic r2, r2, #3
    lsls r2, r2, #4
    str r2, [sp, #20]
1:  // one channel pair
    PAIR_START
    ldr r2, [sp, #4]
    lsls r2, r2, #31           // N: an odd group, C: two more (GROUP16 keeps the flags)
    bpl 2f
    GROUP16
2:  bcc 3f
    GROUP16
    GROUP16
3:  ldr r2, [sp, #20]
    add r2, r2, r1
    str r2, [sp, #24]
    cmp r1, r2
    beq 5f
4:  GROUP16
    GROUP16
    GROUP16
    GROUP16
    ldr r2, [sp, #24]
    cmp r1, r2
    bne 4b
5:  PAIR_END npukit_s8_dot_pairs_dsp16, 32, 1b
#endif

    .section .note.GNU-stack, "", %progbits
