/* SPDX-License-Identifier: MIT */
/* VIRTIO sections (issue 25, device state; docs/snapshot-format.md,
 * "VIRTIO"): crafted streams of a VM with a disk and a NIC go through the real
 * loader (hyp/snap/snap_load.c, snap_vio.c) and the real device models
 * (hyp/vdev/vio_mmio.c, vblk.c, vnet.c, virtq.c, vswitch.c) on the fuzz
 * targets' stub host (tests/fuzz/fuzz_restore_host.c: a writable and a
 * read-only disk, a switch "lan" where another VM's NIC has a MAC). A legal
 * state is installed and saves back the same; the request made available
 * before the snapshot is served at the start; the NIC announces itself; a
 * copy beside its original gets a new MAC; every illegal field is refused
 * naming the section and the byte; a disk or switch this host cannot give
 * is refused as no-device; the order rules hold. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <crc32c.h>
#include <guest_mem.h>
#include <hart.h>
#include <log.h>
#include <snapshot.h>
#include <vblk.h>
#include <vdev.h>
#include <vio_mmio.h>
#include <virtio_mmio.h>
#include <vm.h>
#include <vm_io.h>
#include <vnet.h>
#include "../fuzz/fuzz_restore_host.h"
#include "test.h"

/* every ISA feature: a PLIC VM (the AIA bit makes an AIA VM) */
#define ISA_ALL	(SNAP_FEAT_ALL & ~SNAP_FEAT_AIA)

#define RAM_SIZE	(8UL << 20)
#define RAM		VM_GUEST_RAM_BASE
#define QSIZE		16
/* the disk's ring and one read request in guest RAM (a MEMORY run) */
#define DESC		(RAM + 0x10000)
#define AVAIL		(RAM + 0x11000)
#define USED		(RAM + 0x12000)
#define HDR		(RAM + 0x13000)
#define STATUS		(RAM + 0x13800)
#define DATA		(RAM + 0x14000)
#define RUN_PAGES	5
#define DONE_IDX	5	/* chains the disk had taken and returned */
/* the NIC's rings, in the same 2 MiB chunk (zero: nothing offered) */
#define NET_RING(q, part)	(RAM + 0x20000 + (q) * 0x4000 + (part) * 0x1000)

static uint8_t stream[32768 + 3 * (SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR + 64)];
static uint8_t run[sizeof(struct snap_mem_run) + RUN_PAGES * SNAP_PAGE_SIZE];
static struct snap_dev_virtio_blk blk;
static struct snap_dev_virtio_net net;
static bool with_blk, with_net, net_first, blk_twice, vio_after_memory;
static uint32_t version = SNAP_VERSION;
static uint64_t header_flags;
/* DISK sections after MEMORY (and MEMORY after them if memory_after_disks) */
static struct disk_run_spec {
	uint32_t slot;
	struct snap_disk_run run;
	uint8_t byte;
	uint32_t length;		/* 0: the run's own */
} disk_spec[4];
static unsigned int nr_disk_spec;
static bool memory_after_disks;
static bool ro_second_disk;		/* a second disk, the read-only host disk */
static bool disks_before_net;		/* the DISK sections between the disk's and NIC's VIRTIO */
static size_t disk_at[4];		/* their stream offsets */
/* DISK_ID sections (version 6 without DISKS), one per disk after the VIRTIO
 * sections, as the saver writes them for the stub disks' content */
static struct snap_disk_id disk_id[3];	/* what build() puts: filled by legal_ids() */
static unsigned int nr_disk_ids;	/* how many of them go in */
static bool ids_set;			/* by the test (set_ids()), else by build() */
static bool disk_ids_before_vio;	/* before the NIC's VIRTIO section */
static bool disk_ids_after_memory;
static size_t disk_id_at[3];		/* their stream offsets */
static uint64_t host_changed_block;	/* the stub disks' block that reads 0xee */

static struct {
	unsigned int calls;
	char err[256];
	const char *code;
	struct vm *vm;
	uint32_t derived;
} seen;

static void done(const struct snap_result *r)
{
	seen.calls++;
	seen.code = r->code;
	seen.vm = r->vm;
	seen.derived = r->macs_derived;
	if (r->err)
		snprintf(seen.err, sizeof(seen.err), "%s", r->err);
}

static void put(uint8_t *page_base, gpa_t gpa, const void *p, size_t len)
{
	memcpy(page_base + (gpa - DESC), p, len);
}

/* A disk that returned 5 chains and has a 6th made available (a read of
 * sector 2), its interrupt pending; a NIC with both queues ready. */
