/* SPDX-License-Identifier: MIT */
/* The host under a restore or an incoming migration, for the snapshot and
 * migration fuzz targets (fuzz_restore_host.h). */
#include <string.h>
#include <sanitizer/asan_interface.h>
#include <arch/riscv/encoding.h>
#include <cfi.h>
#include <dbtr.h>
#include <entropy.h>
#include <errno.h>
#include <guest_mem.h>
#include <hart.h>
#include <mm.h>
#include <snapshot.h>
#include <vblk.h>
#include <vdev.h>
#include <vimsic.h>
#include <vio_mmio.h>
#include <virtio_console.h>
#include <vm_io.h>
#include <vnet.h>
#include <vswitch.h>
#include <vm_lifecycle.h>
#include <vsbi.h>
#include <crc32c.h>
#include "fuzz_restore_host.h"

struct hart_caps hart_caps;
uint64_t timebase_hz = 10000000;
struct hart *test_this_hart;
void (*vm_console_out)(struct vm *vm, const char *buf, size_t len);
uint32_t snap_stall_ms = SNAP_STALL_MS_DEFAULT;
struct fuzz_port port;
struct fuzz_vms_seen vms_seen;
struct vm fuzz_vm;
uint8_t *fuzz_ram;
static uint8_t *host_ram;	/* FUZZ_RAM_CAP bytes, allocated once */
/* 2 MiB chunks of the VM's RAM touched since it was made: each is zeroed at
 * its first touch, as the real one does (a restored VM's virtio devices read
 * rings that no MEMORY section wrote: zero, never an earlier input's bytes) */
static uint64_t chunks_touched;
static struct vswitch *lan;
static struct vswitch_port other_port;	/* another VM's NIC on lan */
static void other_deliver(void *ctx, const void *frame, uint32_t len);
static void check_vio(struct vm *vm);
static void disks_reset(void);

/* ---- the host ---- */

uint64_t mm_free_bytes(void)
{
	return FUZZ_RAM_CAP;
}

void vcon_poll(void)
{
}

/* snap_save.c is not linked: no save is ever under way. */
bool snap_busy_save(void);
bool snap_busy_save(void)
{
	return false;
}

void fuzz_host_init(void)
{
	static const uint8_t taken[ETH_ALEN] = FUZZ_TAKEN_MAC;

	host_ram = malloc(FUZZ_RAM_CAP);
	CHECK(host_ram);
	CHECK(vswitch_create(FUZZ_SWITCH, &lan) == 0);
	vswitch_port_init(&other_port, VSWITCH_PORT_VM, taken, other_deliver, NULL);
	CHECK(vswitch_attach(lan, &other_port) == 0);
}

void fuzz_host_input(uint8_t flags, const uint8_t *data, size_t len, const uint8_t sizes[6])
{
	bool all_empty = true;

	memset(&port, 0, sizeof(port));
	port.data = data;
	port.len = len;
	port.connected = true;
	memcpy(port.sizes, sizes, sizeof(port.sizes));
	for (int i = 0; i < 6; i++)
		all_empty &= sizes[i] == 255;
	/* a connected client that never sends keeps the load waiting (there is
	 * no timeout): not an input worth having, so read as much as asked */
	if (all_empty)
		memset(port.sizes, 0, sizeof(port.sizes));
	memset(&vms_seen, 0, sizeof(vms_seen));
	fuzz_disk_changed = ~0ULL;
	disks_reset();
	hart_caps = (struct hart_caps){
		.sstc = true, .zicfilp = true, .zicfiss = !(flags & FL_NO_ZICFISS),
		.henvcfg_ok = ENVCFG_STCE | ENVCFG_PBMTE |
			      ((flags & FL_NO_SVADU) ? 0 : ENVCFG_ADUE),
		.fw_cfi = true, .vmid_bits = 14, .vs_sv = 48, .ssaia = !fuzz_no_ssaia,
	};
	/* DBTR with 4 triggers: a record's trigger 4..7 is no-feature here */
	dbtr_host = (struct dbtr_host){ .ok = true, .trig_max = 4 };
}

bool fuzz_no_ssaia;

/* ---- the host's disks and switch (vm_io.c's, stubbed: fuzz_restore_host.h) ---- */

