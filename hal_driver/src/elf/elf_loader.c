// Loads the embedded ELF executables that IREE 3.13's llvm-cpu backend links
// into vm-c modules: validates the image, copies its segments into one
// contiguous block, applies its dynamic relocations, finds
// iree_hal_executable_library_query and queries the library.
//
// Every offset, size and address read from the image is checked before use,
// so a malformed image is rejected with a status instead of crashing.

#include "elf_format.h"
#include "npukit/hal/executable_loader.h"
#include "npukit/hal/executable_memory.h"

// Images never legitimately span more than this.
#define ELF_MAX_IMAGE_SPAN (64u * 1024u * 1024u)
#define ELF_MAX_SEGMENTS 16

#if defined(__x86_64__) || defined(_M_X64)
#define ELF_HOST_MACHINE NPUKIT_EM_X86_64
#define ELF_HOST_ARCH "x86_64"
#elif defined(__arm__) || defined(__thumb__)
#define ELF_HOST_MACHINE NPUKIT_EM_ARM
#define ELF_HOST_ARCH "arm_32"
#elif defined(__riscv) && (__riscv_xlen == 32)
#define ELF_HOST_MACHINE NPUKIT_EM_RISCV
#define ELF_HOST_ARCH "riscv_32"
#else
#define ELF_HOST_MACHINE 0
#define ELF_HOST_ARCH "unsupported"
#endif

typedef struct elf_image_t {
  iree_const_byte_span_t file;
  const npukit_elf_ehdr_t* ehdr;
  const npukit_elf_phdr_t* phdrs;
  npukit_executable_memory_t memory;
  npukit_elf_addr_t min_vaddr;  // vaddr at memory.base
  iree_host_size_t span;
  // From the dynamic table (image offsets):
  iree_host_size_t symtab, strtab, strsz, symbol_count;
} elf_image_t;

static iree_status_t malformed(const char* what) {
  return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "malformed embedded ELF: %s", what);
}

// Converts a vaddr range into an offset in the loaded image.
static bool image_range(const elf_image_t* image, uint64_t vaddr, uint64_t length, iree_host_size_t* out_offset) {
  if (vaddr < image->min_vaddr) return false;
  uint64_t offset = vaddr - image->min_vaddr;
  if (offset > image->span || length > image->span - offset) return false;
  *out_offset = (iree_host_size_t)offset;
  return true;
}

static iree_status_t check_header(elf_image_t* image) {
  const iree_const_byte_span_t f = image->file;
  if (f.data_length < sizeof(npukit_elf_ehdr_t)) return malformed("shorter than an ELF header");
  if (((uintptr_t)f.data & (sizeof(void*) - 1)) != 0) return malformed("image data is not pointer-aligned");
  const npukit_elf_ehdr_t* ehdr = (const npukit_elf_ehdr_t*)f.data;
  if (memcmp(ehdr->e_ident, NPUKIT_ELF_MAGIC, 4) != 0) return malformed("bad magic");
  if (ehdr->e_ident[4] != NPUKIT_ELF_NATIVE_CLASS) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION, "embedded ELF is ELF%d; this runtime is %d-bit",
                            ehdr->e_ident[4] == NPUKIT_ELFCLASS64 ? 64 : 32, (int)(sizeof(void*) * 8));
  }
  if (ehdr->e_ident[5] != NPUKIT_ELFDATA2LSB) return malformed("not little-endian");
  if (ehdr->e_version != NPUKIT_EV_CURRENT) return malformed("bad version");
  if (ehdr->e_machine != ELF_HOST_MACHINE) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION,
                            "embedded ELF is for machine %u; this runtime runs on %s (machine %u)", ehdr->e_machine,
                            ELF_HOST_ARCH, (unsigned)ELF_HOST_MACHINE);
  }
  if (ehdr->e_type != NPUKIT_ET_DYN) return malformed("not a shared object");
  if (ehdr->e_phentsize != sizeof(npukit_elf_phdr_t)) return malformed("bad program header size");
  if (ehdr->e_phnum == 0 || ehdr->e_phnum > ELF_MAX_SEGMENTS * 2) return malformed("bad program header count");
  uint64_t ph_end = (uint64_t)ehdr->e_phoff + (uint64_t)ehdr->e_phnum * sizeof(npukit_elf_phdr_t);
  if (ehdr->e_phoff % sizeof(npukit_elf_addr_t) != 0 || ph_end > f.data_length) {
    return malformed("program headers outside the file");
  }
  image->ehdr = ehdr;
  image->phdrs = (const npukit_elf_phdr_t*)(f.data + ehdr->e_phoff);
  return iree_ok_status();
}

