#include "npukit/hal/executable.h"

static void executable_destroy(void* ptr) {
  npukit_hal_executable_t* executable = (npukit_hal_executable_t*)ptr;
  executable->vtable->destroy(executable);
}

const iree_vm_ref_type_descriptor_t npukit_hal_executable_descriptor = {executable_destroy, {"hal.executable", 14}};

void npukit_hal_executable_initialize(const npukit_hal_executable_vtable_t* vtable, iree_allocator_t host_allocator,
                                      npukit_hal_executable_t* out_executable) {
  out_executable->ref_object.counter = 1;
  out_executable->vtable = vtable;
  out_executable->host_allocator = host_allocator;
  out_executable->dispatch_count = 0;
  out_executable->shared_dispatch_counter = NULL;
  out_executable->dispatch_hook = NULL;
}

void npukit_hal_executable_retain(npukit_hal_executable_t* executable) {
  if (executable) executable->ref_object.counter++;
}

void npukit_hal_executable_release(npukit_hal_executable_t* executable) {
  if (executable && --executable->ref_object.counter == 0) executable_destroy(executable);
}

iree_status_t npukit_hal_executable_lookup_function(npukit_hal_executable_t* executable, iree_string_view_t name,
                                                    uint32_t* out_ordinal) {
  return executable->vtable->lookup_function(executable, name, out_ordinal);
}

iree_status_t npukit_hal_executable_dispatch(npukit_hal_executable_t* executable, uint32_t ordinal,
                                             const npukit_hal_dispatch_params_t* params) {
  if (params->binding_count > NPUKIT_HAL_MAX_BINDINGS) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "%" PRIu32 " bindings exceed %d", params->binding_count,
                            NPUKIT_HAL_MAX_BINDINGS);
  }
  if (params->constant_count > NPUKIT_HAL_MAX_CONSTANTS) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "%" PRIu32 " push constants exceed %d",
                            params->constant_count, NPUKIT_HAL_MAX_CONSTANTS);
  }
  executable->dispatch_count++;
  if (executable->shared_dispatch_counter) ++*executable->shared_dispatch_counter;
  const npukit_hal_dispatch_hook_t* hook = executable->dispatch_hook;
  if (!hook || !hook->fn) return executable->vtable->dispatch(executable, ordinal, params);
  const iree_string_view_t name = executable->vtable->export_name(executable, ordinal);
  hook->fn(hook->user_data, name, 0);
  iree_status_t status = executable->vtable->dispatch(executable, ordinal, params);
  hook->fn(hook->user_data, name, 1);
  return status;
}

//===----------------------------------------------------------------------===//
// CPU executable libraries
//===----------------------------------------------------------------------===//

typedef struct library_executable_t {
  npukit_hal_executable_t base;
  const iree_hal_executable_library_v0_t* library;
  npukit_hal_library_release_fn_t release;
  void* release_user_data;
  uint32_t* constants;
  iree_alignas(16) iree_hal_executable_environment_v0_t environment;
} library_executable_t;

void npukit_hal_library_environment_initialize(iree_hal_executable_environment_v0_t* out_environment) {
  memset(out_environment, 0, sizeof(*out_environment));
}

iree_status_t npukit_hal_library_verify(const iree_hal_executable_library_v0_t* library) {
  const char* name = library->header && library->header->name ? library->header->name : "(unnamed)";
  if (library->imports.count != 0) {
    return iree_make_status(IREE_STATUS_UNAVAILABLE,
                            "executable library %s imports %" PRIu32 " functions; npukit's runtime provides none", name,
                            library->imports.count);
  }
  // The attributes are optional (IREE's ABI): without them every export has
  // the defaults (no workgroup-local memory, workgroups of 1 x 1 x 1, and
  // the bindings and constants the dispatch gives).
  if (library->exports.count > 0 && (!library->exports.ptrs || !library->exports.names)) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "executable library %s lacks export pointers or names",
                            name);
  }
  for (uint32_t i = 0; i < library->exports.count; ++i) {
    if (!library->exports.ptrs[i] || !library->exports.names[i] || !library->exports.names[i][0]) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "executable library %s export %" PRIu32 " is incomplete",
                              name, i);
    }
    if (!library->exports.attrs) continue;
    const iree_hal_executable_dispatch_attrs_v0_t* attrs = &library->exports.attrs[i];
    if (attrs->constant_count > NPUKIT_HAL_MAX_CONSTANTS || attrs->binding_count > NPUKIT_HAL_MAX_BINDINGS) {
      return iree_make_status(IREE_STATUS_OUT_OF_RANGE,
                              "executable library %s export %s uses %u constants and %u bindings", name,
                              library->exports.names[i], attrs->constant_count, attrs->binding_count);
    }
  }
  return iree_ok_status();
}

static void library_destroy(npukit_hal_executable_t* base) {
  library_executable_t* executable = (library_executable_t*)base;
  iree_allocator_t allocator = base->host_allocator;
  if (executable->release) executable->release(executable->release_user_data);
  iree_allocator_free(allocator, executable->constants);
  iree_allocator_free(allocator, executable);
}

static iree_status_t library_lookup_function(npukit_hal_executable_t* base, iree_string_view_t name,
                                             uint32_t* out_ordinal) {
  const iree_hal_executable_library_v0_t* library = ((library_executable_t*)base)->library;
  for (uint32_t i = 0; i < library->exports.count; ++i) {
    if (iree_string_view_equal(iree_make_cstring_view(library->exports.names[i]), name)) {
      *out_ordinal = i;
      return iree_ok_status();
    }
  }
  return iree_make_status(IREE_STATUS_NOT_FOUND, "export '%.*s' not found in executable library %s", (int)name.size,
                          name.data, library->header->name);
}

