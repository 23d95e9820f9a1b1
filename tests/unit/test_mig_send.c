/* SPDX-License-Identifier: MIT */
/* hyp/migrate/mig_send.c, the source side of a live migration
 * (docs/migration.md), driven as the host services drive it: mig_send_start(),
 * then mig_send_poll() with vmops' poll after each (it finishes a pause the
 * engine asked for). The test plays the destination on the stream port
 * (tests/unit/fake_snap_host.c): it reads the source's sections as they come
 * out and answers as D would (its header and CAPS, ACCEPT once CONFIG came,
 * RUNNING once END came), over the real section framing, disk copy and
 * dirty logging (section_tx.c, section_rx.c, snap_disk_save.c, dirty_log.c).
 *
 * - Shared mode: the source FLUSHes each disk the guest can write, after the
 *   pause and before END; a flush that fails fails the migration (disk-io)
 *   and the VM runs on here.
 * - Copy mode: DISK_LAYOUT per disk after ACCEPT; round 1 the non-zero
 *   blocks; a guest write that completes meanwhile goes again as its 4 KiB
 *   unit; a read error fails it (disk-io) and the VM runs on here.
 * - A failure inside a stage ends the poll at once: the engine no longer
 *   holds the VM (it once read ms.vm, then NULL, on its next turn). */
#include <stdio.h>
#include <string.h>
#include <crc32c.h>
#include <dirty_limit.h>
#include <guest_mem.h>
#include <hart.h>
#include <migrate.h>
#include <section_stream.h>
#include <snapshot.h>
#include <vm.h>
#include <vm_io.h>
#include <vsbi.h>
#include "fake_snap_host.h"
#include "test.h"

/* ---- the host services: vmops' pause, resume and destroy ---- */

static mig_vm_done_fn pause_done;	/* a pause under way: vmops_poll() ends it */
static void *pause_ctx;
static unsigned int resumes, destroys;

static int host_pause(struct vm *vm, mig_vm_done_fn done, void *ctx)
{
	EXPECT_EQ(vm->state, VM_RUNNING);
	vm->state = VM_PAUSING;
	pause_done = done;
	pause_ctx = ctx;
	return 0;
}

static int host_resume(struct vm *vm)
{
	/* vmops refuses a VM a migration holds */
	EXPECT_FALSE(mig_sending(vm));
	EXPECT_EQ(vm->state, VM_PAUSED);
	vm->state = VM_RUNNING;
	resumes++;
	return 0;
}

static int host_destroy(struct vm *vm, mig_vm_done_fn done, void *ctx)
{
	(void)done, (void)ctx;
	EXPECT_FALSE(mig_sending(vm));
	vm->state = VM_DESTROYING;
	destroys++;
	return 0;
}

static const struct mig_host_ops host_ops = { host_pause, host_resume, host_destroy };

/* vmops_poll(): the vCPUs left their harts */
static void vmops_poll(void)
{
	mig_vm_done_fn done = pause_done;

	if (!done)
		return;
	pause_done = NULL;
	tvm.state = VM_PAUSED;
	done(pause_ctx, &tvm, 0);
}

static unsigned int dones;
static struct mig_result result;
static char result_code[32], result_mode[16];

static void migration_done(const struct mig_result *r)
{
	dones++;
	result = *r;
	snprintf(result_code, sizeof(result_code), "%s", r->code ? r->code : "");
	snprintf(result_mode, sizeof(result_mode), "%s", r->disk_mode ? r->disk_mode : "");
}

/* ---- the destination ---- */

/* A whole section the source sent; its payload at stream + at. */
struct sent {
	uint32_t type, instance;
	uint64_t length;
	size_t at;
};

static struct sent sent[4096];
static unsigned int nr_sent;
static size_t parsed;		/* the source's bytes read so far */
static uint32_t accept_flags;
static size_t port_step;	/* bytes the port takes a poll */
/* the test's turn as each section comes (the guest's writes, a disk's error) */
static void (*on_section)(const struct sent *s);

static void dest_send(uint32_t type, const void *payload, size_t len)
{
	struct snap_section s = { type, 0, len, crc32c(payload, len), 0 };

	port_in_put(&s, sizeof(s));
	port_in_put(payload, len);
}

static bool dest_opened;

