/*
 * tests/test_crc32c.c — dump/crc32c.c against the check values of RFC 3720 (B.4) and against a
 * bit-at-a-time CRC, at every alignment and split of random buffers.
 */
#include <string.h>

#include "ctest.h"
#include "dump/crc32c.h"

static uint32_t bitwise(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  while (n--) {
    c ^= *p++;
    for (int i = 0; i < 8; i++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
  }
  return ~c;
}

int main(int argc, char **argv) {
  ctest_seed(argc, argv);
  unsigned char b[32];
  CHECK(crc32c_update(0, "123456789", 9) == 0xE3069283u, "check value");
  CHECK(crc32c_update(0, "", 0) == 0, "empty");
  memset(b, 0, 32);
  CHECK(crc32c_update(0, b, 32) == 0x8A9136AAu, "32 zeros");
  memset(b, 0xFF, 32);
  CHECK(crc32c_update(0, b, 32) == 0x62A8AB43u, "32 x 0xFF");
  for (int i = 0; i < 32; i++) b[i] = (unsigned char)i;
  CHECK(crc32c_update(0, b, 32) == 0x46DD794Eu, "0 to 31");
  for (int i = 0; i < 32; i++) b[i] = (unsigned char)(31 - i);
  CHECK(crc32c_update(0, b, 32) == 0x113FDB5Cu, "31 down to 0");

  static unsigned char buf[4096 + 8];
  for (int round = 0; round < 200; round++) {
    size_t n = below(4096), off = below(8), cut = below(n + 1);
    for (size_t i = 0; i < n; i++) buf[off + i] = (unsigned char)rnd();
    uint32_t want = bitwise(buf + off, n);
    CHECK(crc32c_update(0, buf + off, n) == want, "%zu bytes at offset %zu", n, off);
    CHECK(crc32c_update(crc32c_update(0, buf + off, cut), buf + off + cut, n - cut) == want,
          "%zu bytes split at %zu", n, cut);
  }
  return ctest_done("test_crc32c");
}
