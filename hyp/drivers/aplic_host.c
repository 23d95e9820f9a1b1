/* SPDX-License-Identifier: MIT */
/* The AIA backend of the host interrupts (host_irq_backend.h): the S-level
 * APLIC domain in MSI mode sends each registered wired source to its own
 * identity of hart 0's S-level IMSIC file (handler slot s: identity
 * HOST_IRQ_EIID_BASE + s); a claim is the S file's stopei. In MSI mode a
 * level source becomes pending only on a rising input and its pending bit
 * is cleared when the MSI is sent (AIA spec, APLIC "Precise effects on
 * interrupt-pending bits"), so a line still high after its handler would
 * never interrupt again: completing one writes setipnum_le, which the APLIC
 * takes only while the input is still asserted (as Linux's APLIC MSI driver
 * retriggers). Hart 0, interrupts off: no lock. */
#include <errno.h>
#include <host_irq_backend.h>

static struct {
	struct irqchip_regs regs;
	uint32_t hart_index, num_ids;
	bool domain_on;		/* domaincfg.IE set (at the first source) */
} aplic;

static uint32_t rd(uint64_t off)
{
	return aplic.regs.read32(aplic.regs.ctx, off);
}

static void wr(uint64_t off, uint32_t v)
{
	aplic.regs.write32(aplic.regs.ctx, off, v);
}

/* The source mode for a trigger; 0 for a type no APLIC source has. */
static uint32_t source_mode(uint32_t type)
{
	switch (type) {
	case HOST_IRQ_EDGE_RISING:
		return APLIC_SM_EDGE_RISE;
	case HOST_IRQ_EDGE_FALLING:
		return APLIC_SM_EDGE_FALL;
	case HOST_IRQ_LEVEL_HIGH:
		return APLIC_SM_LEVEL_HIGH;
	case HOST_IRQ_LEVEL_LOW:
		return APLIC_SM_LEVEL_LOW;
	default:
		return 0;
	}
}

static bool is_level(uint32_t type)
{
	return type == HOST_IRQ_LEVEL_HIGH || type == HOST_IRQ_LEVEL_LOW;
}

static int aplic_enable(uint32_t irq, uint32_t type, unsigned int slot, uint32_t *token)
{
	uint32_t sm = source_mode(type), eiid = HOST_IRQ_EIID_BASE + slot;

	if (!sm)
		return -HYP_EINVAL;
	if (eiid > aplic.num_ids)
		return -HYP_ENOMEM;
	wr(APLIC_SOURCECFG(irq), sm);
	/* a source the parent domain did not delegate to this one reads 0 */
	if (rd(APLIC_SOURCECFG(irq)) != sm)
		return -HYP_ENOENT;
	wr(APLIC_TARGET(irq), aplic.hart_index << APLIC_TARGET_HART_SHIFT | eiid);
	imsic_host_enable(eiid);
	wr(APLIC_SETIENUM, irq);
	if (!aplic.domain_on) {
		wr(APLIC_DOMAINCFG, APLIC_DOMAINCFG_IE | APLIC_DOMAINCFG_DM);
		aplic.domain_on = true;
	}
	/* a line already asserted made no rising edge since its source was inactive */
	if (is_level(type))
		wr(APLIC_SETIPNUM_LE, irq);
	*token = eiid;
	return 0;
}

static uint32_t aplic_claim(void)
{
	uint32_t id = imsic_host_claim();

	/* the host IPI is no device's: it stays pending for the IPI path
	 * (host_ipi_claim_ext()), and the devices wait behind it, being of
	 * lower priority */
	if (id == HOST_IPI_EIID) {
		imsic_host_set_pending(id);
		return 0;
	}
	return id;
}

static void aplic_complete(uint32_t irq, uint32_t type, uint32_t token)
{
	(void)token;	/* the claim cleared the identity's pending bit */
	if (irq && is_level(type))
		wr(APLIC_SETIPNUM_LE, irq);
}

static const struct host_irq_backend aplic_backend = {
	.chip = HOST_IRQ_AIA,
	.enable = aplic_enable,
	.claim = aplic_claim,
	.complete = aplic_complete,
};

#ifndef HOST_TEST
int host_irq_init_aia(const struct aplic_host_desc *a, const struct imsic_host_desc *m,
		      uint32_t hart_index)
{
	struct irqchip_regs regs = host_irq_mmio(a->base);

	/* fdt_host.c checked reg (an MSI-mode domain's registers) and num-sources */
	if (!a->present || !m->present || hart_index == IMSIC_NO_HART)
		return -HYP_ENOENT;
	return host_irq_init_aia_regs(&regs, a->num_sources, hart_index, m->num_ids);
}
#endif

int host_irq_init_aia_regs(const struct irqchip_regs *regs, uint32_t num_sources,
			   uint32_t hart_index, uint32_t num_ids)
{
	if (!num_sources || num_sources >= APLIC_MAX_SOURCES ||
	    hart_index > APLIC_TARGET_HART_MAX || num_ids < IMSIC_MIN_IDS ||
	    num_ids > IMSIC_MAX_IDS)
		return -HYP_EINVAL;
	aplic.regs = *regs;
	aplic.hart_index = hart_index;
	aplic.num_ids = num_ids;
	aplic.domain_on = false;
	/* DM is read-only in a domain fixed to one mode: a direct-mode domain
	 * (no IMSIC behind it) keeps it clear, and its targets mean other things */
	wr(APLIC_DOMAINCFG, APLIC_DOMAINCFG_DM);
	if (!(rd(APLIC_DOMAINCFG) & APLIC_DOMAINCFG_DM))
		return -HYP_ENOENT;
	host_irq_use(&aplic_backend, num_sources);
	return 0;
}
