/* SPDX-License-Identifier: MIT */
/* The source side of a live migration (docs/migration.md), a piece at a time
 * from the host services' poll on hart 0:
 *   negotiate: our header; the destination's CAPS; CONFIG or ABORT; ACCEPT,
 *              whose flag chooses the disks' mode; in copy mode, DISK_LAYOUT.
 *   pre-copy:  round 1 sends every non-zero page while the guest runs with
 *              4 KiB dirty logging; each later round the pages written since.
 *              In copy mode each round then sends the disks' blocks the same
 *              way (disk_save_*(): blocks written since, at completion).
 *   switchover: once what a round left would go within the downtime limit
 *              at the rate the stream moved so far (or few pages are left,
 *              or the round limit), pause the VM (its disks drained), send
 *              the rest of the
 *              pages and blocks; in shared mode flush the disks (the
 *              destination writes them from END on); the vCPUs, the
 *              devices, END.
 *   confirm:   RUNNING from the destination: destroy our copy, send DONE.
 * Until END has gone out whole, any failure resumes the VM as it was (the
 * destination cannot run it without END). From then on only the
 * destination's ABORT resumes it: a broken or silent stream leaves it
 * paused here, marked left-unconfirmed, since the destination may run it.
 * It never runs twice; the operator decides on the copy left behind. */
#include <arch/riscv/encoding.h>
#include <string.h>
#include <errno.h>
#include <bitops.h>
#include <cfi.h>
#include <dirty_limit.h>
#include <disk_stream.h>
#include <guest_mem.h>
#include <hart.h>
#include <log.h>
#include <migrate.h>
#include <mm.h>
#include <printf.h>
#include <snapshot.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_io.h>
#include <vm_lifecycle.h>
#include <vsbi.h>
#include "mig_wire.h"

#define POLL_BUDGET_US	2000
#define RUN_PAGES	64	/* pages per MEMORY run: ~1 ms of CRC on hart 0 */
#define STREAM_RATE_MIN_BYTES	(1U << 20)	/* a round's own rate from this on */
#define STATE_BYTES	(64U << 10)	/* vCPUs, devices, the sections' headers */

enum phase { S_IDLE, S_CAPS, S_ACCEPT, S_LAYOUT, S_ROUND, S_PAUSING, S_STATE, S_RUNNING,
	     S_DONE };

/* Where a round, or the stop-and-copy, is: its pages, then its blocks. */
enum part { P_PAGES, P_BLOCKS, P_FLUSH, P_STATE };

static struct {
	enum phase phase;
	struct vm *vm;
	const struct mig_host_ops *ops;
	mig_done_fn done;
	struct mig_send_opts opts;
	struct section_tx tx;
	struct section_rx rx;
	uint32_t boot_count;
	char name[VM_NAME_LEN];		/* the VM is gone when the last poll ends */
	bool logging, we_paused, paused;
	bool peer_gave_up;		/* it sent ABORT: none goes back */
	bool end_out;			/* END went out whole: the destination may run it */
	/* pages to send this round, a bit per page, and where the scan is */
	uint64_t *work;
	uint64_t work_bytes, next_page;
	hpa_t buf;			/* a run copied out of guest RAM */
	uint32_t round, precopy_rounds;
	uint64_t round_pages, pages;
	uint64_t last_dirty;		/* the round before's dirty pages (and blocks, in pages) */
	uint64_t round_start, round_bytes0;	/* when and where this round began */
	uint64_t precopy_start, precopy_bytes0;	/* the same for round 1 */
	uint64_t expected;		/* ticks the downtime would take, last estimate */
	uint64_t pace;			/* pages/s the guest is held to (0: not) */
	bool pacing;			/* the pacer (dirty_limit) is on: off in release() */
	uint64_t holds, held_ticks;	/* its vCPUs' holds, as release() found them */
	/* the disks: copy mode (ACCEPT's flag) moves their blocks */
	bool copy_disks, disks_on;	/* disks_on: disk_save_begin() held */
	unsigned int nr_disks, next_layout;
	enum part part;
	uint64_t round_blocks, disk_blocks, disk_bytes, disk_dirty;
	unsigned int flush_disk;	/* shared mode: the next disk to flush */
	bool flush_sent;
	struct vm_disk_req flush_req;
	unsigned int index;		/* piece of the state being staged (snap_emit.c) */
	uint64_t start, pause_at, paused_at, downtime, peer_downtime;
	char err[320];
	const char *code;
} ms;

