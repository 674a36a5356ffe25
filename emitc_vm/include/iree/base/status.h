// Status results: a code plus, for errors, a message.
//
// iree_status_t is pointer-sized and all-zero on success, so the check on the
// success path is one comparison. An error carries its code in the low 5 bits
// and, when a message was given, a pointer to a message slot in the rest. The
// slots come from a small fixed pool (no heap): when the pool is exhausted an
// error keeps its code and loses only its message. Every non-OK status must be
// freed once (iree_status_free / iree_status_ignore) by whoever handles it.

#ifndef IREE_BASE_STATUS_H_
#define IREE_BASE_STATUS_H_

#include <stdarg.h>

#include "iree/base/config.h"
#include "iree/base/string_view.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum iree_status_code_e {
  IREE_STATUS_OK = 0,
  IREE_STATUS_CANCELLED = 1,
  IREE_STATUS_UNKNOWN = 2,
  IREE_STATUS_INVALID_ARGUMENT = 3,
  IREE_STATUS_DEADLINE_EXCEEDED = 4,
  IREE_STATUS_NOT_FOUND = 5,
  IREE_STATUS_ALREADY_EXISTS = 6,
  IREE_STATUS_PERMISSION_DENIED = 7,
  IREE_STATUS_RESOURCE_EXHAUSTED = 8,
  IREE_STATUS_FAILED_PRECONDITION = 9,
  IREE_STATUS_ABORTED = 10,
  IREE_STATUS_OUT_OF_RANGE = 11,
  IREE_STATUS_UNIMPLEMENTED = 12,
  IREE_STATUS_INTERNAL = 13,
  IREE_STATUS_UNAVAILABLE = 14,
  IREE_STATUS_DATA_LOSS = 15,
  IREE_STATUS_UNAUTHENTICATED = 16,
  IREE_STATUS_DEFERRED = 17,
  IREE_STATUS_INCOMPATIBLE = 18,
  IREE_STATUS_CODE_MASK = 0x1F,
} iree_status_code_t;

typedef struct iree_status_handle_t* iree_status_t;

#define iree_ok_status() ((iree_status_t)0)
#define iree_status_from_code(code) ((iree_status_t)(uintptr_t)((uint32_t)(code) & IREE_STATUS_CODE_MASK))
#define iree_status_code(status) ((iree_status_code_t)((uintptr_t)(status) & IREE_STATUS_CODE_MASK))
#define iree_status_is_ok(status) IREE_LIKELY((uintptr_t)(status) == IREE_STATUS_OK)

// Allocates a status with a printf-style message (the formatter understands
// %s %.*s %c %d %i %u %x %X %p with h/l/ll/z/j modifiers, width and '0' fill).
IREE_API_EXPORT iree_status_t iree_status_allocate_f(iree_status_code_t code, const char* file, uint32_t line,
                                                     const char* format, ...) IREE_PRINTF_ATTRIBUTE(4, 5);
IREE_API_EXPORT iree_status_t iree_status_allocate_vf(iree_status_code_t code, const char* file, uint32_t line,
                                                      const char* format, va_list args);

