/* SPDX-License-Identifier: MIT */
/* Restoring a VM from the stream port, a piece at a time from the host
 * services' poll (hart 0). Every byte is checked before it is used: the
 * header, each section's type, order, length and CRC, every field
 * (snap_admit.c: the records' tables and hooks, the device models' load
 * hooks). The VM exists from CONFIG on but is never scheduled until END has been checked; on any refusal it is destroyed,
 * so there is never a half-restored guest, and other VMs are not touched. */
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <crc32c.h>
#include <guest_mem.h>
#include <hart.h>
#include <printf.h>
#include <snapshot.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_lifecycle.h>

#define POLL_BUDGET_US	2000
#define STAGE_SIZE	1024	/* the largest non-memory payload fits */

enum phase { L_IDLE, L_HEADER, L_SECTION, L_PAYLOAD, L_DATA };

static struct {
	enum phase phase;
	snap_done_fn done;
	char name[VM_NAME_LEN];		/* "" : the saved name */
	struct vm *vm;
	struct snap_config config;
	uint32_t version;		/* the stream's (snap_header_check()) */
	uint64_t total, offset;		/* stream length announced, bytes read */
	uint64_t sections, pages, start;
	uint64_t moved;			/* when the last byte came */
	struct snap_section sec;
	uint64_t sec_offset;		/* stream offset of the section header */
	unsigned int next_vcpu, next_dev;
	gpa_t next_gpa;			/* MEMORY runs go up */
	uint8_t stage[STAGE_SIZE];
	size_t need, have;		/* bytes wanted into stage, bytes there */
	uint8_t *data;			/* MEMORY: guest RAM being filled */
	uint64_t data_len, data_off;
	uint32_t crc;
	char err[160];
	const char *code;
} ld;

static const char *const section_names[] = { "?", "CONFIG", "VCPU", "DEVICE", "MEMORY", "END" };

static const char *sec_name(uint32_t type)
{
	return type < ARRAY_SIZE(section_names) ? section_names[type] : "unknown";
}

bool snap_busy_load(void);
bool snap_busy_load(void)
{
	return ld.phase != L_IDLE;
}

bool snap_busy_save(void);
bool snap_busy(void)
{
	return snap_busy_load() || snap_busy_save();
}

static void finish(bool ok)
{
	struct snap_result r = { ok ? NULL : ld.err, ok ? NULL : ld.code, ld.vm, ld.offset,
				 ld.pages, time_now() - ld.start };
	snap_done_fn done = ld.done;

	if (!ok && ld.vm) {
		/* never scheduled, never on a hart: its memory goes back at once */
		vm_destroy_finish(ld.vm);
		r.vm = NULL;
	}
	ld.phase = L_IDLE;
	ld.vm = NULL;
	if (done)
		done(&r);
}

/* Refuse, naming the section and the stream offset. */
static void refuse(const char *code, const char *why)
{
	if (ld.phase == L_HEADER)
		snprintf(ld.err, sizeof(ld.err), "header: %s", why);
	else
		snprintf(ld.err, sizeof(ld.err), "section %s %u at offset %lu: %s",
			 sec_name(ld.sec.type), ld.sec.instance, (unsigned long)ld.sec_offset, why);
	ld.code = code;
	finish(false);
}

/* Refuse a payload field: also the stream offset of the field at fault
 * (@offset: in the payload). */
static void refuse_field(const char *why, uint32_t offset)
{
	snprintf(ld.err, sizeof(ld.err), "section %s %u at offset %lu, byte %lu: %s",
		 sec_name(ld.sec.type), ld.sec.instance, (unsigned long)ld.sec_offset,
		 (unsigned long)(ld.sec_offset + sizeof(struct snap_section) + offset), why);
	ld.code = "bad-snapshot";
	finish(false);
}

static void expect(size_t n, enum phase phase)
{
	ld.need = n;
	ld.have = 0;
	ld.phase = phase;
}

