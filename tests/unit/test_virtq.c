/* SPDX-License-Identifier: MIT */
/* hyp/vdev/virtq.c, the guest-facing split virtqueue, over the real guest
 * memory layer (hyp/mm/guest_mem.c, dirty_log.c, gstage.c) and an 8 MiB
 * fake guest RAM: good chains, every refusal docs/virtio.md lists, the used
 * ring and its dirty marking.
 *
 * vm_gpa_range_is_ram() is wrapped at link time (tests/unit/unit.mk): the
 * walker calls it on each buffer after copying the descriptor, so the
 * wrapper can play a guest that rewrites a descriptor right then (TOCTOU). */
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <gstage.h>
#include <guest_mem.h>
#include <mm.h>
#include <tlb.h>
#include <virtio_mmio.h>
#include <virtq.h>
#include <vm.h>
#include "test.h"

#define RAM		VM_GUEST_RAM_BASE
#define RAM_SIZE	(4 * SZ_2M)
#define RAM_END		(RAM + RAM_SIZE)
#define DESC		(RAM + 0x1000)
#define AVAIL		(RAM + 0x2000)
#define USED		(RAM + 0x3000)
#define BUF		(RAM + 0x10000)	/* buffers from here */
#define QSIZE		8
#define QMAX		16

static struct vm tvm;
static struct virtq q;
static struct virtq_chain chain;

/* what guest_mem.c and dirty_log.c need beside gstage.c: host_memory.c */

/* ---- a guest that rewrites descriptor @toctou_index as soon as the walker
 * checks the buffer it named (the walker has copied it by then) ---- */

static int toctou_index = -1;
static struct virtq_desc toctou_new;

bool __real_vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len);
bool __wrap_vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len);
bool __wrap_vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	bool ok = __real_vm_gpa_range_is_ram(vm, gpa, len);

	if (toctou_index >= 0) {
		struct virtq_desc *t = vm_gpa_to_hva(&tvm, DESC, 16 * QSIZE, true);

		if (gpa == t[toctou_index].addr) {
			t[toctou_index] = toctou_new;
			toctou_index = -1;
		}
	}
	return ok;
}

/* ---- the guest's side of the rings ---- */

static void *guest(gpa_t gpa, uint64_t len)
{
	void *p = vm_gpa_to_hva(&tvm, gpa, len, true);

	EXPECT_TRUE(p != NULL);
	return p;
}

static void desc(uint16_t i, gpa_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	struct virtq_desc *d = guest(DESC + 16ULL * i, 16);

	d->addr = addr;
	d->len = len;
	d->flags = flags;
	d->next = next;
}

static uint16_t *avail_hdr(void)
{
	return guest(AVAIL, 4);	/* flags, idx */
}

/* the driver offers @head: the ring entry, then idx */
static void offer(uint16_t head)
{
	uint16_t *a = guest(AVAIL, 6 + 2 * QSIZE);

	a[2 + a[1] % QSIZE] = head;
	a[1]++;
}

static struct virtq_used_elem used_elem(uint16_t slot)
{
	struct virtq_used_elem *e = guest(USED + 4 + 8ULL * slot, 8);

	return *e;
}

static uint16_t used_idx(void)
{
	return ((uint16_t *)guest(USED, 4))[1];
}

static void vm_new(void)
{
	memset(&tvm, 0, sizeof(tvm));
	tvm.cfg.ram_gpa = RAM;
	tvm.cfg.ram_size = RAM_SIZE;
	tvm.ram_hpa = (hpa_t)(uintptr_t)aligned_alloc(SZ_2M, RAM_SIZE);
	tvm.meta_hpa = mm_alloc(vm_meta_size(RAM_SIZE), GSTAGE_ROOT_SIZE);
	vm_ram_init(&tvm);
	toctou_index = -1;
}

static void vm_free(void)
{
	vm_dirty_log_stop(&tvm);
	free((void *)(uintptr_t)tvm.ram_hpa);
	mm_free(tvm.meta_hpa, 0);
}

