// hal.command_buffer: a recorded list of fills, copies and dispatches,
// replayed by queue execution with a binding table that resolves the
// buffers referenced by slot.

#ifndef NPUKIT_HAL_COMMAND_BUFFER_H_
#define NPUKIT_HAL_COMMAND_BUFFER_H_

#include "npukit/hal/buffer.h"
#include "npukit/hal/executable.h"

#ifdef __cplusplus
extern "C" {
#endif

// A buffer reference in a command: a buffer (retained) or a binding-table slot.
typedef struct npukit_hal_buffer_ref_t {
  npukit_hal_buffer_t* buffer;  // NULL: use |slot|
  uint32_t slot;
  int64_t offset;
  int64_t length;  // NPUKIT_HAL_WHOLE_BUFFER: to the end
} npukit_hal_buffer_ref_t;

typedef struct npukit_hal_binding_table_entry_t {
  npukit_hal_buffer_t* buffer;
  int64_t offset;
  int64_t length;
} npukit_hal_binding_table_entry_t;

typedef struct npukit_hal_command_t npukit_hal_command_t;

typedef struct npukit_hal_command_buffer_t {
  iree_vm_ref_object_t ref_object;
  iree_allocator_t host_allocator;
  uint32_t binding_capacity;
  bool finalized;
  npukit_hal_command_t* first;
  npukit_hal_command_t* last;
} npukit_hal_command_buffer_t;

IREE_VM_DECLARE_TYPE_ADAPTERS(npukit_hal_command_buffer, npukit_hal_command_buffer_t);

IREE_API_EXPORT iree_status_t npukit_hal_command_buffer_create(uint32_t binding_capacity, iree_allocator_t allocator,
                                                               npukit_hal_command_buffer_t** out_command_buffer);
IREE_API_EXPORT void npukit_hal_command_buffer_release(npukit_hal_command_buffer_t* command_buffer);
IREE_API_EXPORT iree_status_t npukit_hal_command_buffer_finalize(npukit_hal_command_buffer_t* command_buffer);

IREE_API_EXPORT iree_status_t npukit_hal_command_buffer_fill(npukit_hal_command_buffer_t* command_buffer,
                                                             npukit_hal_buffer_ref_t target, uint64_t pattern,
                                                             uint32_t pattern_length);
IREE_API_EXPORT iree_status_t npukit_hal_command_buffer_copy(npukit_hal_command_buffer_t* command_buffer,
                                                             npukit_hal_buffer_ref_t source,
                                                             npukit_hal_buffer_ref_t target, int64_t length);
IREE_API_EXPORT iree_status_t npukit_hal_command_buffer_dispatch(npukit_hal_command_buffer_t* command_buffer,
                                                                 npukit_hal_executable_t* executable, uint32_t ordinal,
                                                                 const uint32_t workgroup_count[3],
                                                                 const uint32_t* constants, uint32_t constant_count,
                                                                 const npukit_hal_buffer_ref_t* bindings,
                                                                 uint32_t binding_count);

// Runs the recorded commands in order.
IREE_API_EXPORT iree_status_t npukit_hal_command_buffer_execute(const npukit_hal_command_buffer_t* command_buffer,
                                                                const npukit_hal_binding_table_entry_t* table,
                                                                iree_host_size_t table_count);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NPUKIT_HAL_COMMAND_BUFFER_H_