static iree_status_t load_segments(elf_image_t* image, iree_allocator_t allocator) {
  const npukit_elf_ehdr_t* ehdr = image->ehdr;
  uint64_t lo = UINT64_MAX, hi = 0;
  int loads = 0;
  for (uint16_t i = 0; i < ehdr->e_phnum; ++i) {
    const npukit_elf_phdr_t* ph = &image->phdrs[i];
    if (ph->p_type != NPUKIT_PT_LOAD) continue;
    if (++loads > ELF_MAX_SEGMENTS) return malformed("too many loadable segments");
    if (ph->p_filesz > ph->p_memsz) return malformed("segment file size exceeds its memory size");
    if ((uint64_t)ph->p_offset + ph->p_filesz > image->file.data_length) return malformed("segment outside the file");
    if ((uint64_t)ph->p_vaddr + ph->p_memsz < ph->p_vaddr) return malformed("segment address overflows");
    if (ph->p_align > 1 &&
        ((ph->p_align & (ph->p_align - 1)) != 0 || (ph->p_vaddr - ph->p_offset) % ph->p_align != 0)) {
      return malformed("segment address and file offset disagree with its alignment");
    }
    for (uint16_t j = 0; j < i; ++j) {
      const npukit_elf_phdr_t* other = &image->phdrs[j];
      if (other->p_type == NPUKIT_PT_LOAD && ph->p_vaddr < (uint64_t)other->p_vaddr + other->p_memsz &&
          other->p_vaddr < (uint64_t)ph->p_vaddr + ph->p_memsz) {
        return malformed("loadable segments overlap");
      }
    }
    if (ph->p_vaddr < lo) lo = ph->p_vaddr;
    if ((uint64_t)ph->p_vaddr + ph->p_memsz > hi) hi = (uint64_t)ph->p_vaddr + ph->p_memsz;
  }
  if (loads == 0) return malformed("no loadable segment");
  iree_host_size_t page = npukit_executable_memory_page_size();
  lo &= ~(uint64_t)(page - 1);
  if (hi - lo > ELF_MAX_IMAGE_SPAN) return malformed("image spans more than 64 MiB");
  image->min_vaddr = (npukit_elf_addr_t)lo;
  image->span = (iree_host_size_t)(hi - lo);
  IREE_RETURN_IF_ERROR(npukit_executable_memory_reserve(image->span, allocator, &image->memory));
  for (uint16_t i = 0; i < ehdr->e_phnum; ++i) {
    const npukit_elf_phdr_t* ph = &image->phdrs[i];
    if (ph->p_type != NPUKIT_PT_LOAD || ph->p_filesz == 0) continue;
    memcpy(image->memory.base + (ph->p_vaddr - image->min_vaddr), image->file.data + ph->p_offset, ph->p_filesz);
  }
  return iree_ok_status();
}

typedef struct dynamic_info_t {
  npukit_elf_addr_t hash, strtab, symtab, strsz, syment;
  npukit_elf_addr_t rel, relsz, relent, rela, relasz, relaent, jmprel, pltrelsz, pltrel;
  bool has_init;
} dynamic_info_t;

