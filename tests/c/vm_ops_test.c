// The vm_* helpers of ops.h on their edge cases: integer division and
// remainder by zero and INT_MIN / -1 (defined here, where IREE's runtime
// traps), wrapping arithmetic, shift amounts modulo the width, signed and
// unsigned comparisons, min/max with NaN as IREE's VM defines them, casts
// rounding half away from zero, and zero-length buffer accesses. Each helper
// is checked at the width it names, so the same file checks 32-bit targets.

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "iree/vm/ops.h"
#include "test_main.h"

static void test_division(void) {
  EXPECT(vm_div_i32s(7, 0) == 0 && vm_div_i32u(7, 0) == 0);
  EXPECT(vm_rem_i32s(-7, 0) == -7 && vm_rem_i32u(7, 0) == 7);
  EXPECT(vm_div_i32s(INT32_MIN, -1) == INT32_MIN && vm_rem_i32s(INT32_MIN, -1) == 0);
  EXPECT(vm_div_i32s(-7, 2) == -3 && vm_rem_i32s(-7, 2) == -1);  // truncation toward zero
  EXPECT(vm_div_i32u(-1, 2) == 0x7FFFFFFF && vm_rem_i32u(-1, 16) == 15);
  EXPECT(vm_div_i64s(7, 0) == 0 && vm_div_i64u(-1, 0) == 0);
  EXPECT(vm_rem_i64s(-7, 0) == -7 && vm_rem_i64u(7, 0) == 7);
  EXPECT(vm_div_i64s(INT64_MIN, -1) == INT64_MIN && vm_rem_i64s(INT64_MIN, -1) == 0);
  EXPECT(vm_div_i64s(-7, 2) == -3 && vm_rem_i64s(-7, 2) == -1);
  EXPECT(vm_div_i64u(-1, 2) == INT64_MAX && vm_rem_i64u(-1, 16) == 15);
  // x == (x / y) * y + x % y wherever the quotient is defined.
  const int64_t xs[] = {INT64_MIN, -9, -1, 0, 5, INT64_MAX};
  const int64_t ys[] = {INT64_MIN, -3, -1, 1, 4, INT64_MAX};
  for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); ++i) {
    for (size_t j = 0; j < sizeof(ys) / sizeof(ys[0]); ++j) {
      int64_t x = xs[i], y = ys[j];
      EXPECT(vm_add_i64(vm_mul_i64(vm_div_i64s(x, y), y), vm_rem_i64s(x, y)) == x);
      EXPECT(vm_add_i64(vm_mul_i64(vm_div_i64u(x, y), y), vm_rem_i64u(x, y)) == x);
    }
  }
}

static void test_wrapping_and_bits(void) {
  EXPECT(vm_add_i32(INT32_MAX, 1) == INT32_MIN && vm_sub_i32(INT32_MIN, 1) == INT32_MAX);
  EXPECT(vm_mul_i32(0x10000, 0x10000) == 0 && vm_abs_i32(INT32_MIN) == INT32_MIN);
  EXPECT(vm_add_i64(INT64_MAX, 1) == INT64_MIN && vm_abs_i64(INT64_MIN) == INT64_MIN);
  EXPECT(vm_fma_i64(INT64_MAX, 2, 2) == 0);
  EXPECT(vm_shl_i32(1, 33) == 2 && vm_shl_i64(1, 65) == 2);  // amounts modulo the width
  EXPECT(vm_shr_i32s(INT32_MIN, 31) == -1 && vm_shr_i32u(INT32_MIN, 31) == 1);
  EXPECT(vm_shr_i64s(INT64_MIN, 63) == -1 && vm_shr_i64u(INT64_MIN, 63) == 1);
  EXPECT(vm_shr_i64s(-8, 1) == -4 && vm_shr_i64s(8, 64) == 8);
  EXPECT(vm_ctlz_i32(0) == 32 && vm_ctlz_i32(1) == 31 && vm_ctlz_i32(-1) == 0);
  EXPECT(vm_ctlz_i64(0) == 64 && vm_ctlz_i64(1) == 63 && vm_ctlz_i64(-1) == 0);
  EXPECT(vm_not_i64(0) == -1 && vm_xor_i32(-1, 0x0F) == (int32_t)0xFFFFFFF0);
}

