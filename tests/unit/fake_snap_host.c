/* SPDX-License-Identifier: MIT */
/* The host around an engine that streams a VM out (fake_snap_host.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arch/riscv/encoding.h>
#include <gstage.h>
#include <guest_mem.h>
#include <hart.h>
#include <mm.h>
#include <host_ipi.h>
#include <sbi_client.h>
#include <sched.h>
#include <steal_time.h>
#include <snapshot.h>
#include <tlb.h>
#include "fake_snap_host.h"
#include "test.h"

/* ---- the host around the engine ---- */

struct hart harts[HART_MAX];
struct hart *test_this_hart = &harts[0];
uint64_t timebase_hz = 1000000;
static uint64_t now;
bool clock_manual;
uint64_t clock_now, port_bps, port_since;
size_t port_from;

uint64_t time_now(void)
{
	if (!clock_manual)
		return ++now;
	clock_now++;
	if (port_bps)
		stream_limit = MIN(port_from + (clock_now - port_since) * port_bps / timebase_hz,
				   (uint64_t)STREAM_MAX);
	return clock_now;
}

int alloc_budget = -1;		/* mm_alloc_raw()s left; < 0: no limit */
uint64_t free_bytes = 1ULL << 30;	/* what mm_free_bytes() says */

uint64_t mm_free_bytes(void)
{
	return free_bytes;
}

/* the rest of the allocator and the TLB: tests/unit/host_memory.c */
hpa_t mm_alloc_raw(uint64_t size, uint64_t align)
{
	if (alloc_budget == 0)
		return 0;
	if (alloc_budget > 0)
		alloc_budget--;
	return mm_alloc(size, align);
}

/* the scheduler: no vCPU is on a hart, kicks go nowhere */
void sched_lock(void)
{
}

void sched_unlock(void)
{
}

void sched_kick_idle(void)
{
}

unsigned int reboots_noted;

void sched_note_reboot(void)
{
	reboots_noted++;
}

unsigned int host_kicks;

void sched_kick_host(void)
{
	host_kicks++;
}

void vcpu_kick(struct vcpu *v)
{
	(void)v;
}

bool vm_off_cpu(const struct vm *vm)
{
	(void)vm;
	return true;
}

bool imsic_files_vm_released(struct vm *vm)
{
	(void)vm;
	return true;
}

uint64_t vcpu_exits(const struct vcpu *v)
{
	(void)v;
	return 0;
}

void steal_vm_resumed(struct vm *vm, uint64_t t)
{
	(void)vm;
	(void)t;
}

void host_ipi_send(unsigned int hart)
{
	(void)hart;
}

void pr_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("  carapace: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
}

void hyp_panic(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	abort();
}

/* what the snapshot writes besides memory (staged by hyp/snap/snap_emit.c,
 * linked): the contents do not matter here */
void snap_config_save(const struct vm *vm, uint64_t guest_time, uint64_t hz,
		      struct snap_config *c)
{
	(void)vm;
	(void)guest_time;
	(void)hz;
	memset(c, 0, sizeof(*c));
}

void snap_vcpu_save(const struct vcpu *v, struct snap_vcpu *s)
{
	(void)v;
	memset(s, 0, sizeof(*s));
}

/* one device of 8 bytes (hyp/snap/snap_admit.c, which saves the real ones,
 * is not linked) */
const unsigned int vdev_count = 1;

size_t snap_device_save(struct vm *vm, uint32_t index, void *payload, size_t room)
{
	struct snap_device d = { .name = "test", .state_size = 8 };

	(void)vm;
	(void)index;
	if (room < sizeof(d) + 8)
		abort();
	memcpy(payload, &d, sizeof(d));
	memset((uint8_t *)payload + sizeof(d), 0x5a, 8);
	return sizeof(d) + 8;
}

/* virtio devices (hyp/snap/snap_vio.c, not linked): as many as a test
 * says, each a payload of 8 bytes of its slot */
