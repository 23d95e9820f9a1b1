/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a guest's virtio-net device, hyp/vdev/vnet.c over the
 * virtio-mmio transport (vio_mmio.c) and the virtqueue walker (virtq.c)
 * (docs/fuzzing.md, docs/virtio.md "virtio-net"). One input is the queue
 * sizes, a script of operations and a guest RAM image:
 *
 *   0  u16 QueueNum of the receive queue   2  u16 QueueNum of transmit
 *   4  u8  nr_ops (<= 128)                 5  u8 the port's rate limit:
 *                                             bit k % 8 set refuses its
 *                                             k-th frame (held back)
 *   6  2 bytes unused
 *   8  ops: nr_ops records of 6 bytes (kind u8, a u8, b u16, c u16)
 *   then the first bytes of guest RAM (16 KiB at 0x80000000, zero after
 *   the input): receive queue descriptors at 0, available ring at 0x1000,
 *   used ring at 0x1400; transmit queue at 0x2000, 0x3000, 0x3400; set up
 *   by a driver init before the script runs.
 *
 * Operations: 0 QueueNotify (value a; 0xff: a kick, vnet_kick(), instead);
 * 1 the switch delivers a frame of b
 * bytes (any length; its bytes a pattern of c); 2 the guest writes u16 c at
 * RAM offset b; 3 a 32-bit register write at offset b & 0xffc of value
 * c | a << 16; 4 a read at offset b of width 1 << (a & 3) (aligned); 5
 * device reset and a new driver init; 6 the switch detaches the port; 7 the
 * VM pauses (a odd) or runs.
 *
 * Checked on every input, besides ASan/UBSan (the RAM block is exactly 16
 * KiB):
 *  - the port gets only frames of 14..1514 bytes, none after a detach, and
 *    exactly the bytes the guest's chain held after its 12-byte header;
 *    a frame its rate limit refused leaves its chain with the guest (not
 *    used, nothing in flight after a notify), and a kick sends at most
 *    VNET_KICK_BUDGET frames;
 *  - a transmit writes no guest memory but the used ring; a delivery writes
 *    guest memory only inside the used ring and the device-writable
 *    segments of the chain it took, the frame after a header whose
 *    num_buffers is 1, and never while the VM is paused or after a refusal
 *    of the frame's length;
 *  - bounded work: one operation copies at most QueueNum x min(QueueNum,
 *    chain limit) descriptors of each queue;
 *  - the PLIC line follows InterruptStatus != 0. */
#include <string.h>
#include <errno.h>
#include <guest_mem.h>
#include <mm.h>
#include <mmio.h>
#include <vio_mmio.h>
#include <virtio_mmio.h>
#include <vnet.h>
#include <vm.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RAM_GPA		VM_GUEST_RAM_BASE
#define RAM_SIZE	0x4000UL
#define HDR		8
#define OP_SIZE		6
#define MAX_OPS		128

static const uint32_t ring_off[2][3] = {
	{ 0x0000, 0x1000, 0x1400 },	/* receive: desc, avail, used */
	{ 0x2000, 0x3000, 0x3400 },	/* transmit */
};

uint64_t time_now(void)
{
	return 0;
}

static uint8_t *ram, *before;	/* exactly RAM_SIZE each */
static struct vm vm;
static bool line_level;

void vplic_set_level(struct vm *v, unsigned int irq, bool level)
{
	CHECK(v == &vm);
	CHECK(irq == VIO_MMIO_IRQ(0));
	line_level = level;
}

void pr_info(const char *fmt, ...)
{
	(void)fmt;
}

hpa_t mm_alloc(uint64_t size, uint64_t align)
{
	void *p = aligned_alloc(align, ALIGN_UP(size, align));

	if (p)
		memset(p, 0, size);
	return (hpa_t)(uintptr_t)p;
}

void mm_free(hpa_t pa, uint64_t size)
{
	(void)size;
	free((void *)(uintptr_t)pa);
}

