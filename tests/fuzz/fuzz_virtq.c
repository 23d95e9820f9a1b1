/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the guest-facing split virtqueue, hyp/vdev/virtq.c
 * (docs/fuzzing.md, docs/virtio.md "Virtqueue validation"). One input is a
 * queue configuration, a script of operations and a guest RAM image:
 *
 *   0  u16 QueueNum            8  u64 desc (QueueDesc)
 *   2  u8  log2 QueueNumMax    16 u64 avail (QueueDriver)
 *   3  u8  chain limit - 1     24 u64 used (QueueDevice)
 *   4  u16 start index         32 ops: nr_ops records of 6 bytes
 *   6  u8  nr_ops (<= 64)         (kind u8, a u8, b u16, c u16)
 *   7  u8  flags: 1 = the three addresses are offsets from the RAM base
 *   then the first bytes of guest RAM (16 KiB at 0x80000000, zero after
 *   the input).
 *
 * Operations: 0 take a chain; 1 return one (a: which held chain, or with
 * bit 7 the head b itself; c bytes written); 2 the guest writes u16 c at
 * RAM offset b; 3 ask whether to interrupt; 4 reset and enable again with
 * QueueNum b (a = 1) or as before; 5 take a chain while the guest writes c
 * at offset b right after the walker's a-th range check (a descriptor
 * rewritten under the walker).
 *
 * Checked on every input, besides ASan/UBSan:
 *  - every take agrees with a second walker written here from
 *    docs/virtio.md (the result, the fault and every segment), except
 *    under operation 5, where only the invariants below are checked;
 *  - a taken chain: 1..min(size, limit) segments, each inside RAM with a
 *    length > 0 (computed here in 128 bits), readable ones first, lengths
 *    summed right, head < size, not held already;
 *  - bounded work: per call at most min(size, limit) descriptors copied and
 *    at most two guest mappings; a take maps nothing for writing, a return
 *    maps for writing only inside the used ring and at least the bytes it
 *    writes (so they are marked dirty), a refused return nothing;
 *  - a return writes the element and then used.idx = the device's count;
 *  - the interrupt decision is !(avail.flags & 1) on a working queue;
 *  - enabling agrees with the rules (size, alignment, RAM); a fault holds
 *    until reset. */
#include <string.h>
#include <errno.h>
#include <guest_mem.h>
#include <virtio_mmio.h>
#include <virtq.h>
#include <vm.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RAM_GPA		VM_GUEST_RAM_BASE
#define RAM_SIZE	0x4000UL
#define HDR		32
#define OP_SIZE		6
#define MAX_OPS		64

uint64_t time_now(void)
{
	return 0;
}

static uint8_t *ram;		/* exactly RAM_SIZE: ASan sees a byte past it */
static struct vm vm;
static struct virtq q;
static struct virtq_chain chain, expect;

/* ---- the guest memory layer, as hyp/mm/guest_mem.c promises it ---- */

static bool in_ram(uint64_t gpa, uint64_t len)
{
	unsigned __int128 end = (unsigned __int128)gpa + len;

	return gpa >= RAM_GPA && end <= (unsigned __int128)RAM_GPA + RAM_SIZE;
}

static unsigned int maps, write_maps;
static uint64_t write_lo, write_hi;	/* what was mapped for writing */
static int toctou_at = -1;		/* range check after which the guest writes */
static uint16_t toctou_off, toctou_val;

static void guest_write16(uint16_t off, uint16_t v)
{
	if (off < RAM_SIZE - 1)
		memcpy(ram + off, &v, 2);
}

bool vm_gpa_range_is_ram(const struct vm *v, gpa_t gpa, uint64_t len)
{
	CHECK(v == &vm);
	if (toctou_at >= 0 && !toctou_at--)
		guest_write16(toctou_off, toctou_val);
	return in_ram(gpa, len);
}

void *vm_gpa_to_hva(struct vm *v, gpa_t gpa, uint64_t len, bool write)
{
	CHECK(v == &vm);
	maps++;
	if (!in_ram(gpa, len))
		return NULL;
	if (write) {
		write_maps++;
		write_lo = gpa;
		write_hi = gpa + len;
	}
	return ram + (gpa - RAM_GPA);
}

