#include "iree/vm/buffer.h"

static void buffer_destroy(void* ptr) {
  iree_vm_buffer_t* buffer = (iree_vm_buffer_t*)ptr;
  iree_allocator_free(buffer->allocator, buffer);
}

const iree_vm_ref_type_descriptor_t iree_vm_buffer_descriptor = {buffer_destroy, {"vm.buffer", 9}};

void iree_vm_buffer_initialize(iree_vm_buffer_access_t access, iree_byte_span_t data, iree_allocator_t allocator,
                               iree_vm_buffer_t* out_buffer) {
  out_buffer->ref_object.counter = 1;
  out_buffer->access = access;
  out_buffer->data = data;
  out_buffer->allocator = allocator;
}

void iree_vm_buffer_deinitialize(iree_vm_buffer_t* buffer) {
  buffer->data = iree_byte_span_empty();
  buffer->ref_object.counter = 0;
}

iree_status_t iree_vm_buffer_create(iree_vm_buffer_access_t access, iree_host_size_t length, iree_host_size_t alignment,
                                    iree_allocator_t allocator, iree_vm_buffer_t** out_buffer) {
  *out_buffer = NULL;
  if (alignment < IREE_ALLOCATOR_MIN_ALIGNMENT) alignment = IREE_ALLOCATOR_MIN_ALIGNMENT;
  if ((alignment & (alignment - 1)) != 0 || alignment > 4096) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "vm.buffer alignment %zu is not a power of two <= 4096",
                            alignment);
  }
  // One block: the header, then the data at the requested alignment.
  iree_host_size_t header = iree_host_align(sizeof(iree_vm_buffer_t), alignment);
  if (length > IREE_HOST_SIZE_MAX - header - alignment) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "vm.buffer of %zu bytes is too large", length);
  }
  uint8_t* block = NULL;
  // Allocators align to 16; larger alignments pad inside the block.
  iree_host_size_t slack = alignment > IREE_ALLOCATOR_MIN_ALIGNMENT ? alignment : 0;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, header + length + slack, (void**)&block));
  uint8_t* data = (uint8_t*)iree_host_align((uintptr_t)block + sizeof(iree_vm_buffer_t), alignment);
  iree_vm_buffer_t* buffer = (iree_vm_buffer_t*)block;
  iree_vm_buffer_initialize(access, iree_make_byte_span(data, length), allocator, buffer);
  *out_buffer = buffer;
  return iree_ok_status();
}

iree_status_t iree_vm_buffer_clone(iree_vm_buffer_access_t access, const iree_vm_buffer_t* source,
                                   iree_host_size_t offset, iree_host_size_t length, iree_host_size_t alignment,
                                   iree_allocator_t allocator, iree_vm_buffer_t** out_buffer) {
  *out_buffer = NULL;
  iree_const_byte_span_t span;
  IREE_RETURN_IF_ERROR(iree_vm_buffer_map_ro(source, offset, length, &span));
  iree_vm_buffer_t* buffer = NULL;
  IREE_RETURN_IF_ERROR(iree_vm_buffer_create(access, length, alignment, allocator, &buffer));
  if (length) memcpy(buffer->data.data, span.data, length);
  *out_buffer = buffer;
  return iree_ok_status();
}

void iree_vm_buffer_retain(iree_vm_buffer_t* buffer) {
  if (buffer) buffer->ref_object.counter++;
}

void iree_vm_buffer_release(iree_vm_buffer_t* buffer) {
  if (buffer && --buffer->ref_object.counter == 0) buffer_destroy(buffer);
}

static iree_status_t check_range(const iree_vm_buffer_t* buffer, iree_host_size_t offset, iree_host_size_t length) {
  iree_host_size_t end = offset + length;
  if (end < offset || end > buffer->data.data_length) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "vm.buffer range [%zu, %zu) out of range of %zu bytes", offset,
                            end, buffer->data.data_length);
  }
  return iree_ok_status();
}

iree_status_t iree_vm_buffer_map_ro(const iree_vm_buffer_t* buffer, iree_host_size_t offset, iree_host_size_t length,
                                    iree_const_byte_span_t* out_span) {
  IREE_RETURN_IF_ERROR(check_range(buffer, offset, length));
  *out_span = iree_make_const_byte_span(buffer->data.data + offset, length);
  return iree_ok_status();
}