static bool in_ram(uint64_t gpa, uint64_t len)
{
	unsigned __int128 end = (unsigned __int128)gpa + len;

	return gpa >= RAM_GPA && end <= (unsigned __int128)RAM_GPA + RAM_SIZE;
}

bool vm_gpa_range_is_ram(const struct vm *v, gpa_t gpa, uint64_t len)
{
	CHECK(v == &vm);
	return in_ram(gpa, len);
}

void *vm_gpa_to_hva(struct vm *v, gpa_t gpa, uint64_t len, bool write)
{
	(void)write;
	CHECK(v == &vm);
	if (!in_ram(gpa, len))
		return NULL;
	return ram + (gpa - RAM_GPA);
}

/* ---- the switch's side of the port ---- */

static struct {
	bool detached;
	unsigned int frames;
	uint8_t refuse;			/* bit k % 8: refuse the k-th frame asked */
	unsigned int asked;
} port;

static bool in_used_ring(const struct vnet *n, unsigned int qi, uint64_t off);

/* The frame is the chain's readable bytes after the header, as they were
 * before the notify (the chain is still the device's last taken one; bytes
 * of a used ring the device wrote meanwhile are not compared). */
static void port_tx(void *p, const void *frame, uint32_t len)
{
	const struct vnet *n = (const struct vnet *)vm.vio[0];
	const struct virtq_chain *c = &n->dev.chain;
	const uint8_t *f = frame;
	uint64_t at = 0;

	CHECK(p == &port);
	CHECK(!port.detached);
	CHECK(len >= VNET_FRAME_MIN && len <= VNET_FRAME_MAX);
	CHECK(c->nr_read == c->nr_segs && c->read_len == VNET_HDR_SIZE + len);
	for (unsigned int i = 0; i < c->nr_segs; i++)
		for (uint32_t k = 0; k < c->seg[i].len; k++, at++) {
			uint64_t off = c->seg[i].gpa - RAM_GPA + k;

			if (at < VNET_HDR_SIZE)
				CHECK(at > 1 || in_used_ring(n, 0, off) || in_used_ring(n, 1, off) ||
				      !before[off]);	/* flags, gso_type */
			else if (!in_used_ring(n, 0, off) && !in_used_ring(n, 1, off))
				CHECK(f[at - VNET_HDR_SIZE] == before[off]);
		}
	port.frames++;
}

static bool port_may_send(void *p, uint32_t len)
{
	CHECK(p == &port);
	CHECK(len >= VNET_FRAME_MIN && len <= VNET_FRAME_MAX);
	return !(port.refuse >> (port.asked++ % 8) & 1);
}

static const struct vnet_port_ops port_ops = { port_tx, port_may_send };

/* ---- the guest's side ---- */

static uint64_t mmio(uint32_t off, unsigned int width, bool write, uint64_t value)
{
	struct mmio_region *r = vm_mmio_find(&vm, VIO_MMIO_BASE + off);
	struct mmio_access a = { .gpa = VIO_MMIO_BASE + off, .width = width,
				 .is_write = write, .value = value };

	CHECK(r != NULL);
	CHECK(r->handle(&vm, r->priv, &a) == 0);	/* never a guest fault */
	return a.value;
}

static void wr(uint32_t off, uint32_t v)
{
	mmio(off, 4, true, v);
}

