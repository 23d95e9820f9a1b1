/* SPDX-License-Identifier: MIT */
/* The host PLIC backend (host_irq_backend.h), hart 0's S-mode context only:
 * a registered source gets priority 1 and is enabled there; a claim reads
 * the context's claim register, a completion writes the ID back. Hart 0,
 * interrupts off: no lock. */
#include <errno.h>
#include <host_irq_backend.h>

static struct {
	struct irqchip_regs regs;
	uint32_t context;
} plic;

static int plic_enable(uint32_t irq, uint32_t type, unsigned int slot, uint32_t *token)
{
	uint64_t en = PLIC_ENABLE(plic.context, irq);

	(void)type;	/* a PLIC gateway knows its lines' triggers */
	(void)slot;
	plic.regs.write32(plic.regs.ctx, PLIC_PRIORITY(irq), 1);
	plic.regs.write32(plic.regs.ctx, en,
			  plic.regs.read32(plic.regs.ctx, en) | 1u << (irq % 32));
	*token = irq;
	return 0;
}

static uint32_t plic_claim(void)
{
	return plic.regs.read32(plic.regs.ctx, PLIC_CLAIM(plic.context));
}

static void plic_complete(uint32_t irq, uint32_t type, uint32_t token)
{
	(void)irq;
	(void)type;
	/* an unknown ID too: the gateway holds the source until completed */
	plic.regs.write32(plic.regs.ctx, PLIC_CLAIM(plic.context), token);
}

static const struct host_irq_backend plic_backend = {
	.chip = HOST_IRQ_PLIC,
	.enable = plic_enable,
	.claim = plic_claim,
	.complete = plic_complete,
};

#ifndef HOST_TEST
int host_irq_init_plic(const struct plic_host_desc *d, uint32_t context)
{
	struct irqchip_regs regs = host_irq_mmio(d->base);

	/* fdt_host.c checked that reg covers this context's registers */
	if (!d->present || context == PLIC_NO_CONTEXT)
		return -HYP_ENOENT;
	return host_irq_init_regs(&regs, d->ndev, context);
}
#endif

int host_irq_init_regs(const struct irqchip_regs *regs, uint32_t ndev, uint32_t context)
{
	if (!ndev || ndev >= PLIC_MAX_SOURCES || context >= PLIC_MAX_CONTEXTS)
		return -HYP_EINVAL;
	plic.regs = *regs;
	plic.context = context;
	/* any priority above 0 interrupts; the firmware may have left it high */
	plic.regs.write32(plic.regs.ctx, PLIC_THRESHOLD(context), 0);
	host_irq_use(&plic_backend, ndev);
	return 0;
}