/* a VM and a ready queue of QSIZE entries at DESC, AVAIL, USED */
static void setup(void)
{
	vm_new();
	virtq_init(&q, QMAX, QMAX);
	EXPECT_EQ(virtq_set_size(&q, QSIZE), 0);
	EXPECT_EQ(virtq_set_desc(&q, DESC), 0);
	EXPECT_EQ(virtq_set_avail(&q, AVAIL), 0);
	EXPECT_EQ(virtq_set_used(&q, USED), 0);
	EXPECT_EQ(virtq_enable(&q, &tvm), 0);
	EXPECT_TRUE(q.ready);
}

/* The chain offered at @head must be refused for @why, and the queue stay
 * refusing. */
static void expect_refused(uint16_t head, enum virtq_fault why)
{
	offer(head);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), -HYP_EINVAL);
	EXPECT_EQ(q.fault, why);
	EXPECT_EQ(q.in_flight, 0);
	EXPECT_EQ(q.next_avail, 0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), -HYP_EINVAL);
}

static void expect_seg(unsigned int i, gpa_t gpa, uint32_t len, bool writable)
{
	EXPECT_EQ(chain.seg[i].gpa, gpa);
	EXPECT_EQ(chain.seg[i].len, len);
	EXPECT_EQ(chain.seg[i].writable, writable);
}

/* ---- good chains ---- */

TEST(virtq_empty_queue_gives_nothing)
{
	setup();
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 0);
	EXPECT_EQ(q.desc_reads, 0);
	vm_free();
}

TEST(virtq_single_readable_descriptor)
{
	setup();
	desc(3, BUF, 512, 0, 0);
	offer(3);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.head, 3);
	EXPECT_EQ(chain.nr_segs, 1);
	EXPECT_EQ(chain.nr_read, 1);
	EXPECT_EQ(chain.read_len, 512);
	EXPECT_EQ(chain.write_len, 0);
	expect_seg(0, BUF, 512, false);
	EXPECT_EQ(q.in_flight, 1);
	EXPECT_EQ(q.next_avail, 1);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 0);
	vm_free();
}

/* A chain given back untaken (a NIC's rate limit holding a frame): the
 * next pop takes the same entry again, checked again; only the chain the
 * last pop took can be given back, and only once. */
TEST(virtq_unpop_gives_the_last_chain_back)
{
	setup();
	desc(3, BUF, 512, 0, 0);
	desc(4, BUF + 0x1000, 256, 0, 0);
	offer(3);
	offer(4);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(virtq_unpop(&q, 4), -HYP_EINVAL);	/* not taken */
	EXPECT_EQ(virtq_unpop(&q, 3), 0);
	EXPECT_EQ(q.in_flight, 0);
	EXPECT_EQ(q.next_avail, 0);
	EXPECT_EQ(virtq_unpop(&q, 3), -HYP_EINVAL);	/* once */
	desc(3, BUF + 0x2000, 128, 0, 0);		/* the driver rewrote it meanwhile */
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.head, 3);
	expect_seg(0, BUF + 0x2000, 128, false);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.head, 4);
	EXPECT_EQ(virtq_unpop(&q, 3), -HYP_EINVAL);	/* not the last taken */
	EXPECT_EQ(virtq_push(&q, &tvm, 4, 0), 0);
	EXPECT_EQ(virtq_unpop(&q, 4), -HYP_EINVAL);	/* answered */
	EXPECT_EQ(virtq_push(&q, &tvm, 3, 0), 0);
	EXPECT_EQ(q.in_flight, 0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 0);
	vm_free();
}

TEST(virtq_readable_then_writable_chain)
{
	setup();
	/* a block request's shape: header, data, status */
	desc(5, BUF, 16, VIRTQ_DESC_F_NEXT, 1);
	desc(1, BUF + 0x1000, 4096, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 6);
	desc(6, BUF + 0x3000, 1, VIRTQ_DESC_F_WRITE, 0);
	offer(5);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.head, 5);
	EXPECT_EQ(chain.nr_segs, 3);
	EXPECT_EQ(chain.nr_read, 1);
	EXPECT_EQ(chain.read_len, 16);
	EXPECT_EQ(chain.write_len, 4097);
	expect_seg(0, BUF, 16, false);
	expect_seg(1, BUF + 0x1000, 4096, true);
	expect_seg(2, BUF + 0x3000, 1, true);
	EXPECT_EQ(q.desc_reads, 3);
	vm_free();
}

