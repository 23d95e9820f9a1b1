/* SPDX-License-Identifier: MIT */
/* Work a vCPU posts to other vCPUs of its VM and waits for (SBI RFENCE: the
 * call returns once the fence is done on every target).
 *
 * The wait is bounded. A target's hart normally does the work within
 * microseconds (it takes the IPI as an exit), but it may be busy elsewhere
 * for longer: a long exit of its own, the host services on hart 0, a
 * landing-pad window that holds IPIs off. A caller spinning meanwhile holds
 * its own hart in the hypervisor, where the end of its slice cannot be
 * taken, so every vCPU waiting for that hart waits too. After
 * VCPU_REQUEST_WAIT_US the caller gives up and its guest makes the call
 * again: on the way back it passes the entry path, where the slice end and
 * the work posted to it are taken. The requests stay posted, so a retry
 * finds the targets that have done theirs done. */
#include <atomic.h>
#include <hart.h>
#include <host_ipi.h>
#include <tlb.h>
#include <vm.h>

bool vcpu_request_sync(struct vcpu *self, unsigned long targets, unsigned long req)
{
	struct vm *vm = self->vm;
	int on[VM_MAX_VCPUS];	/* hart each remote target was on when posted, or -1 */
	bool remote = false;
	uint64_t deadline;

	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct vcpu *t = &vm->vcpus[i];
		int h;

		on[i] = -1;
		if (!(targets & (1UL << i)))
			continue;
		atomic_or(&t->requests, req);
		h = t->hart;
		if (t == self || h < 0)
			continue;	/* applied before it next enters the guest */
		on[i] = h;
		host_ipi_send(h);
		remote = true;
	}
	if (!remote)
		return true;
	deadline = time_now() + timebase_hz * VCPU_REQUEST_WAIT_US / 1000000;
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct vcpu *t = &vm->vcpus[i];

		if (on[i] < 0)
			continue;
		/* done, or off that hart (it applies the work before it next
		 * enters). Keep serving requests posted to us meanwhile, or two
		 * vCPUs fencing each other would wait for each other. */
		while ((atomic_load(&t->requests) & req) && t->hart == on[i]) {
			if (time_now() >= deadline)
				return false;
			vcpu_apply_pending(self);
			tlb_service();
		}
	}
	return true;
}