/* D's header and CAPS, once S's header came: it can give this VM everything */
static void dest_open(void)
{
	dest_opened = true;
	struct snap_header h = { .version = MIG_VERSION, .header_size = sizeof(h) };
	struct mig_caps c = {
		.features = ~0U, .policies = ~0U, .sbi_version = VSBI_SPEC_VERSION,
		.max_vcpus = 8, .free_mem = 1ULL << 34, .timebase_hz = timebase_hz,
		.fwft = MIG_FWFT_LANDING_PAD | MIG_FWFT_SHADOW_STACK, .vs_sv = 57,
	};

	memcpy(h.magic, MIG_MAGIC, sizeof(h.magic));
	port_in_put(&h, sizeof(h));
	dest_send(MIG_SEC_CAPS, &c, sizeof(c));
}

/* Read what the source sent whole; answer its header, CONFIG and END as D
 * does. */
static void dest_read(void)
{
	if (!parsed) {
		struct snap_header h;

		if (stream_len < sizeof(h))
			return;
		memcpy(&h, stream, sizeof(h));
		EXPECT_TRUE(!memcmp(h.magic, MIG_MAGIC, sizeof(h.magic)));
		EXPECT_EQ(h.version, MIG_VERSION);
		parsed = sizeof(h);
		if (!dest_opened)
			dest_open();
	}
	while (parsed + sizeof(struct snap_section) <= stream_len) {
		struct snap_section s;
		struct sent *n = &sent[nr_sent];

		memcpy(&s, stream + parsed, sizeof(s));
		if (parsed + sizeof(s) + s.length > stream_len)
			return;
		EXPECT_EQ(crc32c(stream + parsed + sizeof(s), s.length), s.crc32c);
		*n = (struct sent){ s.type, s.instance, s.length, parsed + sizeof(s) };
		parsed += sizeof(s) + s.length;
		if (nr_sent < sizeof(sent) / sizeof(sent[0]) - 1)
			nr_sent++;
		if (n->type == SNAP_SEC_CONFIG) {
			struct mig_accept a = { 0, accept_flags };

			dest_send(MIG_SEC_ACCEPT, &a, sizeof(a));
		} else if (n->type == SNAP_SEC_END) {
			struct mig_running r = { 1000, timebase_hz };

			dest_send(MIG_SEC_RUNNING, &r, sizeof(r));
		}
		if (on_section)
			on_section(n);
	}
}

static const struct mig_send_opts default_opts = {
	MIG_MAX_ROUNDS_DEFAULT, MIG_DOWNTIME_LIMIT_MS_DEFAULT, true
};

/* A running VM with @disks disks (read-only ones by @ro_mask), RAM chunk 0
 * not zero; the source started. */
static void migration_begins(unsigned int disks, unsigned int ro_mask, uint32_t flags)
{
	vm_new(1);
	tvm.state = VM_RUNNING;
	nr_disks = disks;
	disk_ro_mask = ro_mask;
	accept_flags = flags;
	port_step = 16 * 1024;
	EXPECT_EQ(mig_send_start(&tvm, &default_opts, &host_ops, migration_done), 0);
}

/* Poll as the host services do, until the migration ended, and a while
 * after: an ended one does nothing more. */
static void migration_runs(void)
{
	size_t after;

	for (unsigned int i = 0; i < 5000 && !dones; i++) {
		stream_limit = MIN(stream_len + port_step, (size_t)STREAM_MAX);
		mig_send_poll();
		vmops_poll();
		dest_read();
	}
	EXPECT_EQ(dones, 1);
	after = stream_len;
	stream_limit = STREAM_MAX;
	for (unsigned int i = 0; i < 10; i++) {
		mig_send_poll();
		vmops_poll();
	}
	EXPECT_EQ(stream_len, after);
	EXPECT_EQ(dones, 1);
}

/* The first section of @type from the @from'th on; -1 if none. */
static int find(uint32_t type, int from)
{
	for (int i = from < 0 ? 0 : from; i < (int)nr_sent; i++)
		if (sent[i].type == type)
			return i;
	return -1;
}

static unsigned int count(uint32_t type, int from, int to)
{
	unsigned int n = 0;

	for (int i = from; i < to && i < (int)nr_sent; i++)
		n += sent[i].type == type;
	return n;
}

