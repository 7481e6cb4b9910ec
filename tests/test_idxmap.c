/*
 * tests/test_idxmap.c — unit tests of the hash index every table of the profiler uses
 * (src/util/idxmap.c) and of the array growth under it (src/util/array.c), run by `make ctest`
 * both as is and under AddressSanitizer + UBSan.
 *
 * Random insertions, lookups and removals (the last record moving into the hole, as the tables
 * do it) are checked against the records themselves after every step: each record is found at
 * its own index, a removed key is not found, the count is right. Hashes with few values make
 * long probe runs, wrapping around the end of the slots, so that backward-shift deletion is
 * exercised; every allocation is made to fail once.
 *
 *   test_idxmap [seed]      exit status 0 when everything passed
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "util/array.h"
#include "util/fault.h"
#include "util/hash.h"
#include "util/idxmap.h"

typedef struct Rec {
  uint64_t key;
  uint64_t payload;  /* key * 3: moves with its record */
} Rec;

typedef struct Table {
  Rec *recs;
  uint32_t n, cap;
  IdxMap map;
  uint32_t hash_bits;  /* 0: hash_mix64; else only this many bits of it (collisions) */
} Table;

static uint32_t key_hash(const Table *t, uint64_t key) {
  uint32_t h = (uint32_t)hash_mix64(key);
  return t->hash_bits ? h & ((1u << t->hash_bits) - 1) : h;
}

typedef struct Probe {
  const Table *t;
  uint64_t key;
} Probe;

static int rec_matches(const Probe *q, uint32_t i) { return q->t->recs[i].key == q->key; }

static uint32_t find(const Table *t, uint64_t key) {
  Probe q = {t, key};
  uint32_t i;
  IDXMAP_FIND(&t->map, key_hash(t, key), rec_matches, &q, i);
  return i;
}

static int insert(Table *t, uint64_t key) {
  if (array_reserve((void **)&t->recs, &t->cap, sizeof *t->recs, t->n, 4) ||
      idxmap_put(&t->map, key_hash(t, key), t->n))
    return -1;
  t->recs[t->n++] = (Rec){key, key * 3};
  return 0;
}

static void remove_at(Table *t, uint32_t i) {
  idxmap_remove_record(&t->map, t->recs, sizeof *t->recs, &t->n, i, key_hash(t, t->recs[i].key),
                       key_hash(t, t->recs[t->n - 1].key));
}

static void check_table(const Table *t, const char *what) {
  CHECK(t->map.count == t->n, "%s: %u slots used for %u records", what, t->map.count, t->n);
  for (uint32_t i = 0; i < t->n; i++) {
    CHECK(find(t, t->recs[i].key) == i, "%s: record %u not found at its index", what, i);
    CHECK(t->recs[i].payload == t->recs[i].key * 3, "%s: record %u lost its payload", what, i);
  }
}

/* Insertions and removals at random against the records; keys from a small range, so that a
   key is often inserted again after its removal. */
static void test_random(uint32_t hash_bits, uint32_t capacity) {
  Table t = {.hash_bits = hash_bits};
  CHECK(idxmap_init(&t.map, capacity) == 0, "init");
  uint8_t *present = calloc(4096, 1);
  for (int step = 0; step < 20000; step++) {
    uint64_t key = below(4096);
    uint32_t i = find(&t, key);
    CHECK((i != IDX_NONE) == present[key], "step %d: key %llu found: %d, present: %d", step,
          (unsigned long long)key, i != IDX_NONE, present[key]);
    if (i == IDX_NONE && below(3) != 0) {
      CHECK(insert(&t, key) == 0, "insert");
      present[key] = 1;
    } else if (i != IDX_NONE) {
      remove_at(&t, i);
      present[key] = 0;
    }
    if (step % 997 == 0) check_table(&t, "random");
  }
  check_table(&t, "random, at the end");
  while (t.n > 0) remove_at(&t, (uint32_t)below(t.n));
  CHECK(t.map.count == 0, "empty again");
  for (uint32_t s = 0; s <= t.map.mask; s++)
    CHECK(t.map.slots[s].idx1 == 0, "slot %u not empty", s);
  free(present);
  free(t.recs);
  idxmap_free(&t.map);
}

/* A run of equal hashes that wraps past the last slot: removing any member keeps the others
   findable (backward shift across the wrap). */
