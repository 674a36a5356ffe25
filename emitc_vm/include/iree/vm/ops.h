// The VM's scalar, global and buffer operations, as the vm-c emitter of IREE
// 3.13 names them (vm.add.i32 -> vm_add_i32, ...). Semantics follow IREE's VM
// so that a vm-c module computes what the bytecode module computes.
//
// Booleans are int32_t 0/1. Buffer offsets and lengths count elements of the
// access type. Loads and stores go through memcpy (no alignment assumption).

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
VM_GLOBAL_OPS_(double, f64)
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
  iree_host_size_t end = element_offset + element_count;
  if (end < element_offset || end > buffer->data.data_length / element_size) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "vm.buffer access [%zu, %zu) x %zu B out of range of %zu bytes",
                            element_offset, end, element_size, buffer->data.data_length);
  }
  *out_ptr = buffer->data.data + element_offset * element_size;
  return iree_ok_status();
}

#define VM_BUFFER_FILL_(T, suffix)                                                                       \
  static inline iree_status_t vm_buffer_fill_##suffix(iree_vm_buffer_t* buffer, iree_host_size_t offset, \
                                                      iree_host_size_t length, T value) {                \
    uint8_t* p;                                                                                          \
    IREE_RETURN_IF_ERROR(vm_buffer_check_(buffer, offset, length, sizeof(T), true, &p));                 \
    for (iree_host_size_t i = 0; i < length; ++i) memcpy(p + i * sizeof(T), &value, sizeof(T));          \
    return iree_ok_status();                                                                             \
  }
static inline iree_status_t vm_buffer_fill_i8(iree_vm_buffer_t* buffer, iree_host_size_t offset,
                                              iree_host_size_t length, uint8_t value) {
  uint8_t* p;
  IREE_RETURN_IF_ERROR(vm_buffer_check_(buffer, offset, length, 1, true, &p));
  memset(p, value, length);
  return iree_ok_status();
}
VM_BUFFER_FILL_(uint16_t, i16)
VM_BUFFER_FILL_(uint32_t, i32)
VM_BUFFER_FILL_(uint64_t, i64)
VM_BUFFER_FILL_(float, f32)
VM_BUFFER_FILL_(double, f64)
#undef VM_BUFFER_FILL_

