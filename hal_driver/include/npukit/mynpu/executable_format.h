// The mynpu-v1 executable container (docs/mynpu-isa.md, "The mynpu-v1
// executable"): parsing and validation.
#ifndef NPUKIT_MYNPU_EXECUTABLE_FORMAT_H_
#define NPUKIT_MYNPU_EXECUTABLE_FORMAT_H_

#include <stddef.h>
#include <stdint.h>

#include "iree/base/api.h"
#include "npukit/mynpu/isa.h"
#include "npukit/mynpu/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPUKIT_MYNPU_FORMAT "mynpu-v1"
#define NPUKIT_MYNPU_MAGIC "MNPU"
#define NPUKIT_MYNPU_VERSION_MAJOR 1
// 1.1: short commands, three-dimensional DMA, exports named by hash; 1.2:
// 16-byte exports, registers reset to their defaults.
#define NPUKIT_MYNPU_VERSION_MINOR 2
#define NPUKIT_MYNPU_HEADER_BYTES 64
#define NPUKIT_MYNPU_EXPORT_BYTES 16     // version 1.2
#define NPUKIT_MYNPU_EXPORT_BYTES_1_1 32  // versions 1.0 and 1.1

// A parsed executable; the pointers reference the executable's bytes.
typedef struct {
  npukit_mynpu_config_t config;  // the hardware it was compiled for
  uint16_t minor_version;
  uint32_t export_count;
  const uint8_t* data;
  size_t size;
  const uint8_t* constants;
  size_t constants_length;
  // The CPU code of the dispatches the NPU does not run, in an executable
  // format of npukit's HAL (an embedded ELF), or empty.
  iree_string_view_t host_format;
  iree_const_byte_span_t host_code;
} npukit_mynpu_executable_info_t;

typedef struct {
  // The export's name; empty when it is found by |name_hash| among the
  // host code's exports instead.
  iree_string_view_t name;
  uint32_t name_hash;  // FNV-1a of the name (when |name| is empty)
  const uint8_t* commands;
  size_t command_bytes;
  uint32_t binding_count;
  uint32_t binding_sizes[NPUKIT_MYNPU_MAX_BINDINGS];  // minimum bytes of each binding
} npukit_mynpu_export_t;

// Parses |data| and validates everything in it: header, tables, and every
// export's command stream (against its declared binding sizes and the
// constants). Malformed input gives INVALID_ARGUMENT naming the export and
// the command.
iree_status_t npukit_mynpu_executable_parse(iree_const_byte_span_t data, npukit_mynpu_executable_info_t* out_info);

// The 32-bit FNV-1a hash of |name| (the name hash of an export without a
// stored name).
uint32_t npukit_mynpu_name_hash(iree_string_view_t name);

// Export |ordinal| of a parsed executable.
void npukit_mynpu_executable_export(const npukit_mynpu_executable_info_t* info, uint32_t ordinal,
                                    npukit_mynpu_export_t* out_export);

// The stream of |ex| over |bindings| (binding_count of them), with the
// executable's configuration and constants; no SRAM (validation only) until
// the caller sets one.
void npukit_mynpu_export_stream(const npukit_mynpu_executable_info_t* info, const npukit_mynpu_export_t* ex,
                                const npukit_mynpu_binding_t* bindings, npukit_mynpu_stream_t* out_stream);

#ifdef __cplusplus
}
#endif

#endif  // NPUKIT_MYNPU_EXECUTABLE_FORMAT_H_
