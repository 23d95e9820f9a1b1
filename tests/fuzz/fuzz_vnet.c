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
#include <vio_mmio.h>
#include <virtio_mmio.h>
#include <vnet.h>
#include "fuzz_check.h"
#include "fuzz_vio_guest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR		8
#define OP_SIZE		6
#define MAX_OPS		128

static const struct fuzz_vio_queue rings[2] = {
	{ 0x0000, 0x1000, 0x1400 },	/* receive: desc, avail, used */
	{ 0x2000, 0x3000, 0x3400 },	/* transmit */
};

static uint8_t *before;		/* guest RAM before an operation: FUZZ_RAM_SIZE bytes */
static uint8_t *want;		/* guest RAM a delivery should leave: the same size */

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
	const struct vnet *n = (const struct vnet *)fuzz_vm.vio[0];
	const struct virtq_chain *c = &n->dev.chain;
	const uint8_t *f = frame;
	uint64_t at = 0;

	CHECK(p == &port);
	CHECK(!port.detached);
	CHECK(len >= VNET_FRAME_MIN && len <= VNET_FRAME_MAX);
	CHECK(c->nr_read == c->nr_segs && c->read_len == VNET_HDR_SIZE + len);
	for (unsigned int i = 0; i < c->nr_segs; i++)
		for (uint32_t k = 0; k < c->seg[i].len; k++, at++) {
			uint64_t off = c->seg[i].gpa - FUZZ_RAM_GPA + k;

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

/* the used ring of queue @qi as the device may write it */
static bool in_used_ring(const struct vnet *n, unsigned int qi, uint64_t off)
{
	uint64_t size = n->dev.s.q[qi].size;

	return off >= rings[qi].used && off < rings[qi].used + 6 + 8 * size;
}

/* every byte that changed lies in a used ring or (@chain) a writable
 * segment of the chain the device took */
static void check_writes(const struct vnet *n, const struct virtq_chain *chain)
{
	/* 64-byte blocks that did not change are skipped whole */
	for (uint64_t blk = 0; blk < FUZZ_RAM_SIZE; blk += 64) {
		if (!memcmp(fuzz_ram + blk, before + blk, 64))
			continue;
		for (uint64_t off = blk; off < blk + 64; off++) {
			bool ok = in_used_ring(n, 0, off) || in_used_ring(n, 1, off);

			if (fuzz_ram[off] == before[off] || ok)
				continue;
			CHECK(chain != NULL);
			for (unsigned int i = chain->nr_read; i < chain->nr_segs && !ok; i++)
				ok = FUZZ_RAM_GPA + off >= chain->seg[i].gpa &&
				     FUZZ_RAM_GPA + off - chain->seg[i].gpa < chain->seg[i].len;
			CHECK(ok);
		}
	}
}

static void deliver(struct vnet *n, uint16_t len, uint16_t pattern)
{
	static uint8_t frame[2048];
	uint16_t used_before = n->dev.s.q[VNET_RXQ].next_used;
	uint64_t requests = n->n.rx.requests;
	bool paused = fuzz_vm.state != VM_RUNNING;

	len = len % sizeof(frame);
	for (unsigned int i = 0; i < len; i++)
		frame[i] = (uint8_t)(pattern + i * 31);
	memcpy(before, fuzz_ram, FUZZ_RAM_SIZE);
	vnet_rx_deliver(n, frame, len);
	if (paused || len < VNET_FRAME_MIN || len > VNET_FRAME_MAX) {
		CHECK(!memcmp(before, fuzz_ram, FUZZ_RAM_SIZE));
		return;
	}
	check_writes(n, n->n.rx.requests != requests || n->dev.s.q[VNET_RXQ].next_used !=
			used_before ? &n->dev.chain : NULL);
	if (n->n.rx.requests != requests) {
		/* the header then the frame, across the writable segments in
		 * order: where the guest's segments overlap, the later bytes
		 * are the ones that stay (as a device writing them in order);
		 * where one overlaps a used ring, the used element written
		 * after the frame stays (check_writes() checked those bytes) */
		const struct virtq_chain *c = &n->dev.chain;
		uint8_t hdr[VNET_HDR_SIZE] = { 0 };
		uint64_t at = 0;

		hdr[10] = 1;
		memcpy(want, fuzz_ram, FUZZ_RAM_SIZE);
		for (unsigned int i = c->nr_read; i < c->nr_segs && at < VNET_HDR_SIZE + len;
		     i++)
			for (uint32_t k = 0; k < c->seg[i].len && at < VNET_HDR_SIZE + len;
			     k++, at++) {
				uint64_t off = c->seg[i].gpa - FUZZ_RAM_GPA + k;

				if (!in_used_ring(n, 0, off) && !in_used_ring(n, 1, off))
					want[off] = at < VNET_HDR_SIZE ? hdr[at]
								       : frame[at - VNET_HDR_SIZE];
			}
		CHECK(at == VNET_HDR_SIZE + len);
		CHECK(!memcmp(want, fuzz_ram, FUZZ_RAM_SIZE));
	}
}

static void transmit(uint8_t value)
{
	struct vnet *n = (struct vnet *)fuzz_vm.vio[0];
	uint16_t used = n->dev.s.q[1].next_used;
	unsigned int frames = port.frames;

	memcpy(before, fuzz_ram, FUZZ_RAM_SIZE);
	if (value == 0xff) {
		CHECK(vnet_kick(&fuzz_vm, 0) != VNET_TX_BUSY);	/* one hart: its lock is free */
		CHECK(port.frames - frames <= VNET_KICK_BUDGET);
		CHECK((uint16_t)(n->dev.s.q[1].next_used - used) <= VNET_KICK_BUDGET);
	} else {
		fuzz_vio_wr(VIRTIO_MMIO_QUEUE_NOTIFY, value);
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
	if (!before) {
		before = malloc(FUZZ_RAM_SIZE);
		want = malloc(FUZZ_RAM_SIZE);
	}
	fuzz_vio_reset(data + HDR + nr_ops * OP_SIZE, size - HDR - nr_ops * OP_SIZE);
	memset(&port, 0, sizeof(port));
	port.refuse = data[5];
	qnum[0] = fuzz_rd16(data);
	qnum[1] = fuzz_rd16(data + 2);

	CHECK(vio_attach_net(&fuzz_vm, 0, mac, &port_ops, &port) == 0);
	n = vnet_of(&fuzz_vm, 0);
	CHECK(n != NULL);
	fuzz_vio_driver_init(rings, qnum, 2);
	for (unsigned int i = 0; i < nr_ops; i++) {
		const uint8_t *op = data + HDR + i * OP_SIZE;
		uint8_t a = op[1];
		uint16_t ob = fuzz_rd16(op + 2), oc = fuzz_rd16(op + 4);
		uint64_t reads[2] = { n->dev.s.q[0].desc_reads, n->dev.s.q[1].desc_reads };

		switch (op[0] % 8) {
		case 0:
			transmit(a);
			break;
		case 1:
			deliver(n, ob, oc);
			break;
		case 6:
			vnet_port_detach(n);
			port.detached = true;
			CHECK(!(fuzz_vio_mmio(VIRTIO_MMIO_CONFIG + 6, 2, false, 0) &
				VIRTIO_NET_S_LINK_UP));
			break;
		case 7:
			fuzz_vm.state = a & 1 ? VM_PAUSED : VM_RUNNING;
			break;
		default:	/* 2-5 */
			CHECK(fuzz_vio_guest_op(op[0] % 8, a, ob, oc));
			break;
		}
		for (unsigned int qi = 0; qi < 2; qi++) {
			const struct virtq *q = &n->dev.s.q[qi];

			CHECK(q->desc_reads - reads[qi] <=
			      (uint64_t)q->size * MIN(q->size, q->chain_max));
			CHECK(q->in_flight <= q->size);
		}
		CHECK(fuzz_line == (n->dev.s.interrupt_status != 0));
		fuzz_vio_check_view();
	}
	if (fuzz_verbose())
		fprintf(stderr, "net: status 0x%x faults %s/%s tx %lu/%lu errors rx %lu/%lu drops\n",
			n->dev.s.status, virtq_fault_name(n->dev.s.q[0].fault),
			virtq_fault_name(n->dev.s.q[1].fault), (unsigned long)n->n.tx.requests,
			(unsigned long)n->n.tx.errors, (unsigned long)n->n.rx.requests,
			(unsigned long)n->n.rx.drops);
	vio_detach_all(&fuzz_vm);
	return 0;
}
