#include "iree/vm/context.h"

#include "iree/vm/stack.h"

struct iree_vm_context_t {
  iree_vm_instance_t* instance;
  iree_allocator_t allocator;
  iree_host_size_t module_count;
  iree_vm_module_t* modules[IREE_VM_CONTEXT_MODULE_CAPACITY];
  iree_vm_module_state_t* states[IREE_VM_CONTEXT_MODULE_CAPACITY];
};

iree_status_t iree_vm_stack_query_module_state(iree_vm_stack_t* stack, iree_vm_module_t* module,
                                               iree_vm_module_state_t** out_state) {
  return stack->state_resolver.query_module_state(stack->state_resolver.self, module, out_state);
}

iree_status_t iree_vm_context_query_module_state(iree_vm_context_t* context, iree_vm_module_t* module,
                                                 iree_vm_module_state_t** out_state) {
  for (iree_host_size_t i = 0; i < context->module_count; ++i) {
    if (context->modules[i] == module) {
      *out_state = context->states[i];
      return iree_ok_status();
    }
  }
  *out_state = NULL;
  return iree_make_status(IREE_STATUS_NOT_FOUND, "module '%.*s' is not registered in this context",
                          (int)iree_vm_module_name(module).size, iree_vm_module_name(module).data);
}

static iree_status_t resolve_state(void* self, iree_vm_module_t* module, iree_vm_module_state_t** out_state) {
  return iree_vm_context_query_module_state((iree_vm_context_t*)self, module, out_state);
}

static void make_stack(iree_vm_context_t* context, iree_vm_stack_t* stack) {
  iree_vm_state_resolver_t resolver = {context, resolve_state};
  iree_vm_stack_initialize(resolver, stack);
}

iree_status_t iree_vm_context_create(iree_vm_instance_t* instance, iree_allocator_t allocator,
                                     iree_vm_context_t** out_context) {
  *out_context = NULL;
  iree_vm_context_t* context = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*context), (void**)&context));
  context->instance = instance;
  context->allocator = allocator;
  iree_vm_instance_retain(instance);
  *out_context = context;
  return iree_ok_status();
}

static void unregister_from(iree_vm_context_t* context, iree_host_size_t first) {
  while (context->module_count > first) {
    iree_host_size_t i = --context->module_count;
    iree_vm_module_t* module = context->modules[i];
    if (context->states[i]) module->free_state(module->self, context->states[i]);
    iree_vm_module_release(module);
    context->modules[i] = NULL;
    context->states[i] = NULL;
  }
}

void iree_vm_context_release(iree_vm_context_t* context) {
  if (!context) return;
  unregister_from(context, 0);
  iree_vm_instance_release(context->instance);
  iree_allocator_free(context->allocator, context);
}

static iree_vm_module_t* find_module(const iree_vm_context_t* context, iree_host_size_t count,
                                     iree_string_view_t name) {
  for (iree_host_size_t i = count; i > 0; --i) {
    if (iree_string_view_equal(iree_vm_module_name(context->modules[i - 1]), name)) return context->modules[i - 1];
  }
  return NULL;
}

typedef struct dependency_check_t {
  iree_vm_context_t* context;
  iree_host_size_t visible;  // modules registered before the one being checked
  iree_vm_module_t* module;
} dependency_check_t;

// The first function |module| imports from module |provider| (for messages).
static iree_string_view_t first_import_from(iree_vm_module_t* module, iree_string_view_t provider) {
  iree_host_size_t import_count = iree_vm_module_signature(module).import_function_count;
  for (iree_host_size_t i = 0; i < import_count; ++i) {
    iree_vm_function_t declaration;
    iree_string_view_t full_name, module_name, function_name;
    iree_vm_function_signature_t signature;
    iree_status_t status =
        module->get_function(module->self, IREE_VM_FUNCTION_LINKAGE_IMPORT, i, &declaration, &full_name, &signature);
    if (!iree_status_is_ok(status)) {
      iree_status_ignore(status);
      break;
    }
    if (iree_string_view_split(full_name, '.', &module_name, &function_name) &&
        iree_string_view_equal(module_name, provider)) {
      return full_name;
    }
  }
  return iree_make_cstring_view("");
}

static iree_status_t check_dependency(void* user_data, const iree_vm_module_dependency_t* dependency) {
  dependency_check_t* check = (dependency_check_t*)user_data;
  iree_vm_module_t* provider = find_module(check->context, check->visible, dependency->name);
  iree_string_view_t module_name = iree_vm_module_name(check->module);
  if (!provider) {
    if (dependency->flags & IREE_VM_MODULE_DEPENDENCY_FLAG_REQUIRED) {
      iree_string_view_t example = first_import_from(check->module, dependency->name);
      return iree_make_status(IREE_STATUS_NOT_FOUND,
                              "module '%.*s' imports '%.*s' from module '%.*s' (version >= %" PRIu32
                              "), which this runtime "
                              "does not provide",
                              (int)module_name.size, module_name.data, (int)example.size, example.data,
                              (int)dependency->name.size, dependency->name.data, dependency->minimum_version);
    }
    return iree_ok_status();
  }
  uint32_t version = iree_vm_module_signature(provider).version;
  if ((dependency->flags & IREE_VM_MODULE_DEPENDENCY_FLAG_REQUIRED) && version < dependency->minimum_version) {
    return iree_make_status(IREE_STATUS_NOT_FOUND, "module '%.*s' needs '%.*s' version >= %" PRIu32 ", found %" PRIu32,
                            (int)module_name.size, module_name.data, (int)dependency->name.size, dependency->name.data,
                            dependency->minimum_version, version);
  }
  return iree_ok_status();
}