static void legal_states(void)
{
	uint8_t *pages = run + sizeof(struct snap_mem_run);
	struct snap_mem_run r = { DESC, RUN_PAGES };
	struct virtq_desc d[3] = {
		{ HDR, VIRTIO_BLK_HDR_SIZE, VIRTQ_DESC_F_NEXT, 1 },
		{ DATA, VIRTIO_BLK_SECTOR, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 2 },
		{ STATUS, 1, VIRTQ_DESC_F_WRITE, 0 },
	};
	uint16_t avail[3] = { 0, DONE_IDX + 1, 0 };
	uint16_t used[2] = { 0, DONE_IDX };
	uint32_t hdr[4] = { VIRTIO_BLK_T_IN, 0, 2, 0 };
	uint8_t st = 0xff;
	uint64_t driver = (1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_BLK_F_FLUSH);

	memset(run, 0, sizeof(run));
	memcpy(run, &r, sizeof(r));
	put(pages, DESC, d, sizeof(d));
	put(pages, AVAIL, avail, sizeof(avail));
	put(pages, AVAIL + 4 + 2 * (DONE_IDX % QSIZE), &avail[2], 2);	/* head 0 */
	put(pages, USED, used, sizeof(used));
	put(pages, HDR, hdr, sizeof(hdr));
	put(pages, STATUS, &st, 1);

	memset(&blk, 0, sizeof(blk));
	blk.device_features = (1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_BLK_F_SEG_MAX) |
			      (1ULL << VIRTIO_BLK_F_BLK_SIZE) | (1ULL << VIRTIO_BLK_F_FLUSH);
	blk.driver_features = driver;
	blk.status = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
		     VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK;
	blk.interrupt_status = VIRTIO_MMIO_INT_VRING;
	blk.config_generation = 3;
	blk.q_desc[0] = DESC;
	blk.q_avail[0] = AVAIL;
	blk.q_used[0] = USED;
	blk.q_ready[0] = 1;
	blk.q_size[0] = QSIZE;
	blk.q_next_avail[0] = blk.q_next_used[0] = DONE_IDX;
	blk.capacity = FUZZ_DISK_SECTORS;
	blk.requests = DONE_IDX;
	blk.bytes = DONE_IDX * VIRTIO_BLK_SECTOR;
	blk.seg_max = 8;
	blk.pci_dev = FUZZ_DISK_PCI;
	strcpy(blk.serial, "orig-vda");

	memset(&net, 0, sizeof(net));
	net.device_features = (1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_NET_F_MAC) |
			      (1ULL << VIRTIO_NET_F_STATUS);
	net.driver_features = net.device_features;
	net.status = blk.status;
	for (unsigned int q = 0; q < 2; q++) {
		net.q_desc[q] = NET_RING(q, 0);
		net.q_avail[q] = NET_RING(q, 1);
		net.q_used[q] = NET_RING(q, 2);
		net.q_ready[q] = 1;
		net.q_size[q] = QSIZE;
	}
	net.tx_requests = 11;
	net.rx_bytes = 1234;
	net.port_tx_frames = 11;
	net.port_tx_spoofed = 2;
	net.link = VIRTIO_NET_S_LINK_UP;
	memcpy(net.mac, (const uint8_t[6]){ 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc }, 6);
	strcpy(net.switch_name, FUZZ_SWITCH);
	with_blk = with_net = true;
	net_first = blk_twice = vio_after_memory = false;
	version = SNAP_VERSION;
	header_flags = 0;
	nr_disk_spec = 0;
	memory_after_disks = ro_second_disk = disks_before_net = false;
	nr_disk_ids = 0;	/* build() gives each disk its own unless set_ids() said */
	ids_set = false;
	disk_ids_before_vio = disk_ids_after_memory = false;
	memset(disk_id, 0, sizeof(disk_id));
	host_changed_block = ~0ULL;
}

/* The stub disk's DISK_ID (docs/snapshot-format.md, "DISK_ID"): 16 samples of
 * its 128 blocks, i * 127 / 15, each the CRC of a block of FUZZ_DISK_BYTE. */
static void legal_id(struct snap_disk_id *id)
{
	static uint8_t block[SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR];
	uint64_t blocks = FUZZ_DISK_SECTORS / SNAP_DISK_BLOCK_SECTORS;

	memset(id, 0, sizeof(*id));
	id->sectors = FUZZ_DISK_SECTORS;
	id->samples = SNAP_DISK_ID_SAMPLES;
	for (unsigned int i = 0; i < SNAP_DISK_ID_SAMPLES; i++) {
		id->sample[i].block = i * (blocks - 1) / (SNAP_DISK_ID_SAMPLES - 1);
		memset(block, FUZZ_DISK_BYTE(id->sample[i].block), sizeof(block));
		id->sample[i].crc32c = crc32c(block, sizeof(block));
	}
}

/* A DISK run of slot @slot at @block, all @byte, as the saver writes one. */
static void add_disk_run(uint32_t slot, uint64_t block, uint8_t byte)
{
	disk_spec[nr_disk_spec++] = (struct disk_run_spec){
		slot, { block * SNAP_DISK_BLOCK_SECTORS, SNAP_DISK_BLOCK_SECTORS, 0 }, byte, 0 };
	header_flags = SNAP_F_DISKS;
}

static size_t section(size_t off, uint32_t type, uint32_t instance, const void *p, size_t len)
{
	struct snap_section sec = { type, instance, len, crc32c(p, len), 0 };

	HYP_ASSERT(off + sizeof(sec) + len <= sizeof(stream));
	memcpy(stream + off, &sec, sizeof(sec));
	memcpy(stream + off + sizeof(sec), p, len);
	return off + sizeof(sec) + len;
}

static size_t vio_section(size_t off, uint32_t slot, const char *model, const void *state,
			  size_t size)
{
	uint8_t payload[SNAP_DEVICE_MAX] = { 0 };
	struct snap_device d = { .state_size = (uint32_t)size };

	strcpy(d.name, model);
	memcpy(payload, &d, sizeof(d));
	memcpy(payload + sizeof(d), state, size);
	return section(off, SNAP_SEC_VIRTIO, slot, payload, sizeof(d) + size);
}

