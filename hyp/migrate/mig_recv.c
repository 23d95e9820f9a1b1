/* SPDX-License-Identifier: MIT */
/* The destination side of a live migration (docs/migration.md), a piece at
 * a time from the host services' poll on hart 0. Everything the source sends
 * is checked as a restore checks a snapshot, by the same code (hyp/snap/
 * snap_admit.c: the CONFIG, the vCPU records' tables and hooks, the device
 * models' load hooks), plus the protocol's order. The VM exists
 * from CONFIG on and runs only once END has been checked. Until then any
 * failure destroys it (the source resumes its copy on our ABORT); once it
 * runs it stays, whatever comes or breaks: without DONE it is marked
 * unconfirmed (the source may still hold a paused copy) and never an ABORT
 * goes back. The VM is held by slot and creation number, so a VM its
 * operator destroyed, and whatever takes the slot next, is never touched.
 * Other VMs are never touched.
 *
 * Its disks: in shared mode the VIRTIO sections bind them to the host disks
 * the `incoming` request names (the images the source used). In copy mode
 * (our choice, told in ACCEPT) each DISK_LAYOUT binds one at once to the
 * zeroed host disk given for it, and the DISK sections of every round write
 * its blocks there (hyp/snap/snap_disk_load.c, one block at a time: nothing
 * more is read meanwhile). Once the guest runs here those disks are flushed
 * before RUNNING lets the source drop its copy. A copy that fails before the
 * guest ran writes zeroes over every block it wrote: the host disk is again
 * the zeroed one it was given, for the next attempt. */
#include <arch/riscv/encoding.h>
#include <string.h>
#include <errno.h>
#include <cfi.h>
#include <dbtr.h>
#include <disk_stream.h>
#include <guest_mem.h>
#include <hart.h>
#include <log.h>
#include <migrate.h>
#include <mm.h>
#include <printf.h>
#include <snapshot.h>
#include <vdev.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_io.h>
#include <vm_lifecycle.h>
#include <vsbi.h>
#include "mig_wire.h"

#define POLL_BUDGET_US	2000

enum phase { R_IDLE, R_HELLO, R_CONFIG, R_PRECOPY, R_STATE, R_FLUSHING, R_RUNNING, R_WIPING };

static struct {
	enum phase phase;
	bool armed;			/* a host started for it: wait, and again */
	char name[VM_NAME_LEN];		/* "": the name sent */
	const struct mig_host_ops *ops;
	mig_done_fn done;
	struct section_tx tx;
	struct section_rx rx;
	struct vm *vm;
	uint64_t vm_serial;		/* vm->serial when it was created here */
	struct snap_config config;
	bool started;			/* the guest runs here */
	bool arrive_paused;		/* its operator had paused it at the source */
	uint32_t rounds;
	unsigned int next_vcpu, next_dev, next_vio;
	struct snap_io_map map;		/* where its disks go; copy mode */
	uint64_t sections, pages;	/* since CONFIG, for END */
	/* copy mode: the disks announced, then their blocks (disk_load) */
	unsigned int next_layout;
	bool layout_closed;		/* a section other than DISK_LAYOUT came */
	struct disk_load disk;
	uint64_t disk_blocks, disk_bytes;
	uint64_t running_at;		/* the guest ran here (before the disks' flush) */
	uint64_t start, switchover_at, guest_time;
	char vm_name[VM_NAME_LEN];
	char err[256];
	const char *code;
} mr;

bool mig_recv_active;

/* An armed receive whose client has not come yet is not work (the host
 * services look at the port once a millisecond then). */
static void update_active(void)
{
	mig_recv_active = mr.phase != R_IDLE && (!mr.armed || mr.phase != R_HELLO || mr.rx.bytes);
}

bool mig_recv_armed(void)
{
	return mr.phase == R_HELLO && mr.armed;
}

