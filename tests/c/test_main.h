// A minimal test harness for npukit's C unit tests (no framework needed on
// the boards these sources also build for).

#ifndef NPUKIT_TESTS_C_TEST_MAIN_H_
#define NPUKIT_TESTS_C_TEST_MAIN_H_

#include <stdio.h>
#include <stdlib.h>

#include "iree/base/api.h"

static int npukit_test_failures = 0;

#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      npukit_test_failures++;                                             \
    }                                                                     \
  } while (0)

static inline iree_status_code_t npukit_test_consume(iree_status_t status, const char* what) {
  char buffer[512];
  iree_status_format(status, buffer, sizeof(buffer));
  if (what) fprintf(stderr, "%s: %s\n", what, buffer);
  return iree_status_consume_code(status);
}

#define EXPECT_OK(expr)                                                 \
  do {                                                                  \
    iree_status_t s_ = (expr);                                          \
    if (!iree_status_is_ok(s_)) {                                       \
      fprintf(stderr, "%s:%d: %s failed: ", __FILE__, __LINE__, #expr); \
      npukit_test_consume(s_, "");                                      \
      npukit_test_failures++;                                           \
    }                                                                   \
  } while (0)

#define EXPECT_CODE(expr, code)                                                                                   \
  do {                                                                                                            \
    iree_status_code_t c_ = iree_status_consume_code(expr);                                                       \
    if (c_ != (code)) {                                                                                           \
      fprintf(stderr, "%s:%d: %s gave %s, expected %s\n", __FILE__, __LINE__, #expr, iree_status_code_string(c_), \
              iree_status_code_string(code));                                                                     \
      npukit_test_failures++;                                                                                     \
    }                                                                                                             \
  } while (0)

#define TEST_RESULT() (npukit_test_failures == 0 ? 0 : 1)

// The whole file at |path| on the heap (NULL when it cannot be read).
static inline uint8_t* npukit_test_read_file(const char* path, size_t* out_size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* data = (uint8_t*)malloc(size > 0 ? (size_t)size : 1);
  if (size < 0 || fread(data, 1, (size_t)size, f) != (size_t)size) size = 0;
  fclose(f);
  *out_size = (size_t)size;
  return data;
}

#endif  // NPUKIT_TESTS_C_TEST_MAIN_H_