/* The DISK sections of disk_spec[] from @off; *@sections counts them. */
static size_t disk_sections(size_t off, uint32_t *sections)
{
	for (unsigned int i = 0; i < nr_disk_spec; i++, (*sections)++) {
		static uint8_t payload[sizeof(struct snap_disk_run) +
				       SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR];
		const struct disk_run_spec *d = &disk_spec[i];
		uint32_t len = d->length ? d->length : (uint32_t)(sizeof(d->run) +
					     d->run.sectors * SNAP_DISK_SECTOR);

		memcpy(payload, &d->run, sizeof(d->run));
		memset(payload + sizeof(d->run), d->byte, sizeof(payload) - sizeof(d->run));
		disk_at[i] = off;
		off = section(off, SNAP_SEC_DISK, d->slot, payload, len);
	}
	return off;
}

/* The stream has @n DISK_IDs, legal ones for the stub disks (a test may
 * change them before build()). */
static void set_ids(unsigned int n)
{
	nr_disk_ids = n;
	for (unsigned int k = 0; k < n; k++)
		legal_id(&disk_id[k]);
	ids_set = true;
}

/* Stream offsets of the VIRTIO sections' headers, as build() puts them. */
static size_t vio_at[3];

/* The DISK_ID sections from @off: nr_disk_ids of disk_id[]. */
static size_t disk_id_sections(size_t off, uint32_t *sections)
{
	for (unsigned int k = 0; k < nr_disk_ids; k++, (*sections)++) {
		disk_id_at[k] = off;
		off = section(off, SNAP_SEC_DISK_ID, k, &disk_id[k], sizeof(disk_id[k]));
	}
	return off;
}

/* header, CONFIG, VCPU 0, the devices (power-on), the VIRTIO
 * sections, the MEMORY run, END */
static size_t build(void)
{
	struct snap_header h = { .version = version, .header_size = sizeof(h),
				 .flags = header_flags };
	struct snap_config c;
	struct snap_vcpu s;
	static struct vm tmpl;
	uint8_t dev[SNAP_DEVICE_MAX];
	size_t off = sizeof(h);
	uint32_t slot = 0, sections = 0;
	unsigned int disks = with_blk ? (blk_twice ? 3u : ro_second_disk ? 2u : 1u) : 0;

	/* a version 6 stream without the disks' content names their identity */
	if (!ids_set)
		set_ids(version >= SNAP_VERSION_DISK_ID && !(header_flags & SNAP_F_DISKS) ?
			MIN(disks, 2u) : 0);
	memset(&tmpl, 0, sizeof(tmpl));
	strcpy(tmpl.cfg.name, "orig");
	tmpl.cfg.ram_gpa = RAM;
	tmpl.cfg.ram_size = RAM_SIZE;
	tmpl.cfg.nr_vcpus = 1;
	tmpl.cfg.features = ISA_ALL;
	tmpl.cfg.vs_sv = 39;
	tmpl.vcpus[0].vm = &tmpl;
	vcpu_reset(&tmpl.vcpus[0], RAM, 0);
	snap_config_save(&tmpl, 1000, timebase_hz, &c);
	snap_vcpu_save(&tmpl.vcpus[0], &s);
	memcpy(h.magic, SNAP_MAGIC, sizeof(h.magic));
	memcpy(stream, &h, sizeof(h));
	off = section(off, SNAP_SEC_CONFIG, 0, &c, sizeof(c));
	off = section(off, SNAP_SEC_VCPU, 0, &s, snap_vcpu_size(version));	/* an older one: its first bytes */
	sections = 2;
	for (unsigned int i = 0; i < snap_device_count(version); i++, sections++) {
		struct snap_device d = { .state_size = vdev_all[i]->state_size };

		memset(dev, 0, sizeof(dev));
		strcpy(d.name, vdev_all[i]->name);
		memcpy(dev, &d, sizeof(d));
		off = section(off, SNAP_SEC_DEVICE, i, dev, sizeof(d) + d.state_size);
	}
	if (vio_after_memory) {
		off = section(off, SNAP_SEC_MEMORY, 0, run, sizeof(run));
		sections++;
	}
	if (with_net && net_first) {
		vio_at[slot] = off;
		off = vio_section(off, slot++, "virtio_net", &net, sizeof(net));
		sections++;
	}
	for (unsigned int k = 0; with_blk && k < (blk_twice ? 3u : ro_second_disk ? 2u : 1u); k++) {
		struct snap_dev_virtio_blk b = blk;

		if (k) {	/* the read-only host disk for the others */
			b.pci_dev = FUZZ_DISK_RO_PCI;
			b.read_only = 1;
			b.device_features |= 1ULL << VIRTIO_BLK_F_RO;
		}
		vio_at[slot] = off;
		off = vio_section(off, slot++, "virtio_blk", &b, sizeof(b));
		sections++;
	}
	if (disks_before_net)
		off = disk_sections(off, &sections);
	if (disk_ids_before_vio)
		off = disk_id_sections(off, &sections);
	if (with_net && !net_first) {
		vio_at[slot] = off;
		off = vio_section(off, slot++, "virtio_net", &net, sizeof(net));
		sections++;
	}
	if (!disk_ids_before_vio && !disk_ids_after_memory)
		off = disk_id_sections(off, &sections);
	if (!vio_after_memory && !memory_after_disks) {
		off = section(off, SNAP_SEC_MEMORY, 0, run, sizeof(run));
		sections++;
	}
	if (disk_ids_after_memory)
		off = disk_id_sections(off, &sections);
	if (!disks_before_net)
		off = disk_sections(off, &sections);
	if (memory_after_disks) {
		off = section(off, SNAP_SEC_MEMORY, 0, run, sizeof(run));
		sections++;
	}
	{
		struct snap_end e = { sections, RUN_PAGES };

		return section(off, SNAP_SEC_END, 0, &e, sizeof(e));
	}
}