#define BLOCK_BYTES	(SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR)
_Static_assert(FUZZ_DISK_SECTORS / SNAP_DISK_BLOCK_SECTORS <= 128, "a bit a block");

static uint8_t disk_data[FUZZ_DISK_SECTORS * SNAP_DISK_SECTOR];
static uint8_t copy_disk_data[FUZZ_COPY_DISK_SECTORS * SNAP_DISK_SECTOR];
static uint8_t copy_disk2_data[FUZZ_COPY_DISK2_SECTORS * SNAP_DISK_SECTOR];

struct fuzz_disk fuzz_disks[FUZZ_NR_DISKS] = {
	{ .pci = FUZZ_DISK_PCI, .sectors = FUZZ_DISK_SECTORS, .data = disk_data },
	{ .pci = FUZZ_DISK_RO_PCI, .read_only = true, .sectors = FUZZ_DISK_SECTORS },
	{ .pci = FUZZ_COPY_DISK_PCI, .sectors = FUZZ_COPY_DISK_SECTORS, .data = copy_disk_data },
	{ .pci = FUZZ_COPY_DISK2_PCI, .sectors = FUZZ_COPY_DISK2_SECTORS,
	  .data = copy_disk2_data },
};
bool fuzz_disk_slow;

/* A VM's disk slot: the host disk it is bound to, as the VM sees it. */
struct disk_link {
	struct fuzz_disk *hd;
	bool read_only;			/* the VM's disk is (vm_disk_desc.read_only) */
	/* a request taken by a slow disk, done at the second poll after it */
	struct vm_disk_req *req;
	bool write;
	uint64_t sector;
	uint32_t sectors;
	const void *buf;
	unsigned int polls;
};

static struct {
	struct vm_disk_desc disk[VM_MAX_DISKS];
	struct disk_link link[VM_MAX_DISKS];
	struct vm_nic_desc nic[VM_MAX_NICS];
	unsigned int nr_disks, nr_nics;
	bool disk_taken[FUZZ_NR_DISKS];
	struct vswitch_port port[VM_MAX_NICS];
	unsigned int submits;		/* slow disks: every other one is refused */
} io;

struct fuzz_disk *fuzz_disk_at(uint8_t pci)
{
	for (unsigned int i = 0; i < FUZZ_NR_DISKS; i++)
		if (fuzz_disks[i].pci == pci)
			return &fuzz_disks[i];
	return NULL;
}

static uint8_t *block_at(const struct fuzz_disk *d, uint64_t b)
{
	return d->data + b * BLOCK_BYTES;
}

static uint64_t block_bytes(const struct fuzz_disk *d, uint64_t b)
{
	return MIN((uint64_t)BLOCK_BYTES, (d->sectors - b * SNAP_DISK_BLOCK_SECTORS) * SNAP_DISK_SECTOR);
}

static bool block_written(const struct fuzz_disk *d, uint64_t b)
{
	return d->written[b / 64] & (1ULL << (b % 64));
}

bool fuzz_disk_zero(const struct fuzz_disk *d)
{
	for (uint64_t b = 0; d->data && b * SNAP_DISK_BLOCK_SECTORS < d->sectors; b++) {
		const uint8_t *p = block_at(d, b);

		if (!block_written(d, b))
			continue;
		for (uint64_t i = 0; i < block_bytes(d, b); i++)
			if (p[i])
				return false;
	}
	return true;
}

/* A new input: each disk a new zeroed image (only the blocks written are
 * cleared: a restore's disk is 8 MiB). */
static void disks_reset(void)
{
	for (unsigned int i = 0; i < FUZZ_NR_DISKS; i++) {
		struct fuzz_disk *d = &fuzz_disks[i];

		for (uint64_t b = 0; d->data && b * SNAP_DISK_BLOCK_SECTORS < d->sectors; b++)
			if (block_written(d, b))
				memset(block_at(d, b), 0, block_bytes(d, b));
		memset(d->written, 0, sizeof(d->written));
		d->writes = d->flushes = 0;
		d->dirty = d->flush_started = false;
		d->flush_out_len = 0;
	}
	fuzz_disk_slow = false;
}