static void reset_for_client(void)
{
	section_tx_reset(&mr.tx);
	mig_rx_reset(&mr.rx);
	mr.vm = NULL;
	mr.started = false;
	mr.rounds = mr.next_vcpu = mr.next_dev = mr.next_vio = 0;
	mr.sections = mr.pages = 0;
	mr.map.bound = 0;
	mr.next_layout = 0;
	mr.layout_closed = false;
	mr.disk_blocks = mr.disk_bytes = 0;
	mr.vm_name[0] = '\0';
	mr.phase = R_HELLO;
}

int mig_recv_start(const char *name, bool armed, const struct snap_io_map *map,
		   const struct mig_host_ops *ops, mig_done_fn done)
{
	if (mr.phase != R_IDLE)
		return -HYP_EBUSY;
	if (!armed && !snap_port_ready())
		return -HYP_ENOENT;
	memset(&mr, 0, sizeof(mr));
	if (name)
		memcpy(mr.name, name, MIN(strlen(name), sizeof(mr.name) - 1));
	if (map)
		mr.map = *map;
	mr.armed = armed;
	mr.ops = ops;
	mr.done = done;
	mr.start = time_now();
	if (!armed)
		snap_port_drain();
	reset_for_client();
	update_active();
	return 0;
}

bool mig_receiving(const struct vm *vm)
{
	return mr.phase != R_IDLE && vm && mr.vm == vm;
}

/* The VM this receive created, if it still exists: a slot its operator
 * emptied (and perhaps filled again) is not ours any more. */
static struct vm *held_vm(void)
{
	if (mr.vm && (!vm_slot_used(mr.vm) || mr.vm->serial != mr.vm_serial))
		mr.vm = NULL;
	return mr.vm;
}

/* @ok: DONE came. @kept: no DONE, but the VM runs here (unconfirmed): the
 * receive is over as well, no new attempt is awaited. */
static void finish_as(bool ok, bool kept)
{
	struct mig_result r = {
		.err = ok ? NULL : mr.err, .code = ok ? NULL : mr.code,
		.vm_name = mr.vm_name, .vm = ok || kept ? held_vm() : NULL,
		.bytes = mr.rx.bytes, .pages = mr.pages, .rounds = mr.rounds,
		.total_ticks = time_now() - mr.start,
		.downtime_ticks = ok ? mr.running_at - mr.switchover_at : 0,
		.disk_mode = mr.map.copy ? "copy" : "shared",
		.disk_blocks = mr.disk_blocks, .disk_bytes = mr.disk_bytes,
	};
	mig_done_fn done = mr.done;

	disk_load_end(&mr.disk);
	if (!ok && !kept && mr.armed) {
		/* a host waiting for one VM waits for the next attempt */
		pr_info("incoming migration failed: %s; waiting for another", mr.err);
		if (done)
			done(&r);
		snap_port_drain();
		reset_for_client();
		update_active();
		mr.start = time_now();
		return;
	}
	mr.phase = R_IDLE;
	mr.vm = NULL;
	update_active();
	if (done)
		done(&r);
}

static void finish(bool ok)
{
	finish_as(ok, false);
}

/* Push what is staged, waiting up to 100 ms for the port: a refusal must
 * reach the source before the stream is dropped. */
static void tx_flush(void)
{
	uint64_t until = time_now() + timebase_hz / 10;

	while (!section_tx_push(&mr.tx) && snap_port_ready() && time_now() < until)
		vcon_poll();
}

/* The stream ended without DONE after the VM started here: it stays (the
 * source may have destroyed its copy on our RUNNING), and says so. */
static void keep_unconfirmed(const char *why)
{
	struct vm *vm = held_vm();

	snprintf(mr.err, sizeof(mr.err), "the VM runs here, but the source never confirmed it "
		 "let its copy go (%s): if the source still lists it (paused, "
		 "left-unconfirmed), destroy it there", why);
	mr.code = "unconfirmed";
	if (vm) {
		vm->mig_unconfirmed = VM_MIG_ARRIVED;
		pr_info("vm %s: arrived by a migration the source never confirmed (%s): it runs "
			"here; if the source still holds a paused copy, destroy that one", mr.vm_name,
			why);
	}
	finish_as(false, true);
}

