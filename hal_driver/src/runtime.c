#include "npukit/runtime.h"

#include "npukit/arena.h"
#include "npukit/hal/buffer_plan.h"
#include "npukit/hal/modules.h"

// Inputs and outputs a runtime holds: as many as one side of a VM call.
#define NPUKIT_RUNTIME_MAX_IO IREE_VM_CALL_MAX_VALUES

struct npukit_runtime_t {
  npukit_arena_t arena;
  iree_allocator_t allocator;
  bool on_heap;  // no arena was given: everything is on the system heap
  const npukit_full_hal_t* full_hal;
  iree_vm_instance_t* instance;
  iree_vm_context_t* context;
  iree_vm_module_t* module;
  npukit_hal_static_library_loader_t static_loader;
  npukit_hal_elf_loader_t elf_loader;
  npukit_hal_mynpu_loader_t mynpu_loader;
  npukit_mynpu_simulator_backend_t mynpu_simulator;
  npukit_hal_loader_set_t loaders;
  iree_host_size_t input_count;
  iree_vm_ref_t inputs[NPUKIT_RUNTIME_MAX_IO];
  iree_host_size_t output_count;
  iree_vm_ref_t outputs[NPUKIT_RUNTIME_MAX_IO];
  uint64_t invocation_count;
  uint64_t dispatch_count;
  npukit_hal_dispatch_hook_t dispatch_hook;
  npukit_buffer_planner_t planner;
  void* planned_block;
};

iree_status_t npukit_runtime_create(const npukit_runtime_options_t* options, npukit_runtime_t** out_runtime) {
  *out_runtime = NULL;
  iree_allocator_t allocator;
  npukit_arena_t arena;
  memset(&arena, 0, sizeof(arena));
  if (options->arena) {
    npukit_arena_initialize(options->arena, options->arena_size, &arena);
    if (!arena.base) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "the arena (%zu bytes at %p) is too small",
                              options->arena_size, options->arena);
    }
    allocator = npukit_arena_allocator(&arena);
  } else {
#if defined(NPUKIT_NO_SYSTEM_ALLOCATOR)
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "no arena given, and this build has no system heap");
#else
    allocator = iree_allocator_system();
#endif
  }
  // The runtime lives at the start of its own arena (or on the heap).
  npukit_runtime_t* runtime = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*runtime), (void**)&runtime));
  runtime->arena = arena;
  runtime->allocator = options->arena ? npukit_arena_allocator(&runtime->arena) : allocator;
  runtime->on_heap = options->arena == NULL;
  runtime->full_hal = options->full_hal;
  runtime->loaders.dispatch_counter = &runtime->dispatch_count;
  runtime->dispatch_hook = options->dispatch_hook;
  runtime->loaders.dispatch_hook = options->dispatch_hook.fn ? &runtime->dispatch_hook : NULL;
  iree_status_t status = npukit_hal_static_library_loader_initialize(NULL, 0, &runtime->static_loader);
  runtime->loaders.loaders[runtime->loaders.count++] = &runtime->static_loader.base;
  if (iree_status_is_ok(status)) status = iree_vm_instance_create(runtime->allocator, &runtime->instance);
  if (iree_status_is_ok(status)) status = npukit_hal_register_types(runtime->instance);
  // Modules look their ref types up when they are created: register them now.
  if (iree_status_is_ok(status) && runtime->full_hal) status = runtime->full_hal->register_types(runtime->instance);
  if (iree_status_is_ok(status)) {
    status = iree_vm_context_create(runtime->instance, runtime->allocator, &runtime->context);
  }
  if (!iree_status_is_ok(status)) {
    npukit_runtime_destroy(runtime);
    return status;
  }
  *out_runtime = runtime;
  return iree_ok_status();
}

static void release_refs(iree_vm_ref_t* refs, iree_host_size_t* count) {
  for (iree_host_size_t i = 0; i < *count; ++i) iree_vm_ref_release(&refs[i]);
  *count = 0;
}