hpa_t mm_alloc(uint64_t size, uint64_t align)
{
	void *p = aligned_alloc(align, ALIGN_UP(size, align));

	CHECK(p);
	memset(p, 0, size);
	return (hpa_t)(uintptr_t)p;
}

/* not zeroed: ASan's poisoning is not a zero, but nothing may read it unwritten */
hpa_t mm_alloc_raw(uint64_t size, uint64_t align)
{
	void *p = aligned_alloc(align, ALIGN_UP(size, align));

	CHECK(p);
	return (hpa_t)(uintptr_t)p;
}

void mm_free(hpa_t addr, uint64_t size)
{
	(void)size;
	free((void *)(uintptr_t)addr);
}

static bool link_read_only(const struct disk_link *l)
{
	return l->read_only || l->hd->read_only;
}

/* the guest's own requests (vblk.c's backend) */
static int disk_submit(void *be, struct vblk_io *io)
{
	CHECK(io->type == VIRTIO_BLK_T_IN || io->type == VIRTIO_BLK_T_OUT ||
	      io->type == VIRTIO_BLK_T_FLUSH);
	CHECK(io->type != VIRTIO_BLK_T_OUT || !link_read_only(be));
	vms_seen.disk_requests++;
	vblk_complete(io, VIRTIO_BLK_S_OK);	/* at once: the data stays as it was */
	return 0;
}

static uint64_t disk_sectors(void *be)
{
	return ((struct disk_link *)be)->hd->sectors;
}

static bool disk_read_only(void *be)
{
	return link_read_only(be);	/* as vm_io.c's: the VM's flag or the host's */
}

static uint32_t disk_seg_max(void *be)
{
	(void)be;
	return VBLK_SEG_MAX;
}

static const struct vblk_backend_ops disk_ops = {
	disk_submit, disk_sectors, disk_read_only, disk_seg_max,
};

int vm_io_add_disk(struct vm *vm, unsigned int slot, const struct vm_disk_desc *dd,
		   const char **why)
{
	struct fuzz_disk *hd = fuzz_disk_at(dd->pci_dev);
	struct disk_link *l = &io.link[slot < VM_MAX_DISKS ? slot : 0];

	if (io.nr_nics || io.nr_disks == VM_MAX_DISKS || slot != io.nr_disks)
		return *why = "a disk out of place", -HYP_EINVAL;
	if (!hd)
		return *why = "no host disk there", -HYP_ENOENT;
	if (io.disk_taken[hd - fuzz_disks])
		return *why = "the host disk is another VM's", -HYP_ENOENT;
	memset(l, 0, sizeof(*l));
	l->hd = hd;
	l->read_only = dd->read_only;
	CHECK(vio_attach_blk(vm, slot, &disk_ops, l) == 0);
	io.disk_taken[hd - fuzz_disks] = true;
	io.disk[io.nr_disks++] = *dd;
	return 0;
}

/* The disks' content a restore or a migration writes (vm_io.h): each write
 * checked inside a disk bound to the VM and writable as it sees it, whole
 * 4 KiB units inside one block; flushes of such a disk only; one request of
 * a disk at a time. */
uint64_t vm_io_disk_sectors(struct vm *vm, unsigned int d)
{
	(void)vm;
	return d < io.nr_disks ? io.link[d].hd->sectors : 0;
}

bool vm_io_disk_read_only(struct vm *vm, unsigned int d)
{
	(void)vm;
	return d >= io.nr_disks || link_read_only(&io.link[d]);
}

static void request_done(struct disk_link *l)
{
	struct fuzz_disk *hd = l->hd;

	if (l->write) {
		uint64_t b = l->sector / SNAP_DISK_BLOCK_SECTORS;

		/* the data moves now: a buffer reused or freed before is caught */
		memcpy(hd->data + l->sector * SNAP_DISK_SECTOR, l->buf,
		       (size_t)l->sectors * SNAP_DISK_SECTOR);
		hd->written[b / 64] |= 1ULL << (b % 64);
		hd->writes++;
		hd->dirty = true;
		vms_seen.disk_writes++;
		vms_seen.disk_slots_written |= 1U << (l - io.link);
		vms_seen.disk_last_sector = l->sector;
		vms_seen.disk_last_byte = ((const uint8_t *)l->buf)[0];
	} else {
		hd->flushes++;
		hd->dirty = false;
		hd->flush_out_len = port.out_len;
		hd->flush_started = vms_seen.starts != 0;
		vms_seen.disk_flushes++;
	}
	l->req->status = VIRTIO_BLK_S_OK;
	__atomic_store_n(&l->req->done, 1, __ATOMIC_RELEASE);
	l->req = NULL;
}

