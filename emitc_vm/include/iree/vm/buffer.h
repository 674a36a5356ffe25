// Byte buffers (vm.buffer): module rodata, host storage of HAL buffers and
// buffers created by guest code.

#ifndef IREE_VM_BUFFER_H_
#define IREE_VM_BUFFER_H_

#include "iree/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t iree_vm_buffer_access_t;
#define IREE_VM_BUFFER_ACCESS_MUTABLE (1u << 0)
#define IREE_VM_BUFFER_ACCESS_ORIGIN_MODULE (1u << 1)
#define IREE_VM_BUFFER_ACCESS_ORIGIN_GUEST (1u << 2)
#define IREE_VM_BUFFER_ACCESS_ORIGIN_HOST (1u << 3)

// When the last reference goes, iree_allocator_free(allocator, buffer) is
// called unless the allocator is null (module rodata): buffers made by
// iree_vm_buffer_create are one block; wrappers (HAL storage) pass an
// allocator whose FREE releases what they wrap.
typedef struct iree_vm_buffer_t {
  iree_vm_ref_object_t ref_object;
  iree_vm_buffer_access_t access;
  iree_byte_span_t data;
  iree_allocator_t allocator;
} iree_vm_buffer_t;

IREE_VM_DECLARE_TYPE_ADAPTERS(iree_vm_buffer, iree_vm_buffer_t);

// In place, with one reference (held by whoever embeds the buffer).
IREE_API_EXPORT void iree_vm_buffer_initialize(iree_vm_buffer_access_t access, iree_byte_span_t data,
                                               iree_allocator_t allocator, iree_vm_buffer_t* out_buffer);
IREE_API_EXPORT void iree_vm_buffer_deinitialize(iree_vm_buffer_t* buffer);

// A new zero-filled buffer of |length| bytes whose data is aligned to |alignment|.
IREE_API_EXPORT iree_status_t iree_vm_buffer_create(iree_vm_buffer_access_t access, iree_host_size_t length,
                                                    iree_host_size_t alignment, iree_allocator_t allocator,
                                                    iree_vm_buffer_t** out_buffer);
IREE_API_EXPORT iree_status_t iree_vm_buffer_clone(iree_vm_buffer_access_t access, const iree_vm_buffer_t* source,
                                                   iree_host_size_t offset, iree_host_size_t length,
                                                   iree_host_size_t alignment, iree_allocator_t allocator,
                                                   iree_vm_buffer_t** out_buffer);
IREE_API_EXPORT void iree_vm_buffer_retain(iree_vm_buffer_t* buffer);
IREE_API_EXPORT void iree_vm_buffer_release(iree_vm_buffer_t* buffer);

static inline iree_host_size_t iree_vm_buffer_length(const iree_vm_buffer_t* buffer) {
  return buffer->data.data_length;
}

// The bytes [offset, offset + length) for reading (or writing: requires MUTABLE).
IREE_API_EXPORT iree_status_t iree_vm_buffer_map_ro(const iree_vm_buffer_t* buffer, iree_host_size_t offset,
                                                    iree_host_size_t length, iree_const_byte_span_t* out_span);
IREE_API_EXPORT iree_status_t iree_vm_buffer_map_rw(const iree_vm_buffer_t* buffer, iree_host_size_t offset,
                                                    iree_host_size_t length, iree_byte_span_t* out_span);

IREE_API_EXPORT iree_status_t iree_vm_buffer_copy_bytes(const iree_vm_buffer_t* source, iree_host_size_t source_offset,
                                                        const iree_vm_buffer_t* target, iree_host_size_t target_offset,
                                                        iree_host_size_t length);
// SipHash-2-4 of the bytes [offset, offset + length) under the fixed key
// 00 01 .. 0f, as IREE's vm.buffer.hash defines it.
IREE_API_EXPORT iree_status_t iree_vm_buffer_hash(const iree_vm_buffer_t* buffer, iree_host_size_t offset,
                                                  iree_host_size_t length, int64_t* out_hash);
IREE_API_EXPORT iree_status_t iree_vm_buffer_compare_bytes(const iree_vm_buffer_t* lhs, iree_host_size_t lhs_offset,
                                                           const iree_vm_buffer_t* rhs, iree_host_size_t rhs_offset,
                                                           iree_host_size_t length, bool* out_equal);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_VM_BUFFER_H_
