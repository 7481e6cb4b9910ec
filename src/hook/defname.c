/* Names from definitions (hook/defname.h). Linear in the sources read: the functions wanting a
   name are sorted by chunk and line, and each chunk's text is walked once, up to the last line
   wanted. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hook/defname.h"
#include "util/fault.h"

/* A source file larger than this is not read for names: no program's file is. */
#define MAX_SOURCE ((size_t)64 << 20)

static int is_alpha(int c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_alnum(int c) { return is_alpha(c) || (c >= '0' && c <= '9'); }
static int is_blank(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* Where the keyword `function` first is in [s, s + n), or n; *count: how many there are. */
static size_t find_function(const char *s, size_t n, int *count) {
  static const char kw[] = "function";
  const size_t k = sizeof kw - 1;
  size_t at = n;
  *count = 0;
  for (size_t i = 0; i + k <= n; i++) {
    if (s[i] != 'f' || memcmp(s + i, kw, k) != 0) continue;
    if ((i > 0 && is_alnum((unsigned char)s[i - 1])) ||
        (i + k < n && is_alnum((unsigned char)s[i + k])))
      continue;
    if (++*count == 1) at = i;
  }
  return at;
}

/* The end of the Name starting at s[i], or i when none does. */
static size_t name_end(const char *s, size_t n, size_t i) {
  if (i >= n || !is_alpha((unsigned char)s[i])) return i;
  while (i < n && is_alnum((unsigned char)s[i])) i++;
  return i;
}

/* The end of the Name {'.' Name} [':' Name] starting at s[i] (a function statement's name; no
   ':' part when `method` is 0), or i when none does. */
static size_t dotted_end(const char *s, size_t n, size_t i, int method) {
  size_t j = name_end(s, n, i);
  if (j == i) return i;
  while (j < n && (s[j] == '.' || (method && s[j] == ':'))) {
    size_t k = name_end(s, n, j + 1);
    if (k == j + 1) return i;
    int colon = s[j] == ':';
    j = k;
    if (colon) break;
  }
  return j;
}

static size_t skip_blanks(const char *s, size_t n, size_t i) {
  while (i < n && is_blank((unsigned char)s[i])) i++;
  return i;
}

static size_t skip_blanks_back(const char *s, size_t i) {
  while (i > 0 && is_blank((unsigned char)s[i - 1])) i--;
  return i;
}

static size_t put(char *out, size_t cap, const char *name, size_t len) {
  /* _G.f is the global f, as a global walk names it. */
  if (len > 3 && memcmp(name, "_G", 2) == 0 && (name[2] == '.' || name[2] == ':')) {
    name += 3;
    len -= 3;
  }
  if (len == 0 || len >= cap) return 0;
  memcpy(out, name, len);
  out[len] = '\0';
  return len;
}

/* The name an assignment gives the anonymous function whose keyword starts at s[at]: `X =`,
   `local X =`, `local X <const> =`, `A.B =` or `["key"] =` just before it. */
static size_t assigned_name(const char *s, size_t at, char *out, size_t cap) {
  size_t b = skip_blanks_back(s, at);
  if (b < 1 || s[b - 1] != '=') return 0;
  if (b >= 2 && (s[b - 2] == '=' || s[b - 2] == '~' || s[b - 2] == '<' || s[b - 2] == '>'))
    return 0;  /* a comparison */
  b = skip_blanks_back(s, b - 1);
  if (b >= 1 && s[b - 1] == ']') {
    if (b < 4 || (s[b - 2] != '"' && s[b - 2] != '\'')) return 0;
    size_t q = b - 2, k = q;
    while (k > 0 && s[k - 1] != s[q]) {
      if (s[k - 1] == '\\') return 0;
      k--;
    }
    if (k < 2 || s[k - 2] != '[') return 0;
    return put(out, cap, s + k, q - k);
  }
  if (b >= 1 && s[b - 1] == '>') {  /* an attribute: local X <const> = function */
    while (b > 0 && s[b - 1] != '<') b--;
    if (b == 0) return 0;
    b = skip_blanks_back(s, b - 1);
  }
  size_t e = b;
  while (b > 0 && (is_alnum((unsigned char)s[b - 1]) || s[b - 1] == '.')) b--;
  if (dotted_end(s, e, b, 0) != e) return 0;
  return put(out, cap, s + b, e - b);
}

size_t defname_of_line(const char *s, size_t n, char *out, size_t cap) {
  /* What follows "--" is a comment (a "--" inside a string cuts the line short: no name). */
  for (size_t i = 0; i + 1 < n; i++)
    if (s[i] == '-' && s[i + 1] == '-') n = i;
  int count;
  size_t at = find_function(s, n, &count);
  if (count != 1) return 0;
  size_t i = skip_blanks(s, n, at + 8);
  size_t e = dotted_end(s, n, i, 1);
  if (e > i) {
    if (skip_blanks(s, n, e) >= n || s[skip_blanks(s, n, e)] != '(') return 0;
    return put(out, cap, s + i, e - i);
  }
  if (i >= n || s[i] != '(') return 0;
  return assigned_name(s, at, out, cap);
}

/* The whole of regular file `path` (NUL-free), or NULL: not a regular file, too large, or
   unreadable. Opened without blocking: a chunk name may name a FIFO. */
static char *read_file(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  char *buf = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= MAX_SOURCE &&
      (buf = fault_malloc((size_t)st.st_size + 1)) != NULL) {
    size_t got = 0, want = (size_t)st.st_size;
    while (got < want) {
      ssize_t r = read(fd, buf + got, want - got);
      if (r <= 0) break;
      got += (size_t)r;
    }
    *len = got;
  }
  close(fd);
  return buf;
}

/* The functions of one chunk wanting a name, by line. */
typedef struct Want {
  uint32_t chunk, entry;
  int line;
} Want;

static int by_chunk_line(const void *a, const void *b) {
  const Want *x = a, *y = b;
  if (x->chunk != y->chunk) return x->chunk < y->chunk ? -1 : 1;
  return (x->line > y->line) - (x->line < y->line);
}

/* The end of the line starting at s[i]: at its '\n' or '\r'. */
static size_t line_end(const char *s, size_t n, size_t i) {
  while (i < n && s[i] != '\n' && s[i] != '\r') i++;
  return i;
}

/* The start of the line after the one ending at s[i]: "\n", "\r", "\r\n" and "\n\r" each end
   one line, as Lua's lexer counts them. */
static size_t next_line(const char *s, size_t n, size_t i) {
  if (i >= n) return n;
  if (i + 1 < n && (s[i + 1] == '\n' || s[i + 1] == '\r') && s[i + 1] != s[i]) return i + 2;
  return i + 1;
}

/* Names the functions w[0..n) of one chunk from its text. Returns -1 when out of memory. */
static int name_chunk(FuncTable *F, const Want *w, uint32_t n) {
  const Chunk *c = &F->chunks[w[0].chunk];
  const char *src = NULL;
  char *owned = NULL;
  size_t len = 0;
  /* '@' names a file; '=' a source given no text; any other chunk name is the source itself
     (a string given to load without a name). */
  if (c->len > 1 && c->text[0] == '@' && strlen(c->text) == c->len) {
    owned = read_file(c->text + 1, &len);
    src = owned;
  } else if (c->len > 0 && c->text[0] != '=' && c->text[0] != '@') {
    src = c->text;
    len = c->len;
  }
  if (src && len > 0 && src[0] == '\033') src = NULL;  /* a precompiled chunk */
  char name[128];
  size_t pos = 0;
  int line = 1;
  for (uint32_t i = 0; src && i < n; i++) {
    while (line < w[i].line && pos < len) {
      pos = next_line(src, len, line_end(src, len, pos));
      line++;
    }
    if (line != w[i].line || pos >= len) break;
    if (defname_of_line(src + pos, line_end(src, len, pos) - pos, name, sizeof name) &&
        fn_set_name(F, w[i].entry, name, NAME_DEF) != 0) {
      free(owned);
      return -1;
    }
  }
  free(owned);
  return 0;
}

void defname_all(FuncTable *F) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < F->nentries; i++)
    n += F->entries[i].kind == KIND_LUA && !F->entries[i].def_read;
  if (n == 0) return;
  Want *w = fault_malloc((size_t)n * sizeof *w);
  if (!w) return;
  n = 0;
  for (uint32_t i = 0; i < F->nentries; i++) {
    const Entry *en = &F->entries[i];
    if (en->kind == KIND_LUA && !en->def_read) w[n++] = (Want){en->chunk, i, en->line};
  }
  qsort(w, n, sizeof *w, by_chunk_line);
  for (uint32_t i = 0, j; i < n; i = j) {
    for (j = i; j < n && w[j].chunk == w[i].chunk;) j++;
    if (name_chunk(F, w + i, j - i) != 0) break;
    for (uint32_t k = i; k < j; k++) {
      Entry *en = &F->entries[w[k].entry];
      en->def_read = 1;
      /* A definition's name is final: no call site replaces it. */
      if (en->origin == NAME_DEF) en->name_tries = 0;
    }
  }
  free(w);
}