static void restore_map(size_t len, const char *name, const struct snap_io_map *map)
{
	static bool host;

	if (!host) {
		fuzz_host_init();
		host = true;
	}
	fuzz_host_input(0, stream, len, (const uint8_t[6]){ 0 });
	fuzz_disk_changed = host_changed_block;
	memset(&seen, 0, sizeof(seen));
	EXPECT_EQ(snap_load_start(len, name, map, done), 0);
	for (unsigned int polls = 0; snap_busy() && polls < 10000; polls++)
		snap_load_poll();
	EXPECT_FALSE(snap_busy());
	EXPECT_EQ(seen.calls, 1);
}

static void restore(size_t len)
{
	restore_map(len, NULL, NULL);
}

/* Refused with @code, the message naming @want; nothing left behind. */
static void expect_refused(const char *code, const char *want)
{
	if (seen.vm || !seen.code || strcmp(seen.code, code) || !strstr(seen.err, want))
		unit_fail_str(__FILE__, __LINE__, "refusal", want, code,
			      seen.vm ? "restored" : seen.err);
	EXPECT_FALSE(vms_seen.live);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
}

/* Refused with @code, naming "section VIRTIO @slot at offset O, byte B: "
 * for @field of the state, and saying @words. */
static void refused_at(const char *code, uint32_t slot, size_t field, const char *words)
{
	char want[192];

	snprintf(want, sizeof(want), "section VIRTIO %u at offset %lu, byte %lu: ", slot,
		 (unsigned long)vio_at[slot],
		 (unsigned long)(vio_at[slot] + sizeof(struct snap_section) +
				 sizeof(struct snap_device) + field));
	if (!seen.vm && !strstr(seen.err, words))
		unit_fail_str(__FILE__, __LINE__, "refusal", words, code, seen.err);
	expect_refused(code, want);
}

/* Change the stream's section header at @at with @fn, its CRC kept right. */
static void fix_crc(size_t at)
{
	struct snap_section s;

	memcpy(&s, stream + at, sizeof(s));
	s.crc32c = crc32c(stream + at + sizeof(s), (size_t)s.length);
	memcpy(stream + at, &s, sizeof(s));
}

TEST(vio_restore_installs_the_devices_and_serves_what_was_made_available)
{
	uint8_t out[SNAP_DEVICE_MAX];
	struct vm *vm;
	struct snap_dev_virtio_blk *b = (void *)(out + sizeof(struct snap_device));
	struct snap_dev_virtio_net *n = (void *)(out + sizeof(struct snap_device));

	legal_states();
	restore(build());
	vm = seen.vm;
	EXPECT_TRUE(vm != NULL);
	if (!vm)
		return;
	EXPECT_TRUE(vm->vio[0] && vm->vio[0]->kind->model == &virtio_blk_model);
	EXPECT_TRUE(vm->vio[1] && vm->vio[1]->kind->model == &virtio_net_model);
	EXPECT_TRUE(vm->vio[2] == NULL);
	EXPECT_EQ(seen.derived, 0);
	/* rate limits are the host's: the defaults, not "none" (a stream
	 * carries none, and 0 would be no limit at all) */
	EXPECT_EQ(vm_io_disk(vm, 0)->iops, VM_DISK_IOPS_DEFAULT);
	EXPECT_EQ(vm_io_disk(vm, 0)->bandwidth, VM_DISK_BANDWIDTH_DEFAULT);
	EXPECT_EQ(vm_io_nic(vm, 0)->pps, VM_NIC_PPS_DEFAULT);
	EXPECT_EQ(vm_io_nic(vm, 0)->bandwidth, VM_NIC_BANDWIDTH_DEFAULT);
	/* the request made available before the snapshot went to the disk at the
	 * start, its status and used element are in the guest's RAM */
	EXPECT_EQ(vms_seen.disk_requests, 1);
	EXPECT_EQ(*(uint8_t *)vm_gpa_to_hva(vm, STATUS, 1, false), VIRTIO_BLK_S_OK);
	EXPECT_EQ(((uint16_t *)vm_gpa_to_hva(vm, USED, 4, false))[1], DONE_IDX + 1);
	/* the NIC announced itself: a RARP broadcast from its MAC reached the
	 * other port of its switch */
	EXPECT_EQ(vms_seen.frames_seen, 1);
	/* saved again: what was installed (the disk one request on) */
	EXPECT_EQ(snap_vio_save(vm, 0, out, sizeof(out)), sizeof(struct snap_device) + sizeof(blk));
	EXPECT_EQ(b->q_next_avail[0], DONE_IDX + 1);
	EXPECT_EQ(b->q_next_used[0], DONE_IDX + 1);
	EXPECT_EQ(b->requests, DONE_IDX + 1);
	b->q_next_avail[0] = b->q_next_used[0] = DONE_IDX;
	b->requests = DONE_IDX;
	b->bytes = DONE_IDX * VIRTIO_BLK_SECTOR;
	EXPECT_EQ(memcmp(b, &blk, sizeof(blk)), 0);
	EXPECT_EQ(snap_vio_save(vm, 1, out, sizeof(out)), sizeof(struct snap_device) + sizeof(net));
	EXPECT_EQ(n->port_tx_frames, net.port_tx_frames + 1);	/* the RARP */
	EXPECT_EQ(n->port_tx_bytes, 60);
	n->port_tx_frames--;
	n->port_tx_bytes = 0;
	EXPECT_EQ(memcmp(n, &net, sizeof(net)), 0);
	vm_destroy_finish(vm);
}