static void test_wrapping_run(void) {
  for (uint32_t victim = 0; victim < 6; victim++) {
    Table t = {.hash_bits = 0};
    CHECK(idxmap_init(&t.map, 8) == 0, "init");
    /* Six records whose hash is 6 (slot 6 of 8): they fill 6, 7, 0, 1, 2, 3. */
    for (uint64_t k = 0; k < 6; k++) {
      CHECK(array_reserve((void **)&t.recs, &t.cap, sizeof *t.recs, t.n, 8) == 0, "room");
      CHECK(idxmap_put(&t.map, 6, t.n) == 0, "put");
      t.recs[t.n++] = (Rec){k, k * 3};
    }
    /* find() hashes with hash_mix64: look the records up with the fixed hash instead. */
    idxmap_remove_record(&t.map, t.recs, sizeof *t.recs, &t.n, victim, 6, 6);
    for (uint32_t i = 0; i < t.n; i++) {
      Probe q = {&t, t.recs[i].key};
      uint32_t got;
      IDXMAP_FIND(&t.map, 6, rec_matches, &q, got);
      CHECK(got == i, "victim %u: record %u found at %u", victim, i, got);
    }
    CHECK(t.map.count == 5, "victim %u: count %u", victim, t.map.count);
    free(t.recs);
    idxmap_free(&t.map);
  }
}

/* A slot that is not there: deleting it changes nothing. */
static void test_absent(void) {
  Table t = {0};
  CHECK(idxmap_init(&t.map, 16) == 0, "init");
  for (uint64_t k = 0; k < 5; k++) CHECK(insert(&t, k) == 0, "insert");
  idxmap_del(&t.map, key_hash(&t, 99), 99);
  idxmap_del(&t.map, key_hash(&t, 2), 3);  /* record 3 is not under key 2's hash */
  check_table(&t, "after deleting what is not there");
  free(t.recs);
  idxmap_free(&t.map);
}

/* Every allocation fails once: the map and the records stay as they were. */
static void test_out_of_memory(void) {
  IdxMap m;
  fault_after(0);
  CHECK(idxmap_init(&m, 16) == -1 && m.slots == NULL, "init fails cleanly");
  fault_after(-1);

  Table t = {0};
  CHECK(idxmap_init(&t.map, 4) == 0, "init");
  int refused = 0;
  for (uint64_t k = 0; k < 200; k++) {
    fault_after(0);
    uint32_t n = t.n, slots = t.map.mask + 1;
    if (insert(&t, k) != 0) {
      refused++;
      /* The array may have grown before the map refused: only the count tells. */
      CHECK(t.n == n && t.map.mask + 1 == slots, "a refused insert leaves the table as it was");
      fault_after(-1);
      CHECK(insert(&t, k) == 0, "the same insert, with memory");
    }
    fault_after(-1);
    check_table(&t, "out of memory");
  }
  CHECK(refused > 0, "growth was refused at least once");
  free(t.recs);
  idxmap_free(&t.map);
}

/* array_reserve: doubling from `first`, new elements zero, a refusal changes nothing. */
static void test_array(void) {
  uint64_t *a = NULL;
  uint32_t cap = 0;
  CHECK(array_reserve((void **)&a, &cap, sizeof *a, 0, 4) == 0 && cap == 4, "first: %u", cap);
  for (uint32_t i = 0; i < 4; i++) CHECK(a[i] == 0, "zero");
  a[3] = 7;
  CHECK(array_reserve((void **)&a, &cap, sizeof *a, 3, 4) == 0 && cap == 4, "room already");
  CHECK(array_reserve((void **)&a, &cap, sizeof *a, 4, 4) == 0 && cap == 8, "doubled: %u", cap);
  CHECK(array_reserve((void **)&a, &cap, sizeof *a, 40, 4) == 0 && cap == 64, "to 64: %u", cap);
  CHECK(a[3] == 7 && a[4] == 0 && a[63] == 0, "kept, and zero beyond");
  fault_after(0);
  uint64_t *before = a;
  CHECK(array_reserve((void **)&a, &cap, sizeof *a, 64, 4) == -1, "refused");
  fault_after(-1);
  CHECK(a == before && cap == 64 && a[3] == 7, "unchanged after a refusal");
  uint32_t huge = UINT32_MAX / 2 + 1;
  CHECK(array_reserve((void **)&a, &huge, 1, UINT32_MAX, 4) == -1, "no capacity past 2^32");
  free(a);
}

int main(int argc, char **argv) {
  ctest_seed(argc, argv);
  test_random(0, 4);        /* good hashes, growing from the smallest map */
  test_random(3, 64);       /* eight hash values: long runs */
  test_random(0, 8192);     /* never grows */
  test_wrapping_run();
  test_absent();
  test_out_of_memory();
  test_array();
  return ctest_done("test_idxmap");
}
