// Compiler and platform attributes used by npukit's runtime and by the C that
// iree-compile --output-format=vm-c (IREE 3.13.0) emits.

#ifndef IREE_BASE_CONFIG_H_
#define IREE_BASE_CONFIG_H_

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_MSC_VER)
#include <malloc.h>
#define iree_alignas(x) __declspec(align(x))
#define iree_alloca(sz) _alloca(sz)
#define IREE_RESTRICT __restrict
#else
#include <alloca.h>
#define iree_alignas(x) __attribute__((__aligned__(x)))
// The generated import shims align 8-byte fields by absolute address and size
// them from offset 0: the memory must be at least 8-byte aligned (it is: alloca
// returns max_align_t alignment on every supported target).
#define iree_alloca(sz) __builtin_alloca(sz)
#define IREE_RESTRICT __restrict__
#endif

#define iree_alignof(x) _Alignof(x)

#ifdef __cplusplus
#define IREE_API_EXPORT extern "C"
#else
#define IREE_API_EXPORT
#endif
#define IREE_API_PTR
// Marks structures whose layout IREE may change; adds no field.
#define IREE_API_UNSTABLE

#if defined(__GNUC__) || defined(__clang__)
#define IREE_LIKELY(x) (__builtin_expect(!!(x), 1))
#define IREE_UNLIKELY(x) (__builtin_expect(!!(x), 0))
#define IREE_ATTRIBUTE_UNUSED __attribute__((unused))
#define IREE_PRINTF_ATTRIBUTE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define IREE_LIKELY(x) (x)
#define IREE_UNLIKELY(x) (x)
#define IREE_ATTRIBUTE_UNUSED
#define IREE_PRINTF_ATTRIBUTE(fmt, args)
#endif

typedef size_t iree_host_size_t;
#define IREE_HOST_SIZE_MAX SIZE_MAX

// Rounds |value| up to a power-of-two |alignment|.
static inline iree_host_size_t iree_host_align(iree_host_size_t value, iree_host_size_t alignment) {
  return (value + (alignment - 1)) & ~(alignment - 1);
}

static inline bool iree_host_size_is_aligned(iree_host_size_t value, iree_host_size_t alignment) {
  return (value & (alignment - 1)) == 0;
}

#define IREE_ARRAYSIZE(arr) (sizeof(arr) / sizeof((arr)[0]))
#define iree_min(a, b) (((a) < (b)) ? (a) : (b))
#define iree_max(a, b) (((a) > (b)) ? (a) : (b))

#endif  // IREE_BASE_CONFIG_H_