/* A copy beside its original (the switch has the saved MAC) gets a new
 * one, told to the guest; said in the result. */
TEST(vio_restore_beside_the_original_derives_a_new_mac)
{
	static const uint8_t taken[6] = FUZZ_TAKEN_MAC;
	const struct vm_nic_desc *nd;
	struct vnet *v;

	legal_states();
	memcpy(net.mac, taken, 6);
	restore_map(build(), "copy", NULL);
	EXPECT_TRUE(seen.vm != NULL);
	if (!seen.vm)
		return;
	EXPECT_EQ(seen.derived, 1U << 0);
	nd = vm_io_nic(seen.vm, 0);
	v = vnet_of(seen.vm, 1);
	EXPECT_TRUE(nd && memcmp(nd->mac, taken, 6) && nd->mac[0] == 0x52 && !(nd->mac[0] & 1));
	EXPECT_EQ(memcmp(v->n.mac, nd->mac, 6), 0);
	EXPECT_TRUE(v->dev.s.interrupt_status & VIRTIO_MMIO_INT_CONFIG);
	EXPECT_EQ(v->dev.s.config_generation, net.config_generation + 1);
	vm_destroy_finish(seen.vm);
	/* a migration moves the VM itself: a MAC on the switch is refused */
	legal_states();
	memcpy(net.mac, taken, 6);
	restore(build());
	EXPECT_TRUE(seen.vm != NULL);
	if (seen.vm) {
		struct snap_io_map none = { .disk_pci = { 0 } };
		uint8_t payload[SNAP_DEVICE_MAX] = { 0 };
		struct snap_device d = { .name = "virtio_net", .state_size = sizeof(net) };
		uint32_t offset, derived = 0;
		const char *code, *why;

		/* the same NIC again, into the next slot of a VM moved in */
		seen.vm->moved_in = true;
		memcpy(payload, &d, sizeof(d));
		memcpy(payload + sizeof(d), &net, sizeof(net));
		why = snap_vio_admit(seen.vm, 2, payload, sizeof(d) + sizeof(net), &none, &derived,
				     &offset, &code);
		EXPECT_TRUE(why && strstr(why, "MAC is on its switch here already"));
		EXPECT_TRUE(code && !strcmp(code, "no-device"));
		EXPECT_EQ(offset, sizeof(d) + offsetof(struct snap_dev_virtio_net, mac));
		vm_destroy_finish(seen.vm);
	}
}

/* Each field a guest's writes cannot reach, set in a legal state: refused,
 * naming the section and the field's byte. */
TEST(vio_illegal_fields_are_refused_at_their_byte)
{
#define BLK_REFUSED(field, mutate, words) do {					\
		legal_states();							\
		mutate;								\
		restore(build());						\
		refused_at("bad-snapshot", 0, offsetof(struct snap_dev_virtio_blk, field), words); \
	} while (0)
#define NET_REFUSED(field, mutate, words) do {					\
		legal_states();							\
		mutate;								\
		restore(build());						\
		refused_at("bad-snapshot", 1, offsetof(struct snap_dev_virtio_net, field), words); \
	} while (0)
	/* a queue address outside RAM, at its end, wrapping */
	BLK_REFUSED(q_desc, blk.q_desc[0] = RAM + RAM_SIZE, "q_desc");
	BLK_REFUSED(q_avail, blk.q_avail[0] = ~0ULL - 1, "q_avail");
	BLK_REFUSED(q_used, blk.q_used[0] = RAM + RAM_SIZE - 4, "q_used");
	/* an index: in flight, or beyond 16 bits (the table) */
	BLK_REFUSED(q_next_used, blk.q_next_used[0] = DONE_IDX - 1, "in flight");
	BLK_REFUSED(q_next_avail, blk.q_next_avail[0] = 0x10000, "q_next_avail has a bit");
	/* a size: not a power of two, beyond the maximum */
	BLK_REFUSED(q_size, blk.q_size[0] = 12, "q_size");
	BLK_REFUSED(q_size, blk.q_size[0] = 512, "q_size");
	/* features: not the offer; the driver's beyond it */
	BLK_REFUSED(device_features, blk.device_features |= 1ULL << VIRTIO_BLK_F_RO,
		    "device_features");
	BLK_REFUSED(driver_features, blk.driver_features |= 1ULL << 30, "driver_features");
	/* status: a bit that does not exist (the table), DRIVER_OK without
	 * FEATURES_OK, an interrupt before DRIVER_OK */
	BLK_REFUSED(status, blk.status |= 0x10, "status has a bit");
	BLK_REFUSED(status, blk.status &= ~VIRTIO_STATUS_FEATURES_OK, "DRIVER_OK");
	BLK_REFUSED(interrupt_status, blk.status = VIRTIO_STATUS_ACKNOWLEDGE, "interrupt_status");
	BLK_REFUSED(q_ready, blk.q_ready[0] = 2, "q_ready has a bit");
	BLK_REFUSED(q_fault, blk.q_fault[0] = 15, "q_fault is out of range");
	BLK_REFUSED(pci_dev, blk.pci_dev = 0, "pci_dev is out of range");
	BLK_REFUSED(serial, blk.serial[0] = 0, "serial");
	NET_REFUSED(mac, net.mac[0] = 0xff, "mac");
	NET_REFUSED(link, net.link = 2, "link has a bit");
	NET_REFUSED(pad, net.pad[0] = 1, "pad has a bit");
	NET_REFUSED(switch_name, memset(net.switch_name, 'x', sizeof(net.switch_name)),
		    "switch_name");
	NET_REFUSED(q_size[1], net.q_size[1] = 1024, "q_size");