bool mig_sending(const struct vm *vm)
{
	return ms.phase != S_IDLE && ms.vm == vm;
}

bool mig_send_active;

static uint64_t ticks_us(uint64_t t)
{
	return t * 1000000 / timebase_hz;
}

static uint64_t nr_pages(void)
{
	return ms.vm->cfg.ram_size / SNAP_PAGE_SIZE;
}

static void release(void)
{
	if (ms.pacing) {
		ms.holds = dirty_limit.holds;
		ms.held_ticks = dirty_limit.held_ticks;
		dirty_limit_set(&dirty_limit, ms.vm, 0, timebase_hz, time_now());
		ms.pacing = false;
	}
	if (ms.logging)
		vm_dirty_log_stop(ms.vm);
	ms.logging = false;
	if (ms.disks_on)
		disk_save_end();	/* waits for a read under way */
	ms.disks_on = false;
	if (ms.work)
		mm_free((hpa_t)(uintptr_t)ms.work, ms.work_bytes);
	if (ms.buf)
		mm_free(ms.buf, RUN_PAGES * SNAP_PAGE_SIZE);
	ms.work = NULL;
	ms.buf = 0;
}

static void finish(bool ok)
{
	struct mig_result r = {
		.err = ok ? NULL : ms.err, .code = ok ? NULL : ms.code,
		.vm_name = ms.name, .bytes = ms.tx.bytes, .pages = ms.pages,
		.rounds = ms.precopy_rounds, .total_ticks = time_now() - ms.start,
		.downtime_ticks = ms.downtime, .peer_downtime_ticks = ms.peer_downtime,
		.disk_mode = !ms.nr_disks ? "none" : ms.copy_disks ? "copy" : "shared",
		.disk_blocks = ms.disk_blocks, .disk_bytes = ms.disk_bytes,
		.expected_downtime_ticks = ms.expected, .dirty_limit = ms.pace,
		.dirty_holds = ms.holds, .dirty_held_ticks = ms.held_ticks,
	};
	mig_done_fn done = ms.done;

	ms.phase = S_IDLE;
	mig_send_active = false;
	ms.vm = NULL;
	if (done)
		done(&r);
}

/* Give up before the destination runs the guest: our VM goes on unchanged. */
/* A pause the switchover asked for that had not finished when the migration
 * failed: resume the VM once it has (paused() sees it, ms being over). */
static struct vm *orphan_pause;

/* The stream ended after END went out without RUNNING or ABORT: the
 * destination may run the VM, so this copy stays paused, marked. */
static void leave_unconfirmed(const char *why)
{
	struct vm *vm = ms.vm;

	snprintf(ms.err, sizeof(ms.err), "%s after the VM's whole state had gone to the "
		 "destination: it may run the VM there. This copy stays paused (left-unconfirmed): "
		 "destroy it once the destination lists the VM, resume it if the destination "
		 "does not have it", why);
	ms.code = "unconfirmed";
	release();
	vm->mig_unconfirmed = VM_MIG_LEFT;
	pr_info("vm %s: migration unconfirmed (%s): paused here, left-unconfirmed; the "
		"destination may run it: destroy this copy if it does, resume it if not",
		vm->cfg.name, why);
	finish(false);
}

static void fail(const char *code, const char *why)
{
	struct vm *vm = ms.vm;

	if (ms.end_out && !ms.peer_gave_up)
		return leave_unconfirmed(why);
	snprintf(ms.err, sizeof(ms.err), "%s", why);
	ms.code = code;
	if (ms.phase == S_PAUSING && ms.we_paused && !ms.paused)
		orphan_pause = vm;
	release();
	ms.vm = NULL;		/* no longer held: resume is allowed */
	if (ms.we_paused && vm->state == VM_PAUSED && !ms.ops->resume(vm))
		pr_info("vm %s: resumed here: the migration failed", vm->cfg.name);
	ms.vm = vm;
	/* tell the destination, if a whole message still fits the stream */
	if (!ms.peer_gave_up && section_tx_idle(&ms.tx) && snap_port_ready()) {
		mig_tx_abort(&ms.tx, code, why);
		section_tx_push(&ms.tx);
	}
	finish(false);
}