TEST(virtq_multi_segment_readable_and_several_chains)
{
	setup();
	desc(0, BUF, 100, VIRTQ_DESC_F_NEXT, 2);
	desc(2, BUF + 200, 300, 0, 0);
	desc(1, BUF + 1000, 64, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	offer(1);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.nr_segs, 2);
	EXPECT_EQ(chain.nr_read, 2);
	EXPECT_EQ(chain.read_len, 400);
	expect_seg(1, BUF + 200, 300, false);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.head, 1);
	EXPECT_EQ(chain.nr_read, 0);
	EXPECT_EQ(chain.write_len, 64);
	EXPECT_EQ(q.in_flight, 2);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 0);
	vm_free();
}

TEST(virtq_buffer_ending_exactly_at_the_end_of_ram)
{
	setup();
	desc(0, RAM_END - 64, 64, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	expect_seg(0, RAM_END - 64, 64, true);
	vm_free();
}

TEST(virtq_chain_through_every_descriptor)
{
	setup();
	for (uint16_t i = 0; i < QSIZE; i++)
		desc(i, BUF + 0x100 * i, 8, i + 1 < QSIZE ? VIRTQ_DESC_F_NEXT : 0, i + 1);
	offer(0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.nr_segs, QSIZE);
	vm_free();
}

TEST(virtq_indices_wrap_at_65536)
{
	setup();
	/* as after 65535 chains taken and used */
	q.next_avail = q.next_used = 0xffff;
	avail_hdr()[1] = 0xffff;
	((uint16_t *)guest(USED, 4))[1] = 0xffff;
	desc(2, BUF, 8, VIRTQ_DESC_F_WRITE, 0);
	offer(2);
	EXPECT_EQ(avail_hdr()[1], 0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.head, 2);
	EXPECT_EQ(q.next_avail, 0);
	EXPECT_EQ(virtq_push(&q, &tvm, 2, 8), 0);
	EXPECT_EQ(used_idx(), 0);
	EXPECT_EQ(used_elem(0xffff % QSIZE).id, 2);
	vm_free();
}

/* ---- refusals while taking a chain ---- */

TEST(virtq_refuses_a_loop)
{
	setup();
	desc(0, BUF, 8, VIRTQ_DESC_F_NEXT, 1);
	desc(1, BUF + 8, 8, VIRTQ_DESC_F_NEXT, 0);
	expect_refused(0, VIRTQ_FAULT_LOOP);
	EXPECT_EQ(q.desc_reads, 2);	/* stopped at the first descriptor met again */
	vm_free();
}

TEST(virtq_refuses_a_descriptor_pointing_to_itself)
{
	setup();
	desc(4, BUF, 8, VIRTQ_DESC_F_NEXT, 4);
	expect_refused(4, VIRTQ_FAULT_LOOP);
	vm_free();
}

TEST(virtq_refuses_a_chain_longer_than_the_queue)
{
	setup();
	/* every descriptor, then back to the first: QSIZE + 1 links */
	for (uint16_t i = 0; i < QSIZE; i++)
		desc(i, BUF + 0x100 * i, 8, VIRTQ_DESC_F_NEXT, (i + 1) % QSIZE);
	expect_refused(0, VIRTQ_FAULT_LOOP);
	EXPECT_TRUE(q.desc_reads <= QSIZE);	/* bounded work */
	vm_free();
}

TEST(virtq_refuses_a_chain_longer_than_the_device_takes)
{
	vm_new();
	virtq_init(&q, QMAX, 4);
	EXPECT_EQ(virtq_set_size(&q, QSIZE), 0);
	EXPECT_EQ(virtq_set_desc(&q, DESC), 0);
	EXPECT_EQ(virtq_set_avail(&q, AVAIL), 0);
	EXPECT_EQ(virtq_set_used(&q, USED), 0);
	EXPECT_EQ(virtq_enable(&q, &tvm), 0);
	/* four is fine */
	for (uint16_t i = 0; i < 4; i++)
		desc(i, BUF + 0x100 * i, 8, i < 3 ? VIRTQ_DESC_F_NEXT : 0, i + 1);
	offer(0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.nr_segs, 4);
	/* five is not */
	for (uint16_t i = 3; i < 8; i++)
		desc(i, BUF + 0x100 * i, 8, i < 7 ? VIRTQ_DESC_F_NEXT : 0, i + 1);
	offer(3);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), -HYP_EINVAL);
	EXPECT_EQ(q.fault, VIRTQ_FAULT_TOO_LONG);
	EXPECT_EQ(q.desc_reads, 4 + 4);
	vm_free();
}

