/* SPDX-License-Identifier: MIT */
/* Restoring a VM from the stream port, a piece at a time from the host
 * services' poll (hart 0), read by the shared receiver (section_rx.c: the
 * framing, lengths a section cannot have, CRCs; memory straight into the
 * VM's RAM). Every byte is checked before it is used: the header, each
 * section's type, order, length and CRC, every field (snap_admit.c: the
 * records' and the device states' tables and hooks). A stream without the
 * disks' content names each disk's identity (DISK_ID, version 6): the same
 * blocks of the host disk its VIRTIO section bound are read and compared
 * (snap_disk_id.c), nothing more read from the stream meanwhile. The VM exists from
 * CONFIG on but is never scheduled until END has been checked; on any refusal it is destroyed,
 * so there is never a half-restored guest, and other VMs are not touched. */
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <dbtr.h>
#include <guest_mem.h>
#include <hart.h>
#include <printf.h>
#include <section_stream.h>
#include <snapshot.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_io.h>
#include <vm_lifecycle.h>
#include <disk_stream.h>

#define POLL_BUDGET_US	2000

static struct {
	bool busy;
	snap_done_fn done;
	char name[VM_NAME_LEN];		/* "" : the saved name */
	struct vm *vm;
	struct snap_config config;
	uint32_t version;		/* the stream's (snap_header_check()); 0: none yet */
	unsigned int devices;		/* the DEVICE sections it has (snap_device_count()) */
	uint64_t total;			/* stream length announced: rx's limit */
	uint64_t sections, pages, start;
	unsigned int next_vcpu, next_dev, next_vio;
	struct snap_io_map map;		/* where its disks go */
	uint32_t macs_derived;
	bool memory_begun;		/* VIRTIO sections come before MEMORY */
	bool disks_begun;		/* DISK sections come after MEMORY and VIRTIO */
	uint64_t disk_runs;		/* DISK sections written */
	uint64_t flags;			/* the header's */
	gpa_t next_gpa;			/* MEMORY runs go up */
	struct disk_load disk;		/* DISK sections: snap_disk_load.c */
	unsigned int next_disk_id;	/* DISK_ID sections: the disk whose comes next */
	bool id_checking;		/* its host disk's samples are being read */
	struct snap_disk_id id_saved;	/* what the stream says they are */
	struct disk_id_read id_read;	/* snap_disk_id.c */
	struct section_rx rx;		/* its sec: the section being read */
	char err[256];
	const char *code;
} ld;

static const char *const section_names[] = { "?", "CONFIG", "VCPU", "DEVICE", "MEMORY", "END",
					     "VIRTIO", "DISK", "DISK_ID" };

static const char *sec_name(uint32_t type)
{
	return type < ARRAY_SIZE(section_names) ? section_names[type] : "unknown";
}

bool snap_busy_load(void)
{
	return ld.busy;
}

bool snap_busy_save(void);
bool snap_busy(void)
{
	return snap_busy_load() || snap_busy_save();
}

static void finish(bool ok)
{
	struct snap_result r = { ok ? NULL : ld.err, ok ? NULL : ld.code, ld.vm, ld.rx.bytes,
				 ld.pages, time_now() - ld.start, ld.macs_derived, ld.disk_runs, 0 };
	snap_done_fn done = ld.done;

	disk_load_end(&ld.disk);
	disk_id_end(&ld.id_read, true);
	ld.id_checking = false;
	if (!ok && ld.vm) {
		/* never scheduled, never on a hart: its memory goes back at once */
		vm_destroy_finish(ld.vm);
		r.vm = NULL;
	}
	ld.busy = false;
	ld.vm = NULL;
	if (done)
		done(&r);
}

/* Refuse, naming the section and the stream offset. */
static void refuse(const char *code, const char *why)
{
	if (!ld.version)
		snprintf(ld.err, sizeof(ld.err), "header: %s", why);
	else
		snprintf(ld.err, sizeof(ld.err), "section %s %u at offset %lu: %s",
			 sec_name(ld.rx.sec.type), ld.rx.sec.instance,
			 (unsigned long)ld.rx.sec_offset, why);
	ld.code = code;
	finish(false);
}

