// The mynpu device in npukit's HAL: the loader of mynpu-v1 executables and
// their dispatch, which hands each export's command stream to a backend
// (npukit/mynpu/backend.h).

#include <string.h>

#include "npukit/hal/executable_loader.h"
#include "npukit/mynpu/executable_format.h"

typedef struct mynpu_executable_t {
  npukit_hal_executable_t base;
  npukit_mynpu_backend_t* backend;
  // References the module's executable data, which outlives the executable.
  npukit_mynpu_executable_info_t info;
  // The CPU code of the other dispatches (NULL when there is none): its
  // exports follow the NPU's, at ordinals info.export_count and up.
  npukit_hal_executable_t* host;
  // The names of the exports stored by hash, once looked up: the host
  // code's string of the same name (info.export_count of them).
  iree_string_view_t* hashed_names;
} mynpu_executable_t;

static void mynpu_executable_destroy(npukit_hal_executable_t* base) {
  mynpu_executable_t* executable = (mynpu_executable_t*)base;
  npukit_hal_executable_release(executable->host);
  iree_allocator_free(base->host_allocator, base);
}

static iree_status_t mynpu_executable_lookup_function(npukit_hal_executable_t* base, iree_string_view_t name,
                                                      uint32_t* out_ordinal) {
  const mynpu_executable_t* executable = (const mynpu_executable_t*)base;
  uint32_t hash = npukit_mynpu_name_hash(name);
  for (uint32_t i = 0; i < executable->info.export_count; ++i) {
    npukit_mynpu_export_t ex;
    npukit_mynpu_executable_export(&executable->info, i, &ex);
    if (ex.name.size ? iree_string_view_equal(ex.name, name) : ex.name_hash == hash) {
      if (!ex.name.size) {
        // Stored by hash: the name is one of the host code's exports (the
        // compiler keeps hashes only where the executable's names do not
        // share one), and the host keeps the string.
        uint32_t host_ordinal = 0;
        iree_status_t status = npukit_hal_executable_lookup_function(executable->host, name, &host_ordinal);
        if (!iree_status_is_ok(status)) {
          iree_status_ignore(status);
          continue;
        }
        executable->hashed_names[i] = executable->host->vtable->export_name(executable->host, host_ordinal);
      }
      *out_ordinal = i;
      return iree_ok_status();
    }
  }
  if (executable->host) {
    uint32_t host_ordinal = 0;
    IREE_RETURN_IF_ERROR(npukit_hal_executable_lookup_function(executable->host, name, &host_ordinal));
    *out_ordinal = executable->info.export_count + host_ordinal;
    return iree_ok_status();
  }
  return iree_make_status(IREE_STATUS_NOT_FOUND, "the mynpu-v1 executable has no export named '%.*s'",
                          (int)name.size, name.data);
}

static iree_status_t mynpu_executable_dispatch(npukit_hal_executable_t* base, uint32_t ordinal,
                                               const npukit_hal_dispatch_params_t* params) {
  mynpu_executable_t* executable = (mynpu_executable_t*)base;
  if (ordinal >= executable->info.export_count) {
    if (executable->host) {  // a dispatch the NPU does not run
      return executable->host->vtable->dispatch(executable->host, ordinal - executable->info.export_count, params);
    }
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "mynpu-v1 export %u of %u", ordinal,
                            executable->info.export_count);
  }
  npukit_mynpu_export_t ex;
  npukit_mynpu_executable_export(&executable->info, ordinal, &ex);
  if (params->binding_count < ex.binding_count) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu export '%.*s' needs %u bindings, the dispatch has %u",
                            (int)ex.name.size, ex.name.data, ex.binding_count, params->binding_count);
  }
  npukit_mynpu_binding_t bindings[NPUKIT_MYNPU_MAX_BINDINGS];
  for (uint32_t i = 0; i < ex.binding_count; ++i) {
    if (params->bindings[i].length < ex.binding_sizes[i]) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                              "mynpu export '%.*s': binding %u has %zu bytes, the stream needs %u", (int)ex.name.size,
                              ex.name.data, i, (size_t)params->bindings[i].length, ex.binding_sizes[i]);
    }
    bindings[i].data = params->bindings[i].data;
    bindings[i].length = params->bindings[i].length;
  }
  npukit_mynpu_submission_t submission = {
      &executable->info.config, ex.commands, ex.command_bytes, bindings, ex.binding_count,
      executable->info.constants, executable->info.constants_length, executable->info.minor_version >= 2,
  };
  npukit_mynpu_backend_t* backend = executable->backend;
  IREE_RETURN_IF_ERROR(backend->vtable->submit(backend, &submission));
  iree_status_t status = backend->vtable->wait(backend);
  if (!iree_status_is_ok(status)) {
    return iree_status_annotate_f(status, "in mynpu export '%.*s'", (int)ex.name.size, ex.name.data);
  }
  return iree_ok_status();
}