static void test_comparisons_and_min_max(void) {
  EXPECT(vm_cmp_lt_i32s(-1, 0) == 1 && vm_cmp_lt_i32u(-1, 0) == 0);
  EXPECT(vm_cmp_lt_i64s(INT64_MIN, 0) == 1 && vm_cmp_lt_i64u(INT64_MIN, 0) == 0);
  EXPECT(vm_min_i32s(-1, 1) == -1 && vm_min_i32u(-1, 1) == 1);
  EXPECT(vm_max_i32s(-1, 1) == 1 && vm_max_i32u(-1, 1) == -1);
  EXPECT(vm_min_i64s(INT64_MIN, INT64_MAX) == INT64_MIN && vm_min_i64u(INT64_MIN, INT64_MAX) == INT64_MAX);
  EXPECT(vm_max_i64s(INT64_MIN, INT64_MAX) == INT64_MAX && vm_max_i64u(INT64_MIN, INT64_MAX) == INT64_MIN);
  float nan = NAN;
  // IREE's VM: NaN in the first operand is kept, in the second it is not.
  EXPECT(isnan(vm_min_f32(nan, 1.0f)) && vm_min_f32(1.0f, nan) == 1.0f);
  EXPECT(isnan(vm_max_f32(nan, 1.0f)) && vm_max_f32(1.0f, nan) == 1.0f);
  EXPECT(vm_cmp_eq_f32o(nan, nan) == 0 && vm_cmp_eq_f32u(nan, nan) == 1);
  EXPECT(vm_cmp_ne_f32o(nan, 1.0f) == 1 && vm_cmp_lt_f32o(nan, 1.0f) == 0 && vm_cmp_lt_f32u(nan, 1.0f) == 1);
  EXPECT(vm_cmp_lte_f32o(1.0f, 1.0f) == 1 && vm_cmp_lte_f32u(nan, 0.0f) == 1 && vm_cmp_nan_f32(nan) == 1);
}

static void test_casts(void) {
  EXPECT(vm_cast_f32si32(2.5f) == 3 && vm_cast_f32si32(-2.5f) == -3);  // half away from zero
  EXPECT(vm_cast_f32si64(-0.5f) == -1 && vm_cast_f32ui32(2.5f) == 3);
  EXPECT(vm_cast_ui32f32(-1) == 4294967296.0f && vm_cast_si32f32(-1) == -1.0f);
  EXPECT(vm_cast_ui64f32(-1) == 18446744073709551616.0f && vm_cast_si64f32(INT64_MIN) == -9223372036854775808.0f);
  EXPECT(vm_round_f32_even(2.5f) == 2.0f && vm_round_f32_even(-0.5f) == 0.0f && vm_round_f32_even(3.5f) == 4.0f);
  EXPECT(vm_round_f32(2.5f) == 3.0f && vm_round_f32(-2.5f) == -3.0f);
  EXPECT(vm_trunc_i64i32(0x123456789LL) == 0x23456789 && vm_trunc_i32i8(0x1FF) == 0xFF);
  EXPECT(vm_ext_i8i32s(0x80) == -128 && vm_ext_i8i32u(0x80) == 128 && vm_ext_i16i32s(0x8000) == -32768);
  EXPECT(vm_ext_i32i64s(-1) == -1 && vm_ext_i32i64u(-1) == 0xFFFFFFFFLL);
  EXPECT(vm_bitcast_f32i32(vm_bitcast_i32f32(0x7FC00001)) == 0x7FC00001);
  EXPECT(vm_fpowi_f32(2.0f, -2) == 0.25f && vm_fpowi_f32(3.0f, 0) == 1.0f && vm_fpowi_f32(-2.0f, 3) == -8.0f);
}

static void test_zero_length_buffers(void) {
  iree_vm_buffer_t buffer;
  iree_vm_buffer_initialize(IREE_VM_BUFFER_ACCESS_MUTABLE, iree_make_byte_span(NULL, 0), iree_allocator_null(),
                            &buffer);
  // A buffer of no bytes: fills of no elements at its end are fine, loads are not.
  EXPECT_OK(vm_buffer_fill_i8(&buffer, 0, 0, 7));
  EXPECT_OK(vm_buffer_fill_f32(&buffer, 0, 0, 1.0f));
  int32_t v = 0;
  EXPECT_CODE(vm_buffer_load_i32(&buffer, 0, &v), IREE_STATUS_OUT_OF_RANGE);
  EXPECT_CODE(vm_buffer_fill_i8(&buffer, 1, 0, 7), IREE_STATUS_OUT_OF_RANGE);
  uint8_t bytes[8] = {0};
  iree_vm_buffer_deinitialize(&buffer);
  iree_vm_buffer_initialize(IREE_VM_BUFFER_ACCESS_MUTABLE, iree_make_byte_span(bytes, sizeof(bytes)),
                            iree_allocator_null(), &buffer);
  EXPECT_OK(vm_buffer_fill_i64(&buffer, 1, 0, 9));
  EXPECT_OK(vm_buffer_store_i64(&buffer, 0, -2));
  int64_t w = 0;
  EXPECT_OK(vm_buffer_load_i64(&buffer, 0, &w));
  EXPECT(w == -2);
  EXPECT_CODE(vm_buffer_load_i64(&buffer, 1, &w), IREE_STATUS_OUT_OF_RANGE);
  iree_vm_buffer_deinitialize(&buffer);
}

int main(void) {
  test_division();
  test_wrapping_and_bits();
  test_comparisons_and_min_max();
  test_casts();
  test_zero_length_buffers();
  return TEST_RESULT();
}
