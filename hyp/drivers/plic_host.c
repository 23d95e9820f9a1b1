/* SPDX-License-Identifier: MIT */
/* The host PLIC, hart 0's S-mode context only: sources drivers register at
 * boot are given priority 1 and enabled there; host_irq_handle() claims,
 * dispatches and completes. The claim loop is bounded (HOST_IRQ_MAX_CLAIMS),
 * and a claimed ID that no driver registered (out of range included) is
 * completed and counted, never used as an index. Everything runs on hart 0
 * with interrupts off: no lock. */
#include <arch/riscv/csr.h>
#include <errno.h>
#include <host_irq.h>

struct handler {
	uint32_t irq;
	void (*fn)(void *ctx);
	void *ctx;
};

static struct {
	struct plic_regs regs;
	uint32_t ndev, context;
	bool ready, polling;
	struct handler h[HOST_IRQ_MAX_HANDLERS];
	unsigned int nr;
	struct host_irq_stats stats;
} plic;

#ifndef HOST_TEST
static uint32_t mmio_rd(void *ctx, uint64_t off)
{
	return *(volatile uint32_t *)((uintptr_t)ctx + off);
}

static void mmio_wr(void *ctx, uint64_t off, uint32_t v)
{
	*(volatile uint32_t *)((uintptr_t)ctx + off) = v;
}

int host_irq_init(const struct plic_host_desc *d, uint32_t context)
{
	struct plic_regs regs = { mmio_rd, mmio_wr, (void *)(uintptr_t)d->base };

	/* fdt_host.c checked that reg covers this context's registers */
	if (!d->present || context == PLIC_NO_CONTEXT)
		return -HYP_ENOENT;
	return host_irq_init_regs(&regs, d->ndev, context);
}
#endif

int host_irq_init_regs(const struct plic_regs *regs, uint32_t ndev, uint32_t context)
{
	if (!ndev || ndev >= PLIC_MAX_SOURCES || context >= PLIC_MAX_CONTEXTS)
		return -HYP_EINVAL;
	plic.regs = *regs;
	plic.ndev = ndev;
	plic.context = context;
	plic.nr = 0;
	plic.stats = (struct host_irq_stats){ 0 };
	/* any priority above 0 interrupts; the firmware may have left it high */
	plic.regs.write32(plic.regs.ctx, PLIC_THRESHOLD(context), 0);
	plic.ready = true;
	return 0;
}

static const struct handler *find(uint32_t irq)
{
	for (unsigned int i = 0; i < plic.nr; i++)
		if (plic.h[i].irq == irq)
			return &plic.h[i];
	return NULL;
}

int host_irq_register(uint32_t irq, void (*fn)(void *ctx), void *ctx)
{
	uint64_t en;

	if (!plic.ready)
		return -HYP_ENOENT;
	if (!irq || irq > plic.ndev || !fn || find(irq))
		return -HYP_EINVAL;
	if (plic.nr == HOST_IRQ_MAX_HANDLERS)
		return -HYP_ENOMEM;
	plic.h[plic.nr++] = (struct handler){ irq, fn, ctx };
	plic.regs.write32(plic.regs.ctx, PLIC_PRIORITY(irq), 1);
	en = PLIC_ENABLE(plic.context, irq);
	plic.regs.write32(plic.regs.ctx, en,
			  plic.regs.read32(plic.regs.ctx, en) | 1u << (irq % 32));
	csr_set(CSR_SIE, MIP_SEIP);
	return 0;
}

void host_irq_handle(void)
{
	uint64_t claim = PLIC_CLAIM(plic.context);

	if (!plic.ready)
		return;
	for (unsigned int n = 0; n < HOST_IRQ_MAX_CLAIMS; n++) {
		uint32_t irq = plic.regs.read32(plic.regs.ctx, claim);
		const struct handler *h;

		if (!irq)
			return;
		h = irq <= plic.ndev ? find(irq) : NULL;
		if (h) {
			h->fn(h->ctx);
			plic.stats.handled++;
		} else {
			plic.stats.unknown++;
		}
		plic.regs.write32(plic.regs.ctx, claim, irq);
	}
	plic.stats.cut++;	/* the rest waits: sip.SEIP stays set, the next call takes it */
}

bool host_irq_poll(void)
{
	if (!plic.nr || !(csr_read(CSR_SIP) & MIP_SEIP))
		return false;
	plic.stats.polled++;
	plic.polling = true;
	host_irq_handle();
	plic.polling = false;
	return true;
}

bool host_irq_polling(void)
{
	return plic.polling;
}

struct host_irq_stats host_irq_get_stats(void)
{
	return plic.stats;
}
