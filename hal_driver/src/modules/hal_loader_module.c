// The hal_loader module (version 1): loads the executables a module carries
// and dispatches them inline, on the calling thread.

#include "module_args.h"
#include "npukit/hal/modules.h"

typedef struct hal_loader_module_t {
  npukit_hal_module_base_t base;
  npukit_hal_loader_set_t loaders;
} hal_loader_module_t;

NPUKIT_HAL_FUNCTION(executable_query_support) {
  const char* fn = "hal_loader.executable.query_support";
  hal_loader_module_t* m = (hal_loader_module_t*)module;
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* format_ref = iree_vm_abi_read_ref(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  iree_vm_buffer_t* format;
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(format_ref, false, fn, "the format", &format));
  return npukit_ret_i32(fn, rets, npukit_hal_loader_set_supports(&m->loaders, npukit_vm_buffer_string(format)) ? 1 : 0);
}

NPUKIT_HAL_FUNCTION(executable_load) {
  const char* fn = "hal_loader.executable.load";
  hal_loader_module_t* m = (hal_loader_module_t*)module;
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* format_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* data_ref = iree_vm_abi_read_ref(&r);
  iree_vm_ref_t* constants_ref = iree_vm_abi_read_ref(&r);
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  iree_vm_buffer_t *format, *data, *constants;
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(format_ref, false, fn, "the format", &format));
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(data_ref, false, fn, "the executable data", &data));
  IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(constants_ref, true, fn, "the constants", &constants));
  const uint32_t* constant_words = NULL;
  iree_host_size_t constant_count = 0;
  if (constants) {
    if (constants->data.data_length % 4 != 0) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: constants are %zu bytes, not whole 32-bit words", fn,
                              constants->data.data_length);
    }
    constant_words = (const uint32_t*)constants->data.data;
    constant_count = constants->data.data_length / 4;
  }
  npukit_hal_executable_t* executable = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_loader_set_load(&m->loaders, npukit_vm_buffer_string(format),
                                                  iree_make_const_byte_span(data->data.data, data->data.data_length),
                                                  constant_words, constant_count, m->base.allocator, &executable));
  return npukit_ret_ref(fn, rets, executable, npukit_hal_executable_type());
}

NPUKIT_HAL_FUNCTION(executable_lookup_function) {
  return npukit_hal_call_executable_lookup_function("hal_loader.executable.lookup.function", args, rets);
}

NPUKIT_HAL_FUNCTION(executable_dispatch) {
  const char* fn = "hal_loader.executable.dispatch";
  iree_vm_abi_reader_t r = iree_vm_abi_reader(args);
  iree_vm_ref_t* executable_ref = iree_vm_abi_read_ref(&r);
  int64_t function_id = iree_vm_abi_read_i64(&r);
  npukit_hal_dispatch_params_t params;
  memset(&params, 0, sizeof(params));
  for (int i = 0; i < 3; ++i) params.workgroup_count[i] = (uint32_t)iree_vm_abi_read_i32(&r);
  uint32_t constants[NPUKIT_HAL_MAX_CONSTANTS];
  int32_t constant_count = 0, binding_count = 0;
  IREE_RETURN_IF_ERROR(npukit_read_dispatch_counts(fn, &r, constants, &constant_count, &binding_count));
  npukit_hal_binding_t bindings[NPUKIT_HAL_MAX_BINDINGS];
  for (int32_t i = 0; i < binding_count; ++i) {
    iree_vm_ref_t* buffer_ref = iree_vm_abi_read_ref(&r);
    int64_t offset = iree_vm_abi_read_i64(&r);
    int64_t length = iree_vm_abi_read_i64(&r);
    iree_vm_buffer_t* buffer;
    IREE_RETURN_IF_ERROR(npukit_arg_iree_vm_buffer(buffer_ref, false, fn, "a binding", &buffer));
    if (offset < 0 || length < 0 || (uint64_t)offset + (uint64_t)length > buffer->data.data_length) {
      return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "%s: binding %d range [%lld, +%lld) exceeds %zu bytes", fn,
                              (int)i, (long long)offset, (long long)length, buffer->data.data_length);
    }
    bindings[i].data = buffer->data.data + offset;
    bindings[i].length = (iree_host_size_t)length;
  }
  IREE_RETURN_IF_ERROR(iree_vm_abi_reader_finish(&r, fn));
  npukit_hal_executable_t* executable;
  IREE_RETURN_IF_ERROR(npukit_arg_npukit_hal_executable(executable_ref, false, fn, "the executable", &executable));
  if (function_id < 0 || function_id > UINT32_MAX) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "%s: function id %lld", fn, (long long)function_id);
  }
  params.constants = constants;
  params.constant_count = (uint32_t)constant_count;
  params.bindings = bindings;
  params.binding_count = (uint32_t)binding_count;
  return npukit_hal_executable_dispatch(executable, (uint32_t)function_id, &params);
}

static const iree_vm_native_export_descriptor_t hal_loader_exports[] = {
    NPUKIT_HAL_EXPORT("executable.dispatch", "0rIiiiCiDCrIID_v"),
    NPUKIT_HAL_EXPORT("executable.load", "0rrr_r"),
    NPUKIT_HAL_EXPORT("executable.lookup.function", "0rr_I"),
    NPUKIT_HAL_EXPORT("executable.query_support", "0r_i"),
};

static const iree_vm_native_function_ptr_t hal_loader_functions[] = {
    NPUKIT_HAL_EXPORT_FUNCTION(executable_dispatch),
    NPUKIT_HAL_EXPORT_FUNCTION(executable_load),
    NPUKIT_HAL_EXPORT_FUNCTION(executable_lookup_function),
    NPUKIT_HAL_EXPORT_FUNCTION(executable_query_support),
};

static const iree_vm_native_module_descriptor_t hal_loader_descriptor =
    NPUKIT_HAL_MODULE_DESCRIPTOR("hal_loader", 1, hal_loader_exports, hal_loader_functions);

iree_status_t npukit_hal_loader_module_create(iree_vm_instance_t* instance, const npukit_hal_loader_set_t* loaders,
                                              iree_allocator_t allocator, iree_vm_module_t** out_module) {
  *out_module = NULL;
  hal_loader_module_t* module = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_module_state_allocate(instance, allocator, sizeof(*module), (void**)&module));
  module->loaders = *loaders;
  return npukit_hal_native_module_create(instance, &hal_loader_descriptor, module, npukit_hal_module_state_free,
                                         out_module);
}
