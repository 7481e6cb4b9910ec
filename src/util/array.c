/* One reallocation per growth, through the fault-injecting allocator (util/fault.h). */
#include <string.h>

#include "util/array.h"
#include "util/fault.h"

int array_reserve(void **arr, uint32_t *cap, size_t size, uint32_t i, uint32_t first) {
  if (i < *cap) return 0;
  uint32_t ncap = *cap ? *cap : first;
  while (ncap <= i) {
    if (ncap > UINT32_MAX / 2) return -1;
    ncap *= 2;
  }
  char *n = fault_realloc(*arr, (size_t)ncap * size);
  if (!n) return -1;
  memset(n + (size_t)*cap * size, 0, (size_t)(ncap - *cap) * size);
  *arr = n;
  *cap = ncap;
  return 0;
}