/* Refuse a payload field: also the stream offset of the field at fault
 * (@offset: in the payload), with @code. */
static void refuse_field_code(const char *code, const char *why, uint32_t offset)
{
	snprintf(ld.err, sizeof(ld.err), "section %s %u at offset %lu, byte %lu: %s",
		 sec_name(ld.rx.sec.type), ld.rx.sec.instance, (unsigned long)ld.rx.sec_offset,
		 (unsigned long)(ld.rx.sec_offset + sizeof(struct snap_section) + offset), why);
	ld.code = code;
	finish(false);
}

static void refuse_field(const char *why, uint32_t offset)
{
	refuse_field_code("bad-snapshot", why, offset);
}

int snap_load_start(uint64_t bytes, const char *name, const struct snap_io_map *map,
		    snap_done_fn done)
{
	if (snap_busy())
		return -HYP_EBUSY;
	if (!snap_port_ready())
		return -HYP_ENOENT;
	memset(&ld, 0, sizeof(ld));
	if (name)
		memcpy(ld.name, name, MIN(strlen(name), sizeof(ld.name) - 1));
	if (map)
		ld.map = *map;
	ld.done = done;
	ld.total = bytes;
	ld.start = time_now();
	section_rx_reset(&ld.rx, bytes);
	ld.busy = true;
	return 0;
}

/* The header arrived: a snapshot we can read? */
static void got_header(void)
{
	const struct snap_header *h = (const void *)ld.rx.stage;
	const char *why = snap_header_check(h);

	if (why)
		return refuse("bad-snapshot", why);
	ld.version = h->version;
	ld.devices = snap_device_count(h->version);
	ld.flags = h->flags;
}

/* A stream without the disks' content (version 6) names every disk's
 * identity before memory: the slot of the first disk that has had none, or
 * -1 (all had theirs, or the stream is of a version without). */
static int disk_id_missing(void)
{
	if (ld.version < SNAP_VERSION_DISK_ID || (ld.flags & SNAP_F_DISKS) ||
	    ld.next_disk_id >= VM_MAX_DISKS || !vm_io_disk_sectors(ld.vm, ld.next_disk_id))
		return -1;
	return (int)ld.next_disk_id;
}

static void refuse_missing_disk_id(int slot)
{
	char why[128];

	snprintf(why, sizeof(why), "disk %d has no DISK_ID section (a version 6 stream without "
		 "the disks' content names each disk's identity, before memory)", slot);
	refuse("bad-snapshot", why);
}

