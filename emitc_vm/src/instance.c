#include "iree/vm/instance.h"

#include "iree/vm/buffer.h"
#include "iree/vm/list.h"

struct iree_vm_instance_t {
  uint32_t ref_count;
  iree_allocator_t allocator;
  iree_host_size_t type_count;
  const iree_vm_ref_type_descriptor_t* types[IREE_VM_INSTANCE_TYPE_CAPACITY];
};

iree_status_t iree_vm_instance_create(iree_allocator_t allocator, iree_vm_instance_t** out_instance) {
  *out_instance = NULL;
  iree_vm_instance_t* instance = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*instance), (void**)&instance));
  instance->ref_count = 1;
  instance->allocator = allocator;
  iree_status_t status = iree_vm_instance_register_type(instance, &iree_vm_buffer_descriptor);
  if (iree_status_is_ok(status)) status = iree_vm_instance_register_type(instance, &iree_vm_list_descriptor);
  if (!iree_status_is_ok(status)) {
    iree_allocator_free(allocator, instance);
    return status;
  }
  *out_instance = instance;
  return iree_ok_status();
}

void iree_vm_instance_retain(iree_vm_instance_t* instance) {
  if (instance) instance->ref_count++;
}

void iree_vm_instance_release(iree_vm_instance_t* instance) {
  if (instance && --instance->ref_count == 0) iree_allocator_free(instance->allocator, instance);
}

iree_allocator_t iree_vm_instance_allocator(iree_vm_instance_t* instance) { return instance->allocator; }

iree_status_t iree_vm_instance_register_type(iree_vm_instance_t* instance,
                                             const iree_vm_ref_type_descriptor_t* descriptor) {
  if (((uintptr_t)descriptor & 7u) != 0) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "type descriptor %.*s is not 8-byte aligned",
                            (int)descriptor->type_name.size, descriptor->type_name.data);
  }
  for (iree_host_size_t i = 0; i < instance->type_count; ++i) {
    if (instance->types[i] == descriptor) return iree_ok_status();
    if (iree_string_view_equal(instance->types[i]->type_name, descriptor->type_name)) {
      return iree_make_status(IREE_STATUS_ALREADY_EXISTS, "another type is registered as %.*s",
                              (int)descriptor->type_name.size, descriptor->type_name.data);
    }
  }
  if (instance->type_count == IREE_VM_INSTANCE_TYPE_CAPACITY) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "more than %d ref types", IREE_VM_INSTANCE_TYPE_CAPACITY);
  }
  instance->types[instance->type_count++] = descriptor;
  return iree_ok_status();
}

iree_vm_ref_type_t iree_vm_instance_lookup_type(iree_vm_instance_t* instance, iree_string_view_t full_name) {
  for (iree_host_size_t i = 0; i < instance->type_count; ++i) {
    if (iree_string_view_equal(instance->types[i]->type_name, full_name)) {
      return iree_vm_ref_type_of(instance->types[i]);
    }
  }
  return IREE_VM_REF_TYPE_NULL;
}