static iree_status_t read_dynamic(elf_image_t* image, dynamic_info_t* info) {
  memset(info, 0, sizeof(*info));
  const npukit_elf_phdr_t* dynamic = NULL;
  for (uint16_t i = 0; i < image->ehdr->e_phnum; ++i) {
    if (image->phdrs[i].p_type == NPUKIT_PT_DYNAMIC) {
      dynamic = &image->phdrs[i];
      break;
    }
  }
  if (!dynamic) return malformed("no dynamic segment");
  iree_host_size_t offset;
  if (!image_range(image, dynamic->p_vaddr, dynamic->p_filesz, &offset) || offset % sizeof(npukit_elf_addr_t) != 0) {
    return malformed("dynamic segment outside the image");
  }
  const npukit_elf_dyn_t* dyn = (const npukit_elf_dyn_t*)(image->memory.base + offset);
  iree_host_size_t count = dynamic->p_filesz / sizeof(npukit_elf_dyn_t);
  for (iree_host_size_t i = 0; i < count && dyn[i].d_tag != NPUKIT_DT_NULL; ++i) {
    npukit_elf_addr_t v = dyn[i].d_val;
    switch (dyn[i].d_tag) {
      case NPUKIT_DT_HASH:
        info->hash = v;
        break;
      case NPUKIT_DT_STRTAB:
        info->strtab = v;
        break;
      case NPUKIT_DT_SYMTAB:
        info->symtab = v;
        break;
      case NPUKIT_DT_STRSZ:
        info->strsz = v;
        break;
      case NPUKIT_DT_SYMENT:
        info->syment = v;
        break;
      case NPUKIT_DT_REL:
        info->rel = v;
        break;
      case NPUKIT_DT_RELSZ:
        info->relsz = v;
        break;
      case NPUKIT_DT_RELENT:
        info->relent = v;
        break;
      case NPUKIT_DT_RELA:
        info->rela = v;
        break;
      case NPUKIT_DT_RELASZ:
        info->relasz = v;
        break;
      case NPUKIT_DT_RELAENT:
        info->relaent = v;
        break;
      case NPUKIT_DT_JMPREL:
        info->jmprel = v;
        break;
      case NPUKIT_DT_PLTRELSZ:
        info->pltrelsz = v;
        break;
      case NPUKIT_DT_PLTREL:
        info->pltrel = v;
        break;
      case NPUKIT_DT_INIT:
      case NPUKIT_DT_INIT_ARRAY:
        info->has_init = true;
        break;
      case NPUKIT_DT_TEXTREL:
        return malformed("text relocations are not supported");
      case NPUKIT_DT_RELR:
        return malformed("packed (RELR) relocations are not supported");
      default:
        break;
    }
  }
  if (info->has_init) {
    return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "embedded ELF has initializers, which IREE does not emit");
  }
  if (info->syment && info->syment != sizeof(npukit_elf_sym_t)) return malformed("bad symbol entry size");
  if (!info->symtab || !info->strtab || !info->hash) return malformed("missing symbol, string or hash table");
  iree_host_size_t hash_offset;
  if (!image_range(image, info->hash, 8, &hash_offset) || hash_offset % 4 != 0) {
    return malformed("hash table outside the image");
  }
  uint32_t nchain;
  memcpy(&nchain, image->memory.base + hash_offset + 4, 4);
  image->symbol_count = nchain;
  if (!image_range(image, info->symtab, (uint64_t)nchain * sizeof(npukit_elf_sym_t), &image->symtab) ||
      image->symtab % sizeof(npukit_elf_addr_t) != 0) {
    return malformed("symbol table outside the image");
  }
  if (!image_range(image, info->strtab, info->strsz, &image->strtab))
    return malformed("string table outside the image");
  image->strsz = info->strsz;
  return iree_ok_status();
}

static const npukit_elf_sym_t* symbol_at(const elf_image_t* image, iree_host_size_t index) {
  return (const npukit_elf_sym_t*)(image->memory.base + image->symtab) + index;
}

