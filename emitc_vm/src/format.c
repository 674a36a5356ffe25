// A small printf subset for status messages, so that the runtime does not pull
// in the C library's printf (tens of KiB of flash on a microcontroller).

#include <stdarg.h>

#include "iree/base/status.h"

typedef struct format_out_t {
  char* buffer;
  iree_host_size_t capacity;
  iree_host_size_t length;  // untruncated
} format_out_t;

static void out_char(format_out_t* out, char c) {
  if (out->length + 1 < out->capacity) out->buffer[out->length] = c;
  out->length++;
}

static void out_chars(format_out_t* out, const char* s, iree_host_size_t n) {
  for (iree_host_size_t i = 0; i < n; ++i) out_char(out, s[i]);
}

static void out_unsigned(format_out_t* out, unsigned long long value, unsigned base, bool upper, int width, char fill,
                         bool negative) {
  char digits[24];
  int n = 0;
  const char* table = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  do {
    digits[n++] = table[value % base];
    value /= base;
  } while (value != 0);
  int total = n + (negative ? 1 : 0);
  if (negative && fill == '0') out_char(out, '-');
  for (int i = total; i < width; ++i) out_char(out, fill);
  if (negative && fill != '0') out_char(out, '-');
  while (n > 0) out_char(out, digits[--n]);
}

iree_host_size_t iree_vformat(char* buffer, iree_host_size_t capacity, const char* format, va_list args) {
  format_out_t out = {buffer, capacity, 0};
  for (const char* p = format; *p; ++p) {
    if (*p != '%') {
      out_char(&out, *p);
      continue;
    }
    ++p;
    if (*p == '%') {
      out_char(&out, '%');
      continue;
    }
    char fill = ' ';
    if (*p == '0') {
      fill = '0';
      ++p;
    }
    int width = 0;
    while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
    int precision = -1;
    if (*p == '.') {
      ++p;
      if (*p == '*') {
        precision = va_arg(args, int);
        ++p;
      } else {
        precision = 0;
        while (*p >= '0' && *p <= '9') precision = precision * 10 + (*p++ - '0');
      }
    }
    int longs = 0;
    bool size_t_arg = false;
    for (;; ++p) {
      if (*p == 'l')
        longs++;
      else if (*p == 'z' || *p == 'j')
        size_t_arg = true;
      else if (*p == 'h')
        continue;
      else
        break;
    }
    switch (*p) {
      case 's': {
        const char* s = va_arg(args, const char*);
        if (!s) s = "(null)";
        // With a precision the string need not be NUL-terminated: read no further.
        iree_host_size_t n = 0;
        while ((precision < 0 || n < (iree_host_size_t)precision) && s[n]) ++n;
        for (int i = (int)n; i < width; ++i) out_char(&out, ' ');
        out_chars(&out, s, n);
        break;
      }
      case 'c':
        out_char(&out, (char)va_arg(args, int));
        break;
      case 'd':
      case 'i': {
        long long v;
        if (size_t_arg)
          v = (long long)va_arg(args, ptrdiff_t);
        else if (longs >= 2)
          v = va_arg(args, long long);
        else if (longs == 1)
          v = va_arg(args, long);
        else
          v = va_arg(args, int);
        unsigned long long mag = v < 0 ? (unsigned long long)(-(v + 1)) + 1ull : (unsigned long long)v;
        out_unsigned(&out, mag, 10, false, width, fill, v < 0);
        break;
      }
      case 'u':
      case 'x':
      case 'X': {
        unsigned long long v;
        if (size_t_arg)
          v = (unsigned long long)va_arg(args, size_t);
        else if (longs >= 2)
          v = va_arg(args, unsigned long long);
        else if (longs == 1)
          v = va_arg(args, unsigned long);
        else
          v = va_arg(args, unsigned int);
        out_unsigned(&out, v, *p == 'u' ? 10u : 16u, *p == 'X', width, fill, false);
        break;
      }
      case 'p': {
        uintptr_t v = (uintptr_t)va_arg(args, void*);
        out_chars(&out, "0x", 2);
        out_unsigned(&out, v, 16, false, 0, '0', false);
        break;
      }
      case '\0':
        --p;  // a trailing '%': stop at the terminator
        break;
      default:
        out_char(&out, '%');
        out_char(&out, *p);
        break;
    }
  }
  if (capacity > 0) buffer[out.length < capacity ? out.length : capacity - 1] = '\0';
  return out.length;
}

iree_host_size_t iree_format(char* buffer, iree_host_size_t capacity, const char* format, ...) {
  va_list args;
  va_start(args, format);
  iree_host_size_t n = iree_vformat(buffer, capacity, format, args);
  va_end(args);
  return n;
}