static int take_request(unsigned int d, struct vm_disk_req *r, bool write, uint64_t sector,
			uint32_t sectors, const void *buf)
{
	struct disk_link *l = &io.link[d];

	CHECK(!l->req);		/* one at a time: the last one is done */
	if (fuzz_disk_slow && io.submits++ % 2 == 0)
		return -HYP_EBUSY;
	*l = (struct disk_link){ l->hd, l->read_only, r, write, sector, sectors, buf, 0 };
	r->done = 0;
	if (!fuzz_disk_slow)
		request_done(l);
	return 0;
}

uint64_t fuzz_disk_changed = ~0ULL;

/* A read of a block (a DISK_ID's sample): its content by the rule above. */
static void disk_read(uint64_t sector, uint32_t sectors, uint8_t *buf)
{
	uint64_t block = sector / SNAP_DISK_BLOCK_SECTORS;

	memset(buf, block == fuzz_disk_changed ? FUZZ_DISK_CHANGED_BYTE : FUZZ_DISK_BYTE(block),
	       (size_t)sectors * SNAP_DISK_SECTOR);
	vms_seen.disk_reads++;
}

int vm_io_disk_submit(struct vm *vm, unsigned int d, struct vm_disk_req *r, bool write,
		      uint64_t sector, uint32_t sectors, void *buf)
{
	(void)vm;
	if (!write) {
		/* a restore's DISK_ID sample: what the image reads as (above) */
		CHECK(d < io.nr_disks && sectors >= 1 && sectors <= SNAP_DISK_BLOCK_SECTORS);
		CHECK(sector % SNAP_DISK_BLOCK_SECTORS == 0 &&
		      sector + sectors <= io.link[d].hd->sectors);
		disk_read(sector, sectors, buf);
		r->status = VIRTIO_BLK_S_OK;
		r->done = 1;
		return 0;
	}
	CHECK(write && d < io.nr_disks && !link_read_only(&io.link[d]));
	CHECK(io.link[d].hd->data);
	/* a restore's whole block, or a migration's whole 4 KiB units inside
	 * one block (the disk's last unit may be short) */
	CHECK(sectors >= 1 && sector % SNAP_DISK_UNIT_SECTORS == 0);
	CHECK(sector % SNAP_DISK_BLOCK_SECTORS + sectors <= SNAP_DISK_BLOCK_SECTORS);
	CHECK(sector + sectors <= io.link[d].hd->sectors);
	CHECK(sectors % SNAP_DISK_UNIT_SECTORS == 0 || sector + sectors == io.link[d].hd->sectors);
	return take_request(d, r, true, sector, sectors, buf);
}

int vm_io_disk_flush(struct vm *vm, unsigned int d, struct vm_disk_req *r)
{
	(void)vm;
	CHECK(d < io.nr_disks && !link_read_only(&io.link[d]));
	return take_request(d, r, false, 0, 0, NULL);
}

void vm_io_disk_poll(struct vm *vm, unsigned int d)
{
	(void)vm;
	if (d < io.nr_disks && io.link[d].req && ++io.link[d].polls >= 2)
		request_done(&io.link[d]);
}

static void nic_tx(void *port, const void *frame, uint32_t len)
{
	vswitch_tx(port, frame, len);
}

static const struct vnet_port_ops nic_ops = { .tx = nic_tx };	/* no rate limit */

static void nic_deliver(void *vnet, const void *frame, uint32_t len)
{
	vnet_rx_deliver(vnet, frame, len);
}

static void other_deliver(void *ctx, const void *frame, uint32_t len)
{
	(void)ctx;
	(void)frame;
	CHECK(len >= VSWITCH_FRAME_MIN && len <= VSWITCH_FRAME_MAX);
	vms_seen.frames_seen++;
}

