#include "iree/base/allocator.h"

static iree_status_t allocate(iree_allocator_t allocator, iree_allocator_command_t command,
                              iree_host_size_t byte_length, void** out_ptr) {
  *out_ptr = NULL;
  if (IREE_UNLIKELY(!allocator.ctl)) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "allocation of %zu bytes from a null allocator", byte_length);
  }
  iree_allocator_alloc_params_t params = {byte_length};
  return allocator.ctl(allocator.self, command, &params, out_ptr);
}

iree_status_t iree_allocator_malloc(iree_allocator_t allocator, iree_host_size_t byte_length, void** out_ptr) {
  return allocate(allocator, IREE_ALLOCATOR_COMMAND_CALLOC, byte_length, out_ptr);
}

iree_status_t iree_allocator_malloc_uninitialized(iree_allocator_t allocator, iree_host_size_t byte_length,
                                                  void** out_ptr) {
  return allocate(allocator, IREE_ALLOCATOR_COMMAND_MALLOC, byte_length, out_ptr);
}

iree_status_t iree_allocator_realloc(iree_allocator_t allocator, iree_host_size_t byte_length, void** inout_ptr) {
  if (IREE_UNLIKELY(!allocator.ctl)) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "reallocation from a null allocator");
  }
  iree_allocator_alloc_params_t params = {byte_length};
  return allocator.ctl(allocator.self, IREE_ALLOCATOR_COMMAND_REALLOC, &params, inout_ptr);
}

void iree_allocator_free(iree_allocator_t allocator, void* ptr) {
  if (ptr && allocator.ctl) {
    iree_status_ignore(allocator.ctl(allocator.self, IREE_ALLOCATOR_COMMAND_FREE, NULL, &ptr));
  }
}

iree_status_t iree_allocator_malloc_aligned(iree_allocator_t allocator, iree_host_size_t byte_length,
                                            iree_host_size_t alignment, void** out_ptr) {
  *out_ptr = NULL;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (alignment > 4096 || (alignment & (alignment - 1)) != 0) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "alignment %zu is not a power of two up to 4096", alignment);
  }
  if (byte_length > IREE_HOST_SIZE_MAX - alignment - sizeof(void*)) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "allocation of %zu bytes is too large", byte_length);
  }
  void* base = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, byte_length + alignment + sizeof(void*), &base));
  uintptr_t aligned = iree_host_align((uintptr_t)base + sizeof(void*), alignment);
  ((void**)aligned)[-1] = base;
  *out_ptr = (void*)aligned;
  return iree_ok_status();
}

void iree_allocator_free_aligned(iree_allocator_t allocator, void* ptr) {
  if (ptr) iree_allocator_free(allocator, ((void**)ptr)[-1]);
}

#if !defined(NPUKIT_NO_SYSTEM_ALLOCATOR)
static iree_status_t system_ctl(void* self, iree_allocator_command_t command, const void* params, void** inout_ptr) {
  (void)self;
  if (command == IREE_ALLOCATOR_COMMAND_FREE) {
    free(*inout_ptr);
    return iree_ok_status();
  }
  iree_host_size_t n = ((const iree_allocator_alloc_params_t*)params)->byte_length;
  void* p = NULL;
  switch (command) {
    case IREE_ALLOCATOR_COMMAND_MALLOC:
      p = malloc(n ? n : 1);
      break;
    case IREE_ALLOCATOR_COMMAND_CALLOC:
      p = calloc(1, n ? n : 1);
      break;
    case IREE_ALLOCATOR_COMMAND_REALLOC:
      p = realloc(*inout_ptr, n ? n : 1);
      break;
    default:
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "unknown allocator command %d", (int)command);
  }
  if (!p) return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes", n);
  *inout_ptr = p;
  return iree_ok_status();
}

iree_allocator_t iree_allocator_system(void) {
  iree_allocator_t a = {NULL, system_ctl};
  return a;
}
#endif
