// vm.list: value conversion, ref retain/release, resizing, errors; every
// object comes from an arena that must be empty again at the end.

#include "iree/vm/api.h"
#include "npukit/arena.h"
#include "test_main.h"

static iree_vm_buffer_t* new_buffer(iree_allocator_t a) {
  iree_vm_buffer_t* buffer = NULL;
  EXPECT_OK(iree_vm_buffer_create(IREE_VM_BUFFER_ACCESS_MUTABLE, 8, 16, a, &buffer));
  return buffer;
}

static void value_list(iree_allocator_t a) {
  iree_vm_list_t* list = NULL;
  EXPECT_OK(iree_vm_list_create(iree_vm_make_value_type_def(IREE_VM_VALUE_TYPE_I32), 1, a, &list));
  EXPECT(iree_vm_list_size(list) == 0);
  EXPECT_OK(iree_vm_list_resize(list, 5));  // grows beyond the initial capacity
  EXPECT(iree_vm_list_size(list) == 5 && iree_vm_list_capacity(list) >= 5);
  iree_vm_value_t v;
  EXPECT_OK(iree_vm_list_get_value_as(list, 4, IREE_VM_VALUE_TYPE_I32, &v));
  EXPECT(v.type == IREE_VM_VALUE_TYPE_I32 && iree_vm_value_get_i32(&v) == 0);  // new elements are zero

  iree_vm_value_t big = iree_vm_value_make_i64(-((int64_t)1 << 40) - 7);
  EXPECT_OK(iree_vm_list_set_value(list, 1, &big));  // stored as i32 (truncated)
  EXPECT_OK(iree_vm_list_get_value_as(list, 1, IREE_VM_VALUE_TYPE_I64, &v));
  EXPECT(iree_vm_value_get_i64(&v) == -7);
  iree_vm_value_t x = iree_vm_value_make_i32(-3);
  EXPECT_OK(iree_vm_list_set_value(list, 2, &x));
  EXPECT_OK(iree_vm_list_get_value_as(list, 2, IREE_VM_VALUE_TYPE_I8, &v));
  EXPECT(v.type == IREE_VM_VALUE_TYPE_I8 && v.i8 == -3);

  iree_vm_value_t f = iree_vm_value_make_f32(1.5f);
  EXPECT_CODE(iree_vm_list_set_value(list, 0, &f), IREE_STATUS_INVALID_ARGUMENT);  // no int/float mixing
  EXPECT_CODE(iree_vm_list_get_value_as(list, 5, IREE_VM_VALUE_TYPE_I32, &v), IREE_STATUS_OUT_OF_RANGE);
  EXPECT_CODE(iree_vm_list_set_value(list, 9, &x), IREE_STATUS_OUT_OF_RANGE);
  iree_vm_ref_t ref = iree_vm_ref_null();
  EXPECT_CODE(iree_vm_list_get_ref_retain(list, 0, &ref), IREE_STATUS_FAILED_PRECONDITION);
  EXPECT_OK(iree_vm_list_resize(list, 2));
  EXPECT(iree_vm_list_size(list) == 2);
  iree_vm_list_release(list);
}

static void float_list(iree_allocator_t a) {
  iree_vm_list_t* list = NULL;
  EXPECT_OK(iree_vm_list_create(iree_vm_make_value_type_def(IREE_VM_VALUE_TYPE_F64), 0, a, &list));
  EXPECT_OK(iree_vm_list_resize(list, 1));
  iree_vm_value_t f = iree_vm_value_make_f32(0.25f);
  EXPECT_OK(iree_vm_list_set_value(list, 0, &f));
  iree_vm_value_t v;
  EXPECT_OK(iree_vm_list_get_value(list, 0, &v));
  EXPECT(v.type == IREE_VM_VALUE_TYPE_F64 && v.f64 == 0.25);
  EXPECT_OK(iree_vm_list_get_value_as(list, 0, IREE_VM_VALUE_TYPE_F32, &v));
  EXPECT(v.f32 == 0.25f);
  EXPECT_CODE(iree_vm_list_get_value_as(list, 0, IREE_VM_VALUE_TYPE_I32, &v), IREE_STATUS_INVALID_ARGUMENT);
  iree_vm_list_release(list);
}

