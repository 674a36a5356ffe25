// The HAL ref types and the state and creation every HAL module shares.

#include "module_args.h"
#include "npukit/hal/modules.h"

iree_status_t npukit_hal_register_types(iree_vm_instance_t* instance) {
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_buffer_descriptor));
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_buffer_view_descriptor));
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_executable_descriptor));
  return iree_ok_status();
}

iree_status_t npukit_hal_module_state_allocate(iree_vm_instance_t* instance, iree_allocator_t allocator,
                                               iree_host_size_t size, void** out_state) {
  *out_state = NULL;
  IREE_RETURN_IF_ERROR(npukit_hal_register_types(instance));
  npukit_hal_module_base_t* state = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, size, (void**)&state));
  state->allocator = allocator;
  *out_state = state;
  return iree_ok_status();
}

void npukit_hal_module_state_free(void* state) {
  iree_allocator_free(npukit_hal_module_allocator(state), state);
}

iree_status_t npukit_hal_native_module_create(iree_vm_instance_t* instance,
                                              const iree_vm_native_module_descriptor_t* descriptor, void* state,
                                              void (*destroy)(void* state), iree_vm_module_t** out_module) {
  iree_vm_module_t interface;
  iree_vm_module_initialize(&interface, state);
  interface.destroy = destroy;
  iree_status_t status =
      iree_vm_native_module_create(&interface, descriptor, instance, npukit_hal_module_allocator(state), out_module);
  if (!iree_status_is_ok(status)) destroy(state);
  return status;
}