static iree_status_t resolve_imports(iree_vm_context_t* context, iree_host_size_t index) {
  iree_vm_module_t* module = context->modules[index];
  iree_vm_module_state_t* state = context->states[index];
  iree_host_size_t import_count = iree_vm_module_signature(module).import_function_count;
  for (iree_host_size_t i = 0; i < import_count; ++i) {
    iree_vm_function_t declaration;
    iree_string_view_t full_name;
    iree_vm_function_signature_t expected;
    IREE_RETURN_IF_ERROR(
        module->get_function(module->self, IREE_VM_FUNCTION_LINKAGE_IMPORT, i, &declaration, &full_name, &expected));
    iree_string_view_t module_name, function_name;
    if (!iree_string_view_split(full_name, '.', &module_name, &function_name)) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "import '%.*s' is not of the form module.function",
                              (int)full_name.size, full_name.data);
    }
    bool optional = declaration.linkage == IREE_VM_FUNCTION_LINKAGE_IMPORT_OPTIONAL;
    iree_vm_module_t* provider = find_module(context, index, module_name);
    iree_vm_function_t function;
    memset(&function, 0, sizeof(function));
    iree_status_t status;
    if (!provider) {
      status = iree_make_status(IREE_STATUS_NOT_FOUND, "no module '%.*s' is registered", (int)module_name.size,
                                module_name.data);
    } else {
      status = provider->lookup_function(provider->self, IREE_VM_FUNCTION_LINKAGE_EXPORT, function_name, &expected,
                                         &function);
    }
    if (!iree_status_is_ok(status)) {
      if (optional && iree_status_code(status) == IREE_STATUS_NOT_FOUND) {
        iree_status_ignore(status);
        continue;
      }
      iree_string_view_t importer = iree_vm_module_name(module);
      return iree_status_annotate_f(status, "module '%.*s' imports '%.*s', which this runtime does not provide",
                                    (int)importer.size, importer.data, (int)full_name.size, full_name.data);
    }
    iree_vm_function_signature_t actual = iree_vm_function_signature(&function);
    if (expected.calling_convention.size &&
        !iree_string_view_equal(expected.calling_convention, actual.calling_convention)) {
      return iree_make_status(IREE_STATUS_INTERNAL, "import '%.*s' expects calling convention %.*s but has %.*s",
                              (int)full_name.size, full_name.data, (int)expected.calling_convention.size,
                              expected.calling_convention.data, (int)actual.calling_convention.size,
                              actual.calling_convention.data);
    }
    IREE_RETURN_IF_ERROR(module->resolve_import(module->self, state, i, &function, &actual));
  }
  return iree_ok_status();
}

static iree_status_t run_initializer(iree_vm_context_t* context, iree_vm_module_t* module) {
  iree_vm_function_t init;
  iree_status_t status = module->lookup_function(module->self, IREE_VM_FUNCTION_LINKAGE_EXPORT_OPTIONAL,
                                                 iree_make_cstring_view("__init"), NULL, &init);
  if (iree_status_code(status) == IREE_STATUS_NOT_FOUND) return iree_status_ignore(status);
  IREE_RETURN_IF_ERROR(status);
  return iree_vm_context_call(context, init, iree_byte_span_empty(), iree_byte_span_empty());
}

iree_status_t iree_vm_context_register_modules(iree_vm_context_t* context, iree_host_size_t module_count,
                                               iree_vm_module_t** modules) {
  iree_host_size_t first = context->module_count;
  if (first + module_count > IREE_VM_CONTEXT_MODULE_CAPACITY) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "a context holds at most %d modules",
                            IREE_VM_CONTEXT_MODULE_CAPACITY);
  }
  iree_status_t status = iree_ok_status();
  for (iree_host_size_t m = 0; m < module_count && iree_status_is_ok(status); ++m) {
    iree_vm_module_t* module = modules[m];
    iree_host_size_t index = context->module_count;
    dependency_check_t check = {context, index, module};
    status = module->enumerate_dependencies(module->self, check_dependency, &check);
    if (!iree_status_is_ok(status)) break;
    iree_vm_module_state_t* state = NULL;
    status = module->alloc_state(module->self, context->allocator, &state);
    if (!iree_status_is_ok(status)) break;
    iree_vm_module_retain(module);
    context->modules[index] = module;
    context->states[index] = state;
    context->module_count++;
    status = resolve_imports(context, index);
    if (iree_status_is_ok(status)) status = run_initializer(context, module);
  }
  if (!iree_status_is_ok(status)) unregister_from(context, first);
  return status;
}

iree_status_t iree_vm_context_resolve_function(const iree_vm_context_t* context, iree_string_view_t full_name,
                                               iree_vm_function_t* out_function) {
  memset(out_function, 0, sizeof(*out_function));
  iree_string_view_t module_name, function_name;
  if (!iree_string_view_split(full_name, '.', &module_name, &function_name)) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "'%.*s' is not of the form module.function",
                            (int)full_name.size, full_name.data);
  }
  iree_vm_module_t* module = find_module(context, context->module_count, module_name);
  if (!module) {
    return iree_make_status(IREE_STATUS_NOT_FOUND, "no module '%.*s' is registered", (int)module_name.size,
                            module_name.data);
  }
  return module->lookup_function(module->self, IREE_VM_FUNCTION_LINKAGE_EXPORT, function_name, NULL, out_function);
}

iree_status_t iree_vm_context_call(iree_vm_context_t* context, iree_vm_function_t function, iree_byte_span_t arguments,
                                   iree_byte_span_t results) {
  if (results.data_length) memset(results.data, 0, results.data_length);
  iree_vm_stack_t stack;
  make_stack(context, &stack);
  iree_vm_function_call_t call;
  call.function = function;
  call.arguments = arguments;
  call.results = results;
  return function.module->begin_call(function.module, &stack, call);
}
