/* SPDX-License-Identifier: MIT */
/* Device interrupt lines: each device model drives its line here, and the
 * VM's interrupt controller (the PLIC model, or the APLIC of an AIA VM)
 * takes it. Fixed at creation, so the choice needs no lock. */
#include <vdev.h>
#include <vm.h>

void virq_set_level(struct vm *vm, unsigned int irq, bool level)
{
	if (vm_is_aia(vm))
		vaplic_set_level(vm, irq, level);
	else
		vplic_set_level(vm, irq, level);
}