/* The source's last section is ABORT with @code. */
static void check_abort(const char *code)
{
	struct mig_abort a;

	EXPECT_TRUE(nr_sent > 0);
	if (!nr_sent)
		return;
	EXPECT_EQ(sent[nr_sent - 1].type, MIG_SEC_ABORT);
	EXPECT_EQ(sent[nr_sent - 1].length, sizeof(a));
	memcpy(&a, stream + sent[nr_sent - 1].at, sizeof(a));
	a.code[sizeof(a.code) - 1] = '\0';
	EXPECT_STREQ(a.code, code);
}

/* A DISK section's run: its sector, sectors; the first byte of its data,
 * *@uniform false if not all of it is that byte. */
static struct snap_disk_run disk_run(const struct sent *s, uint8_t *first, bool *uniform)
{
	struct snap_disk_run run;
	const uint8_t *data = stream + s->at + sizeof(run);

	memcpy(&run, stream + s->at, sizeof(run));
	EXPECT_EQ(s->length, sizeof(run) + (uint64_t)run.sectors * SNAP_DISK_SECTOR);
	*first = data[0];
	*uniform = true;
	for (uint64_t i = 0; i < (uint64_t)run.sectors * SNAP_DISK_SECTOR; i++)
		if (data[i] != data[0])
			*uniform = false;
	return run;
}

/* ---- shared mode: the disks' FLUSH ---- */

TEST(mig_send_shared_flushes_the_writable_disk_after_the_pause_before_end)
{
	int sw, end;

	/* disk 0 the guest writes, disk 1 read-only */
	migration_begins(2, 1U << 1, 0);
	migration_runs();
	EXPECT_STREQ(result_code, "");
	EXPECT_STREQ(result_mode, "shared");
	EXPECT_EQ(destroys, 1);
	EXPECT_EQ(resumes, 0);
	/* no disk content in the stream: D opens the same images */
	EXPECT_EQ(find(MIG_SEC_DISK_LAYOUT, 0), -1);
	EXPECT_EQ(find(SNAP_SEC_DISK, 0), -1);
	/* one FLUSH, of disk 0, the VM paused, between SWITCHOVER and END */
	sw = find(MIG_SEC_SWITCHOVER, 0);
	end = find(SNAP_SEC_END, 0);
	EXPECT_TRUE(sw >= 0 && end > sw);
	EXPECT_EQ(nr_flushes, 1);
	EXPECT_EQ(flushes[0].disk, 0);
	EXPECT_EQ(flushes[0].vm_state, VM_PAUSED);
	if (sw >= 0 && end > sw) {
		EXPECT_TRUE(flushes[0].stream_at_submit >= sent[sw].at + sent[sw].length);
		/* done before a byte of END went out */
		EXPECT_TRUE(flushes[0].stream_at_done <= sent[end].at - sizeof(struct snap_section));
	}
	EXPECT_EQ(find(MIG_SEC_DONE, 0), (int)nr_sent - 1);
	vm_free();
}

TEST(mig_send_shared_flush_that_fails_resumes_the_vm)
{
	migration_begins(2, 1U << 1, 0);
	disk_flush_status = VIRTIO_BLK_S_IOERR;
	migration_runs();
	EXPECT_STREQ(result_code, "disk-io");
	EXPECT_EQ(nr_flushes, 1);
	EXPECT_EQ(resumes, 1);
	EXPECT_EQ(tvm.state, VM_RUNNING);
	EXPECT_EQ(destroys, 0);
	EXPECT_FALSE(mig_sending(&tvm));
	EXPECT_TRUE(find(MIG_SEC_SWITCHOVER, 0) >= 0);
	EXPECT_EQ(find(SNAP_SEC_END, 0), -1);	/* D never runs it */
	check_abort("disk-io");
	vm_free();
}

/* ---- copy mode: the disks' blocks in the stream ---- */

#define WRITTEN_SECTOR	(3 * SNAP_DISK_UNIT_SECTORS)	/* unit 3 of block 0 */

/* The guest writes a 4 KiB unit of block 0 once round 1 sent that block:
 * the write completes (the watch), its data differs from what went. */
static void guest_writes_during_round_1(const struct sent *s)
{
	if (s->type != SNAP_SEC_DISK || watch_fn == NULL)
		return;
	if (find(MIG_SEC_ROUND, 0) >= 0 || find(SNAP_SEC_DISK, 0) != (int)(s - sent))
		return;		/* only at round 1's first DISK section */
	memset(disk + WRITTEN_SECTOR * SNAP_DISK_SECTOR, 0xee, 8 * SNAP_DISK_SECTOR);
	watch_fn(0, WRITTEN_SECTOR, SNAP_DISK_UNIT_SECTORS);
}

