/* Shadow stacks (tables/stacks.h). A stack is made on a thread's first event and freed when the
   thread is known dead; frames grow by doubling from a few. */
#include <stdlib.h>
#include <string.h>

#include "tables/stacks.h"
#include "util/array.h"
#include "util/fault.h"
#include "util/hash.h"

enum { FIRST_FRAMES = 4 };

const uint32_t stk_no_top = IDX_NONE;

int stk_init(Stacks *S) {
  memset(S, 0, sizeof *S);
  stk_set_cur(S, NULL);
  return idxmap_init(&S->by_thread, 16);
}

/* The frames' array with f[-1]: its elements, and where it starts. */
static uint32_t room_of(const Stack *st) { return st->f ? st->cap + 1 : 0; }
static Frame *base_of(const Stack *st) { return st->f ? st->f - 1 : NULL; }

static void free_stack(Stack *st) {
  free(base_of(st));
  free(st);
}

void stk_free(Stacks *S) {
  for (uint32_t i = 0; i < S->n; i++) free_stack(S->all[i]);
  free(S->all);
  idxmap_free(&S->by_thread);
  memset(S, 0, sizeof *S);
  stk_set_cur(S, NULL);
}

typedef struct StackProbe {
  const Stacks *S;
  const lua_State *L;
} StackProbe;

static int stack_matches(const StackProbe *q, uint32_t i) { return q->S->all[i]->L == q->L; }

static uint32_t find_index(const Stacks *S, const lua_State *L) {
  StackProbe q = {S, L};
  uint32_t i;
  IDXMAP_FIND(&S->by_thread, hash_ptr_line(L, 0), stack_matches, &q, i);
  return i;
}

Stack *stk_find_slow(Stacks *S, const lua_State *L) {
  uint32_t i = find_index(S, L);
  if (i == IDX_NONE) return NULL;
  *stk_recent(S, L) = S->all[i];
  return S->all[i];
}

Stack *stk_new(Stacks *S, struct Profiler *P, lua_State *L) {
  Stack *st = fault_calloc(1, sizeof *st);
  if (!st) return NULL;
  st->P = P;
  st->L = L;
  st->top = IDX_NONE;
  if (array_reserve((void **)&S->all, &S->cap, sizeof *S->all, S->n, 16) ||
      idxmap_put(&S->by_thread, hash_ptr_line(L, 0), S->n)) {
    free(st);
    return NULL;
  }
  S->all[S->n++] = st;
  return st;
}

void stk_drop(Stacks *S, Stack *st) {
  uint32_t i = find_index(S, st->L);
  if (i == IDX_NONE || S->all[i] != st) return;
  idxmap_remove_record(&S->by_thread, S->all, sizeof *S->all, &S->n, i, hash_ptr_line(st->L, 0),
                       hash_ptr_line(S->all[S->n - 1]->L, 0));
  if (S->cur == st) stk_set_cur(S, NULL);
  if (S->main == st) S->main = NULL;
  if (*stk_recent(S, st->L) == st) *stk_recent(S, st->L) = NULL;
  S->frame_bytes -= (size_t)room_of(st) * sizeof *st->f;
  free_stack(st);
}

int stk_grow(Stacks *S, Stack *st) {
  Frame *base = base_of(st);
  uint32_t room = room_of(st), before = room;
  if (array_reserve((void **)&base, &room, sizeof *base, st->n + 1, FIRST_FRAMES + 1)) return -1;
  if (!st->f) base[0].node = IDX_NONE;
  st->f = base + 1;
  st->cap = room - 1;
  S->frame_bytes += (size_t)(room - before) * sizeof *st->f;
  return 0;
}

size_t stk_bytes(const Stacks *S) {
  return (size_t)S->n * sizeof(Stack) + (size_t)S->cap * sizeof *S->all +
         idxmap_bytes(&S->by_thread) + S->frame_bytes;
}
