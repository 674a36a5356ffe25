// The executable library ABI of IREE 3.13.0's llvm-cpu backend (version 6).
//
// Static libraries (<name>_library_query) and embedded ELFs
// (iree_hal_executable_library_query) produced by iree-compile 3.13.0 are
// compiled against this layout; the generated <name>_executables.h includes
// this header by this path. The layouts are fixed by the compiled code: the
// size checks at the end hold on ILP32 (Cortex-M, RV32) and LP64 (x86-64).
//
// npukit's runtime only needs the fields it reads; the rest are declared so
// that sizes and offsets match.

#ifndef IREE_HAL_LOCAL_EXECUTABLE_LIBRARY_H_
#define IREE_HAL_LOCAL_EXECUTABLE_LIBRARY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Version numbers of the library ABI. 3.13.0 emits 6, and its generated query
// functions return the library only when asked for exactly that version.
typedef uint32_t iree_hal_executable_library_version_t;
#define IREE_HAL_EXECUTABLE_LIBRARY_VERSION_0_6 ((iree_hal_executable_library_version_t)6u)
#define IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST IREE_HAL_EXECUTABLE_LIBRARY_VERSION_0_6

typedef uint32_t iree_hal_executable_library_features_t;
#define IREE_HAL_EXECUTABLE_LIBRARY_FEATURE_NONE 0u

typedef enum iree_hal_executable_library_sanitizer_kind_e {
  IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_NONE = 0,
  IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_ADDRESS = 1,
  IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_MEMORY = 2,
  IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_THREAD = 3,
  IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_UNDEFINED = 4,
} iree_hal_executable_library_sanitizer_kind_t;

// First thing every library points at: its version and name.
typedef struct iree_hal_executable_library_header_t {
  iree_hal_executable_library_version_t version;
  const char* name;  // the executable's symbol name, e.g. "kws_int8_linked"
  iree_hal_executable_library_features_t features;
  iree_hal_executable_library_sanitizer_kind_t sanitizer;
} iree_hal_executable_library_header_t;

//===----------------------------------------------------------------------===//
// What the runtime passes to the library
//===----------------------------------------------------------------------===//

// An import function and the thunk that calls it (imports are unused by the
// 3.13 llvm-cpu output npukit compiles; the fields keep the layout).
typedef int (*iree_hal_executable_import_v0_t)(void* params, void* context, void* reserved);
typedef int (*iree_hal_executable_import_thunk_v0_t)(iree_hal_executable_import_v0_t fn, void* params, void* context,
                                                     void* reserved);

// Architecture-specific processor information (zero on Arm and RISC-V 32).
#define IREE_HAL_PROCESSOR_DATA_CAPACITY_V0 8
typedef struct iree_hal_processor_v0_t {
  uint64_t data[IREE_HAL_PROCESSOR_DATA_CAPACITY_V0];
} iree_hal_processor_v0_t;

// One per loaded executable, shared by all its dispatches.
typedef struct iree_hal_executable_environment_v0_t {
  const uint32_t* constants;  // executable-level specialisation constants
  iree_hal_executable_import_thunk_v0_t import_thunk;
  const iree_hal_executable_import_v0_t* import_funcs;
  const void** import_contexts;
  iree_hal_processor_v0_t processor;
} iree_hal_executable_environment_v0_t;

// One per dispatch, shared by all its workgroups.
typedef struct iree_hal_executable_dispatch_state_v0_t {
  uint32_t workgroup_size_x;
  uint32_t workgroup_size_y;
  uint16_t workgroup_size_z;
  uint16_t constant_count;  // 32-bit push constants
  uint32_t workgroup_count_x;
  uint32_t workgroup_count_y;
  uint16_t workgroup_count_z;
  uint8_t max_concurrency;
  uint8_t binding_count;
  const uint32_t* constants;
  void* const* binding_ptrs;  // must be 64-byte aligned
  const size_t* binding_lengths;
} iree_hal_executable_dispatch_state_v0_t;

// One per workgroup invocation.
typedef struct iree_hal_executable_workgroup_state_v0_t {
  uint32_t workgroup_id_x;
  uint32_t workgroup_id_y;
  uint16_t workgroup_id_z;
  uint16_t reserved;
  uint32_t processor_id;
  void* local_memory;
  uint32_t local_memory_size;
} iree_hal_executable_workgroup_state_v0_t;

// A dispatch entry point: returns 0 on success; anything else is fatal.
// The three pointers must be 16-byte aligned.
typedef int (*iree_hal_executable_dispatch_v0_t)(const iree_hal_executable_environment_v0_t* environment,
                                                 const iree_hal_executable_dispatch_state_v0_t* dispatch_state,
                                                 const iree_hal_executable_workgroup_state_v0_t* workgroup_state);

//===----------------------------------------------------------------------===//
// What the library describes about itself
//===----------------------------------------------------------------------===//

#define IREE_HAL_WORKGROUP_LOCAL_MEMORY_PAGE_SIZE 4096u

