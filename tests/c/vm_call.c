// Calls the exported functions of one vm-c module with scalar arguments, for
// the VM operation tests. Built with the module's source and
// -DVM_CALL_MODULE_CREATE=<module>_create -DVM_CALL_MODULE_NAME="<module>".
//
// Reads calls from stdin, one a line:
//     FUNCTION ARGS RESULTS [HEX...]
// ARGS and RESULTS are calling-convention letters (i: i32, I: i64, f: f32,
// F: f64; "v" for none) and each HEX is one argument's bits. Writes one line
// a call: "ok HEX..." with the results' bits, or "error CODE" when the call
// returned an error status.

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iree/vm/api.h"

iree_status_t VM_CALL_MODULE_CREATE(iree_vm_instance_t* instance, iree_allocator_t allocator,
                                    iree_vm_module_t** out_module);

static int fail(const char* what, iree_status_t status) {
  char message[512];
  iree_status_format(status, message, sizeof(message));
  fprintf(stderr, "vm_call: %s: %s\n", what, message);
  iree_status_free(status);
  return 1;
}

static size_t value_size(char type) { return type == 'I' || type == 'F' ? 8 : 4; }

static iree_status_t call_line(iree_vm_context_t* context, char* line) {
  char function_name[128], args[32], results[32];
  int consumed = 0;
  if (sscanf(line, "%127s %31s %31s%n", function_name, args, results, &consumed) != 3) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "malformed call line '%s'", line);
  }
  char cconv[72];
  snprintf(cconv, sizeof(cconv), "0%s_%s", args, results);
  iree_vm_call_layout_t arg_layout, result_layout;
  IREE_RETURN_IF_ERROR(iree_vm_calling_convention_layout(iree_make_cstring_view(cconv), &arg_layout, &result_layout));
  uint8_t arg_storage[IREE_VM_CALL_MAX_VALUES * 8] = {0};
  uint8_t result_storage[IREE_VM_CALL_MAX_VALUES * 8] = {0};
  const char* cursor = line + consumed;
  for (iree_host_size_t i = 0; i < arg_layout.count; ++i) {
    uint64_t bits = 0;
    int used = 0;
    if (sscanf(cursor, " %" SCNx64 "%n", &bits, &used) != 1) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "%s: missing argument %zu", function_name, i);
    }
    cursor += used;
    memcpy(arg_storage + arg_layout.offsets[i], &bits, value_size(arg_layout.types[i]));  // little-endian host
  }
  char full_name[160];
  snprintf(full_name, sizeof(full_name), "%s.%s", VM_CALL_MODULE_NAME, function_name);
  iree_vm_function_t function;
  IREE_RETURN_IF_ERROR(iree_vm_context_resolve_function(context, iree_make_cstring_view(full_name), &function));
  iree_status_t status = iree_vm_context_call(context, function, iree_make_byte_span(arg_storage, arg_layout.size),
                                              iree_make_byte_span(result_storage, result_layout.size));
  if (!iree_status_is_ok(status)) {
    printf("error %d\n", (int)iree_status_code(status));
    iree_status_free(status);
    return iree_ok_status();
  }
  printf("ok");
  for (iree_host_size_t i = 0; i < result_layout.count; ++i) {
    uint64_t bits = 0;
    memcpy(&bits, result_storage + result_layout.offsets[i], value_size(result_layout.types[i]));
    printf(" %" PRIx64, bits);
  }
  printf("\n");
  return iree_ok_status();
}

int main(void) {
  iree_allocator_t allocator = iree_allocator_system();
  iree_vm_instance_t* instance = NULL;
  iree_vm_module_t* module = NULL;
  iree_vm_context_t* context = NULL;
  iree_status_t status = iree_vm_instance_create(allocator, &instance);
  if (iree_status_is_ok(status)) status = VM_CALL_MODULE_CREATE(instance, allocator, &module);
  if (iree_status_is_ok(status)) status = iree_vm_context_create(instance, allocator, &context);
  if (iree_status_is_ok(status)) status = iree_vm_context_register_modules(context, 1, &module);
  if (!iree_status_is_ok(status)) return fail("loading the module", status);
  char line[4096];
  int rc = 0;
  while (fgets(line, sizeof(line), stdin)) {
    line[strcspn(line, "\n")] = 0;
    if (!line[0]) continue;
    status = call_line(context, line);
    if (!iree_status_is_ok(status)) {
      rc = fail("calling", status);
      break;
    }
  }
  iree_vm_context_release(context);
  iree_vm_module_release(module);
  iree_vm_instance_release(instance);
  return rc;
}