/* A section header arrived: is it the one that may come now? */
static void got_section(void)
{
	const struct snap_section *s = &ld.rx.sec;
	bool have_config = ld.vm != NULL;
	const char *why;

	switch (s->type) {
	case SNAP_SEC_CONFIG:
		if (have_config)
			return refuse("bad-snapshot", "a second CONFIG");
		break;
	case SNAP_SEC_VCPU:
		if (!have_config || s->instance != ld.next_vcpu ||
		    s->instance >= ld.config.nr_vcpus)
			return refuse("bad-snapshot", "out of order (VCPUs follow CONFIG, by id)");
		break;
	case SNAP_SEC_DEVICE:
		if (!have_config || ld.next_vcpu != ld.config.nr_vcpus ||
		    s->instance != ld.next_dev || s->instance >= ld.devices)
			return refuse("bad-snapshot", "out of order (devices follow the VCPUs, by index)");
		break;
	case SNAP_SEC_VIRTIO:
		if (ld.version < SNAP_VERSION_VIRTIO)
			return refuse("bad-snapshot", "unknown section type (VIRTIO is version 4's)");
		/* before MEMORY, and before DISK (a stream may have no memory run) */
		if (!have_config || ld.next_dev != ld.devices || s->instance != ld.next_vio ||
		    ld.memory_begun || ld.disks_begun || ld.next_disk_id)
			return refuse("bad-snapshot", "out of order (virtio devices follow the "
				      "devices, by slot from 0, before the disks' identities, memory "
				      "and disks)");
		if (!snap_vio_length_ok(s->length))
			return refuse("bad-snapshot", "impossible length for this section");
		break;
	case SNAP_SEC_MEMORY:
		if (!have_config || ld.next_dev != ld.devices || ld.disks_begun)
			return refuse("bad-snapshot", "out of order (memory follows the devices, "
				      "before the disks)");
		if (disk_id_missing() >= 0)
			return refuse_missing_disk_id(disk_id_missing());
		break;	/* its instance and length: section_rx_take() */
	case SNAP_SEC_DISK_ID:
		if (ld.version < SNAP_VERSION_DISK_ID)
			return refuse("bad-snapshot", "unknown section type (DISK_ID is version 6's)");
		if (ld.flags & SNAP_F_DISKS)
			return refuse("bad-snapshot", "a DISK_ID section in a stream with the disks' "
				      "content (header flag DISKS)");
		if (!have_config || ld.next_dev != ld.devices || ld.memory_begun ||
		    s->instance != ld.next_disk_id)
			return refuse("bad-snapshot", "out of order (the disks' identities follow "
				      "the virtio devices, by slot from 0, before memory)");
		if (s->instance >= VM_MAX_DISKS || !vm_io_disk_sectors(ld.vm, s->instance))
			return refuse("bad-snapshot", "a DISK_ID section for a slot that is not a "
				      "disk");
		break;
	case SNAP_SEC_DISK:
		if (!(ld.flags & SNAP_F_DISKS))
			return refuse("bad-snapshot", "a DISK section in a stream without the disks "
				      "(header flag DISKS)");
		if (!have_config || ld.next_dev != ld.devices)
			return refuse("bad-snapshot", "out of order (disks follow the devices)");
		why = disk_load_section(&ld.disk, ld.vm, s->instance);
		if (why)
			return refuse("bad-snapshot", why);
		ld.disks_begun = true;
		break;	/* its length: section_rx_take() */
	case SNAP_SEC_END:
		if (!have_config || ld.next_dev != ld.devices || s->instance)
			return refuse("bad-snapshot", "END before the VM state is complete");
		if (disk_id_missing() >= 0)
			return refuse_missing_disk_id(disk_id_missing());
		break;
	default:
		return refuse("bad-snapshot", "unknown section type");
	}
	if (s->type != SNAP_SEC_MEMORY && s->type != SNAP_SEC_VIRTIO && s->type != SNAP_SEC_DISK &&
	    s->length != snap_section_length(s->type, s->instance, ld.version))
		return refuse("bad-snapshot", "impossible length for this section");
	why = section_rx_take(&ld.rx);
	if (why)
		refuse("bad-snapshot", why);
}

static void got_config(const struct snap_config *c)
{
	const char *code, *why;
	uint32_t offset;

	if (ld.version == 1 && c->vs_sv)	/* a reserved field there */
		return refuse_field("reserved field is not 0", offsetof(struct snap_config, vs_sv));
	why = snap_config_problem(c, &offset);
	if (why)
		return refuse_field(why, offset);
	if (ld.version < SNAP_VERSION_AIA && (c->features & SNAP_FEAT_AIA))
		return refuse_field("features: AIA (bit 5) is version 7's (an older stream has no "
				    "IMSIC record nor aplic device)", offsetof(struct snap_config, features));
	ld.vm = snap_admit(c, ld.name[0] ? ld.name : NULL, &code, &why);
	if (!ld.vm)
		return refuse(code, why);
	ld.config = *c;
	ld.next_gpa = c->ram_gpa;
}

static void got_vcpu(const void *payload)
{
	const char *why;
	uint32_t offset;

	why = snap_admit_vcpu(ld.vm, ld.rx.sec.instance, payload, ld.version, &ld.config, &offset);
	if (why)	/* too few DBTR triggers here: a feature this host lacks */
		return refuse_field_code(why == dbtr_no_triggers ? "no-feature" : "bad-snapshot",
					 why, offset);
	ld.next_vcpu++;
}