int vm_io_add_nic(struct vm *vm, unsigned int slot, const struct vm_nic_desc *nd,
		  const char **why)
{
	struct vswitch *sw = vswitch_find(nd->sw);
	struct vswitch_port *p = &io.port[io.nr_nics];
	int rc;

	if (io.nr_nics == VM_MAX_NICS || slot != io.nr_disks + io.nr_nics)
		return *why = "a NIC out of place", -HYP_EINVAL;
	if (!sw)
		return *why = "no such switch", -HYP_ENOENT;
	CHECK(vio_attach_net(vm, slot, nd->mac, &nic_ops, p) == 0);
	vswitch_port_init(p, VSWITCH_PORT_VM, nd->mac, nic_deliver, vnet_of(vm, slot));
	rc = vswitch_attach(sw, p);
	if (rc)
		return *why = "the MAC is on the switch", rc;
	io.nic[io.nr_nics++] = *nd;
	return 0;
}

struct vswitch_port *vm_io_nic_port(struct vm *vm, unsigned int nic)
{
	(void)vm;
	return nic < io.nr_nics ? &io.port[nic] : NULL;
}

const struct vm_disk_desc *vm_io_disk(const struct vm *vm, unsigned int disk)
{
	(void)vm;
	return disk < io.nr_disks ? &io.disk[disk] : NULL;
}

const struct vm_nic_desc *vm_io_nic(const struct vm *vm, unsigned int nic)
{
	(void)vm;
	return nic < io.nr_nics ? &io.nic[nic] : NULL;
}

int vm_io_nic_set(struct vm *vm, unsigned int nic, bool attach)
{
	CHECK(!attach && nic < io.nr_nics);
	vswitch_detach(&io.port[nic]);
	vnet_port_detach(vnet_of(vm, io.nr_disks + nic));
	return 0;
}

/* vm_io_detach() and vio_detach_all(), as vm_destroy_finish() calls them */
static void io_detach(struct vm *vm)
{
	/* a request in flight would move data from a buffer freed with the VM */
	for (unsigned int i = 0; i < io.nr_disks; i++)
		CHECK(!io.link[i].req);
	for (unsigned int i = 0; i < VM_MAX_NICS; i++)
		vswitch_detach(&io.port[i]);
	vio_detach_all(vm);
	memset(&io, 0, sizeof(io));
}

/* ---- the stream port ---- */

bool snap_port_ready(void)
{
	return port.connected;
}

size_t snap_port_read(void *buf, size_t len)
{
	uint8_t v = port.sizes[port.turn++ % 6];
	size_t n = len;

	/* (a restore at its announced end asks for 0 bytes, to see the end) */
	port.reads++;
	/* read after a disconnect too: what came before it still counts */
	if (!port.connected)
		return 0;
	if (port.pos == port.len) {
		/* the client sent everything it had: after a few looks, it is gone */
		if (++port.dry >= FUZZ_DRY_READS)
			port.connected = false;
		port.empty_reads++;
		return 0;
	}
	if (v == 255) {
		port.empty_reads++;
		return 0;
	}
	if (v >= 128)
		n = (size_t)(v - 127) * 256;
	else if (v)
		n = v;
	n = MIN(n, MIN(len, port.len - port.pos));
	memcpy(buf, port.data + port.pos, n);
	port.pos += n;
	return n;
}

bool fuzz_port_stopped(void)
{
	unsigned int limit = port.wmode == 255 ? 1 : port.wmode;

	return limit && port.writes >= limit;
}

size_t snap_port_write(const void *buf, size_t len)
{
	size_t n = port.slow_tx ? MIN(len, 7) : len;

	CHECK(len > 0 && port.writable);	/* a restore never writes the stream */
	if (!port.connected || fuzz_port_stopped())
		return 0;
	port.writes++;
	CHECK(port.out_len + n <= sizeof(port.out));
	memcpy(port.out + port.out_len, buf, n);
	port.out_len += n;
	return n;
}

/* a migration's destination drains before the source sends: nothing there */
void snap_port_drain(void)
{
}

bool snap_port_stalled(uint64_t since)
{
	(void)since;
	return (port.sizes[0] == 254 && port.empty_reads >= 3) || fuzz_port_stopped();
}

/* ---- the one free VM slot ---- */

