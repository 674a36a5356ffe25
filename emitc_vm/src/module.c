#include "iree/vm/module.h"

iree_status_t iree_vm_module_initialize(iree_vm_module_t* module, void* self) {
  memset(module, 0, sizeof(*module));
  module->self = self;
  module->ref_count = 1;
  return iree_ok_status();
}

void iree_vm_module_retain(iree_vm_module_t* module) {
  if (module) module->ref_count++;
}

void iree_vm_module_release(iree_vm_module_t* module) {
  if (module && --module->ref_count == 0 && module->destroy) module->destroy(module->self);
}

iree_string_view_t iree_vm_module_name(const iree_vm_module_t* module) { return module->name(module->self); }

iree_vm_module_signature_t iree_vm_module_signature(const iree_vm_module_t* module) {
  return module->signature(module->self);
}

iree_status_t iree_vm_module_lookup_function_by_name(const iree_vm_module_t* module, iree_vm_function_linkage_t linkage,
                                                     iree_string_view_t name, iree_vm_function_t* out_function) {
  return module->lookup_function(module->self, linkage, name, NULL, out_function);
}

iree_vm_function_signature_t iree_vm_function_signature(const iree_vm_function_t* function) {
  iree_vm_function_signature_t signature = {{NULL, 0}};
  if (!function->module) return signature;
  iree_status_ignore(function->module->get_function(function->module->self,
                                                    (iree_vm_function_linkage_t)function->linkage, function->ordinal,
                                                    NULL, NULL, &signature));
  return signature;
}