TEST(virtq_refuses_a_next_index_beyond_the_queue)
{
	setup();
	desc(0, BUF, 8, VIRTQ_DESC_F_NEXT, QSIZE);
	expect_refused(0, VIRTQ_FAULT_NEXT);
	vm_free();
}

TEST(virtq_ignores_next_without_the_next_flag)
{
	setup();
	desc(0, BUF, 8, 0, 0xffff);
	offer(0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(chain.nr_segs, 1);
	vm_free();
}

TEST(virtq_refuses_a_head_index_beyond_the_queue)
{
	setup();
	expect_refused(QSIZE, VIRTQ_FAULT_HEAD);
	vm_free();
}

TEST(virtq_refuses_a_head_the_device_still_holds)
{
	setup();
	desc(1, BUF, 8, 0, 0);
	offer(1);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	offer(1);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), -HYP_EINVAL);
	EXPECT_EQ(q.fault, VIRTQ_FAULT_HEAD_BUSY);
	vm_free();
}

TEST(virtq_takes_a_head_again_once_used)
{
	setup();
	desc(1, BUF, 8, 0, 0);
	offer(1);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(virtq_push(&q, &tvm, 1, 0), 0);
	offer(1);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(q.fault, VIRTQ_FAULT_NONE);
	vm_free();
}

TEST(virtq_refuses_an_avail_idx_jump)
{
	setup();
	desc(0, BUF, 8, 0, 0);
	/* QSIZE + 1 chains at once: more than the queue holds */
	avail_hdr()[1] = QSIZE + 1;
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), -HYP_EINVAL);
	EXPECT_EQ(q.fault, VIRTQ_FAULT_AVAIL_IDX);
	EXPECT_EQ(q.desc_reads, 0);
	vm_free();
}

TEST(virtq_takes_a_full_queue)
{
	setup();
	for (uint16_t i = 0; i < QSIZE; i++) {
		desc(i, BUF + 0x100 * i, 8, 0, 0);
		offer(i);
	}
	for (uint16_t i = 0; i < QSIZE; i++)
		EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(q.in_flight, QSIZE);
	vm_free();
}

TEST(virtq_refuses_an_avail_idx_going_back)
{
	setup();
	desc(0, BUF, 8, 0, 0);
	offer(0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	avail_hdr()[1] = 0;	/* "unexposes" the chain: 0 - 1 = 65535 chains */
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), -HYP_EINVAL);
	EXPECT_EQ(q.fault, VIRTQ_FAULT_AVAIL_IDX);
	vm_free();
}

TEST(virtq_counts_held_chains_against_the_avail_idx)
{
	setup();
	for (uint16_t i = 0; i < QSIZE; i++)
		desc(i, BUF + 0x100 * i, 8, 0, 0);
	offer(0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	/* one held by the device, QSIZE more offered: QSIZE + 1 out */
	avail_hdr()[1] += QSIZE;
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), -HYP_EINVAL);
	EXPECT_EQ(q.fault, VIRTQ_FAULT_AVAIL_IDX);
	vm_free();
}

TEST(virtq_refuses_a_buffer_outside_ram)
{
	setup();
	desc(0, RAM - 0x1000, 16, 0, 0);
	expect_refused(0, VIRTQ_FAULT_BUF_RAM);
	vm_free();
}

TEST(virtq_refuses_a_buffer_in_a_device_window)
{
	setup();
	desc(0, VUART_BASE, 8, VIRTQ_DESC_F_WRITE, 0);
	expect_refused(0, VIRTQ_FAULT_BUF_RAM);
	vm_free();
}

TEST(virtq_refuses_a_buffer_straddling_the_end_of_ram)
{
	setup();
	desc(0, RAM_END - 8, 16, VIRTQ_DESC_F_WRITE, 0);
	expect_refused(0, VIRTQ_FAULT_BUF_RAM);
	vm_free();
}

TEST(virtq_refuses_a_buffer_starting_at_the_end_of_ram)
{
	setup();
	desc(0, RAM_END, 1, 0, 0);
	expect_refused(0, VIRTQ_FAULT_BUF_RAM);
	vm_free();
}

