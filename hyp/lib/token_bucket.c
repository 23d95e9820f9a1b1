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
	b->debt = 0;
	b->hz = clamp(hz ? hz : 1, TB_HZ_MAX);
	b->fill = b->rate ? (b->size * b->hz + b->rate - 1) / b->rate : 0;
	b->last = now;
	b->frac = 0;
}

static void fill_up(struct token_bucket *b)
{
	b->tokens = b->size;
	b->debt = 0;
	b->frac = 0;
}

/* Add what the time since the last refill earned: the debt is paid first,
 * then the bucket fills, up to its size. Whole seconds and the rest are
 * counted apart, and whole seconds only up to what pays everything, so no
 * 64-bit product wraps however long the bucket sat idle (need <= 2^39,
 * rest * rate < hz * rate <= 2^64 - 2^40: the limits in token_bucket.h). */
static void refill(struct token_bucket *b, uint64_t now)
{
	uint64_t elapsed, whole, scaled, earned, need;

	if (now <= b->last)
		return;		/* a clock that did not move (or a caller's stale one) */
	elapsed = now - b->last;
	b->last = now;
	need = b->debt + (b->size - b->tokens);
	whole = elapsed / b->hz;
	if (whole > need / b->rate) {
		fill_up(b);
		return;
	}
	scaled = (elapsed % b->hz) * b->rate + b->frac;
	earned = whole * b->rate + scaled / b->hz;
	if (earned >= need) {
		fill_up(b);
		return;
	}
	b->frac = scaled % b->hz;
	if (earned <= b->debt) {
		b->debt -= earned;
	} else {
		b->tokens += earned - b->debt;
		b->debt = 0;
	}
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
	if (n <= b->tokens) {
		b->tokens -= n;
	} else {
		/* oversized, on a full bucket: the rest is owed */
		b->debt = clamp(n - b->tokens, TB_DEBT_MAX);
		b->tokens = 0;
	}
	return true;
}

uint64_t tb_wait(struct token_bucket *b, uint64_t n, uint64_t now)
{
	uint64_t want, lack, whole, part;

	if (!b->rate)
		return 0;
	refill(b, now);
	if (can_take(b, n))
		return 0;
	want = n > b->size ? b->size : n;
	/* tokens short (the debt first), earned in lack * hz / rate ticks less
	 * the remainder already earned, rounded up so that the bucket holds
	 * them at the returned time; lack < 2^40, so whole * hz cannot wrap */
	lack = b->debt + want - b->tokens;
	whole = lack / b->rate * b->hz;
	part = lack % b->rate * b->hz;
	if (part >= b->frac)
		return whole + (part - b->frac + b->rate - 1) / b->rate;
	return whole - (b->frac - part) / b->rate;
}
