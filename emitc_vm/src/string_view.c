#include "iree/base/string_view.h"

bool iree_string_view_equal(iree_string_view_t a, iree_string_view_t b) {
  return a.size == b.size && (a.size == 0 || memcmp(a.data, b.data, a.size) == 0);
}

int iree_string_view_compare(iree_string_view_t a, iree_string_view_t b) {
  iree_host_size_t n = a.size < b.size ? a.size : b.size;
  int c = n ? memcmp(a.data, b.data, n) : 0;
  if (c != 0) return c;
  return a.size < b.size ? -1 : (a.size > b.size ? 1 : 0);
}

bool iree_string_view_starts_with(iree_string_view_t value, iree_string_view_t prefix) {
  return value.size >= prefix.size && (prefix.size == 0 || memcmp(value.data, prefix.data, prefix.size) == 0);
}

bool iree_string_view_split(iree_string_view_t value, char c, iree_string_view_t* out_lhs,
                            iree_string_view_t* out_rhs) {
  for (iree_host_size_t i = 0; i < value.size; ++i) {
    if (value.data[i] == c) {
      *out_lhs = iree_make_string_view(value.data, i);
      *out_rhs = iree_make_string_view(value.data + i + 1, value.size - i - 1);
      return true;
    }
  }
  return false;
}

bool iree_string_view_match_pattern(iree_string_view_t value, iree_string_view_t pattern) {
  iree_host_size_t v = 0, p = 0, star = IREE_HOST_SIZE_MAX, mark = 0;
  while (v < value.size) {
    if (p < pattern.size && (pattern.data[p] == '?' || pattern.data[p] == value.data[v])) {
      ++v;
      ++p;
    } else if (p < pattern.size && pattern.data[p] == '*') {
      star = p++;
      mark = v;
    } else if (star != IREE_HOST_SIZE_MAX) {
      p = star + 1;
      v = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size && pattern.data[p] == '*') ++p;
  return p == pattern.size;
}
