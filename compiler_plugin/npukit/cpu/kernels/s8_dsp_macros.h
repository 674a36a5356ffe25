// Assembler macros the Thumb-2 DSP kernels (s8_*_dsp.S) share; included by
// them only (after `.syntax unified` and `.thumb`).
#ifndef NPUKIT_CPU_KERNELS_S8_DSP_MACROS_H_
#define NPUKIT_CPU_KERNELS_S8_DSP_MACROS_H_

    // A kernel function's entry: word-aligned, global to the archive but
    // hidden from the firmware's other objects, Thumb, and the callee-saved
    // registers and lr pushed (nine words: the stack arguments start at
    // [sp, #36]).
    .macro KERNEL_ENTRY name
    .align 2
    .global \name
    .hidden \name
    .type \name, %function
    .thumb_func
\name:
    push {r4-r11, lr}
    .endm

    // One output from its doubled accumulator acc (the small path's
    // requantization, npukit_s8_scale in s8_output.h): c - [acc < 0] plus
    // the rounded high product of acc and the multiplier m, >> e, then >> 1
    // saturated to int8; c is the channel's constant from the kernel's
    // table, tmp a scratch register.
    .macro SCALE_TO_INT8 acc, m, e, c, tmp
    add \tmp, \c, \acc, asr #31
    smmlar \acc, \acc, \m, \tmp
    asr \acc, \acc, \e
    ssat \acc, #8, \acc, asr #1
    .endm

#endif  // NPUKIT_CPU_KERNELS_S8_DSP_MACROS_H_