TEST(virtq_refuses_a_buffer_wrapping_around_2_to_the_64)
{
	setup();
	/* addr + len wraps to RAM + 0x1000: inside RAM if added naively */
	desc(0, 0 - (uint64_t)0x1000, (uint32_t)(RAM + 0x2000), 0, 0);
	expect_refused(0, VIRTQ_FAULT_BUF_RAM);
	vm_free();
}

TEST(virtq_refuses_a_buffer_of_length_0)
{
	setup();
	desc(0, BUF, 16, VIRTQ_DESC_F_NEXT, 1);
	desc(1, BUF + 16, 0, VIRTQ_DESC_F_WRITE, 0);
	expect_refused(0, VIRTQ_FAULT_LEN_ZERO);
	vm_free();
}

TEST(virtq_refuses_a_length_0_buffer_at_the_end_of_ram)
{
	setup();
	/* the range check alone would take [RAM_END, RAM_END) */
	desc(0, RAM_END, 0, 0, 0);
	expect_refused(0, VIRTQ_FAULT_LEN_ZERO);
	vm_free();
}

TEST(virtq_refuses_readable_after_writable)
{
	setup();
	desc(0, BUF, 16, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 1);
	desc(1, BUF + 16, 16, 0, 0);
	expect_refused(0, VIRTQ_FAULT_ORDER);
	vm_free();
}

TEST(virtq_refuses_indirect_descriptors)
{
	setup();
	desc(0, BUF, 16, VIRTQ_DESC_F_INDIRECT, 0);
	expect_refused(0, VIRTQ_FAULT_INDIRECT);
	vm_free();
}

TEST(virtq_refuses_indirect_later_in_a_chain)
{
	setup();
	desc(0, BUF, 16, VIRTQ_DESC_F_NEXT, 1);
	desc(1, BUF + 16, 32, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_WRITE, 0);
	expect_refused(0, VIRTQ_FAULT_INDIRECT);
	vm_free();
}

TEST(virtq_a_fault_holds_until_reset)
{
	setup();
	desc(0, RAM_END, 16, 0, 0);
	expect_refused(0, VIRTQ_FAULT_BUF_RAM);
	/* the guest mends the descriptor: still refused, nothing read */
	desc(0, BUF, 16, 0, 0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), -HYP_EINVAL);
	EXPECT_EQ(q.desc_reads, 1);
	EXPECT_FALSE(virtq_should_interrupt(&q, &tvm));
	EXPECT_EQ(virtq_enable(&q, &tvm), -HYP_EINVAL);
	/* the driver resets the queue and sets it up again */
	virtq_reset(&q);
	EXPECT_EQ(q.fault, VIRTQ_FAULT_NONE);
	EXPECT_FALSE(q.ready);
	EXPECT_EQ(virtq_set_size(&q, QSIZE), 0);
	EXPECT_EQ(virtq_set_desc(&q, DESC), 0);
	EXPECT_EQ(virtq_set_avail(&q, AVAIL), 0);
	EXPECT_EQ(virtq_set_used(&q, USED), 0);
	EXPECT_EQ(virtq_enable(&q, &tvm), 0);
	avail_hdr()[1] = 0;
	offer(0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	vm_free();
}

/* ---- TOCTOU: the copy is what counts ---- */

TEST(virtq_uses_the_copy_when_the_guest_rewrites_a_descriptor)
{
	setup();
	desc(0, BUF, 100, VIRTQ_DESC_F_NEXT, 1);
	desc(1, BUF + 0x1000, 200, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	/* once descriptor 0 is copied, the guest points it outside RAM, makes it
	 * huge and writable, and links it to itself */
	toctou_index = 0;
	toctou_new = (struct virtq_desc){ .addr = RAM_END - 8, .len = 0xffffffff,
		.flags = VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, .next = 0 };
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(toctou_index, -1);	/* the rewrite happened */
	EXPECT_EQ(chain.nr_segs, 2);
	expect_seg(0, BUF, 100, false);
	expect_seg(1, BUF + 0x1000, 200, true);
	EXPECT_EQ(chain.read_len, 100);
	EXPECT_EQ(chain.write_len, 200);
	EXPECT_EQ(q.fault, VIRTQ_FAULT_NONE);
	vm_free();
}

/* ---- the configuration, checked at QUEUE_READY ---- */

static int enable_with(uint16_t size, gpa_t d, gpa_t a, gpa_t u)
{
	vm_new();
	virtq_init(&q, QMAX, QMAX);
	virtq_set_size(&q, size);
	virtq_set_desc(&q, d);
	virtq_set_avail(&q, a);
	virtq_set_used(&q, u);
	return virtq_enable(&q, &tvm);
}

static void expect_enable_fault(uint16_t size, gpa_t d, gpa_t a, gpa_t u, enum virtq_fault f)
{
	EXPECT_EQ(enable_with(size, d, a, u), -HYP_EINVAL);
	EXPECT_EQ(q.fault, f);
	EXPECT_FALSE(q.ready);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), -HYP_EINVAL);
	vm_free();
}

