// Helpers for the HAL modules' functions: typed access to reference
// arguments, with errors that name the function and the argument.

#ifndef NPUKIT_HAL_MODULE_ARGS_H_
#define NPUKIT_HAL_MODULE_ARGS_H_

#include "iree/vm/api.h"
#include "iree/vm/shims_emitc.h"
#include "npukit/hal/buffer_view.h"
#include "npukit/hal/executable.h"

// Every function of a HAL module has the vm-c export shape, so that the
// descriptors can use iree_emitc_shim as their shim; most use only some of
// the arguments.
#define NPUKIT_HAL_FUNCTION(name)                                                                                 \
  static iree_status_t name(IREE_ATTRIBUTE_UNUSED iree_vm_stack_t* stack,                                         \
                            IREE_ATTRIBUTE_UNUSED iree_vm_native_function_flags_t flags,                           \
                            IREE_ATTRIBUTE_UNUSED iree_byte_span_t args, IREE_ATTRIBUTE_UNUSED iree_byte_span_t rets, \
                            IREE_ATTRIBUTE_UNUSED void* module, IREE_ATTRIBUTE_UNUSED void* module_state)

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
  }                                                                                                      \
  /* The object of a function whose only argument is that ref (not null). */                             \
  static inline iree_status_t npukit_only_arg_##Name(const char* fn, iree_byte_span_t args, const char* arg, \
                                                     T** out) {                                          \
    iree_vm_abi_reader_t r = iree_vm_abi_reader(args);                                                   \
    iree_vm_ref_t* ref = iree_vm_abi_read_ref(&r);                                                       \
    IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));                                             \
    return npukit_arg_##Name(ref, false, fn, arg, out);                                                  \
  }
NPUKIT_HAL_DEFINE_ARG(iree_vm_buffer, iree_vm_buffer_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_buffer, npukit_hal_buffer_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_buffer_view, npukit_hal_buffer_view_t)
NPUKIT_HAL_DEFINE_ARG(npukit_hal_executable, npukit_hal_executable_t)

// Writes a function's single result: a ref (taking over the reference), an
// i32 or an i64.
static inline iree_status_t npukit_ret_ref_move(const char* fn, iree_byte_span_t rets, iree_vm_ref_t* ref) {
  iree_vm_abi_writer_t w = iree_vm_abi_writer(rets);
  iree_vm_abi_write_ref_move(&w, ref);
  return iree_vm_abi_reader_finish(&w, fn);
}

static inline iree_status_t npukit_ret_ref(const char* fn, iree_byte_span_t rets, void* ptr, iree_vm_ref_type_t type) {
  iree_vm_ref_t ref = {ptr, ptr ? type : 0};
  return npukit_ret_ref_move(fn, rets, &ref);
}

