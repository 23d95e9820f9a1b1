/* SPDX-License-Identifier: MIT */
/* Saving a paused VM to the stream port, a piece at a time from the host
 * services' poll (hart 0): header, CONFIG, one VCPU per vCPU, one DEVICE per
 * device model (each model saves itself through its hook: nothing here knows
 * a device), MEMORY runs of non-zero pages, END. */
#include <string.h>
#include <errno.h>
#include <crc32c.h>
#include <hart.h>
#include <log.h>
#include <snapshot.h>
#include <virtio_console.h>
#include <vm.h>

#define STAGE_SIZE	1024	/* a section header and a small payload */
#define POLL_BUDGET_US	2000	/* streaming time per poll, so hart 0 goes on */

enum phase { P_IDLE, P_HEADER, P_CONFIG, P_VCPU, P_DEVICE, P_MEMORY, P_END, P_DONE };

static struct {
	enum phase phase;
	struct vm *vm;
	snap_done_fn done;
	unsigned int index;		/* vCPU or device being written */
	gpa_t next;			/* MEMORY: where the next run search starts */
	uint64_t bytes, pages, sections, start;
	uint8_t stage[STAGE_SIZE];
	size_t stage_len, stage_off;
	const uint8_t *data;		/* guest pages of the current run */
	size_t data_len, data_off;
} sv;

bool snap_busy_save(void);
bool snap_busy_save(void)
{
	return sv.phase != P_IDLE;
}

/* Stage one section: header and payload (payload NULL: it follows in data). */
static void stage_section(uint32_t type, uint32_t instance, const void *payload, size_t len,
			  uint64_t total_len, uint32_t crc)
{
	struct snap_section h = { type, instance, total_len, crc, 0 };

	memcpy(sv.stage, &h, sizeof(h));
	if (payload)
		memcpy(sv.stage + sizeof(h), payload, len);
	sv.stage_len = sizeof(h) + len;
	sv.stage_off = 0;
	sv.sections++;
}

static void stage_small(uint32_t type, uint32_t instance, const void *payload, size_t len)
{
	stage_section(type, instance, payload, len, len, crc32c(payload, len));
}

static bool page_is_zero(const uint64_t *p)
{
	for (unsigned int i = 0; i < SNAP_PAGE_SIZE / 8; i++)
		if (p[i])
			return false;
	return true;
}

static bool chunk_populated(const struct vm *vm, gpa_t gpa)
{
	uint64_t c = (gpa - vm->cfg.ram_gpa) / VM_RAM_CHUNK;

	return vm->populated[c / 64] & (1UL << (c % 64));
}

/* The next run of non-zero pages at or after sv.next, inside one chunk;
 * false when RAM is done. Chunks never touched are zero: not even read. */
static bool next_run(gpa_t *gpa, uint64_t *pages)
{
	struct vm *vm = sv.vm;
	gpa_t end = vm->cfg.ram_gpa + vm->cfg.ram_size;

	while (sv.next < end) {
		gpa_t chunk_end = ALIGN_DOWN(sv.next, VM_RAM_CHUNK) + VM_RAM_CHUNK;
		const uint8_t *host;

		if (!chunk_populated(vm, sv.next)) {
			sv.next = chunk_end;
			continue;
		}
		host = (const uint8_t *)(uintptr_t)(vm->ram_hpa + (sv.next - vm->cfg.ram_gpa));
		if (page_is_zero((const uint64_t *)host)) {
			sv.next += SNAP_PAGE_SIZE;
			continue;
		}
		*gpa = sv.next;
		*pages = 0;
		while (sv.next < chunk_end && !page_is_zero((const uint64_t *)host)) {
			(*pages)++;
			sv.next += SNAP_PAGE_SIZE;
			host += SNAP_PAGE_SIZE;
		}
		return true;
	}
	return false;
}

static void stage_memory_run(gpa_t gpa, uint64_t pages)
{
	struct snap_mem_run run = { gpa, pages };
	const uint8_t *host = (const uint8_t *)(uintptr_t)(sv.vm->ram_hpa +
							      (gpa - sv.vm->cfg.ram_gpa));
	size_t len = pages * SNAP_PAGE_SIZE;
	uint32_t crc = crc32c_update(CRC32C_INIT, &run, sizeof(run));

	crc = crc32c_final(crc32c_update(crc, host, len));
	stage_section(SNAP_SEC_MEMORY, 0, &run, sizeof(run), sizeof(run) + len, crc);
	sv.data = host;
	sv.data_len = len;
	sv.data_off = 0;
	sv.pages += pages;
}