#undef BLK_REFUSED
#undef NET_REFUSED
}

/* The section's own header: a model that does not exist, a state size that
 * is not the model's, a reserved field. */
TEST(vio_section_header_refusals)
{
	size_t len;
	struct snap_device *d;
	char want[160];

	legal_states();
	with_net = false;
	len = build();
	d = (void *)(stream + vio_at[0] + sizeof(struct snap_section));
	d->reserved = 1;
	fix_crc(vio_at[0]);
	restore(len);
	snprintf(want, sizeof(want), "section VIRTIO 0 at offset %lu, byte %lu: reserved",
		 (unsigned long)vio_at[0], (unsigned long)(vio_at[0] + sizeof(struct snap_section) +
							   offsetof(struct snap_device, reserved)));
	expect_refused("bad-snapshot", want);
	d->reserved = 0;
	strcpy(d->name, "virtio_gpu");
	fix_crc(vio_at[0]);
	restore(len);
	expect_refused("bad-snapshot", "not a virtio model");
	/* the net's name on a disk's state: the length gives it away */
	strcpy(d->name, "virtio_net");
	fix_crc(vio_at[0]);
	restore(len);
	expect_refused("bad-snapshot", "state_size is not the model's");
}

/* What this host cannot give is refused as no-device, naming the field:
 * a disk of another size, no disk at that PCI device, a read-only disk for
 * a writable one, a switch it does not have. A read-only disk for one that
 * was read-only is fine, and so is another host disk given by the restore. */
TEST(vio_host_binding_refusals)
{
	struct snap_io_map ro = { .disk_pci = { FUZZ_DISK_RO_PCI, 0 } };

	legal_states();
	blk.capacity = FUZZ_DISK_SECTORS * 2;
	restore(build());
	refused_at("no-device", 0, offsetof(struct snap_dev_virtio_blk, capacity), "size");
	legal_states();
	blk.pci_dev = 9;
	restore(build());
	refused_at("no-device", 0, offsetof(struct snap_dev_virtio_blk, pci_dev),
		   "no host disk there");
	legal_states();
	restore_map(build(), NULL, &ro);
	refused_at("no-device", 0, offsetof(struct snap_dev_virtio_blk, read_only), "read-only");
	legal_states();
	strcpy(net.switch_name, "dmz");
	restore(build());
	refused_at("no-device", 1, offsetof(struct snap_dev_virtio_net, switch_name),
		   "no switch");
	legal_states();
	blk.read_only = 1;
	blk.device_features |= 1ULL << VIRTIO_BLK_F_RO;
	restore_map(build(), NULL, &ro);
	EXPECT_TRUE(seen.vm != NULL);
	if (seen.vm) {
		EXPECT_EQ(vm_io_disk(seen.vm, 0)->pci_dev, FUZZ_DISK_RO_PCI);
		EXPECT_TRUE(((struct vblk *)(void *)seen.vm->vio[0])->b.read_only);
		vm_destroy_finish(seen.vm);
	}
}

/* Where VIRTIO sections may be: version 4 streams only, after the devices
 * and before memory, slots from 0 in order, disks before NICs, at most two
 * of each. */
TEST(vio_section_order)
{
	legal_states();
	version = 3;
	restore(build());
	expect_refused("bad-snapshot", "unknown section type (VIRTIO is version 4's)");
	legal_states();
	net_first = true;
	restore(build());
	{
		char want[160];

		snprintf(want, sizeof(want), "section VIRTIO 1 at offset %lu, byte %lu: a disk after "
			 "a NIC", (unsigned long)vio_at[1],
			 (unsigned long)(vio_at[1] + sizeof(struct snap_section)));
		expect_refused("bad-snapshot", want);
	}
	legal_states();
	blk_twice = true;
	with_net = false;
	restore(build());
	expect_refused("bad-snapshot", "more devices of this kind than a VM has");
	legal_states();
	vio_after_memory = true;
	restore(build());
	expect_refused("bad-snapshot", "out of order (virtio devices follow the devices");
	/* slot 1 first */
	legal_states();
	with_net = false;
	{
		size_t len = build();
		uint32_t one = 1;

		memcpy(stream + vio_at[0] + offsetof(struct snap_section, instance), &one, 4);
		restore(len);
		expect_refused("bad-snapshot", "section VIRTIO 1");
	}
}

/* ---- DISK sections (version 5): the disks' content ---- */