/* Disk 0 (writable) holds blocks 0, 7 and 32 (the last, half) not zero;
 * disk 1 is read-only. */
static void copy_mode_begins(void)
{
	migration_begins(2, 1U << 1, MIG_ACCEPT_COPY_DISKS);
	fill_block(0, 0xa0);
	fill_block(7, 0xa7);
	fill_block(32, 0xb2);
}

TEST(mig_send_copy_sends_layout_blocks_and_the_unit_written_meanwhile)
{
	static const struct { uint64_t sector; uint32_t sectors; uint8_t byte; } round1[] = {
		{ 0, SNAP_DISK_BLOCK_SECTORS, 0xa0 },
		{ 7 * SNAP_DISK_BLOCK_SECTORS, SNAP_DISK_BLOCK_SECTORS, 0xa7 },
		{ 32 * SNAP_DISK_BLOCK_SECTORS, 64, 0xb2 },
	};
	struct mig_disk_layout l;
	struct mig_round r;
	int config, round, sw, vcpu, d;
	uint8_t byte;
	bool uniform;

	copy_mode_begins();
	on_section = guest_writes_during_round_1;
	migration_runs();
	EXPECT_STREQ(result_code, "");
	EXPECT_STREQ(result_mode, "copy");
	EXPECT_EQ(destroys, 1);
	/* right after CONFIG (ACCEPT came in between): a DISK_LAYOUT per disk */
	config = find(SNAP_SEC_CONFIG, 0);
	EXPECT_EQ(config, 0);
	for (unsigned int i = 0; i < 2; i++) {
		EXPECT_EQ(sent[1 + i].type, MIG_SEC_DISK_LAYOUT);
		EXPECT_EQ(sent[1 + i].instance, i);
		EXPECT_EQ(sent[1 + i].length, sizeof(l));
		memcpy(&l, stream + sent[1 + i].at, sizeof(l));
		EXPECT_EQ(l.sectors, DISK_SECTORS);
		EXPECT_EQ(l.flags, i == 1 ? MIG_DISK_READ_ONLY : 0);
		EXPECT_EQ(l.reserved, 0);
	}
	EXPECT_EQ(count(MIG_SEC_DISK_LAYOUT, 0, nr_sent), 2);
	/* round 1: after its pages, disk 0's non-zero blocks, whole, as they were */
	round = find(MIG_SEC_ROUND, 0);
	EXPECT_TRUE(round > 0);
	if (round <= 0)
		return;
	EXPECT_EQ(count(SNAP_SEC_DISK, 0, round), 3);
	d = find(SNAP_SEC_DISK, 0);
	for (unsigned int i = 0; i < 3 && d >= 0 && d < round; i++, d = find(SNAP_SEC_DISK, d + 1)) {
		struct snap_disk_run run = disk_run(&sent[d], &byte, &uniform);

		EXPECT_EQ(sent[d].instance, 0);
		EXPECT_EQ(count(SNAP_SEC_MEMORY, d, round), 0);
		EXPECT_EQ(run.sector, round1[i].sector);
		EXPECT_EQ(run.sectors, round1[i].sectors);
		EXPECT_EQ(byte, round1[i].byte);
		EXPECT_TRUE(uniform);
	}
	memcpy(&r, stream + sent[round].at, sizeof(r));
	EXPECT_EQ(r.round, 1);
	EXPECT_EQ(r.disk_blocks, 3);
	EXPECT_EQ(r.disk_dirty, 1);		/* the unit written */
	/* one unit dirty: the switchover; the stop-and-copy sends that unit,
	 * before the first VCPU section */
	EXPECT_EQ(count(MIG_SEC_ROUND, 0, nr_sent), 1);
	sw = find(MIG_SEC_SWITCHOVER, round);
	vcpu = find(SNAP_SEC_VCPU, sw);
	EXPECT_TRUE(sw > round && vcpu > sw);
	if (sw < 0 || vcpu < 0)
		return;
	EXPECT_EQ(count(SNAP_SEC_DISK, sw, nr_sent), 1);
	d = find(SNAP_SEC_DISK, sw);
	EXPECT_TRUE(d > sw && d < vcpu);
	if (d > sw) {
		struct snap_disk_run run = disk_run(&sent[d], &byte, &uniform);

		EXPECT_EQ(sent[d].instance, 0);
		EXPECT_EQ(run.sector, WRITTEN_SECTOR);
		EXPECT_EQ(run.sectors, SNAP_DISK_UNIT_SECTORS);
		EXPECT_EQ(byte, 0xee);
		EXPECT_TRUE(uniform);
	}
	EXPECT_EQ(nr_flushes, 0);	/* D flushes what it wrote */
	EXPECT_EQ(result.disk_blocks, 4);
	EXPECT_TRUE(watch_fn == NULL);	/* the watch is gone with the migration */
	vm_free();
}