unsigned int vio_devices;

unsigned int snap_vio_count(const struct vm *vm)
{
	(void)vm;
	return vio_devices;
}

size_t snap_vio_save(struct vm *vm, uint32_t slot, void *payload, size_t room)
{
	struct snap_device d = { .name = "vio", .state_size = 8 };

	(void)vm;
	if (room < sizeof(d) + 8 || slot >= vio_devices)
		abort();
	memcpy(payload, &d, sizeof(d));
	memset((uint8_t *)payload + sizeof(d), (int)slot, 8);
	return sizeof(d) + 8;
}

/* ---- the stream port: a buffer that takes bytes up to a limit; another
 * the test fills, read as it comes ---- */

uint8_t *stream;
size_t stream_len, stream_limit;
bool client_there = true;
static uint8_t port_in[64 * 1024];
static size_t port_in_len, port_in_off;

void port_in_put(const void *bytes, size_t len)
{
	if (port_in_len + len > sizeof(port_in))
		abort();
	memcpy(port_in + port_in_len, bytes, len);
	port_in_len += len;
}

size_t snap_port_read(void *buf, size_t len)
{
	size_t n = MIN(len, port_in_len - port_in_off);

	memcpy(buf, port_in + port_in_off, n);
	port_in_off += n;
	return n;
}

/* what a client left behind before the engine started */
void snap_port_drain(void)
{
	port_in_off = port_in_len;
}

bool snap_port_ready(void)
{
	return client_there;
}

size_t snap_port_write(const void *buf, size_t len)
{
	size_t n = stream_limit > stream_len ? MIN(len, stream_limit - stream_len) : 0;

	memcpy(stream + stream_len, buf, n);
	stream_len += n;
	return n;
}

bool snap_port_stalled(uint64_t since)
{
	(void)since;
	return false;
}

void vcon_poll(void)
{
}

/* ---- the host disks of the VM's (vm_io.h): disk 0 in memory, a request
 * done at the next poll; the guard and the watch the engine sets are kept
 * to play the guest ---- */

uint8_t disk[DISK_SECTORS * SNAP_DISK_SECTOR];
unsigned int nr_disks;
static struct vm_disk_req *queued[64];
unsigned int nr_queued;
vm_disk_guard_fn guard_fn;
uint64_t disk_bad_sector = ~0ULL;
uint8_t disk_flush_status = VIRTIO_BLK_S_OK;
struct disk_flush_log flushes[8];
unsigned int nr_flushes;
static struct vm_disk_req *flush_queued;

uint64_t vm_io_disk_sectors(struct vm *vm, unsigned int d)
{
	EXPECT_TRUE(vm == &vms[0]);
	return d < nr_disks ? DISK_SECTORS : 0;
}

unsigned int disk_ro_mask;

bool vm_io_disk_read_only(struct vm *vm, unsigned int d)
{
	(void)vm;
	return disk_ro_mask & (1U << d);
}

unsigned int guest_disk_busy, most_queued;

unsigned int vm_io_guest_disk_busy(void)
{
	return guest_disk_busy;
}

int vm_io_disk_submit(struct vm *vm, unsigned int d, struct vm_disk_req *r, bool write,
		      uint64_t sector, uint32_t sectors, void *buf)
{
	EXPECT_TRUE(vm == &vms[0] && d == 0 && !write && nr_queued < 64);
	EXPECT_TRUE(sector + sectors <= DISK_SECTORS);
	r->seg = (struct blk_seg){ (hpa_t)(uintptr_t)buf, sectors * SNAP_DISK_SECTOR };
	r->req.sector = sector;
	r->done = 0;
	queued[nr_queued++] = r;
	most_queued = MAX(most_queued, nr_queued);
	return 0;
}

