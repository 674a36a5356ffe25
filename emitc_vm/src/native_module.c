// Modules described by static tables (vm-c output and npukit's HAL modules).
//
// The module object starts with the iree_vm_module_t handed out to callers, so
// the module pointer is also its |self|: generated import shims call
// begin_call(import.module, ...) with the module pointer as |self|.

#include "iree/vm/native_module.h"

#include "iree/vm/instance.h"

typedef struct native_module_t {
  iree_vm_module_t base;  // must stay first
  iree_vm_module_t user;  // the interface given at creation
  void* user_self;
  iree_allocator_t allocator;
  const iree_vm_native_module_descriptor_t* descriptor;
} native_module_t;

static void native_destroy(void* self) {
  native_module_t* m = (native_module_t*)self;
  if (m->user.destroy) m->user.destroy(m->user_self);
  iree_allocator_free(m->allocator, m);
}

static iree_string_view_t native_name(void* self) { return ((native_module_t*)self)->descriptor->name; }

static iree_vm_module_signature_t native_signature(void* self) {
  const iree_vm_native_module_descriptor_t* d = ((native_module_t*)self)->descriptor;
  iree_vm_module_signature_t s = {d->version, d->attr_count, d->import_count, d->export_count, 0};
  return s;
}

static iree_status_t native_enumerate_dependencies(void* self, iree_vm_module_dependency_callback_t callback,
                                                   void* user_data) {
  const iree_vm_native_module_descriptor_t* d = ((native_module_t*)self)->descriptor;
  for (iree_host_size_t i = 0; i < d->dependency_count; ++i) {
    IREE_RETURN_IF_ERROR(callback(user_data, &d->dependencies[i]));
  }
  return iree_ok_status();
}

static iree_status_t native_get_function(void* self, iree_vm_function_linkage_t linkage, iree_host_size_t ordinal,
                                         iree_vm_function_t* out_function, iree_string_view_t* out_name,
                                         iree_vm_function_signature_t* out_signature) {
  native_module_t* m = (native_module_t*)self;
  const iree_vm_native_module_descriptor_t* d = m->descriptor;
  if (out_function) memset(out_function, 0, sizeof(*out_function));
  if (out_name) *out_name = iree_string_view_empty();
  if (out_signature) memset(out_signature, 0, sizeof(*out_signature));
  if (linkage == IREE_VM_FUNCTION_LINKAGE_IMPORT || linkage == IREE_VM_FUNCTION_LINKAGE_IMPORT_OPTIONAL) {
    if (ordinal >= d->import_count) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "import ordinal %zu out of range (%zu imports)", ordinal,
                              d->import_count);
    }
    const iree_vm_native_import_descriptor_t* import = &d->imports[ordinal];
    if (out_function) {
      out_function->module = &m->base;
      out_function->linkage = (import->flags & IREE_VM_NATIVE_IMPORT_OPTIONAL)
                                  ? IREE_VM_FUNCTION_LINKAGE_IMPORT_OPTIONAL
                                  : IREE_VM_FUNCTION_LINKAGE_IMPORT;
      out_function->ordinal = (uint16_t)ordinal;
    }
    if (out_name) *out_name = import->full_name;
    return iree_ok_status();
  }
  if (linkage == IREE_VM_FUNCTION_LINKAGE_EXPORT || linkage == IREE_VM_FUNCTION_LINKAGE_EXPORT_OPTIONAL) {
    if (ordinal >= d->export_count) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "export ordinal %zu out of range (%zu exports)", ordinal,
                              d->export_count);
    }
    if (out_function) {
      out_function->module = &m->base;
      out_function->linkage = IREE_VM_FUNCTION_LINKAGE_EXPORT;
      out_function->ordinal = (uint16_t)ordinal;
    }
    if (out_name) *out_name = d->exports[ordinal].local_name;
    if (out_signature) out_signature->calling_convention = d->exports[ordinal].calling_convention;
    return iree_ok_status();
  }
  return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "function linkage %d is not supported", (int)linkage);
}

static iree_status_t native_lookup_function(void* self, iree_vm_function_linkage_t linkage, iree_string_view_t name,
                                            const iree_vm_function_signature_t* expected_signature,
                                            iree_vm_function_t* out_function) {
  (void)expected_signature;
  native_module_t* m = (native_module_t*)self;
  const iree_vm_native_module_descriptor_t* d = m->descriptor;
  memset(out_function, 0, sizeof(*out_function));
  if (linkage != IREE_VM_FUNCTION_LINKAGE_EXPORT && linkage != IREE_VM_FUNCTION_LINKAGE_EXPORT_OPTIONAL) {
    return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "only exports can be looked up by name");
  }
  iree_host_size_t lo = 0, hi = d->export_count;
  while (lo < hi) {
    iree_host_size_t mid = lo + (hi - lo) / 2;
    int c = iree_string_view_compare(name, d->exports[mid].local_name);
    if (c == 0) return native_get_function(self, IREE_VM_FUNCTION_LINKAGE_EXPORT, mid, out_function, NULL, NULL);
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  if (linkage == IREE_VM_FUNCTION_LINKAGE_EXPORT_OPTIONAL) return iree_status_from_code(IREE_STATUS_NOT_FOUND);
  return iree_make_status(IREE_STATUS_NOT_FOUND, "module '%.*s' has no function '%.*s'", (int)d->name.size,
                          d->name.data, (int)name.size, name.data);
}