/* CAPS: would the guest lose anything it was given on the destination? */
static const char *caps_refusal(const struct mig_caps *c, const char **code)
{
	const struct vm *vm = ms.vm;
	uint32_t lost = vm->cfg.features & ~c->features, fwft = 0;

	*code = "no-cfi";
	if (lost & SNAP_FEAT_ZICFISS)
		return "the destination cannot give shadow stacks (Zicfiss), which this guest "
		       "was given: it would lose its protection";
	if (lost & SNAP_FEAT_ZICFILP)
		return "the destination cannot give landing pads (Zicfilp), which this guest "
		       "was given: it would lose its protection";
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		const struct cfi_fwft *f = &vm->vcpus[i].g.fwft;

		if (f->lp_value || f->lp_locked)
			fwft |= MIG_FWFT_LANDING_PAD;
		if (f->ss_value || f->ss_locked)
			fwft |= MIG_FWFT_SHADOW_STACK;
	}
	if (fwft & ~c->fwft)
		return "the destination's SBI FWFT cannot set LANDING_PAD/SHADOW_STACK, which "
		       "this guest uses: it would lose its protection";
	*code = "no-feature";
	if (lost & SNAP_FEAT_AIA)
		return "the guest uses AIA (an IMSIC per vCPU and an APLIC); the destination's CPU "
		       "has no Ssaia";
	if (lost)
		return "the destination lacks an extension this guest was given";
	if (!(c->policies & MIG_POLICY_BIT(vm->cfg.cfi_policy)))
		return "the destination does not offer this guest's CFI policy";
	if (c->sbi_version < VSBI_SPEC_VERSION)
		return "the destination's SBI is older than the one this guest sees";
	if (c->max_vcpus < vm->cfg.nr_vcpus)
		return "the destination cannot give this many vCPUs";
	if (c->vs_sv < vm->cfg.vs_sv)
		return "the destination's CPU lacks the paging mode (Sv48/Sv57) this guest was given";
	*code = "refused";
	if (c->timebase_hz != timebase_hz)
		return "the destination's timebase differs: guest time would change its rate";
	*code = "no-memory";
	if (c->free_mem < vm->cfg.ram_size + vm_meta_size(vm->cfg.ram_size))
		return "the destination has too little free memory for this guest";
	return NULL;
}

int mig_send_start(struct vm *vm, const struct mig_send_opts *opts,
		   const struct mig_host_ops *ops, mig_done_fn done)
{
	if (ms.phase != S_IDLE)
		return -HYP_EBUSY;
	if (!snap_port_ready())
		return -HYP_ENOENT;
	memset(&ms, 0, sizeof(ms));
	ms.vm = vm;
	memcpy(ms.name, vm->cfg.name, sizeof(ms.name));
	ms.ops = ops;
	ms.done = done;
	ms.opts = *opts;
	ms.boot_count = vm->cfg.boot_count;
	ms.start = time_now();
	while (ms.nr_disks < VM_MAX_DISKS && vm_io_disk_sectors(vm, ms.nr_disks))
		ms.nr_disks++;
	ms.work_bytes = ALIGN_UP(vm->cfg.ram_size / SNAP_PAGE_SIZE / 8, PAGE_SIZE);
	ms.work = (uint64_t *)(uintptr_t)mm_alloc(ms.work_bytes, PAGE_SIZE);
	ms.buf = mm_alloc_raw(RUN_PAGES * SNAP_PAGE_SIZE, PAGE_SIZE);
	if (!ms.work || !ms.buf) {
		release();
		return -HYP_ENOMEM;
	}
	snap_port_drain();
	section_tx_reset(&ms.tx);
	mig_rx_reset(&ms.rx);
	mig_tx_header(&ms.tx);
	ms.phase = S_CAPS;
	mig_send_active = true;
	return 0;
}

static bool test_bit(const uint64_t *map, uint64_t i)
{
	return map[i / 64] & (1UL << (i % 64));
}

static bool page_is_zero(const uint8_t *page)
{
	const uint64_t *p = (const uint64_t *)page;

	for (unsigned int i = 0; i < SNAP_PAGE_SIZE / 8; i++)
		if (p[i])
			return false;
	return true;
}

static const uint8_t *guest_page(uint64_t p)
{
	return (const uint8_t *)(uintptr_t)(ms.vm->ram_hpa + p * SNAP_PAGE_SIZE);
}

/* Round 1: every page of every mapped chunk (the rest is zero everywhere). */
static void work_all_populated(void)
{
	uint64_t per_chunk = VM_RAM_CHUNK / SNAP_PAGE_SIZE;

	memset(ms.work, 0, ms.work_bytes);
	for (uint64_t c = 0; c < ms.vm->cfg.ram_size / VM_RAM_CHUNK; c++)
		if (test_bit(ms.vm->populated, c))
			memset((uint8_t *)ms.work + c * per_chunk / 8, 0xff, per_chunk / 8);
}

