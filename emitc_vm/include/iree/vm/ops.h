// The VM operations that IREE 3.13's vm-c emitter turns into calls, under the
// names it calls (vm.add.i32 -> vm_add_i32, vm.div.i64.s -> vm_div_i64s, ...):
// exactly the helpers its conversion table uses, no more
// (tests/runtime/test_vm_ops.py compiles every VM operation and checks both
// directions, then compares each operation's results with IREE's own
// runtime). The emitter converts no f64 arithmetic, comparison or cast and no
// f64 global; f64 reaches vm-c modules only through buffers.
//
// Semantics are IREE's VM's, so that a vm-c module computes what the
// bytecode module computes: integers wrap (two's complement), shift amounts
// are taken modulo the width, booleans are int32_t 0/1, float-to-integer
// casts round half away from zero. Where IREE's VM leaves a result undefined
// and its runtime traps (integer division by zero, INT_MIN / -1), these
// helpers return a defined value instead of crashing: x / 0 = 0, x % 0 = x,
// INT_MIN / -1 = INT_MIN and INT_MIN % -1 = 0 (the results of Arm's SDIV and
// UDIV; x == (x / y) * y + x % y still holds).
//
// Buffer offsets and lengths count elements of the access type; loads and
// stores go through memcpy (no alignment assumption).

#ifndef IREE_VM_OPS_H_
#define IREE_VM_OPS_H_

#include <math.h>

#include "iree/vm/buffer.h"

//===----------------------------------------------------------------------===//
// Globals (|base| is the module state's rwdata, |offset| in bytes)
//===----------------------------------------------------------------------===//

#define VM_GLOBAL_OPS_(T, suffix)                                                        \
  static inline T vm_global_load_##suffix(uint8_t* base, uint32_t offset) {              \
    T v;                                                                                 \
    memcpy(&v, base + offset, sizeof(T));                                                \
    return v;                                                                            \
  }                                                                                      \
  static inline void vm_global_store_##suffix(uint8_t* base, uint32_t offset, T value) { \
    memcpy(base + offset, &value, sizeof(T));                                            \
  }
VM_GLOBAL_OPS_(int32_t, i32)
VM_GLOBAL_OPS_(int64_t, i64)
VM_GLOBAL_OPS_(float, f32)
#undef VM_GLOBAL_OPS_

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

static inline iree_status_t vm_buffer_check_(const iree_vm_buffer_t* buffer, iree_host_size_t element_offset,
                                             iree_host_size_t element_count, iree_host_size_t element_size, bool write,
                                             uint8_t** out_ptr) {
  if (write && !(buffer->access & IREE_VM_BUFFER_ACCESS_MUTABLE)) {
    return iree_make_status(IREE_STATUS_PERMISSION_DENIED, "write to a read-only vm.buffer");
  }
  iree_host_size_t capacity = buffer->data.data_length / element_size;
  if (element_offset > capacity || element_count > capacity - element_offset) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "vm.buffer access of %zu x %zu B at element %zu is outside %zu B",
                            element_count, element_size, element_offset, buffer->data.data_length);
  }
  *out_ptr = buffer->data.data + element_offset * element_size;
  return iree_ok_status();
}

static inline iree_status_t vm_buffer_fill_i8(iree_vm_buffer_t* buffer, iree_host_size_t offset,
                                              iree_host_size_t length, uint8_t value) {
  uint8_t* p = NULL;
  IREE_RETURN_IF_ERROR(vm_buffer_check_(buffer, offset, length, 1, true, &p));
  if (length) memset(p, value, length);
  return iree_ok_status();
}
#define VM_BUFFER_FILL_(T, suffix)                                                                       \
  static inline iree_status_t vm_buffer_fill_##suffix(iree_vm_buffer_t* buffer, iree_host_size_t offset, \
                                                      iree_host_size_t length, T value) {                \
    uint8_t* p = NULL;                                                                                   \
    IREE_RETURN_IF_ERROR(vm_buffer_check_(buffer, offset, length, sizeof(T), true, &p));                 \
    for (iree_host_size_t i = 0; i < length; ++i) memcpy(p + i * sizeof(T), &value, sizeof(T));          \
    return iree_ok_status();                                                                             \
  }
