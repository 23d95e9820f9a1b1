/* SPDX-License-Identifier: MIT */
/* One guest split virtqueue, as the hypervisor's virtio device models see it
 * (virtio 1.2 section 2.7; the rules: docs/virtio.md, "Virtqueue
 * validation"). Everything in the rings is the guest's and may change at any
 * moment: the driver's ring addresses are checked once, when it sets
 * QUEUE_READY; a chain is taken by reading avail.idx and the head once and
 * copying each descriptor out of guest memory before anything is decided on
 * it, so the device only ever sees the checked copy, a bounded list of
 * segments inside the VM's RAM. A fault leaves the queue refusing everything
 * until a reset: the device model turns it into DEVICE_NEEDS_RESET.
 *
 * No INDIRECT_DESC, no EVENT_IDX, no packed ring: a device using this offers
 * none of them. Not thread-safe: the device model serialises the calls on a
 * queue (its lock). */
#ifndef HYP_VIRTQ_H
#define HYP_VIRTQ_H
#include <types.h>

struct vm;

/* The largest queue size (QueueNumMax) a device may offer: a power of two.
 * A chain has at most that many segments (each descriptor at most once). */
#define VIRTQ_SIZE_MAX		256

/* Why a queue stopped. The first three come from QUEUE_READY, the rest
 * from a chain; docs/virtio.md lists when each applies. */
enum virtq_fault {
	VIRTQ_FAULT_NONE,
	VIRTQ_FAULT_SIZE,	/* queue size 0, not a power of two, or above the max */
	VIRTQ_FAULT_ALIGN,	/* a ring part off its alignment (16, 2, 4) */
	VIRTQ_FAULT_RING_RAM,	/* a ring part not wholly inside the VM's RAM */
	VIRTQ_FAULT_AVAIL_IDX,	/* avail.idx: more chains outstanding than the queue holds */
	VIRTQ_FAULT_HEAD,	/* a head index >= queue size */
	VIRTQ_FAULT_HEAD_BUSY,	/* a head the device still holds (not yet used) */
	VIRTQ_FAULT_NEXT,	/* a next index >= queue size */
	VIRTQ_FAULT_LOOP,	/* a descriptor met twice in one chain */
	VIRTQ_FAULT_TOO_LONG,	/* more descriptors than the device takes in a chain */
	VIRTQ_FAULT_INDIRECT,	/* VIRTQ_DESC_F_INDIRECT: never negotiated */
	VIRTQ_FAULT_LEN_ZERO,	/* a descriptor of length 0 */
	VIRTQ_FAULT_BUF_RAM,	/* a buffer not wholly inside the VM's RAM */
	VIRTQ_FAULT_ORDER,	/* a device-readable buffer after a device-writable one */
	VIRTQ_FAULT_UNUSABLE,	/* a chain the device model cannot even refuse
				 * (a block request without a status byte) */
	VIRTQ_FAULT_COUNT
};

/* One buffer of a chain, as the device may use it: [gpa, gpa + len) lies in
 * the VM's RAM, len > 0. */
struct virtq_seg {
	gpa_t gpa;
	uint32_t len;
	bool writable;		/* device-writable (VIRTQ_DESC_F_WRITE) */
};

/* A chain taken from the queue: the device-readable segments first
 * (nr_read of them), then the device-writable ones. */
struct virtq_chain {
	uint16_t head;		/* its id in the used ring */
	uint16_t nr_segs, nr_read;
	uint64_t read_len, write_len;	/* bytes in each kind of segment */
	struct virtq_seg seg[VIRTQ_SIZE_MAX];
};

struct virtq {
	/* what the driver sets; read only while the queue is not ready */
	uint16_t size;			/* QueueNum */
	gpa_t desc, avail, used;	/* QueueDesc, QueueDriver, QueueDevice */
	bool ready;			/* QueueReady: the checks above passed */

	/* the device's limits (virtq_init) */
	uint16_t max_size;		/* QueueNumMax: power of two <= VIRTQ_SIZE_MAX */
	uint16_t chain_max;		/* longest chain the device takes, 1..max_size */