// The symbol's address in the loaded image, or an error if it is not defined
// inside it.
static iree_status_t symbol_address(const elf_image_t* image, iree_host_size_t index, uintptr_t* out_address) {
  *out_address = 0;
  if (index == 0) return iree_ok_status();
  if (index >= image->symbol_count) return malformed("relocation names a symbol out of range");
  const npukit_elf_sym_t* sym = symbol_at(image, index);
  iree_host_size_t offset;
  if (sym->st_shndx == NPUKIT_SHN_UNDEF) {
    const char* name =
        sym->st_name < image->strsz ? (const char*)image->memory.base + image->strtab + sym->st_name : "?";
    return iree_make_status(IREE_STATUS_UNAVAILABLE,
                            "embedded ELF needs the undefined symbol %.40s, which the runtime does not provide", name);
  }
  // Thumb function symbols have bit 0 set; the address check ignores it.
  if (!image_range(image, sym->st_value & ~(npukit_elf_addr_t)1, 0, &offset)) {
    return malformed("symbol outside the image");
  }
  *out_address = (uintptr_t)image->memory.base + offset + (sym->st_value & 1u);
  return iree_ok_status();
}

// Whether [p, p + length) lies inside the loaded image.
static bool in_image(const elf_image_t* image, const void* p, iree_host_size_t length) {
  uintptr_t start = (uintptr_t)image->memory.base;
  uintptr_t at = (uintptr_t)p;
  return at >= start && at - start <= image->span && length <= image->span - (at - start);
}

static bool string_in_image(const elf_image_t* image, const char* s) {
  if (!in_image(image, s, 1)) return false;
  iree_host_size_t room = image->span - ((uintptr_t)s - (uintptr_t)image->memory.base);
  return memchr(s, 0, room) != NULL;
}

static bool code_in_image(const elf_image_t* image, const void* fn) {
  uintptr_t address = (uintptr_t)fn & ~(uintptr_t)1;  // Thumb bit
  for (uint16_t i = 0; i < image->ehdr->e_phnum; ++i) {
    const npukit_elf_phdr_t* ph = &image->phdrs[i];
    if (ph->p_type != NPUKIT_PT_LOAD || !(ph->p_flags & NPUKIT_PF_X)) continue;
    uintptr_t start = (uintptr_t)image->memory.base + (ph->p_vaddr - image->min_vaddr);
    if (address >= start && address < start + ph->p_memsz) return true;
  }
  return false;
}

// Whether [offset, offset + length) of the image lies in a writable segment:
// relocations only ever patch data, never code.
static bool writable_in_image(const elf_image_t* image, iree_host_size_t offset, iree_host_size_t length) {
  for (uint16_t i = 0; i < image->ehdr->e_phnum; ++i) {
    const npukit_elf_phdr_t* ph = &image->phdrs[i];
    if (ph->p_type != NPUKIT_PT_LOAD || !(ph->p_flags & NPUKIT_PF_W)) continue;
    uint64_t start = ph->p_vaddr - image->min_vaddr;
    if (offset >= start && offset + length <= start + ph->p_memsz) return true;
  }
  return false;
}

// Applies one relocation. |place| is an image offset checked for |width|.
static iree_status_t apply(elf_image_t* image, uint32_t type, npukit_elf_addr_t r_offset, iree_host_size_t sym_index,
                           int64_t addend, bool explicit_addend) {
  const uintptr_t bias = (uintptr_t)image->memory.base - (uintptr_t)image->min_vaddr;
  iree_host_size_t place;
  if (!image_range(image, r_offset, sizeof(npukit_elf_addr_t), &place) ||
      !writable_in_image(image, place, sizeof(npukit_elf_addr_t))) {
    return malformed("relocation outside the image's data");
  }
  uint8_t* p = image->memory.base + place;
  uintptr_t s;
  IREE_RETURN_IF_ERROR(symbol_address(image, sym_index, &s));
  npukit_elf_addr_t word;
  memcpy(&word, p, sizeof(word));
  if (!explicit_addend) addend = (int64_t)(npukit_elf_sword_t)word;
  npukit_elf_addr_t value;
#if ELF_HOST_MACHINE == NPUKIT_EM_X86_64
  switch (type) {
    case 0:
      return iree_ok_status();  // R_X86_64_NONE
    case 1:
      value = (npukit_elf_addr_t)(s + (uint64_t)addend);
      break;  // R_X86_64_64
    case 6:   // R_X86_64_GLOB_DAT
    case 7:
      value = (npukit_elf_addr_t)s;
      break;  // R_X86_64_JUMP_SLOT
    case 8:
      value = (npukit_elf_addr_t)(bias + (uint64_t)addend);
      break;   // R_X86_64_RELATIVE
    case 2: {  // R_X86_64_PC32
      uint32_t v32 = (uint32_t)(s + (uint64_t)addend - (uintptr_t)p);
      memcpy(p, &v32, 4);
      return iree_ok_status();
    }
    case 10:    // R_X86_64_32
    case 11: {  // R_X86_64_32S
      uint32_t v32 = (uint32_t)(s + (uint64_t)addend);
      memcpy(p, &v32, 4);
      return iree_ok_status();
    }
    default:
      return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "x86-64 relocation type %u is not supported", type);
  }