void npukit_runtime_destroy(npukit_runtime_t* runtime) {
  if (!runtime) return;
  release_refs(runtime->outputs, &runtime->output_count);
  release_refs(runtime->inputs, &runtime->input_count);
  iree_vm_context_release(runtime->context);
  iree_vm_module_release(runtime->module);
  iree_vm_instance_release(runtime->instance);
  if (runtime->mynpu_loader.backend == &runtime->mynpu_simulator.base) {
    npukit_mynpu_simulator_backend_deinitialize(&runtime->mynpu_simulator);
  }
  // In an arena the runtime's own block goes with the arena, which the caller owns.
  if (runtime->on_heap) iree_allocator_free(runtime->allocator, runtime);
}

iree_allocator_t npukit_runtime_allocator(npukit_runtime_t* runtime) { return runtime->allocator; }

iree_status_t npukit_runtime_use_buffer_plan(npukit_runtime_t* runtime, const npukit_buffer_plan_t* plan) {
  if (runtime->planned_block) {
    return iree_make_status(IREE_STATUS_ALREADY_EXISTS, "a memory plan is already in use");
  }
  if (runtime->on_heap) return iree_ok_status();  // buffers come from the heap
  for (iree_host_size_t i = 0; i < NPUKIT_RUNTIME_MAX_IO; ++i) {
    if (runtime->inputs[i].ptr) {
      return iree_make_status(IREE_STATUS_FAILED_PRECONDITION,
                              "the memory plan must be in use before the first input is set");
    }
  }
  IREE_RETURN_IF_ERROR(npukit_buffer_plan_verify(plan));
  IREE_RETURN_IF_ERROR(
      iree_allocator_malloc_aligned(runtime->allocator, plan->size ? plan->size : 1, 64, &runtime->planned_block));
  npukit_buffer_planner_initialize(plan, (uint8_t*)runtime->planned_block, &runtime->planner);
  runtime->arena.buffer_planner = &runtime->planner;
  return iree_ok_status();
}

iree_status_t npukit_runtime_register_static_libraries(npukit_runtime_t* runtime,
                                                       const iree_hal_executable_library_query_fn_t* queries,
                                                       iree_host_size_t count) {
  npukit_hal_static_library_loader_t more;
  IREE_RETURN_IF_ERROR(npukit_hal_static_library_loader_initialize(queries, count, &more));
  npukit_hal_static_library_loader_t* loader = &runtime->static_loader;
  if (loader->count + more.count > NPUKIT_HAL_MAX_STATIC_LIBRARIES) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "more than %d static libraries",
                            NPUKIT_HAL_MAX_STATIC_LIBRARIES);
  }
  for (iree_host_size_t i = 0; i < more.count; ++i) loader->libraries[loader->count++] = more.libraries[i];
  return iree_ok_status();
}

static iree_status_t add_loader(npukit_runtime_t* runtime, const npukit_hal_executable_loader_t* loader) {
  if (runtime->module) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "executable loaders must be registered before the module");
  }
  if (runtime->loaders.count == NPUKIT_HAL_MAX_LOADERS) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "more than %d executable loaders", NPUKIT_HAL_MAX_LOADERS);
  }
  runtime->loaders.loaders[runtime->loaders.count++] = loader;
  return iree_ok_status();
}

iree_status_t npukit_runtime_register_embedded_elf_loader(npukit_runtime_t* runtime) {
  if (runtime->elf_loader.base.vtable) return iree_ok_status();
  IREE_RETURN_IF_ERROR(add_loader(runtime, &runtime->elf_loader.base));
  npukit_hal_elf_loader_initialize(&runtime->elf_loader);
  return iree_ok_status();
}

static iree_status_t check_no_mynpu_yet(const npukit_runtime_t* runtime) {
  if (runtime->mynpu_loader.base.vtable) {
    return iree_make_status(IREE_STATUS_ALREADY_EXISTS, "a mynpu device is already registered");
  }
  return iree_ok_status();
}

iree_status_t npukit_runtime_register_mynpu(npukit_runtime_t* runtime, npukit_mynpu_backend_t* backend) {
  IREE_RETURN_IF_ERROR(check_no_mynpu_yet(runtime));
  // mynpu executables carry the CPU code of their other dispatches as an embedded ELF.
  IREE_RETURN_IF_ERROR(npukit_runtime_register_embedded_elf_loader(runtime));
  IREE_RETURN_IF_ERROR(add_loader(runtime, &runtime->mynpu_loader.base));
  npukit_hal_mynpu_loader_initialize(backend, &runtime->loaders, &runtime->mynpu_loader);
  return iree_ok_status();
}