/* Guest RAM is the tail of the host block: ASan's redzone after the block
 * catches a write past the end of RAM, and a poisoned guard before the VM's
 * first byte one before it. (A malloc of 8 MiB or more per input costs ASan
 * megabytes of shadow to clear: 300 inputs a second.) */
#define RAM_GUARD	(64 * 1024)

static uint8_t *ram_get(uint64_t size)
{
	uint8_t *ram = host_ram + FUZZ_RAM_CAP - size;

	if (ram - host_ram >= RAM_GUARD)
		ASAN_POISON_MEMORY_REGION(ram - RAM_GUARD, RAM_GUARD);
	return ram;
}

static void ram_put(uint8_t *ram)
{
	if (ram - host_ram >= RAM_GUARD)
		ASAN_UNPOISON_MEMORY_REGION(ram - RAM_GUARD, RAM_GUARD);
}

/* vm_alloc()'s own checks (hyp/lifecycle/vm_lifecycle.c check_desc) */
static const char *check_desc(const struct vm_desc *d)
{
	if (!d->name[0] || strnlen(d->name, VM_NAME_LEN) == VM_NAME_LEN)
		return "bad name";
	if (!d->vcpus || d->vcpus > VM_MAX_VCPUS)
		return "vcpus must be 1..8";
	if (d->memory < 4 * SZ_2M || d->memory & (SZ_2M - 1) ||
	    d->memory > (1UL << 41) - VM_GUEST_RAM_BASE)
		return "memory must be a multiple of 2 MiB, at least 8 MiB";
	if ((unsigned int)d->cfi > CFI_POLICY_OFF)
		return "unknown cfi policy";
	if (d->irqchip == VM_IRQCHIP_AIA && !hart_caps.ssaia)
		return "irqchip aia needs a host CPU with Ssaia";
	if ((unsigned int)d->irqchip > VM_IRQCHIP_AIA)
		return "unknown irqchip";
	if (strnlen(d->bootargs, VM_BOOTARGS_LEN) == VM_BOOTARGS_LEN)
		return "bootargs too long";
	return NULL;
}

int vm_alloc(const struct vm_desc *d, bool need_images, struct vm **out, const char **why)
{
	struct vm *vm = &fuzz_vm;

	CHECK(!need_images);		/* what a stream brings needs no images */
	CHECK(!vms_seen.live);		/* one VM an input */
	vms_seen.allocs++;
	*why = check_desc(d);
	if (*why) {
		vms_seen.alloc_fails++;
		return -HYP_EINVAL;
	}
	if (!strncmp(d->name, FUZZ_TAKEN_NAME, VM_NAME_LEN)) {
		*why = "a VM with that name exists";
		vms_seen.alloc_fails++;
		return -HYP_EEXIST;
	}
	/* not zeroed here: vm_gpa_to_hva() zeroes a 2 MiB chunk at its first
	 * touch, as the real one does */
	if (d->memory > FUZZ_RAM_CAP) {
		*why = "not enough host memory";
		vms_seen.alloc_fails++;
		return -HYP_ENOMEM;
	}
	fuzz_ram = ram_get(d->memory);
	chunks_touched = 0;
	memset(vm, 0, sizeof(*vm));
	memcpy(vm->cfg.name, d->name, VM_NAME_LEN);
	vm->state = VM_RESETTING;
	vm->index = 5;
	vm->serial = vms_seen.allocs;
	vm->cfg.ram_gpa = VM_GUEST_RAM_BASE;
	vm->cfg.ram_size = d->memory;
	vm->cfg.nr_vcpus = d->vcpus;
	vm->cfg.cfi_policy = d->cfi;
	vm->cfg.features = vm_features(d->cfi);
	vm->hstateen0 = cfi_hstateen0(vm);	/* as vm_alloc(): from the features it gave */
	if (d->irqchip == VM_IRQCHIP_AIA) {	/* as vm_alloc() */
		vm->cfg.irqchip = VM_IRQCHIP_AIA;
		vm->cfg.imsic_ids = VIMSIC_IDS;
		vm->cfg.features |= VM_FEAT_AIA;
		vm->hstateen0 |= HSTATEEN0_AIA_VM;
	}
	vsbi_vm_init(vm);
	vm->cfg.debug_ext = d->debug;
	memcpy(vm->cfg.bootargs, d->bootargs, VM_BOOTARGS_LEN);
	memcpy(vm->cfg.kernel_image, d->kernel, VM_IMAGE_NAME_LEN);
	memcpy(vm->cfg.initrd_image, d->initrd, VM_IMAGE_NAME_LEN);
	for (unsigned int i = 0; i < VM_MAX_VCPUS; i++) {
		vm->vcpus[i].vm = vm;
		vm->vcpus[i].id = i;
		vm->vcpus[i].hart = -1;
	}
	vm->ram_hpa = (hpa_t)(uintptr_t)fuzz_ram;
	for (unsigned int i = 0; i < vdev_count; i++)
		CHECK(vdev_all[i]->reg(vm) == 0);
	vms_seen.live = true;
	*out = vm;
	return 0;
}