/* A read error: disk-io, the VM as it was (running), the watch gone. */
static void check_read_error_failed_it(unsigned int expect_resumes)
{
	EXPECT_STREQ(result_code, "disk-io");
	EXPECT_EQ(resumes, expect_resumes);
	EXPECT_EQ(tvm.state, VM_RUNNING);
	EXPECT_EQ(destroys, 0);
	EXPECT_FALSE(mig_sending(&tvm));
	EXPECT_TRUE(watch_fn == NULL);
	EXPECT_EQ(find(SNAP_SEC_END, 0), -1);
	check_abort("disk-io");
}

TEST(mig_send_copy_read_error_in_round_1_fails_it)
{
	copy_mode_begins();
	disk_bad_sector = 7 * SNAP_DISK_BLOCK_SECTORS;
	port_step = STREAM_MAX;
	migration_runs();
	check_read_error_failed_it(0);		/* it never paused */
	EXPECT_EQ(find(MIG_SEC_SWITCHOVER, 0), -1);
	vm_free();
}

/* Block 0 fails once round 1 is over: the stop-and-copy's read of the unit
 * the guest wrote meets it, the VM paused. */
static void guest_writes_then_block_0_fails(const struct sent *s)
{
	guest_writes_during_round_1(s);
	if (s->type == MIG_SEC_ROUND) {
		disk_bad_sector = 0;
		port_step = STREAM_MAX;
	}
}

TEST(mig_send_copy_read_error_in_the_stop_and_copy_resumes_the_vm)
{
	copy_mode_begins();
	on_section = guest_writes_then_block_0_fails;
	migration_runs();
	check_read_error_failed_it(1);
	EXPECT_TRUE(find(MIG_SEC_SWITCHOVER, 0) >= 0);
	vm_free();
}

/* ---- ACCEPT ---- */

TEST(mig_send_refuses_an_accept_with_unknown_flags)
{
	migration_begins(1, 0, MIG_ACCEPT_COPY_DISKS | 1U << 5);
	port_step = STREAM_MAX;
	migration_runs();
	EXPECT_STREQ(result_code, "bad-stream");
	EXPECT_EQ(resumes, 0);
	EXPECT_EQ(tvm.state, VM_RUNNING);
	EXPECT_TRUE(watch_fn == NULL);		/* no disk copy began */
	EXPECT_EQ(find(MIG_SEC_DISK_LAYOUT, 0), -1);
	EXPECT_EQ(find(SNAP_SEC_MEMORY, 0), -1);
	check_abort("bad-stream");
	vm_free();
}

/* A destination whose CAPS is there before the source's header went out
 * (the port took nothing yet): the header still goes out first, whole; the
 * source reads CAPS only then, as CONFIG is staged where the header was. */
TEST(mig_send_reads_caps_only_once_its_header_is_out)
{
	struct snap_header h;

	migration_begins(0, 0, 0);
	dest_open();			/* CAPS waits in the port */
	for (unsigned int i = 0; i < 20; i++) {
		stream_limit = 0;	/* the port takes nothing */
		mig_send_poll();
	}
	EXPECT_EQ(stream_len, 0);
	migration_runs();
	EXPECT_STREQ(result_code, "");
	EXPECT_TRUE(stream_len >= sizeof(h));
	memcpy(&h, stream, sizeof(h));
	EXPECT_TRUE(!memcmp(h.magic, MIG_MAGIC, sizeof(h.magic)));
	EXPECT_EQ(nr_sent > 0 ? sent[0].type : 0, SNAP_SEC_CONFIG);
	vm_free();
}

