// The matrix-vector products of s8_fully_connected.c on cores with the DSP
// extension (Cortex-M4, M7): four rows (two channel pairs) of a fully
// connected layer at a time against its input, split once into int16.
//
// void npukit_s8_fc_quads_dsp(const int32_t* x, const int8_t* weights,
//                             const int32_t* x_end, const int32_t* bias,
//                             int32_t quads, int32_t* out);
//
// `x` is the input with the zero point subtracted, two words per group of
// four K (halfwords (0, 2) then (1, 3), what SXTB16 and SXTB16 ROR #8 give
// of a weight word), up to `x_end`; the weights are the convolution's int8
// form, [OUT_C / 2][K_PADDED / 4][2][4], one channel pair after the other.
// For each of `quads` channel-pair pairs, out[4q + i] = bias[4q + i] + the
// dot product of row 4q + i with x. Per group of four K: an LDRD of the
// input, an LDRD of each pair's weights, eight SXTB16 and eight SMLAD for
// sixteen multiply-accumulates; two groups per loop iteration, an odd group
// count entering at the second.
//
// void npukit_s8_fc_quads_dsp16(...): the same with the weights widened to
// int16 (NPUKIT_S8_WEIGHTS_INT16: per group both rows' four halves in the
// input's order): two LDRDs of weights per pair and group, no SXTB16.
#if defined(__ARM_FEATURE_DSP)
    .syntax unified
    .thumb
#include "s8_dsp_macros.h"
    .text

    // Frame: [sp] x, [sp, #4] bias, [sp, #8] quads left, [sp, #12] out.
    // r0 x, r1 the first pair's weights, r2 the second's, r3..r6 the four
    // accumulators, r7 r8 the input words, r9 r10 weight words, r11 a
    // sign-extended weight word, r12 x_end, lr scratch.
    .macro FC_ENTRY name
    KERNEL_ENTRY \name
    ldr r4, [sp, #36]          // quads
    ldr r5, [sp, #40]          // out
    sub sp, sp, #16
    str r0, [sp]
    str r3, [sp, #4]
    str r4, [sp, #8]
    str r5, [sp, #12]
    mov r12, r2
    .endm

    // A quad's start: accumulators from the bias, x from its start, the
    // second pair's weights (input bytes << \shift) after the first's;
    // to \second when the group count is odd.
    .macro QUAD_START shift, second
    ldr lr, [sp, #4]
    ldmia lr!, {r3, r4, r5, r6}
    str lr, [sp, #4]
    ldr r0, [sp]
    sub lr, r12, r0            // the input's bytes: 8 per group
    add r2, r1, lr, lsl #\shift
    tst lr, #8
    bne \second
    .endm

    // The quad's sums stored; r1 on to the next quad's first pair (the
    // second pair's weights end where it starts), then back to \loop.
    .macro QUAD_END name, loop
    mov r1, r2
    ldr lr, [sp, #12]
    stmia lr!, {r3, r4, r5, r6}
    str lr, [sp, #12]
    ldr lr, [sp, #8]
    subs lr, lr, #1
    str lr, [sp, #8]
    bne \loop
    add sp, sp, #16
    pop {r4-r11, pc}
    .size \name, . - \name
    .endm

    // One pair's group of int8 weights at \w into accumulators \a0 \a1.
    .macro PAIR8 w, a0, a1
    ldrd r9, r10, [\w], #8
    sxtb16 r11, r9
    smlad \a0, r11, r7, \a0
    sxtb16 r9, r9, ror #8
    smlad \a0, r9, r8, \a0
    sxtb16 r11, r10
    smlad \a1, r11, r7, \a1
    sxtb16 r10, r10, ror #8
    smlad \a1, r10, r8, \a1
    .endm

    .macro GROUP8
    ldrd r7, r8, [r0], #8
    PAIR8 r1, r3, r4
    PAIR8 r2, r5, r6
    .endm

    // One row's group of int16 weights at \w into accumulator \a.
    .macro ROW16 w, a
    ldrd r9, r10, [\w], #8
    smlad \a, r9, r7, \a
    smlad \a, r10, r8, \a
    .endm

    .macro GROUP16
    ldrd r7, r8, [r0], #8
    ROW16 r1, r3
    ROW16 r1, r4
    ROW16 r2, r5
    ROW16 r2, r6
    .endm

    FC_ENTRY npukit_s8_fc_quads_dsp
1:  QUAD_START 0, 3f            // a pair's int8 weights: as many bytes as the input's words (2 * K_PADDED)
2:  GROUP8
3:  GROUP8
    cmp r0, r12
    bne 2b
    QUAD_END npukit_s8_fc_quads_dsp, 1b

    FC_ENTRY npukit_s8_fc_quads_dsp16
1:  QUAD_START 1, 3f            // int16: twice as many
2:  GROUP16
3:  GROUP16
    cmp r0, r12
    bne 2b
    QUAD_END npukit_s8_fc_quads_dsp16, 1b

#endif