TEST(disk_runs_are_written_to_the_bound_disk)
{
	legal_states();
	add_disk_run(0, 0, 0x5a);
	add_disk_run(0, FUZZ_DISK_SECTORS / SNAP_DISK_BLOCK_SECTORS - 1, 0x6b);	/* the last */
	restore(build());
	EXPECT_TRUE(seen.vm != NULL);
	EXPECT_EQ(vms_seen.disk_writes, 2);
	EXPECT_EQ(vms_seen.disk_last_sector, FUZZ_DISK_SECTORS - SNAP_DISK_BLOCK_SECTORS);
	EXPECT_EQ(vms_seen.disk_last_byte, 0x6b);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
}

/* Refused naming "section DISK @i at offset O, byte B: " for @field of the
 * run header, and saying @words; nothing written after the bad one. */
static void disk_refused_at(unsigned int i, size_t field, const char *words)
{
	char want[192];

	snprintf(want, sizeof(want), "section DISK %u at offset %lu, byte %lu: ",
		 disk_spec[i].slot, (unsigned long)disk_at[i],
		 (unsigned long)(disk_at[i] + sizeof(struct snap_section) + field));
	if (!seen.vm && !strstr(seen.err, words))
		unit_fail_str(__FILE__, __LINE__, "refusal", words, "bad-snapshot", seen.err);
	expect_refused("bad-snapshot", want);
}

TEST(disk_run_refusals)
{
	static const struct {
		uint64_t sector;
		uint32_t sectors, reserved;
		size_t field;
		const char *words;
	} bad[] = {
		{ 64, 128, 0, offsetof(struct snap_disk_run, sector), "not the start of a block" },
		{ FUZZ_DISK_SECTORS, 128, 0, offsetof(struct snap_disk_run, sector),
		  "past the disk's end" },
		{ 0, 64, 0, offsetof(struct snap_disk_run, sectors), "not the block's" },
		{ 0, 128, 1, offsetof(struct snap_disk_run, reserved), "reserved" },
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
		legal_states();
		add_disk_run(0, 0, 0x11);
		disk_spec[0].run = (struct snap_disk_run){ bad[i].sector, bad[i].sectors,
							   bad[i].reserved };
		restore(build());
		disk_refused_at(0, bad[i].field, bad[i].words);
	}
	/* the same block twice: the second is refused, the first was written */
	legal_states();
	add_disk_run(0, 3, 0x11);
	add_disk_run(0, 3, 0x22);
	restore(build());
	disk_refused_at(1, offsetof(struct snap_disk_run, sector), "a block that came before");
	EXPECT_EQ(vms_seen.disk_writes, 1);
	/* sectors and the section's length disagree */
	legal_states();
	add_disk_run(0, 0, 0x11);
	disk_spec[0].length = sizeof(struct snap_disk_run) + 64 * SNAP_DISK_SECTOR;
	restore(build());
	disk_refused_at(0, offsetof(struct snap_disk_run, sectors), "disagrees");
}

TEST(disk_section_refusals)
{
	/* a block for the NIC's slot, and for the read-only disk */
	legal_states();
	add_disk_run(1, 0, 0x11);
	restore(build());
	expect_refused("bad-snapshot", "a slot that is not a disk");
	legal_states();
	ro_second_disk = true;
	with_net = false;
	add_disk_run(1, 0, 0x11);
	restore(build());
	expect_refused("bad-snapshot", "a read-only disk");
	/* a DISK section in a stream without the flag */
	legal_states();
	add_disk_run(0, 0, 0x11);
	header_flags = 0;
	restore(build());
	expect_refused("bad-snapshot", "without the disks");
	/* MEMORY after a DISK section */
	legal_states();
	add_disk_run(0, 0, 0x11);
	memory_after_disks = true;
	restore(build());
	expect_refused("bad-snapshot", "out of order (memory follows the devices, before the disks)");
	/* a VIRTIO section (the NIC's) after a DISK section (the disk's) */
	legal_states();
	add_disk_run(0, 0, 0x11);
	disks_before_net = true;
	restore(build());
	expect_refused("bad-snapshot", "out of order (virtio devices follow the devices");
	/* an impossible length: less than a sector */
	legal_states();
	add_disk_run(0, 0, 0x11);
	disk_spec[0].length = sizeof(struct snap_disk_run);
	restore(build());
	expect_refused("bad-snapshot", "impossible DISK length");
	/* version 4 knows no such flag */
	legal_states();
	version = 4;
	header_flags = SNAP_F_DISKS;
	restore(build());
	expect_refused("bad-snapshot", "unknown header flags");
}


/* ---- DISK_ID sections (version 6): the disks' identity without their content ---- */

/* Refused with @code, naming "section DISK_ID @k at offset O, byte B: " for
 * @field of the payload, and saying @words. */
static void disk_id_refused_at(const char *code, unsigned int k, size_t field, const char *words)
{
	char want[192];

	snprintf(want, sizeof(want), "section DISK_ID %u at offset %lu, byte %lu: ", k,
		 (unsigned long)disk_id_at[k],
		 (unsigned long)(disk_id_at[k] + sizeof(struct snap_section) + field));
	if (!seen.vm && !strstr(seen.err, words))
		unit_fail_str(__FILE__, __LINE__, "refusal", words, code, seen.err);
	expect_refused(code, want);
}

#define SAMPLE_CRC(i)	(offsetof(struct snap_disk_id, sample) + \
			 (i) * sizeof(struct snap_disk_id_sample) + \
			 offsetof(struct snap_disk_id_sample, crc32c))

/* The host disk the stream's DISK_ID describes: its samples are read and
 * the restore goes on; so does one changed in a block no sample has (the
 * check is cheap on purpose: not every change). */
