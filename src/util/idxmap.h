/*
 * util/idxmap.h — an open-addressing hash index: maps a key (owned by the caller's records) to a
 * record number. The map stores only the hash and the record number, so one implementation
 * serves every table of the profiler (functions, addresses, edges, links, lines, threads) and
 * of memory attribution (blocks); the caller supplies the hash (util/hash.h) and equality.
 * A lookup is one probe run, inline; an insertion grows the map when it is 3/4 full.
 */
#ifndef CPROF_IDXMAP_H
#define CPROF_IDXMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct IdxSlot { uint32_t hash; uint32_t idx1; } IdxSlot;  /* idx1 == 0: empty */

typedef struct IdxMap {
  IdxSlot *slots;
  uint32_t mask;   /* capacity - 1; capacity is a power of two */
  uint32_t count;
} IdxMap;

#define IDX_NONE UINT32_MAX

int idxmap_init(IdxMap *m, uint32_t capacity);
void idxmap_free(IdxMap *m);
/* Adds record `idx` under `hash`; grows when 3/4 full. Returns 0, or -1 when out of memory. */
int idxmap_put(IdxMap *m, uint32_t hash, uint32_t idx);
/* Removes the slot holding record `idx` (found through `hash`). */
void idxmap_del(IdxMap *m, uint32_t hash, uint32_t idx);
/* Removes record i from the *n records of `arr` (`size` bytes each) that m indexes, as every
   table here does: the last record moves into the hole, so the records stay dense, and its slot
   is renamed. hash_i and hash_last: the hashes of record i and of the last record. */
void idxmap_remove_record(IdxMap *m, void *arr, size_t size, uint32_t *n, uint32_t i,
                          uint32_t hash_i, uint32_t hash_last);

/* Bytes of the map's slots (the memory counters). */
static inline size_t idxmap_bytes(const IdxMap *m) {
  return m->slots ? ((size_t)m->mask + 1) * sizeof *m->slots : 0;
}

/* Probes for a record equal to the key; `eq(ctx, idx)` compares record idx with the key. */
#define IDXMAP_FIND(m, h, eq, ctx, out)                                   \
  do {                                                                   \
    uint32_t i_ = (h) & (m)->mask;                                       \
    (out) = IDX_NONE;                                                    \
    for (;;) {                                                           \
      IdxSlot *s_ = &(m)->slots[i_];                                     \
      if (s_->idx1 == 0) break;                                          \
      if (s_->hash == (h) && eq((ctx), s_->idx1 - 1)) {                  \
        (out) = s_->idx1 - 1;                                            \
        break;                                                           \
      }                                                                  \
      i_ = (i_ + 1) & (m)->mask;                                         \
    }                                                                    \
  } while (0)

#endif
