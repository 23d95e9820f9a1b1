/* SPDX-License-Identifier: MIT */
/* Fresh random bytes for guests (each boot's /chosen/rng-seed, each vmgenid)
 * from ChaCha20 (RFC 8439). Keyed at boot from the host's /chosen/rng-seed
 * and the boot time; every draw then takes a count that never repeats while
 * the host runs and the time of the draw, and moves the key forward (fast key
 * erasure: the key that made an output is gone once it is handed out), so no
 * two draws are alike, a VM created in a slot never gets what the slot's
 * earlier tenant got, and a key read out of memory later does not give back
 * earlier seeds. Without a seed, a Linux guest spends ~150 M instructions
 * gathering jitter entropy before it reaches init (docs/performance.md). */
#include <string.h>
#include <atomic.h>
#include <entropy.h>

#ifndef HOST_TEST
static uint64_t ticks_now(void)
{
	uint64_t t;

	asm volatile("rdtime %0" : "=r"(t));
	return t;
}
#else
uint64_t ticks_now(void);	/* tests/unit/test_entropy.c */
#endif

static uint32_t key[8];
static uint64_t draws;
static struct spinlock lock = SPINLOCK_INIT;

static uint32_t rotl(uint32_t v, int n)
{
	return (v << n) | (v >> (32 - n));
}

#define QR(a, b, c, d)                                   \
	do {                                             \
		a += b; d ^= a; d = rotl(d, 16);         \
		c += d; b ^= c; b = rotl(b, 12);         \
		a += b; d ^= a; d = rotl(d, 8);          \
		c += d; b ^= c; b = rotl(b, 7);          \
	} while (0)

void chacha20_block(const uint32_t k[8], uint32_t counter, const uint32_t nonce[3],
		    uint8_t out[64])
{
	uint32_t s[16] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 };
	uint32_t x[16];

	memcpy(&s[4], k, 32);
	s[12] = counter;
	memcpy(&s[13], nonce, 12);
	memcpy(x, s, sizeof(x));
	for (int i = 0; i < 10; i++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
	for (int i = 0; i < 16; i++) {
		uint32_t v = x[i] + s[i];

		out[4 * i] = (uint8_t)v;
		out[4 * i + 1] = (uint8_t)(v >> 8);
		out[4 * i + 2] = (uint8_t)(v >> 16);
		out[4 * i + 3] = (uint8_t)(v >> 24);
	}
}

void entropy_init(const uint8_t *seed, size_t len)
{
	uint8_t block[64];
	uint32_t nonce[3] = { 0 };
	uint64_t t = ticks_now();

	/* fold the seed into the key, then whiten it through one block */
	for (size_t i = 0; i < len; i++)
		((uint8_t *)key)[i % sizeof(key)] ^= seed[i];
	key[0] ^= (uint32_t)t;
	key[1] ^= (uint32_t)(t >> 32);
	chacha20_block(key, 0, nonce, block);
	memcpy(key, block, sizeof(key));
	memset(block, 0, sizeof(block));
}

void entropy_fresh(uint8_t *out, size_t len)
{
	uint64_t t = ticks_now(), n;
	uint32_t k[8], nonce[3];
	uint8_t block[64];

	spin_lock(&lock);
	n = ++draws;
	key[0] ^= (uint32_t)t;
	key[1] ^= (uint32_t)(t >> 32);
	nonce[0] = 2;	/* this use's domain (entropy_init() took nonce 0) */
	nonce[1] = (uint32_t)n;
	nonce[2] = (uint32_t)(n >> 32);
	memcpy(k, key, sizeof(k));
	/* block 0 is the next key; the output comes from blocks 1.. */
	chacha20_block(k, 0, nonce, block);
	memcpy(key, block, sizeof(key));
	spin_unlock(&lock);
	for (uint32_t ctr = 1; len; ctr++) {
		size_t m = MIN(len, sizeof(block));

		chacha20_block(k, ctr, nonce, block);
		memcpy(out, block, m);
		out += m;
		len -= m;
	}
	memset(k, 0, sizeof(k));
	memset(block, 0, sizeof(block));
	asm volatile("" : : "r"(k), "r"(block) : "memory");	/* keep the erasure */
}