#elif ELF_HOST_MACHINE == NPUKIT_EM_ARM
  switch (type) {
    case 0:
      return iree_ok_status();  // R_ARM_NONE
    case 2:
      value = (npukit_elf_addr_t)(s + (uint32_t)addend);
      break;  // R_ARM_ABS32
    case 3:
      value = (npukit_elf_addr_t)(s + (uint32_t)addend - (uintptr_t)p);
      break;  // R_ARM_REL32
    case 21:  // R_ARM_GLOB_DAT
    case 22:
      value = (npukit_elf_addr_t)s;
      break;  // R_ARM_JUMP_SLOT
    case 23:
      value = (npukit_elf_addr_t)(bias + (uint32_t)addend);
      break;  // R_ARM_RELATIVE
    default:
      return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "Arm relocation type %" PRIu32 " is not supported", type);
  }
#elif ELF_HOST_MACHINE == NPUKIT_EM_RISCV
  switch (type) {
    case 0:
      return iree_ok_status();  // R_RISCV_NONE
    case 1:
      value = (npukit_elf_addr_t)(s + (uint32_t)addend);
      break;  // R_RISCV_32
    case 3:
      value = (npukit_elf_addr_t)(bias + (uint32_t)addend);
      break;  // R_RISCV_RELATIVE
    case 5:
      value = (npukit_elf_addr_t)s;
      break;  // R_RISCV_JUMP_SLOT
    default:
      return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "RISC-V relocation type %" PRIu32 " is not supported", type);
  }
#else
  (void)bias;
  (void)type;
  return iree_make_status(IREE_STATUS_UNIMPLEMENTED, "embedded ELFs are not supported on this architecture");
#endif
  memcpy(p, &value, sizeof(value));
  return iree_ok_status();
}

static iree_status_t apply_table(elf_image_t* image, npukit_elf_addr_t table, npukit_elf_addr_t size,
                                 npukit_elf_addr_t entry_size, bool rela) {
  if (!table || !size) return iree_ok_status();
  iree_host_size_t expected = rela ? sizeof(npukit_elf_rela_t) : sizeof(npukit_elf_rel_t);
  if (entry_size && entry_size != expected) return malformed("bad relocation entry size");
  iree_host_size_t offset;
  if (!image_range(image, table, size, &offset) || offset % sizeof(npukit_elf_addr_t) != 0) {
    return malformed("relocation table outside the image");
  }
  iree_host_size_t count = size / expected;
  for (iree_host_size_t i = 0; i < count; ++i) {
    const uint8_t* entry = image->memory.base + offset + i * expected;
    if (rela) {
      npukit_elf_rela_t r;
      memcpy(&r, entry, sizeof(r));
      IREE_RETURN_IF_ERROR(apply(image, (uint32_t)NPUKIT_ELF_R_TYPE(r.r_info), r.r_offset,
                                 (iree_host_size_t)NPUKIT_ELF_R_SYM(r.r_info), (int64_t)r.r_addend, true));
    } else {
      npukit_elf_rel_t r;
      memcpy(&r, entry, sizeof(r));
      IREE_RETURN_IF_ERROR(apply(image, (uint32_t)NPUKIT_ELF_R_TYPE(r.r_info), r.r_offset,
                                 (iree_host_size_t)NPUKIT_ELF_R_SYM(r.r_info), 0, false));
    }
  }
  return iree_ok_status();
}

