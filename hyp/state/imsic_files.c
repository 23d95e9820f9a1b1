/* SPDX-License-Identifier: MIT */
/* Who holds each hart's guest interrupt files (imsic_files.h,
 * docs/design-aia.md 3.3-3.8). A file's state moves in the spec's order
 * (AIA VSLevel.adoc, "Virtual interrupts for VS level"): the page's stores
 * stopped everywhere before the file is read, the file whole before the vCPU
 * is entered. The software side of each move is vimsic.c's. */
#include <arch/riscv/csr.h>
#include <atomic.h>
#include <bitops.h>
#include <errno.h>
#include <gstage.h>
#include <guest_mem.h>
#include <hart.h>
#include <hart_service.h>
#include <host_ipi.h>
#include <imsic.h>
#include <imsic_file.h>
#include <imsic_files.h>
#include <steal_time.h>
#include <tlb.h>
#include <vimsic.h>
#include <vm.h>

_Static_assert(IMSIC_MAX_FILES < sizeof(((struct hart *)0)->imsic.owner) /
				 sizeof(((struct hart *)0)->imsic.owner[0]),
	       "an owner slot per usable guest file");

uint64_t imsic_evict_age;
bool imsic_files_used;
static uint32_t gfile_ids;	/* identities of a guest file; 0: files not used */

void imsic_files_init(uint32_t guest_ids)
{
	gfile_ids = guest_ids;
	imsic_files_used = guest_ids != 0;
	imsic_evict_age = timebase_hz / 20;	/* 50 ms: ten time slices */
}

int imsic_files_vm_init(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		v->imsic.mode = VIMSIC_SW;
		v->imsic.ghart = -1;
		v->imsic.gfile = 0;
		v->imsic.armed = false;
		v->imsic.pte = NULL;
		/* a VM whose identity count no guest file has runs in software */
		if (!gfile_ids || vm->cfg.imsic_ids != gfile_ids)
			continue;
		v->imsic.pte = vm_device_leaf_slot(vm, VIMSIC_BASE + i * VIMSIC_PAGE);
		if (!v->imsic.pte)
			return -HYP_ENOMEM;
	}
	return 0;
}

/* Give file @f of this hart back (its owner is not loaded here): the state
 * goes to the owner's software file. */
static void release(struct hart *h, unsigned int f)
{
	struct vcpu *v = h->imsic.owner[f];
	struct imsic_file hw;

	vimsic_set_moving(v);	/* injections go to the software file now */
	gstage_leaf_clear(v->imsic.pte);
	tlb_flush_vm_gstage(v->vm);	/* and no hart's guest can store to the file */
	if (v->imsic.armed) {
		csr_clear(CSR_HGEIE, 1UL << f);
		v->imsic.armed = false;
	}
	imsic_gfile_read_clear(f, gfile_ids, &hw);	/* left zero for its next owner */
	h->imsic.owner[f] = NULL;
	v->imsic.moves++;
	vimsic_take_back(v, &hw);
}

/* A file of this hart for a vCPU being entered: a free one, else the one
 * parked longest, if longer than imsic_evict_age by a vCPU off every hart
 * (so vCPUs that take turns on a hart do not take each other's files at
 * every switch), else none. */
static unsigned int pick_file(struct hart *h)
{
	unsigned int nr = imsic_gfiles_nr(h->index), oldest = 0;
	uint64_t now = time_now();

	for (unsigned int f = 1; f <= nr; f++) {
		struct vcpu *o = h->imsic.owner[f];

		if (!o)
			return f;
		if (o->hart < 0 && now - o->imsic.last_load > imsic_evict_age &&
		    (!oldest || o->imsic.last_load < h->imsic.owner[oldest]->imsic.last_load))
			oldest = f;
	}
	if (oldest) {
		h->imsic.owner[oldest]->imsic.evictions++;
		release(h, oldest);
	}
	return oldest;
}

/* If @v holds a guest file, ask the hart holding it to give it back (one
 * IPI per request) and return true. */
static bool ask_release(struct vcpu *v)
{
	unsigned long bit;
	int hart;

	spin_lock(&v->imsic.lock);	/* a release may be ending on that hart */
	hart = v->imsic.mode == VIMSIC_SW ? -1 : v->imsic.ghart;
	bit = 1UL << v->imsic.gfile;
	spin_unlock(&v->imsic.lock);
	if (hart < 0)
		return false;
	if (!(atomic_or(&harts[hart].imsic.release_req, bit) & bit))
		host_ipi_send((unsigned int)hart);
	return true;
}

/* Ask for @v's file (@v is being entered on this hart, so it cannot be
 * loaded there) and wait, serving what other harts ask of this one
 * meanwhile: two harts taking each other's files both progress, as in
 * tlb_flush_vm_gstage(). */