// Defines function |name|, exported as |fn|: (ref) -> ref, where the
// argument holds a T (read with npukit_arg_<Name>) and |get| gives the
// result's ref (a new reference) from it.
#define NPUKIT_HAL_GETTER_FUNCTION(name, fn, Name, T, arg, get)                 \
  NPUKIT_HAL_FUNCTION(name) {                                                \
    T* object;                                                               \
    IREE_RETURN_IF_ERROR(npukit_only_arg_##Name(fn, args, arg, &object));    \
    iree_vm_ref_t result = get(object);                                      \
    return npukit_ret_ref_move(fn, rets, &result);                           \
  }

// Reads a vm.buffer argument and the i64 offset and length that follow it.
static inline iree_status_t npukit_read_vm_buffer_range(const char* fn, iree_vm_abi_reader_t* r, const char* arg,
                                                        iree_vm_buffer_t** out_buffer, int64_t* out_offset,
                                                        int64_t* out_length) {
  iree_vm_ref_t* ref = iree_vm_abi_read_ref(r);
  *out_offset = iree_vm_abi_read_i64(r);
  *out_length = iree_vm_abi_read_i64(r);
  return npukit_arg_iree_vm_buffer(ref, false, fn, arg, out_buffer);
}

// Reads a dispatch's push constants (an i32 count, then that many i32) into
// |constants| (NPUKIT_HAL_MAX_CONSTANTS words) and the count of the binding
// list that follows them.
static inline iree_status_t npukit_read_dispatch_counts(const char* fn, iree_vm_abi_reader_t* r, uint32_t* constants,
                                                        int32_t* out_constant_count, int32_t* out_binding_count) {
  int32_t constant_count = iree_vm_abi_read_i32(r);
  if (constant_count < 0 || constant_count > NPUKIT_HAL_MAX_CONSTANTS) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "%s: %d push constants", fn, (int)constant_count);
  }
  for (int32_t i = 0; i < constant_count; ++i) constants[i] = (uint32_t)iree_vm_abi_read_i32(r);
  int32_t binding_count = iree_vm_abi_read_i32(r);
  if (binding_count < 0 || binding_count > NPUKIT_HAL_MAX_BINDINGS) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "%s: too many bindings (%d)", fn, (int)binding_count);
  }
  *out_constant_count = constant_count;
  *out_binding_count = binding_count;
  return iree_ok_status();
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

// Defines the buffer and buffer view functions hal_inline and hal both export
// (buffer.length, buffer.subspan, buffer_view.*), for a module whose exported
// names start with |prefix| ("hal." ...) and whose state starts with its
// host allocator (npukit_hal_module_allocator).
#define NPUKIT_HAL_SHARED_BUFFER_FUNCTIONS(prefix)                                                              \
  NPUKIT_HAL_FUNCTION(buffer_length) {                                                                          \
    return npukit_hal_call_buffer_length(prefix "buffer.length", args, rets);                                   \
  }                                                                                                             \
  NPUKIT_HAL_FUNCTION(buffer_subspan) {                                                                         \
    return npukit_hal_call_buffer_subspan(prefix "buffer.subspan", args, rets, npukit_hal_module_allocator(module)); \
  }                                                                                                             \
  NPUKIT_HAL_FUNCTION(buffer_view_assert) {                                                                     \
    return npukit_hal_call_buffer_view_assert(prefix "buffer_view.assert", args);                               \
  }                                                                                                             \
  NPUKIT_HAL_FUNCTION(buffer_view_buffer) {                                                                     \
    return npukit_hal_call_buffer_view_buffer(prefix "buffer_view.buffer", args, rets);                         \
  }                                                                                                             \
  NPUKIT_HAL_FUNCTION(buffer_view_create) {                                                                     \
    return npukit_hal_call_buffer_view_create(prefix "buffer_view.create", args, rets,                          \
                                              npukit_hal_module_allocator(module));                             \
  }                                                                                                             \
  NPUKIT_HAL_FUNCTION(buffer_view_dim) {                                                                        \
    return npukit_hal_call_buffer_view_dim(prefix "buffer_view.dim", args, rets);                               \
  }                                                                                                             \
  NPUKIT_HAL_FUNCTION(buffer_view_element_type) {                                                               \
    return npukit_hal_call_buffer_view_property(prefix "buffer_view.element_type", args, rets,                  \
                                                NPUKIT_HAL_VIEW_ELEMENT_TYPE);                                  \
  }                                                                                                             \
  NPUKIT_HAL_FUNCTION(buffer_view_encoding_type) {                                                              \
    return npukit_hal_call_buffer_view_property(prefix "buffer_view.encoding_type", args, rets,                 \
                                                NPUKIT_HAL_VIEW_ENCODING_TYPE);                                 \
  }                                                                                                             \
  NPUKIT_HAL_FUNCTION(buffer_view_rank) {                                                                       \
    return npukit_hal_call_buffer_view_property(prefix "buffer_view.rank", args, rets, NPUKIT_HAL_VIEW_RANK);   \
  }

//===----------------------------------------------------------------------===//
// Module descriptors
//===----------------------------------------------------------------------===//