/* Give up before the VM ran here: the partial VM goes (the source resumes
 * its own copy). Once it runs here it stays: keep_unconfirmed(). */
/* The partial VM goes, and the receive ends (after the wipe, if any). */
static void drop_partial(void)
{
	struct vm *vm = held_vm();

	disk_load_end(&mr.disk);
	if (vm) {
		vm_destroy_finish(vm);	/* never scheduled, never on a hart */
		pr_info("vm %s: incoming migration discarded: %s", mr.vm_name, mr.err);
	}
	mr.vm = NULL;
	finish(false);
}

static void discard(const char *code, const char *why, bool tell)
{
	if (mr.started)
		return keep_unconfirmed(why);	/* never an ABORT after RUNNING */
	if (mr.phase == R_WIPING)
		return drop_partial();	/* never while wiping (recv_poll() only wipes then) */
	snprintf(mr.err, sizeof(mr.err), "%s", why);
	mr.code = code;
	if (tell)
		tx_flush();
	if (tell && section_tx_idle(&mr.tx) && snap_port_ready()) {
		mig_tx_abort(&mr.tx, code, why);
		tx_flush();
	}
	if (mr.disk_blocks && held_vm()) {
		/* the source resumes at once; the zeroes go here meanwhile */
		pr_info("vm %s: incoming migration failed (%s): wiping the %lu disk blocks it "
			"wrote", mr.vm_name, why, (unsigned long)mr.disk_blocks);
		mr.phase = R_WIPING;
		return;
	}
	drop_partial();
}

bool mig_recv_cancel(struct vm *vm, uint64_t *freed)
{
	if (!mig_receiving(vm))
		return false;
	if (mr.phase == R_WIPING) {
		/* its wipe stops: the host disk keeps part of the copy */
		*freed = vm->cfg.ram_size + vm->meta_size;
		pr_info("vm %s: destroyed while its failed copy was wiped: its host disks hold "
			"part of it; zero them before they take another copy", mr.vm_name);
		drop_partial();
		return true;
	}
	if (!mr.started) {
		/* never ran: it goes now, and the source keeps its copy */
		*freed = vm->cfg.ram_size + vm->meta_size;
		discard("aborted", "the VM was destroyed here by its operator while it arrived; "
			"the source keeps its copy", true);
		return true;
	}
	/* it ran here: its destroy goes on as any VM's; the receive ends, and
	 * nothing of it may touch the slot again */
	mr.vm = NULL;
	snprintf(mr.err, sizeof(mr.err), "the VM was destroyed here by its operator before the "
		 "source confirmed its migration");
	mr.code = "aborted";
	pr_info("vm %s: destroyed here before the source confirmed its migration", mr.vm_name);
	finish_as(false, true);
	return false;
}

/* Refuse what the source sent, naming the section and offset. */
static void refuse(const char *code, const char *why)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "section %u at offset %lu: %s", mr.rx.sec.type,
		 (unsigned long)mr.rx.sec_offset, why);
	discard(code, msg, true);
}

/* The same, also naming the stream offset of the field at @offset in the
 * section's payload. */
static void refuse_at(const char *code, const char *why, uint32_t offset)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "section %u %u at offset %lu, byte %lu: %s", mr.rx.sec.type,
		 mr.rx.sec.instance, (unsigned long)mr.rx.sec_offset,
		 (unsigned long)(mr.rx.sec_offset + sizeof(struct snap_section) + offset), why);
	discard(code, msg, true);
}