static void got_device(const uint8_t *payload)
{
	uint32_t offset;
	const char *why = snap_admit_device_at(ld.vm, ld.rx.sec.instance, payload, &offset);

	if (why)
		return refuse_field(why, offset);
	ld.next_dev++;
}

static void got_vio(const uint8_t *payload)
{
	const char *code, *why;
	uint32_t offset;

	why = snap_vio_admit(ld.vm, ld.rx.sec.instance, payload, ld.rx.sec.length, &ld.map,
			     &ld.macs_derived, &offset, &code);
	if (why)
		return refuse_field_code(code, why, offset);
	ld.next_vio++;
}

/* A disk's identity: checked, then its host disk's samples read (polls). */
static void got_disk_id(const struct snap_disk_id *id)
{
	uint32_t offset;
	const char *why = disk_id_problem(id, vm_io_disk_sectors(ld.vm, ld.rx.sec.instance),
					  &offset);

	if (why)
		return refuse_field(why, offset);
	ld.id_saved = *id;
	disk_id_begin(&ld.id_read, ld.vm, ld.rx.sec.instance);
	ld.id_checking = true;
}

/* Read on in the host disk the DISK_ID section names: true while that
 * goes on; false once done, the disk the saved one or the restore refused. */
static bool disk_id_checking(void)
{
	const struct snap_disk_id *got = &ld.id_read.id;
	const char *why;
	char msg[160];

	switch (disk_id_poll(&ld.id_read, &why)) {
	case DID_WAIT:
		return true;
	case DID_FAILED:
		refuse("disk-io", why);
		return false;
	case DID_DONE:
		break;
	}
	for (uint32_t i = 0; i < got->samples; i++) {
		if (got->sample[i].crc32c == ld.id_saved.sample[i].crc32c)
			continue;
		snprintf(msg, sizeof(msg), "disk %u: the host disk is not the saved disk (block %lu "
			 "differs): give the image as it was at the snapshot", ld.id_read.slot,
			 (unsigned long)got->sample[i].block);
		refuse_field_code("no-device", msg, (uint32_t)(offsetof(struct snap_disk_id, sample) +
				  i * sizeof(got->sample[0]) +
				  offsetof(struct snap_disk_id_sample, crc32c)));
		return false;
	}
	disk_id_end(&ld.id_read, true);
	ld.id_checking = false;
	ld.next_disk_id++;
	return false;
}

static void got_run(const struct snap_mem_run *run)
{
	struct vm *vm = ld.vm;
	uint64_t len = ld.rx.sec.length - sizeof(*run);
	void *ram;

	if (run->pages != len / SNAP_PAGE_SIZE || !run->pages ||
	    run->pages > SNAP_RUN_MAX_PAGES)
		return refuse("bad-snapshot", "run length disagrees with the section length");
	if (run->gpa & (SNAP_PAGE_SIZE - 1) || run->gpa < ld.next_gpa ||
	    !vm_gpa_range_is_ram(vm, run->gpa, len))
		return refuse("bad-snapshot", "run outside guest RAM, or not after the last one");
	ram = vm_gpa_to_hva(vm, run->gpa, len, true);
	if (!ram)
		return refuse("no-memory", "cannot map guest RAM");
	section_rx_data(&ld.rx, ram, len);
	ld.memory_begun = true;
	ld.next_gpa = run->gpa + len;
	ld.pages += run->pages;
}

static void got_disk_run(const struct snap_disk_run *run)
{
	uint32_t offset;
	void *dst;
	const char *why = disk_load_run(&ld.disk, run, ld.rx.sec.length, &dst, &offset);

	if (why)
		return refuse_field(why, offset);
	section_rx_data(&ld.rx, dst, (uint64_t)run->sectors * SNAP_DISK_SECTOR);
}

/* The sectors of a DISK section are in, their CRC good: to the disk. */
static void got_disk_data(void)
{
	const char *why = disk_load_write(&ld.disk);

	if (why)
		return refuse("disk-io", why);
	ld.sections++;
	ld.disk_runs++;
}