static iree_status_t relocate(elf_image_t* image, const dynamic_info_t* info) {
  IREE_RETURN_IF_ERROR(apply_table(image, info->rel, info->relsz, info->relent, false));
  IREE_RETURN_IF_ERROR(apply_table(image, info->rela, info->relasz, info->relaent, true));
  if (info->jmprel) {
    bool rela = info->pltrel == NPUKIT_DT_RELA;
    if (!rela && info->pltrel != NPUKIT_DT_REL) return malformed("bad PLT relocation kind");
    IREE_RETURN_IF_ERROR(apply_table(image, info->jmprel, info->pltrelsz, 0, rela));
  }
  return iree_ok_status();
}

static iree_status_t protect_segments(elf_image_t* image) {
  for (uint16_t i = 0; i < image->ehdr->e_phnum; ++i) {
    const npukit_elf_phdr_t* ph = &image->phdrs[i];
    if (ph->p_type != NPUKIT_PT_LOAD) continue;
    bool x = (ph->p_flags & NPUKIT_PF_X) != 0;
    bool w = (ph->p_flags & NPUKIT_PF_W) != 0;
    if (x && w) return malformed("segment is both writable and executable");
    if (x) {
      IREE_RETURN_IF_ERROR(
          npukit_executable_memory_protect(&image->memory, ph->p_vaddr - image->min_vaddr, ph->p_memsz, false, true));
    }
  }
  npukit_executable_memory_flush_icache(&image->memory);
  return iree_ok_status();
}

static iree_status_t find_query(const elf_image_t* image, iree_hal_executable_library_query_fn_t* out_query) {
  const char* wanted = IREE_HAL_EXECUTABLE_LIBRARY_EXPORT_NAME;
  iree_host_size_t wanted_length = strlen(wanted);
  for (iree_host_size_t i = 1; i < image->symbol_count; ++i) {
    const npukit_elf_sym_t* sym = symbol_at(image, i);
    if (sym->st_shndx == NPUKIT_SHN_UNDEF || sym->st_name >= image->strsz) continue;
    if (image->strsz - sym->st_name <= wanted_length) continue;
    const char* name = (const char*)image->memory.base + image->strtab + sym->st_name;
    if (memcmp(name, wanted, wanted_length + 1) != 0) continue;
    uintptr_t address;
    IREE_RETURN_IF_ERROR(symbol_address(image, i, &address));
    if (!code_in_image(image, (const void*)address)) return malformed("the query function is not in the code");
    // A function pointer from an address: the standard route through uintptr_t.
    *out_query = (iree_hal_executable_library_query_fn_t)address;
    return iree_ok_status();
  }
  return malformed("no " IREE_HAL_EXECUTABLE_LIBRARY_EXPORT_NAME " symbol");
}

// The tables the runtime reads (header, export pointers, attributes, names)
// must lie inside the image: a corrupted image is rejected, not followed.
static iree_status_t check_library_tables(const elf_image_t* image, const iree_hal_executable_library_v0_t* library) {
  if (!in_image(image, library->header, sizeof(*library->header)) || !string_in_image(image, library->header->name)) {
    return malformed("library header outside the image");
  }
  uint32_t count = library->exports.count;
  if (count > 65536) return malformed("implausible export count");
  if (count == 0) return iree_ok_status();
  if (!in_image(image, library->exports.ptrs, count * sizeof(*library->exports.ptrs)) ||
      (library->exports.attrs &&  // optional: NULL gives every export the defaults
       !in_image(image, library->exports.attrs, count * sizeof(*library->exports.attrs))) ||
      !in_image(image, library->exports.names, count * sizeof(*library->exports.names))) {
    return malformed("export tables outside the image");
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (!string_in_image(image, library->exports.names[i])) return malformed("export name outside the image");
    if (!code_in_image(image, (const void*)(uintptr_t)library->exports.ptrs[i])) {
      return malformed("export function outside the code");
    }
  }
  return iree_ok_status();
}