iree_status_t npukit_runtime_register_mynpu_simulator(npukit_runtime_t* runtime, uint32_t max_sram_bytes) {
  // Checked first: initializing would discard the registered simulator's SRAM.
  IREE_RETURN_IF_ERROR(check_no_mynpu_yet(runtime));
  npukit_mynpu_simulator_backend_initialize(runtime->allocator, max_sram_bytes, &runtime->mynpu_simulator);
  return npukit_runtime_register_mynpu(runtime, &runtime->mynpu_simulator.base);
}

bool npukit_runtime_has_mynpu(const npukit_runtime_t* runtime) { return runtime->mynpu_loader.backend != NULL; }

iree_status_t npukit_runtime_mynpu_counters(const npukit_runtime_t* runtime, npukit_mynpu_counters_t* out_last,
                                            npukit_mynpu_counters_t* out_total) {
  const npukit_mynpu_backend_t* backend = runtime->mynpu_loader.backend;
  if (!backend) return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "no mynpu device is registered");
  backend->vtable->read_counters(backend, out_last, out_total);
  return iree_ok_status();
}

typedef struct needed_hal_t {
  bool inline_modules;
  bool full;
} needed_hal_t;

static iree_status_t note_dependency(void* user_data, const iree_vm_module_dependency_t* dependency) {
  needed_hal_t* needed = (needed_hal_t*)user_data;
  if (iree_string_view_equal(dependency->name, iree_make_cstring_view("hal"))) {
    needed->full = true;
  } else if (iree_string_view_equal(dependency->name, iree_make_cstring_view("hal_inline")) ||
             iree_string_view_equal(dependency->name, iree_make_cstring_view("hal_loader"))) {
    needed->inline_modules = true;
  }
  return iree_ok_status();
}

iree_status_t npukit_runtime_load_module(npukit_runtime_t* runtime, npukit_module_create_fn_t create) {
  if (runtime->module) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "a module is already loaded in this runtime");
  }
  iree_vm_module_t* module = NULL;
  IREE_RETURN_IF_ERROR(create(runtime->instance, runtime->allocator, &module));
  needed_hal_t needed = {false, false};
  iree_status_t status = module->enumerate_dependencies(module->self, note_dependency, &needed);
  iree_vm_module_t* modules[3];
  iree_host_size_t count = 0;
  if (iree_status_is_ok(status) && needed.inline_modules) {
    status = npukit_hal_inline_module_create(runtime->instance, runtime->allocator, &modules[count]);
    if (iree_status_is_ok(status)) ++count;
    if (iree_status_is_ok(status)) {
      status =
          npukit_hal_loader_module_create(runtime->instance, &runtime->loaders, runtime->allocator, &modules[count]);
      if (iree_status_is_ok(status)) ++count;
    }
  }
  if (iree_status_is_ok(status) && needed.full) {
    if (!runtime->full_hal) {
      status = iree_make_status(IREE_STATUS_UNAVAILABLE,
                                "the module uses the full HAL (async execution model), which this runtime was "
                                "built without; compile with --execution-model inline-dynamic or set full_hal");
    } else {
      status = runtime->full_hal->create(runtime->instance, &runtime->loaders, runtime->allocator, &modules[count]);
      if (iree_status_is_ok(status)) ++count;
    }
  }
  if (iree_status_is_ok(status)) {
    modules[count] = module;
    status = iree_vm_context_register_modules(runtime->context, count + 1, modules);
  }
  for (iree_host_size_t i = 0; i < count; ++i) iree_vm_module_release(modules[i]);
  if (!iree_status_is_ok(status)) {
    iree_vm_module_release(module);
    return status;
  }
  runtime->module = module;
  return iree_ok_status();
}