static void send_caps(void)
{
	struct mig_caps c = {
		/* AIA: an AIA VM can run here (in software where no guest file) */
		.features = vm_features(CFI_POLICY_TRAP) | (hart_caps.ssaia ? VM_FEAT_AIA : 0),
		.policies = MIG_POLICY_BIT(CFI_POLICY_TRAP) | MIG_POLICY_BIT(CFI_POLICY_DELEGATE) |
			    MIG_POLICY_BIT(CFI_POLICY_STRICT) | MIG_POLICY_BIT(CFI_POLICY_OFF),
		.sbi_version = VSBI_SPEC_VERSION,
		.max_vcpus = MIN(VM_MAX_VCPUS, SNAP_MAX_VCPUS),
		.free_mem = mm_free_bytes(),
		.timebase_hz = timebase_hz,
		.fwft = (hart_caps.zicfilp ? MIG_FWFT_LANDING_PAD : 0) |
			(hart_caps.zicfiss ? MIG_FWFT_SHADOW_STACK : 0),
		.vs_sv = hart_caps.vs_sv,
	};

	mig_tx_header(&mr.tx);
	tx_flush();	/* the header must be out before CAPS is staged over it */
	section_tx_small(&mr.tx, MIG_SEC_CAPS, 0, &c, sizeof(c));
}

static void got_config(void)
{
	const char *code, *why;

	memcpy(&mr.config, mr.rx.stage, sizeof(mr.config));
	mr.vm = snap_admit(&mr.config, mr.name[0] ? mr.name : NULL, &code, &why);
	if (!mr.vm)
		return refuse(code, why);
	memcpy(mr.vm_name, mr.vm->cfg.name, sizeof(mr.vm_name));
	mr.vm_serial = mr.vm->serial;
	mr.vm->moved_in = true;
	pr_info("vm %s: incoming migration: %lu MiB, %u vCPUs, disks %s", mr.vm_name,
		(unsigned long)(mr.config.ram_size >> 20), mr.config.nr_vcpus,
		mr.map.copy ? "copied" : "shared");
	{
		struct mig_accept a = { mr.vm->index, mr.map.copy ? MIG_ACCEPT_COPY_DISKS : 0 };

		section_tx_small(&mr.tx, MIG_SEC_ACCEPT, 0, &a, sizeof(a));
	}
	mr.phase = R_PRECOPY;
}

/* MEMORY or ZERO: a range of RAM, anywhere, any number of times. */
static void *ram_range(uint64_t gpa, uint64_t pages, const char **why)
{
	uint64_t len = pages * SNAP_PAGE_SIZE;
	void *p;

	*why = "page count out of range";
	if (!pages || pages > SNAP_RUN_MAX_PAGES)
		return NULL;
	*why = "range not page aligned or outside guest RAM";
	if (gpa & (SNAP_PAGE_SIZE - 1) || !vm_gpa_range_is_ram(mr.vm, gpa, len))
		return NULL;
	*why = "cannot map guest RAM";
	p = vm_gpa_to_hva(mr.vm, gpa, len, true);
	return p;
}

static void got_memory(void)
{
	struct snap_mem_run run;
	const char *why;
	void *p;

	if (mr.phase != R_PRECOPY && !(mr.phase == R_STATE && !mr.next_vcpu))
		return refuse("bad-stream", "memory after the vCPU state");
	memcpy(&run, mr.rx.stage, sizeof(run));
	if (run.pages != (mr.rx.sec.length - sizeof(run)) / SNAP_PAGE_SIZE)
		return refuse("bad-stream", "run length disagrees with the section length");
	p = ram_range(run.gpa, run.pages, &why);
	if (!p)
		return refuse("bad-stream", why);
	mr.pages += run.pages;
	section_rx_data(&mr.rx, p, run.pages * SNAP_PAGE_SIZE);
}

static void got_zero(const struct mig_zero *z)
{
	const char *why;
	void *p;

	if (mr.phase != R_PRECOPY && !(mr.phase == R_STATE && !mr.next_vcpu))
		return refuse("bad-stream", "memory after the vCPU state");
	p = ram_range(z->gpa, z->pages, &why);
	if (!p)
		return refuse("bad-stream", why);
	memset(p, 0, z->pages * SNAP_PAGE_SIZE);
	mr.pages += z->pages;
}

/* DISK_LAYOUT (copy mode): disk @slot binds at once to the host disk
 * given for it, which must be of its size, and writable if it is. */
