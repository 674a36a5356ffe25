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
#endif

    .section .note.GNU-stack, "", %progbits