// iree_make_status(CODE) or iree_make_status(CODE, "format", args...).
#define IREE_STATUS_IMPL_NTH_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, N, ...) N
#define IREE_STATUS_IMPL_PICK_(...) IREE_STATUS_IMPL_NTH_(__VA_ARGS__, F, F, F, F, F, F, F, F, F, F, F, C, _)
#define IREE_STATUS_IMPL_CAT2_(a, b) a##b
#define IREE_STATUS_IMPL_CAT_(a, b) IREE_STATUS_IMPL_CAT2_(a, b)
#define IREE_STATUS_IMPL_MAKE_C(code) iree_status_from_code(code)
// Messages carry no source location: file names would cost flash in every
// firmware, and the message says what failed. With NPUKIT_STATUS_MESSAGES=0
// there are no messages either (errors keep their codes): the default of
// bare-metal builds (NPUKIT_BARE_METAL), for the smallest firmware; define
// NPUKIT_STATUS_MESSAGES=1 (CMake option NPUKIT_STATUS_MESSAGES, `npukit
// deploy --status-messages`) to have them on a board.
#if !defined(NPUKIT_STATUS_MESSAGES)
#if defined(NPUKIT_BARE_METAL) && NPUKIT_BARE_METAL
#define NPUKIT_STATUS_MESSAGES 0
#else
#define NPUKIT_STATUS_MESSAGES 1
#endif
#endif
#if NPUKIT_STATUS_MESSAGES
#define IREE_STATUS_IMPL_MAKE_F(code, ...) iree_status_allocate_f(code, NULL, 0, __VA_ARGS__)
#else
// The arguments stay referenced (in an unevaluated sizeof) so that variables
// kept only for messages do not warn; no code or string is emitted for them.
int npukit_status_unused_(int, ...);
#define IREE_STATUS_IMPL_MAKE_F(code, ...) \
  ((void)sizeof(npukit_status_unused_(0, __VA_ARGS__)), iree_status_from_code(code))
// IREE's vm-c modules call iree_status_allocate_f themselves (a vm.fail's
// message): that too is its code alone, and the message is not kept.
#define iree_status_allocate_f(code, file, line, ...) \
  ((void)sizeof(npukit_status_unused_(0, (file), (line), __VA_ARGS__)), iree_status_from_code(code))
#endif
#define iree_make_status(...) \
  IREE_STATUS_IMPL_CAT_(IREE_STATUS_IMPL_MAKE_, IREE_STATUS_IMPL_PICK_(__VA_ARGS__))(__VA_ARGS__)

// Adds context to an error ("...; while <context>"); OK passes through.
IREE_API_EXPORT iree_status_t iree_status_annotate_f(iree_status_t status, const char* format, ...)
    IREE_PRINTF_ATTRIBUTE(2, 3);
#if !NPUKIT_STATUS_MESSAGES
#define iree_status_annotate_f(status, ...) ((void)sizeof(npukit_status_unused_(0, __VA_ARGS__)), (status))
#endif

IREE_API_EXPORT void iree_status_free(iree_status_t status);

// Frees the status and returns OK.
static inline iree_status_t iree_status_ignore(iree_status_t status) {
  iree_status_free(status);
  return iree_ok_status();
}

// Frees the status and returns its code.
static inline iree_status_code_t iree_status_consume_code(iree_status_t status) {
  iree_status_code_t code = iree_status_code(status);
  iree_status_free(status);
  return code;
}

// The message of a status (empty for OK or code-only statuses).
IREE_API_EXPORT iree_string_view_t iree_status_message(iree_status_t status);

IREE_API_EXPORT const char* iree_status_code_string(iree_status_code_t code);

// Writes "CODE_NAME; message" (NUL-terminated, truncated to |capacity|) and
// returns the length it would have had.
IREE_API_EXPORT iree_host_size_t iree_status_format(iree_status_t status, char* buffer, iree_host_size_t capacity);

#define IREE_RETURN_IF_ERROR(expr)                                                    \
  do {                                                                                \
    iree_status_t iree_status_tmp_ = (expr);                                          \
    if (IREE_UNLIKELY(!iree_status_is_ok(iree_status_tmp_))) return iree_status_tmp_; \
  } while (0)

// Formats into |buffer| (always NUL-terminated when capacity > 0) with the
// same subset as iree_status_allocate_f; returns the untruncated length.
IREE_API_EXPORT iree_host_size_t iree_vformat(char* buffer, iree_host_size_t capacity, const char* format,
                                              va_list args);
IREE_API_EXPORT iree_host_size_t iree_format(char* buffer, iree_host_size_t capacity, const char* format, ...)
    IREE_PRINTF_ATTRIBUTE(3, 4);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_BASE_STATUS_H_
