/* SPDX-License-Identifier: MIT */
/* What the host_irq front end (hyp/drivers/host_irq.c) needs of a controller
 * backend (plic_host.c, aplic_host.c): nothing else includes this. */
#ifndef HYP_HOST_IRQ_BACKEND_H
#define HYP_HOST_IRQ_BACKEND_H
#include <host_irq.h>

struct host_irq_backend {
	enum host_irq_chip chip;
	/* route source @irq (@type: HOST_IRQ_*) to hart 0; *@token: what claim()
	 * will return for it. @slot: the handler table slot it gets. */
	int (*enable)(uint32_t irq, uint32_t type, unsigned int slot, uint32_t *token);
	/* the next pending token, taken (0: none) */
	uint32_t (*claim)(void);
	/* after the handler (or none, @irq 0: an unknown @token) ran */
	void (*complete)(uint32_t irq, uint32_t type, uint32_t token);
};

/** host_irq_use() - make @b the backend, its sources 1..@nr_sources; forgets
 *  every handler and counter (a backend's init calls it). */
void host_irq_use(const struct host_irq_backend *b, uint32_t nr_sources);

/** host_irq_mmio() - a controller's registers at @base, by MMIO. */
struct irqchip_regs host_irq_mmio(uint64_t base);
#endif
