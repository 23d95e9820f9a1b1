/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the destination of a live migration reading the source's
 * stream, hyp/migrate/mig_recv.c over the shared framing (hyp/snap/
 * section_rx.c, section_tx.c) and hyp/migrate/mig_wire.c (docs/fuzzing.md,
 * "More targets"). The VM it creates goes through the real
 * snap_admit() (hyp/snap/snap_admit.c), snap_state.c's checks and the device
 * models' load hooks; the host around it (vm_alloc(), guest RAM, the stream
 * port, the clock) is the snapshot target's (fuzz_restore_host.c).
 *
 * One input is one incoming migration (mig_recv_start() for a client that is
 * connected): an 8-byte harness header, then the bytes the source sends.
 *
 *   byte 0   flags: 0x01 take the VM under a new name ("copy"); 0x02 the host
 *            lacks Svadu; 0x04 the host lacks Zicfiss; 0x08 fix CRCs (every
 *            whole section's crc32c is set right before the stream is read);
 *            0x10 the port takes what the destination sends 7 bytes at a
 *            time; 0x20 copy mode (docs/migration.md, "Disks: shared or
 *            copied"): disk 0 goes to the host disk FUZZ_COPY_DISK_PCI, disk 1
 *            to FUZZ_COPY_DISK2_PCI, or with 0x40 to the read-only
 *            FUZZ_DISK_RO_PCI; 0x80 the host disks are slow (a full ring every
 *            other request, each done at the second poll: fuzz_disk_slow)
 *   byte 1   the destination's writes: 1..254 = the port takes nothing after
 *            that many writes, 255 = nothing at the 2nd write and after (the
 *            source stopped reading: a stall from then on)
 *   2-7      six chunk sizes for the reads, as fuzz_snap_load.c's; the first
 *            254 = a silent client stalls at the third empty read
 *
 * Checked after each: done called exactly once; the receiver idle again (no
 * busy flag; a second start while it runs is -HYP_EBUSY); never more read
 * than sent; what the destination wrote is a migration header and whole
 * sections with right CRCs, CAPS first, then at most ACCEPT (its flags the
 * disks' mode), RUNNING and one ABORT (NUL-terminated code and message) in
 * that order, never an ABORT after RUNNING; on success the VM was started
 * once, ACCEPT and RUNNING were sent, and its installed state passes every
 * check again; a VM that started is never destroyed by the receiver:
 * without DONE it is returned with the code `unconfirmed`, marked
 * arrived-unconfirmed, its state passing every check; on any other failure
 * an error and a known code, no VM returned, no VM started, and any VM
 * created destroyed exactly once; no sanitizer report; no hang.
 *
 * The disks (the stub host's keep their content): nothing is written but
 * DISK blocks, within a VM disk that a DISK_LAYOUT of the stream bound to the
 * host disk the map names for it, writable as the VM sees it and on the host
 * (the stub's CHECKs), one request at a time, none in flight when the VM
 * goes; shared mode writes and flushes nothing. A copy that ran here: each
 * disk holds what the stream's DISK runs for it leave, applied in order (the
 * last one of each unit), zero elsewhere; each disk written was flushed after its last write, after
 * the VM started and before any byte of RUNNING went out; the result counts
 * the DISK sections. A copy that failed before the VM ran: when its client
 * is answered, every block it wrote is zero again (the wipe), and no disk
 * was flushed. */
#include <string.h>
#include <crc32c.h>
#include <errno.h>
#include <hart.h>
#include <migrate.h>
#include <snapshot.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include "fuzz_restore_host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_HDR	8
#define FL_SLOW_TX	0x10
#define FL_COPY		0x20
#define FL_COPY_RO	0x40
#define FL_SLOW_DISK	0x80
#define MAX_POLLS	200000

bool mig_send_active;		/* mig_send.c is not linked */
static unsigned int op_destroys;	/* through vmops: never, since protocol 3 */
static bool copy_mode;			/* this input's disks are copied */
static struct snap_io_map map;		/* where they go then */

/* the host layer's lifecycle operations (vmops_migration) */
static int op_pause(struct vm *vm, mig_vm_done_fn done, void *ctx)
{
	(void)vm;
	(void)done;
	(void)ctx;
	CHECK(0);	/* a destination never pauses */
	return 0;
}

static int op_resume(struct vm *vm)
{
	(void)vm;
	CHECK(0);
	return 0;
}

/* a started VM: what vmop_destroy() ends with once it is off every hart */
static int op_destroy(struct vm *vm, mig_vm_done_fn done, void *ctx)
{
	(void)ctx;
	CHECK(vm == &fuzz_vm && vms_seen.live && vms_seen.starts == 1 && !done);
	op_destroys++;
	vm->state = VM_DESTROYING;
	vm_destroy_finish(vm);
	return 0;
}

static const struct mig_host_ops ops = { op_pause, op_resume, op_destroy };

/* ---- one migration ---- */

static struct {
	unsigned int calls;
	struct mig_result r;
	char err[256], name[VM_NAME_LEN];
	bool disks_zero;		/* every block written is zero when it is called */
} done_seen;

static bool all_disks_zero(void)
{
	for (unsigned int i = 0; i < FUZZ_NR_DISKS; i++)
		if (!fuzz_disk_zero(&fuzz_disks[i]))
			return false;
	return true;
}

static void recv_done(const struct mig_result *r)
{
	done_seen.calls++;
	CHECK(done_seen.calls == 1);
	done_seen.r = *r;
	CHECK(r->vm_name && memchr(r->vm_name, 0, VM_NAME_LEN));
	strcpy(done_seen.name, r->vm_name);
	done_seen.r.vm_name = done_seen.name;
	/* a copy that failed answers once its wipe is done */
	done_seen.disks_zero = all_disks_zero();
	if (r->err) {
		CHECK(memchr(r->err, 0, sizeof(done_seen.err)));
		strcpy(done_seen.err, r->err);
		done_seen.r.err = done_seen.err;
	}
}

static bool known_code(const char *code)
{
	static const char *const codes[] = { "bad-snapshot", "bad-stream", "invalid", "no-cfi",
					     "no-feature", "exists", "no-memory", "no-stream", "no-device",
					     "stream", "aborted", "unconfirmed", "disk-io" };

	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (!strcmp(code, codes[i]))
			return true;
	return false;
}

/* What the destination sent: a header, then whole sections, each CRC right,
 * in the protocol's order. Returns a bit per type seen (1 << (type - 16));
 * *@running_at: where RUNNING began in it (else the end). */
static unsigned int check_sent(size_t *running_at)
{
	struct snap_header h;
	size_t off = sizeof(h);
	unsigned int seen = 0, last = 0;

	*running_at = port.out_len;
	if (!port.out_len)
		return 0;
	/* the header (or as much of it as a port that stopped took) */
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MIG_MAGIC, 8);
	h.version = MIG_VERSION;
	h.header_size = sizeof(h);
	CHECK(!memcmp(port.out, &h, MIN(port.out_len, sizeof(h))));
	if (port.out_len < sizeof(h)) {
		CHECK(fuzz_port_stopped() || port.slow_tx || !port.connected);
		return 0;
	}
	while (off < port.out_len) {
		struct snap_section s;
		const uint8_t *pl = port.out + off + sizeof(s);

		/* a refusal may leave its last section cut off when the port stops */
		if (port.out_len - off < sizeof(s))
			break;
		memcpy(&s, port.out + off, sizeof(s));
		if (port.out_len - off - sizeof(s) < s.length) {
			CHECK(fuzz_port_stopped() || port.slow_tx || !port.connected);
			break;
		}
		CHECK(s.crc32c == crc32c(pl, (size_t)s.length) && !s.reserved && !s.instance);
		CHECK(s.type > last || s.type == MIG_SEC_ABORT);	/* CAPS, ACCEPT, RUNNING */
		/* once the VM runs here no ABORT may tell the source to resume */
		CHECK(s.type != MIG_SEC_ABORT || !(seen & (1U << (MIG_SEC_RUNNING - 16))));
		CHECK(!(seen & (1U << (s.type - 16))));
		switch (s.type) {
		case MIG_SEC_CAPS:
			CHECK(s.length == sizeof(struct mig_caps) && !seen);
			break;
		case MIG_SEC_ACCEPT: {
			struct mig_accept a;

			CHECK(s.length == sizeof(a));
			memcpy(&a, pl, sizeof(a));
			CHECK(a.flags == (copy_mode ? MIG_ACCEPT_COPY_DISKS : 0));
			break;
		}
		case MIG_SEC_RUNNING:
			CHECK(s.length == sizeof(struct mig_running));
			*running_at = off;
			break;
		case MIG_SEC_ABORT: {
			struct mig_abort a;

			CHECK(s.length == sizeof(a));
			memcpy(&a, pl, sizeof(a));
			CHECK(memchr(a.code, 0, sizeof(a.code)) && a.code[0]);
			CHECK(memchr(a.message, 0, sizeof(a.message)) && a.message[0]);
			CHECK(known_code(a.code));
			break;
		}
		default:
			CHECK(0);
		}
		seen |= 1U << (s.type - 16);
		last = s.type;
		off += sizeof(s) + (size_t)s.length;
	}
	return seen;
}

/* ---- the disks ---- */

/* The whole sections of what the destination read (port.data up to
 * port.pos), as the stream lays them out: a superset of those it took. */
struct walk {
	size_t off;
	struct snap_section s;
	const uint8_t *pl;
};

static bool next_read(struct walk *w)
{
	if (!w->off)
		w->off = sizeof(struct snap_header);
	else
		w->off += sizeof(w->s) + (size_t)w->s.length;
	if (w->off > port.pos || port.pos - w->off < sizeof(w->s))
		return false;
	memcpy(&w->s, port.data + w->off, sizeof(w->s));
	w->pl = port.data + w->off + sizeof(w->s);
	return w->s.length <= port.pos - w->off - sizeof(w->s);
}

/* Whatever the outcome: disk blocks only to VM disks a DISK_LAYOUT of the
 * stream bound, on the host disks the map names; none in shared mode. */
static void check_disk_writes(void)
{
	struct walk w = { 0 };
	unsigned int layouts = 0;

	if (!copy_mode) {
		CHECK(!vms_seen.disk_writes && !vms_seen.disk_flushes);
		return;
	}
	while (next_read(&w))
		if (w.s.type == MIG_SEC_DISK_LAYOUT && w.s.instance < 8)
			layouts |= 1U << w.s.instance;
	CHECK(!(vms_seen.disk_slots_written & ~layouts));
	for (unsigned int i = 0; i < FUZZ_NR_DISKS; i++) {
		const struct fuzz_disk *d = &fuzz_disks[i];

		CHECK(!(d->writes || d->flushes) || d->pci == map.disk_pci[0] ||
		      d->pci == map.disk_pci[1]);
	}
}

/* A copy the VM ran from: each disk holds what the stream's DISK runs for it
 * leave, applied in order (the last one of a unit wins; zero where none
 * came), flushed after its last write, after the start and before any byte
 * of RUNNING was sent (@running_at); the result counts the DISK sections. */
static void check_copied(size_t running_at)
{
	static uint8_t want[FUZZ_COPY_DISK_SECTORS * SNAP_DISK_SECTOR];
	uint64_t blocks = 0, bytes = 0;
	struct walk w = { 0 };

	_Static_assert(FUZZ_COPY_DISK2_SECTORS <= FUZZ_COPY_DISK_SECTORS, "want holds either");
	while (next_read(&w) && w.s.type != SNAP_SEC_END)
		if (w.s.type == SNAP_SEC_DISK) {
			blocks++;
			bytes += w.s.length - sizeof(struct snap_disk_run);
		}
	CHECK(done_seen.r.disk_blocks == blocks && done_seen.r.disk_bytes == bytes);
	CHECK(!strcmp(done_seen.r.disk_mode, copy_mode ? "copy" : "shared"));
	for (unsigned int slot = 0; copy_mode && slot < VM_MAX_DISKS; slot++) {
		const struct fuzz_disk *d = fuzz_disk_at(map.disk_pci[slot]);
		size_t size = (size_t)d->sectors * SNAP_DISK_SECTOR;

		if (!d->data)
			continue;	/* read-only: nothing written (the stub's CHECK) */
		CHECK(size <= sizeof(want));
		memset(want, 0, size);
		memset(&w, 0, sizeof(w));
		while (next_read(&w) && w.s.type != SNAP_SEC_END) {
			struct snap_disk_run run;

			if (w.s.type != SNAP_SEC_DISK || w.s.instance != slot)
				continue;
			memcpy(&run, w.pl, sizeof(run));
			CHECK(run.sector < d->sectors && run.sectors <= d->sectors - run.sector);
			CHECK(w.s.length == sizeof(run) + (uint64_t)run.sectors * SNAP_DISK_SECTOR);
			memcpy(want + run.sector * SNAP_DISK_SECTOR, w.pl + sizeof(run),
			       (size_t)run.sectors * SNAP_DISK_SECTOR);
		}
		CHECK(!memcmp(d->data, want, size));
	}
	for (unsigned int i = 0; i < FUZZ_NR_DISKS; i++) {
		const struct fuzz_disk *d = &fuzz_disks[i];

		CHECK(!d->writes || (!d->dirty && d->flushes && d->flush_started &&
				     d->flush_out_len <= running_at));
	}
}

static void check_installed(struct vm *vm)
{
	struct snap_config c;

	CHECK(vm == &fuzz_vm && vms_seen.live && vms_seen.starts == 1);
	CHECK(vm->state == (vms_seen.paused_starts ? VM_PAUSED : VM_RUNNING));
	CHECK(vm->moved_in);
	snap_config_save(vm, 0, timebase_hz, &c);
	CHECK(snap_config_check(&c) == NULL);
	CHECK(c.ram_size <= FUZZ_RAM_CAP);
	fuzz_check_vcpus(vm, &c);
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		CHECK(vm->vcpus[i].last_hart == -1);
	}
	fuzz_check_devices(vm);
	CHECK(done_seen.r.pages <= (uint64_t)MAX_POLLS * SNAP_RUN_MAX_PAGES);
}

static void receive(const uint8_t *stream, size_t len, const uint8_t *hdr)
{
	uint8_t flags = hdr[0];
	unsigned long polls = 0;
	unsigned int sent;
	size_t running_at;

	fuzz_host_input(flags, stream, len, hdr + 2);
	port.writable = true;
	port.wmode = hdr[1];
	port.slow_tx = flags & FL_SLOW_TX;
	fuzz_disk_slow = flags & FL_SLOW_DISK;
	copy_mode = flags & FL_COPY;
	map = (struct snap_io_map){
		.disk_pci = { FUZZ_COPY_DISK_PCI,
			      (flags & FL_COPY_RO) ? FUZZ_DISK_RO_PCI : FUZZ_COPY_DISK2_PCI },
		.copy = true,
	};
	memset(&done_seen, 0, sizeof(done_seen));
	op_destroys = 0;

	CHECK(!mig_busy() && !mig_recv_armed());
	CHECK(mig_recv_start((flags & FL_NAME) ? "copy" : NULL, false, copy_mode ? &map : NULL,
			     &ops, recv_done) == 0);
	CHECK(mig_recv_start(NULL, false, NULL, &ops, recv_done) == -HYP_EBUSY);
	while (!done_seen.calls) {
		CHECK(++polls <= MAX_POLLS);
		mig_recv_poll();
	}
	mig_recv_poll();	/* idle: nothing happens */
	CHECK(done_seen.calls == 1 && !mig_busy() && !mig_recv_armed());
	CHECK(port.pos <= len && vms_seen.allocs <= 1);
	sent = check_sent(&running_at);
	check_disk_writes();

	if (!done_seen.r.err) {
		CHECK(!done_seen.r.code && done_seen.r.vm);
		CHECK((sent & 1) && (sent & 2) && (sent & (1U << 5)) && !(sent & (1U << 7)));
		CHECK(!(flags & FL_NAME) || !strcmp(done_seen.r.vm->cfg.name, "copy"));
		CHECK(!strcmp(done_seen.r.vm_name, done_seen.r.vm->cfg.name));
		check_installed(done_seen.r.vm);
		check_copied(running_at);
		vm_destroy_finish(done_seen.r.vm);
	} else if (!strcmp(done_seen.r.code, "unconfirmed")) {
		/* it ran here: kept, marked, whatever broke after RUNNING */
		CHECK(done_seen.r.err[0] && done_seen.r.vm && vms_seen.starts == 1);
		CHECK((sent & (1U << 5)) && !(sent & (1U << 7)));
		CHECK(done_seen.r.vm->mig_unconfirmed == VM_MIG_ARRIVED);
		check_installed(done_seen.r.vm);
		check_copied(running_at);
		vm_destroy_finish(done_seen.r.vm);
	} else {
		CHECK(done_seen.r.err[0] && done_seen.r.code && known_code(done_seen.r.code));
		CHECK(!done_seen.r.vm && !vms_seen.live && !vms_seen.starts);
		CHECK(vms_seen.destroys == vms_seen.allocs - vms_seen.alloc_fails);
		/* the host disks are the zeroed ones they were, for another attempt */
		CHECK(done_seen.disks_zero && !vms_seen.disk_flushes);
	}
	CHECK(op_destroys == 0);
	CHECK(!vms_seen.live && !fuzz_ram);
	if (fuzz_verbose())
		fprintf(stderr, "fuzz_mig_recv: %s%s%s (%lu of %zu bytes, %lu pages, %u rounds, "
			"disks %s, %lu blocks written, %u flushed, sent %#x)\n",
			done_seen.r.err ? done_seen.r.code : "migrated in",
			done_seen.r.err ? ": " : "", done_seen.r.err ? done_seen.r.err : "",
			(unsigned long)done_seen.r.bytes, len, (unsigned long)done_seen.r.pages,
			done_seen.r.rounds, done_seen.r.disk_mode, (unsigned long)vms_seen.disk_writes,
			vms_seen.disk_flushes, sent);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_host_init();
	/* no client on the stream port: refused at once */
	memset(&port, 0, sizeof(port));
	CHECK(mig_recv_start(NULL, false, NULL, &ops, recv_done) == -HYP_ENOENT && !mig_busy());
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	if (size < FUZZ_HDR)
		return -1;
	/* the stream in a block of its own size: a read past it is an ASan report */
	copy = malloc(size - FUZZ_HDR + 1);
	CHECK(copy);
	memcpy(copy, data + FUZZ_HDR, size - FUZZ_HDR);
	if (data[0] & FL_FIX_CRC)
		fuzz_fix_crcs(copy, size - FUZZ_HDR);
	receive(copy, size - FUZZ_HDR, data);
	free(copy);
	return 0;
}
