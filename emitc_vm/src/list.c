#include "iree/vm/list.h"

// An element: a value (type != NONE), a ref (ref.type != 0) or nothing.
typedef struct list_element_t {
  iree_vm_ref_t ref;
  iree_vm_value_t value;
} list_element_t;

struct iree_vm_list_t {
  iree_vm_ref_object_t ref_object;
  iree_allocator_t allocator;
  iree_vm_type_def_t element_type;
  iree_host_size_t capacity;
  iree_host_size_t count;
  list_element_t* elements;
};

static void list_destroy(void* ptr) {
  iree_vm_list_t* list = (iree_vm_list_t*)ptr;
  for (iree_host_size_t i = 0; i < list->count; ++i) iree_vm_ref_release(&list->elements[i].ref);
  iree_allocator_free(list->allocator, list->elements);
  iree_allocator_free(list->allocator, list);
}

const iree_vm_ref_type_descriptor_t iree_vm_list_descriptor = {list_destroy, {"vm.list", 7}};

iree_status_t iree_vm_list_create(iree_vm_type_def_t element_type, iree_host_size_t initial_capacity,
                                  iree_allocator_t allocator, iree_vm_list_t** out_list) {
  *out_list = NULL;
  iree_vm_list_t* list = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*list), (void**)&list));
  list->ref_object.counter = 1;
  list->allocator = allocator;
  list->element_type = element_type;
  iree_status_t status = iree_vm_list_reserve(list, initial_capacity);
  if (!iree_status_is_ok(status)) {
    iree_allocator_free(allocator, list);
    return status;
  }
  *out_list = list;
  return iree_ok_status();
}

void iree_vm_list_retain(iree_vm_list_t* list) {
  if (list) list->ref_object.counter++;
}

void iree_vm_list_release(iree_vm_list_t* list) {
  if (list && --list->ref_object.counter == 0) list_destroy(list);
}

iree_vm_type_def_t iree_vm_list_element_type(const iree_vm_list_t* list) { return list->element_type; }
iree_host_size_t iree_vm_list_capacity(const iree_vm_list_t* list) { return list->capacity; }
iree_host_size_t iree_vm_list_size(const iree_vm_list_t* list) { return list->count; }

iree_status_t iree_vm_list_reserve(iree_vm_list_t* list, iree_host_size_t minimum_capacity) {
  if (minimum_capacity <= list->capacity) return iree_ok_status();
  if (minimum_capacity > IREE_HOST_SIZE_MAX / sizeof(list_element_t)) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "a list of %zu elements is too large", minimum_capacity);
  }
  list_element_t* elements = NULL;
  IREE_RETURN_IF_ERROR(
      iree_allocator_malloc(list->allocator, minimum_capacity * sizeof(list_element_t), (void**)&elements));
  if (list->count) memcpy(elements, list->elements, list->count * sizeof(list_element_t));
  iree_allocator_free(list->allocator, list->elements);
  list->elements = elements;
  list->capacity = minimum_capacity;
  return iree_ok_status();
}

iree_status_t iree_vm_list_resize(iree_vm_list_t* list, iree_host_size_t new_size) {
  if (new_size > list->capacity) {
    iree_host_size_t grown = list->capacity < 4 ? 4 : list->capacity * 2;
    IREE_RETURN_IF_ERROR(iree_vm_list_reserve(list, grown > new_size ? grown : new_size));
  }
  for (iree_host_size_t i = new_size; i < list->count; ++i) iree_vm_ref_release(&list->elements[i].ref);
  if (new_size > list->count) {
    memset(&list->elements[list->count], 0, (new_size - list->count) * sizeof(list_element_t));
    // Elements of a value list read as zero of the element type.
    if (iree_vm_type_def_is_value(list->element_type)) {
      for (iree_host_size_t i = list->count; i < new_size; ++i) {
        list->elements[i].value.type = (iree_vm_value_type_t)list->element_type.value_type;
      }
    }
  }
  list->count = new_size;
  return iree_ok_status();
}

static iree_status_t check_index(const iree_vm_list_t* list, iree_host_size_t i) {
  if (i >= list->count) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "list index %zu out of range (size %zu)", i, list->count);
  }
  return iree_ok_status();
}

static bool is_integer(iree_vm_value_type_t type) {
  return type >= IREE_VM_VALUE_TYPE_I8 && type <= IREE_VM_VALUE_TYPE_I64;
}

static bool is_float(iree_vm_value_type_t type) {
  return type == IREE_VM_VALUE_TYPE_F32 || type == IREE_VM_VALUE_TYPE_F64;
}

static int64_t integer_of(const iree_vm_value_t* v) {
  switch (v->type) {
    case IREE_VM_VALUE_TYPE_I8:
      return v->i8;
    case IREE_VM_VALUE_TYPE_I16:
      return v->i16;
    case IREE_VM_VALUE_TYPE_I32:
      return v->i32;
    default:
      return v->i64;
  }
}