static iree_status_t library_dispatch(npukit_hal_executable_t* base, uint32_t ordinal,
                                      const npukit_hal_dispatch_params_t* params) {
  library_executable_t* executable = (library_executable_t*)base;
  const iree_hal_executable_library_v0_t* library = executable->library;
  if (ordinal >= library->exports.count) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "function %" PRIu32 " out of range of %" PRIu32 " exports",
                            ordinal, library->exports.count);
  }
  static const iree_hal_executable_dispatch_attrs_v0_t default_attrs = {0};
  const iree_hal_executable_dispatch_attrs_v0_t* attrs =
      library->exports.attrs ? &library->exports.attrs[ordinal] : &default_attrs;
  if (params->binding_count < attrs->binding_count || params->constant_count < attrs->constant_count) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "%s needs %u bindings and %u constants, the dispatch gives %" PRIu32 " and %" PRIu32,
                            library->exports.names[ordinal], (unsigned)attrs->binding_count,
                            (unsigned)attrs->constant_count, params->binding_count, params->constant_count);
  }
  if (attrs->local_memory_pages != 0) {
    return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "%s needs workgroup-local memory, which is not supported",
                            library->exports.names[ordinal]);
  }
  void* binding_ptrs[NPUKIT_HAL_MAX_BINDINGS];
  size_t binding_lengths[NPUKIT_HAL_MAX_BINDINGS];
  for (uint32_t i = 0; i < params->binding_count; ++i) {
    binding_ptrs[i] = params->bindings[i].data;
    binding_lengths[i] = params->bindings[i].length;
  }
  iree_alignas(64) iree_hal_executable_dispatch_state_v0_t dispatch_state;
  memset(&dispatch_state, 0, sizeof(dispatch_state));
  dispatch_state.workgroup_size_x = attrs->workgroup_size_x ? attrs->workgroup_size_x : 1;
  dispatch_state.workgroup_size_y = attrs->workgroup_size_y ? attrs->workgroup_size_y : 1;
  dispatch_state.workgroup_size_z = attrs->workgroup_size_z ? attrs->workgroup_size_z : 1;
  dispatch_state.constant_count = (uint16_t)params->constant_count;
  dispatch_state.workgroup_count_x = params->workgroup_count[0];
  dispatch_state.workgroup_count_y = params->workgroup_count[1];
  dispatch_state.workgroup_count_z = (uint16_t)params->workgroup_count[2];
  dispatch_state.max_concurrency = 1;
  dispatch_state.binding_count = (uint8_t)params->binding_count;
  dispatch_state.constants = params->constants;
  dispatch_state.binding_ptrs = binding_ptrs;
  dispatch_state.binding_lengths = binding_lengths;
  iree_alignas(64) iree_hal_executable_workgroup_state_v0_t workgroup_state;
  memset(&workgroup_state, 0, sizeof(workgroup_state));
  iree_hal_executable_dispatch_v0_t fn = library->exports.ptrs[ordinal];
  for (uint32_t z = 0; z < params->workgroup_count[2]; ++z) {
    workgroup_state.workgroup_id_z = (uint16_t)z;
    for (uint32_t y = 0; y < params->workgroup_count[1]; ++y) {
      workgroup_state.workgroup_id_y = y;
      for (uint32_t x = 0; x < params->workgroup_count[0]; ++x) {
        workgroup_state.workgroup_id_x = x;
        int ret = fn(&executable->environment, &dispatch_state, &workgroup_state);
        if (ret != 0) {
          return iree_make_status(IREE_STATUS_INTERNAL,
                                  "%s returned error %d in workgroup (%" PRIu32 ", %" PRIu32 ", %" PRIu32 ")",
                                  library->exports.names[ordinal], ret, x, y, z);
        }
      }
    }
  }
  return iree_ok_status();
}

static iree_string_view_t library_export_name(npukit_hal_executable_t* base, uint32_t ordinal) {
  const iree_hal_executable_library_v0_t* library = ((library_executable_t*)base)->library;
  return ordinal < library->exports.count ? iree_make_cstring_view(library->exports.names[ordinal])
                                          : iree_make_cstring_view("?");
}

static const npukit_hal_executable_vtable_t library_vtable = {library_destroy, library_lookup_function,
                                                              library_dispatch, library_export_name};

iree_status_t npukit_hal_library_executable_create(const iree_hal_executable_library_v0_t* library,
                                                   const uint32_t* constants, iree_host_size_t constant_count,
                                                   npukit_hal_library_release_fn_t release, void* release_user_data,
                                                   iree_allocator_t host_allocator,
                                                   npukit_hal_executable_t** out_executable) {
  *out_executable = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_library_verify(library));
  if (constant_count != library->constants.count) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "executable library %s takes %" PRIu32 " constants, %zu were given", library->header->name,
                            library->constants.count, constant_count);
  }
  library_executable_t* executable = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(host_allocator, sizeof(*executable), (void**)&executable));
  npukit_hal_executable_initialize(&library_vtable, host_allocator, &executable->base);
  executable->library = library;
  npukit_hal_library_environment_initialize(&executable->environment);
  if (constant_count) {
    iree_status_t status =
        iree_allocator_malloc(host_allocator, constant_count * sizeof(uint32_t), (void**)&executable->constants);
    if (!iree_status_is_ok(status)) {
      iree_allocator_free(host_allocator, executable);
      return status;
    }
    memcpy(executable->constants, constants, constant_count * sizeof(uint32_t));
    executable->environment.constants = executable->constants;
  }
  // Only now does the executable own what backs the library.
  executable->release = release;
  executable->release_user_data = release_user_data;
  *out_executable = &executable->base;
  return iree_ok_status();
}