/* Stage what comes next; false when the stream is complete. */
static bool stage_next(void)
{
	struct vm *vm = sv.vm;

	switch (sv.phase) {
	case P_HEADER: {
		struct snap_header h = { .version = SNAP_VERSION, .header_size = sizeof(h) };

		memcpy(h.magic, SNAP_MAGIC, sizeof(h.magic));
		memcpy(sv.stage, &h, sizeof(h));
		sv.stage_len = sizeof(h);
		sv.stage_off = 0;
		sv.phase = P_CONFIG;
		return true;
	}
	case P_CONFIG: {
		struct snap_config c;

		/* the guest's time when it stopped: a restore continues from it */
		snap_config_save(vm, sv.start + vm->htimedelta, timebase_hz, &c);
		stage_small(SNAP_SEC_CONFIG, 0, &c, sizeof(c));
		sv.phase = P_VCPU;
		sv.index = 0;
		return true;
	}
	case P_VCPU: {
		struct snap_vcpu s;

		snap_vcpu_save(&vm->vcpus[sv.index], &s);
		stage_small(SNAP_SEC_VCPU, sv.index, &s, sizeof(s));
		if (++sv.index == vm->cfg.nr_vcpus) {
			sv.phase = P_DEVICE;
			sv.index = 0;
		}
		return true;
	}
	case P_DEVICE: {
		const struct vdev_ops *ops = vdev_all[sv.index];
		uint8_t payload[sizeof(struct snap_device) + 512];
		struct snap_device d = { .state_size = ops->state_size };

		HYP_ASSERT(ops->state_size <= sizeof(payload) - sizeof(d));
		memcpy(d.name, ops->name, MIN(strlen(ops->name), sizeof(d.name) - 1));
		memcpy(payload, &d, sizeof(d));
		ops->save(vm, payload + sizeof(d));
		stage_small(SNAP_SEC_DEVICE, sv.index, payload, sizeof(d) + ops->state_size);
		if (++sv.index == vdev_count) {
			sv.phase = P_MEMORY;
			sv.next = vm->cfg.ram_gpa;
		}
		return true;
	}
	case P_MEMORY: {
		gpa_t gpa;
		uint64_t pages;

		if (next_run(&gpa, &pages)) {
			stage_memory_run(gpa, pages);
			return true;
		}
		sv.phase = P_END;
		return stage_next();
	}
	case P_END: {
		struct snap_end e = { sv.sections, sv.pages };

		stage_small(SNAP_SEC_END, 0, &e, sizeof(e));
		sv.phase = P_DONE;
		return true;
	}
	default:
		return false;
	}
}

static void finish(const char *err)
{
	struct snap_result r = { err, err ? "stream" : NULL, sv.vm, sv.bytes, sv.pages,
				 time_now() - sv.start };
	snap_done_fn done = sv.done;

	sv.phase = P_IDLE;
	sv.vm = NULL;
	if (done)
		done(&r);
}

int snap_save_start(struct vm *vm, snap_done_fn done)
{
	if (sv.phase != P_IDLE)
		return -HYP_EBUSY;
	if (!snap_port_ready())
		return -HYP_ENOENT;
	memset(&sv, 0, sizeof(sv));
	sv.phase = P_HEADER;
	sv.vm = vm;
	sv.done = done;
	sv.start = time_now();
	return 0;
}

/* Push staged bytes, then guest pages; true when both are out. */
static bool push(void)
{
	size_t n;

	while (sv.stage_off < sv.stage_len) {
		n = snap_port_write(sv.stage + sv.stage_off, sv.stage_len - sv.stage_off);
		if (!n)
			return false;
		sv.stage_off += n;
		sv.bytes += n;
	}
	while (sv.data_off < sv.data_len) {
		n = snap_port_write(sv.data + sv.data_off, sv.data_len - sv.data_off);
		if (!n)
			return false;
		sv.data_off += n;
		sv.bytes += n;
	}
	return true;
}

void snap_save_poll(void)
{
	uint64_t until = time_now() + timebase_hz / 1000000 * POLL_BUDGET_US;

	if (sv.phase == P_IDLE)
		return;
	do {
		if (!snap_port_ready()) {
			finish("the stream client went away");
			return;
		}
		if (!push()) {
			vcon_poll();	/* buffers come back as QEMU sends them */
			continue;
		}
		if (sv.phase == P_DONE) {
			finish(NULL);
			return;
		}
		stage_next();
	} while (time_now() < until);
}