	/* progress (never read back from guest memory) */
	uint16_t next_avail;		/* avail ring index of the next chain */
	uint16_t next_used;		/* used.idx the device last published */
	uint16_t in_flight;		/* chains taken and not yet used */
	uint64_t busy[VIRTQ_SIZE_MAX / 64];	/* heads taken and not yet used */
	int32_t last_taken;		/* the head the last pop took, -1 once pushed or given back */
	enum virtq_fault fault;		/* first fault; NONE while healthy */
	uint64_t desc_reads;		/* descriptors copied so far (work done) */
};

/** virtq_init() - a queue of the device's, not ready: at most @max_size
 *  entries (a power of two; more than VIRTQ_SIZE_MAX is cut to it), chains
 *  of at most @chain_max descriptors (1..max_size). */
void virtq_init(struct virtq *q, uint16_t max_size, uint16_t chain_max);
/** virtq_reset() - device reset (or QueueReset): not ready, configuration
 *  and progress cleared, the fault forgotten; the limits stay. */
void virtq_reset(struct virtq *q);
/** virtq_set_size(), virtq_set_desc(), virtq_set_avail(), virtq_set_used() -
 *  the driver writes QueueNum or a ring address. Ignored (-HYP_EBUSY) while
 *  the queue is ready: a checked configuration never changes under the
 *  walker. Nothing is checked here. */
int virtq_set_size(struct virtq *q, uint16_t size);
int virtq_set_desc(struct virtq *q, gpa_t gpa);
int virtq_set_avail(struct virtq *q, gpa_t gpa);
int virtq_set_used(struct virtq *q, gpa_t gpa);
/** virtq_enable() - the driver set QueueReady: check the configuration
 *  against @vm's RAM. -HYP_EINVAL (q->fault says why; the device sets
 *  NEEDS_RESET) leaves it not ready. */
int virtq_enable(struct virtq *q, struct vm *vm);
/** virtq_pop() - take the next available chain into @c: 1 if one was taken,
 *  0 if none is available (or the queue is not ready), -HYP_EINVAL on a
 *  fault (q->fault; the queue refuses everything until reset), -HYP_EBUSY
 *  if guest memory cannot be mapped now (a live snapshot copying it: try
 *  again later, nothing was taken). Reads avail.idx, one head and at most
 *  min(size, chain_max) descriptors: bounded work for any guest. */
int virtq_pop(struct virtq *q, struct vm *vm, struct virtq_chain *c);
/** virtq_unpop() - give back the chain @head that the last virtq_pop() took,
 *  unused and unanswered: the next virtq_pop() takes the same avail entry
 *  again (and checks it again: the driver may have rewritten it). For a
 *  device that cannot use the chain yet (a rate limit holding a frame back
 *  in the driver's queue). -HYP_EINVAL if @head is not held by the device. */
int virtq_unpop(struct virtq *q, uint16_t head);
/** virtq_push() - return the chain @head to the driver, @written bytes
 *  written into its device-writable segments (at most its write_len: the
 *  caller's duty), and publish it (used.idx) after the element. Marks the
 *  used ring's pages dirty (dirty logging, live snapshots). -HYP_EINVAL if
 *  @head is not a chain the device holds or the queue is not ready or has
 *  faulted (nothing written); -HYP_EBUSY: as virtq_pop, try again later. */
int virtq_push(struct virtq *q, struct vm *vm, uint16_t head, uint32_t written);
/** virtq_should_interrupt() - after pushes: does the driver want a used
 *  buffer notification? (no VIRTQ_AVAIL_F_NO_INTERRUPT; EVENT_IDX is never
 *  offered). True when unsure: a spurious interrupt is harmless. */
bool virtq_should_interrupt(struct virtq *q, struct vm *vm);
/** virtq_fail() - the device model found a taken chain it cannot answer
 *  (@f, VIRTQ_FAULT_UNUSABLE): the queue faults as for a walker fault,
 *  refusing everything until reset. A fault already recorded stays. */
void virtq_fail(struct virtq *q, enum virtq_fault f);
/** virtq_fault_name() - a short name for logs and counters. */
const char *virtq_fault_name(enum virtq_fault f);
#endif
