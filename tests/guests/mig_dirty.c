/* SPDX-License-Identifier: MIT */
/* Migration marker guest with a dirtying workload (tests/guests/test_migration.py):
 * it fills a region of mib MiB, prints "MIGRATE-READY", and then keeps
 * writing whole pages for wait_ms of guest time while the harness migrates
 * it (pre-copy rounds see it dirty pages all the time). Then it stops and
 * checks every page against what it recorded, on whichever host it ended.
 *
 * The region is split between the vCPUs (each hart its own half, its own
 * pseudo-random sequence of pages). A write is "step s of hart h": page p
 * gets the content of generation s (gen_content(): 512 words derived from
 * p and s; every 5th generation is an all-zero page, so zero pages come and
 * go too), then rec[p] = s and writes[p]++ (tables in the guest's RAM: they
 * migrate like the pages). At the end:
 *  - every page holds exactly the content of its recorded generation: a
 *    page (or a zeroing) the migration lost, or a stale record, fails;
 *  - the memory checksum equals the checksum computed from the records;
 *  - the per-page write counts add up to each hart's steps, and each hart's
 *    last step is the highest record in its half (a page and its record lost
 *    together still fail this);
 *  - guest time never went backwards (rdtime checked every page write); the
 *    longest gap between two checks is printed (the downtime the guest saw).
 * On bare QEMU (no migration) the same checks pass.
 * Bootargs: wait_ms=N (8000) how long the writing goes on; mib=N (8) region
 * size; delay_us=N (0) guest time between two writes of a vCPU (a slower
 * writer: the pre-copy converges); corrupt=1 flips one word behind the records' back at the end (the
 * checks must then fail: a test of the checker).
 */
#include "libguest.h"

#define T		"migdirty"
#define PAGE		4096UL
#define WORDS		(PAGE / 8)
#define SZ_2M		(2UL << 20)
#define MAX_MIB		32
#define MAX_PAGES	(MAX_MIB * (1UL << 20) / PAGE)
#define NHALF		2

extern char __image_end[];

static uint64_t rec[MAX_PAGES];		/* generation (step) last written */
static uint32_t writes[MAX_PAGES];	/* how many times written */

static struct half {
	unsigned long first, pages;	/* its pages: [first, first + pages) */
	unsigned long steps;		/* writes done */
	unsigned long backwards;	/* rdtime went back between two checks */
	unsigned long longest;		/* longest gap between two checks (ticks) */
	unsigned long hart;
	volatile unsigned long done;
} halves[NHALF];

static uintptr_t base;
static unsigned long delay;		/* ticks between two writes of a hart */
static volatile unsigned long stop, started1;

static inline uint64_t *page_at(unsigned long p)
{
	return (uint64_t *)(base + p * PAGE);
}

/* The seed of generation @g of page @p; 0: the page is all zero.
 * Generation 0 is the fill: two pages in three non-zero. */
static inline uint64_t gen_seed(unsigned long p, uint64_t g)
{
	if (g == 0)
		return p % 3 ? mix64((uint64_t)p << 40 | 0xf111) | 1 : 0;
	return g % 5 == 0 ? 0 : mix64((uint64_t)p << 40 ^ g) | 1;
}

static inline uint64_t gen_word(uint64_t seed, unsigned long i)
{
	return seed ? seed ^ (i * 0x9e3779b97f4a7c15ULL) : 0;
}

static void write_page(unsigned long p, uint64_t g)
{
	uint64_t seed = gen_seed(p, g), *dst = page_at(p);

	for (unsigned long i = 0; i < WORDS; i++)
		dst[i] = gen_word(seed, i);
	/* the page first, then its record: both migrate, in any order */
	WRITE_ONCE(rec[p], g);
	WRITE_ONCE(writes[p], writes[p] + 1);
}

/* Write pages of @h at random (generation = step number) until stop, or
 * with @wait until @wait ticks after @t0 (then it says stop). */
static void dirty_loop(struct half *h, unsigned long t0, unsigned long wait)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ h->first;
	unsigned long last = rdtime(), now;

	while (!READ_ONCE(stop)) {
		x = mix64(x + 1);
		write_page(h->first + x % h->pages, ++h->steps);
		now = rdtime();
		if (now < last)
			h->backwards++;
		else if (now - last > h->longest)
			h->longest = now - last;
		last = now;
		if (wait && now - t0 >= wait)
			WRITE_ONCE(stop, 1);
		if (delay)
			while (rdtime() - now < delay)
				cpu_relax();
	}
	WRITE_ONCE(h->done, 1);
}