static uint64_t work_count(void)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < nr_pages() / 64; i++)
		n += bit_count(ms.work[i]);
	return n;
}

/* Stage the next run of this round's pages: non-zero ones as MEMORY (copied
 * first: the guest may write them meanwhile, and the CRC must match what
 * goes out), zero ones as ZERO after round 1. False when the round is done. */
static bool stage_run(void)
{
	uint64_t p = ms.next_page, n = nr_pages();

	for (;;) {
		uint64_t first, count = 0;
		bool zero;

		while (p < n && !ms.work[p / 64] && !(p % 64))
			p += 64;
		while (p < n && !test_bit(ms.work, p))
			p++;
		if (p >= n) {
			ms.next_page = p;
			return false;
		}
		first = p;
		zero = page_is_zero(guest_page(p));
		while (p < n && count < RUN_PAGES && test_bit(ms.work, p) &&
		       (p == first || page_is_zero(guest_page(p)) == zero)) {
			ms.work[p / 64] &= ~(1UL << (p % 64));
			if (!zero)
				memcpy((uint8_t *)(uintptr_t)ms.buf + count * SNAP_PAGE_SIZE,
				       guest_page(p), SNAP_PAGE_SIZE);
			count++;
			p++;
		}
		ms.next_page = p;
		if (zero && ms.round == 1)
			continue;	/* the destination's RAM starts zero */
		if (zero) {
			struct mig_zero z = { ms.vm->cfg.ram_gpa + first * SNAP_PAGE_SIZE, count };

			section_tx_small(&ms.tx, MIG_SEC_ZERO, 0, &z, sizeof(z));
		} else {
			section_tx_pages(&ms.tx, ms.vm->cfg.ram_gpa + first * SNAP_PAGE_SIZE, count,
					 (const void *)(uintptr_t)ms.buf);
		}
		ms.round_pages += count;
		ms.pages += count;
		return true;
	}
}

/* The next DISK section of this round (copy mode). */
static enum disk_save_step stage_block(void)
{
	const char *why;
	enum disk_save_step st = disk_save_next(&ms.tx, &why);

	if (st == DS_STAGED) {
		ms.round_blocks++;
		ms.disk_blocks++;
		ms.disk_bytes = disk_save_bytes();
	} else if (st == DS_FAILED) {
		fail("disk-io", why);
	}
	return st;
}

/* Shared mode, the VM paused and drained: FLUSH each disk it can write, one
 * after the other, so the destination, which writes them from END on, finds
 * every write the guest saw complete. True while one is under way. */
static bool flushing(void)
{
	while (ms.flush_disk < ms.nr_disks) {
		unsigned int i = ms.flush_disk;
		int rc;

		if (ms.flush_sent) {
			vm_io_disk_poll(ms.vm, i);
			if (!__atomic_load_n(&ms.flush_req.done, __ATOMIC_ACQUIRE))
				return true;
			ms.flush_sent = false;
			if (ms.flush_req.status != VIRTIO_BLK_S_OK) {
				fail("disk-io", "a disk failed its flush before the switchover");
				return true;
			}
			ms.flush_disk++;
			continue;
		}
		if (vm_io_disk_read_only(ms.vm, i)) {
			ms.flush_disk++;
			continue;
		}
		rc = vm_io_disk_flush(ms.vm, i, &ms.flush_req);
		if (rc == -HYP_EBUSY)
			return true;	/* the host ring is full: again */
		if (rc) {
			fail("disk-io", "a disk refused its flush before the switchover");
			return true;
		}
		ms.flush_sent = true;
	}
	return false;
}

static void paused(void *ctx, struct vm *vm, uint64_t result)
{
	(void)ctx;
	(void)result;
	if (vm == orphan_pause) {
		orphan_pause = NULL;
		if (vm->state == VM_PAUSED && !ms.ops->resume(vm))
			pr_info("vm %s: resumed here: the migration failed", vm->cfg.name);
		return;
	}
	if (ms.phase != S_PAUSING || vm != ms.vm)
		return;
	if (vm->state != VM_PAUSED)
		return fail("bad-state", "the VM went down before the switchover");
	ms.paused = true;	/* the poll stages SWITCHOVER once the port took the rest */
}

/* The VM is off every hart: the last writes (the hypervisor's included),
 * then SWITCHOVER and the rest. */