static void ref_list(iree_allocator_t a) {
  iree_vm_list_t* list = NULL;
  EXPECT_OK(iree_vm_list_create(iree_vm_make_ref_type_def(iree_vm_buffer_type()), 2, a, &list));
  EXPECT_OK(iree_vm_list_resize(list, 3));
  iree_vm_buffer_t* buffer = new_buffer(a);
  iree_vm_ref_t ref = iree_vm_buffer_retain_ref(buffer);  // count 2
  EXPECT(buffer->ref_object.counter == 2);
  EXPECT_OK(iree_vm_list_set_ref_retain(list, 0, &ref));  // count 3
  EXPECT_OK(iree_vm_list_set_ref_retain(list, 1, &ref));  // count 4
  EXPECT(buffer->ref_object.counter == 4);
  EXPECT_OK(iree_vm_list_set_ref_move(list, 2, &ref));  // ownership moves: count stays 4
  EXPECT(iree_vm_ref_is_null(&ref) && buffer->ref_object.counter == 4);

  iree_vm_ref_t got = iree_vm_ref_null();
  EXPECT_OK(iree_vm_list_get_ref_retain(list, 1, &got));
  EXPECT(got.ptr == buffer && got.type == iree_vm_buffer_type() && buffer->ref_object.counter == 5);
  iree_vm_ref_release(&got);

  // A null ref is allowed; a value or a ref of another type is not.
  iree_vm_ref_t null_ref = iree_vm_ref_null();
  EXPECT_OK(iree_vm_list_set_ref_retain(list, 0, &null_ref));  // releases one: count 3
  EXPECT(buffer->ref_object.counter == 3);
  iree_vm_value_t x = iree_vm_value_make_i32(1);
  EXPECT_CODE(iree_vm_list_set_value(list, 0, &x), IREE_STATUS_INVALID_ARGUMENT);
  iree_vm_list_t* other = NULL;
  EXPECT_OK(iree_vm_list_create(iree_vm_make_undefined_type_def(), 0, a, &other));
  iree_vm_ref_t list_ref = {other, iree_vm_list_type()};
  EXPECT_CODE(iree_vm_list_set_ref_retain(list, 0, &list_ref), IREE_STATUS_INVALID_ARGUMENT);

  // Shrinking releases the dropped refs; destroying the list releases the rest.
  EXPECT_OK(iree_vm_list_resize(list, 2));
  EXPECT(buffer->ref_object.counter == 2);
  iree_vm_list_release(list);
  EXPECT(buffer->ref_object.counter == 1);
  iree_vm_buffer_release(buffer);
  iree_vm_list_release(other);
}

static void variant_list(iree_allocator_t a) {
  iree_vm_list_t* list = NULL;
  EXPECT_OK(iree_vm_list_create(iree_vm_make_undefined_type_def(), 0, a, &list));
  EXPECT_OK(iree_vm_list_resize(list, 2));
  iree_vm_value_t x = iree_vm_value_make_i64(42);
  EXPECT_OK(iree_vm_list_set_value(list, 0, &x));
  iree_vm_buffer_t* buffer = new_buffer(a);
  iree_vm_ref_t ref = {buffer, iree_vm_buffer_type()};
  EXPECT_OK(iree_vm_list_set_ref_move(list, 1, &ref));
  iree_vm_value_t v;
  EXPECT_OK(iree_vm_list_get_value(list, 0, &v));
  EXPECT(v.type == IREE_VM_VALUE_TYPE_I64 && v.i64 == 42);
  EXPECT_CODE(iree_vm_list_get_value(list, 1, &v), IREE_STATUS_FAILED_PRECONDITION);
  // Overwriting a ref with a value releases the ref.
  EXPECT_OK(iree_vm_list_set_value(list, 1, &x));
  iree_vm_list_release(list);
}

int main(void) {
  static uint8_t memory[16384];
  npukit_arena_t arena;
  npukit_arena_initialize(memory, sizeof(memory), &arena);
  iree_allocator_t a = npukit_arena_allocator(&arena);
  value_list(a);
  float_list(a);
  ref_list(a);
  variant_list(a);
  EXPECT(arena.bytes_in_use == 0 && arena.allocation_count == 0);  // nothing leaked
  return TEST_RESULT();
}
