/* SPDX-License-Identifier: MIT */
/* VMID allocation within the width the hardware implements (probed at boot).
 * Each VM gets its own VMID while there are enough; the others share
 * VMID_SHARED, which is flushed whenever a hart switches between two of them. */
#include <atomic.h>
#include <tlb.h>

static struct spinlock lock = SPINLOCK_INIT;
static unsigned long in_use;	/* bit per VMID */
static unsigned int usable;

void vmid_init(unsigned int bits)
{
	unsigned long n = bits >= 7 ? VMID_MAX_TRACKED : (1UL << bits) - 1;

	usable = (unsigned int)(n < VMID_MAX_TRACKED ? n : VMID_MAX_TRACKED);
	in_use = 0;
}

unsigned int vmid_usable(void)
{
	return usable;
}

uint16_t vmid_alloc(void)
{
	uint16_t vmid = VMID_SHARED;

	spin_lock(&lock);
	for (unsigned int i = 1; i <= usable; i++) {
		if (!(in_use & (1UL << i))) {
			in_use |= 1UL << i;
			vmid = (uint16_t)i;
			break;
		}
	}
	spin_unlock(&lock);
	return vmid;
}

/* Declared in tlb.c: every hart must flush @vmid before its next owner runs. */
void tlb_vmid_recycled(uint16_t vmid);

void vmid_free(uint16_t vmid)
{
	if (vmid == VMID_SHARED || vmid > usable)
		return;
	/* stale everywhere first: the next owner can only be loaded after this */
	tlb_vmid_recycled(vmid);
	spin_lock(&lock);
	in_use &= ~(1UL << vmid);
	spin_unlock(&lock);
}