void vm_io_disk_poll(struct vm *vm, unsigned int d)
{
	(void)vm, (void)d;
	for (unsigned int i = 0; i < nr_queued; i++) {
		struct vm_disk_req *r = queued[i];

		memcpy((void *)(uintptr_t)r->seg.hpa, disk + r->req.sector * SNAP_DISK_SECTOR,
		       r->seg.len);
		r->status = r->req.sector == disk_bad_sector ? VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
		r->done = 1;
	}
	nr_queued = 0;
	if (flush_queued) {
		flush_queued->status = disk_flush_status;
		flush_queued->done = 1;
		flush_queued = NULL;
		flushes[nr_flushes - 1].stream_at_done = stream_len;
	}
}

/* one FLUSH at a time, as the engines send them */
int vm_io_disk_flush(struct vm *vm, unsigned int d, struct vm_disk_req *r)
{
	EXPECT_TRUE(vm == &vms[0] && d < nr_disks && !flush_queued);
	if (nr_flushes >= 8)
		abort();
	r->done = 0;
	flush_queued = r;
	flushes[nr_flushes++] = (struct disk_flush_log){ d, stream_len, ~(size_t)0, vm->state };
	return 0;
}

void vm_io_disk_guard(struct vm *vm, vm_disk_guard_fn fn)
{
	EXPECT_TRUE(vm == &vms[0]);
	guard_fn = fn;
}

/* the held writes a block's read lets go: the guard answers again */
void vm_io_disk_kick(struct vm *vm)
{
	EXPECT_TRUE(vm == &vms[0]);
}

vm_disk_written_fn watch_fn;

void vm_io_disk_watch(struct vm *vm, vm_disk_written_fn fn)
{
	EXPECT_TRUE(vm == &vms[0]);
	watch_fn = fn;
}

void fill_block(unsigned int b, uint8_t byte)
{
	uint64_t at = (uint64_t)b * BLOCK_BYTES;

	memset(disk + at, byte, MIN((uint64_t)BLOCK_BYTES, sizeof(disk) - at));
}

/* ---- the VM ---- */

struct vm vms[VM_MAX];
unsigned int nr_vms = 1;

void fill_chunk(unsigned int c, uint8_t byte)
{
	static uint8_t buf[SZ_2M];

	memset(buf, byte, sizeof(buf));
	vm_copy_to_guest(&tvm, GPA(c, 0), buf, sizeof(buf));
}

void vm_new(unsigned int chunks)
{
	memset(&tvm, 0, sizeof(tvm));
	tvm.cfg.ram_gpa = VM_GUEST_RAM_BASE;
	tvm.cfg.ram_size = RAM_SIZE;
	tvm.cfg.nr_vcpus = 1;
	tvm.cfg.boot_count = 1;
	tvm.vcpus[0].vm = &tvm;
	tvm.vcpus[0].hart = -1;
	memcpy(tvm.cfg.name, "tvm", 4);
	tvm.ram_hpa = (hpa_t)(uintptr_t)aligned_alloc(SZ_2M, RAM_SIZE);
	tvm.meta_hpa = mm_alloc(vm_meta_size(RAM_SIZE), GSTAGE_ROOT_SIZE);
	vm_ram_init(&tvm);
	for (unsigned int c = 0; c < chunks; c++)
		fill_chunk(c, (uint8_t)(0x10 + c));
	tvm.state = VM_PAUSED;
	if (!stream)
		stream = malloc(STREAM_MAX);
	stream_len = stream_limit = 0;
	port_in_len = port_in_off = 0;
	client_there = true;
	alloc_budget = -1;
	nr_disks = 0;
	disk_ro_mask = 0;
	nr_queued = 0;
	guard_fn = NULL;
	watch_fn = NULL;
	disk_bad_sector = ~0ULL;
	disk_flush_status = VIRTIO_BLK_S_OK;
	nr_flushes = 0;
	flush_queued = NULL;
	memset(disk, 0, sizeof(disk));
}

void vm_free(void)
{
	free((void *)(uintptr_t)tvm.ram_hpa);
	mm_free(tvm.meta_hpa, 0);
}