/* ---- the reference: docs/virtio.md, "Virtqueue validation", again ---- */

static uint16_t rd16(uint64_t gpa)
{
	uint16_t v;

	memcpy(&v, ram + (gpa - RAM_GPA), 2);
	return v;
}

static uint64_t used_size(uint16_t n)
{
	return 6 + 8ULL * n;
}

static enum virtq_fault ref_enable(void)
{
	uint16_t n = q.size;

	if (!n || (n & (n - 1)) || n > q.max_size)
		return VIRTQ_FAULT_SIZE;
	if (q.desc % 16 || q.avail % 2 || q.used % 4)
		return VIRTQ_FAULT_ALIGN;
	if (!in_ram(q.desc, 16ULL * n) || !in_ram(q.avail, 6 + 2ULL * n) ||
	    !in_ram(q.used, used_size(n)))
		return VIRTQ_FAULT_RING_RAM;
	return VIRTQ_FAULT_NONE;
}

/* 1: a chain (in @expect), 0: none, -1: a fault (*why) */
static int ref_pop(enum virtq_fault *why)
{
	bool seen[VIRTQ_SIZE_MAX] = { false }, wrote = false;
	unsigned int limit = q.size < q.chain_max ? q.size : q.chain_max;
	uint16_t pending, i;

	*why = q.fault;
	if (q.fault)
		return -1;
	if (!q.ready)
		return 0;
	pending = (uint16_t)(rd16(q.avail + 2) - q.next_avail);
	if (!pending)
		return 0;
	*why = VIRTQ_FAULT_AVAIL_IDX;
	if ((unsigned int)pending + q.in_flight > q.size)
		return -1;
	i = rd16(q.avail + 4 + 2ULL * (q.next_avail % q.size));
	*why = VIRTQ_FAULT_HEAD;
	if (i >= q.size)
		return -1;
	*why = VIRTQ_FAULT_HEAD_BUSY;
	if (q.busy[i / 64] >> (i % 64) & 1)
		return -1;
	memset(&expect, 0, offsetof(struct virtq_chain, seg));
	expect.head = i;
	for (;;) {
		uint64_t at = q.desc + 16ULL * i, addr;
		uint32_t len;
		uint16_t flags, next;

		*why = VIRTQ_FAULT_LOOP;
		if (seen[i])
			return -1;
		*why = VIRTQ_FAULT_TOO_LONG;
		if (expect.nr_segs == limit)
			return -1;
		seen[i] = true;
		memcpy(&addr, ram + (at - RAM_GPA), 8);
		memcpy(&len, ram + (at + 8 - RAM_GPA), 4);
		flags = rd16(at + 12);
		next = rd16(at + 14);
		*why = VIRTQ_FAULT_INDIRECT;
		if (flags & VIRTQ_DESC_F_INDIRECT)
			return -1;
		*why = VIRTQ_FAULT_LEN_ZERO;
		if (!len)
			return -1;
		*why = VIRTQ_FAULT_BUF_RAM;
		if (!in_ram(addr, len))
			return -1;
		*why = VIRTQ_FAULT_ORDER;
		if (!(flags & VIRTQ_DESC_F_WRITE) && wrote)
			return -1;
		wrote = flags & VIRTQ_DESC_F_WRITE;
		expect.seg[expect.nr_segs++] = (struct virtq_seg){ addr, len, wrote };
		if (wrote) {
			expect.write_len += len;
		} else {
			expect.read_len += len;
			expect.nr_read++;
		}
		*why = VIRTQ_FAULT_NEXT;
		if (!(flags & VIRTQ_DESC_F_NEXT))
			return 1;
		if (next >= q.size)
			return -1;
		i = next;
	}
}

/* ---- the invariants ---- */

static unsigned int held_count(void)
{
	unsigned int n = 0;

	for (unsigned int w = 0; w < VIRTQ_SIZE_MAX / 64; w++)
		n += (unsigned int)__builtin_popcountll(q.busy[w]);
	return n;
}

