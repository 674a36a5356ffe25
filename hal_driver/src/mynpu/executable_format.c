// Parsing and validating mynpu-v1 executables (docs/mynpu-isa.md).

#include "npukit/mynpu/executable_format.h"

#include <string.h>

static uint32_t read32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static iree_status_t malformed(const char* what) {
  return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu-v1 executable: %s", what);
}

// [offset, offset + length) lies inside |size| bytes.
static int inside(size_t size, uint64_t offset, uint64_t length) { return offset <= size && length <= size - offset; }

static uint32_t read16(const uint8_t* p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

static uint32_t export_bytes(uint16_t minor_version) {
  return minor_version >= 2 ? NPUKIT_MYNPU_EXPORT_BYTES : NPUKIT_MYNPU_EXPORT_BYTES_1_1;
}

// The fields of an export table entry, in either layout.
typedef struct {
  uint32_t name_at, name_length, name_hash, stream_at, stream_length, binding_count, bindings_at;
  int reserved_clear;  // its reserved bytes are zero
} entry_t;

// Export |ordinal|'s entry. Version 1.2 (16 bytes): the name's offset, or its
// hash when the name length is 0; the name length (uint16); the binding count
// (uint8); a reserved byte; the stream's offset and length; the binding table
// follows the stream. Versions 1.0 and 1.1 (32 bytes): name offset and
// length, stream offset and length, binding count, binding table offset,
// name hash, a reserved word.
static entry_t export_entry(const npukit_mynpu_executable_info_t* info, uint32_t ordinal) {
  const uint8_t* e = info->data + NPUKIT_MYNPU_HEADER_BYTES + (size_t)ordinal * export_bytes(info->minor_version);
  entry_t out;
  if (info->minor_version >= 2) {
    out.name_length = read16(e + 4);
    out.name_at = out.name_length ? read32(e) : 0;
    out.name_hash = out.name_length ? 0 : read32(e);
    out.binding_count = e[6];
    out.stream_at = read32(e + 8);
    out.stream_length = read32(e + 12);
    out.bindings_at = out.stream_at + out.stream_length;  // a stream outside the file is rejected first
    out.reserved_clear = e[7] == 0;
  } else {
    out.name_at = read32(e);
    out.name_length = read32(e + 4);
    out.stream_at = read32(e + 8);
    out.stream_length = read32(e + 12);
    out.binding_count = read32(e + 16);
    out.bindings_at = read32(e + 20);
    out.name_hash = out.name_length ? 0 : read32(e + 24);
    out.reserved_clear = (!out.name_length || !read32(e + 24)) && !read32(e + 28);
  }
  return out;
}

uint32_t npukit_mynpu_name_hash(iree_string_view_t name) {
  uint32_t hash = 2166136261u;
  for (iree_host_size_t i = 0; i < name.size; ++i) hash = (hash ^ (uint8_t)name.data[i]) * 16777619u;
  return hash;
}

void npukit_mynpu_executable_export(const npukit_mynpu_executable_info_t* info, uint32_t ordinal,
                                    npukit_mynpu_export_t* out) {
  const entry_t e = export_entry(info, ordinal);
  memset(out, 0, sizeof(*out));
  out->name = iree_make_string_view((const char*)info->data + e.name_at, e.name_length);
  out->name_hash = e.name_hash;
  out->commands = info->data + e.stream_at;
  out->command_bytes = e.stream_length;
  out->binding_count = e.binding_count;
  const uint8_t* sizes = info->data + e.bindings_at;
  for (uint32_t i = 0; i < out->binding_count; ++i) out->binding_sizes[i] = read32(sizes + 4 * i);
}

void npukit_mynpu_export_stream(const npukit_mynpu_executable_info_t* info, const npukit_mynpu_export_t* ex,
                                const npukit_mynpu_binding_t* bindings, npukit_mynpu_stream_t* out) {
  memset(out, 0, sizeof(*out));
  out->config = &info->config;
  out->commands = ex->commands;
  out->command_bytes = ex->command_bytes;
  out->bindings = bindings;
  out->binding_count = ex->binding_count;
  out->constants = info->constants;
  out->constants_length = info->constants_length;
  out->register_defaults = info->minor_version >= 2;
}

// The tables of export |ordinal| lie inside the file and are well formed.
static iree_status_t check_export_tables(const npukit_mynpu_executable_info_t* info, uint32_t ordinal) {
  const entry_t e = export_entry(info, ordinal);
  const uint32_t name_at = e.name_at, name_length = e.name_length, stream_at = e.stream_at;
  const uint32_t stream_length = e.stream_length, binding_count = e.binding_count, bindings_at = e.bindings_at;
  const char* problem = NULL;
  if (name_length == 0 && info->host_code.data_length == 0) {
    problem = "it has no name, and no host code to find it in by its name hash";
  } else if (!inside(info->size, name_at, name_length)) {
    problem = "its name lies outside the file";
  } else if (stream_length == 0 || stream_length % NPUKIT_MYNPU_SHORT_COMMAND_BYTES || stream_at % 4) {
    problem = "its stream is not a non-empty, 4-byte aligned list of 4- or 8-byte commands";
  } else if (!inside(info->size, stream_at, stream_length)) {
    problem = "its stream lies outside the file";
  } else if (binding_count > NPUKIT_MYNPU_MAX_BINDINGS) {
    problem = "it has more than 8 bindings";
  } else if (bindings_at % 4 || !inside(info->size, bindings_at, 4ull * binding_count)) {
    problem = "its binding table lies outside the file or is unaligned";
  } else if (!e.reserved_clear) {
    problem = "its reserved bytes are not zero";
  }
  if (problem) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "mynpu-v1 executable: export %u: %s", ordinal, problem);
  }
  return iree_ok_status();
}

