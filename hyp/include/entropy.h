/* SPDX-License-Identifier: MIT */
/* Fresh random bytes for guests, from the host's /chosen/rng-seed onwards. */
#ifndef HYP_ENTROPY_H
#define HYP_ENTROPY_H
#include <types.h>

/** entropy_init() - key the generator with the host seed (and boot-time jitter). */
void entropy_init(const uint8_t *seed, size_t len);
/** entropy_fresh() - @len bytes no earlier call gave and no later one will
 *  (a count that never repeats while the host runs, the time of the call, a
 *  key moved forward by each call); none reveals the host seed or another. */
void entropy_fresh(uint8_t *out, size_t len);
/** chacha20_block() - one ChaCha20 block (RFC 8439): key, counter, 96-bit nonce. */
void chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
		    uint8_t out[64]);
#endif