#define VM_BUFFER_LOAD_(T, suffix, R)                                                                    \
  static inline iree_status_t vm_buffer_load_##suffix(iree_vm_buffer_t* buffer, iree_host_size_t offset, \
                                                      R* out_value) {                                    \
    uint8_t* p;                                                                                          \
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

#define VM_BUFFER_STORE_(T, suffix)                                                                                  \
  static inline iree_status_t vm_buffer_store_##suffix(iree_vm_buffer_t* buffer, iree_host_size_t offset, T value) { \
    uint8_t* p;                                                                                                      \
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
// Selection and comparison
//===----------------------------------------------------------------------===//

static inline int32_t vm_select_i32(int32_t c, int32_t t, int32_t f) { return c ? t : f; }
static inline int64_t vm_select_i64(int32_t c, int64_t t, int64_t f) { return c ? t : f; }
static inline float vm_select_f32(int32_t c, float t, float f) { return c ? t : f; }
static inline double vm_select_f64(int32_t c, double t, double f) { return c ? t : f; }

static inline int32_t vm_cmp_eq_i32(int32_t a, int32_t b) { return a == b; }
static inline int32_t vm_cmp_ne_i32(int32_t a, int32_t b) { return a != b; }
static inline int32_t vm_cmp_lt_i32s(int32_t a, int32_t b) { return a < b; }
static inline int32_t vm_cmp_lt_i32u(int32_t a, int32_t b) { return (uint32_t)a < (uint32_t)b; }
static inline int32_t vm_cmp_nz_i32(int32_t a) { return a != 0; }
static inline int32_t vm_cmp_eq_i64(int64_t a, int64_t b) { return a == b; }
static inline int32_t vm_cmp_ne_i64(int64_t a, int64_t b) { return a != b; }
static inline int32_t vm_cmp_lt_i64s(int64_t a, int64_t b) { return a < b; }
static inline int32_t vm_cmp_lt_i64u(int64_t a, int64_t b) { return (uint64_t)a < (uint64_t)b; }
static inline int32_t vm_cmp_nz_i64(int64_t a) { return a != 0; }
static inline int32_t vm_cmp_eq_ref(iree_vm_ref_t* a, iree_vm_ref_t* b) { return iree_vm_ref_equal(a, b); }
static inline int32_t vm_cmp_ne_ref(iree_vm_ref_t* a, iree_vm_ref_t* b) { return !iree_vm_ref_equal(a, b); }
static inline int32_t vm_cmp_nz_ref(iree_vm_ref_t* a) { return a->ptr != NULL; }

#define VM_FLOAT_CMP_(T, s)                                                                            \
  static inline int32_t vm_cmp_eq_##s##o(T a, T b) { return a == b; }                                  \
  static inline int32_t vm_cmp_eq_##s##u(T a, T b) { return isunordered(a, b) || a == b; }             \
  static inline int32_t vm_cmp_ne_##s##o(T a, T b) { return !isunordered(a, b) && a != b; }            \
  static inline int32_t vm_cmp_ne_##s##u(T a, T b) { return a != b; }                                  \
  static inline int32_t vm_cmp_lt_##s##o(T a, T b) { return isless(a, b); }                            \
  static inline int32_t vm_cmp_lt_##s##u(T a, T b) { return isunordered(a, b) || isless(a, b); }       \
  static inline int32_t vm_cmp_lte_##s##o(T a, T b) { return islessequal(a, b); }                      \
  static inline int32_t vm_cmp_lte_##s##u(T a, T b) { return isunordered(a, b) || islessequal(a, b); } \
  static inline int32_t vm_cmp_nan_##s(T a) { return isnan(a) ? 1 : 0; }
VM_FLOAT_CMP_(float, f32)
VM_FLOAT_CMP_(double, f64)
#undef VM_FLOAT_CMP_

//===----------------------------------------------------------------------===//
// Integer arithmetic and bit operations (two's complement wrap-around)
//===----------------------------------------------------------------------===//

#define VM_INT_OPS_(T, U, s, bits)                                                        \
  static inline T vm_add_##s(T a, T b) { return (T)((U)a + (U)b); }                       \
  static inline T vm_sub_##s(T a, T b) { return (T)((U)a - (U)b); }                       \
  static inline T vm_mul_##s(T a, T b) { return (T)((U)a * (U)b); }                       \
  static inline T vm_div_##s##s(T a, T b) { return a / b; }                               \
  static inline T vm_div_##s##u(T a, T b) { return (T)((U)a / (U)b); }                    \
  static inline T vm_rem_##s##s(T a, T b) { return a % b; }                               \
  static inline T vm_rem_##s##u(T a, T b) { return (T)((U)a % (U)b); }                    \
  static inline T vm_fma_##s(T a, T b, T c) { return (T)((U)a * (U)b + (U)c); }           \
  static inline T vm_abs_##s(T a) { return a < 0 ? (T)(0 - (U)a) : a; }                   \
  static inline T vm_min_##s##s(T a, T b) { return b < a ? b : a; }                       \
  static inline T vm_min_##s##u(T a, T b) { return (U)b < (U)a ? b : a; }                 \
  static inline T vm_max_##s##s(T a, T b) { return a < b ? b : a; }                       \
  static inline T vm_max_##s##u(T a, T b) { return (U)a < (U)b ? b : a; }                 \
  static inline T vm_not_##s(T a) { return (T) ~(U)a; }                                   \
  static inline T vm_and_##s(T a, T b) { return a & b; }                                  \
  static inline T vm_or_##s(T a, T b) { return a | b; }                                   \
  static inline T vm_xor_##s(T a, T b) { return a ^ b; }                                  \
  static inline T vm_shl_##s(T a, int32_t n) { return (T)((U)a << (n & (bits - 1))); }    \
  static inline T vm_shr_##s##s(T a, int32_t n) { return (T)(a >> (n & (bits - 1))); }    \
  static inline T vm_shr_##s##u(T a, int32_t n) { return (T)((U)a >> (n & (bits - 1))); } \
  static inline T vm_ctlz_##s(T a) {                                                      \
    U v = (U)a;                                                                           \
    T n = 0;                                                                              \
    if (v == 0) return bits;                                                              \
    while (!(v & ((U)1 << (bits - 1)))) {                                                 \
      v <<= 1;                                                                            \
      ++n;                                                                                \
    }                                                                                     \
    return n;                                                                             \
  }
VM_INT_OPS_(int32_t, uint32_t, i32, 32)
VM_INT_OPS_(int64_t, uint64_t, i64, 64)
#undef VM_INT_OPS_

//===----------------------------------------------------------------------===//
// Integer casts
//===----------------------------------------------------------------------===//

static inline int32_t vm_trunc_i32i8(int32_t a) { return (int32_t)(uint8_t)a; }
static inline int32_t vm_trunc_i32i16(int32_t a) { return (int32_t)(uint16_t)a; }
static inline int32_t vm_trunc_i64i32(int64_t a) { return (int32_t)(uint32_t)(uint64_t)a; }
static inline int32_t vm_ext_i8i32s(int32_t a) { return (int32_t)(int8_t)a; }
static inline int32_t vm_ext_i8i32u(int32_t a) { return (int32_t)(uint8_t)a; }
static inline int32_t vm_ext_i16i32s(int32_t a) { return (int32_t)(int16_t)a; }
static inline int32_t vm_ext_i16i32u(int32_t a) { return (int32_t)(uint16_t)a; }
static inline int64_t vm_ext_i32i64s(int32_t a) { return (int64_t)a; }
static inline int64_t vm_ext_i32i64u(int32_t a) { return (int64_t)(uint32_t)a; }

//===----------------------------------------------------------------------===//
// Floating point (IREE's VM semantics: float-to-int casts round half away
// from zero; rem is the IEEE remainder)
//===----------------------------------------------------------------------===//

