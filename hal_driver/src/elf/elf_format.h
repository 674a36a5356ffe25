// The ELF structures of the host's class (ELF32 on Cortex-M and RV32, ELF64 on
// x86-64), as the embedded-ELF loader reads them. Written out here because
// bare-metal C libraries have no <elf.h>.

#ifndef NPUKIT_HAL_ELF_FORMAT_H_
#define NPUKIT_HAL_ELF_FORMAT_H_

#include <stdint.h>

#define NPUKIT_ELF_MAGIC \
  "\x7f"                 \
  "ELF"
#define NPUKIT_ELFCLASS32 1
#define NPUKIT_ELFCLASS64 2
#define NPUKIT_ELFDATA2LSB 1
#define NPUKIT_EV_CURRENT 1
#define NPUKIT_ET_DYN 3

#define NPUKIT_EM_ARM 40
#define NPUKIT_EM_X86_64 62
#define NPUKIT_EM_RISCV 243

#define NPUKIT_PT_LOAD 1
#define NPUKIT_PT_DYNAMIC 2
#define NPUKIT_PF_X 1
#define NPUKIT_PF_W 2

#define NPUKIT_DT_NULL 0
#define NPUKIT_DT_PLTRELSZ 2
#define NPUKIT_DT_HASH 4
#define NPUKIT_DT_STRTAB 5
#define NPUKIT_DT_SYMTAB 6
#define NPUKIT_DT_RELA 7
#define NPUKIT_DT_RELASZ 8
#define NPUKIT_DT_RELAENT 9
#define NPUKIT_DT_STRSZ 10
#define NPUKIT_DT_SYMENT 11
#define NPUKIT_DT_INIT 12
#define NPUKIT_DT_REL 17
#define NPUKIT_DT_RELSZ 18
#define NPUKIT_DT_RELENT 19
#define NPUKIT_DT_PLTREL 20
#define NPUKIT_DT_TEXTREL 22
#define NPUKIT_DT_JMPREL 23
#define NPUKIT_DT_INIT_ARRAY 25
#define NPUKIT_DT_INIT_ARRAYSZ 27
#define NPUKIT_DT_RELR 36

#define NPUKIT_SHN_UNDEF 0

#if UINTPTR_MAX == 0xFFFFFFFFu
#define NPUKIT_ELF_NATIVE_CLASS NPUKIT_ELFCLASS32
typedef uint32_t npukit_elf_addr_t;
typedef int32_t npukit_elf_sword_t;

typedef struct {
  uint32_t p_type;
  uint32_t p_offset;
  uint32_t p_vaddr;
  uint32_t p_paddr;
  uint32_t p_filesz;
  uint32_t p_memsz;
  uint32_t p_flags;
  uint32_t p_align;
} npukit_elf_phdr_t;

typedef struct {
  uint32_t st_name;
  uint32_t st_value;
  uint32_t st_size;
  uint8_t st_info;
  uint8_t st_other;
  uint16_t st_shndx;
} npukit_elf_sym_t;

#define NPUKIT_ELF_R_SYM(info) ((info) >> 8)
#define NPUKIT_ELF_R_TYPE(info) ((info) & 0xFFu)
#else
#define NPUKIT_ELF_NATIVE_CLASS NPUKIT_ELFCLASS64
typedef uint64_t npukit_elf_addr_t;
typedef int64_t npukit_elf_sword_t;

typedef struct {
  uint32_t p_type;
  uint32_t p_flags;
  uint64_t p_offset;
  uint64_t p_vaddr;
  uint64_t p_paddr;
  uint64_t p_filesz;
  uint64_t p_memsz;
  uint64_t p_align;
} npukit_elf_phdr_t;

typedef struct {
  uint32_t st_name;
  uint8_t st_info;
  uint8_t st_other;
  uint16_t st_shndx;
  uint64_t st_value;
  uint64_t st_size;
} npukit_elf_sym_t;

#define NPUKIT_ELF_R_SYM(info) ((info) >> 32)
#define NPUKIT_ELF_R_TYPE(info) ((info) & 0xFFFFFFFFu)
#endif

typedef struct {
  uint8_t e_ident[16];
  uint16_t e_type;
  uint16_t e_machine;
  uint32_t e_version;
  npukit_elf_addr_t e_entry;
  npukit_elf_addr_t e_phoff;
  npukit_elf_addr_t e_shoff;
  uint32_t e_flags;
  uint16_t e_ehsize;
  uint16_t e_phentsize;
  uint16_t e_phnum;
  uint16_t e_shentsize;
  uint16_t e_shnum;
  uint16_t e_shstrndx;
} npukit_elf_ehdr_t;

typedef struct {
  npukit_elf_sword_t d_tag;
  npukit_elf_addr_t d_val;
} npukit_elf_dyn_t;

typedef struct {
  npukit_elf_addr_t r_offset;
  npukit_elf_addr_t r_info;
} npukit_elf_rel_t;

typedef struct {
  npukit_elf_addr_t r_offset;
  npukit_elf_addr_t r_info;
  npukit_elf_sword_t r_addend;
} npukit_elf_rela_t;

#endif  // NPUKIT_HAL_ELF_FORMAT_H_