VM_BUFFER_FILL_(uint16_t, i16)
VM_BUFFER_FILL_(uint32_t, i32)
VM_BUFFER_FILL_(uint64_t, i64)
VM_BUFFER_FILL_(float, f32)
VM_BUFFER_FILL_(double, f64)
#undef VM_BUFFER_FILL_

// Loads widen to the register type: i8 and i16 by sign or zero extension.
#define VM_BUFFER_LOAD_(T, suffix, R)                                                                    \
  static inline iree_status_t vm_buffer_load_##suffix(iree_vm_buffer_t* buffer, iree_host_size_t offset, \
                                                      R* out_value) {                                    \
    uint8_t* p = NULL;                                                                                   \
    IREE_RETURN_IF_ERROR(vm_buffer_check_(buffer, offset, 1, sizeof(T), false, &p));                     \
    T v;                                                                                                 \
    memcpy(&v, p, sizeof(T));                                                                            \
    *out_value = (R)v;                                                                                   \
    return iree_ok_status();                                                                             \
  }
VM_BUFFER_LOAD_(uint8_t, i8u, int32_t)
VM_BUFFER_LOAD_(int8_t, i8s, int32_t)
VM_BUFFER_LOAD_(uint16_t, i16u, int32_t)
VM_BUFFER_LOAD_(int16_t, i16s, int32_t)
VM_BUFFER_LOAD_(int32_t, i32, int32_t)
VM_BUFFER_LOAD_(int64_t, i64, int64_t)
VM_BUFFER_LOAD_(float, f32, float)
VM_BUFFER_LOAD_(double, f64, double)
#undef VM_BUFFER_LOAD_

// Stores narrow: the low bytes of the value.
#define VM_BUFFER_STORE_(T, suffix)                                                                                  \
  static inline iree_status_t vm_buffer_store_##suffix(iree_vm_buffer_t* buffer, iree_host_size_t offset, T value) { \
    uint8_t* p = NULL;                                                                                               \
    IREE_RETURN_IF_ERROR(vm_buffer_check_(buffer, offset, 1, sizeof(T), true, &p));                                  \
    memcpy(p, &value, sizeof(T));                                                                                    \
    return iree_ok_status();                                                                                         \
  }
VM_BUFFER_STORE_(uint8_t, i8)
VM_BUFFER_STORE_(uint16_t, i16)
VM_BUFFER_STORE_(uint32_t, i32)
VM_BUFFER_STORE_(uint64_t, i64)
VM_BUFFER_STORE_(float, f32)
VM_BUFFER_STORE_(double, f64)
#undef VM_BUFFER_STORE_

static inline iree_status_t vm_buffer_compare(const iree_vm_buffer_t* lhs, iree_host_size_t lhs_offset,
                                              const iree_vm_buffer_t* rhs, iree_host_size_t rhs_offset,
                                              iree_host_size_t length, int32_t* out_result) {
  bool equal = false;
  IREE_RETURN_IF_ERROR(iree_vm_buffer_compare_bytes(lhs, lhs_offset, rhs, rhs_offset, length, &equal));
  *out_result = equal ? 1 : 0;
  return iree_ok_status();
}

//===----------------------------------------------------------------------===//
// Selection
//===----------------------------------------------------------------------===//

static inline int32_t vm_select_i32(int32_t c, int32_t t, int32_t f) { return c ? t : f; }
static inline int64_t vm_select_i64(int32_t c, int64_t t, int64_t f) { return c ? t : f; }
static inline float vm_select_f32(int32_t c, float t, float f) { return c ? t : f; }