static void other_main(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	WRITE_ONCE(started1, 1);
	dirty_loop(&halves[opaque], 0, 0);
}

static void verify(struct half *h, uint64_t *sum_mem, uint64_t *sum_rec)
{
	unsigned long bad = 0, first_bad = -1UL, sum_writes = 0, top = 0;
	char what[96];

	for (unsigned long p = h->first; p < h->first + h->pages; p++) {
		uint64_t seed = gen_seed(p, rec[p]), *src = page_at(p);
		bool ok = true;

		for (unsigned long i = 0; i < WORDS; i++) {
			uint64_t want = gen_word(seed, i);

			*sum_mem = mix64(*sum_mem ^ src[i]);
			*sum_rec = mix64(*sum_rec ^ want);
			ok &= src[i] == want;
		}
		if (!ok && bad++ == 0)
			first_bad = p;
		sum_writes += writes[p];
		if (rec[p] > top)
			top = rec[p];
	}
	if (bad)
		report_info(T, "hart %lu: first bad page %lu at 0x%lx, recorded generation %lu",
			    h->hart, first_bad, (unsigned long)page_at(first_bad),
			    (unsigned long)rec[first_bad]);
	snprintf(what, sizeof(what), "hart %lu: pages not holding their recorded generation",
		 h->hart);
	check_eq(T, what, bad, 0);
	/* the fill wrote each page once, as generation 0 (not a step) */
	snprintf(what, sizeof(what), "hart %lu: writes per page add up to its steps + fill",
		 h->hart);
	check_eq(T, what, sum_writes, h->steps + h->pages);
	snprintf(what, sizeof(what), "hart %lu: its last step is the highest record", h->hart);
	check_eq(T, what, top, h->steps);
	snprintf(what, sizeof(what), "hart %lu: guest time never went backwards", h->hart);
	check_eq(T, what, h->backwards, 0);
	report_info(T, "hart %lu: %lu page writes, longest gap %lu us", h->hart, h->steps,
		    ticks_to_us(h->longest));
}

void test_main(unsigned long self)
{
	unsigned long wait = us_to_ticks(bootarg_ulong("wait_ms", 8000) * 1000);
	unsigned long mib = bootarg_ulong("mib", 8);
	unsigned long pages = mib * (1UL << 20) / PAGE, other = other_hartid();
	unsigned long nh = other != -1UL && other < MAX_HARTS ? 2 : 1, t_ready;
	uint64_t sum_mem = 0, sum_rec = 0;

	delay = us_to_ticks(bootarg_ulong("delay_us", 0));
	base = ((uintptr_t)__image_end + 2 * SZ_2M - 1) & ~(SZ_2M - 1);
	if (!mib || mib > MAX_MIB || base + mib * (1UL << 20) > env.ram_base + env.ram_size) {
		report_fail(T, "region of %lu MiB at 0x%lx (got RAM 0x%lx+0x%lx, want room, "
			    "at most %d MiB)", mib, (unsigned long)base,
			    (unsigned long)env.ram_base, (unsigned long)env.ram_size, MAX_MIB);
		return;
	}
	csr_clear(sstatus, SR_SIE);
	csr_write(sie, 0);
	for (unsigned long i = 0; i < nh; i++) {
		halves[i].first = i * (pages / nh);
		halves[i].pages = i + 1 == nh ? pages - halves[i].first : pages / nh;
		halves[i].hart = i ? other : self;
	}
	for (unsigned long p = 0; p < pages; p++)
		write_page(p, 0);	/* the fill: generation 0 */
	if (nh == 2) {
		check_eq(T, "start vCPU 1", hart_start(other, other_main, 1), SBI_SUCCESS);
		wait_for(READ_ONCE(started1), 1000000);
	}
	t_ready = rdtime();
	printf("MIGRATE-READY %lu MiB at 0x%lx, %lu vCPU(s)\n", mib, (unsigned long)base, nh);
	dirty_loop(&halves[0], t_ready, wait);
	if (nh == 2 && !wait_for(READ_ONCE(halves[1].done), 1000000))
		report_fail(T, "vCPU 1 stops writing (got no stop, want it within 1 s)");
	if (bootarg_ulong("corrupt", 0))
		page_at(halves[0].first + 1)[7] ^= 1;	/* behind the records' back */
	for (unsigned long i = 0; i < nh; i++)
		verify(&halves[i], &sum_mem, &sum_rec);
	printf("MIGDIRTY checksum %lx\n", (unsigned long)sum_mem);
	check_eqx(T, "memory checksum matches the records' checksum", sum_mem, sum_rec);
}