static iree_status_t put_input(npukit_runtime_t* runtime, iree_host_size_t index, uint32_t element_type,
                               iree_host_size_t rank, const int64_t* shape, const void* data,
                               iree_host_size_t byte_length, bool bind) {
  if (index >= NPUKIT_RUNTIME_MAX_IO) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "input %zu exceeds %d inputs", index, NPUKIT_RUNTIME_MAX_IO);
  }
  // Bound in place when the caller's memory is aligned as dispatches need it.
  bind = bind && ((uintptr_t)data & (NPUKIT_HAL_BUFFER_ALIGNMENT - 1)) == 0;
  npukit_hal_buffer_view_t* view = npukit_hal_buffer_view_deref(runtime->inputs[index]);
  bool reuse = view && view->element_type == element_type && view->rank == rank &&
               view->buffer->length == byte_length &&
               (rank == 0 || memcmp(view->shape, shape, rank * sizeof(int64_t)) == 0) &&
               (bind ? view->buffer->data == (const uint8_t*)data : view->buffer->owned_storage != NULL);
  if (!reuse) {
    npukit_hal_buffer_t* buffer = NULL;
    if (bind) {
      IREE_RETURN_IF_ERROR(npukit_hal_buffer_wrap_host((void*)data, byte_length, true, runtime->allocator, &buffer));
    } else {
      // A copy lives outside the memory plan, which holds only what the module allocates.
      void* planner = runtime->arena.buffer_planner;
      runtime->arena.buffer_planner = NULL;
      iree_status_t status = npukit_hal_buffer_allocate(runtime->allocator, byte_length, 0, 0, 0, &buffer);
      runtime->arena.buffer_planner = planner;
      IREE_RETURN_IF_ERROR(status);
    }
    iree_status_t status = npukit_hal_buffer_view_create(
        buffer, rank, shape, element_type, NPUKIT_HAL_ENCODING_TYPE_DENSE_ROW_MAJOR, runtime->allocator, &view);
    npukit_hal_buffer_release(buffer);
    IREE_RETURN_IF_ERROR(status);
    if (npukit_hal_buffer_view_byte_length(view) != byte_length) {
      npukit_hal_buffer_view_release(view);
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "input %zu has %zu bytes; its shape needs %zu", index,
                              byte_length, npukit_hal_buffer_view_byte_length(view));
    }
    iree_vm_ref_t ref = {view, npukit_hal_buffer_view_type()};
    iree_vm_ref_move(&ref, &runtime->inputs[index]);
  }
  if (!bind && byte_length) memcpy(view->buffer->data, data, byte_length);
  if (index >= runtime->input_count) runtime->input_count = index + 1;
  return iree_ok_status();
}

iree_status_t npukit_runtime_set_input(npukit_runtime_t* runtime, iree_host_size_t index, uint32_t element_type,
                                       iree_host_size_t rank, const int64_t* shape, const void* data,
                                       iree_host_size_t byte_length) {
  return put_input(runtime, index, element_type, rank, shape, data, byte_length, false);
}

iree_status_t npukit_runtime_bind_input(npukit_runtime_t* runtime, iree_host_size_t index, uint32_t element_type,
                                        iree_host_size_t rank, const int64_t* shape, const void* data,
                                        iree_host_size_t byte_length) {
  return put_input(runtime, index, element_type, rank, shape, data, byte_length, true);
}

