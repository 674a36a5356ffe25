// Argument and result buffers of calls.
//
// Layout rule of IREE 3.13's generated code (and of npukit's runtime): walk
// the values in order; i32/f32 (and variadic counts) take 4 bytes at the next
// 4-byte boundary, i64/f64/ref take 8 bytes (a ref: sizeof(iree_vm_ref_t))
// at the next 8-byte boundary; the total is rounded up to 8 when any 8-byte
// value is present. Variadic spans get no extra alignment at their start.

#ifndef IREE_VM_INVOCATION_H_
#define IREE_VM_INVOCATION_H_

#include "iree/vm/module.h"

#ifdef __cplusplus
extern "C" {
#endif

// Values one side of a call may have; a firmware build whose model has more
// inputs or outputs raises it (npukit's firmware project does so itself).
#ifndef IREE_VM_CALL_MAX_VALUES
#define IREE_VM_CALL_MAX_VALUES 16
#endif

// Offsets of the values of one side (arguments or results) of a calling
// convention without variadic spans.
typedef struct iree_vm_call_layout_t {
  iree_host_size_t count;
  char types[IREE_VM_CALL_MAX_VALUES];  // 'i', 'I', 'f', 'F', 'r'
  iree_host_size_t offsets[IREE_VM_CALL_MAX_VALUES];
  iree_host_size_t size;
} iree_vm_call_layout_t;

// Splits "0<args>_<results>" and lays out both sides.
IREE_API_EXPORT iree_status_t iree_vm_calling_convention_layout(iree_string_view_t calling_convention,
                                                                iree_vm_call_layout_t* out_arguments,
                                                                iree_vm_call_layout_t* out_results);

// Reads packed values in order (for native modules decoding their arguments).
typedef struct iree_vm_abi_reader_t {
  uint8_t* data;
  iree_host_size_t length;
  iree_host_size_t offset;
  bool overrun;
} iree_vm_abi_reader_t;

static inline iree_vm_abi_reader_t iree_vm_abi_reader(iree_byte_span_t span) {
  iree_vm_abi_reader_t r = {span.data, span.data_length, 0, false};
  return r;
}

static inline void* iree_vm_abi_reader_take_(iree_vm_abi_reader_t* r, iree_host_size_t size,
                                             iree_host_size_t alignment) {
  iree_host_size_t at = iree_host_align(r->offset, alignment);
  if (at + size > r->length) {
    r->overrun = true;
    return NULL;
  }
  r->offset = at + size;
  return r->data + at;
}

static inline int32_t iree_vm_abi_read_i32(iree_vm_abi_reader_t* r) {
  int32_t v = 0;
  void* p = iree_vm_abi_reader_take_(r, 4, 4);
  if (p) memcpy(&v, p, 4);
  return v;
}

static inline int64_t iree_vm_abi_read_i64(iree_vm_abi_reader_t* r) {
  int64_t v = 0;
  void* p = iree_vm_abi_reader_take_(r, 8, 8);
  if (p) memcpy(&v, p, 8);
  return v;
}

// A borrowed reference to the ref stored in the argument buffer.
static inline iree_vm_ref_t* iree_vm_abi_read_ref(iree_vm_abi_reader_t* r) {
  static const iree_vm_ref_t null_ref = {NULL, 0};
  void* p = iree_vm_abi_reader_take_(r, sizeof(iree_vm_ref_t), 8);
  return p ? (iree_vm_ref_t*)p : (iree_vm_ref_t*)&null_ref;
}

// Fails unless every byte was consumed (the caller's layout matched).
IREE_API_EXPORT iree_status_t iree_vm_abi_reader_finish(const iree_vm_abi_reader_t* reader, const char* function_name);

// Writes results in order into zero-filled result storage.
typedef iree_vm_abi_reader_t iree_vm_abi_writer_t;

static inline iree_vm_abi_writer_t iree_vm_abi_writer(iree_byte_span_t span) { return iree_vm_abi_reader(span); }

static inline void iree_vm_abi_write_i32(iree_vm_abi_writer_t* w, int32_t value) {
  void* p = iree_vm_abi_reader_take_(w, 4, 4);
  if (p) memcpy(p, &value, 4);
}

static inline void iree_vm_abi_write_i64(iree_vm_abi_writer_t* w, int64_t value) {
  void* p = iree_vm_abi_reader_take_(w, 8, 8);
  if (p) memcpy(p, &value, 8);
}

// Moves the caller's reference into the result slot (*ref becomes null).
static inline void iree_vm_abi_write_ref_move(iree_vm_abi_writer_t* w, iree_vm_ref_t* ref) {
  void* p = iree_vm_abi_reader_take_(w, sizeof(iree_vm_ref_t), 8);
  if (p) {
    iree_vm_ref_move(ref, (iree_vm_ref_t*)p);
  } else {
    iree_vm_ref_release(ref);
  }
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_INVOCATION_H_