/* ---- the downtime limit and auto-converge ----
 * The fake clock moves a tick (1 us) at each look, and the port takes 16.4
 * MB/s of it; the guest (in chunk 0 of 2 mapped chunks) writes pages of its
 * working set in turn at its rate of that clock, each first write a write
 * fault while pages are logged, paced as the exit path paces it
 * (exit_dirty_paced()). */
#define STREAM_BPS	(16 * 1024 * 1000ULL)

static unsigned int writes_per_ms, working_set, next_write;
static uint64_t held_until, guest_clock;

/* The guest from where it was to now, a write every 1/writes_per_ms ms of
 * its own time, as if it ran on a hart of its own. */
static void guest_runs(void)
{
	while (guest_clock < clock_now) {
		gpa_t gpa = GPA(0, (uint64_t)(next_write % working_set) * SNAP_PAGE_SIZE);

		if (tvm.state != VM_RUNNING) {
			guest_clock = clock_now;	/* paused: no writes */
			return;
		}
		if (guest_clock < held_until) {
			guest_clock = MIN(held_until, clock_now);
			continue;
		}
		if (vm_ram_resolve_write(&tvm, gpa) && dirty_limit.vm == &tvm &&
		    dirty_limit_charge(&dirty_limit, guest_clock))
			held_until = dirty_limit.held_until;	/* off its hart until then */
		next_write++;
		guest_clock += 1000 / writes_per_ms;
	}
}

static void busy_migration(unsigned int writes, unsigned int set, const struct mig_send_opts *o)
{
	vm_new(2);
	tvm.state = VM_RUNNING;
	accept_flags = 0;
	writes_per_ms = writes;
	working_set = set;
	next_write = 0;
	held_until = 0;
	clock_manual = true;
	guest_clock = port_since = clock_now = 1000000;
	port_from = 0;
	port_bps = STREAM_BPS;
	EXPECT_EQ(mig_send_start(&tvm, o, &host_ops, migration_done), 0);
	for (unsigned int i = 0; i < 100000 && !dones; i++) {
		guest_runs();
		mig_send_poll();
		vmops_poll();
		dest_read();
	}
	clock_manual = false;
	port_bps = 0;
	EXPECT_EQ(dones, 1);
	EXPECT_STREQ(result_code, "");
	EXPECT_TRUE(dirty_limit.vm == NULL);	/* the pace ends with the migration */
}

/* The ROUND sections, in order; how many. */
static unsigned int rounds_sent(struct mig_round *out, unsigned int max)
{
	unsigned int n = 0;

	for (int i = find(MIG_SEC_ROUND, 0); i >= 0 && n < max; i = find(MIG_SEC_ROUND, i + 1)) {
		EXPECT_EQ(sent[i].length, sizeof(*out));
		memcpy(&out[n++], stream + sent[i].at, sizeof(*out));
	}
	return n;
}

/* MEMORY pages after SWITCHOVER: what went while the VM was paused. */
static uint64_t pages_while_paused(void)
{
	uint64_t pages = 0;

	for (int i = find(MIG_SEC_SWITCHOVER, 0); i >= 0 && i < (int)nr_sent; i++)
		if (sent[i].type == SNAP_SEC_MEMORY)
			pages += (sent[i].length - sizeof(struct snap_mem_run)) / SNAP_PAGE_SIZE;
	return pages;
}

/* the estimate for @left pages at the test's stream rate, in us */
static uint64_t estimate_us(uint64_t left)
{
	return 2 * ((left * (SNAP_PAGE_SIZE + 64) + (64 << 10)) * 1000000 / STREAM_BPS);
}

/* Without auto-converge a guest rewriting 256 pages every 4 ms (256 MB/s
 * against 16 MB/s) never fits the limit: pre-copy ends as not converging
 * at round 3, and its whole working set goes while it is paused. Each ROUND
 * says what that would cost, near the estimate for its dirty pages. */
