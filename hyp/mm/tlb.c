/* SPDX-License-Identifier: MIT */
/* Translation-cache upkeep: the decisions (pure, host-tested) and the fences
 * they lead to, on this hart or, by request and IPI, on others. */
#include <atomic.h>
#include <bitops.h>
#include <hart.h>
#include <tlb.h>
#include <vm.h>

#ifndef HOST_TEST
#include <hfence.h>
#include <host_ipi.h>

static void local_flush(unsigned int what, unsigned int vmid)
{
	if (what & TLB_GVMA)
		hfence_gvma_vmid(vmid);
	if (what & TLB_VVMA)
		hfence_vvma_all();
	if (what & TLB_FENCE_I)
		local_fence_i();
}

static void send_ipi(unsigned int hart)
{
	host_ipi_send(hart);
}

static void full_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* fence rw,rw */
}

static void io_fence(void)
{
	asm volatile("fence iorw, iorw" ::: "memory");
}
#else
/* tests/unit/test_tlb.c records what would have been done */
void local_flush(unsigned int what, unsigned int vmid);
void send_ipi(unsigned int hart);
void full_fence(void);
static void io_fence(void)
{
}
#endif

void tlb_vmid_recycled(uint16_t vmid);
void tlb_vmid_recycled(uint16_t vmid)
{
	for (unsigned int i = 0; i < HART_MAX; i++)
		atomic_or(&harts[i].tlb.stale, 1UL << vmid);
}

void tlb_vm_created(struct vm *vm)
{
	vm->tlb_harts = 0;
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		vm->vcpus[i].last_hart = -1;
}

unsigned int tlb_load_flushes(struct hart *h, struct vcpu *v)
{
	struct tlb_hart *t = &h->tlb;
	const struct vm *vm = v->vm;
	unsigned int what = 0;

	if (vm->vmid == VMID_SHARED) {
		/* several VMs may hold VMID 0: switching between them flushes it */
		if (t->last_vm_serial != vm->serial)
			what |= TLB_GVMA | TLB_VVMA;
	} else if (t->stale & (1UL << vm->vmid)) {
		/* another VM held this VMID: nothing it cached may survive */
		__atomic_fetch_and(&t->stale, ~(1UL << vm->vmid), __ATOMIC_SEQ_CST);
		what |= TLB_GVMA | TLB_VVMA;
	}
	/* VS-stage entries are shared by the VM's vCPUs (same VMID): another
	 * vCPU here since, or @v fenced elsewhere since it last ran here */
	if (t->last_vcpu != v || v->last_hart != (int)h->index)
		what |= TLB_VVMA | TLB_FENCE_I;
	t->last_vcpu = v;
	t->last_vm_serial = vm->serial;
	v->last_hart = (int)h->index;
	atomic_or(&v->vm->tlb_harts, 1UL << h->index);
	return what;
}

void tlb_vcpu_load(struct hart *h, struct vcpu *v)
{
	unsigned int what = tlb_load_flushes(h, v);

	if (what)
		local_flush(what, v->vm->vmid);
}

unsigned long tlb_gstage_targets(const struct vm *vm, unsigned int self)
{
	return atomic_load(&vm->tlb_harts) & ~(1UL << self);
}

void tlb_local_gstage(const struct vm *vm)
{
	local_flush(TLB_GVMA, vm->vmid);
}

void tlb_service(void)
{
	struct tlb_hart *t = &this_hart()->tlb;
	unsigned long req;

	if (!t->gvma_req)
		return;
	req = atomic_xchg(&t->gvma_req, 0);
	for (; req; req &= req - 1)
		local_flush(TLB_GVMA, bit_first(req));
	/* before the asker sees it done: the guest's stores through the old
	 * entries have reached their target (a guest interrupt file it is about
	 * to read and reuse: docs/design-aia.md 3.5) */
	io_fence();
}

void tlb_flush_vm_gstage(struct vm *vm)
{
	unsigned int self = this_hart()->index;
	unsigned long targets, vmid_bit = 1UL << vm->vmid;

	/* Store->load order, as in Dekker's algorithm. We stored the new PTEs
	 * and now load tlb_harts; a hart starting the VM stores its bit in
	 * tlb_harts (an AMO with aq and rl, tlb_load_flushes()) before its
	 * guest can walk the table. RVWMO lets a load be performed before an
	 * earlier store to another address is visible (the store sits in a
	 * store buffer), so without a full fence both could happen: we read
	 * tlb_harts without its bit, and it reads the old, writable PTE and
	 * caches it, and nobody flushes it there (its writes escape dirty
	 * logging). With the fence, either our load sees its bit (it is sent a
	 * flush) or its AMO comes after our PTE stores (it sees the new PTE). */
	full_fence();
	targets = tlb_gstage_targets(vm, self);
	local_flush(TLB_GVMA, vm->vmid);
	for (unsigned long m = targets; m; m &= m - 1) {
		atomic_or(&harts[bit_first(m)].tlb.gvma_req, vmid_bit);
		send_ipi(bit_first(m));
	}
	/* Every target reaches tlb_service() soon: a hart in a guest takes the
	 * IPI as an exit, an idle hart wakes, and a hart waiting like us serves
	 * its own requests meanwhile, so two of us cannot wait on each other. */
	for (unsigned long m = targets; m; m &= m - 1)
		while (atomic_load(&harts[bit_first(m)].tlb.gvma_req) & vmid_bit)
			tlb_service();
}