uint64_t vm_destroy_finish(struct vm *vm)
{
	uint64_t freed = vm->cfg.ram_size;

	CHECK(vm == &fuzz_vm && vms_seen.live);	/* no double free, no stray VM */
	io_detach(vm);
	ram_put(fuzz_ram);
	fuzz_ram = NULL;
	vm->ram_hpa = 0;
	vm->state = VM_EMPTY;
	vm->cfg.nr_vcpus = 0;
	vms_seen.live = false;
	vms_seen.destroys++;
	return freed;
}

void vm_start(struct vm *vm)
{
	CHECK(vm == &fuzz_vm && vms_seen.live && vm->state == VM_RESETTING);
	vm->state = VM_RUNNING;
	vms_seen.starts++;
}

void vm_start_paused(struct vm *vm)
{
	CHECK(vm == &fuzz_vm && vms_seen.live && vm->state == VM_RESETTING);
	vm->state = VM_PAUSED;
	vms_seen.starts++;
	vms_seen.paused_starts++;
}

bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	return range_within(gpa, len, vm->cfg.ram_gpa, vm->cfg.ram_size);
}

_Static_assert(FUZZ_RAM_CAP / SZ_2M <= 64, "a bit per chunk");

/* as if something counted writes: the models take their marking path */
bool vm_ram_counts_writes(const struct vm *vm)
{
	(void)vm;
	return true;
}

void *vm_gpa_to_hva(struct vm *vm, gpa_t gpa, uint64_t len, bool write)
{
	uint64_t first, last;

	(void)write;
	CHECK(vm == &fuzz_vm && vms_seen.live);
	if (!vm_gpa_range_is_ram(vm, gpa, len))
		return NULL;
	first = (gpa - vm->cfg.ram_gpa) / SZ_2M;
	last = (gpa - vm->cfg.ram_gpa + (len ? len - 1 : 0)) / SZ_2M;
	for (uint64_t c = first; c <= last; c++)
		if (!(chunks_touched & (1ULL << c))) {
			memset(fuzz_ram + c * SZ_2M, 0, SZ_2M);
			chunks_touched |= 1ULL << c;
		}
	return fuzz_ram + (gpa - vm->cfg.ram_gpa);
}

/* the PLIC's enable page: a page of its own, so a model writing past its
 * words shows up under ASan */
void *vm_map_device_page(struct vm *vm, gpa_t gpa)
{
	static uint8_t page[SZ_4K] __attribute__((aligned(SZ_4K)));

	(void)vm;
	(void)gpa;
	return page;
}

int vm_mmio_register(struct vm *vm, const struct mmio_region *r)
{
	if (vm->nr_mmio >= VM_MMIO_MAX)
		return -HYP_ENOMEM;
	vm->mmio[vm->nr_mmio++] = *r;
	return 0;
}

/* hyp/vsbi/vsbi.c's, which is not linked (its registry pulls in every SBI
 * extension): what matters here is which features the probes saw. */
void vsbi_vm_init(struct vm *vm)
{
	vms_seen.probes++;
	vms_seen.probed_features = vm->cfg.features;
}

/* hyp/state/vcpu.c's, which is not linked (its other functions drive CSRs
 * and harts) */
void vcpu_kick(struct vcpu *v)
{
	CHECK(v->vm && v->id < v->vm->cfg.nr_vcpus);
	vms_seen.kicks++;
}