static void driver_init(const uint16_t qnum[2])
{
	wr(VIRTIO_MMIO_STATUS, 0);
	wr(VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)mmio(VIRTIO_MMIO_DEVICE_FEATURES, 4, false, 0));
	wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(VIRTIO_MMIO_DRIVER_FEATURES, 1);
	wr(VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
			       VIRTIO_STATUS_FEATURES_OK);
	CHECK(mmio(VIRTIO_MMIO_STATUS, 4, false, 0) & VIRTIO_STATUS_FEATURES_OK);
	for (unsigned int qi = 0; qi < 2; qi++) {
		wr(VIRTIO_MMIO_QUEUE_SEL, qi);
		wr(VIRTIO_MMIO_QUEUE_NUM, qnum[qi]);
		wr(VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)(RAM_GPA + ring_off[qi][0]));
		wr(VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)(RAM_GPA + ring_off[qi][1]));
		wr(VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)(RAM_GPA + ring_off[qi][2]));
		wr(VIRTIO_MMIO_QUEUE_READY, 1);
	}
	wr(VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
			       VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
}

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/* the used ring of queue @qi as the device may write it */
static bool in_used_ring(const struct vnet *n, unsigned int qi, uint64_t off)
{
	uint64_t size = n->dev.s.q[qi].size;

	return off >= ring_off[qi][2] && off < ring_off[qi][2] + 6 + 8 * size;
}

/* every byte that changed lies in a used ring or (@chain) a writable
 * segment of the chain the device took */
static void check_writes(const struct vnet *n, const struct virtq_chain *chain)
{
	/* 64-byte blocks that did not change are skipped whole */
	for (uint64_t blk = 0; blk < RAM_SIZE; blk += 64) {
		if (!memcmp(ram + blk, before + blk, 64))
			continue;
		for (uint64_t off = blk; off < blk + 64; off++) {
			bool ok = in_used_ring(n, 0, off) || in_used_ring(n, 1, off);

			if (ram[off] == before[off] || ok)
				continue;
			CHECK(chain != NULL);
			for (unsigned int i = chain->nr_read; i < chain->nr_segs && !ok; i++)
				ok = RAM_GPA + off >= chain->seg[i].gpa &&
				     RAM_GPA + off - chain->seg[i].gpa < chain->seg[i].len;
			CHECK(ok);
		}
	}
}

static void deliver(struct vnet *n, uint16_t len, uint16_t pattern)
{
	static uint8_t frame[2048];
	uint16_t used_before = n->dev.s.q[VNET_RXQ].next_used;
	uint64_t requests = n->n.rx.requests;
	bool paused = vm.state != VM_RUNNING;

	len = len % sizeof(frame);
	for (unsigned int i = 0; i < len; i++)
		frame[i] = (uint8_t)(pattern + i * 31);
	memcpy(before, ram, RAM_SIZE);
	vnet_rx_deliver(n, frame, len);
	if (paused || len < VNET_FRAME_MIN || len > VNET_FRAME_MAX) {
		CHECK(!memcmp(before, ram, RAM_SIZE));
		return;
	}
	check_writes(n, n->n.rx.requests != requests || n->dev.s.q[VNET_RXQ].next_used !=
			used_before ? &n->dev.chain : NULL);
	if (n->n.rx.requests != requests) {
		/* the header then the frame, across the writable segments */
		const struct virtq_chain *c = &n->dev.chain;
		uint8_t hdr[VNET_HDR_SIZE] = { 0 };
		uint64_t at = 0;

		hdr[10] = 1;
		for (unsigned int i = c->nr_read; i < c->nr_segs && at < VNET_HDR_SIZE + len;
		     i++)
			for (uint32_t k = 0; k < c->seg[i].len && at < VNET_HDR_SIZE + len;
			     k++, at++)
				CHECK(ram[c->seg[i].gpa - RAM_GPA + k] ==
				      (at < VNET_HDR_SIZE ? hdr[at] : frame[at - VNET_HDR_SIZE]));
		CHECK(at == VNET_HDR_SIZE + len);
	}
}

