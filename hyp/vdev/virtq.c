/* SPDX-License-Identifier: MIT */
/* The guest-facing split virtqueue: check the driver's configuration, take
 * chains out of the available ring, return them through the used ring
 * (hyp/include/virtq.h; the rules: docs/virtio.md, "Virtqueue validation").
 *
 * Guest memory is reached only through vm_gpa_to_hva(): the ring parts were
 * checked to lie in RAM at QUEUE_READY, and each call maps the part it reads
 * or writes again (that zeroes a chunk on its first touch and, for a write,
 * marks the pages dirty). Every guest field is read exactly once, through a
 * volatile pointer, into hypervisor memory; decisions are made on that copy
 * only, so a guest rewriting its rings meanwhile changes nothing we use. */
#include <errno.h>
#include <guest_mem.h>
#include <virtio_mmio.h>
#include <virtq.h>
#include <vm.h>

/* the rings are little-endian; so is every host Carapace runs on */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "virtqueues need a little-endian host");
_Static_assert(VIRTQ_SIZE_MAX && !(VIRTQ_SIZE_MAX & (VIRTQ_SIZE_MAX - 1)),
	       "VIRTQ_SIZE_MAX is a power of two");
_Static_assert(sizeof(struct virtq_desc) == 16, "descriptor layout");

/* ring layout (section 2.7): sizes and alignments of the three parts */
#define DESC_ALIGN	16
#define AVAIL_ALIGN	2
#define USED_ALIGN	4
#define AVAIL_RING	4	/* offset of avail.ring[] (after flags, idx) */
#define USED_RING	4	/* offset of used.ring[] */
#define USED_ELEM	8

static uint64_t desc_bytes(uint16_t size)
{
	return 16ULL * size;
}

static uint64_t avail_bytes(uint16_t size)
{
	return 6 + 2ULL * size;		/* flags, idx, ring[size], used_event */
}

