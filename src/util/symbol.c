/* C functions' names from the dynamic linker (util/symbol.h): one dladdr() each. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/symbol.h"

int sym_name(const void *fn, char *buf, size_t n) {
  Dl_info info;
  if (!dladdr(fn, &info) || !info.dli_fname || !info.dli_fname[0]) return SYM_NONE;
  if (info.dli_sname && info.dli_saddr == fn) {
    snprintf(buf, n, "%s", info.dli_sname);
    return SYM_EXACT;
  }
  const char *slash = strrchr(info.dli_fname, '/');
  snprintf(buf, n, "%s+0x%jx", slash ? slash + 1 : info.dli_fname,
           (uintmax_t)((uintptr_t)fn - (uintptr_t)info.dli_fbase));
  return SYM_OFFSET;
}
