/* SPDX-License-Identifier: MIT */
/* hyp/mm/tlb.c and hyp/mm/vmid.c: which hart flushes what, and when. Each
 * case is one the review found unhandled: a vCPU coming back to a hart it ran
 * on before, more VMs than VMIDs, a VMID handed to a new VM, and a G-stage
 * downgrade that must reach harts the VM ran on earlier. The fences are
 * recorded instead of executed. */
#include <string.h>
#include <hart.h>
#include <tlb.h>
#include <vm.h>
#include "test.h"

struct hart harts[HART_MAX];
struct hart *test_this_hart = &harts[0];

/* what each hart flushed: bit per TLB_* kind, and the last G-stage VMID */
static unsigned int flushed[HART_MAX];
static unsigned int gvma_vmid[HART_MAX], gvma_count[HART_MAX];
static unsigned long ipis;

void local_flush(unsigned int what, unsigned int vmid);
void local_flush(unsigned int what, unsigned int vmid)
{
	unsigned int h = this_hart()->index;

	flushed[h] |= what;
	if (what & TLB_GVMA) {
		gvma_vmid[h] = vmid;
		gvma_count[h]++;
	}
}

/* An IPI: the target hart takes it as an exit and serves its requests. */
void send_ipi(unsigned int hart);
void send_ipi(unsigned int hart)
{
	struct hart *self = test_this_hart;

	ipis |= 1UL << hart;
	test_this_hart = &harts[hart];
	tlb_service();
	test_this_hart = self;
}

static struct vm vm_a, vm_b;

/* tlb_flush_vm_gstage()'s fence between the PTE stores and reading
 * tlb_harts: a hart that starts running @racer_vm as the fence completes
 * (its AMO on tlb_harts ordered before our load) must be among the targets. */
static struct vm *racer_vm;
static unsigned int racer_hart, fences;

void full_fence(void);
void full_fence(void)
{
	fences++;
	if (racer_vm)
		tlb_load_flushes(&harts[racer_hart], &racer_vm->vcpus[0]);
}

static void reset(void)
{
	memset(harts, 0, sizeof(harts));
	for (unsigned int i = 0; i < HART_MAX; i++)
		harts[i].index = i;
	memset(flushed, 0, sizeof(flushed));
	memset(gvma_count, 0, sizeof(gvma_count));
	ipis = 0;
	racer_vm = NULL;
	fences = 0;
	test_this_hart = &harts[0];
	vmid_init(14);
}

static void make_vm(struct vm *vm, uint64_t serial, unsigned int vcpus)
{
	memset(vm, 0, sizeof(*vm));
	vm->serial = serial;
	vm->cfg.nr_vcpus = vcpus;
	for (unsigned int i = 0; i < vcpus; i++) {
		vm->vcpus[i].vm = vm;
		vm->vcpus[i].id = i;
	}
	vm->vmid = vmid_alloc();
	tlb_vm_created(vm);
}

static unsigned int load(unsigned int hart, struct vcpu *v)
{
	return tlb_load_flushes(&harts[hart], v);
}

TEST(tlb_first_run_flushes_vs_stage)
{
	reset();
	make_vm(&vm_a, 1, 1);
	EXPECT_EQ(load(0, &vm_a.vcpus[0]), TLB_VVMA | TLB_FENCE_I);
	EXPECT_EQ(load(0, &vm_a.vcpus[0]), 0);	/* stayed: nothing to flush */
}

TEST(tlb_vcpu_back_on_earlier_hart_flushes)
{
	struct vcpu *v;

	reset();
	make_vm(&vm_a, 1, 1);
	v = &vm_a.vcpus[0];
	load(0, v);
	load(1, v);	/* the guest fences here only (sfence.vma on hart 1) */
	/* hart 0 saw no other vCPU since: its last vCPU is still v, yet its
	 * VS-stage entries and fetched code are stale */
	EXPECT_EQ(harts[0].tlb.last_vcpu, v);
	EXPECT_EQ(load(0, v), TLB_VVMA | TLB_FENCE_I);
}

TEST(tlb_other_vcpu_on_hart_flushes)
{
	reset();
	make_vm(&vm_a, 1, 2);
	load(0, &vm_a.vcpus[0]);
	EXPECT_EQ(load(0, &vm_a.vcpus[1]), TLB_VVMA | TLB_FENCE_I);
	EXPECT_EQ(load(0, &vm_a.vcpus[0]), TLB_VVMA | TLB_FENCE_I);
}

TEST(vmid_allocation_stays_within_width)
{
	uint16_t a, b, c;

	reset();
	vmid_init(2);	/* VMIDs 1..3 */
	EXPECT_EQ(vmid_usable(), 3);
	a = vmid_alloc();
	b = vmid_alloc();
	c = vmid_alloc();
	EXPECT_TRUE(a && b && c && a != b && b != c && a != c);
	EXPECT_TRUE(a < 4 && b < 4 && c < 4);
	EXPECT_EQ(vmid_alloc(), VMID_SHARED);	/* more VMs than VMIDs */
	vmid_free(b);
	EXPECT_EQ(vmid_alloc(), b);
	vmid_init(0);
	EXPECT_EQ(vmid_alloc(), VMID_SHARED);
	vmid_init(14);
	EXPECT_EQ(vmid_usable(), VMID_MAX_TRACKED);
	vmid_init(6);
	EXPECT_EQ(vmid_usable(), 63);
	vmid_init(1);
	EXPECT_EQ(vmid_usable(), 1);
}