iree_status_t npukit_runtime_invoke(npukit_runtime_t* runtime, const char* function) {
  if (!runtime->module) return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "no module is loaded");
  iree_vm_function_t fn;
  iree_string_view_t name = iree_make_cstring_view(function);
  iree_string_view_t unused_lhs, unused_rhs;
  if (iree_string_view_split(name, '.', &unused_lhs, &unused_rhs)) {
    IREE_RETURN_IF_ERROR(iree_vm_context_resolve_function(runtime->context, name, &fn));
  } else {
    IREE_RETURN_IF_ERROR(
        runtime->module->lookup_function(runtime->module->self, IREE_VM_FUNCTION_LINKAGE_EXPORT, name, NULL, &fn));
  }
  iree_vm_function_signature_t signature = iree_vm_function_signature(&fn);
  iree_vm_call_layout_t in, out;
  IREE_RETURN_IF_ERROR(iree_vm_calling_convention_layout(signature.calling_convention, &in, &out));
  for (iree_host_size_t i = 0; i < in.count; ++i) {
    if (in.types[i] != 'r') {
      return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "%s takes a non-tensor argument %zu (%.*s)", function, i,
                              (int)signature.calling_convention.size, signature.calling_convention.data);
    }
  }
  for (iree_host_size_t i = 0; i < out.count; ++i) {
    if (out.types[i] != 'r') {
      return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "%s returns a non-tensor result %zu (%.*s)", function, i,
                              (int)signature.calling_convention.size, signature.calling_convention.data);
    }
  }
  if (in.count != runtime->input_count) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s takes %zu inputs, %zu were set", function, in.count,
                            runtime->input_count);
  }
  if (out.count > NPUKIT_RUNTIME_MAX_IO) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "%s returns %zu outputs, more than %d", function, out.count,
                            NPUKIT_RUNTIME_MAX_IO);
  }
  // Argument and result storage, 8-byte aligned.
  uint64_t arg_storage[(IREE_VM_CALL_MAX_VALUES * sizeof(iree_vm_ref_t)) / 8];
  uint64_t ret_storage[(IREE_VM_CALL_MAX_VALUES * sizeof(iree_vm_ref_t)) / 8];
  memset(arg_storage, 0, sizeof(arg_storage));
  for (iree_host_size_t i = 0; i < in.count; ++i) {
    // Inputs are lent: the callee takes and drops its own reference.
    memcpy((uint8_t*)arg_storage + in.offsets[i], &runtime->inputs[i], sizeof(iree_vm_ref_t));
  }
  release_refs(runtime->outputs, &runtime->output_count);
  iree_status_t status = iree_vm_context_call(runtime->context, fn, iree_make_byte_span(arg_storage, in.size),
                                              iree_make_byte_span(ret_storage, out.size));
  runtime->invocation_count++;
  IREE_RETURN_IF_ERROR(status);
  for (iree_host_size_t i = 0; i < out.count; ++i) {
    iree_vm_ref_move((iree_vm_ref_t*)((uint8_t*)ret_storage + out.offsets[i]), &runtime->outputs[i]);
  }
  runtime->output_count = out.count;
  return iree_ok_status();
}

iree_host_size_t npukit_runtime_output_count(const npukit_runtime_t* runtime) { return runtime->output_count; }

static iree_status_t output_view(const npukit_runtime_t* runtime, iree_host_size_t index,
                                 npukit_hal_buffer_view_t** out_view) {
  if (index >= runtime->output_count) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "output %zu of %zu", index, runtime->output_count);
  }
  *out_view = npukit_hal_buffer_view_deref(runtime->outputs[index]);
  if (!*out_view) return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "output %zu is not a tensor", index);
  return iree_ok_status();
}

iree_status_t npukit_runtime_output_shape(const npukit_runtime_t* runtime, iree_host_size_t index,
                                          uint32_t* out_element_type, iree_host_size_t capacity, int64_t* out_shape,
                                          iree_host_size_t* out_rank) {
  npukit_hal_buffer_view_t* view;
  IREE_RETURN_IF_ERROR(output_view(runtime, index, &view));
  if (view->rank > capacity) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "output %zu has rank %zu, more than %zu", index, view->rank,
                            capacity);
  }
  *out_element_type = view->element_type;
  *out_rank = view->rank;
  for (iree_host_size_t i = 0; i < view->rank; ++i) out_shape[i] = view->shape[i];
  return iree_ok_status();
}

iree_status_t npukit_runtime_read_output(const npukit_runtime_t* runtime, iree_host_size_t index, void* data,
                                         iree_host_size_t capacity, iree_host_size_t* out_byte_length) {
  npukit_hal_buffer_view_t* view;
  IREE_RETURN_IF_ERROR(output_view(runtime, index, &view));
  iree_host_size_t length = npukit_hal_buffer_view_byte_length(view);
  if (length > capacity) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "output %zu has %zu bytes; the destination holds %zu", index,
                            length, capacity);
  }
  memcpy(data, view->buffer->data, length);
  if (out_byte_length) *out_byte_length = length;
  return iree_ok_status();
}

npukit_runtime_stats_t npukit_runtime_stats(const npukit_runtime_t* runtime) {
  npukit_runtime_stats_t stats;
  stats.arena_capacity = runtime->arena.capacity;
  stats.arena_in_use = runtime->arena.bytes_in_use;
  stats.arena_high_water_mark = runtime->arena.high_water_mark;
  stats.dispatch_count = runtime->dispatch_count;
  stats.invocation_count = runtime->invocation_count;
  stats.arena_invalid_frees = runtime->arena.invalid_free_count;
  stats.buffer_plan_size = runtime->planned_block ? runtime->planner.plan->size : 0;
  stats.buffer_plan_high_water_mark = runtime->planner.high_water_mark;
  return stats;
}