static void got_layout(uint32_t slot, const struct mig_disk_layout *l)
{
	struct vm_disk_desc dd = { .read_only = l->flags & MIG_DISK_READ_ONLY,
				   .iops = VM_DISK_IOPS_DEFAULT,
				   .bandwidth = VM_DISK_BANDWIDTH_DEFAULT };
	const char *why;

	if (!mr.map.copy || mr.phase != R_PRECOPY || mr.layout_closed)
		return refuse("bad-stream", "DISK_LAYOUT out of turn (only right after ACCEPT, "
			      "in copy mode)");
	if (slot != mr.next_layout || slot >= VM_MAX_DISKS)
		return refuse("bad-stream", "DISK_LAYOUT out of order");
	if (l->flags & ~MIG_DISK_READ_ONLY)
		return refuse_at("bad-stream", "unknown flags",
				 offsetof(struct mig_disk_layout, flags));
	if (l->reserved)
		return refuse_at("bad-stream", "reserved field is not 0",
				 offsetof(struct mig_disk_layout, reserved));
	dd.pci_dev = mr.map.disk_pci[slot];
	if (!dd.pci_dev)
		return refuse("no-device", "copy mode, but no host disk was given for this disk "
			      "(incoming disk0/disk1)");
	if (vm_io_add_disk(mr.vm, slot, &dd, &why))
		return refuse("no-device", why);
	mr.map.bound |= 1U << slot;
	mr.next_layout++;
	if (vm_io_disk_sectors(mr.vm, slot) != l->sectors)
		return refuse_at("no-device", "the host disk given for it is not of its size",
				 offsetof(struct mig_disk_layout, sectors));
	if (!dd.read_only && vm_io_disk_read_only(mr.vm, slot))
		return refuse("no-device", "the host disk given for it is read-only");
}

/* DISK (copy mode): a block, any round, before the vCPU state; its sectors
 * go into our buffer, and to the disk once their CRC is good. */
static void got_disk(void)
{
	struct snap_disk_run run;
	uint32_t offset;
	const char *why;
	void *dst;

	if (!mr.map.copy)
		return refuse("bad-stream", "a DISK section, but the disks are shared");
	if (mr.phase != R_PRECOPY && !(mr.phase == R_STATE && !mr.next_vcpu))
		return refuse("bad-stream", "a disk block after the vCPU state");
	memcpy(&run, mr.rx.stage, sizeof(run));
	mr.disk.again = true;	/* each round sends the blocks written since */
	why = disk_load_section(&mr.disk, mr.vm, mr.rx.sec.instance);
	if (!why && !(mr.map.bound & (1U << mr.rx.sec.instance)))
		why = "a DISK section for a disk no DISK_LAYOUT bound";
	if (why)
		return refuse("bad-stream", why);
	why = disk_load_run(&mr.disk, &run, mr.rx.sec.length, &dst, &offset);
	if (why)
		return refuse_at("bad-stream", why, offset);
	mr.disk_blocks++;
	mr.disk_bytes += (uint64_t)run.sectors * SNAP_DISK_SECTOR;
	section_rx_data(&mr.rx, dst, (uint64_t)run.sectors * SNAP_DISK_SECTOR);
}

/* The guest runs here (its disks flushed, in copy mode): tell the source. */
static void send_running(void)
{
	struct mig_running r = { mr.running_at - mr.switchover_at, timebase_hz };

	section_tx_small(&mr.tx, MIG_SEC_RUNNING, 0, &r, sizeof(r));
	mr.phase = R_RUNNING;
}

static void got_end(const struct snap_end *e)
{
	struct vm *vm = mr.vm;

	if (e->sections != mr.sections || e->memory_pages != mr.pages)
		return refuse("bad-stream", "END counts do not match the stream");
	/* disks come first: each one announced has had its VIRTIO state */
	if (mr.next_vio < mr.next_layout)
		return refuse("bad-stream", "a disk of DISK_LAYOUT without its VIRTIO section");
	/* guest time goes on from the switchover: it never goes back */
	vm->htimedelta = mr.guest_time - time_now();
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		vm->vcpus[i].last_hart = -1;
	if (mr.arrive_paused)
		vm_start_paused(vm);
	else
		vm_start(vm);
	snap_vio_started(vm, mr.arrive_paused);
	mr.started = true;
	mr.running_at = time_now();
	pr_info("vm %s: %s here %lu us after the switchover began; waiting for the "
		"source to let it go", mr.vm_name, mr.arrive_paused ? "paused (as it was)" : "running",
		(unsigned long)((mr.running_at - mr.switchover_at) * 1000000 / timebase_hz));
	if (mr.disk_blocks) {
		mr.phase = R_FLUSHING;	/* RUNNING once the copy is on stable storage */
		return;
	}
	send_running();
}