static void switchover(void)
{
	struct vm *vm = ms.vm;
	uint64_t *more = (uint64_t *)(uintptr_t)mm_alloc(ms.work_bytes, PAGE_SIZE);
	/* a VM its operator paused stays paused there (we did not pause it) */
	struct mig_switchover s = { time_now() + vm->htimedelta, ms.round,
				    ms.we_paused ? 0 : MIG_SWITCHOVER_PAUSED };

	if (!more)
		return fail("no-memory", "no memory for the final dirty map");
	vm_dirty_log_take(vm, more, true);
	for (uint64_t i = 0; i < nr_pages() / 64; i++)
		ms.work[i] |= more[i];
	mm_free((hpa_t)(uintptr_t)more, ms.work_bytes);
	section_tx_small(&ms.tx, MIG_SEC_SWITCHOVER, 0, &s, sizeof(s));
	ms.paused_at = time_now();
	pr_info("vm %s: switchover: paused in %lu us, %lu pages left", ms.name,
		(unsigned long)ticks_us(ms.paused_at - ms.pause_at), (unsigned long)work_count());
	ms.precopy_rounds = ms.round;
	ms.round++;		/* the final pages: ZERO where zero now */
	ms.round_pages = 0;
	ms.next_page = 0;
	ms.index = 0;
	ms.part = P_PAGES;
	if (ms.disks_on)
		disk_save_round(false);	/* the blocks written since: all done now */
	ms.phase = S_STATE;
}

/* Bytes a second the stream has moved: the last round's rate once it moved
 * enough to say (a short round is mostly latency), else pre-copy's so far. */
static uint64_t stream_rate(uint64_t now)
{
	uint64_t bytes = ms.tx.bytes - ms.round_bytes0, ticks = now - ms.round_start;

	if (bytes < STREAM_RATE_MIN_BYTES) {
		bytes = ms.tx.bytes - ms.precopy_bytes0;
		ticks = now - ms.precopy_start;
	}
	return ticks ? bytes * timebase_hz / ticks : 0;
}

/* The downtime were the VM paused now with @left units (pages and disk
 * units) to send at @rate bytes a second: the destination takes as long to
 * receive them as the source to send, and the downtime counts both. */
static uint64_t expected_downtime(uint64_t left, uint64_t rate)
{
	uint64_t bytes = left * (SNAP_PAGE_SIZE + 64) + STATE_BYTES;

	if (!rate)
		return -1ULL;
	return 2 * (bytes * timebase_hz / rate);
}

/* Auto-converge: the pace for the next round. The guest wrote @dirty pages
 * in a round of @ticks while the stream moved @rate bytes a second: if that
 * is more than MIG_DIRTY_SHARE_PCT of what the stream moves, its page
 * writes are held to that share (each round then leaves at most half the
 * one before); if a round under the pace left no fewer than the one before,
 * the pace halves. */
static void set_pace(uint64_t dirty, uint64_t ticks, uint64_t rate, bool shrinking, uint64_t now)
{
	uint64_t share = rate / SNAP_PAGE_SIZE * MIG_DIRTY_SHARE_PCT / 100;
	uint64_t wrote = ticks ? dirty * timebase_hz / ticks : 0;
	uint64_t limit = ms.pace;

	if (!ms.pacing) {
		if (wrote <= share)
			return;		/* it converges on its own */
		limit = share;
	} else {
		limit = MIN(shrinking ? limit : limit / 2, share);
	}
	limit = MAX(limit, (uint64_t)1);
	if (limit == ms.pace && ms.pacing)
		return;
	ms.pace = limit;
	ms.pacing = true;
	dirty_limit_set(&dirty_limit, ms.vm, limit, timebase_hz, now);
	pr_info("vm %s: auto-converge: its page writes held to %lu a second (it wrote %lu, the "
		"stream moves %lu KB/s)", ms.name, (unsigned long)limit, (unsigned long)wrote,
		(unsigned long)(rate / 1000));
}