iree_status_t iree_vm_buffer_map_rw(const iree_vm_buffer_t* buffer, iree_host_size_t offset, iree_host_size_t length,
                                    iree_byte_span_t* out_span) {
  if (!(buffer->access & IREE_VM_BUFFER_ACCESS_MUTABLE)) {
    return iree_make_status(IREE_STATUS_PERMISSION_DENIED, "vm.buffer is read-only");
  }
  IREE_RETURN_IF_ERROR(check_range(buffer, offset, length));
  *out_span = iree_make_byte_span(buffer->data.data + offset, length);
  return iree_ok_status();
}

iree_status_t iree_vm_buffer_copy_bytes(const iree_vm_buffer_t* source, iree_host_size_t source_offset,
                                        const iree_vm_buffer_t* target, iree_host_size_t target_offset,
                                        iree_host_size_t length) {
  iree_const_byte_span_t from;
  iree_byte_span_t to;
  IREE_RETURN_IF_ERROR(iree_vm_buffer_map_ro(source, source_offset, length, &from));
  IREE_RETURN_IF_ERROR(iree_vm_buffer_map_rw(target, target_offset, length, &to));
  if (length) memmove(to.data, from.data, length);
  return iree_ok_status();
}

iree_status_t iree_vm_buffer_compare_bytes(const iree_vm_buffer_t* lhs, iree_host_size_t lhs_offset,
                                           const iree_vm_buffer_t* rhs, iree_host_size_t rhs_offset,
                                           iree_host_size_t length, bool* out_equal) {
  iree_const_byte_span_t a, b;
  IREE_RETURN_IF_ERROR(iree_vm_buffer_map_ro(lhs, lhs_offset, length, &a));
  IREE_RETURN_IF_ERROR(iree_vm_buffer_map_ro(rhs, rhs_offset, length, &b));
  *out_equal = length == 0 || memcmp(a.data, b.data, length) == 0;
  return iree_ok_status();
}

//===----------------------------------------------------------------------===//
// SipHash-2-4 (Aumasson and Bernstein), 64-bit output
//===----------------------------------------------------------------------===//

static inline uint64_t rotate_left(uint64_t x, int bits) { return (x << bits) | (x >> (64 - bits)); }

typedef struct sip_state_t {
  uint64_t v0, v1, v2, v3;
} sip_state_t;

static void sip_rounds(sip_state_t* s, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    s->v0 += s->v1;
    s->v1 = rotate_left(s->v1, 13) ^ s->v0;
    s->v0 = rotate_left(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = rotate_left(s->v3, 16) ^ s->v2;
    s->v0 += s->v3;
    s->v3 = rotate_left(s->v3, 21) ^ s->v0;
    s->v2 += s->v1;
    s->v1 = rotate_left(s->v1, 17) ^ s->v2;
    s->v2 = rotate_left(s->v2, 32);
  }
}

static uint64_t load_le64(const uint8_t* p, iree_host_size_t count) {
  uint64_t v = 0;
  for (iree_host_size_t i = 0; i < count; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void sip_absorb(sip_state_t* s, uint64_t m) {
  s->v3 ^= m;
  sip_rounds(s, 2);
  s->v0 ^= m;
}

iree_status_t iree_vm_buffer_hash(const iree_vm_buffer_t* buffer, iree_host_size_t offset, iree_host_size_t length,
                                  int64_t* out_hash) {
  iree_const_byte_span_t span;
  IREE_RETURN_IF_ERROR(iree_vm_buffer_map_ro(buffer, offset, length, &span));
  const uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
  sip_state_t s = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull, k0 ^ 0x6c7967656e657261ull,
                   k1 ^ 0x7465646279746573ull};
  iree_host_size_t whole = length - length % 8;
  for (iree_host_size_t i = 0; i < whole; i += 8) sip_absorb(&s, load_le64(span.data + i, 8));
  sip_absorb(&s, ((uint64_t)(length & 0xff) << 56) | load_le64(span.data + whole, length - whole));
  s.v2 ^= 0xff;
  sip_rounds(&s, 4);
  *out_hash = (int64_t)(s.v0 ^ s.v1 ^ s.v2 ^ s.v3);
  return iree_ok_status();
}