int snap_load_start(uint64_t bytes, const char *name, snap_done_fn done)
{
	if (snap_busy())
		return -HYP_EBUSY;
	if (!snap_port_ready())
		return -HYP_ENOENT;
	memset(&ld, 0, sizeof(ld));
	if (name)
		memcpy(ld.name, name, MIN(strlen(name), sizeof(ld.name) - 1));
	ld.done = done;
	ld.total = bytes;
	ld.start = ld.moved = time_now();
	expect(sizeof(struct snap_header), L_HEADER);
	return 0;
}

/* A section header arrived: is it the one that may come now? */
static void got_section(void)
{
	struct snap_section *s = &ld.sec;
	bool have_config = ld.vm != NULL;

	memcpy(s, ld.stage, sizeof(*s));
	if (s->reserved)
		return refuse("bad-snapshot", "reserved field is not 0");
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
		    s->instance != ld.next_dev || s->instance >= vdev_count)
			return refuse("bad-snapshot", "out of order (devices follow the VCPUs, by index)");
		break;
	case SNAP_SEC_MEMORY:
		if (!have_config || ld.next_dev != vdev_count)
			return refuse("bad-snapshot", "out of order (memory follows the devices)");
		if (s->instance)
			return refuse("bad-snapshot", "MEMORY instance is not 0");
		if (s->length < sizeof(struct snap_mem_run) || s->length > SNAP_SECTION_MAX ||
		    (s->length - sizeof(struct snap_mem_run)) % SNAP_PAGE_SIZE)
			return refuse("bad-snapshot", "impossible MEMORY length");
		expect(sizeof(struct snap_mem_run), L_PAYLOAD);
		return;
	case SNAP_SEC_END:
		if (!have_config || ld.next_dev != vdev_count || s->instance)
			return refuse("bad-snapshot", "END before the VM state is complete");
		break;
	default:
		return refuse("bad-snapshot", "unknown section type");
	}
	if (s->length != snap_section_length(s->type, s->instance, ld.version))
		return refuse("bad-snapshot", "impossible length for this section");
	expect((size_t)s->length, L_PAYLOAD);
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

	why = snap_admit_vcpu(ld.vm, ld.sec.instance, payload, ld.version, &ld.config, &offset);
	if (why)
		return refuse_field(why, offset);
	ld.next_vcpu++;
}

static void got_device(const uint8_t *payload)
{
	const char *why = snap_admit_device(ld.vm, ld.sec.instance, payload);

	if (why)
		return refuse("bad-snapshot", why);
	ld.next_dev++;
}

static void got_run(const struct snap_mem_run *run)
{
	struct vm *vm = ld.vm;
	uint64_t len = ld.sec.length - sizeof(*run);

	if (run->pages != len / SNAP_PAGE_SIZE || !run->pages ||
	    run->pages > SNAP_RUN_MAX_PAGES)
		return refuse("bad-snapshot", "run length disagrees with the section length");
	if (run->gpa & (SNAP_PAGE_SIZE - 1) || run->gpa < ld.next_gpa ||
	    !vm_gpa_range_is_ram(vm, run->gpa, len))
		return refuse("bad-snapshot", "run outside guest RAM, or not after the last one");
	ld.data = vm_gpa_to_hva(vm, run->gpa, len, true);
	if (!ld.data)
		return refuse("no-memory", "cannot map guest RAM");
	ld.data_len = len;
	ld.data_off = 0;
	ld.next_gpa = run->gpa + len;
	ld.pages += run->pages;
	ld.phase = L_DATA;
}

static void got_end(const struct snap_end *e)
{
	struct vm *vm = ld.vm;

	if (e->sections != ld.sections || e->memory_pages != ld.pages)
		return refuse("bad-snapshot", "END counts do not match the stream");
	if (ld.offset != ld.total)
		return refuse("bad-snapshot", "bytes after END");
	/* the guest's time goes on from where it stopped (it never goes back) */
	vm->htimedelta = ld.config.guest_time - time_now();
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		vm->vcpus[i].last_hart = -1;
	vm_start(vm);
	finish(true);
}

