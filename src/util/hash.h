/*
 * util/hash.h — the hash functions of every table in cprof. Each costs a few instructions and
 * no memory access; which one a table uses depends on how it takes its slot from the hash.
 *
 * - hash_mix64 (murmur3's finalizer: every input bit reaches every output bit) for tables that
 *   take the low bits, keyed by addresses (aligned: low bits constant) or small integers: the
 *   profiler's tables (util/idxmap.h), the allocator's trace.
 * - hash_fib (Fibonacci hashing: one multiplication by 2^64 / golden ratio; the high bits are
 *   well mixed, the low ones are not) for the allocator's tables, on its hot path, which take
 *   their slot from the high bits.
 * - hash_bytes (FNV-1a) for strings and other byte runs, continued from a seed or from the hash
 *   of what came before.
 */
#ifndef CPROF_HASH_H
#define CPROF_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t hash_mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

/* A key of two 32-bit numbers (caller and callee, node and function, function and line). */
static inline uint32_t hash_pair(uint32_t a, uint32_t b) {
  return (uint32_t)hash_mix64(((uint64_t)a << 32) | b);
}

/* An address and a line (a function's address and its line defined; a thread and 0). */
static inline uint32_t hash_ptr_line(const void *p, int line) {
  return (uint32_t)hash_mix64((uint64_t)(uintptr_t)p ^ ((uint64_t)(uint32_t)line << 48));
}

static inline uint64_t hash_fib(uint64_t k) { return k * 0x9E3779B97F4A7C15ull; }

#define HASH_BYTES_SEED 14695981039346656037ull

static inline uint64_t hash_bytes(const void *data, size_t n, uint64_t h) {
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

#endif