static void release_image(void* user_data) {
  elf_image_t* image = (elf_image_t*)user_data;
  iree_allocator_t allocator = image->memory.allocator;
  npukit_executable_memory_release(&image->memory);
  iree_allocator_free(allocator, image);
}

static iree_status_t elf_load_library(elf_image_t* image, iree_allocator_t allocator,
                                      const iree_hal_executable_library_v0_t** out_library) {
  IREE_RETURN_IF_ERROR(check_header(image));
  IREE_RETURN_IF_ERROR(load_segments(image, allocator));
  dynamic_info_t info;
  IREE_RETURN_IF_ERROR(read_dynamic(image, &info));
  IREE_RETURN_IF_ERROR(relocate(image, &info));
  IREE_RETURN_IF_ERROR(protect_segments(image));
  iree_hal_executable_library_query_fn_t query = NULL;
  IREE_RETURN_IF_ERROR(find_query(image, &query));
  iree_alignas(16) iree_hal_executable_environment_v0_t environment;
  npukit_hal_library_environment_initialize(&environment);
  const iree_hal_executable_library_header_t** header = query(IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST, &environment);
  if (!header) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION,
                            "embedded ELF does not support executable library ABI version %u (built by another IREE "
                            "release than 3.13.0)",
                            (unsigned)IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST);
  }
  iree_host_size_t unused;
  uintptr_t lib_vaddr = (uintptr_t)header - (uintptr_t)image->memory.base + image->min_vaddr;
  if (!image_range(image, lib_vaddr, sizeof(iree_hal_executable_library_v0_t), &unused)) {
    return malformed("library table outside the image");
  }
  const iree_hal_executable_library_v0_t* library = (const iree_hal_executable_library_v0_t*)header;
  IREE_RETURN_IF_ERROR(check_library_tables(image, library));
  if (library->header->sanitizer != IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_NONE) {
    return iree_make_status(IREE_STATUS_UNAVAILABLE, "embedded ELF was built with a sanitizer");
  }
  *out_library = library;
  return iree_ok_status();
}

static bool elf_supports(const npukit_hal_executable_loader_t* loader, iree_string_view_t format) {
  (void)loader;
  if (iree_string_view_equal(format, iree_make_cstring_view("embedded-elf-" ELF_HOST_ARCH))) return true;
#if ELF_HOST_MACHINE == NPUKIT_EM_ARM
  // IREE 3.13 names Thumb (Cortex-M) targets "unknown": LLVM does not count
  // thumb* triples as Arm. The ELF header check still gates the machine.
  if (iree_string_view_equal(format, iree_make_cstring_view("embedded-elf-unknown"))) return true;
#endif
  return false;
}

static iree_status_t elf_load(const npukit_hal_executable_loader_t* loader, iree_string_view_t format,
                              iree_const_byte_span_t data, const uint32_t* constants, iree_host_size_t constant_count,
                              iree_allocator_t allocator, npukit_hal_executable_t** out_executable) {
  (void)loader;
  (void)format;
  *out_executable = NULL;
  elf_image_t* image = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(allocator, sizeof(*image), (void**)&image));
  image->file = data;
  image->memory.allocator = allocator;
  const iree_hal_executable_library_v0_t* library = NULL;
  iree_status_t status = elf_load_library(image, allocator, &library);
  if (iree_status_is_ok(status)) {
    status = npukit_hal_library_executable_create(library, constants, constant_count, release_image, image, allocator,
                                                  out_executable);
  }
  if (!iree_status_is_ok(status)) release_image(image);
  return status;
}

static const npukit_hal_executable_loader_vtable_t elf_vtable = {elf_supports, elf_load};

void npukit_hal_elf_loader_initialize(npukit_hal_elf_loader_t* out_loader) { out_loader->base.vtable = &elf_vtable; }