static void got_end(const struct snap_end *e)
{
	struct vm *vm = ld.vm;

	if (e->sections != ld.sections || e->memory_pages != ld.pages)
		return refuse("bad-snapshot", "END counts do not match the stream");
	if (ld.rx.bytes != ld.total)
		return refuse("bad-snapshot", "bytes after END");
	/* the guest's time goes on from where it stopped (it never goes back) */
	vm->htimedelta = ld.config.guest_time - time_now();
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		vm->vcpus[i].last_hart = -1;
	vm_start(vm);
	snap_vio_started(vm, false);
	finish(true);
}

/* A whole payload is in the stage and its CRC is good: use it. */
static void got_payload(void)
{
	const void *payload = ld.rx.stage;

	switch (ld.rx.sec.type) {
	case SNAP_SEC_CONFIG: got_config(payload); break;
	case SNAP_SEC_VCPU: got_vcpu(payload); break;
	case SNAP_SEC_DEVICE: got_device(payload); break;
	case SNAP_SEC_VIRTIO: got_vio(payload); break;
	case SNAP_SEC_DISK_ID: got_disk_id(payload); break;
	case SNAP_SEC_MEMORY: got_run(payload); return;	/* its pages follow */
	case SNAP_SEC_DISK: got_disk_run(payload); return;	/* its sectors follow */
	case SNAP_SEC_END: got_end(payload); return;
	}
	ld.sections++;
}

/* Nothing to read now: the stream ended, stalled, or bytes are on their way. */
static void no_byte(void)
{
	if (ld.rx.bytes == ld.total)
		return refuse("bad-snapshot", "the stream ended before END (truncated)");
	if (snap_port_stalled(ld.rx.moved)) {
		snprintf(ld.err, sizeof(ld.err), "no stream byte for %u ms at offset %lu of %lu",
			 snap_stall_ms, (unsigned long)ld.rx.bytes, (unsigned long)ld.total);
		ld.code = "no-stream";
		return finish(false);
	}
	vcon_poll();
}

bool snap_load_poll(void)
{
	uint64_t until = time_now() + timebase_hz / 1000000 * POLL_BUDGET_US;
	bool looked = false;	/* the port was looked at since the last byte */
	const char *why;

	if (!ld.busy)
		return false;
	do {
		if (!snap_port_ready()) {
			snprintf(ld.err, sizeof(ld.err), "the stream ended at offset %lu of %lu",
				 (unsigned long)ld.rx.bytes, (unsigned long)ld.total);
			ld.code = "bad-snapshot";
			finish(false);
			return false;
		}
		/* a disk's identity being read: nothing more is read meanwhile,
		 * and that wait is not a stall */
		if (ld.id_checking) {
			ld.rx.moved = time_now();
			if (disk_id_checking())
				continue;	/* until the budget is spent */
			if (!ld.busy)
				return false;
			continue;
		}
		/* a block on its way to the disk: nothing more is read meanwhile
		 * (its buffer is the next one's), and that wait is not a stall */
		if (disk_load_busy(&ld.disk, &why)) {
			ld.rx.moved = time_now();
			if (why) {
				refuse("disk-io", why);
				return false;
			}
			continue;	/* until the budget is spent */
		}
		switch (section_rx_poll(&ld.rx)) {
		case SECTION_RX_NONE:
			/* Nothing after a fresh look at the port either: hart 0
			 * waits for the port's interrupt (bytes came) rather than
			 * spin, which took a host CPU from QEMU's thread that
			 * feeds the port (docs/performance.md, "Stream
			 * throughput"). */
			if (looked)
				return false;
			no_byte();
			looked = true;
			continue;
		case SECTION_RX_HEADER: got_header(); break;
		case SECTION_RX_SECTION: got_section(); break;
		case SECTION_RX_PAYLOAD: got_payload(); break;
		case SECTION_RX_DATA:
			if (ld.rx.sec.type == SNAP_SEC_DISK)
				got_disk_data();
			else
				ld.sections++;
			break;
		case SECTION_RX_ERROR: refuse("bad-snapshot", ld.rx.why); break;
		}
		looked = false;
	} while (ld.busy && time_now() < until);
	return ld.busy;
}