/* End of a pre-copy round: report it, then another round or the switchover. */
static void end_round(void)
{
	uint64_t dirty, pages, now = time_now(), rate, ticks = now - ms.round_start;
	bool shrinking, fits;
	const char *why = NULL;
	struct mig_round r = { ms.round, 0, ms.round_pages, 0, 0, ms.round_blocks, 0, 0, 0 };

	vm_dirty_log_take(ms.vm, ms.work, false);
	pages = work_count();
	r.dirty = pages;
	r.disk_dirty = ms.disks_on ? disk_save_dirty() : 0;
	/* a disk's 4 KiB unit is a page of stream and of downtime */
	dirty = pages + r.disk_dirty;
	rate = stream_rate(now);
	ms.expected = expected_downtime(dirty, rate);
	/* the estimate from round 2 on: round 1 is long, and the short round
	 * after it usually leaves far fewer pages (an idle guest: 1-3 ms of
	 * downtime, not 5-6) */
	fits = dirty <= MIG_STOP_PAGES ||
	       (ms.round >= 2 &&
		ms.expected <= (uint64_t)ms.opts.downtime_limit_ms * timebase_hz / 1000);
	shrinking = dirty * 10 < ms.last_dirty * 9;
	if (!fits && ms.round < ms.opts.max_rounds && ms.opts.auto_converge)
		set_pace(pages, ticks, rate, shrinking, now);
	r.expected_downtime_us = ms.expected == -1ULL ? -1ULL : ticks_us(ms.expected);
	r.dirty_limit = ms.pacing ? ms.pace : 0;
	r.bytes = ms.tx.bytes;
	section_tx_small(&ms.tx, MIG_SEC_ROUND, 0, &r, sizeof(r));
	pr_info("vm %s: migration round %u: %lu pages and %lu disk runs sent, %lu pages and %lu "
		"disk units dirty; %lu KB/s, downtime expected %lu us", ms.name, ms.round,
		(unsigned long)ms.round_pages, (unsigned long)ms.round_blocks, (unsigned long)pages,
		(unsigned long)r.disk_dirty, (unsigned long)(rate / 1000),
		(unsigned long)r.expected_downtime_us);
	ms.disk_dirty = r.disk_dirty;
	ms.next_page = 0;
	ms.round_pages = 0;
	ms.round_blocks = 0;
	ms.part = P_PAGES;
	ms.last_dirty = dirty;
	if (!fits && ms.round >= ms.opts.max_rounds)
		why = "round limit";
	else if (!fits && !ms.opts.auto_converge && !shrinking &&
		 ms.round >= MIG_MIN_ROUNDS_BEFORE_GIVING_UP)
		why = "not converging";
	if (!fits && !why) {
		ms.round++;
		ms.round_start = now;
		ms.round_bytes0 = ms.tx.bytes;
		if (ms.disks_on)
			disk_save_round(false);
		return;
	}
	if (why)
		pr_info("vm %s: %s: %lu pages and %lu disk units go while it is paused (%lu us "
			"expected)", ms.name, why, (unsigned long)pages, (unsigned long)ms.disk_dirty,
			(unsigned long)r.expected_downtime_us);
	ms.pause_at = now;
	ms.phase = S_PAUSING;
	if (ms.vm->state == VM_PAUSED) {
		paused(NULL, ms.vm, 0);
	} else if (ms.ops->pause(ms.vm, paused, NULL)) {
		fail("bad-state", "the VM could not be paused for the switchover");
	} else {
		ms.we_paused = true;
	}
}

/* A pre-copy round: its pages, then (copy mode) its disk blocks; then the
 * round's end. */
static void stage_round(void)
{
	if (ms.part == P_PAGES) {
		if (stage_run())
			return;
		ms.part = ms.disks_on ? P_BLOCKS : P_STATE;
	}
	if (ms.part == P_BLOCKS) {
		enum disk_save_step st = stage_block();

		if (st != DS_DONE)
			return;		/* staged, waiting for a read, or failed */
	}
	end_round();
}

/* After SWITCHOVER: the rest of the pages and blocks; in shared mode the
 * disks' flush; the vCPUs and devices as a snapshot sends them
 * (snap_emit.c), END. */
static void stage_state(void)
{
	if (ms.part == P_PAGES) {
		if (stage_run())
			return;
		ms.part = ms.disks_on ? P_BLOCKS : ms.copy_disks ? P_STATE : P_FLUSH;
	}
	if (ms.part == P_BLOCKS) {
		if (stage_block() != DS_DONE)
			return;
		ms.part = P_STATE;	/* the destination flushes what it wrote */
	}
	if (ms.part == P_FLUSH) {
		if (flushing())
			return;
		ms.part = P_STATE;
	}
	if (ms.index < snap_state_pieces(ms.vm)) {
		snap_emit_state(&ms.tx, ms.vm, ms.index++);
	} else {
		snap_emit_end(&ms.tx, ms.pages);
		ms.phase = S_RUNNING;
	}
}