static iree_status_t native_alloc_state(void* self, iree_allocator_t allocator, iree_vm_module_state_t** out_state) {
  native_module_t* m = (native_module_t*)self;
  *out_state = NULL;
  if (m->user.alloc_state) return m->user.alloc_state(m->user_self, allocator, out_state);
  return iree_ok_status();
}

static void native_free_state(void* self, iree_vm_module_state_t* state) {
  native_module_t* m = (native_module_t*)self;
  if (m->user.free_state) m->user.free_state(m->user_self, state);
}

static iree_status_t native_fork_state(void* self, iree_vm_module_state_t* parent, iree_allocator_t allocator,
                                       iree_vm_module_state_t** out_child) {
  native_module_t* m = (native_module_t*)self;
  if (m->user.fork_state) return m->user.fork_state(m->user_self, parent, allocator, out_child);
  return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "module state cannot be forked");
}

static iree_status_t native_resolve_import(void* self, iree_vm_module_state_t* state, iree_host_size_t ordinal,
                                           const iree_vm_function_t* function,
                                           const iree_vm_function_signature_t* signature) {
  native_module_t* m = (native_module_t*)self;
  if (m->user.resolve_import) return m->user.resolve_import(m->user_self, state, ordinal, function, signature);
  return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "module '%.*s' does not take imports",
                          (int)m->descriptor->name.size, m->descriptor->name.data);
}

static iree_status_t native_notify(void* self, iree_vm_module_state_t* state, iree_vm_signal_t signal) {
  native_module_t* m = (native_module_t*)self;
  if (m->user.notify) return m->user.notify(m->user_self, state, signal);
  return iree_ok_status();
}

static iree_status_t native_begin_call(void* self, iree_vm_stack_t* stack, iree_vm_function_call_t call) {
  native_module_t* m = (native_module_t*)self;
  const iree_vm_native_module_descriptor_t* d = m->descriptor;
  if ((call.function.linkage != IREE_VM_FUNCTION_LINKAGE_EXPORT &&
       call.function.linkage != IREE_VM_FUNCTION_LINKAGE_EXPORT_OPTIONAL) ||
      call.function.ordinal >= d->export_count) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "call to a non-exported function of '%.*s'",
                            (int)d->name.size, d->name.data);
  }
  if (m->user.begin_call) return m->user.begin_call(m->user_self, stack, call);
  iree_vm_module_state_t* state = NULL;
  IREE_RETURN_IF_ERROR(iree_vm_stack_query_module_state(stack, &m->base, &state));
  if (stack->depth >= IREE_VM_STACK_MAX_DEPTH) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "call depth exceeds %d", IREE_VM_STACK_MAX_DEPTH);
  }
  const iree_vm_native_function_ptr_t* fn = &d->functions[call.function.ordinal];
  stack->depth++;
  iree_status_t status = fn->shim(stack, IREE_VM_NATIVE_FUNCTION_CALL_BEGIN, call.arguments, call.results, fn->target,
                                  m->user_self, state);
  stack->depth--;
  if (!iree_status_is_ok(status) && iree_status_code(status) != IREE_STATUS_DEFERRED) {
    const iree_string_view_t name = d->exports[call.function.ordinal].local_name;
    status = iree_status_annotate_f(status, "in %.*s.%.*s", (int)d->name.size, d->name.data, (int)name.size, name.data);
  }
  return status;
}

iree_status_t iree_vm_native_module_create(const iree_vm_module_t* interface,
                                           const iree_vm_native_module_descriptor_t* descriptor,
                                           struct iree_vm_instance_t* instance, iree_allocator_t allocator,
                                           iree_vm_module_t** out_module) {
  (void)instance;
  *out_module = NULL;
  if (!interface->begin_call && (!descriptor->functions || descriptor->export_count != descriptor->function_count)) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "module '%.*s' needs one function per export",
                            (int)descriptor->name.size, descriptor->name.data);
  }
  for (iree_host_size_t i = 1; i < descriptor->export_count; ++i) {
    if (iree_string_view_compare(descriptor->exports[i - 1].local_name, descriptor->exports[i].local_name) >= 0) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "exports of module '%.*s' are not sorted by name",
                              (int)descriptor->name.size, descriptor->name.data);
    }
  }
  native_module_t* m = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*m), (void**)&m));
  m->user = *interface;
  m->user_self = interface->self ? interface->self : m;
  m->allocator = allocator;
  m->descriptor = descriptor;
  iree_vm_module_initialize(&m->base, m);
  m->base.destroy = native_destroy;
  m->base.name = native_name;
  m->base.signature = native_signature;
  m->base.enumerate_dependencies = native_enumerate_dependencies;
  m->base.lookup_function = native_lookup_function;
  m->base.get_function = native_get_function;
  m->base.alloc_state = native_alloc_state;
  m->base.free_state = native_free_state;
  m->base.fork_state = native_fork_state;
  m->base.resolve_import = native_resolve_import;
  m->base.notify = native_notify;
  m->base.begin_call = native_begin_call;
  *out_module = &m->base;
  return iree_ok_status();
}