TEST(virtq_enable_takes_every_power_of_two_up_to_the_max)
{
	for (uint16_t size = 1; size <= QMAX; size *= 2) {
		EXPECT_EQ(enable_with(size, DESC, AVAIL, USED), 0);
		EXPECT_TRUE(q.ready);
		vm_free();
	}
}

TEST(virtq_enable_refuses_a_size_not_a_power_of_two)
{
	expect_enable_fault(3, DESC, AVAIL, USED, VIRTQ_FAULT_SIZE);
	expect_enable_fault(12, DESC, AVAIL, USED, VIRTQ_FAULT_SIZE);
}

TEST(virtq_enable_refuses_a_size_above_the_max_or_0)
{
	expect_enable_fault(2 * QMAX, DESC, AVAIL, USED, VIRTQ_FAULT_SIZE);
	expect_enable_fault(0, DESC, AVAIL, USED, VIRTQ_FAULT_SIZE);
}

TEST(virtq_a_driver_that_never_sets_the_size_gets_the_max)
{
	vm_new();
	virtq_init(&q, QMAX, QMAX);
	virtq_set_desc(&q, DESC);
	virtq_set_avail(&q, AVAIL);
	virtq_set_used(&q, USED);
	EXPECT_EQ(virtq_enable(&q, &tvm), 0);
	EXPECT_EQ(q.size, QMAX);
	vm_free();
}

TEST(virtq_enable_refuses_misaligned_rings)
{
	expect_enable_fault(QSIZE, DESC + 8, AVAIL, USED, VIRTQ_FAULT_ALIGN);
	expect_enable_fault(QSIZE, DESC, AVAIL + 1, USED, VIRTQ_FAULT_ALIGN);
	expect_enable_fault(QSIZE, DESC, AVAIL, USED + 2, VIRTQ_FAULT_ALIGN);
	/* the least alignment each part needs is enough */
	EXPECT_EQ(enable_with(QSIZE, DESC + 16, AVAIL + 2, USED + 4), 0);
	vm_free();
}

TEST(virtq_enable_refuses_rings_outside_ram)
{
	expect_enable_fault(QSIZE, RAM - 0x1000, AVAIL, USED, VIRTQ_FAULT_RING_RAM);
	expect_enable_fault(QSIZE, DESC, VUART_BASE, USED, VIRTQ_FAULT_RING_RAM);
	/* the used ring's last bytes past the end of RAM */
	expect_enable_fault(QSIZE, DESC, AVAIL, RAM_END - 4 - 8 * QSIZE, VIRTQ_FAULT_RING_RAM);
	/* a descriptor table wrapping around 2^64 */
	expect_enable_fault(QSIZE, 0 - (uint64_t)64, AVAIL, USED, VIRTQ_FAULT_RING_RAM);
	/* the last bytes of RAM are fine: the table ending exactly there, the
	 * used ring (4-aligned, 6 + 8n bytes) 2 bytes before */
	EXPECT_EQ(enable_with(QSIZE, RAM_END - 16 * QSIZE, AVAIL, RAM_END - 8 - 8 * QSIZE), 0);
	vm_free();
}

