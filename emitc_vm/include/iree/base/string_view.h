// Non-owning strings and byte spans.

#ifndef IREE_BASE_STRING_VIEW_H_
#define IREE_BASE_STRING_VIEW_H_

#include "iree/base/config.h"

#ifdef __cplusplus
extern "C" {
#endif

// A string that need not be NUL-terminated. Positionally initialized by the
// generated code as {data, size}.
typedef struct iree_string_view_t {
  const char* data;
  iree_host_size_t size;
} iree_string_view_t;

typedef struct iree_string_pair_t {
  union {
    iree_string_view_t first;
    iree_string_view_t key;
  };
  union {
    iree_string_view_t second;
    iree_string_view_t value;
  };
} iree_string_pair_t;

static inline iree_string_view_t iree_make_string_view(const char* data, iree_host_size_t size) {
  iree_string_view_t v = {data, size};
  return v;
}

static inline iree_string_view_t iree_make_cstring_view(const char* s) {
  iree_string_view_t v = {s, s ? strlen(s) : 0};
  return v;
}

static inline iree_string_view_t iree_string_view_empty(void) {
  iree_string_view_t v = {NULL, 0};
  return v;
}

static inline bool iree_string_view_is_empty(iree_string_view_t v) { return v.size == 0; }

bool iree_string_view_equal(iree_string_view_t a, iree_string_view_t b);

// Bytewise order; on a common prefix the shorter string sorts first.
int iree_string_view_compare(iree_string_view_t a, iree_string_view_t b);

bool iree_string_view_starts_with(iree_string_view_t value, iree_string_view_t prefix);

// Splits at the first |c|: "hal.ex.file" at '.' gives "hal" and "ex.file".
// Returns false (and leaves the outputs untouched) when |c| is absent.
bool iree_string_view_split(iree_string_view_t value, char c, iree_string_view_t* out_lhs, iree_string_view_t* out_rhs);

// Matches |value| against a glob |pattern| with '*' (any run) and '?' (one char).
bool iree_string_view_match_pattern(iree_string_view_t value, iree_string_view_t pattern);

// Bytes.
typedef struct iree_byte_span_t {
  uint8_t* data;
  iree_host_size_t data_length;
} iree_byte_span_t;

typedef struct iree_const_byte_span_t {
  const uint8_t* data;
  iree_host_size_t data_length;
} iree_const_byte_span_t;

static inline iree_byte_span_t iree_make_byte_span(void* data, iree_host_size_t data_length) {
  iree_byte_span_t v = {(uint8_t*)data, data_length};
  return v;
}

static inline iree_const_byte_span_t iree_make_const_byte_span(const void* data, iree_host_size_t data_length) {
  iree_const_byte_span_t v = {(const uint8_t*)data, data_length};
  return v;
}

static inline iree_byte_span_t iree_byte_span_empty(void) {
  iree_byte_span_t v = {NULL, 0};
  return v;
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_BASE_STRING_VIEW_H_