TEST(mig_send_guest_out_writing_the_stream_without_auto_converge_is_not_paced)
{
	struct mig_send_opts o = default_opts;
	struct mig_round r[32];
	unsigned int n;

	o.auto_converge = false;
	busy_migration(64, 256, &o);
	n = rounds_sent(r, 32);
	EXPECT_EQ(n, MIG_MIN_ROUNDS_BEFORE_GIVING_UP);
	for (unsigned int i = 0; i < n; i++) {
		EXPECT_EQ(r[i].dirty, 256);
		EXPECT_EQ(r[i].dirty_limit, 0);
		EXPECT_TRUE(r[i].expected_downtime_us > estimate_us(256) * 9 / 10 &&
			    r[i].expected_downtime_us < estimate_us(256) * 11 / 10);
	}
	EXPECT_TRUE(r[n - 1].expected_downtime_us > MIG_DOWNTIME_LIMIT_MS_DEFAULT * 1000);
	EXPECT_TRUE(pages_while_paused() >= 256);
	EXPECT_EQ(result.dirty_limit, 0);
	EXPECT_EQ(result.dirty_holds, 0);
	vm_free();
}

/* With auto-converge (the default) the same guest's page writes are held to
 * half what the stream moves once a round shows it writes faster (round 2:
 * in round 1's 256 ms its 256 pages looked like 1 000 a second); from then
 * on each round leaves fewer than the one before, until what is left fits
 * the 20 ms limit, and only that goes while paused. */
TEST(mig_send_guest_out_writing_the_stream_is_paced_until_it_fits_the_limit)
{
	struct mig_round r[32];
	unsigned int n, paced;

	busy_migration(64, 256, &default_opts);
	n = rounds_sent(r, 32);
	EXPECT_TRUE(n >= 4 && n < MIG_MAX_ROUNDS_DEFAULT);
	EXPECT_EQ(r[0].dirty_limit, 0);
	EXPECT_EQ(r[1].dirty, 256);
	/* half of 16.4 MB/s in pages: 2 000 a second */
	EXPECT_TRUE(r[1].dirty_limit >= 1900 && r[1].dirty_limit <= 2100);
	for (paced = 2; paced < n; paced++) {
		EXPECT_TRUE(r[paced].dirty < r[paced - 1].dirty);
		EXPECT_TRUE(r[paced].dirty_limit > 0);
		EXPECT_TRUE(r[paced].dirty <= r[paced - 1].dirty / 2 + 16);
	}
	EXPECT_TRUE(r[n - 1].expected_downtime_us <= MIG_DOWNTIME_LIMIT_MS_DEFAULT * 1000);
	for (unsigned int i = 0; i + 1 < n; i++)
		EXPECT_TRUE(r[i].expected_downtime_us > MIG_DOWNTIME_LIMIT_MS_DEFAULT * 1000);
	EXPECT_TRUE(pages_while_paused() <= r[n - 1].dirty + 8);
	EXPECT_TRUE(pages_while_paused() < 64);
	EXPECT_EQ(result.dirty_limit, r[n - 1].dirty_limit);
	EXPECT_TRUE(result.dirty_holds > 0);
	EXPECT_TRUE(result.expected_downtime_ticks <= MIG_DOWNTIME_LIMIT_MS_DEFAULT * 1000);
	vm_free();
}

/* A guest that writes less than half what the stream moves converges on its
 * own: never paced. */
TEST(mig_send_guest_writing_less_than_the_stream_is_never_paced)
{
	struct mig_round r[32];
	unsigned int n;

	busy_migration(1, 256, &default_opts);
	n = rounds_sent(r, 32);
	EXPECT_TRUE(n >= 2);
	for (unsigned int i = 0; i < n; i++)
		EXPECT_EQ(r[i].dirty_limit, 0);
	EXPECT_EQ(result.dirty_limit, 0);
	EXPECT_EQ(result.dirty_holds, 0);
	vm_free();
}

/* A limit the working set fits (1 s against ~140 ms expected): pre-copy
 * ends after round 2 (round 1 always has a short one after it) with all 256
 * pages dirty, more than MIG_STOP_PAGES. */
TEST(mig_send_stops_once_what_is_left_fits_the_downtime_limit)
{
	struct mig_send_opts o = default_opts;
	struct mig_round r[32];

	o.downtime_limit_ms = 1000;
	busy_migration(64, 256, &o);
	EXPECT_EQ(rounds_sent(r, 32), 2);
	EXPECT_EQ(r[1].dirty, 256);
	EXPECT_EQ(r[0].dirty_limit, 0);
	EXPECT_EQ(r[1].dirty_limit, 0);
	EXPECT_TRUE(pages_while_paused() >= 256);
	vm_free();
}
