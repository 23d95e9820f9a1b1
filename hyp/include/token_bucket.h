/* SPDX-License-Identifier: MIT */
/* A token bucket (the rate limiter of a guest I/O device, as Firecracker's):
 * @size tokens at most, refilled at @rate tokens per second, a request for n
 * tokens passes only if n are there. Time is whatever clock the caller passes
 * (timebase ticks) at @hz ticks per second; it never runs backwards for a
 * bucket. Pure arithmetic in 64 bits (no libgcc), no lock: the device
 * model's lock covers it. Larger values are cut to the limits below, which
 * keep every product below 2^64: 2^40 tokens a second is 1 TiB/s.
 *
 * A request larger than the bucket passes once the bucket is full, and what
 * it takes beyond the bucket is owed: the refill pays the debt before the
 * bucket holds tokens again, so the rate holds for requests of any size (up
 * to TB_DEBT_MAX past the size: 256 GiB, more than any guest request). */
#ifndef HYP_TOKEN_BUCKET_H
#define HYP_TOKEN_BUCKET_H
#include <types.h>

#define TB_RATE_MAX	(1ull << 40)
#define TB_SIZE_MAX	(1ull << 38)
#define TB_DEBT_MAX	(1ull << 38)
#define TB_HZ_MAX	(1ull << 24)

struct token_bucket {
	uint64_t rate;		/* tokens per second; 0: no limit */
	uint64_t size;		/* most tokens held (the burst) */
	uint64_t tokens;
	uint64_t debt;		/* owed by an oversized request (tokens is then 0) */
	uint64_t hz;		/* the clock's ticks per second */
	uint64_t fill;		/* ticks that fill the bucket from empty */
	uint64_t last;		/* clock at the last refill */
	uint64_t frac;		/* refill remainder, in tokens * hz (nothing lost to rounding) */
};

/** tb_init() - a full bucket at @now; @rate 0 is a bucket that never limits.
 *  @size 0 means one second's worth of @rate. */
void tb_init(struct token_bucket *b, uint64_t rate, uint64_t size, uint64_t hz, uint64_t now);
/** tb_take() - take @n tokens at @now if all are there; false (nothing
 *  taken) if not. A request larger than the bucket passes once the bucket is
 *  full and leaves it empty and owing the rest (so one big request is never
 *  refused forever, and the next waits until it is paid for). */
bool tb_take(struct token_bucket *b, uint64_t n, uint64_t now);
/** tb_wait() - ticks from @now until tb_take(@n) would pass (0: now). */
uint64_t tb_wait(struct token_bucket *b, uint64_t n, uint64_t now);
#endif