/* A message from the destination. */
static void got_message(void)
{
	const struct snap_section *s = &ms.rx.sec;

	if (s->type == MIG_SEC_ABORT && s->length == sizeof(struct mig_abort)) {
		struct mig_abort a;
		char why[160];

		memcpy(&a, ms.rx.stage, sizeof(a));
		a.code[sizeof(a.code) - 1] = a.message[sizeof(a.message) - 1] = '\0';
		snprintf(why, sizeof(why), "the destination refused: %s", a.message);
		/* its code only if it is one of ours: the peer is not trusted */
		ms.peer_gave_up = true;
		return fail(!strcmp(a.code, "no-cfi") ? "no-cfi" : !strcmp(a.code, "exists") ?
			    "exists" : !strcmp(a.code, "no-memory") ? "no-memory" : "refused", why);
	}
	switch (ms.phase) {
	case S_CAPS:
		if (s->type == MIG_SEC_CAPS && s->length == sizeof(struct mig_caps)) {
			struct mig_caps c;
			const char *code, *why;

			memcpy(&c, ms.rx.stage, sizeof(c));
			why = caps_refusal(&c, &code);
			if (why)
				return fail(code, why);
			snap_emit_config(&ms.tx, ms.vm, time_now() + ms.vm->htimedelta);
			ms.tx.sections = 1;	/* END counts from CONFIG on */
			ms.phase = S_ACCEPT;
			return;
		}
		break;
	case S_ACCEPT:
		if (s->type == MIG_SEC_ACCEPT && s->length == sizeof(struct mig_accept)) {
			struct mig_accept a;

			memcpy(&a, ms.rx.stage, sizeof(a));
			if (a.flags & ~MIG_ACCEPT_COPY_DISKS)
				return fail("bad-stream", "the destination's ACCEPT has unknown flags");
			ms.copy_disks = a.flags & MIG_ACCEPT_COPY_DISKS;
			if (ms.copy_disks && ms.nr_disks) {
				/* from now on a guest write marks its blocks */
				if (disk_save_begin(ms.vm, DISK_SAVE_TRACKED))
					return fail("no-memory", "no memory for the disks' block maps");
				ms.disks_on = true;
			}
			if (vm_dirty_log_start(ms.vm))
				return fail("no-memory", "no memory for dirty logging");
			ms.logging = true;
			work_all_populated();
			if (ms.disks_on)
				disk_save_round(true);
			ms.round = 1;
			ms.precopy_start = ms.round_start = time_now();
			ms.precopy_bytes0 = ms.round_bytes0 = ms.tx.bytes;
			ms.phase = ms.copy_disks ? S_LAYOUT : S_ROUND;
			return;
		}
		break;
	case S_RUNNING:
		if (s->type == MIG_SEC_RUNNING && s->length == sizeof(struct mig_running)) {
			struct mig_running r;
			struct mig_done d = { ms.downtime, timebase_hz };
			struct vm *vm = ms.vm;

			memcpy(&r, ms.rx.stage, sizeof(r));
			ms.peer_downtime = r.timebase_hz ? r.downtime_ticks * timebase_hz /
							   r.timebase_hz : 0;
			/* the guest runs there now: our copy goes */
			release();
			ms.vm = NULL;
			if (ms.ops->destroy(vm, NULL, NULL))
				pr_info("vm %s: could not be destroyed after its migration", vm->cfg.name);
			ms.vm = vm;
			pr_info("vm %s: migrated (%lu pages, %lu bytes, %u pre-copy rounds), destroyed "
				"here", vm->cfg.name, (unsigned long)ms.pages,
				(unsigned long)ms.tx.bytes, ms.precopy_rounds);
			section_tx_small(&ms.tx, MIG_SEC_DONE, 0, &d, sizeof(d));
			ms.phase = S_DONE;
			return;
		}
		break;
	default:
		break;
	}
	fail("bad-stream", "the destination sent a message out of turn");
}

/* Read what the destination says; false if the migration ended. */
static bool listen(void)
{
	for (;;) {
		enum section_rx_event e = mig_rx_poll(&ms.rx);
		const char *why;

		switch (e) {
		case SECTION_RX_NONE:
			return true;
		case SECTION_RX_HEADER:
			why = mig_rx_header_check(&ms.rx);
			if (why) {
				fail("bad-stream", why);
				return false;
			}
			break;
		case SECTION_RX_PAYLOAD:
			if (ms.rx.sec.type == SNAP_SEC_MEMORY) {
				fail("bad-stream", "the destination sent memory");
				return false;
			}
			got_message();
			if (ms.phase == S_IDLE)
				return false;
			break;
		default:
			fail("bad-stream", ms.rx.why ? ms.rx.why : "bad message from the destination");
			return false;
		}
	}
}