static void transmit(uint8_t value)
{
	struct vnet *n = (struct vnet *)vm.vio[0];
	uint16_t used = n->dev.s.q[1].next_used;
	unsigned int frames = port.frames;

	memcpy(before, ram, RAM_SIZE);
	if (value == 0xff) {
		CHECK(vnet_kick(&vm, 0) != VNET_TX_BUSY);	/* one hart: its lock is free */
		CHECK(port.frames - frames <= VNET_KICK_BUDGET);
		CHECK((uint16_t)(n->dev.s.q[1].next_used - used) <= VNET_KICK_BUDGET);
	} else {
		wr(VIRTIO_MMIO_QUEUE_NOTIFY, value);
	}
	/* nothing is held across an exit: a held-back chain went back untaken */
	CHECK(n->dev.s.q[1].fault || !n->dev.s.q[1].in_flight);
	check_writes(n, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int nr_ops;
	uint16_t qnum[2];
	struct vnet *n;
	static const uint8_t mac[6] = { 0x52, 0x54, 0, 0, 0, 1 };

	if (size < HDR)
		return 0;
	nr_ops = data[4] > MAX_OPS ? MAX_OPS : data[4];
	if (size < HDR + (size_t)nr_ops * OP_SIZE)
		return 0;
	if (!ram) {
		ram = malloc(RAM_SIZE);
		before = malloc(RAM_SIZE);
	}
	memset(ram, 0, RAM_SIZE);
	memcpy(ram, data + HDR + nr_ops * OP_SIZE,
	       MIN(size - HDR - nr_ops * OP_SIZE, (size_t)RAM_SIZE));
	memset(&vm, 0, sizeof(vm));
	memcpy(vm.cfg.name, "fuzz", 5);
	vm.cfg.ram_gpa = RAM_GPA;
	vm.cfg.ram_size = RAM_SIZE;
	vm.ram_hpa = (hpa_t)(uintptr_t)ram;
	vm.state = VM_RUNNING;
	line_level = false;
	memset(&port, 0, sizeof(port));
	port.refuse = data[5];
	qnum[0] = rd16(data);
	qnum[1] = rd16(data + 2);

	CHECK(vio_attach_net(&vm, 0, mac, &port_ops, &port) == 0);
	n = vnet_of(&vm, 0);
	CHECK(n != NULL);
	driver_init(qnum);
	for (unsigned int i = 0; i < nr_ops; i++) {
		const uint8_t *op = data + HDR + i * OP_SIZE;
		uint8_t a = op[1];
		uint16_t ob = rd16(op + 2), oc = rd16(op + 4);
		uint64_t reads[2] = { n->dev.s.q[0].desc_reads, n->dev.s.q[1].desc_reads };

		switch (op[0] % 8) {
		case 0:
			transmit(a);
			break;
		case 1:
			deliver(n, ob, oc);
			break;
		case 2:
			if (ob < RAM_SIZE - 1)
				memcpy(ram + ob, &oc, 2);
			break;
		case 3:
			wr(ob & 0xffc, oc | (uint32_t)a << 16);
			break;
		case 4: {
			unsigned int w = 1U << (a & 3);

			mmio((ob & 0xfff) & ~(w - 1), w, false, 0);
			break;
		}
		case 5:
			driver_init(qnum);
			break;
		case 6:
			vnet_port_detach(n);
			port.detached = true;
			CHECK(!(mmio(VIRTIO_MMIO_CONFIG + 6, 2, false, 0) & VIRTIO_NET_S_LINK_UP));
			break;
		default:
			vm.state = a & 1 ? VM_PAUSED : VM_RUNNING;
			break;
		}
		for (unsigned int qi = 0; qi < 2; qi++) {
			const struct virtq *q = &n->dev.s.q[qi];

			CHECK(q->desc_reads - reads[qi] <=
			      (uint64_t)q->size * MIN(q->size, q->chain_max));
			CHECK(q->in_flight <= q->size);
		}
		CHECK(line_level == (n->dev.s.interrupt_status != 0));
	}
	if (fuzz_verbose())
		fprintf(stderr, "net: status 0x%x faults %s/%s tx %lu/%lu errors rx %lu/%lu drops\n",
			n->dev.s.status, virtq_fault_name(n->dev.s.q[0].fault),
			virtq_fault_name(n->dev.s.q[1].fault), (unsigned long)n->n.tx.requests,
			(unsigned long)n->n.tx.errors, (unsigned long)n->n.rx.requests,
			(unsigned long)n->n.rx.drops);
	vio_detach_all(&vm);
	return 0;
}