/* Exactly the payload size each section type has: the state sections' as a
 * restore admits them (snap_section_length()), and the protocol's own. */
static bool length_ok(const struct snap_section *s)
{
	switch (s->type) {
	case SNAP_SEC_CONFIG:
	case SNAP_SEC_VCPU:
	case SNAP_SEC_DEVICE:
	case SNAP_SEC_END:
		return s->length == snap_section_length(s->type, s->instance, SNAP_VERSION);
	case SNAP_SEC_VIRTIO:
		return snap_vio_length_ok(s->length);
	case MIG_SEC_ZERO: return s->length == sizeof(struct mig_zero);
	case MIG_SEC_ROUND: return s->length == sizeof(struct mig_round);
	case MIG_SEC_SWITCHOVER: return s->length == sizeof(struct mig_switchover);
	case MIG_SEC_DONE: return s->length == sizeof(struct mig_done);
	case MIG_SEC_ABORT: return s->length == sizeof(struct mig_abort);
	case MIG_SEC_DISK_LAYOUT: return s->length == sizeof(struct mig_disk_layout);
	default: return false;
	}
}

static void got_section(void)
{
	const struct snap_section *s = &mr.rx.sec;
	const void *pl = mr.rx.stage;

	if (s->type == SNAP_SEC_MEMORY || s->type == SNAP_SEC_DISK) {
		mr.sections++;
		if (s->type == SNAP_SEC_DISK) {
			mr.layout_closed = true;
			return got_disk();
		}
		mr.layout_closed = true;
		return got_memory();
	}
	if (!length_ok(s))
		return refuse("bad-stream", "unknown section, or impossible length for it");
	if (mr.phase == R_PRECOPY && s->type != MIG_SEC_DISK_LAYOUT && s->type != MIG_SEC_ABORT)
		mr.layout_closed = true;
	if (s->type == MIG_SEC_ABORT) {
		struct mig_abort a;
		char why[200];

		memcpy(&a, pl, sizeof(a));
		a.code[sizeof(a.code) - 1] = a.message[sizeof(a.message) - 1] = '\0';
		snprintf(why, sizeof(why), "the source gave up: %s", a.message);
		return discard("aborted", why, false);
	}
	if (mr.phase == R_RUNNING) {
		if (s->type != MIG_SEC_DONE)
			return refuse("bad-stream", "expected DONE");
		pr_info("vm %s: migrated in (%lu pages, %lu disk blocks, %lu bytes, %u rounds), "
			"downtime here %lu us", mr.vm_name, (unsigned long)mr.pages,
			(unsigned long)mr.disk_blocks, (unsigned long)mr.rx.bytes, mr.rounds,
			(unsigned long)((mr.running_at - mr.switchover_at) * 1000000 / timebase_hz));
		return finish(true);
	}
	if (s->type != SNAP_SEC_END)
		mr.sections++;
	if (s->instance && s->type != SNAP_SEC_VCPU && s->type != SNAP_SEC_DEVICE &&
	    s->type != SNAP_SEC_VIRTIO && s->type != MIG_SEC_DISK_LAYOUT)
		return refuse("bad-stream", "instance is not 0");
	switch (s->type) {
	case SNAP_SEC_CONFIG:
		if (mr.phase != R_CONFIG)
			return refuse("bad-stream", "CONFIG out of turn");
		return got_config();
	case MIG_SEC_DISK_LAYOUT: {
		struct mig_disk_layout l;

		memcpy(&l, pl, sizeof(l));
		return got_layout(s->instance, &l);
	}
	case MIG_SEC_ZERO: {
		struct mig_zero z;

		memcpy(&z, pl, sizeof(z));
		return got_zero(&z);
	}
	case MIG_SEC_ROUND: {
		struct mig_round r;

		memcpy(&r, pl, sizeof(r));
		if (mr.phase != R_PRECOPY || r.round != mr.rounds + 1 || r.reserved)
			return refuse("bad-stream", "ROUND out of turn");
		if (!mr.map.copy && (r.disk_blocks || r.disk_dirty))
			return refuse("bad-stream", "ROUND counts disk blocks, but the disks are shared");
		mr.rounds = r.round;
		pr_info("vm %s: incoming round %u: %lu pages, %lu dirty at the source", mr.vm_name,
			r.round, (unsigned long)r.pages, (unsigned long)r.dirty);
		return;
	}
	case MIG_SEC_SWITCHOVER: {
		struct mig_switchover sw;

		memcpy(&sw, pl, sizeof(sw));
		if (mr.phase != R_PRECOPY || sw.rounds != mr.rounds)
			return refuse("bad-stream", "SWITCHOVER out of turn");
		if (sw.flags & ~MIG_SWITCHOVER_PAUSED)
			return refuse("bad-stream", "unknown SWITCHOVER flags");
		mr.arrive_paused = sw.flags & MIG_SWITCHOVER_PAUSED;
		mr.switchover_at = time_now();
		mr.guest_time = sw.guest_time;
		mr.phase = R_STATE;
		return;
	}
	case SNAP_SEC_VCPU: {
		const char *why;
		uint32_t offset;

		if (mr.phase != R_STATE || s->instance != mr.next_vcpu ||
		    s->instance >= mr.config.nr_vcpus)
			return refuse("bad-stream", "VCPU out of order");
		why = snap_admit_vcpu(mr.vm, s->instance, pl, SNAP_VERSION, &mr.config, &offset);
		if (why)	/* too few DBTR triggers here: a feature this host lacks */
			return refuse_at(why == dbtr_no_triggers ? "no-feature" : "bad-stream", why,
					 offset);
		mr.next_vcpu++;
		return;
	}
	case SNAP_SEC_DEVICE: {
		const char *why;
		uint32_t offset;

		/* never past the last model: vdev_all[] has vdev_count entries
		 * (a restore's got_section() says the same) */
		if (mr.phase != R_STATE || mr.next_vcpu != mr.config.nr_vcpus ||
		    s->instance != mr.next_dev || s->instance >= vdev_count)
			return refuse("bad-stream", "DEVICE out of order");
		why = snap_admit_device_at(mr.vm, s->instance, pl, &offset);
		if (why)
			return refuse_at("bad-stream", why, offset);
		mr.next_dev++;
		return;
	}
	case SNAP_SEC_VIRTIO: {
		const char *why, *code;
		uint32_t offset, derived = 0;

		if (mr.phase != R_STATE || mr.next_dev != vdev_count || s->instance != mr.next_vio)
			return refuse("bad-stream", "VIRTIO out of order");
		why = snap_vio_admit(mr.vm, s->instance, pl, s->length, &mr.map, &derived, &offset,
				     &code);
		if (why)	/* a stream's fault, or a device this host cannot give */
			return refuse_at(strcmp(code, "no-device") ? "bad-stream" : code, why, offset);
		mr.next_vio++;
		return;
	}
	case SNAP_SEC_END: {
		struct snap_end e;

		if (mr.phase != R_STATE || mr.next_dev != vdev_count)
			return refuse("bad-stream", "END before the VM state is complete");
		memcpy(&e, pl, sizeof(e));
		return got_end(&e);
	}
	default:
		return refuse("bad-stream", "a message out of turn");
	}
}