/* One turn of the sender: true when it stopped on its time bound with more
 * to do at once. */
static bool send_poll(void)
{
	uint64_t until = time_now() + timebase_hz / 1000000 * POLL_BUDGET_US;
	bool looked = false;	/* the port was looked at since it last took bytes */
	uint64_t rx_seen = UINT64_MAX;	/* ms.rx.bytes at the last look for input */

	do {
		bool connected = snap_port_ready(), waiting = false;

		/* what came before a disconnect still counts (RUNNING, ABORT);
		 * CAPS only once our header is out: CONFIG is staged where it is */
		if (ms.phase != S_DONE && !(ms.phase == S_CAPS && !section_tx_idle(&ms.tx)) &&
		    !listen())
			return false;
		if (!connected) {
			if (ms.phase == S_DONE)
				finish(true);	/* DONE may not have gone out */
			else
				fail("stream", "the stream to the destination broke");
			return false;
		}
		if (ms.phase < S_RUNNING && ms.vm->cfg.boot_count != ms.boot_count) {
			fail("bad-state", "the VM rebooted during the migration");
			return false;
		}
		if (ms.phase < S_RUNNING && ms.vm->state != VM_RUNNING &&
		    ms.vm->state != VM_PAUSING && ms.vm->state != VM_PAUSED) {
			fail("bad-state", "the VM went down during the migration");
			return false;
		}
		if (!section_tx_push(&ms.tx)) {
			if (ms.phase == S_DONE && snap_port_stalled(ms.tx.moved)) {
				finish(true);
				return false;
			}
			if (snap_port_stalled(ms.tx.moved)) {
				fail("stream", "the destination stopped reading");
				return false;
			}
			/* no room after a fresh look either: hart 0 waits for
			 * the port's interrupt (its buffers came back), but not
			 * in the stop-and-copy, whose wait is the VM's downtime:
			 * it polls as before */
			if (looked && ms.phase != S_STATE)
				return false;
			vcon_poll();
			looked = true;
			continue;
		}
		looked = false;
		switch (ms.phase) {
		case S_LAYOUT:
			if (ms.next_layout < ms.nr_disks) {
				struct mig_disk_layout l = {
					vm_io_disk_sectors(ms.vm, ms.next_layout),
					vm_io_disk_read_only(ms.vm, ms.next_layout) ?
						MIG_DISK_READ_ONLY : 0, 0 };

				section_tx_small(&ms.tx, MIG_SEC_DISK_LAYOUT, ms.next_layout++, &l,
						 sizeof(l));
			} else {
				ms.phase = S_ROUND;
			}
			break;
		case S_ROUND:
			stage_round();
			break;
		case S_PAUSING:
			if (!ms.paused) {
				vcon_poll();
				return true;	/* vmops_poll finishes the pause */
			}
			switchover();
			break;
		case S_STATE:
			stage_state();
			break;
		case S_RUNNING:
			ms.end_out = true;	/* from here on the destination may run it */
			if (!ms.downtime) {
				ms.downtime = time_now() - ms.pause_at;	/* END is out */
				pr_info("vm %s: stop-and-copy sent in %lu us (%lu us since the pause "
					"request)", ms.name,
					(unsigned long)ticks_us(time_now() - ms.paused_at),
					(unsigned long)ticks_us(ms.downtime));
			}
			if (snap_port_stalled(MAX(ms.tx.moved, ms.rx.moved))) {
				fail("stream", "no answer from the destination after the "
				     "switchover");
				return false;
			}
			waiting = true;
			break;
		case S_DONE:
			finish(true);
			return false;
		default:
			if (snap_port_stalled(MAX(ms.tx.moved, ms.rx.moved))) {
				fail("stream", "no answer from the destination");
				return false;
			}
			waiting = true;
			break;
		}
		if (waiting) {
			/* waiting for the destination: one more look at the port,
			 * then hart 0 waits for its interrupt (the answer came) */
			if (rx_seen == ms.rx.bytes)
				return false;
			rx_seen = ms.rx.bytes;
			vcon_poll();
		}
		/* a failure on the way ended it: the VM is not ours any more */
	} while (ms.phase != S_IDLE && time_now() < until);
	return ms.phase != S_IDLE;
}

bool mig_send_poll(void)
{
	return ms.phase != S_IDLE && send_poll();
}