//===----------------------------------------------------------------------===//
// Integer arithmetic, bit operations and comparisons, for i32 and i64
// (|S| signed, |U| unsigned, |W| bits; the operation's suffix |X|)
//===----------------------------------------------------------------------===//

#if defined(__GNUC__) || defined(__clang__)
static inline int32_t vm_clz32_(uint32_t v) { return v ? __builtin_clz(v) : 32; }
static inline int32_t vm_clz64_(uint64_t v) { return v ? __builtin_clzll(v) : 64; }
#else
static inline int32_t vm_clz32_(uint32_t v) {
  int32_t n = 0;
  for (uint32_t bit = 1u << 31; bit && !(v & bit); bit >>= 1) ++n;
  return n;
}
static inline int32_t vm_clz64_(uint64_t v) {
  int32_t n = 0;
  for (uint64_t bit = 1ull << 63; bit && !(v & bit); bit >>= 1) ++n;
  return n;
}
#endif

#define VM_INTEGER_OPS_(S, U, X, W)                                                                   \
  static inline S vm_add_##X(S a, S b) { return (S)((U)a + (U)b); }                                        \
  static inline S vm_sub_##X(S a, S b) { return (S)((U)a - (U)b); }                                        \
  static inline S vm_mul_##X(S a, S b) { return (S)((U)a * (U)b); }                                        \
  static inline S vm_fma_##X(S a, S b, S c) { return (S)((U)a * (U)b + (U)c); }                            \
  static inline S vm_div_##X##s(S a, S b) { return b == 0 ? 0 : (b == -1 ? (S)(0 - (U)a) : a / b); }       \
  static inline S vm_div_##X##u(S a, S b) { return b == 0 ? 0 : (S)((U)a / (U)b); }                        \
  static inline S vm_rem_##X##s(S a, S b) { return b == 0 ? a : (b == -1 ? 0 : a % b); }                   \
  static inline S vm_rem_##X##u(S a, S b) { return b == 0 ? a : (S)((U)a % (U)b); }                        \
  static inline S vm_abs_##X(S a) { return a < 0 ? (S)(0 - (U)a) : a; }                                    \
  static inline S vm_min_##X##s(S a, S b) { return b < a ? b : a; }                                        \
  static inline S vm_min_##X##u(S a, S b) { return (U)b < (U)a ? b : a; }                                  \
  static inline S vm_max_##X##s(S a, S b) { return a < b ? b : a; }                                        \
  static inline S vm_max_##X##u(S a, S b) { return (U)a < (U)b ? b : a; }                                  \
  static inline S vm_not_##X(S a) { return (S) ~(U)a; }                                                    \
  static inline S vm_and_##X(S a, S b) { return (S)((U)a & (U)b); }                                        \
  static inline S vm_or_##X(S a, S b) { return (S)((U)a | (U)b); }                                         \
  static inline S vm_xor_##X(S a, S b) { return (S)((U)a ^ (U)b); }                                        \
  static inline S vm_shl_##X(S a, int32_t n) { return (S)((U)a << (n & (W - 1))); }                        \
  static inline S vm_shr_##X##u(S a, int32_t n) { return (S)((U)a >> (n & (W - 1))); }                     \
  /* Arithmetic right shift without relying on how >> treats negative values. */                           \
  static inline S vm_shr_##X##s(S a, int32_t n) {                                                          \
    U shifted = (U)a >> (n & (W - 1));                                                                     \
    U sign_fill = a < 0 ? ~((U)-1 >> (n & (W - 1))) : 0;                                                   \
    return (S)(shifted | sign_fill);                                                                       \
  }                                                                                                        \
  static inline S vm_ctlz_##X(S a) { return (S)vm_clz##W##_((U)a); }                                       \
  static inline int32_t vm_cmp_eq_##X(S a, S b) { return a == b; }                                         \
  static inline int32_t vm_cmp_ne_##X(S a, S b) { return a != b; }                                         \
  static inline int32_t vm_cmp_lt_##X##s(S a, S b) { return a < b; }                                      \
  static inline int32_t vm_cmp_lt_##X##u(S a, S b) { return (U)a < (U)b; }                                \
  static inline int32_t vm_cmp_nz_##X(S a) { return a != 0; }
