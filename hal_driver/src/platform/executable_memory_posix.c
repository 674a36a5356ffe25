// Executable memory on POSIX hosts: anonymous mappings, code pages made
// read+execute after relocation (never writable and executable at once).

#if !defined(NPUKIT_BARE_METAL)

#define _DEFAULT_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "npukit/hal/executable_memory.h"

iree_host_size_t npukit_executable_memory_page_size(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (iree_host_size_t)page : 4096;
}

iree_status_t npukit_executable_memory_reserve(iree_host_size_t size, iree_allocator_t allocator,
                                               npukit_executable_memory_t* out_memory) {
  memset(out_memory, 0, sizeof(*out_memory));
  out_memory->allocator = allocator;
  iree_host_size_t page = npukit_executable_memory_page_size();
  size = iree_host_align(size ? size : 1, page);
  void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return iree_make_status(IREE_STATUS_RESOURCE_EXHAUSTED, "cannot map %zu bytes for an executable image", size);
  }
  out_memory->base = (uint8_t*)p;
  out_memory->size = size;
  return iree_ok_status();
}

iree_status_t npukit_executable_memory_protect(npukit_executable_memory_t* memory, iree_host_size_t offset,
                                               iree_host_size_t length, bool writable, bool executable) {
  iree_host_size_t page = npukit_executable_memory_page_size();
  iree_host_size_t start = offset & ~(page - 1);
  iree_host_size_t end = iree_host_align(offset + length, page);
  if (end > memory->size) end = memory->size;
  if (start >= end) return iree_ok_status();
  int prot = PROT_READ | (writable ? PROT_WRITE : 0) | (executable ? PROT_EXEC : 0);
  if (mprotect(memory->base + start, end - start, prot) != 0) {
    return iree_make_status(IREE_STATUS_PERMISSION_DENIED, "cannot set page protection of an executable image");
  }
  return iree_ok_status();
}

void npukit_executable_memory_flush_icache(npukit_executable_memory_t* memory) {
  __builtin___clear_cache((char*)memory->base, (char*)memory->base + memory->size);
}

void npukit_executable_memory_release(npukit_executable_memory_t* memory) {
  if (memory->base) munmap(memory->base, memory->size);
  memory->base = NULL;
}

#endif  // !NPUKIT_BARE_METAL