TEST(tlb_shared_vmid_flushed_between_vms)
{
	reset();
	vmid_init(0);
	make_vm(&vm_a, 1, 1);
	make_vm(&vm_b, 2, 1);
	EXPECT_EQ(vm_a.vmid, VMID_SHARED);
	EXPECT_EQ(vm_b.vmid, VMID_SHARED);
	load(0, &vm_a.vcpus[0]);
	/* B would otherwise translate with A's cached G-stage entries */
	EXPECT_EQ(load(0, &vm_b.vcpus[0]) & TLB_GVMA, TLB_GVMA);
	EXPECT_EQ(load(0, &vm_b.vcpus[0]), 0);
	EXPECT_EQ(load(0, &vm_a.vcpus[0]) & TLB_GVMA, TLB_GVMA);
}

TEST(tlb_recycled_vmid_flushed_once_per_hart)
{
	uint16_t vmid;

	reset();
	vmid_init(1);	/* one VMID: the second VM must get it back */
	make_vm(&vm_a, 1, 1);
	vmid = vm_a.vmid;
	EXPECT_EQ(vmid, 1);
	load(0, &vm_a.vcpus[0]);
	load(1, &vm_a.vcpus[0]);
	vmid_free(vm_a.vmid);	/* A destroyed */
	make_vm(&vm_b, 2, 1);
	EXPECT_EQ(vm_b.vmid, vmid);
	EXPECT_EQ(load(1, &vm_b.vcpus[0]) & TLB_GVMA, TLB_GVMA);
	EXPECT_EQ(load(1, &vm_b.vcpus[0]), 0);
	EXPECT_EQ(load(0, &vm_b.vcpus[0]) & TLB_GVMA, TLB_GVMA);
	EXPECT_EQ(load(2, &vm_b.vcpus[0]) & TLB_GVMA, TLB_GVMA);	/* stale everywhere */
	EXPECT_EQ(load(2, &vm_b.vcpus[0]), 0);
}

TEST(tlb_slot_reuse_forgets_old_vcpu)
{
	reset();
	make_vm(&vm_a, 1, 1);
	load(0, &vm_a.vcpus[0]);
	/* the same struct vcpu, a new VM in the slot */
	make_vm(&vm_a, 2, 1);
	EXPECT_EQ(load(0, &vm_a.vcpus[0]) & TLB_VVMA, TLB_VVMA);
}

TEST(tlb_downgrade_reaches_harts_that_ran_the_vm)
{
	reset();
	make_vm(&vm_a, 1, 1);
	load(0, &vm_a.vcpus[0]);
	load(1, &vm_a.vcpus[0]);	/* now on hart 1; hart 0 may still cache W */
	EXPECT_EQ(tlb_gstage_targets(&vm_a, 1), 1UL << 0);
	EXPECT_EQ(tlb_gstage_targets(&vm_a, 0), 1UL << 1);
	EXPECT_EQ(tlb_gstage_targets(&vm_a, 3), (1UL << 0) | (1UL << 1));
}

TEST(tlb_flush_vm_gstage_waits_for_every_target)
{
	reset();
	make_vm(&vm_a, 1, 2);
	load(0, &vm_a.vcpus[0]);
	load(1, &vm_a.vcpus[1]);
	load(2, &vm_a.vcpus[0]);	/* vCPU 0 moved: harts 0, 1, 2 ran the VM */
	test_this_hart = &harts[3];	/* the operator's hart, which never ran it */
	tlb_flush_vm_gstage(&vm_a);
	EXPECT_EQ(ipis, 0x7);
	for (unsigned int h = 0; h < 4; h++) {
		EXPECT_EQ(gvma_count[h], 1);
		EXPECT_EQ(gvma_vmid[h], vm_a.vmid);
		EXPECT_EQ(harts[h].tlb.gvma_req, 0);
	}
	EXPECT_EQ(gvma_count[4], 0);	/* harts that never ran it are left alone */
}

TEST(tlb_service_handles_several_vmids)
{
	reset();
	harts[2].tlb.gvma_req = (1UL << 3) | (1UL << 5);
	test_this_hart = &harts[2];
	tlb_service();
	EXPECT_EQ(gvma_count[2], 2);
	EXPECT_EQ(harts[2].tlb.gvma_req, 0);
}

/* The review's finding: no fence between the PTE update and reading
 * tlb_harts, so a hart that had just started running the VM could be missed
 * (store->load reordering). Its bit, visible by the time the fence
 * completes, must make it a target. */
TEST(tlb_flush_vm_gstage_reads_harts_after_a_full_fence)
{
	reset();
	make_vm(&vm_a, 1, 1);
	load(0, &vm_a.vcpus[0]);
	racer_vm = &vm_a;
	racer_hart = 5;
	test_this_hart = &harts[0];
	tlb_flush_vm_gstage(&vm_a);
	EXPECT_EQ(fences, 1);
	EXPECT_EQ(ipis, 1UL << 5);
	EXPECT_EQ(gvma_count[5], 1);
	EXPECT_EQ(gvma_vmid[5], vm_a.vmid);
}
