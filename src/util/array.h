/*
 * util/array.h — growing the arrays that hold cprof's records (functions, edges, nodes, frames,
 * blocks): by doubling, so that n records cost O(n) copying in all. Runs only when an array is
 * full, never per call.
 */
#ifndef CPROF_ARRAY_H
#define CPROF_ARRAY_H

#include <stddef.h>
#include <stdint.h>

/* Makes room for element `i` of the array *arr of *cap elements of `size` bytes: while i is not
   below the capacity it doubles (from `first` when the array is empty). New elements are zero.
   Returns 0, or -1 when out of memory (the array is as it was). */
int array_reserve(void **arr, uint32_t *cap, size_t size, uint32_t i, uint32_t first);

#endif