TEST(virtq_configuration_is_frozen_while_ready)
{
	setup();
	EXPECT_EQ(virtq_set_size(&q, 2), -HYP_EBUSY);
	EXPECT_EQ(virtq_set_desc(&q, RAM_END), -HYP_EBUSY);
	EXPECT_EQ(virtq_set_avail(&q, RAM_END), -HYP_EBUSY);
	EXPECT_EQ(virtq_set_used(&q, RAM_END), -HYP_EBUSY);
	EXPECT_EQ(q.size, QSIZE);
	EXPECT_EQ(q.desc, DESC);
	EXPECT_EQ(q.avail, AVAIL);
	EXPECT_EQ(q.used, USED);
	vm_free();
}

TEST(virtq_not_ready_gives_nothing_and_reads_nothing)
{
	vm_new();
	virtq_init(&q, QMAX, QMAX);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 0);
	EXPECT_EQ(virtq_push(&q, &tvm, 0, 0), -HYP_EINVAL);
	EXPECT_FALSE(virtq_should_interrupt(&q, &tvm));
	vm_free();
}

/* ---- the used ring ---- */

TEST(virtq_push_writes_the_element_then_the_index)
{
	setup();
	desc(2, BUF, 16, VIRTQ_DESC_F_NEXT, 4);
	desc(4, BUF + 16, 512, VIRTQ_DESC_F_WRITE, 0);
	desc(6, BUF + 1024, 8, VIRTQ_DESC_F_WRITE, 0);
	offer(2);
	offer(6);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	/* completed out of order */
	EXPECT_EQ(virtq_push(&q, &tvm, 6, 8), 0);
	EXPECT_EQ(used_idx(), 1);
	EXPECT_EQ(used_elem(0).id, 6);
	EXPECT_EQ(used_elem(0).len, 8);
	EXPECT_EQ(virtq_push(&q, &tvm, 2, 300), 0);
	EXPECT_EQ(used_idx(), 2);
	EXPECT_EQ(used_elem(1).id, 2);
	EXPECT_EQ(used_elem(1).len, 300);
	EXPECT_EQ(q.in_flight, 0);
	vm_free();
}

TEST(virtq_push_refuses_a_head_the_device_does_not_hold)
{
	setup();
	desc(1, BUF, 8, 0, 0);
	offer(1);
	EXPECT_EQ(virtq_push(&q, &tvm, 1, 0), -HYP_EINVAL);	/* not taken yet */
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(virtq_push(&q, &tvm, 2, 0), -HYP_EINVAL);
	EXPECT_EQ(virtq_push(&q, &tvm, QSIZE + 1, 0), -HYP_EINVAL);
	EXPECT_EQ(virtq_push(&q, &tvm, 1, 0), 0);
	EXPECT_EQ(virtq_push(&q, &tvm, 1, 0), -HYP_EINVAL);	/* twice */
	EXPECT_EQ(used_idx(), 1);
	vm_free();
}