/* hyp/state/sched.c's, which is not linked: hyp/vsbi/vsbi_hsm.c (the HSM
 * record's hooks) takes the run queue's lock for its SBI calls, never made
 * here. */
void sched_lock(void)
{
	CHECK(!"no HSM call in a restore");
}

void sched_unlock(void)
{
	CHECK(!"no HSM call in a restore");
}

void sched_kick_idle(void)
{
	CHECK(!"no HSM call in a restore");
}

/* Not the host's ChaCha20 draws (hyp/lib/entropy.c has inline asm):
 * anything deterministic that does not repeat will do for a generation ID. */
void entropy_fresh(uint8_t *out, size_t len)
{
	static uint64_t stream;

	for (size_t i = 0; i < len; i++) {
		stream = stream * 6364136223846793005ULL + 1442695040888963407ULL;
		out[i] = (uint8_t)(stream >> 56);
	}
}

/* ---- checks both targets make ---- */

void fuzz_fix_crcs(uint8_t *s, size_t len)
{
	size_t off = sizeof(struct snap_header);

	while (off <= len && len - off >= sizeof(struct snap_section)) {
		struct snap_section sec;
		size_t avail = len - off - sizeof(sec);

		memcpy(&sec, s + off, sizeof(sec));
		if (sec.length > avail)
			break;
		sec.crc32c = crc32c(s + off + sizeof(sec), (size_t)sec.length);
		memcpy(s + off, &sec, sizeof(sec));
		off += sizeof(sec) + (size_t)sec.length;
	}
}

void fuzz_check_devices(struct vm *vm)
{
	uint64_t state[SNAP_DEVICE_MAX / sizeof(uint64_t)];
	uint32_t offset;

	for (unsigned int i = 0; i < vdev_count; i++) {
		CHECK(vdev_all[i]->state_size <= sizeof(state));
		vdev_all[i]->save(vm, state);	/* as the model holds it: not masked */
		CHECK(snap_device_check(vm, i, state, &offset) == NULL);
	}
	check_vio(vm);
}

/* Each virtio device saves to a state its model accepts: what the restore
 * installed and what its rescan did since. */
static void check_vio(struct vm *vm)
{
	uint8_t payload[SNAP_DEVICE_MAX];
	uint32_t offset;

	for (unsigned int i = 0; i < snap_vio_count(vm); i++) {
		const struct vio_model *m = vm->vio[i]->kind->model;
		size_t n = snap_vio_save(vm, i, payload, sizeof(payload));
		const uint8_t *state = payload + sizeof(struct snap_device);

		CHECK(n == sizeof(struct snap_device) + m->state_size);
		CHECK(snap_fields_check(state, m->fields, m->nr_fields, 0, &offset) == NULL);
		CHECK(m->check(vm, state, &offset) == NULL);
	}
	for (unsigned int i = snap_vio_count(vm); i < VIO_MMIO_SLOTS; i++)
		CHECK(!vm->vio[i]);	/* slots from 0, none left over */
}

void fuzz_check_vcpus(struct vm *vm, const struct snap_config *c)
{
	CHECK(vm->hstateen0 == cfi_hstateen0(vm));
	CHECK(vms_seen.probes >= 1 && vms_seen.probed_features == vm->cfg.features);
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		const struct vcpu *v = &vm->vcpus[i];
		struct snap_vcpu s;

		snap_vcpu_save(v, &s);
		CHECK(snap_vcpu_check(&s, c) == NULL);
		/* the save masks with the legal-value table: had the restore
		 * installed a bit the table does not allow, it would show here */
		CHECK((v->g.ctx.sstatus & SR_FS) && (v->g.ctx.sstatus & SR_UXL) == SR_UXL_64);
		CHECK(s.core.pc == v->g.ctx.sepc && s.core.vsie == v->g.csr.vsie &&
		      s.core.vsepc == v->g.csr.vsepc && s.core.scounteren == v->g.csr.scounteren &&
		      s.core.senvcfg == v->g.csr.senvcfg && s.cfi.ssp == v->g.csr.ssp &&
		      s.fp.fcsr == v->g.fp.fcsr && s.core.hvip == v->g.csr.hvip);
		CHECK((s.core.vsstatus & ~SR_SPELP) == (v->g.csr.vsstatus & ~SR_SPELP));
	}
}
