// Statuses with messages from a fixed pool of slots.
//
// The runtime is single-threaded and allocates nothing on the heap, so an
// error message lives in one of NPUKIT_STATUS_SLOT_COUNT static slots until
// the status is freed. Running out of slots (errors that nobody frees) keeps
// the code and drops the message. Without messages (NPUKIT_STATUS_MESSAGES=0,
// the default on boards) there are no slots: every status is its code, and
// the firmware keeps the slots' RAM.

#include "iree/base/status.h"

#ifndef NPUKIT_STATUS_SLOT_COUNT
#define NPUKIT_STATUS_SLOT_COUNT 4
#endif
#ifndef NPUKIT_STATUS_MESSAGE_CAPACITY
#define NPUKIT_STATUS_MESSAGE_CAPACITY 224
#endif

typedef struct iree_alignas(32) status_slot_t {
  uint32_t in_use;
  uint32_t length;
  char message[NPUKIT_STATUS_MESSAGE_CAPACITY];
} status_slot_t;

#if NPUKIT_STATUS_MESSAGES
static status_slot_t status_slots[NPUKIT_STATUS_SLOT_COUNT];
#endif

static status_slot_t* slot_of(iree_status_t status) {
  uintptr_t bits = (uintptr_t)status & ~(uintptr_t)IREE_STATUS_CODE_MASK;
  return (status_slot_t*)bits;
}

static status_slot_t* acquire_slot(void) {
#if NPUKIT_STATUS_MESSAGES
  for (int i = 0; i < NPUKIT_STATUS_SLOT_COUNT; ++i) {
    if (!status_slots[i].in_use) {
      status_slots[i].in_use = 1;
      status_slots[i].length = 0;
      status_slots[i].message[0] = 0;
      return &status_slots[i];
    }
  }
#endif
  return NULL;
}

iree_status_t iree_status_allocate_vf(iree_status_code_t code, const char* file, uint32_t line, const char* format,
                                      va_list args) {
  (void)file;
  (void)line;
  if (code == IREE_STATUS_OK) return iree_ok_status();
  status_slot_t* slot = acquire_slot();
  if (!slot) return iree_status_from_code(code);
  iree_host_size_t n = iree_vformat(slot->message, sizeof(slot->message), format, args);
  slot->length = (uint32_t)(n < sizeof(slot->message) ? n : sizeof(slot->message) - 1);
  return (iree_status_t)((uintptr_t)slot | ((uintptr_t)code & IREE_STATUS_CODE_MASK));
}

iree_status_t(iree_status_allocate_f)(iree_status_code_t code, const char* file, uint32_t line, const char* format,
                                       ...) {
  va_list args;
  va_start(args, format);
  iree_status_t status = iree_status_allocate_vf(code, file, line, format, args);
  va_end(args);
  return status;
}

iree_status_t(iree_status_annotate_f)(iree_status_t status, const char* format, ...) {
  if (iree_status_is_ok(status)) return status;
  status_slot_t* slot = slot_of(status);
  if (!slot) {
    // A code-only status: try to give it a message of its own.
    slot = acquire_slot();
    if (!slot) return status;
    status = (iree_status_t)((uintptr_t)slot | ((uintptr_t)status & IREE_STATUS_CODE_MASK));
  }
  char* end = slot->message + slot->length;
  iree_host_size_t room = sizeof(slot->message) - slot->length;
  if (room <= 3) return status;
  if (slot->length > 0) {
    memcpy(end, "; ", 2);
    end += 2;
    room -= 2;
  }
  va_list args;
  va_start(args, format);
  iree_host_size_t n = iree_vformat(end, room, format, args);
  va_end(args);
  iree_host_size_t written = n < room ? n : room - 1;
  slot->length = (uint32_t)((end - slot->message) + written);
  return status;
}

void iree_status_free(iree_status_t status) {
  status_slot_t* slot = slot_of(status);
  if (slot) slot->in_use = 0;
}

iree_string_view_t iree_status_message(iree_status_t status) {
  status_slot_t* slot = slot_of(status);
  if (!slot) return iree_string_view_empty();
  return iree_make_string_view(slot->message, slot->length);
}

const char* iree_status_code_string(iree_status_code_t code) {
  switch (code) {
    case IREE_STATUS_OK:
      return "OK";
    case IREE_STATUS_CANCELLED:
      return "CANCELLED";
    case IREE_STATUS_UNKNOWN:
      return "UNKNOWN";
    case IREE_STATUS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case IREE_STATUS_DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case IREE_STATUS_NOT_FOUND:
      return "NOT_FOUND";
    case IREE_STATUS_ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case IREE_STATUS_PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case IREE_STATUS_RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case IREE_STATUS_FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case IREE_STATUS_ABORTED:
      return "ABORTED";
    case IREE_STATUS_OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case IREE_STATUS_UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case IREE_STATUS_INTERNAL:
      return "INTERNAL";
    case IREE_STATUS_UNAVAILABLE:
      return "UNAVAILABLE";
    case IREE_STATUS_DATA_LOSS:
      return "DATA_LOSS";
    case IREE_STATUS_UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case IREE_STATUS_DEFERRED:
      return "DEFERRED";
    case IREE_STATUS_INCOMPATIBLE:
      return "INCOMPATIBLE";
    default:
      return "UNKNOWN_CODE";
  }
}

iree_host_size_t iree_status_format(iree_status_t status, char* buffer, iree_host_size_t capacity) {
  iree_string_view_t message = iree_status_message(status);
  const char* name = iree_status_code_string(iree_status_code(status));
  if (message.size == 0) return iree_format(buffer, capacity, "%s", name);
  return iree_format(buffer, capacity, "%s; %.*s", name, (int)message.size, message.data);
}