typedef uint64_t iree_hal_executable_dispatch_flags_v0_t;
#define IREE_HAL_EXECUTABLE_DISPATCH_FLAG_V0_SEQUENTIAL (1ull << 0)
#define IREE_HAL_EXECUTABLE_DISPATCH_FLAG_V0_WORKGROUP_SIZE_DYNAMIC (1ull << 1)

// Per export; 64 bytes on every target.
typedef struct iree_hal_executable_dispatch_attrs_v0_t {
  iree_hal_executable_dispatch_flags_v0_t flags;
  uint16_t local_memory_pages;  // workgroup-local scratch in 4 KiB pages
  uint8_t constant_count;
  uint8_t binding_count;
  uint32_t workgroup_size_x;
  uint32_t workgroup_size_y;
  uint16_t workgroup_size_z;
  uint16_t parameter_count;
  uint64_t reserved_1[5];
} iree_hal_executable_dispatch_attrs_v0_t;

typedef struct iree_hal_executable_dispatch_parameter_v0_t {
  uint8_t type;
  uint8_t size;
  uint16_t flags;
  uint16_t name;
  uint16_t offset;
} iree_hal_executable_dispatch_parameter_v0_t;

typedef struct iree_hal_executable_dispatch_occupancy_v0_t {
  int reserved;
} iree_hal_executable_dispatch_occupancy_v0_t;

typedef struct iree_hal_executable_source_location_v0_t {
  uint32_t line;
  uint32_t path_length;
  const char* path;
} iree_hal_executable_source_location_v0_t;

typedef struct iree_hal_executable_stage_location_table_v0_t {
  uint32_t count;
  const char* const* names;
  const iree_hal_executable_source_location_v0_t* locations;
} iree_hal_executable_stage_location_table_v0_t;

typedef struct iree_hal_executable_source_file_v0_t {
  uint32_t path_length;
  const char* path;
  uint32_t content_length;
  const char* content;
} iree_hal_executable_source_file_v0_t;

typedef struct iree_hal_executable_import_table_v0_t {
  uint32_t count;
  const char* const* symbols;  // sorted; a leading '?' marks an optional import
} iree_hal_executable_import_table_v0_t;

typedef struct iree_hal_executable_export_table_v0_t {
  uint32_t count;
  const iree_hal_executable_dispatch_v0_t* ptrs;
  const iree_hal_executable_dispatch_attrs_v0_t* attrs;
  const iree_hal_executable_dispatch_parameter_v0_t* const* params;
  const iree_hal_executable_dispatch_occupancy_v0_t* occupancy;
  const char* const* names;
  const char* const* tags;
  const char* const* parameter_names;
  const iree_hal_executable_source_location_v0_t* source_locations;
  const iree_hal_executable_stage_location_table_v0_t* stage_locations;
} iree_hal_executable_export_table_v0_t;

typedef struct iree_hal_executable_constant_table_v0_t {
  uint32_t count;
} iree_hal_executable_constant_table_v0_t;

typedef struct iree_hal_executable_source_file_table_v0_t {
  uint32_t count;
  const iree_hal_executable_source_file_v0_t* files;
} iree_hal_executable_source_file_table_v0_t;

// What the query function returns (through a pointer to its first field).
typedef struct iree_hal_executable_library_v0_t {
  const iree_hal_executable_library_header_t* header;
  iree_hal_executable_import_table_v0_t imports;
  iree_hal_executable_export_table_v0_t exports;
  iree_hal_executable_constant_table_v0_t constants;
  iree_hal_executable_source_file_table_v0_t sources;
} iree_hal_executable_library_v0_t;

// The entry point of a library: static libraries export it as
// <name>_library_query, embedded ELFs as iree_hal_executable_library_query.
typedef const iree_hal_executable_library_header_t** (*iree_hal_executable_library_query_fn_t)(
    iree_hal_executable_library_version_t max_version, const iree_hal_executable_environment_v0_t* environment);

#define IREE_HAL_EXECUTABLE_LIBRARY_EXPORT_NAME "iree_hal_executable_library_query"

//===----------------------------------------------------------------------===//
// Layout checks against the compiled code
//===----------------------------------------------------------------------===//

#define IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(cond) _Static_assert(cond, #cond)
#if UINTPTR_MAX == 0xFFFFFFFFu
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_library_header_t) == 16);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_library_v0_t) == 64);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_environment_v0_t) == 80);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_dispatch_state_v0_t) == 36);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_workgroup_state_v0_t) == 24);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(offsetof(iree_hal_executable_dispatch_state_v0_t, binding_ptrs) == 28);
#elif UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_library_header_t) == 24);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_library_v0_t) == 128);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_environment_v0_t) == 96);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_dispatch_state_v0_t) == 48);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_workgroup_state_v0_t) == 32);
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(offsetof(iree_hal_executable_dispatch_state_v0_t, binding_ptrs) == 32);
#endif
IREE_HAL_EXECUTABLE_LIBRARY_ABI_CHECK_(sizeof(iree_hal_executable_dispatch_attrs_v0_t) == 64);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // IREE_HAL_LOCAL_EXECUTABLE_LIBRARY_H_