static iree_string_view_t mynpu_executable_export_name(npukit_hal_executable_t* base, uint32_t ordinal) {
  mynpu_executable_t* executable = (mynpu_executable_t*)base;
  if (ordinal < executable->info.export_count) {
    npukit_mynpu_export_t ex;
    npukit_mynpu_executable_export(&executable->info, ordinal, &ex);
    return ex.name.size ? ex.name : executable->hashed_names[ordinal];
  }
  npukit_hal_executable_t* host = executable->host;
  return host ? host->vtable->export_name(host, ordinal - executable->info.export_count) : iree_make_cstring_view("?");
}

static const npukit_hal_executable_vtable_t mynpu_executable_vtable = {
    mynpu_executable_destroy,
    mynpu_executable_lookup_function,
    mynpu_executable_dispatch,
    mynpu_executable_export_name,
};

// Loads the executable's CPU code with the first of the host loaders that
// takes its format (directly, so its dispatches are counted once, as the
// mynpu executable's).
static iree_status_t load_host_code(const npukit_hal_mynpu_loader_t* loader, const npukit_mynpu_executable_info_t* info,
                                    iree_allocator_t allocator, npukit_hal_executable_t** out_host) {
  const npukit_hal_loader_set_t* hosts = loader->host_loaders;
  for (iree_host_size_t i = 0; hosts && i < hosts->count; ++i) {
    const npukit_hal_executable_loader_t* candidate = hosts->loaders[i];
    if (candidate == &loader->base || !candidate->vtable->supports(candidate, info->host_format)) continue;
    iree_status_t status =
        candidate->vtable->load(candidate, info->host_format, info->host_code, NULL, 0, allocator, out_host);
    if (!iree_status_is_ok(status)) return iree_status_annotate_f(status, "in the mynpu-v1 executable's host code");
    return iree_ok_status();
  }
  return iree_make_status(IREE_STATUS_UNAVAILABLE,
                          "the mynpu-v1 executable carries the CPU code of its other dispatches as '%.*s', which no "
                          "registered loader reads (register the embedded-ELF loader)",
                          (int)info->host_format.size, info->host_format.data);
}

static bool mynpu_supports(const npukit_hal_executable_loader_t* loader, iree_string_view_t format) {
  (void)loader;
  return iree_string_view_equal(format, iree_make_cstring_view(NPUKIT_MYNPU_FORMAT));
}

static iree_status_t mynpu_load(const npukit_hal_executable_loader_t* base, iree_string_view_t format,
                                iree_const_byte_span_t data, const uint32_t* constants,
                                iree_host_size_t constant_count, iree_allocator_t allocator,
                                npukit_hal_executable_t** out_executable) {
  (void)format;
  (void)constants;
  const npukit_hal_mynpu_loader_t* loader = (const npukit_hal_mynpu_loader_t*)base;
  if (constant_count) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "a mynpu-v1 executable takes no specialization constants (%zu given)",
                            (size_t)constant_count);
  }
  npukit_mynpu_executable_info_t info;
  IREE_RETURN_IF_ERROR(npukit_mynpu_executable_parse(data, &info));
  npukit_mynpu_capabilities_t capabilities;
  loader->backend->vtable->query_capabilities(loader->backend, &capabilities);
  if (info.config.sram_bytes > capabilities.max_sram_bytes) {
    return iree_make_status(IREE_STATUS_UNAVAILABLE,
                            "the mynpu-v1 executable was compiled for %u bytes of SRAM; this device has %u",
                            info.config.sram_bytes, capabilities.max_sram_bytes);
  }
  uint32_t missing = info.config.instruction_mask & ~capabilities.instruction_mask;
  if (missing) {
    return iree_make_status(IREE_STATUS_UNAVAILABLE,
                            "the mynpu-v1 executable uses instructions this device lacks (instruction mask 0x%x)",
                            missing);
  }
  npukit_hal_executable_t* host = NULL;
  if (info.host_code.data_length) IREE_RETURN_IF_ERROR(load_host_code(loader, &info, allocator, &host));
  mynpu_executable_t* executable = NULL;
  iree_host_size_t names_bytes = info.export_count * sizeof(iree_string_view_t);
  iree_status_t status = iree_allocator_malloc(allocator, sizeof(*executable) + names_bytes, (void**)&executable);
  if (!iree_status_is_ok(status)) {
    npukit_hal_executable_release(host);
    return status;
  }
  npukit_hal_executable_initialize(&mynpu_executable_vtable, allocator, &executable->base);
  executable->backend = loader->backend;
  executable->info = info;
  executable->host = host;
  executable->hashed_names = (iree_string_view_t*)(executable + 1);
  for (uint32_t i = 0; i < info.export_count; ++i) executable->hashed_names[i] = iree_make_cstring_view("?");
  *out_executable = &executable->base;
  return iree_ok_status();
}

static const npukit_hal_executable_loader_vtable_t mynpu_loader_vtable = {mynpu_supports, mynpu_load};

void npukit_hal_mynpu_loader_initialize(npukit_mynpu_backend_t* backend, const npukit_hal_loader_set_t* host_loaders,
                                        npukit_hal_mynpu_loader_t* out_loader) {
  out_loader->base.vtable = &mynpu_loader_vtable;
  out_loader->backend = backend;
  out_loader->host_loaders = host_loaders;
}
