/* SPDX-License-Identifier: MIT */
/* Dirtier: a guest that computes and writes memory, and reports how much
 * work it gets done per unit of guest time. `make bench` (scripts/bench.py,
 * live_snapshot()) takes snapshots of it while it runs, to measure what a
 * snapshot costs a running guest.
 *
 * Work: one iteration mixes a 64-bit state (a few multiplies, shifts, xors)
 * and stores the results as one 64-byte line into the next page of a region
 * of mib MiB, so every 2 MiB chunk of the region is written every sweep
 * (a 16 MiB sweep is ~4096 iterations, about 0.2 ms): a live snapshot
 * write-protects the region, and the first write to each chunk not yet sent
 * takes a guest-page fault in which Carapace copies the chunk first.
 *
 * Guest time is cut into windows of win_us (rdtime, checked every BATCH
 * iterations). Each window prints, as it ends:
 *   DIRTY <window> <iterations> <ticks> <stolen ticks> <longest gap ticks>
 * where stolen counts the rdtime jumps between two checks longer than
 * gap_us (time the vCPU did not run this loop: the hypervisor, another hart
 * under -icount, a pause). Iterations per tick is the throughput.
 *
 * Knobs (bootargs): mib=N (16) region size; win_us=W (1000) window length;
 * windows=K (500) how many; gap_us=G (10) see above. Runs on bare QEMU too.
 */
#include "libguest.h"

#define T	"dirtier"
#define BATCH	16			/* iterations between two rdtime */
#define SZ_2M	(2UL << 20)
#define PAGE	4096UL

extern char __image_end[];

void test_main(unsigned long hartid)
{
	unsigned long mib = bootarg_ulong("mib", 16);
	unsigned long win = us_to_ticks(bootarg_ulong("win_us", 1000));
	unsigned long windows = bootarg_ulong("windows", 500);
	unsigned long gap = us_to_ticks(bootarg_ulong("gap_us", 10));
	uintptr_t base = ((uintptr_t)__image_end + 2 * SZ_2M - 1) & ~(SZ_2M - 1);
	unsigned long pages = mib * (1UL << 20) / PAGE;
	unsigned long page = 0, line = 0, now;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	(void)hartid;
	if (!mib || !win || base + mib * (1UL << 20) + 2 * SZ_2M > env.ram_base + env.ram_size) {
		report_fail(T, "region of %lu MiB at 0x%lx does not fit in RAM "
			    "(got 0x%lx+0x%lx, want room)", mib, (unsigned long)base,
			    (unsigned long)env.ram_base, (unsigned long)env.ram_size);
		return;
	}
	csr_clear(sstatus, SR_SIE);	/* nothing but this loop runs in the guest */
	csr_write(sie, 0);
	/* touch every page first: no first-touch fault while measuring */
	for (unsigned long p = 0; p < pages; p++)
		*(volatile uint64_t *)(base + p * PAGE) = p + 1;
	printf("DIRTY ready %lu MiB at 0x%lx, %lu windows of %lu ticks\n", mib,
	       (unsigned long)base, windows, win);

	/* windows are back to back: a window's printf is in the next one */
	now = rdtime();
	for (unsigned long w = 0; w < windows; w++) {
		unsigned long start = now, end = start + win, last = start;
		unsigned long iters = 0, stolen = 0, longest = 0;

		do {
			for (unsigned int i = 0; i < BATCH; i++) {
				uint64_t *dst = (uint64_t *)(base + page * PAGE + line * 64);

				x = mix64(x + page);
				dst[0] = x;
				dst[1] = x ^ (x >> 7);
				dst[2] = x + 1;
				dst[3] = x * 3;
				dst[4] = ~x;
				dst[5] = x << 1;
				dst[6] = x >> 1;
				dst[7] = x ^ page;
				if (++page == pages) {
					page = 0;
					line = (line + 1) % (PAGE / 64);
				}
			}
			iters += BATCH;
			now = rdtime();
			if (now - last > gap) {
				stolen += now - last;
				if (now - last > longest)
					longest = now - last;
			}
			last = now;
		} while (now < end);
		printf("DIRTY %lu %lu %lu %lu %lu\n", w, iters, now - start, stolen, longest);
	}
	report_info(T, "done, checksum %lx", (unsigned long)x);
}
