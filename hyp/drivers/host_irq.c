/* SPDX-License-Identifier: MIT */
/* The host interrupt front end (host_irq.h) over the backend boot chose (a
 * PLIC or the AIA's APLIC and IMSIC, host_irq_backend.h): the handler table,
 * the bounded claim loop, the counters. A claimed token that no driver
 * registered (out of range included) is completed and counted, never used as
 * an index. Everything runs on hart 0 with interrupts off: no lock. */
#include <arch/riscv/csr.h>
#include <errno.h>
#include <host_irq_backend.h>

struct handler {
	uint32_t irq, type, token;
	void (*fn)(void *ctx);
	void *ctx;
};

static struct {
	const struct host_irq_backend *b;	/* NULL: no controller */
	uint32_t nr_sources;
	bool polling;
	struct handler h[HOST_IRQ_MAX_HANDLERS];
	unsigned int nr;
	struct host_irq_stats stats;
} hi;

#ifndef HOST_TEST
static uint32_t mmio_rd(void *ctx, uint64_t off)
{
	return *(volatile uint32_t *)((uintptr_t)ctx + off);
}

static void mmio_wr(void *ctx, uint64_t off, uint32_t v)
{
	*(volatile uint32_t *)((uintptr_t)ctx + off) = v;
}

struct irqchip_regs host_irq_mmio(uint64_t base)
{
	return (struct irqchip_regs){ mmio_rd, mmio_wr, (void *)(uintptr_t)base };
}
#endif

void host_irq_use(const struct host_irq_backend *b, uint32_t nr_sources)
{
	hi.b = b;
	hi.nr_sources = nr_sources;
	hi.nr = 0;
	hi.stats = (struct host_irq_stats){ 0 };
}

static const struct handler *find_irq(uint32_t irq)
{
	for (unsigned int i = 0; i < hi.nr; i++)
		if (hi.h[i].irq == irq)
			return &hi.h[i];
	return NULL;
}

static const struct handler *find_token(uint32_t token)
{
	for (unsigned int i = 0; i < hi.nr; i++)
		if (hi.h[i].token == token)
			return &hi.h[i];
	return NULL;
}

int host_irq_register_type(uint32_t irq, uint32_t type, void (*fn)(void *ctx), void *ctx)
{
	uint32_t token;
	int rc;

	if (!hi.b)
		return -HYP_ENOENT;
	if (!irq || irq > hi.nr_sources || !fn || find_irq(irq))
		return -HYP_EINVAL;
	if (hi.nr == HOST_IRQ_MAX_HANDLERS)
		return -HYP_ENOMEM;
	rc = hi.b->enable(irq, type, hi.nr, &token);
	if (rc)
		return rc;
	hi.h[hi.nr++] = (struct handler){ irq, type, token, fn, ctx };
	csr_set(CSR_SIE, MIP_SEIP);
	return 0;
}

int host_irq_register(uint32_t irq, void (*fn)(void *ctx), void *ctx)
{
	return host_irq_register_type(irq, HOST_IRQ_LEVEL_HIGH, fn, ctx);
}

/* The claims of one call; how many were taken. */
static unsigned int handle_claims(void)
{
	if (!hi.b)
		return 0;
	for (unsigned int n = 0; n < HOST_IRQ_MAX_CLAIMS; n++) {
		uint32_t token = hi.b->claim();
		const struct handler *h;

		if (!token)
			return n;
		h = find_token(token);
		if (h) {
			h->fn(h->ctx);
			hi.stats.handled++;
		} else {
			hi.stats.unknown++;
		}
		hi.b->complete(h ? h->irq : 0, h ? h->type : 0, token);
	}
	hi.stats.cut++;	/* the rest waits: sip.SEIP stays set, the next call takes it */
	return HOST_IRQ_MAX_CLAIMS;
}

void host_irq_handle(void)
{
	handle_claims();
}

/* Out of line: the common "nothing pending" return of host_irq_poll()
 * (every idle pass of hart 0) then saves no register. */
static __attribute__((noinline)) bool poll_claims(void)
{
	unsigned int n;

	hi.polling = true;
	n = handle_claims();
	hi.polling = false;
	/* none: sip.SEIP was the host IPI (AIA), which is not the devices' */
	if (!n)
		return false;
	hi.stats.polled++;
	return true;
}

bool host_irq_poll(void)
{
	if (!hi.nr || !(csr_read(CSR_SIP) & MIP_SEIP))
		return false;
	return poll_claims();
}

bool host_irq_polling(void)
{
	return hi.polling;
}

enum host_irq_chip host_irq_chip(void)
{
	return hi.b ? hi.b->chip : HOST_IRQ_NONE;
}

const char *host_irq_chip_name(void)
{
	static const char *const names[] = { "none", "plic", "aia" };

	return names[host_irq_chip()];
}

struct host_irq_stats host_irq_get_stats(void)
{
	return hi.stats;
}
