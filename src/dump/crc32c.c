/* CRC-32C (dump/crc32c.h), slicing-by-8: eight bytes per step through eight 256-entry tables,
   built once per process (8 KB) on first use. */
#include <pthread.h>
#include <string.h>

#include "dump/crc32c.h"

#define POLY 0x82F63B78u /* x^32 + x^28 + x^27 + ... + 1, bit-reversed */

static uint32_t table[8][256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* table[0] is the CRC of each byte alone; table[k][b] is table[k-1][b] run through 8 more zero
   bits, so that the eight bytes of a step can be looked up independently and combined. */
static void build(void) {
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t c = b;
    for (int i = 0; i < 8; i++) c = (c >> 1) ^ (POLY & (0u - (c & 1)));
    table[0][b] = c;
  }
  for (int k = 1; k < 8; k++)
    for (int b = 0; b < 256; b++)
      table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t n) {
  pthread_once(&once, build);
  const unsigned char *p = data;
  uint32_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                       (uint32_t)p[3] << 24);
    c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
        table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^ table[0][p[7]];
  }
  while (n--) c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
  return ~c;
}
