// Helpers for the HAL modules' functions: typed access to reference
// arguments, with errors that name the function and the argument.

#ifndef NPUKIT_HAL_MODULE_ARGS_H_
#define NPUKIT_HAL_MODULE_ARGS_H_

#include "iree/vm/api.h"
#include "iree/vm/shims_emitc.h"
#include "npukit/hal/buffer_view.h"
#include "npukit/hal/executable.h"

// Every function of a HAL module has the vm-c export shape, so that the
// descriptors can use iree_emitc_shim as their shim.
#define NPUKIT_HAL_FUNCTION(name)                                                                                 \
  static iree_status_t name(iree_vm_stack_t* stack, iree_vm_native_function_flags_t flags, iree_byte_span_t args, \
                            iree_byte_span_t rets, void* module, void* module_state)

#define NPUKIT_HAL_UNUSED_CALL_ARGS \
  (void)stack;                      \
  (void)flags;                      \
  (void)module;                     \
  (void)module_state

// Defines npukit_arg_<Name>(ref, nullable, fn, arg, &out): the object a ref
// argument holds, or an error naming the function and the argument.
#define NPUKIT_HAL_DEFINE_ARG(Name, T)                                                                   \
  static inline iree_status_t npukit_arg_##Name(const iree_vm_ref_t* ref, bool nullable, const char* fn, \
                                                const char* arg, T** out) {                              \
    *out = NULL;                                                                                         \
    if (!ref->ptr && nullable) return iree_ok_status();                                                  \
    *out = Name##_deref(*ref);                                                                           \
    if (!*out) {                                                                                         \
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: %s is %s, expected a %s", fn, arg,      \
                              ref->ptr ? "of another type" : "null", Name##_descriptor.type_name.data);  \
    }                                                                                                    \
    return iree_ok_status();                                                                             \
  }
NPUKIT_HAL_DEFINE_ARG(iree_vm_buffer, iree_vm_buffer_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_buffer, npukit_hal_buffer_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_buffer_view, npukit_hal_buffer_view_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_executable, npukit_hal_executable_t)

// Writes a function's single result: a ref (taking over the reference), an
// i32 or an i64.
static inline iree_status_t npukit_ret_ref(const char* fn, iree_byte_span_t rets, void* ptr, iree_vm_ref_type_t type) {
  iree_vm_ref_t ref = {ptr, ptr ? type : 0};
  iree_vm_abi_writer_t w = iree_vm_abi_writer(rets);
  iree_vm_abi_write_ref_move(&w, &ref);
  return iree_vm_abi_reader_finish(&w, fn);
}

static inline iree_status_t npukit_ret_i32(const char* fn, iree_byte_span_t rets, int32_t value) {
  iree_vm_abi_writer_t w = iree_vm_abi_writer(rets);
  iree_vm_abi_write_i32(&w, value);
  return iree_vm_abi_reader_finish(&w, fn);
}

static inline iree_status_t npukit_ret_i64(const char* fn, iree_byte_span_t rets, int64_t value) {
  iree_vm_abi_writer_t w = iree_vm_abi_writer(rets);
  iree_vm_abi_write_i64(&w, value);
  return iree_vm_abi_reader_finish(&w, fn);
}

static inline iree_string_view_t npukit_vm_buffer_string(const iree_vm_buffer_t* buffer) {
  return buffer ? iree_make_string_view((const char*)buffer->data.data, buffer->data.data_length)
                : iree_string_view_empty();
}

// The functions two HAL modules both export (shared_calls.c); |fn| is the
// exported name, for messages.
iree_status_t npukit_hal_call_buffer_length(const char* fn, iree_byte_span_t args, iree_byte_span_t rets);
iree_status_t npukit_hal_call_buffer_subspan(const char* fn, iree_byte_span_t args, iree_byte_span_t rets,
                                             iree_allocator_t allocator);
iree_status_t npukit_hal_call_buffer_view_create(const char* fn, iree_byte_span_t args, iree_byte_span_t rets,
                                                 iree_allocator_t allocator);
iree_status_t npukit_hal_call_buffer_view_assert(const char* fn, iree_byte_span_t args);
iree_status_t npukit_hal_call_buffer_view_buffer(const char* fn, iree_byte_span_t args, iree_byte_span_t rets);
iree_status_t npukit_hal_call_buffer_view_dim(const char* fn, iree_byte_span_t args, iree_byte_span_t rets);
typedef enum npukit_hal_view_property_e {
  NPUKIT_HAL_VIEW_ELEMENT_TYPE,
  NPUKIT_HAL_VIEW_ENCODING_TYPE,
  NPUKIT_HAL_VIEW_RANK,
} npukit_hal_view_property_t;
iree_status_t npukit_hal_call_buffer_view_property(const char* fn, iree_byte_span_t args, iree_byte_span_t rets,
                                                   npukit_hal_view_property_t property);
iree_status_t npukit_hal_call_executable_lookup_function(const char* fn, iree_byte_span_t args, iree_byte_span_t rets);

#endif  // NPUKIT_HAL_MODULE_ARGS_H_
