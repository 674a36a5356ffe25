#include "module_args.h"
#include "npukit/hal/modules.h"

iree_status_t npukit_hal_register_types(iree_vm_instance_t* instance) {
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_buffer_descriptor));
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_buffer_view_descriptor));
  IREE_RETURN_IF_ERROR(iree_vm_instance_register_type(instance, &npukit_hal_executable_descriptor));
  return iree_ok_status();
}
