/* The `tsc` timer's reading (tables/clock.h): a function, as a timer needs one, which the hook
   recognises by its address and inlines. Costs one rdtsc. */
#include "tables/clock.h"

cprof_ticks clock_read_tsc(void *ud) {
  (void)ud;
#if CLOCK_HAVE_TSC
  return (cprof_ticks)__rdtsc();
#else
  return 0;  /* never chosen: there is no `tsc` timer here */
#endif
}
