/* Open addressing with linear probing; deletion uses backward shifting so no tombstones pile up. */
#include <stdlib.h>
#include <string.h>

#include "util/fault.h"
#include "util/idxmap.h"

int idxmap_init(IdxMap *m, uint32_t capacity) {
  m->slots = fault_calloc(capacity, sizeof *m->slots);
  m->mask = capacity - 1;
  m->count = 0;
  return m->slots ? 0 : -1;
}

void idxmap_free(IdxMap *m) {
  free(m->slots);
  m->slots = NULL;
  m->count = 0;
}

static void insert_slot(IdxSlot *slots, uint32_t mask, IdxSlot s) {
  uint32_t i = s.hash & mask;
  while (slots[i].idx1 != 0) i = (i + 1) & mask;
  slots[i] = s;
}

int idxmap_put(IdxMap *m, uint32_t hash, uint32_t idx) {
  if ((m->count + 1) * 4 > (m->mask + 1) * 3) {
    uint32_t cap = (m->mask + 1) * 2;
    if (cap == 0) return -1;
    IdxSlot *ns = fault_calloc(cap, sizeof *ns);
    if (!ns) return -1;
    for (uint32_t i = 0; i <= m->mask; i++)
      if (m->slots[i].idx1 != 0) insert_slot(ns, cap - 1, m->slots[i]);
    free(m->slots);
    m->slots = ns;
    m->mask = cap - 1;
  }
  insert_slot(m->slots, m->mask, (IdxSlot){hash, idx + 1});
  m->count++;
  return 0;
}

/* The slot holding record `idx`, or IDX_NONE. */
static uint32_t slot_of(const IdxMap *m, uint32_t hash, uint32_t idx) {
  uint32_t i = hash & m->mask;
  while (m->slots[i].idx1 != idx + 1) {
    if (m->slots[i].idx1 == 0) return IDX_NONE;
    i = (i + 1) & m->mask;
  }
  return i;
}

void idxmap_del(IdxMap *m, uint32_t hash, uint32_t idx) {
  uint32_t i = slot_of(m, hash, idx);
  if (i == IDX_NONE) return;
  /* Shift later members of the probe run back so lookups never stop at a hole too early. */
  for (uint32_t j = (i + 1) & m->mask; m->slots[j].idx1 != 0; j = (j + 1) & m->mask) {
    uint32_t home = m->slots[j].hash & m->mask;
    int movable = (i <= j) ? (home <= i || home > j) : (home <= i && home > j);
    if (movable) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].idx1 = 0;
  m->count--;
}

void idxmap_remove_record(IdxMap *m, void *arr, size_t size, uint32_t *n, uint32_t i,
                          uint32_t hash_i, uint32_t hash_last) {
  uint32_t last = --*n;
  idxmap_del(m, hash_i, i);
  if (i == last) return;
  memcpy((char *)arr + (size_t)i * size, (char *)arr + (size_t)last * size, size);
  uint32_t s = slot_of(m, hash_last, last);
  if (s != IDX_NONE) m->slots[s].idx1 = i + 1;
}