VM_INTEGER_OPS_(int32_t, uint32_t, i32, 32)
VM_INTEGER_OPS_(int64_t, uint64_t, i64, 64)
#undef VM_INTEGER_OPS_

static inline int32_t vm_trunc_i32i8(int32_t a) { return (int32_t)(uint8_t)a; }
static inline int32_t vm_trunc_i32i16(int32_t a) { return (int32_t)(uint16_t)a; }
static inline int32_t vm_trunc_i64i32(int64_t a) { return (int32_t)(uint32_t)(uint64_t)a; }
static inline int32_t vm_ext_i8i32s(int32_t a) { return (int32_t)(int8_t)(uint8_t)a; }
static inline int32_t vm_ext_i8i32u(int32_t a) { return (int32_t)(uint8_t)a; }
static inline int32_t vm_ext_i16i32s(int32_t a) { return (int32_t)(int16_t)(uint16_t)a; }
static inline int32_t vm_ext_i16i32u(int32_t a) { return (int32_t)(uint16_t)a; }
static inline int64_t vm_ext_i32i64s(int32_t a) { return (int64_t)a; }
static inline int64_t vm_ext_i32i64u(int32_t a) { return (int64_t)(uint32_t)a; }

//===----------------------------------------------------------------------===//
// Refs
//===----------------------------------------------------------------------===//

static inline int32_t vm_cmp_eq_ref(iree_vm_ref_t* a, iree_vm_ref_t* b) { return iree_vm_ref_equal(a, b); }
static inline int32_t vm_cmp_ne_ref(iree_vm_ref_t* a, iree_vm_ref_t* b) { return !iree_vm_ref_equal(a, b); }
static inline int32_t vm_cmp_nz_ref(iree_vm_ref_t* a) { return a->ptr != NULL; }

//===----------------------------------------------------------------------===//
// f32 arithmetic, comparisons and casts
//===----------------------------------------------------------------------===//

