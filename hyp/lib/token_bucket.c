/* SPDX-License-Identifier: MIT */
/* Token buckets for guest I/O rate limits (token_bucket.h). */
#include <token_bucket.h>

static uint64_t clamp(uint64_t v, uint64_t max)
{
	return v > max ? max : v;
}

void tb_init(struct token_bucket *b, uint64_t rate, uint64_t size, uint64_t hz, uint64_t now)
{
	b->rate = clamp(rate, TB_RATE_MAX);
	b->size = clamp(size ? size : b->rate, TB_SIZE_MAX);
	if (b->rate && !b->size)
		b->size = 1;
	b->tokens = b->size;
	b->hz = clamp(hz ? hz : 1, TB_HZ_MAX);
	b->fill = b->rate ? (b->size * b->hz + b->rate - 1) / b->rate : 0;
	b->last = now;
	b->frac = 0;
}

/* Add what the time since the last refill earned, capped at the size. The
 * time counted is capped at what fills the bucket from empty, so that
 * elapsed * rate stays below size * hz + rate: no 64-bit product wraps
 * however long the bucket sat idle (the limits in token_bucket.h). */
static void refill(struct token_bucket *b, uint64_t now)
{
	uint64_t elapsed, earned;

	if (now <= b->last)
		return;		/* a clock that did not move (or a caller's stale one) */
	elapsed = now - b->last;
	b->last = now;
	if (elapsed >= b->fill) {
		b->tokens = b->size;
		b->frac = 0;
		return;
	}
	earned = elapsed * b->rate + b->frac;
	if (earned / b->hz >= b->size - b->tokens) {
		b->tokens = b->size;
		b->frac = 0;
		return;
	}
	b->tokens += earned / b->hz;
	b->frac = earned % b->hz;
}

/* The bucket can give @n: it holds them, or @n is more than it can ever hold
 * and it is full (the oversized request goes through on a full bucket). */
static bool can_take(const struct token_bucket *b, uint64_t n)
{
	return b->tokens >= n || (n > b->size && b->tokens == b->size);
}

bool tb_take(struct token_bucket *b, uint64_t n, uint64_t now)
{
	if (!b->rate)
		return true;
	refill(b, now);
	if (!can_take(b, n))
		return false;
	b->tokens -= n < b->tokens ? n : b->tokens;
	return true;
}

uint64_t tb_wait(struct token_bucket *b, uint64_t n, uint64_t now)
{
	uint64_t want, need;

	if (!b->rate)
		return 0;
	refill(b, now);
	if (can_take(b, n))
		return 0;
	want = n > b->size ? b->size : n;
	/* tokens short, in tokens * hz, less the remainder already earned;
	 * rounded up so that the bucket holds them at the returned time */
	need = (want - b->tokens) * b->hz - b->frac;
	return (need + b->rate - 1) / b->rate;
}