TEST(disk_id_of_the_saved_disk_restores)
{
	legal_states();
	restore(build());
	EXPECT_TRUE(seen.vm != NULL);
	EXPECT_EQ(vms_seen.disk_reads, SNAP_DISK_ID_SAMPLES);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
	/* a second, read-only disk has its own */
	legal_states();
	ro_second_disk = true;
	with_net = false;
	restore(build());
	EXPECT_TRUE(seen.vm != NULL);
	EXPECT_EQ(vms_seen.disk_reads, 2 * SNAP_DISK_ID_SAMPLES);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
	legal_states();
	host_changed_block = 1;		/* samples are 0, 8, 16, ...: not 1 */
	restore(build());
	EXPECT_TRUE(seen.vm != NULL);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
}

/* A host disk whose sampled block differs (another image of the size, or
 * the image after the guest wrote more) is refused as no-device, naming
 * the disk and the block at that sample's crc32c. */
TEST(disk_id_of_another_disk_is_refused)
{
	legal_states();
	host_changed_block = 5 * 127 / 15;	/* sample 5 */
	restore(build());
	disk_id_refused_at("no-device", 0, SAMPLE_CRC(5),
			   "disk 0: the host disk is not the saved disk (block 42 differs): give "
			   "the image as it was at the snapshot");
	/* the last block */
	legal_states();
	host_changed_block = FUZZ_DISK_SECTORS / SNAP_DISK_BLOCK_SECTORS - 1;
	restore(build());
	disk_id_refused_at("no-device", 0, SAMPLE_CRC(15), "(block 127 differs)");
	/* the second disk's */
	legal_states();
	ro_second_disk = true;
	with_net = false;
	set_ids(2);
	disk_id[1].sample[0].crc32c ^= 1;
	restore(build());
	disk_id_refused_at("no-device", 1, SAMPLE_CRC(0), "disk 1: the host disk is not the saved");
	/* a version 5 stream without the disks had no identity: not checked */
	legal_states();
	version = 5;
	host_changed_block = 0;
	restore(build());
	EXPECT_TRUE(seen.vm != NULL);
	EXPECT_EQ(vms_seen.disk_reads, 0);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
}

/* A disk without its DISK_ID in a version 6 stream without the disks. */
TEST(disk_id_missing_is_refused)
{
	legal_states();
	set_ids(0);
	restore(build());
	expect_refused("bad-snapshot", "disk 0 has no DISK_ID section");
	/* the read-only disk's too */
	legal_states();
	ro_second_disk = true;
	with_net = false;
	set_ids(1);
	restore(build());
	expect_refused("bad-snapshot", "disk 1 has no DISK_ID section");
	/* a stream of a VM without disks needs none */
	legal_states();
	with_blk = false;
	restore(build());
	EXPECT_TRUE(seen.vm != NULL);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
}

/* Every field of a DISK_ID, in the order the loader checks them. */
TEST(disk_id_field_refusals)
{
	legal_states();
	set_ids(1);
	disk_id[0].reserved = 1;
	restore(build());
	disk_id_refused_at("bad-snapshot", 0, offsetof(struct snap_disk_id, reserved), "reserved");
	legal_states();
	set_ids(1);
	disk_id[0].sectors = FUZZ_DISK_SECTORS - 1;
	restore(build());
	disk_id_refused_at("bad-snapshot", 0, offsetof(struct snap_disk_id, sectors),
			   "not the disk's capacity");
	legal_states();
	set_ids(1);
	disk_id[0].samples = 15;
	restore(build());
	disk_id_refused_at("bad-snapshot", 0, offsetof(struct snap_disk_id, samples), "samples");
	legal_states();
	set_ids(1);
	disk_id[0].sample[3].block++;
	restore(build());
	disk_id_refused_at("bad-snapshot", 0, offsetof(struct snap_disk_id, sample[3].block),
			   "not the sample's");
	legal_states();
	set_ids(1);
	disk_id[0].sample[7].reserved = 1;
	restore(build());
	disk_id_refused_at("bad-snapshot", 0, offsetof(struct snap_disk_id, sample[7].reserved),
			   "reserved");
	EXPECT_EQ(vms_seen.disk_reads, 0);	/* nothing read before the payload is good */
}

/* Where DISK_ID sections may be: version 6 streams without DISKS, after
 * every VIRTIO section and before memory, one per disk from slot 0. */
TEST(disk_id_section_order)
{
	legal_states();
	version = 5;
	set_ids(1);
	restore(build());
	expect_refused("bad-snapshot", "unknown section type (DISK_ID is version 6's)");
	legal_states();
	add_disk_run(0, 0, 0x11);
	set_ids(1);
	restore(build());
	expect_refused("bad-snapshot", "a DISK_ID section in a stream with the disks' content");
	/* before the NIC's VIRTIO section */
	legal_states();
	disk_ids_before_vio = true;
	restore(build());
	expect_refused("bad-snapshot", "out of order (virtio devices follow the devices, by slot "
		       "from 0, before the disks' identities");
	/* after memory: memory came before the disk's identity */
	legal_states();
	disk_ids_after_memory = true;
	restore(build());
	expect_refused("bad-snapshot", "disk 0 has no DISK_ID section");
	/* for the NIC's slot, or twice the same disk */
	legal_states();
	set_ids(2);
	restore(build());
	expect_refused("bad-snapshot", "a DISK_ID section for a slot that is not a disk");
}