static iree_status_t convert_value(const iree_vm_value_t* in, iree_vm_value_type_t type, iree_vm_value_t* out) {
  *out = iree_vm_value_make_none();
  if (in->type == type) {
    *out = *in;
    return iree_ok_status();
  }
  if (is_integer(in->type) && is_integer(type)) {
    int64_t x = integer_of(in);
    out->type = type;
    switch (type) {
      case IREE_VM_VALUE_TYPE_I8:
        out->i8 = (int8_t)x;
        break;
      case IREE_VM_VALUE_TYPE_I16:
        out->i16 = (int16_t)x;
        break;
      case IREE_VM_VALUE_TYPE_I32:
        out->i32 = (int32_t)x;
        break;
      default:
        out->i64 = x;
        break;
    }
    return iree_ok_status();
  }
  if (is_float(in->type) && is_float(type)) {
    out->type = type;
    if (type == IREE_VM_VALUE_TYPE_F32) {
      out->f32 = (float)in->f64;
    } else {
      out->f64 = (double)in->f32;
    }
    return iree_ok_status();
  }
  return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "cannot convert a list value of type %d to type %d",
                          (int)in->type, (int)type);
}

iree_status_t iree_vm_list_get_value(const iree_vm_list_t* list, iree_host_size_t i, iree_vm_value_t* out_value) {
  IREE_RETURN_IF_ERROR(check_index(list, i));
  const list_element_t* e = &list->elements[i];
  if (e->value.type == IREE_VM_VALUE_TYPE_NONE) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "list element %zu is not a value", i);
  }
  *out_value = e->value;
  return iree_ok_status();
}

iree_status_t iree_vm_list_get_value_as(const iree_vm_list_t* list, iree_host_size_t i, iree_vm_value_type_t value_type,
                                        iree_vm_value_t* out_value) {
  iree_vm_value_t value;
  IREE_RETURN_IF_ERROR(iree_vm_list_get_value(list, i, &value));
  return convert_value(&value, value_type, out_value);
}

iree_status_t iree_vm_list_set_value(iree_vm_list_t* list, iree_host_size_t i, const iree_vm_value_t* value) {
  IREE_RETURN_IF_ERROR(check_index(list, i));
  if (iree_vm_type_def_is_ref(list->element_type)) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "list of refs: element %zu cannot hold a value", i);
  }
  iree_vm_value_type_t type =
      iree_vm_type_def_is_value(list->element_type) ? (iree_vm_value_type_t)list->element_type.value_type : value->type;
  iree_vm_value_t converted;
  IREE_RETURN_IF_ERROR(convert_value(value, type, &converted));
  list_element_t* e = &list->elements[i];
  iree_vm_ref_release(&e->ref);
  e->value = converted;
  return iree_ok_status();
}

iree_status_t iree_vm_list_get_ref_retain(const iree_vm_list_t* list, iree_host_size_t i, iree_vm_ref_t* out_ref) {
  IREE_RETURN_IF_ERROR(check_index(list, i));
  const list_element_t* e = &list->elements[i];
  if (e->value.type != IREE_VM_VALUE_TYPE_NONE) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "list element %zu is a value, not a ref", i);
  }
  iree_vm_ref_retain((iree_vm_ref_t*)&e->ref, out_ref);
  return iree_ok_status();
}

static iree_status_t check_ref_type(const iree_vm_list_t* list, iree_host_size_t i, const iree_vm_ref_t* ref) {
  if (iree_vm_type_def_is_value(list->element_type)) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "list of values: element %zu cannot hold a ref", i);
  }
  iree_vm_ref_type_t want = iree_vm_type_def_as_ref(list->element_type);
  if (ref->ptr && want != 0 && want != IREE_VM_REF_TYPE_ANY && ref->type != want) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "list element %zu: a %.*s ref in a list of %.*s", i,
                            (int)iree_vm_ref_type_descriptor(ref->type)->type_name.size,
                            iree_vm_ref_type_descriptor(ref->type)->type_name.data,
                            (int)iree_vm_ref_type_descriptor(want)->type_name.size,
                            iree_vm_ref_type_descriptor(want)->type_name.data);
  }
  return iree_ok_status();
}

iree_status_t iree_vm_list_set_ref_retain(iree_vm_list_t* list, iree_host_size_t i, const iree_vm_ref_t* ref) {
  IREE_RETURN_IF_ERROR(check_index(list, i));
  IREE_RETURN_IF_ERROR(check_ref_type(list, i, ref));
  list_element_t* e = &list->elements[i];
  e->value = iree_vm_value_make_none();
  iree_vm_ref_retain((iree_vm_ref_t*)ref, &e->ref);
  return iree_ok_status();
}

iree_status_t iree_vm_list_set_ref_move(iree_vm_list_t* list, iree_host_size_t i, iree_vm_ref_t* ref) {
  IREE_RETURN_IF_ERROR(check_index(list, i));
  IREE_RETURN_IF_ERROR(check_ref_type(list, i, ref));
  list_element_t* e = &list->elements[i];
  e->value = iree_vm_value_make_none();
  iree_vm_ref_release(&e->ref);
  iree_vm_ref_move(ref, &e->ref);
  return iree_ok_status();
}