static inline float vm_add_f32(float a, float b) { return a + b; }
static inline float vm_sub_f32(float a, float b) { return a - b; }
static inline float vm_mul_f32(float a, float b) { return a * b; }
static inline float vm_div_f32(float a, float b) { return a / b; }
static inline float vm_rem_f32(float a, float b) { return remainderf(a, b); }
// Fused where the target has a fast fused multiply-add, as IREE's VM does.
static inline float vm_fma_f32(float a, float b, float c) {
#if defined(FP_FAST_FMAF)
  return fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
static inline float vm_abs_f32(float a) { return fabsf(a); }
static inline float vm_neg_f32(float a) { return -a; }
static inline float vm_ceil_f32(float a) { return ceilf(a); }
static inline float vm_floor_f32(float a) { return floorf(a); }
static inline float vm_round_f32(float a) { return roundf(a); }
// Ties to even, derived from roundf as IREE's VM does it (a tie that roundf
// took away from zero to an odd integer comes back by one, so -0.5 gives +0).
static inline float vm_round_f32_even(float a) {
  float r = roundf(a);
  if (fabsf(a - r) == 0.5f && fmodf(r, 2.0f) != 0.0f) r += r > 0.0f ? -1.0f : 1.0f;
  return r;
}
// NaN in the first operand is kept, in the second it is not: IREE's VM's
// comparisons, written out.
static inline float vm_min_f32(float a, float b) { return b < a ? b : a; }
static inline float vm_max_f32(float a, float b) { return a < b ? b : a; }
static inline float vm_atan_f32(float a) { return atanf(a); }
static inline float vm_atan2_f32(float y, float x) { return atan2f(y, x); }
static inline float vm_cos_f32(float a) { return cosf(a); }
static inline float vm_sin_f32(float a) { return sinf(a); }
static inline float vm_exp_f32(float a) { return expf(a); }
static inline float vm_exp2_f32(float a) { return exp2f(a); }
static inline float vm_expm1_f32(float a) { return expm1f(a); }
static inline float vm_log_f32(float a) { return logf(a); }
static inline float vm_log10_f32(float a) { return log10f(a); }
static inline float vm_log1p_f32(float a) { return log1pf(a); }
static inline float vm_log2_f32(float a) { return log2f(a); }
static inline float vm_pow_f32(float a, float b) { return powf(a, b); }
// The exponent's low 32 bits, by squaring and multiplying in f32 (as IREE's
// VM does, through the compiler's powi); a negative exponent gives 1 / a^-n.
static inline float vm_fpowi_f32(float a, int64_t n) {
  int32_t e = (int32_t)(uint32_t)(uint64_t)n;
  uint32_t bits = e < 0 ? 0u - (uint32_t)e : (uint32_t)e;
  float r = 1.0f;
  for (; bits; bits >>= 1) {
    if (bits & 1u) r *= a;
    if (bits > 1u) a *= a;
  }
  return e < 0 ? 1.0f / r : r;
}
static inline float vm_rsqrt_f32(float a) { return 1.0f / sqrtf(a); }
static inline float vm_sqrt_f32(float a) { return sqrtf(a); }
static inline float vm_tanh_f32(float a) { return tanhf(a); }
static inline float vm_erf_f32(float a) { return erff(a); }

static inline int32_t vm_cmp_eq_f32o(float a, float b) { return a == b; }
static inline int32_t vm_cmp_eq_f32u(float a, float b) { return isunordered(a, b) || a == b; }
// Ordered inequality is a != b in IREE's VM: true when either is NaN.
static inline int32_t vm_cmp_ne_f32o(float a, float b) { return a != b; }
static inline int32_t vm_cmp_ne_f32u(float a, float b) { return a != b; }
static inline int32_t vm_cmp_lt_f32o(float a, float b) { return isless(a, b); }
static inline int32_t vm_cmp_lt_f32u(float a, float b) { return isunordered(a, b) || isless(a, b); }
static inline int32_t vm_cmp_lte_f32o(float a, float b) { return islessequal(a, b); }
static inline int32_t vm_cmp_lte_f32u(float a, float b) { return isunordered(a, b) || islessequal(a, b); }
static inline int32_t vm_cmp_nan_f32(float a) { return isnan(a) ? 1 : 0; }

static inline float vm_cast_si32f32(int32_t a) { return (float)a; }
static inline float vm_cast_ui32f32(int32_t a) { return (float)(uint32_t)a; }
static inline float vm_cast_si64f32(int64_t a) { return (float)a; }
static inline float vm_cast_ui64f32(int64_t a) { return (float)(uint64_t)a; }
// Out of range (and NaN) give what the C library's lroundf/llroundf give.
static inline int32_t vm_cast_f32si32(float a) { return (int32_t)lroundf(a); }
static inline int32_t vm_cast_f32ui32(float a) { return (int32_t)(uint32_t)llroundf(a); }
static inline int64_t vm_cast_f32si64(float a) { return (int64_t)llroundf(a); }
static inline int64_t vm_cast_f32ui64(float a) { return (int64_t)(uint64_t)llroundf(a); }
static inline float vm_bitcast_i32f32(int32_t a) {
  float f;
  memcpy(&f, &a, sizeof(f));
  return f;
}
static inline int32_t vm_bitcast_f32i32(float a) {
  int32_t i;
  memcpy(&i, &a, sizeof(i));
  return i;
}

#endif  // IREE_VM_OPS_H_
