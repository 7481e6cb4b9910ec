/*
 * tests/ctest.h — what the C unit tests share: CHECK, which counts and reports without stopping,
 * a seeded random generator, and byte patterns that tell a block's own bytes from anyone else's.
 * Each test is a program of its own (`make ctest` builds it as is and under ASan + UBSan); it
 * ends with ctest_done, whose exit status is 0 when every check passed.
 */
#ifndef CPROF_CTEST_H
#define CPROF_CTEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int failures, checks;

#define CHECK(cond, ...)                                             \
  do {                                                               \
    checks++;                                                        \
    if (!(cond)) {                                                   \
      failures++;                                                    \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                  \
      fputc('\n', stderr);                                           \
      if (failures > 20) exit(1);                                    \
    }                                                                \
  } while (0)

static inline int ctest_done(const char *name) {
  printf("%s: %d checks, %d failed\n", name, checks, failures);
  return failures ? 1 : 0;
}

/* xorshift64; `test_x SEED` picks another sequence. */
static uint64_t rng_state = 88172645463325252ull;

static inline void ctest_seed(int argc, char **argv) {
  if (argc > 1) rng_state = strtoull(argv[1], NULL, 0) | 1;
}

static inline uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static inline size_t below(size_t n) { return (size_t)(rnd() % n); }

/* Fills n bytes with the pattern of `tag`; intact() says whether they still hold it. */
static inline void fill(void *p, size_t n, uint64_t tag) {
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(tag * 31 + i * 7);
}

static inline int intact(const void *p, size_t n, uint64_t tag) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != (unsigned char)(tag * 31 + i * 7)) return 0;
  return 1;
}

#endif