// An export and its function: every function has the vm-c shape
// (NPUKIT_HAL_FUNCTION), so iree_emitc_shim calls it.
#define NPUKIT_HAL_EXPORT(name, cconv) {{name, sizeof(name) - 1}, {cconv, sizeof(cconv) - 1}, 0, NULL}
#define NPUKIT_HAL_EXPORT_FUNCTION(fn)                              \
  {(iree_vm_native_function_shim_t)(void (*)(void))iree_emitc_shim, \
   (iree_vm_native_function_target_t)(void (*)(void))fn}

// The buffer view exports of NPUKIT_HAL_SHARED_BUFFER_FUNCTIONS, in name
// order, and their functions in the same order.
#define NPUKIT_HAL_SHARED_BUFFER_VIEW_EXPORTS                                                     \
  NPUKIT_HAL_EXPORT("buffer_view.assert", "0rriiCID_v"), NPUKIT_HAL_EXPORT("buffer_view.buffer", "0r_r"), \
      NPUKIT_HAL_EXPORT("buffer_view.create", "0rIIiiCID_r"), NPUKIT_HAL_EXPORT("buffer_view.dim", "0ri_I"), \
      NPUKIT_HAL_EXPORT("buffer_view.element_type", "0r_i"),                                      \
      NPUKIT_HAL_EXPORT("buffer_view.encoding_type", "0r_i"), NPUKIT_HAL_EXPORT("buffer_view.rank", "0r_i")
#define NPUKIT_HAL_SHARED_BUFFER_VIEW_FUNCTIONS                                                           \
  NPUKIT_HAL_EXPORT_FUNCTION(buffer_view_assert), NPUKIT_HAL_EXPORT_FUNCTION(buffer_view_buffer),         \
      NPUKIT_HAL_EXPORT_FUNCTION(buffer_view_create), NPUKIT_HAL_EXPORT_FUNCTION(buffer_view_dim),        \
      NPUKIT_HAL_EXPORT_FUNCTION(buffer_view_element_type),                                               \
      NPUKIT_HAL_EXPORT_FUNCTION(buffer_view_encoding_type), NPUKIT_HAL_EXPORT_FUNCTION(buffer_view_rank)

// The descriptor of module |name| at |version| with no imports: |exports| in
// name order and one function per export.
#define NPUKIT_HAL_MODULE_DESCRIPTOR(name, version, exports, functions)                                            \
  {{name, sizeof(name) - 1}, version, 0, NULL, 0, NULL, 0, NULL, IREE_ARRAYSIZE(exports), exports, \
   IREE_ARRAYSIZE(functions), functions}

//===----------------------------------------------------------------------===//
// Module state
//===----------------------------------------------------------------------===//

// Every HAL module's state starts with this: the allocator its objects and
// the state itself come from.
typedef struct npukit_hal_module_base_t {
  iree_allocator_t allocator;
} npukit_hal_module_base_t;

static inline iree_allocator_t npukit_hal_module_allocator(void* module) {
  return ((npukit_hal_module_base_t*)module)->allocator;
}

// Allocates a zeroed state of |size| bytes that starts with
// npukit_hal_module_base_t, after registering the HAL ref types.
iree_status_t npukit_hal_module_state_allocate(iree_vm_instance_t* instance, iree_allocator_t allocator,
                                               iree_host_size_t size, void** out_state);

// Frees a state that needs nothing else released.
void npukit_hal_module_state_free(void* state);

// Creates the native module of |descriptor| over |state|, which |destroy|
// releases with the module; on failure |destroy| releases it at once.
iree_status_t npukit_hal_native_module_create(iree_vm_instance_t* instance,
                                              const iree_vm_native_module_descriptor_t* descriptor, void* state,
                                              void (*destroy)(void* state), iree_vm_module_t** out_module);

#endif  // NPUKIT_HAL_MODULE_ARGS_H_