static void check_chain(uint16_t limit)
{
	uint64_t rd = 0, wr = 0;

	CHECK(chain.head < q.size);
	CHECK(chain.nr_segs >= 1 && chain.nr_segs <= limit);
	CHECK(chain.nr_read <= chain.nr_segs);
	for (unsigned int s = 0; s < chain.nr_segs; s++) {
		const struct virtq_seg *g = &chain.seg[s];

		CHECK(g->len > 0 && in_ram(g->gpa, g->len));
		CHECK(g->writable == (s >= chain.nr_read));
		if (g->writable)
			wr += g->len;
		else
			rd += g->len;
	}
	CHECK(rd == chain.read_len && wr == chain.write_len);
}

static bool same_chain(void)
{
	if (chain.head != expect.head || chain.nr_segs != expect.nr_segs ||
	    chain.nr_read != expect.nr_read || chain.read_len != expect.read_len ||
	    chain.write_len != expect.write_len)
		return false;
	for (unsigned int s = 0; s < chain.nr_segs; s++)
		if (chain.seg[s].gpa != expect.seg[s].gpa || chain.seg[s].len != expect.seg[s].len ||
		    chain.seg[s].writable != expect.seg[s].writable)
			return false;
	return true;
}

static void op_pop(bool racing)
{
	uint16_t limit = q.size < q.chain_max ? q.size : q.chain_max;
	uint16_t next_avail = q.next_avail, in_flight = q.in_flight;
	enum virtq_fault was = q.fault, why = VIRTQ_FAULT_NONE;
	uint64_t reads = q.desc_reads;
	int want = racing ? 2 : ref_pop(&why), rc;

	maps = write_maps = 0;
	rc = virtq_pop(&q, &vm, &chain);
	CHECK(q.desc_reads - reads <= limit);
	CHECK(maps <= 2 && !write_maps);
	if (rc == 1) {
		check_chain(limit);
		/* held now, and it was not before (the count grew by one) */
		CHECK(q.busy[chain.head / 64] >> (chain.head % 64) & 1);
		CHECK(q.next_avail == (uint16_t)(next_avail + 1) && q.in_flight == in_flight + 1);
	} else {
		CHECK(q.next_avail == next_avail && q.in_flight == in_flight);
	}
	if (rc == -HYP_EINVAL)
		CHECK(q.fault != VIRTQ_FAULT_NONE && (!was || q.fault == was));
	else
		CHECK(rc == 0 || rc == 1);
	CHECK(held_count() == q.in_flight && q.in_flight <= q.size);
	if (racing)
		return;
	if (want == 1)
		CHECK(rc == 1 && same_chain());
	else if (want == 0)
		CHECK(rc == 0);
	else
		CHECK(rc == -HYP_EINVAL && q.fault == why);
	if (fuzz_verbose())
		fprintf(stderr, "pop: %d %s\n", rc, virtq_fault_name(q.fault));
}

static uint16_t held_head(uint8_t nth)
{
	unsigned int n = 0, want = nth % (q.in_flight ? q.in_flight : 1);

	for (unsigned int h = 0; h < VIRTQ_SIZE_MAX; h++)
		if (q.busy[h / 64] >> (h % 64) & 1 && n++ == want)
			return (uint16_t)h;
	return 0;
}

static void op_push(uint8_t a, uint16_t b, uint16_t c)
{
	uint16_t head = a & 0x80 ? b : held_head(a), next_used = q.next_used;
	bool ok = !q.fault && q.ready && head < q.size && (q.busy[head / 64] >> (head % 64) & 1);
	int rc;

	maps = write_maps = 0;
	rc = virtq_push(&q, &vm, head, c);
	CHECK(maps <= 1);
	if (!ok) {
		CHECK(rc == -HYP_EINVAL && !write_maps && q.next_used == next_used);
		return;
	}
	CHECK(rc == 0 && write_maps == 1);
	CHECK(write_lo >= q.used && write_hi <= q.used + used_size(q.size));
	CHECK(q.next_used == (uint16_t)(next_used + 1));
	CHECK(rd16(q.used + 2) == q.next_used);
	{
		uint64_t e = q.used + 4 + 8ULL * (next_used % q.size);
		uint32_t id, len;

		memcpy(&id, ram + (e - RAM_GPA), 4);
		memcpy(&len, ram + (e + 4 - RAM_GPA), 4);
		CHECK(id == head && len == c);
		/* every byte it wrote was mapped for writing, so marked dirty */
		CHECK(write_lo <= q.used + 2 && write_hi >= e + 8);
	}
	CHECK(!(q.busy[head / 64] >> (head % 64) & 1));
	CHECK(held_count() == q.in_flight);
}