TEST(virtq_push_marks_the_used_ring_dirty)
{
	uint64_t page;

	setup();
	desc(0, BUF, 8, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	EXPECT_EQ(vm_dirty_log_start(&tvm), 0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	/* taking a chain only reads */
	for (page = 0; page < RAM_SIZE / PAGE_SIZE / 64; page++)
		EXPECT_EQ(tvm.page_log[page], 0);
	EXPECT_EQ(virtq_push(&q, &tvm, 0, 8), 0);
	page = (USED - RAM) / PAGE_SIZE;
	EXPECT_TRUE(tvm.page_log[page / 64] & (1ULL << (page % 64)));
	/* written by the hypervisor: kept until the final take */
	EXPECT_TRUE(tvm.page_sticky[page / 64] & (1ULL << (page % 64)));
	page = (DESC - RAM) / PAGE_SIZE;
	EXPECT_FALSE(tvm.page_log[page / 64] & (1ULL << (page % 64)));
	page = (AVAIL - RAM) / PAGE_SIZE;
	EXPECT_FALSE(tvm.page_log[page / 64] & (1ULL << (page % 64)));
	vm_free();
}

TEST(virtq_push_marks_both_pages_of_a_used_ring_across_a_page_boundary)
{
	gpa_t used = RAM + 0x5000 - 4;	/* flags and idx on one page, ring[] on the next */
	uint64_t p0 = (used - RAM) / PAGE_SIZE, p1 = p0 + 1;

	EXPECT_EQ(enable_with(QSIZE, DESC, AVAIL, used), 0);
	desc(0, BUF, 8, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	EXPECT_EQ(vm_dirty_log_start(&tvm), 0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(virtq_push(&q, &tvm, 0, 4), 0);
	EXPECT_TRUE(tvm.page_log[p0 / 64] & (1ULL << (p0 % 64)));
	EXPECT_TRUE(tvm.page_log[p1 / 64] & (1ULL << (p1 % 64)));
	EXPECT_EQ(((uint16_t *)guest(used, 4))[1], 1);
	EXPECT_EQ(((struct virtq_used_elem *)guest(used + 4, 8))->id, 0);
	vm_free();
}

/* ---- notification suppression ---- */

TEST(virtq_no_interrupt_flag_is_honoured)
{
	setup();
	desc(0, BUF, 8, 0, 0);
	offer(0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	EXPECT_EQ(virtq_push(&q, &tvm, 0, 0), 0);
	EXPECT_TRUE(virtq_should_interrupt(&q, &tvm));
	avail_hdr()[0] = VIRTQ_AVAIL_F_NO_INTERRUPT;
	EXPECT_FALSE(virtq_should_interrupt(&q, &tvm));
	avail_hdr()[0] = 0;
	EXPECT_TRUE(virtq_should_interrupt(&q, &tvm));
	vm_free();
}

TEST(virtq_fault_names_are_distinct)
{
	for (int a = 0; a < VIRTQ_FAULT_COUNT; a++) {
		EXPECT_TRUE(virtq_fault_name(a) != NULL);
		for (int b = a + 1; b < VIRTQ_FAULT_COUNT; b++)
			EXPECT_FALSE(unit_streq(virtq_fault_name(a), virtq_fault_name(b)));
	}
	EXPECT_STREQ(virtq_fault_name(VIRTQ_FAULT_COUNT), "unknown");
}

TEST(virtq_device_limits_are_kept_within_the_walker_s_storage)
{
	virtq_init(&q, 4 * VIRTQ_SIZE_MAX, 4 * VIRTQ_SIZE_MAX);
	EXPECT_EQ(q.max_size, VIRTQ_SIZE_MAX);
	EXPECT_EQ(q.chain_max, VIRTQ_SIZE_MAX);
	virtq_init(&q, QMAX, 0);
	EXPECT_EQ(q.chain_max, 1);
	/* a queue larger than the storage is refused at QUEUE_READY */
	vm_new();
	virtq_init(&q, 4 * VIRTQ_SIZE_MAX, 4 * VIRTQ_SIZE_MAX);
	virtq_set_size(&q, 2 * VIRTQ_SIZE_MAX);
	virtq_set_desc(&q, DESC);
	virtq_set_avail(&q, AVAIL + 0x1000);
	virtq_set_used(&q, USED + 0x1000);
	EXPECT_EQ(virtq_enable(&q, &tvm), -HYP_EINVAL);
	EXPECT_EQ(q.fault, VIRTQ_FAULT_SIZE);
	vm_free();
}

static bool cow_ready;

/* a live snapshot that has not copied the chunk yet: no write now */
static bool cow(struct vm *vm, uint64_t chunk)
{
	(void)vm;
	(void)chunk;
	return cow_ready;
}

TEST(virtq_push_waits_while_a_live_snapshot_cannot_copy_the_used_ring)
{
	setup();
	desc(0, BUF, 8, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	EXPECT_EQ(virtq_pop(&q, &tvm, &chain), 1);
	tvm.cow = cow;
	cow_ready = false;
	vm_ram_write_protect(&tvm);
	EXPECT_EQ(virtq_push(&q, &tvm, 0, 8), -HYP_EBUSY);
	/* nothing written, still held: the device tries again */
	EXPECT_EQ(q.next_used, 0);
	EXPECT_EQ(q.in_flight, 1);
	EXPECT_EQ(((uint16_t *)((uint8_t *)(uintptr_t)tvm.ram_hpa + (USED - RAM)))[1], 0);
	cow_ready = true;
	EXPECT_EQ(virtq_push(&q, &tvm, 0, 8), 0);
	EXPECT_EQ(used_idx(), 1);
	EXPECT_EQ(q.in_flight, 0);
	/* the chunk the used ring is in counts as written for the snapshot */
	EXPECT_TRUE(tvm.dirty[0] & 1);
	vm_free();
}