static void wait_released(struct vcpu *v)
{
	struct hart *self = this_hart();

	if (!ask_release(v))
		return;
	while (atomic_load(&v->imsic.mode) != VIMSIC_SW) {
		if (self->current)	/* requests to it (vcpu_sync_state) */
			vcpu_apply_pending(self->current);
		tlb_service();
		imsic_files_service();
	}
}

void imsic_files_enter(struct vcpu *v)
{
	struct hart *h = this_hart();
	unsigned int f;

	if (v->imsic.mode == VIMSIC_HW && v->imsic.ghart == (int)h->index) {
		v->ext_irq = false;	/* an SGEI's wake-up mark: the file signals now */
		v->imsic.last_load = time_now();
		return;
	}
	if (v->imsic.mode != VIMSIC_SW)
		wait_released(v);
	/* a restored VM keeps the identity count it was saved with: a guest
	 * file with another would show it identities its DT lacks, or hide some */
	if (!v->imsic.pte || v->vm->cfg.imsic_ids != gfile_ids || !imsic_gfiles_nr(h->index))
		return;
	f = pick_file(h);
	if (!f)
		return;		/* software this time; tried again at its next load */
	imsic_gfile_zero(f, gfile_ids);	/* nothing of a previous owner survives */
	vimsic_hand_over(v, h->index, f);
	h->imsic.owner[f] = v;
	v->imsic.last_load = time_now();
	/* the file is whole: now the page; the load that follows sets VGEIN
	 * and hvictl 0 (vstopi then comes from the file) */
	gstage_leaf_set(v->imsic.pte, gfile_pa(h->index, f), GSTAGE_PROT_DEVICE);
	tlb_local_gstage(v->vm);	/* an invalid entry this hart may hold */
}

void imsic_files_service(void)
{
	struct hart *h = this_hart();
	unsigned long req;

	if (!h->imsic.release_req)
		return;
	req = atomic_xchg(&h->imsic.release_req, 0);
	for (; req; req &= req - 1) {
		unsigned int f = bit_first(req);

		/* a request that came late finds the file free, or another
		 * owner: giving that one back too costs a move, nothing more;
		 * the vCPU loaded here keeps its file */
		if (f <= IMSIC_MAX_FILES && h->imsic.owner[f] && h->imsic.owner[f] != h->current)
			release(h, f);
	}
}

unsigned int imsic_files_sgei(void)
{
	struct hart *h = this_hart();
	unsigned long pend;
	unsigned int n = 0;

	if (!gfile_ids)
		return 0;
	pend = csr_read(CSR_HGEIP) & csr_read(CSR_HGEIE);
	if (!pend)
		return 0;
	csr_clear(CSR_HGEIE, pend);	/* a parked file signals once per arming */
	for (; pend; pend &= pend - 1) {
		unsigned int f = bit_first(pend);
		struct vcpu *v = f <= IMSIC_MAX_FILES ? h->imsic.owner[f] : NULL;

		if (!v)
			continue;
		v->imsic.armed = false;
		if (v->g.sta.enabled)	/* steal time counts from a wake-up */
			steal_note_wake(v, MIP_VSEIP);
		/* ext_irq marks it woken, as a software file's signal would
		 * (the wake checks read nothing new); its entry clears it
		 * (imsic_files_enter()), or its release recomputes it */
		atomic_store(&v->ext_irq, true);
		v->imsic.sgei++;
		n++;
	}
	return n;
}

bool imsic_files_vm_released(struct vm *vm)
{
	bool none = true;

	if (!vm_is_aia(vm))
		return true;
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		if (ask_release(&vm->vcpus[i]))
			none = false;
	return none;
}

void imsic_files_vm_release(struct vm *vm)
{
	while (!imsic_files_vm_released(vm)) {
		tlb_service();		/* a release flushes: serve ours */
		imsic_files_service();	/* this hart's own files of @vm */
	}
}

/* The guest file's signal reaches hip.VSEIP through VGEIN, which should end
 * the hart's wfi (the spec's "an enabled interrupt pending"), but QEMU
 * 10.0.2 wakes a hart in HS-mode only for mip bits, not for hgeip[VGEIN]
 * (riscv_cpu_interrupt() counts vsgein only with V=1: docs/design-aia.md,
 * "Stage 4 as built"). Its SGEI is in mip: armed for the wait, it ends the
 * wfi on both. */
unsigned long imsic_files_wait_arm(void)
{
	/* VGEIN names the loaded vCPU's file, and is 0 for every other vCPU:
	 * one CSR read on their waits (`make bench` ipi_latency) */
	unsigned long vgein = (csr_read(CSR_HSTATUS) & HSTATUS_VGEIN) >> HSTATUS_VGEIN_SHIFT;

	if (!vgein)
		return 0;
	csr_set(CSR_HGEIE, 1UL << vgein);
	return 1UL << vgein;
}
