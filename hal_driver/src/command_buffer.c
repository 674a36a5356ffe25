#include "npukit/hal/command_buffer.h"

typedef enum command_kind_e { COMMAND_FILL, COMMAND_COPY, COMMAND_DISPATCH } command_kind_t;

struct npukit_hal_command_t {
  npukit_hal_command_t* next;
  command_kind_t kind;
  // fill / copy
  npukit_hal_buffer_ref_t target;
  npukit_hal_buffer_ref_t source;
  uint64_t pattern;
  uint32_t pattern_length;
  int64_t length;
  // dispatch
  npukit_hal_executable_t* executable;
  uint32_t ordinal;
  uint32_t workgroup_count[3];
  uint32_t constant_count;
  uint32_t binding_count;
  uint32_t* constants;                // points into the same allocation
  npukit_hal_buffer_ref_t* bindings;  // "
};

static void release_ref(npukit_hal_buffer_ref_t* ref) {
  if (ref->buffer) npukit_hal_buffer_release(ref->buffer);
}

static void command_buffer_destroy(void* ptr) {
  npukit_hal_command_buffer_t* cb = (npukit_hal_command_buffer_t*)ptr;
  npukit_hal_command_t* command = cb->first;
  while (command) {
    npukit_hal_command_t* next = command->next;
    release_ref(&command->target);
    release_ref(&command->source);
    for (uint32_t i = 0; i < command->binding_count; ++i) release_ref(&command->bindings[i]);
    if (command->executable) npukit_hal_executable_release(command->executable);
    iree_allocator_free(cb->host_allocator, command);
    command = next;
  }
  iree_allocator_free(cb->host_allocator, cb);
}

const iree_vm_ref_type_descriptor_t npukit_hal_command_buffer_descriptor = {command_buffer_destroy,
                                                                            {"hal.command_buffer", 18}};

iree_status_t npukit_hal_command_buffer_create(uint32_t binding_capacity, iree_allocator_t allocator,
                                               npukit_hal_command_buffer_t** out_command_buffer) {
  *out_command_buffer = NULL;
  npukit_hal_command_buffer_t* cb = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*cb), (void**)&cb));
  cb->ref_object.counter = 1;
  cb->host_allocator = allocator;
  cb->binding_capacity = binding_capacity;
  *out_command_buffer = cb;
  return iree_ok_status();
}

void npukit_hal_command_buffer_release(npukit_hal_command_buffer_t* command_buffer) {
  if (command_buffer && --command_buffer->ref_object.counter == 0) command_buffer_destroy(command_buffer);
}

iree_status_t npukit_hal_command_buffer_finalize(npukit_hal_command_buffer_t* command_buffer) {
  if (command_buffer->finalized) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "command buffer is already finalized");
  }
  command_buffer->finalized = true;
  return iree_ok_status();
}

static iree_status_t append(npukit_hal_command_buffer_t* cb, command_kind_t kind, uint32_t constant_count,
                            uint32_t binding_count, npukit_hal_command_t** out_command) {
  if (cb->finalized) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "recording into a finalized command buffer");
  }
  iree_host_size_t bindings_offset = iree_host_align(sizeof(npukit_hal_command_t), 8);
  iree_host_size_t constants_offset = bindings_offset + binding_count * sizeof(npukit_hal_buffer_ref_t);
  npukit_hal_command_t* command = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(cb->host_allocator, constants_offset + constant_count * sizeof(uint32_t),
                                             (void**)&command));
  command->kind = kind;
  command->bindings = (npukit_hal_buffer_ref_t*)((uint8_t*)command + bindings_offset);
  command->constants = (uint32_t*)((uint8_t*)command + constants_offset);
  if (cb->last)
    cb->last->next = command;
  else
    cb->first = command;
  cb->last = command;
  *out_command = command;
  return iree_ok_status();
}

static void keep_ref(npukit_hal_buffer_ref_t* dst, const npukit_hal_buffer_ref_t* src) {
  *dst = *src;
  if (dst->buffer) npukit_hal_buffer_retain(dst->buffer);
}

static iree_status_t check_slot(const npukit_hal_command_buffer_t* cb, const npukit_hal_buffer_ref_t* ref) {
  if (!ref->buffer && ref->slot >= cb->binding_capacity) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "binding slot %" PRIu32 " exceeds the capacity %" PRIu32,
                            ref->slot, cb->binding_capacity);
  }
  return iree_ok_status();
}

iree_status_t npukit_hal_command_buffer_fill(npukit_hal_command_buffer_t* cb, npukit_hal_buffer_ref_t target,
                                             uint64_t pattern, uint32_t pattern_length) {
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4 && pattern_length != 8) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "fill pattern length %" PRIu32, pattern_length);
  }
  IREE_RETURN_IF_ERROR(check_slot(cb, &target));
  npukit_hal_command_t* command = NULL;
  IREE_RETURN_IF_ERROR(append(cb, COMMAND_FILL, 0, 0, &command));
  keep_ref(&command->target, &target);
  command->pattern = pattern;
  command->pattern_length = pattern_length;
  return iree_ok_status();
}

