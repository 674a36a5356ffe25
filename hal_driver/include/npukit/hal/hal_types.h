// Encodings shared by the HAL modules and the code IREE 3.13 generates:
// element types, encodings, memory types and buffer usage bits.

#ifndef NPUKIT_HAL_HAL_TYPES_H_
#define NPUKIT_HAL_HAL_TYPES_H_

#include "iree/vm/api.h"

#ifdef __cplusplus
extern "C" {
#endif

// Element type: (numerical type << 24) | bit count.
typedef uint32_t npukit_hal_element_type_t;
#define NPUKIT_HAL_NUMERICAL_TYPE_OPAQUE 0x00u
#define NPUKIT_HAL_NUMERICAL_TYPE_INTEGER 0x10u
#define NPUKIT_HAL_NUMERICAL_TYPE_INTEGER_SIGNED 0x11u
#define NPUKIT_HAL_NUMERICAL_TYPE_INTEGER_UNSIGNED 0x12u
#define NPUKIT_HAL_NUMERICAL_TYPE_BOOLEAN 0x13u
#define NPUKIT_HAL_NUMERICAL_TYPE_FLOAT_IEEE 0x21u
#define NPUKIT_HAL_NUMERICAL_TYPE_FLOAT_BRAIN 0x22u
#define NPUKIT_HAL_NUMERICAL_TYPE_FLOAT_COMPLEX 0x23u
#define NPUKIT_HAL_ELEMENT_TYPE(numerical, bits) (((uint32_t)(numerical) << 24) | (uint32_t)(bits))
#define NPUKIT_HAL_ELEMENT_TYPE_INT_8 NPUKIT_HAL_ELEMENT_TYPE(NPUKIT_HAL_NUMERICAL_TYPE_INTEGER, 8)
#define NPUKIT_HAL_ELEMENT_TYPE_FLOAT_32 NPUKIT_HAL_ELEMENT_TYPE(NPUKIT_HAL_NUMERICAL_TYPE_FLOAT_IEEE, 32)

static inline uint32_t npukit_hal_element_numerical_type(npukit_hal_element_type_t t) { return t >> 24; }
static inline uint32_t npukit_hal_element_bit_count(npukit_hal_element_type_t t) { return t & 0xFFu; }
// Bytes of |count| densely packed elements.
static inline iree_host_size_t npukit_hal_element_dense_bytes(npukit_hal_element_type_t t, iree_host_size_t count) {
  return (count * npukit_hal_element_bit_count(t) + 7) / 8;
}

#define NPUKIT_HAL_ENCODING_TYPE_OPAQUE 0u
#define NPUKIT_HAL_ENCODING_TYPE_DENSE_ROW_MAJOR 1u

// Memory types.
#define NPUKIT_HAL_MEMORY_TYPE_OPTIMAL 0x01u
#define NPUKIT_HAL_MEMORY_TYPE_HOST_VISIBLE 0x02u
#define NPUKIT_HAL_MEMORY_TYPE_HOST_COHERENT 0x04u
#define NPUKIT_HAL_MEMORY_TYPE_HOST_CACHED 0x08u
#define NPUKIT_HAL_MEMORY_TYPE_DEVICE_VISIBLE 0x10u
#define NPUKIT_HAL_MEMORY_TYPE_DEVICE_LOCAL 0x30u
// Everything a host-memory buffer of the local device is.
#define NPUKIT_HAL_MEMORY_TYPE_LOCAL_ALL 0x7Fu

// Buffer usage.
#define NPUKIT_HAL_BUFFER_USAGE_TRANSFER 0x00000003u
#define NPUKIT_HAL_BUFFER_USAGE_DISPATCH_STORAGE 0x00000C00u
#define NPUKIT_HAL_BUFFER_USAGE_SHARING_IMMUTABLE 0x00080000u
#define NPUKIT_HAL_BUFFER_USAGE_ALL 0x1F0FFFFFu

// Binding, whole-buffer length.
#define NPUKIT_HAL_WHOLE_BUFFER ((int64_t)-1)

// Dispatches take at most this many bindings and push constants.
#define NPUKIT_HAL_MAX_BINDINGS 32
#define NPUKIT_HAL_MAX_CONSTANTS 64
#define NPUKIT_HAL_MAX_RANK 16

// Required alignment of buffer storage (the generated code assumes 64).
#define NPUKIT_HAL_BUFFER_ALIGNMENT 64

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_HAL_TYPES_H_