static bool recv_poll(void);

bool mig_recv_poll(void)
{
	bool more;

	if (mr.phase == R_IDLE)
		return false;
	more = recv_poll();
	update_active();
	return more && mr.phase != R_IDLE;
}

/* A step of the disks' own work: true if it is what this poll does. */
static bool disk_step(void)
{
	const char *why = NULL;

	switch (mr.phase) {
	case R_WIPING:
		if (disk_load_wipe(&mr.disk, &why))
			return true;
		if (why)
			pr_info("vm %s: the wipe of its partial copy failed: %s; zero its host disks "
				"before they take another copy", mr.vm_name, why);
		drop_partial();
		return true;
	case R_FLUSHING:
		if (disk_load_flush(&mr.disk, &why))
			return true;
		if (why)	/* it runs here already: the guest's own flush will fail too */
			pr_info("vm %s: ERROR: its copied disk did not flush (%s)", mr.vm_name, why);
		send_running();
		return true;
	default:
		/* a block on its way to the disk: nothing more is read meanwhile
		 * (its buffer is the next one's), and that wait is not a stall */
		if (!disk_load_busy(&mr.disk, &why))
			return false;
		mr.rx.moved = time_now();
		if (why)
			refuse("disk-io", why);
		return true;
	}
}

/* True when it stopped on its time bound with more to do at once. */
static bool recv_poll(void)
{
	uint64_t until = time_now() + timebase_hz / 1000000 * POLL_BUDGET_US;
	bool looked = false;	/* the port was looked at since the last byte */

	do {
		bool connected = snap_port_ready();
		enum section_rx_event e;

		/* The wipe waits for nothing of the source's: what is left of our
		 * ABORT goes out meanwhile if the port takes it. (It waited for
		 * the ABORT to go out first, and a source that stopped reading
		 * then left it undone: the partial VM went at the stall with its
		 * host disk half written, and the next attempt, which leaves zero
		 * blocks out, would have kept the stale ones. Found by
		 * tests/fuzz/fuzz_mig_recv.c, seed copy-bad-crc-source-stops-reading.) */
		if (mr.phase == R_WIPING) {
			if (connected)
				section_tx_push(&mr.tx);
			disk_step();
			continue;
		}
		if (connected && !section_tx_push(&mr.tx)) {
			if (snap_port_stalled(mr.tx.moved)) {
				discard("stream", "the source stopped reading", false);
				return false;
			}
			vcon_poll();
			continue;
		}
		if (disk_step())
			continue;
		/* bytes that came before a disconnect still count (DONE, ABORT) */
		e = mig_rx_poll(&mr.rx);
		switch (e) {
		case SECTION_RX_NONE:
			if (!connected) {
				if (mr.armed && mr.phase == R_HELLO && !mr.rx.bytes) {
					mr.rx.moved = mr.tx.moved = time_now();
					return false;		/* no client yet */
				}
				discard("stream", mr.phase == R_RUNNING ?
					"the stream broke before the source let the VM go" :
					"the stream from the source broke", false);
				return false;
			}
			if (snap_port_stalled(mr.rx.moved) && (!mr.armed || mr.rx.bytes)) {
				discard("no-stream", "no byte from the source in time", false);
				return false;
			}
			/* nothing after a fresh look at the port either: wait for
			 * its interrupt (as a restore does, snap_load_poll()),
			 * but not in the stop-and-copy, whose wait is the VM's
			 * downtime: it polls as before */
			if (looked && mr.phase != R_STATE)
				return false;
			vcon_poll();
			looked = true;
			continue;
		case SECTION_RX_HEADER: {
			const char *why = mig_rx_header_check(&mr.rx);

			if (why) {
				discard("bad-stream", why, false);
				return false;
			}
			send_caps();
			mr.phase = R_CONFIG;
			break;
		}
		case SECTION_RX_PAYLOAD:
			got_section();
			break;
		case SECTION_RX_DATA:
			if (mr.rx.sec.type == SNAP_SEC_DISK) {
				const char *why = disk_load_write(&mr.disk);

				if (why)
					refuse("disk-io", why);
			}
			break;
		default:
			refuse("bad-stream", mr.rx.why ? mr.rx.why : "bad framing");
			return false;
		}
		looked = false;
	} while (mr.phase != R_IDLE && time_now() < until);
	return mr.phase != R_IDLE;
}
