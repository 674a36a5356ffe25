"""The vm-c module's byte-array strings become mergeable string literals
(npukit/codegen/vm_c_strings.py) where their only uses are an assignment and
sizeof; other arrays are left as IREE wrote them."""

from npukit.codegen.vm_c_strings import string_literals

_BODY = """iree_alignas(1) static const uint8_t m__utf8_main_dispatch_0_A1[] = {109, 97, 105, 110, 95, 48};
iree_alignas(1) static const uint8_t m__utf8_bytes_B2[] = {1, 2, 3};
iree_alignas(1) static const uint8_t m__utf8_quoted_C3[] = {97, 34, 92, 63, 63, 61};
iree_alignas(1) static const uint8_t m__utf8_taken_D4[] = {120};
static iree_status_t f(void) {
  v1 = m__utf8_main_dispatch_0_A1;
  v2 = sizeof(m__utf8_main_dispatch_0_A1);
  v3 = m__utf8_bytes_B2;
  v4 = sizeof(m__utf8_bytes_B2);
  v5 = m__utf8_quoted_C3;
  v6 = sizeof(m__utf8_quoted_C3);
  v7 = &m__utf8_taken_D4[0];
}
"""


def test_printable_strings_become_literals():
    body, count = string_literals(_BODY)
    assert count == 2
    assert '#define m__utf8_main_dispatch_0_A1 ((const uint8_t*)"main_0")' in body
    assert "v2 = ((iree_host_size_t)6);" in body and "v1 = m__utf8_main_dispatch_0_A1;" in body
    # Quotes, backslashes and trigraph question marks are escaped: the literal holds the same 6 bytes.
    assert '#define m__utf8_quoted_C3 ((const uint8_t*)"a\\"\\\\\\?\\?=")' in body
    assert "v6 = ((iree_host_size_t)6);" in body


def test_other_arrays_are_left_alone():
    body, _ = string_literals(_BODY)
    assert "static const uint8_t m__utf8_bytes_B2[] = {1, 2, 3};" in body  # not printable
    assert "sizeof(m__utf8_bytes_B2)" in body
    assert "static const uint8_t m__utf8_taken_D4[] = {120};" in body  # used otherwise
