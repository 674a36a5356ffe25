#include "iree/vm/invocation.h"

static iree_status_t layout_side(iree_string_view_t text, const char* side, iree_vm_call_layout_t* out) {
  memset(out, 0, sizeof(*out));
  if (text.size == 1 && text.data[0] == 'v') return iree_ok_status();
  iree_host_size_t offset = 0;
  bool wide = false;
  for (iree_host_size_t i = 0; i < text.size; ++i) {
    char c = text.data[i];
    iree_host_size_t size, alignment;
    switch (c) {
      case 'i':
      case 'f':
        size = 4;
        alignment = 4;
        break;
      case 'I':
      case 'F':
        size = 8;
        alignment = 8;
        break;
      case 'r':
        size = sizeof(iree_vm_ref_t);
        alignment = 8;
        break;
      default:
        return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "calling convention %s type '%c' is not supported", side, c);
    }
    if (out->count == IREE_VM_CALL_MAX_VALUES) {
      return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "more than %d %s", IREE_VM_CALL_MAX_VALUES, side);
    }
    offset = iree_host_align(offset, alignment);
    wide |= alignment == 8;
    out->types[out->count] = c;
    out->offsets[out->count] = offset;
    out->count++;
    offset += size;
  }
  out->size = wide ? iree_host_align(offset, 8) : offset;
  return iree_ok_status();
}

iree_status_t iree_vm_calling_convention_layout(iree_string_view_t cconv, iree_vm_call_layout_t* out_arguments,
                                                iree_vm_call_layout_t* out_results) {
  if (cconv.size == 0 || cconv.data[0] != '0') {
    return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "calling convention '%.*s' is not version 0", (int)cconv.size,
                            cconv.data);
  }
  iree_string_view_t body = iree_make_string_view(cconv.data + 1, cconv.size - 1);
  iree_string_view_t args, results;
  if (!iree_string_view_split(body, '_', &args, &results)) {
    args = body;
    results = iree_string_view_empty();
  }
  IREE_RETURN_IF_ERROR(layout_side(args, "arguments", out_arguments));
  return layout_side(results, "results", out_results);
}

iree_status_t iree_vm_abi_reader_finish(const iree_vm_abi_reader_t* reader, const char* function_name) {
  iree_host_size_t expected = iree_host_align(reader->offset, 8);
  if (reader->overrun || (reader->length != reader->offset && reader->length != expected)) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "%s: argument buffer of %zu bytes does not match its signature (%zu bytes read)",
                            function_name, reader->length, reader->offset);
  }
  return iree_ok_status();
}
