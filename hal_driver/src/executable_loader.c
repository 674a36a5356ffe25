#include "npukit/hal/executable_loader.h"

bool npukit_hal_loader_set_supports(const npukit_hal_loader_set_t* set, iree_string_view_t format) {
  for (iree_host_size_t i = 0; i < set->count; ++i) {
    if (set->loaders[i]->vtable->supports(set->loaders[i], format)) return true;
  }
  return false;
}

iree_status_t npukit_hal_loader_set_load(const npukit_hal_loader_set_t* set, iree_string_view_t format,
                                         iree_const_byte_span_t data, const uint32_t* constants,
                                         iree_host_size_t constant_count, iree_allocator_t allocator,
                                         npukit_hal_executable_t** out_executable) {
  *out_executable = NULL;
  for (iree_host_size_t i = 0; i < set->count; ++i) {
    const npukit_hal_executable_loader_t* loader = set->loaders[i];
    if (!loader->vtable->supports(loader, format)) continue;
    IREE_RETURN_IF_ERROR(
        loader->vtable->load(loader, format, data, constants, constant_count, allocator, out_executable));
    (*out_executable)->shared_dispatch_counter = set->dispatch_counter;
    (*out_executable)->dispatch_hook = set->dispatch_hook;
    return iree_ok_status();
  }
  return iree_make_status(IREE_STATUS_NOT_FOUND,
                          "no executable loader accepts the format '%.*s' (embedded ELFs need "
                          "npukit_runtime_register_embedded_elf_loader, mynpu-v1 npukit_runtime_register_mynpu)",
                          (int)format.size, format.data);
}

//===----------------------------------------------------------------------===//
// Static libraries
//===----------------------------------------------------------------------===//

static bool static_supports(const npukit_hal_executable_loader_t* loader, iree_string_view_t format) {
  (void)loader;
  return iree_string_view_equal(format, iree_make_cstring_view("static"));
}

static iree_status_t static_load(const npukit_hal_executable_loader_t* base, iree_string_view_t format,
                                 iree_const_byte_span_t data, const uint32_t* constants,
                                 iree_host_size_t constant_count, iree_allocator_t allocator,
                                 npukit_hal_executable_t** out_executable) {
  (void)format;
  const npukit_hal_static_library_loader_t* loader = (const npukit_hal_static_library_loader_t*)base;
  // The module carries the library name, NUL-terminated.
  iree_string_view_t name = iree_make_string_view((const char*)data.data, data.data_length);
  if (name.size && name.data[name.size - 1] == 0) name.size--;
  for (iree_host_size_t i = 0; i < loader->count; ++i) {
    const iree_hal_executable_library_v0_t* library = loader->libraries[i];
    if (iree_string_view_equal(iree_make_cstring_view(library->header->name), name)) {
      return npukit_hal_library_executable_create(library, constants, constant_count, NULL, NULL, allocator,
                                                  out_executable);
    }
  }
  return iree_make_status(IREE_STATUS_NOT_FOUND,
                          "no static library named '%.*s' is registered (link %.*s_library_query and register it)",
                          (int)name.size, name.data, (int)name.size, name.data);
}

static const npukit_hal_executable_loader_vtable_t static_vtable = {static_supports, static_load};

iree_status_t npukit_hal_static_library_loader_initialize(const iree_hal_executable_library_query_fn_t* queries,
                                                          iree_host_size_t query_count,
                                                          npukit_hal_static_library_loader_t* out_loader) {
  memset(out_loader, 0, sizeof(*out_loader));
  out_loader->base.vtable = &static_vtable;
  if (query_count > NPUKIT_HAL_MAX_STATIC_LIBRARIES) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "%zu static libraries exceed %d", query_count,
                            NPUKIT_HAL_MAX_STATIC_LIBRARIES);
  }
  iree_alignas(16) iree_hal_executable_environment_v0_t environment;
  npukit_hal_library_environment_initialize(&environment);
  for (iree_host_size_t i = 0; i < query_count; ++i) {
    const iree_hal_executable_library_header_t** header =
        queries[i](IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST, &environment);
    if (!header) {
      return iree_make_status(IREE_STATUS_UNAVAILABLE,
                              "static library %zu does not support executable library ABI version %u; it was "
                              "built by another IREE release than 3.13.0",
                              i, (unsigned)IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST);
    }
    if ((*header)->version > IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST) {
      return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "static library %s has ABI version %u, newer than %u",
                              (*header)->name, (unsigned)(*header)->version,
                              (unsigned)IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST);
    }
    const iree_hal_executable_library_v0_t* library = (const iree_hal_executable_library_v0_t*)header;
    IREE_RETURN_IF_ERROR(npukit_hal_library_verify(library));
    out_loader->libraries[out_loader->count++] = library;
  }
  return iree_ok_status();
}