iree_status_t npukit_hal_command_buffer_copy(npukit_hal_command_buffer_t* cb, npukit_hal_buffer_ref_t source,
                                             npukit_hal_buffer_ref_t target, int64_t length) {
  IREE_RETURN_IF_ERROR(check_slot(cb, &source));
  IREE_RETURN_IF_ERROR(check_slot(cb, &target));
  npukit_hal_command_t* command = NULL;
  IREE_RETURN_IF_ERROR(append(cb, COMMAND_COPY, 0, 0, &command));
  keep_ref(&command->source, &source);
  keep_ref(&command->target, &target);
  command->length = length;
  return iree_ok_status();
}

iree_status_t npukit_hal_command_buffer_dispatch(npukit_hal_command_buffer_t* cb, npukit_hal_executable_t* executable,
                                                 uint32_t ordinal, const uint32_t workgroup_count[3],
                                                 const uint32_t* constants, uint32_t constant_count,
                                                 const npukit_hal_buffer_ref_t* bindings, uint32_t binding_count) {
  for (uint32_t i = 0; i < binding_count; ++i) IREE_RETURN_IF_ERROR(check_slot(cb, &bindings[i]));
  npukit_hal_command_t* command = NULL;
  IREE_RETURN_IF_ERROR(append(cb, COMMAND_DISPATCH, constant_count, binding_count, &command));
  npukit_hal_executable_retain(executable);
  command->executable = executable;
  command->ordinal = ordinal;
  memcpy(command->workgroup_count, workgroup_count, sizeof(command->workgroup_count));
  command->constant_count = constant_count;
  if (constant_count) memcpy(command->constants, constants, constant_count * sizeof(uint32_t));
  command->binding_count = binding_count;
  for (uint32_t i = 0; i < binding_count; ++i) keep_ref(&command->bindings[i], &bindings[i]);
  return iree_ok_status();
}

// The bytes a buffer reference designates, after binding-table resolution.
static iree_status_t resolve(const npukit_hal_buffer_ref_t* ref, int64_t length_override,
                             const npukit_hal_binding_table_entry_t* table, iree_host_size_t table_count,
                             npukit_hal_binding_t* out) {
  npukit_hal_buffer_t* buffer = ref->buffer;
  int64_t base = 0;
  int64_t window = -1;
  if (!buffer) {
    if (ref->slot >= table_count || !table[ref->slot].buffer) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                              "binding slot %" PRIu32 " has no buffer in the binding table", ref->slot);
    }
    buffer = table[ref->slot].buffer;
    base = table[ref->slot].offset;
    window = table[ref->slot].length;
  }
  if (base < 0 || (uint64_t)base > buffer->length) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "binding offset %lld exceeds %zu bytes", (long long)base,
                            buffer->length);
  }
  uint64_t available = buffer->length - (uint64_t)base;
  if (window >= 0 && (uint64_t)window < available) available = (uint64_t)window;
  int64_t offset = ref->offset;
  int64_t length = length_override >= 0 ? length_override : ref->length;
  if (offset < 0 || (uint64_t)offset > available) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "binding offset %lld exceeds %llu bytes", (long long)offset,
                            (unsigned long long)available);
  }
  if (length == NPUKIT_HAL_WHOLE_BUFFER) length = (int64_t)(available - (uint64_t)offset);
  if (length < 0 || (uint64_t)length > available - (uint64_t)offset) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "binding range [%lld, +%lld) exceeds %llu bytes",
                            (long long)offset, (long long)length, (unsigned long long)available);
  }
  out->data = buffer->data + base + offset;
  out->length = (iree_host_size_t)length;
  return iree_ok_status();
}

static iree_status_t run_fill(const npukit_hal_command_t* command, const npukit_hal_binding_table_entry_t* table,
                              iree_host_size_t table_count) {
  npukit_hal_binding_t target;
  IREE_RETURN_IF_ERROR(resolve(&command->target, -1, table, table_count, &target));
  return npukit_hal_fill_pattern(iree_make_byte_span(target.data, target.length), command->pattern,
                                 command->pattern_length);
}

iree_status_t npukit_hal_command_buffer_execute(const npukit_hal_command_buffer_t* cb,
                                                const npukit_hal_binding_table_entry_t* table,
                                                iree_host_size_t table_count) {
  if (!cb->finalized) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "executing a command buffer that is not finalized");
  }
  for (const npukit_hal_command_t* command = cb->first; command; command = command->next) {
    switch (command->kind) {
      case COMMAND_FILL:
        IREE_RETURN_IF_ERROR(run_fill(command, table, table_count));
        break;
      case COMMAND_COPY: {
        npukit_hal_binding_t source, target;
        IREE_RETURN_IF_ERROR(resolve(&command->source, command->length, table, table_count, &source));
        IREE_RETURN_IF_ERROR(resolve(&command->target, command->length, table, table_count, &target));
        memmove(target.data, source.data, source.length);
        break;
      }
      case COMMAND_DISPATCH: {
        npukit_hal_binding_t bindings[NPUKIT_HAL_MAX_BINDINGS];
        for (uint32_t i = 0; i < command->binding_count; ++i) {
          IREE_RETURN_IF_ERROR(resolve(&command->bindings[i], -1, table, table_count, &bindings[i]));
        }
        npukit_hal_dispatch_params_t params;
        memcpy(params.workgroup_count, command->workgroup_count, sizeof(params.workgroup_count));
        params.constants = command->constants;
        params.constant_count = command->constant_count;
        params.bindings = bindings;
        params.binding_count = command->binding_count;
        IREE_RETURN_IF_ERROR(npukit_hal_executable_dispatch(command->executable, command->ordinal, &params));
        break;
      }
    }
  }
  return iree_ok_status();
}