// Validates the stream of export |ordinal| without executing it.
static iree_status_t check_export_stream(const npukit_mynpu_executable_info_t* info, uint32_t ordinal) {
  npukit_mynpu_export_t ex;
  npukit_mynpu_executable_export(info, ordinal, &ex);
  npukit_mynpu_binding_t bindings[NPUKIT_MYNPU_MAX_BINDINGS];
  for (uint32_t i = 0; i < ex.binding_count; ++i) {
    bindings[i].data = NULL;
    bindings[i].length = ex.binding_sizes[i];
  }
  npukit_mynpu_stream_t stream;
  npukit_mynpu_export_stream(info, &ex, bindings, &stream);
  npukit_mynpu_counters_t counters;
  iree_status_t status = npukit_mynpu_run_stream(&stream, &counters);
  if (!iree_status_is_ok(status)) {
    return iree_status_annotate_f(status, "in export %u ('%.*s')", ordinal, (int)ex.name.size, ex.name.data);
  }
  return iree_ok_status();
}

iree_status_t npukit_mynpu_executable_parse(iree_const_byte_span_t data, npukit_mynpu_executable_info_t* out) {
  memset(out, 0, sizeof(*out));
  const uint8_t* p = data.data;
  if (!p || data.data_length < NPUKIT_MYNPU_HEADER_BYTES) return malformed("shorter than its 64-byte header");
  if (memcmp(p, NPUKIT_MYNPU_MAGIC, 4) != 0) return malformed("bad magic (not \"MNPU\")");
  uint16_t major, minor;
  memcpy(&major, p + 4, 2);
  memcpy(&minor, p + 6, 2);
  if (major != NPUKIT_MYNPU_VERSION_MAJOR || minor > NPUKIT_MYNPU_VERSION_MINOR) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "mynpu-v1 executable: version %u.%u; this runtime reads versions %u.0 to %u.%u", major,
                            minor, NPUKIT_MYNPU_VERSION_MAJOR, NPUKIT_MYNPU_VERSION_MAJOR, NPUKIT_MYNPU_VERSION_MINOR);
  }
  out->minor_version = minor;
  uint32_t total = read32(p + 8);
  if (total > data.data_length) return malformed("truncated (the header's size exceeds the data)");
  if (total < NPUKIT_MYNPU_HEADER_BYTES) return malformed("the header's size is smaller than the header");
  out->data = p;
  out->size = total;
  npukit_mynpu_config_t* c = &out->config;
  c->pes = read32(p + 12);
  c->sram_bytes = read32(p + 16);
  c->parallelism = read32(p + 20);
  c->dma_bytes_per_cycle = read32(p + 24);
  c->clock_mhz = read32(p + 28);
  c->instruction_mask = read32(p + 32);
  iree_status_t status = npukit_mynpu_config_check(c);
  if (!iree_status_is_ok(status)) return iree_status_annotate_f(status, "in the mynpu-v1 executable's header");
  out->export_count = read32(p + 36);
  uint32_t constants_at = read32(p + 40), constants_length = read32(p + 44);
  if (!inside(total, NPUKIT_MYNPU_HEADER_BYTES, (uint64_t)out->export_count * export_bytes(minor))) {
    return malformed("the export table lies outside the file");
  }
  if (constants_at % 4 || !inside(total, constants_at, constants_length)) {
    return malformed("the constants lie outside the file or are unaligned");
  }
  out->constants = p + constants_at;
  out->constants_length = constants_length;
  uint32_t format_at = read32(p + 48), format_length = read32(p + 52);
  uint32_t host_at = read32(p + 56), host_length = read32(p + 60);
  if ((host_length == 0) != (format_length == 0) || format_length > 64 || !inside(total, format_at, format_length)) {
    return malformed("the host code's format name lies outside the file or does not match the host code");
  }
  if (host_at % 8 || !inside(total, host_at, host_length)) {
    return malformed("the host code lies outside the file or is not 8-byte aligned");
  }
  out->host_format = iree_make_string_view((const char*)p + format_at, format_length);
  out->host_code = iree_make_const_byte_span(p + host_at, host_length);
  if (out->export_count == 0 && host_length == 0) return malformed("no exports and no host code");
  for (uint32_t i = 0; i < out->export_count; ++i) IREE_RETURN_IF_ERROR(check_export_tables(out, i));
  for (uint32_t i = 0; i < out->export_count; ++i) IREE_RETURN_IF_ERROR(check_export_stream(out, i));
  return iree_ok_status();
}