static void op_interrupt(void)
{
	bool want = !q.fault && q.ready && !(rd16(q.avail) & VIRTQ_AVAIL_F_NO_INTERRUPT);

	maps = write_maps = 0;
	CHECK(virtq_should_interrupt(&q, &vm) == want);
	CHECK(maps <= 1 && !write_maps);
}

static void enable(void)
{
	enum virtq_fault want = ref_enable();
	int rc;

	maps = write_maps = 0;
	rc = virtq_enable(&q, &vm);
	CHECK(!maps);
	CHECK(want ? rc == -HYP_EINVAL && q.fault == want && !q.ready : rc == 0 && q.ready);
}

static uint16_t rd16_in(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint64_t rd64_in(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int nr_ops;
	uint64_t base;

	if (size < HDR)
		return 0;
	nr_ops = data[6] < MAX_OPS ? data[6] : MAX_OPS;
	if (size < HDR + nr_ops * OP_SIZE)
		nr_ops = (unsigned int)((size - HDR) / OP_SIZE);
	if (!ram)
		ram = malloc(RAM_SIZE);
	memset(ram, 0, RAM_SIZE);
	if (size > HDR + nr_ops * OP_SIZE) {
		size_t n = size - HDR - nr_ops * OP_SIZE;

		memcpy(ram, data + HDR + nr_ops * OP_SIZE, n < RAM_SIZE ? n : RAM_SIZE);
	}
	memset(&vm, 0, sizeof(vm));
	vm.cfg.ram_gpa = RAM_GPA;
	vm.cfg.ram_size = RAM_SIZE;
	toctou_at = -1;

	virtq_init(&q, (uint16_t)(1U << (data[2] % 9)), (uint16_t)(data[3] + 1));
	CHECK(q.max_size <= VIRTQ_SIZE_MAX && q.chain_max >= 1 && q.chain_max <= q.max_size);
	base = data[7] & 1 ? RAM_GPA : 0;
	CHECK(virtq_set_size(&q, rd16_in(data)) == 0);
	CHECK(virtq_set_desc(&q, base + (base ? (uint32_t)rd64_in(data + 8) : rd64_in(data + 8))) == 0);
	CHECK(virtq_set_avail(&q, base + (base ? (uint32_t)rd64_in(data + 16) : rd64_in(data + 16))) == 0);
	CHECK(virtq_set_used(&q, base + (base ? (uint32_t)rd64_in(data + 24) : rd64_in(data + 24))) == 0);
	enable();
	/* as after that many chains (the 16-bit indices wrap) */
	q.next_avail = q.next_used = rd16_in(data + 4);

	for (unsigned int i = 0; i < nr_ops; i++) {
		const uint8_t *op = data + HDR + i * OP_SIZE;
		uint8_t a = op[1];
		uint16_t b = rd16_in(op + 2), c = rd16_in(op + 4);

		switch (op[0] % 6) {
		case 0:
			op_pop(false);
			break;
		case 1:
			op_push(a, b, c);
			break;
		case 2:
			guest_write16(b % RAM_SIZE, c);
			break;
		case 3:
			op_interrupt();
			break;
		case 4: {
			uint16_t n = a == 1 ? b : q.size;
			gpa_t d = q.desc, av = q.avail, u = q.used;

			virtq_reset(&q);
			CHECK(!q.ready && !q.fault && !q.in_flight && !held_count());
			CHECK(!q.desc && !q.avail && !q.used && q.size == q.max_size);
			/* frozen while ready, taken while not */
			CHECK(virtq_set_size(&q, n) == 0 && virtq_set_desc(&q, d) == 0 &&
			      virtq_set_avail(&q, av) == 0 && virtq_set_used(&q, u) == 0);
			enable();
			if (q.ready)
				CHECK(virtq_set_size(&q, 1) == -HYP_EBUSY && q.size == n);
			break;
		}
		case 5:
			toctou_at = a % 16;
			toctou_off = b % RAM_SIZE;
			toctou_val = c;
			op_pop(true);
			toctou_at = -1;
			break;
		}
	}
	return 0;
}
