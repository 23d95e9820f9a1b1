/* SPDX-License-Identifier: MIT */
/* Per-VM random seeds derived from the host's /chosen/rng-seed. */
#ifndef HYP_ENTROPY_H
#define HYP_ENTROPY_H
#include <types.h>

/** entropy_init() - key the generator with the host seed (and boot-time jitter). */
void entropy_init(const uint8_t *seed, size_t len);
/** entropy_fill() - @len bytes for the stream named by @stream (e.g. VM and boot);
 *  different streams are independent, and none reveals the host seed. */
void entropy_fill(uint64_t stream, uint8_t *out, size_t len);
/** chacha20_block() - one ChaCha20 block (RFC 8439): key, counter, 96-bit nonce. */
void chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
		    uint8_t out[64]);
#endif
