/* SPDX-License-Identifier: MIT */
/* CRC32C, reflected polynomial 0x82F63B78: eight bytes per step, by table
 * (slicing by 8: eight 256-entry tables built on first use), or, where every
 * hart has Zbc, by carry-less multiplication (crc32c_use_clmul()): a
 * snapshot or migration stream checksums every byte it sends on hart 0,
 * and the tables cost about 7 instructions a byte there, the products 1.4.
 *
 * The product step, a Barrett reduction of one 64-bit word (derived from
 * the definition; docs/architecture.md, "Checksums"). In the reflected
 * form, bit i of a k-bit value is the coefficient of x^(k-1-i). A step
 * turns the state c and the next word v into W(x) x^32 mod P(x), W being
 * w = v ^ c. With mu = floor(x^96 / P) = x^64 + mu', P = x^32 + P':
 *   Q = floor(W x^32 / P) = W + floor(W mu' / x^64)
 *   R = W x^32 - Q P = (Q P') mod x^32
 * A product of two reflected 64-bit values has bit k for x^(126-k); so
 * floor(W mu' / x^64) is the low product shifted left by one, and
 * (Q P') mod x^32 is bits 95..126 of the product, the high half shifted
 * right by 31. mu' is computed here, by long division, not written down. */
#include <crc32c.h>

#define POLY		0x82f63b78U	/* P', reflected */
#define POLY_NORMAL	0x1edc6f41U	/* P', x^31 at bit 31 */

static uint32_t table[8][256];
static bool ready;
static bool use_clmul;
static uint64_t mu_reflected;		/* mu', bit i for x^(63-i) */

static void build(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? POLY : 0);
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
	ready = true;
}

#if defined(__riscv)
/* Zbc's clmul and clmulh, encoded: the toolchain need not know Zbc */
static inline uint64_t clmul_lo(uint64_t a, uint64_t b)
{
	uint64_t r;

	asm(".insn r 0x33, 0x1, 0x5, %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
	return r;
}

static inline uint64_t clmul_hi(uint64_t a, uint64_t b)
{
	uint64_t r;

	asm(".insn r 0x33, 0x3, 0x5, %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
	return r;
}
#else
/* The host's unit tests: the same products, bit by bit. */
static uint64_t clmul_lo(uint64_t a, uint64_t b)
{
	uint64_t r = 0;

	for (int i = 0; i < 64; i++)
		if (b >> i & 1)
			r ^= a << i;
	return r;
}

static uint64_t clmul_hi(uint64_t a, uint64_t b)
{
	uint64_t r = 0;

	for (int i = 1; i < 64; i++)
		if (b >> i & 1)
			r ^= a >> (64 - i);
	return r;
}
#endif

/* mu' = floor(x^96 / P) - x^64, by long division, reflected. */
static uint64_t barrett_mu(void)
{
	uint64_t window = 1ULL << 32;	/* x^96's coefficients from x^k down to x^(k-32) */
	uint64_t quotient = 0, reflected = 0;

	for (int k = 96; k >= 32; k--) {
		uint64_t bit = window >> 32 & 1;

		if (k - 32 < 64)
			quotient |= bit << (k - 32);
		if (bit)
			window ^= 1ULL << 32 | POLY_NORMAL;
		window <<= 1;
	}
	for (int i = 0; i < 64; i++)
		reflected |= (quotient >> i & 1) << (63 - i);
	return reflected;
}

static uint32_t update_clmul(uint64_t crc, const uint8_t *p, size_t len)
{
	const uint64_t mu = mu_reflected, poly = (uint64_t)POLY << 32;

	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w = *(const uint64_t *)p ^ crc;	/* little-endian */
		uint64_t q = w ^ clmul_lo(w, mu) << 1;

		crc = clmul_hi(q, poly) >> 31;
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return (uint32_t)crc;
}

uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!ready)
		build();	/* boot runs single-threaded through here first */
	while (len && ((uintptr_t)p & 7)) {
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	if (use_clmul)
		return update_clmul(crc, p, len);
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v = *(const uint64_t *)p ^ crc;	/* little-endian */

		crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^
		      table[5][(v >> 16) & 0xff] ^ table[4][(v >> 24) & 0xff] ^
		      table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
		      table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

bool crc32c_use_clmul(bool on)
{
	static const char check[] = "123456789 and the rest of a check that spans words";
	uint32_t by_table;

	use_clmul = false;
	if (!on)
		return false;
	mu_reflected = barrett_mu();
	by_table = crc32c(check, sizeof(check));
	use_clmul = true;
	/* the product path must agree with the tables, or it is not used */
	use_clmul = crc32c(check, sizeof(check)) == by_table;
	return use_clmul;
}
