// Statuses: codes, messages, annotations, and running out of message slots.

#include "test_main.h"

int main(void) {
  EXPECT(iree_status_is_ok(iree_ok_status()));
  iree_status_t code_only = iree_make_status(IREE_STATUS_NOT_FOUND);
  EXPECT(iree_status_code(code_only) == IREE_STATUS_NOT_FOUND);
  EXPECT(iree_status_message(code_only).size == 0);

  iree_status_t s = iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "value %d of %s at %zu: %.*s [%04x]", -42, "x",
                                     (size_t)7, 3, "abcdef", 0xbeefu);
  char buffer[256];
  iree_status_format(s, buffer, sizeof(buffer));
  EXPECT(strcmp(buffer, "INVALID_ARGUMENT; value -42 of x at 7: abc [beef]") == 0);
  s = iree_status_annotate_f(s, "while %s", "testing");
  iree_status_format(s, buffer, sizeof(buffer));
  EXPECT(strcmp(buffer, "INVALID_ARGUMENT; value -42 of x at 7: abc [beef]; while testing") == 0);
  iree_status_free(s);

  // Annotating a code-only status gives it a message.
  code_only = iree_status_annotate_f(code_only, "module %s", "m");
  iree_status_format(code_only, buffer, sizeof(buffer));
  EXPECT(strcmp(buffer, "NOT_FOUND; module m") == 0);
  iree_status_free(code_only);

  // When every slot is taken, errors keep their code.
  iree_status_t held[16];
  for (int i = 0; i < 16; ++i) held[i] = iree_make_status(IREE_STATUS_INTERNAL, "error %d", i);
  for (int i = 0; i < 16; ++i) EXPECT(iree_status_code(held[i]) == IREE_STATUS_INTERNAL);
  for (int i = 0; i < 16; ++i) iree_status_free(held[i]);
  iree_status_t again = iree_make_status(IREE_STATUS_ABORTED, "slots are free again");
  EXPECT(iree_status_message(again).size > 0);
  iree_status_free(again);

  // %.*s reads no further than the precision: the string need not be terminated.
  static const char unterminated[3] = {'a', 'b', 'c'};
  iree_format(buffer, sizeof(buffer), "[%.*s]", 3, unterminated);
  EXPECT(strcmp(buffer, "[abc]") == 0);

  // Truncation keeps the output terminated.
  char small[8];
  iree_host_size_t n = iree_format(small, sizeof(small), "%s", "0123456789");
  EXPECT(n == 10 && strcmp(small, "0123456") == 0);
  return TEST_RESULT();
}