static uint64_t used_bytes(uint16_t size)
{
	return 6 + 8ULL * size;		/* flags, idx, ring[size], avail_event */
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

void virtq_init(struct virtq *q, uint16_t max_size, uint16_t chain_max)
{
	/* the bitmaps and the chain's segments hold VIRTQ_SIZE_MAX entries */
	q->max_size = MIN(max_size, VIRTQ_SIZE_MAX);
	q->chain_max = MAX(MIN(chain_max, q->max_size), 1);
	virtq_reset(q);
}

void virtq_reset(struct virtq *q)
{
	q->ready = false;
	/* a driver that never writes QueueNum gets the largest queue */
	q->size = q->max_size;
	q->desc = q->avail = q->used = 0;
	q->next_avail = q->next_used = q->in_flight = 0;
	for (unsigned int i = 0; i < ARRAY_SIZE(q->busy); i++)
		q->busy[i] = 0;
	q->last_taken = -1;
	q->fault = VIRTQ_FAULT_NONE;
}

int virtq_set_size(struct virtq *q, uint16_t size)
{
	if (q->ready)
		return -HYP_EBUSY;
	q->size = size;
	return 0;
}

static int set_part(struct virtq *q, gpa_t *part, gpa_t gpa)
{
	if (q->ready)
		return -HYP_EBUSY;
	*part = gpa;
	return 0;
}

int virtq_set_desc(struct virtq *q, gpa_t gpa)
{
	return set_part(q, &q->desc, gpa);
}

int virtq_set_avail(struct virtq *q, gpa_t gpa)
{
	return set_part(q, &q->avail, gpa);
}

int virtq_set_used(struct virtq *q, gpa_t gpa)
{
	return set_part(q, &q->used, gpa);
}

static int fail(struct virtq *q, enum virtq_fault f)
{
	q->fault = f;
	return -HYP_EINVAL;
}

int virtq_enable(struct virtq *q, struct vm *vm)
{
	if (q->fault)
		return -HYP_EINVAL;	/* only a reset clears a fault */
	if (q->ready)
		return 0;
	if (!is_pow2(q->size) || q->size > q->max_size)
		return fail(q, VIRTQ_FAULT_SIZE);
	if (q->desc % DESC_ALIGN || q->avail % AVAIL_ALIGN || q->used % USED_ALIGN)
		return fail(q, VIRTQ_FAULT_ALIGN);
	if (!vm_gpa_range_is_ram(vm, q->desc, desc_bytes(q->size)) ||
	    !vm_gpa_range_is_ram(vm, q->avail, avail_bytes(q->size)) ||
	    !vm_gpa_range_is_ram(vm, q->used, used_bytes(q->size)))
		return fail(q, VIRTQ_FAULT_RING_RAM);
	q->ready = true;
	return 0;
}

static bool head_busy(const struct virtq *q, uint16_t head)
{
	return q->busy[head / 64] & (1ULL << (head % 64));
}

/* One descriptor, copied field by field: each guest field read once. */
static struct virtq_desc desc_copy(const volatile struct virtq_desc *table, uint16_t i)
{
	struct virtq_desc d;

	d.addr = table[i].addr;
	d.len = table[i].len;
	d.flags = table[i].flags;
	d.next = table[i].next;
	return d;
}

/* Follow the chain from @head through the copied descriptors (the order of
 * the checks is normative: docs/virtio.md). */
static int walk(struct virtq *q, struct vm *vm, const volatile struct virtq_desc *table,
		uint16_t head, struct virtq_chain *c)
{
	uint64_t seen[VIRTQ_SIZE_MAX / 64] = { 0 };
	uint16_t limit = MIN(q->size, q->chain_max), i = head;

	c->head = head;
	c->nr_segs = c->nr_read = 0;
	c->read_len = c->write_len = 0;
	for (;;) {
		struct virtq_desc d;
		struct virtq_seg *s;

		/* i < q->size: the head and every next were checked */
		if (seen[i / 64] & (1ULL << (i % 64)))
			return fail(q, VIRTQ_FAULT_LOOP);
		if (c->nr_segs == limit)
			return fail(q, VIRTQ_FAULT_TOO_LONG);
		seen[i / 64] |= 1ULL << (i % 64);
		d = desc_copy(table, i);
		q->desc_reads++;
		if (d.flags & VIRTQ_DESC_F_INDIRECT)
			return fail(q, VIRTQ_FAULT_INDIRECT);
		if (!d.len)
			return fail(q, VIRTQ_FAULT_LEN_ZERO);
		/* RAM only, the whole range, no wrap: never a device window */
		if (!vm_gpa_range_is_ram(vm, d.addr, d.len))
			return fail(q, VIRTQ_FAULT_BUF_RAM);
		if (!(d.flags & VIRTQ_DESC_F_WRITE) && c->nr_segs != c->nr_read)
			return fail(q, VIRTQ_FAULT_ORDER);
		s = &c->seg[c->nr_segs++];
		s->gpa = d.addr;
		s->len = d.len;
		s->writable = d.flags & VIRTQ_DESC_F_WRITE;
		if (s->writable) {
			c->write_len += d.len;
		} else {
			c->nr_read++;
			c->read_len += d.len;
		}
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			return 0;
		if (d.next >= q->size)
			return fail(q, VIRTQ_FAULT_NEXT);
		i = d.next;
	}
}

int virtq_pop(struct virtq *q, struct vm *vm, struct virtq_chain *c)
{
	const volatile struct virtq_desc *table;
	const volatile uint16_t *avail;
	uint16_t idx, pending, head;
	int rc;

	if (q->fault)
		return -HYP_EINVAL;
	if (!q->ready)
		return 0;
	avail = vm_gpa_to_hva(vm, q->avail, avail_bytes(q->size), false);
	if (!avail)
		return -HYP_EBUSY;
	idx = avail[1];
	pending = (uint16_t)(idx - q->next_avail);
	if (!pending)
		return 0;
	/* a driver never has more chains out than the queue has entries: the
	 * ones still held by the device count too */
	if (pending > q->size - q->in_flight)
		return fail(q, VIRTQ_FAULT_AVAIL_IDX);
	table = vm_gpa_to_hva(vm, q->desc, desc_bytes(q->size), false);
	if (!table)
		return -HYP_EBUSY;
	/* the ring entry and the descriptors were written before idx */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	head = avail[AVAIL_RING / 2 + (q->next_avail & (q->size - 1))];
	if (head >= q->size)
		return fail(q, VIRTQ_FAULT_HEAD);
	if (head_busy(q, head))
		return fail(q, VIRTQ_FAULT_HEAD_BUSY);
	rc = walk(q, vm, table, head, c);
	if (rc)
		return rc;
	q->busy[head / 64] |= 1ULL << (head % 64);
	q->in_flight++;
	q->next_avail++;
	q->last_taken = head;
	return 1;
}

int virtq_unpop(struct virtq *q, uint16_t head)
{
	if (q->fault || !q->ready || head >= q->size || !head_busy(q, head) ||
	    q->last_taken != head)
		return -HYP_EINVAL;
	q->busy[head / 64] &= ~(1ULL << (head % 64));
	q->in_flight--;
	q->next_avail--;
	q->last_taken = -1;
	return 0;
}

int virtq_push(struct virtq *q, struct vm *vm, uint16_t head, uint32_t written)
{
	uint16_t slot = q->next_used & (q->size - 1);
	volatile uint8_t *used;
	volatile struct virtq_used_elem *e;

	if (q->fault || !q->ready || head >= q->size || !head_busy(q, head))
		return -HYP_EINVAL;
	/* from the ring's start (flags, idx) through this element: a write,
	 * so its pages are marked dirty */
	used = vm_gpa_to_hva(vm, q->used, USED_RING + USED_ELEM * (slot + 1ULL), true);
	if (!used)
		return -HYP_EBUSY;
	e = (volatile struct virtq_used_elem *)(used + USED_RING + USED_ELEM * slot);
	e->id = head;
	e->len = written;
	/* the driver must see the element before the index that publishes it */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	q->next_used++;
	*(volatile uint16_t *)(used + 2) = q->next_used;
	q->busy[head / 64] &= ~(1ULL << (head % 64));
	q->in_flight--;
	q->last_taken = -1;
	return 0;
}

bool virtq_should_interrupt(struct virtq *q, struct vm *vm)
{
	const volatile uint16_t *avail;

	if (q->fault || !q->ready)
		return false;
	/* used.idx is out before the driver's flags are read: otherwise a
	 * driver that re-enables interrupts right then is never woken */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	avail = vm_gpa_to_hva(vm, q->avail, avail_bytes(q->size), false);
	if (!avail)
		return true;
	return !(avail[0] & VIRTQ_AVAIL_F_NO_INTERRUPT);
}

void virtq_fail(struct virtq *q, enum virtq_fault f)
{
	if (!q->fault)
		q->fault = f;
}

const char *virtq_fault_name(enum virtq_fault f)
{
	static const char *const names[VIRTQ_FAULT_COUNT] = {
		[VIRTQ_FAULT_NONE] = "none",
		[VIRTQ_FAULT_SIZE] = "queue-size",
		[VIRTQ_FAULT_ALIGN] = "ring-alignment",
		[VIRTQ_FAULT_RING_RAM] = "ring-not-ram",
		[VIRTQ_FAULT_AVAIL_IDX] = "avail-idx-jump",
		[VIRTQ_FAULT_HEAD] = "head-index",
		[VIRTQ_FAULT_HEAD_BUSY] = "head-in-use",
		[VIRTQ_FAULT_NEXT] = "next-index",
		[VIRTQ_FAULT_LOOP] = "loop",
		[VIRTQ_FAULT_TOO_LONG] = "chain-too-long",
		[VIRTQ_FAULT_INDIRECT] = "indirect",
		[VIRTQ_FAULT_LEN_ZERO] = "zero-length",
		[VIRTQ_FAULT_BUF_RAM] = "buffer-not-ram",
		[VIRTQ_FAULT_ORDER] = "readable-after-writable",
		[VIRTQ_FAULT_UNUSABLE] = "unusable-chain",
	};

	return (unsigned int)f < VIRTQ_FAULT_COUNT ? names[f] : "unknown";
}
