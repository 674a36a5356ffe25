// The embedded-ELF loader: loads a real IREE 3.13 executable, and rejects
// truncated and corrupted copies of it with a status (run under AddressSanitizer).
//
//   elf_loader_test <embedded-elf.so> [mutations]

#include "npukit/arena.h"
#include "npukit/hal/executable_loader.h"
#include "test_main.h"

#if UINTPTR_MAX == 0xFFFFFFFFu
#error "the host test reads an ELF64 image"
#endif

typedef struct {
  uint32_t p_type, p_flags;
  uint64_t p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align;
} phdr64_t;

static iree_status_t try_load(const npukit_hal_elf_loader_t* loader, const uint8_t* data, size_t size,
                              iree_allocator_t allocator) {
  npukit_hal_executable_t* executable = NULL;
  iree_status_t status =
      loader->base.vtable->load(&loader->base, iree_make_cstring_view("embedded-elf-x86_64"),
                                iree_make_const_byte_span(data, size), NULL, 0, allocator, &executable);
  if (iree_status_is_ok(status)) npukit_hal_executable_release(executable);
  return status;
}

static uint64_t file_offset(const uint8_t* data, uint64_t vaddr) {
  uint64_t phoff;
  uint16_t phnum;
  memcpy(&phoff, data + 32, 8);
  memcpy(&phnum, data + 56, 2);
  for (uint16_t i = 0; i < phnum; ++i) {
    phdr64_t ph;
    memcpy(&ph, data + phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_type == 1 && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
      return vaddr - ph.p_vaddr + ph.p_offset;
  }
  return 0;
}

// Marks what a mutation must not touch: the machine code, where it is placed
// (the program header of the executable segment) and the entry of the query
// function. The loader must call the query; no loader can tell a corrupted
// instruction stream, or a shifted one, from the real one. Everything else is
// fair game.
static void mark_protected(const uint8_t* data, size_t size, uint8_t* protect) {
  uint64_t phoff;
  uint16_t phnum;
  memcpy(&phoff, data + 32, 8);
  memcpy(&phnum, data + 56, 2);
  uint64_t symtab = 0, strtab = 0, hash = 0;
  for (uint16_t i = 0; i < phnum; ++i) {
    phdr64_t ph;
    memcpy(&ph, data + phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_type == 1 && (ph.p_flags & 1)) {
      for (uint64_t j = ph.p_offset; j < ph.p_offset + ph.p_filesz && j < size; ++j) protect[j] = 1;
      for (uint64_t j = 0; j < sizeof(ph); ++j) protect[phoff + i * sizeof(ph) + j] = 1;
    }
    if (ph.p_type == 2) {
      for (uint64_t d = ph.p_offset; d + 16 <= ph.p_offset + ph.p_filesz; d += 16) {
        int64_t tag;
        uint64_t value;
        memcpy(&tag, data + d, 8);
        memcpy(&value, data + d + 8, 8);
        if (tag == 4) hash = value;
        if (tag == 5) strtab = value;
        if (tag == 6) symtab = value;
      }
    }
  }
  uint32_t nchain;
  memcpy(&nchain, data + file_offset(data, hash) + 4, 4);
  uint64_t symbols = file_offset(data, symtab), strings = file_offset(data, strtab);
  for (uint32_t i = 1; i < nchain; ++i) {
    uint32_t name;
    memcpy(&name, data + symbols + i * 24, 4);
    if (strcmp((const char*)data + strings + name, "iree_hal_executable_library_query") == 0) {
      for (int j = 8; j < 16; ++j) protect[symbols + i * 24 + j] = 1;  // st_value
    }
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <embedded-elf.so> [mutations]\n", argv[0]);
    return 2;
  }
  int mutations = argc > 2 ? atoi(argv[2]) : 20000;
  size_t size = 0;
  uint8_t* original = npukit_test_read_file(argv[1], &size);
  if (!original || size == 0) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  static uint8_t arena_memory[8 << 20];
  npukit_arena_t arena;
  npukit_arena_initialize(arena_memory, sizeof(arena_memory), &arena);
  iree_allocator_t allocator = npukit_arena_allocator(&arena);
  npukit_hal_elf_loader_t loader;
  npukit_hal_elf_loader_initialize(&loader);
  uint8_t* copy = (uint8_t*)malloc(size);

  // The real image loads, and everything it allocated is released afterwards.
  EXPECT_OK(try_load(&loader, original, size, allocator));
  EXPECT(arena.bytes_in_use == 0);

  // Wrong format strings are not claimed.
  EXPECT(!loader.base.vtable->supports(&loader.base, iree_make_cstring_view("embedded-elf-riscv_32")));
  EXPECT(loader.base.vtable->supports(&loader.base, iree_make_cstring_view("embedded-elf-x86_64")));

  // Header fields.
  struct {
    size_t offset;
    uint8_t value;
    iree_status_code_t code;
  } header_cases[] = {
      {0, 0x7e, IREE_STATUS_INVALID_ARGUMENT},    // magic
      {4, 1, IREE_STATUS_FAILED_PRECONDITION},    // ELF32 on a 64-bit host
      {5, 2, IREE_STATUS_INVALID_ARGUMENT},       // big-endian
      {16, 2, IREE_STATUS_INVALID_ARGUMENT},      // ET_EXEC
      {18, 40, IREE_STATUS_FAILED_PRECONDITION},  // EM_ARM
  };
  for (size_t i = 0; i < IREE_ARRAYSIZE(header_cases); ++i) {
    memcpy(copy, original, size);
    copy[header_cases[i].offset] = header_cases[i].value;
    EXPECT_CODE(try_load(&loader, copy, size, allocator), header_cases[i].code);
  }

  // Every truncation fails cleanly (or still loads, past the loaded bytes).
  int truncations_rejected = 0;
  size_t step = size > 4000 ? size / 4000 : 1;
  for (size_t n = 0; n < size; n += step) {
    memcpy(copy, original, n);
    iree_status_t status = try_load(&loader, copy, n, allocator);
    if (!iree_status_is_ok(status)) truncations_rejected++;
    iree_status_ignore(status);
    EXPECT(arena.bytes_in_use == 0);
  }
  EXPECT(truncations_rejected > 0);

  // Random corruption outside the code: a status every time, never a crash,
  // never a leak.
  uint8_t* is_code = (uint8_t*)calloc(size, 1);
  mark_protected(original, size, is_code);
  uint32_t seed = 12345;
  int rejected = 0;
  for (int i = 0; i < mutations; ++i) {
    memcpy(copy, original, size);
    int flips = 1 + (int)(seed % 4);
    for (int f = 0; f < flips; ++f) {
      seed = seed * 1664525u + 1013904223u;
      size_t at = seed % size;
      if (is_code[at]) continue;
      seed = seed * 1664525u + 1013904223u;
      copy[at] ^= (uint8_t)(1u << (seed % 8));
    }
    iree_status_t status = try_load(&loader, copy, size, allocator);
    if (!iree_status_is_ok(status)) rejected++;
    iree_status_ignore(status);
    if (arena.bytes_in_use != 0) {
      fprintf(stderr, "mutation %d leaked %zu bytes\n", i, arena.bytes_in_use);
      npukit_test_failures++;
      break;
    }
  }
  printf("truncations: %d rejected; mutations: %d of %d rejected\n", truncations_rejected, rejected, mutations);
  free(is_code);
  free(copy);
  free(original);
  return TEST_RESULT();
}