#define VM_FLOAT_OPS_(T, s, fn)                                               \
  static inline T vm_add_##s(T a, T b) { return a + b; }                      \
  static inline T vm_sub_##s(T a, T b) { return a - b; }                      \
  static inline T vm_mul_##s(T a, T b) { return a * b; }                      \
  static inline T vm_div_##s(T a, T b) { return a / b; }                      \
  static inline T vm_rem_##s(T a, T b) { return remainder##fn(a, b); }        \
  static inline T vm_fma_##s(T a, T b, T c) { return a * b + c; }             \
  static inline T vm_abs_##s(T a) { return fabs##fn(a); }                     \
  static inline T vm_neg_##s(T a) { return -a; }                              \
  static inline T vm_ceil_##s(T a) { return ceil##fn(a); }                    \
  static inline T vm_floor_##s(T a) { return floor##fn(a); }                  \
  static inline T vm_round_##s(T a) { return round##fn(a); }                  \
  static inline T vm_round_##s##_even(T a) {                                  \
    T r = round##fn(a);                                                       \
    if (fabs##fn(a - trunc##fn(a)) == (T)0.5) r = (T)2 * round##fn(a / (T)2); \
    return r;                                                                 \
  }                                                                           \
  static inline T vm_min_##s(T a, T b) { return b < a ? b : a; }              \
  static inline T vm_max_##s(T a, T b) { return a < b ? b : a; }              \
  static inline T vm_atan_##s(T a) { return atan##fn(a); }                    \
  static inline T vm_atan2_##s(T y, T x) { return atan2##fn(y, x); }          \
  static inline T vm_cos_##s(T a) { return cos##fn(a); }                      \
  static inline T vm_sin_##s(T a) { return sin##fn(a); }                      \
  static inline T vm_exp_##s(T a) { return exp##fn(a); }                      \
  static inline T vm_exp2_##s(T a) { return exp2##fn(a); }                    \
  static inline T vm_expm1_##s(T a) { return expm1##fn(a); }                  \
  static inline T vm_log_##s(T a) { return log##fn(a); }                      \
  static inline T vm_log10_##s(T a) { return log10##fn(a); }                  \
  static inline T vm_log1p_##s(T a) { return log1p##fn(a); }                  \
  static inline T vm_log2_##s(T a) { return log2##fn(a); }                    \
  static inline T vm_pow_##s(T a, T b) { return pow##fn(a, b); }              \
  static inline T vm_rsqrt_##s(T a) { return (T)1 / sqrt##fn(a); }            \
  static inline T vm_sqrt_##s(T a) { return sqrt##fn(a); }                    \
  static inline T vm_tanh_##s(T a) { return tanh##fn(a); }                    \
  static inline T vm_erf_##s(T a) { return erf##fn(a); }
VM_FLOAT_OPS_(float, f32, f)
VM_FLOAT_OPS_(double, f64, )
#undef VM_FLOAT_OPS_

static inline float vm_cast_si32f32(int32_t a) { return (float)a; }
static inline float vm_cast_si64f32(int64_t a) { return (float)a; }
static inline float vm_cast_ui32f32(int32_t a) { return (float)(uint32_t)a; }
static inline float vm_cast_ui64f32(int64_t a) { return (float)(uint64_t)a; }
static inline int32_t vm_cast_f32si32(float a) { return (int32_t)lroundf(a); }
static inline int64_t vm_cast_f32si64(float a) { return (int64_t)llroundf(a); }
static inline int32_t vm_cast_f32ui32(float a) { return (int32_t)(uint32_t)llroundf(a); }
static inline int64_t vm_cast_f32ui64(float a) { return (int64_t)(uint64_t)roundf(a); }
static inline float vm_bitcast_i32f32(int32_t a) {
  float f;
  memcpy(&f, &a, 4);
  return f;
}
static inline int32_t vm_bitcast_f32i32(float a) {
  int32_t i;
  memcpy(&i, &a, 4);
  return i;
}
static inline double vm_trunc_f64f32(double a) { return (double)(float)a; }
static inline double vm_ext_f32f64(float a) { return (double)a; }
static inline double vm_cast_si32f64(int32_t a) { return (double)a; }
static inline double vm_cast_ui32f64(int32_t a) { return (double)(uint32_t)a; }
static inline double vm_cast_si64f64(int64_t a) { return (double)a; }
static inline double vm_cast_ui64f64(int64_t a) { return (double)(uint64_t)a; }
static inline int32_t vm_cast_f64si32(double a) { return (int32_t)lround(a); }
static inline int32_t vm_cast_f64ui32(double a) { return (int32_t)(uint32_t)llround(a); }
static inline int64_t vm_cast_f64si64(double a) { return (int64_t)llround(a); }
static inline int64_t vm_cast_f64ui64(double a) { return (int64_t)(uint64_t)llround(a); }
static inline double vm_bitcast_i64f64(int64_t a) {
  double f;
  memcpy(&f, &a, 8);
  return f;
}
static inline int64_t vm_bitcast_f64i64(double a) {
  int64_t i;
  memcpy(&i, &a, 8);
  return i;
}

#endif  // IREE_VM_OPS_H_