/* A whole payload is in the stage and its CRC is good: use it. */
static void got_payload(void)
{
	switch (ld.sec.type) {
	case SNAP_SEC_CONFIG: got_config((const void *)ld.stage); break;
	case SNAP_SEC_VCPU: got_vcpu(ld.stage); break;
	case SNAP_SEC_DEVICE: got_device(ld.stage); break;
	case SNAP_SEC_MEMORY: got_run((const void *)ld.stage); return;	/* data follows */
	case SNAP_SEC_END: got_end((const void *)ld.stage); return;
	}
	if (ld.phase != L_IDLE) {
		ld.sections++;
		ld.sec_offset = ld.offset;
		expect(sizeof(struct snap_section), L_SECTION);
	}
}

/* Feed @n bytes at @p (they follow ld.offset). Returns bytes consumed. */
static size_t feed(const uint8_t *p, size_t n)
{
	size_t take;

	if (ld.phase == L_DATA) {
		take = (size_t)MIN((uint64_t)n, ld.data_len - ld.data_off);
		memcpy(ld.data + ld.data_off, p, take);
		ld.crc = crc32c_update(ld.crc, p, take);
		ld.data_off += take;
		ld.offset += take;
		if (ld.data_off == ld.data_len) {
			if (crc32c_final(ld.crc) != ld.sec.crc32c) {
				refuse("bad-snapshot", "CRC mismatch");
				return take;
			}
			ld.sections++;
			ld.sec_offset = ld.offset;
			expect(sizeof(struct snap_section), L_SECTION);
		}
		return take;
	}
	take = MIN(n, ld.need - ld.have);
	memcpy(ld.stage + ld.have, p, take);
	ld.have += take;
	ld.offset += take;
	if (ld.have < ld.need)
		return take;
	switch (ld.phase) {
	case L_HEADER: {
		const char *why = snap_header_check((const void *)ld.stage);

		if (why) {
			refuse("bad-snapshot", why);
			break;
		}
		ld.version = ((const struct snap_header *)(const void *)ld.stage)->version;
		ld.sec_offset = ld.offset;
		expect(sizeof(struct snap_section), L_SECTION);
		break;
	}
	case L_SECTION:
		got_section();
		break;
	case L_PAYLOAD:
		/* MEMORY: the run header starts the CRC, the pages continue it */
		ld.crc = crc32c_update(CRC32C_INIT, ld.stage, ld.have);
		if (ld.sec.type != SNAP_SEC_MEMORY && crc32c_final(ld.crc) != ld.sec.crc32c) {
			refuse("bad-snapshot", "CRC mismatch");
			break;
		}
		got_payload();
		break;
	default:
		break;
	}
	return take;
}

void snap_load_poll(void)
{
	uint64_t until = time_now() + timebase_hz / 1000000 * POLL_BUDGET_US;
	uint8_t buf[4096];

	if (ld.phase == L_IDLE)
		return;
	do {
		size_t n, off = 0;

		if (!snap_port_ready()) {
			snprintf(ld.err, sizeof(ld.err), "the stream ended at offset %lu of %lu",
				 (unsigned long)ld.offset, (unsigned long)ld.total);
			ld.code = "bad-snapshot";
			finish(false);
			return;
		}
		/* never read past the announced length: what follows is not ours */
		n = snap_port_read(buf, (size_t)MIN((uint64_t)sizeof(buf), ld.total - ld.offset));
		if (!n) {
			if (ld.offset == ld.total) {
				refuse("bad-snapshot", "the stream ended before END (truncated)");
				return;
			}
			if (snap_port_stalled(ld.moved)) {
				snprintf(ld.err, sizeof(ld.err), "no stream byte for %u ms at offset "
					 "%lu of %lu", snap_stall_ms, (unsigned long)ld.offset,
					 (unsigned long)ld.total);
				ld.code = "no-stream";
				finish(false);
				return;
			}
			vcon_poll();
			continue;
		}
		ld.moved = time_now();
		while (off < n && ld.phase != L_IDLE)
			off += feed(buf + off, n - off);
	} while (ld.phase != L_IDLE && time_now() < until);
}
