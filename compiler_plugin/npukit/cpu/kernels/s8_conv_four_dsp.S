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
// every byte, G (1..32) and the channel's doubled weights as int16 pairs in
// the columns' order, group g of G in slot 32 - G + g: the unrolled groups
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
//
// npukit_s8_conv_four_add_dsp and _add_full_dsp take a larger table
// (s8_conv.c, npukit_s8_four_add_table_t: the same words, then the ADD's)
// and add TFLite's int8 ADD of a residual tensor to the four outputs
// (NPUKIT_S8_OUT_ADD on the add_small path, s8_output.h): each output v
// (the layer's activation clamp folded into the table below) and the
// residual's int8 r at its pixel give
//   a2 = conv2[v] + 2 res[r]
// (conv2: npukit_s8_add_table's operands of the layer's output, doubled,
// with the clamp folded in; res: the residual's operands; both indexed by
// the int8 value, their sum below 2^29), and the ADD's output
//   ssat8(((c' + (a2 >> 31)) + rounded high word of a2 * m') >> e' >> 1)
// with the ADD's multiplier m' (non-negative), e' = -out_shift - 1 (0..30)
// and c' = (2 out_zp + 1) << e', the step of the layer's own output stage
// above; the clamp (add: the ADD's activation bounds in the table's bounds
// words) as above. The residual of the group's pixel 0 is read from the
// table's pointer, pixel i at i * rs bytes after it; the kernel leaves the
// pointer at the next group's. Each group reads its four residuals before
// it stores its outputs.
// The parameter space (s8_conv.c checks it before it takes a layer:
// four_fits, four_add_fits, few_output_exact): K_PADDED <= 128, at least
// four output pixels evenly spaced, channel-last outputs, every receptive
// field inside the input, the small path (every accumulator below 2^30,
// the layer's right shift 1..31, multipliers non-negative, |c| < 2^30);
// with the ADD also TFLite's left shift of 20 and every ADD shift a right
// shift (add_small), the ADD's right shift 1..31, its multiplier
// non-negative, |c'| < 2^30, a channel-last residual evenly spaced from
// pixel to pixel that is not another layer's int32 accumulators, and
// activation ranges that are not empty.
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

    // One group of a channel's int8 weights (the word at `src`, which moves
    // on 8 bytes) doubled into its two slots at `dst` (moving on 8 bytes):
    // (2 k0, 2 k2), (2 k1, 2 k3).
    .macro WEIGHTS_GROUP src, dst, word, even, odd
    ldr \word, [\src], #8
    sxtb16 \even, \word
    sxtb16 \odd, \word, ror #8
    sadd16 \even, \even, \even
    sadd16 \odd, \odd, \odd
    strd \even, \odd, [\dst], #8
    .endm

    // The _channels_ kernels (npukit_s8_conv_four_channels_dsp and its
    // variants): the same quads for every output channel of a layer in one
    // call, the channel's table words set up here instead of by the caller.
    // A fifth argument (on the stack) points at npukit_s8_four_channels_t
    // (s8_conv.c), word by word: the layer's biases, multipliers, shifts,
    // its int8 weights (channel c's groups 8 bytes apart from
    // (c >> 1) * pair_bytes + (c & 1) * lane_bytes), the channel count
    // (>= 1), 2 zp + 1, pair_bytes, (the _add_ kernels) the residual of
    // pixel 0 of channel 0, lane_bytes, and whether the weights are int16
    // pairs (groups 16 bytes apart) rather than int8 (8 bytes apart). Per channel: its doubled bias four times, m, e = -shift
    // - 1 and c = (2 zp + 1) << e, its weights doubled into the slots, the
    // residual pointer (_add_), then the quads from `columns` on, stored
    // from out + the channel.
    .equ .LFC_FRAME, 20        // entry, columns, quads, channel, out
    .equ .LFC_ARG, .LFC_FRAME + 36

    .macro CHANNELS_BEGIN add
    strd r0, r3, [sp, #4]      // the columns, the quads
    str r1, [sp, #16]          // channel 0's output
    movs r4, #0
    str r4, [sp, #12]          // the channel
5:  // a channel
    ldr r12, [sp, #.LFC_ARG]   // npukit_s8_four_channels_t
    ldr r4, [sp, #12]          // c
    ldr r5, [r12]
    ldr r5, [r5, r4, lsl #2]   // bias
    lsls r5, r5, #1
    mov r6, r5
    mov r7, r5
    mov r8, r5
    stm r2, {r5, r6, r7, r8}
    ldrd r5, r6, [r12, #4]     // multipliers, shifts
    ldr r5, [r5, r4, lsl #2]   // m
    ldr r6, [r6, r4, lsl #2]
    mvns r6, r6                // e = -shift - 1
    ldr r7, [r12, #20]         // 2 zp + 1
    lsl r7, r7, r6             // c
    strd r5, r6, [r2, #16]
    str r7, [r2, #24]
    .if \add
    ldr r5, [r12, #28]         // channel 0's residual
    add r5, r5, r4
    str r5, [r2, #312]
    .endif
    // The weights: the channel's first group at weights + (c >> 1) *
    // pair_bytes + (c & 1) * lane_bytes.
    ldr r8, [r12, #12]
    ldr r9, [r12, #24]         // pair_bytes
    lsrs r10, r4, #1
    mla r8, r10, r9, r8
    and r10, r4, #1
    ldr r9, [r12, #32]         // lane_bytes
    mla r8, r10, r9, r8
    ldr r9, [r2, #40]          // G
    rsb r10, r9, #32
    add r10, r2, r10, lsl #3
    add r10, r10, #48          // slot 32 - G
    ldr r11, [r12, #36]        // int16 weights
    cmp r11, #0
    bne .Lwide\@
.Lweights\@:  // int8: groups 8 bytes apart
    WEIGHTS_GROUP r8, r10, r11, r4, r5
    subs r9, r9, #1
    bne .Lweights\@
    b .Lweights_done\@
.Lwide\@:  // int16 pairs (k0, k2), (k1, k3): groups 16 bytes apart, doubled
    ldrd r4, r5, [r8], #16
    sadd16 r4, r4, r4
    sadd16 r5, r5, r5
    strd r4, r5, [r10], #8
    subs r9, r9, #1
    bne .Lwide\@
.Lweights_done\@:
    ldrd r0, r3, [sp, #4]      // the columns, the quads
    ldr r1, [sp, #16]          // the channel's output
    .endm

    .macro CHANNELS_NEXT
    ldrd r4, r1, [sp, #12]     // the channel, its output
    adds r4, r4, #1
    adds r1, r1, #1
    strd r4, r1, [sp, #12]
    ldr r12, [sp, #.LFC_ARG]
    ldr r5, [r12, #16]         // the channels
    cmp r4, r5
    bne 5b
    .endm

    .macro CONV_FOUR name, clamp, add=0, channels=0
    KERNEL_ENTRY \name
    .if \channels
    sub sp, sp, #.LFC_FRAME
    .else
    sub sp, sp, #4
    .endif
    // The entry into the unrolled groups: 32 - G groups skipped.
    ldr r4, [r2, #40]          // G
    rsb r4, r4, #32
    adr.w r5, 40f
    adr.w r6, 41f
    sub r6, r6, r5             // the bytes of one group
    mla r5, r4, r6, r5
    orr r5, r5, #1             // a Thumb address
    str r5, [sp]
    .if \channels
    CHANNELS_BEGIN \add
    .endif
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
    GROUP4 16
    GROUP4 17
    GROUP4 18
    GROUP4 19
    GROUP4 20
    GROUP4 21
    GROUP4 22
    GROUP4 23
    GROUP4 24
    GROUP4 25
    GROUP4 26
    GROUP4 27
    GROUP4 28
    GROUP4 29
    GROUP4 30
    GROUP4 31
    ldrd r8, r9, [r2, #16]     // m, e
    ldrd r10, r11, [r2, #24]   // c, s
    // r8 m, r9 e, r10 c (s8_dsp_macros.h)
    SCALE_TO_INT8 r4, r8, r9, r10, r12
    SCALE_TO_INT8 r5, r8, r9, r10, r12
    SCALE_TO_INT8 r6, r8, r9, r10, r12
    SCALE_TO_INT8 r7, r8, r9, r10, r12
    .if \add
    // The ADD: r8 the residual, lr its step, r12 and r10 the operand tables.
    ldr r12, [r2, #304]        // the layer's output's operands, doubled
    ldrd r8, lr, [r2, #312]    // the residual of pixel 0, rs
    ldr r4, [r12, r4, lsl #2]
    ldr r5, [r12, r5, lsl #2]
    ldr r6, [r12, r6, lsl #2]
    ldr r7, [r12, r7, lsl #2]
    ldr r12, [r2, #308]        // the residual's operands
    ldrsb r9, [r8]
    ldrsb r10, [r8, lr]
    ldr r9, [r12, r9, lsl #2]
    ldr r10, [r12, r10, lsl #2]
    add r4, r4, r9, lsl #1
    add r5, r5, r10, lsl #1
    ldrsb r9, [r8, lr, lsl #1]
    add r8, r8, lr, lsl #1
    ldrsb r10, [r8, lr]
    ldr r9, [r12, r9, lsl #2]
    ldr r10, [r12, r10, lsl #2]
    add r6, r6, r9, lsl #1
    add r7, r7, r10, lsl #1
    add r8, r8, lr, lsl #1
    str r8, [r2, #312]         // the next group's
    ldrd r8, r9, [r2, #320]    // m', e'
    ldr r10, [r2, #328]        // c'
    SCALE_TO_INT8 r4, r8, r9, r10, r12
    SCALE_TO_INT8 r5, r8, r9, r10, r12
    SCALE_TO_INT8 r6, r8, r9, r10, r12
    SCALE_TO_INT8 r7, r8, r9, r10, r12
    .endif
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
    .if \channels
    CHANNELS_NEXT
    add sp, sp, #.LFC_FRAME
    .else
    add sp, sp, #4
    .endif
    pop {r4-r11, pc}
    .size \name, . - \name
    .endm

    CONV_FOUR npukit_s8_conv_four_dsp, 1
    CONV_FOUR npukit_s8_conv_four_full_dsp, 0
    CONV_FOUR npukit_s8_conv_four_add_dsp, 1, 1
    CONV_FOUR npukit_s8_conv_four_add_full_dsp, 0, 1
    // Every output channel of the columns in one call (CHANNELS_BEGIN).
    CONV_FOUR npukit_s8_conv_four_channels_dsp, 1, 0, 1
    CONV_FOUR npukit_s8_conv_four_channels_full_dsp, 0, 0, 1
    CONV_FOUR npukit_s8_conv_four_channels_add_dsp, 1, 1, 1
    CONV_FOUR npukit_s8_conv_four_channels_add_full_dsp, 0, 1, 1

    // void npukit_s8_four_weights_dsp(int32_t* slots, const int8_t* w,
    //                                 int32_t groups);
    //
    // One channel's weights as the kernels above read them, from its int8
    // weights (s8_conv.c, conv_four_body: `groups` (>= 1) words of four K
    // values 8 bytes apart from `w`, the weights of two channels side by
    // side): word (k0, k1, k2, k3) stored as the int16 pairs (2 k0, 2 k2),
    // (2 k1, 2 k3) at slots, slots + 4. Two groups per pass (SXTB16 splits,
    // SADD16 doubles: |2 w| <= 256 fits), an odd first group alone.
    KERNEL_ENTRY npukit_s8_four_weights_dsp
    tst r2, #1
    beq 2f
    WEIGHTS_GROUP r1, r0, r3, r4, r5
    subs r2, r2, #1
    beq 3f
2:  ldr r3, [r1], #8
    ldr r4, [r1], #8
    sxtb16 r5, r3
    sxtb16 r6, r3, ror #8
    sxtb16 r7, r4
    sxtb16 r8, r4, ror #8
    sadd16 r5, r5, r5
    sadd16 r6, r6, r6
    sadd16 r7, r7, r7
    sadd16 r8, r8, r8
    stmia r0!, {r5, r6, r7, r8}
    subs r2, r2, #2
    bne 2b
3:  pop {r4-r11, pc}
    .size npukit_s8_four_weights_dsp, . - npukit_s8_four_weights_dsp

    // void npukit_s8_four_gather_quad_dsp(const int8_t* at, int32_t* quad,
    //                                     const four_words_t* f);
    //
    // The columns of four output pixels of one row (s8_conv.c, four_gather_
    // words) whose kernel rows are contiguous words: pixel i's field starts
    // at at + i * cs, its kernel rows `row_in` bytes apart, `words` words
    // each (>= 1), `kh` rows (>= 1). Per word of the fields the four pixels'
    // words (unaligned reads: LDR alone) become the group's (k0, k2) pairs
    // of the four pixels, then their (k1, k3) pairs, less the zero point
    // (one SXTAB16 onto `zz`, -zp in both halves), stored with two STM.
    // f (s8_conv.c, four_words_t): words at 4, kh at 8, row_in at 12, cs
    // (col_step) at 16, zz at 28.
    // r0 pixel 0's word, r1 the columns, r2 cs, r3 pixel 3's word, r4..r7
    // the four pixels' words, r8..r11 their pairs, r12 zz, lr the words left.
    KERNEL_ENTRY npukit_s8_four_gather_quad_dsp
    sub sp, sp, #16
    ldr r4, [r2, #4]           // words
    ldr r5, [r2, #8]           // kh
    ldr r6, [r2, #12]          // row_in
    ldr r12, [r2, #28]         // zz
    ldr r2, [r2, #16]          // cs
    str r4, [sp]
    strd r5, r0, [sp, #4]      // the kernel rows left, the row's start
    str r6, [sp, #12]
2:  // one kernel row
    add r3, r0, r2, lsl #1
    add r3, r3, r2             // pixel 3
    ldr lr, [sp]
3:  ldr r5, [r0, r2]
    ldr r6, [r0, r2, lsl #1]
    ldr r7, [r3], #4
    ldr r4, [r0], #4
    sxtab16 r8, r12, r4
    sxtab16 r9, r12, r5
    sxtab16 r10, r12, r6
    sxtab16 r11, r12, r7
    stmia r1!, {r8, r9, r10, r11}
    sxtab16 r8, r12, r4, ror #8
    sxtab16 r9, r12, r5, ror #8
    sxtab16 r10, r12, r6, ror #8
    sxtab16 r11, r12, r7, ror #8
    stmia r1!, {r8, r9, r10, r11}
    subs lr, lr, #1
    bne 3b
    ldrd r4, r0, [sp, #4]      // kh left, the row's start
    ldr r5, [sp, #12]          // row_in
    add r0, r0, r5
    subs r4, r4, #1
    strd r4, r0, [sp, #4]
    bne 2b
    add sp, sp, #16
    pop {r4-r11, pc}
    .size npukit_s8_four_gather_quad_dsp, . - npukit_s8_four_gather_quad_dsp
#endif

    .section .note.GNU-stack, "", %progbits
