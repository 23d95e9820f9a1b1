/* SPDX-License-Identifier: MIT */
/* PLIC model (RISC-V PLIC spec 1.0): priorities, pending, per-context enable,
 * threshold, claim/complete. Context i is vCPU i's S-mode external interrupt,
 * delivered as hvip.VSEIP. Level-triggered sources. */
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <bitops.h>
#include <guest_mem.h>
#include <mmio.h>
#include <steal_time.h>
#include <vm.h>

#define PRIO_BASE	0x000000
#define PENDING_BASE	0x001000
#define ENABLE_BASE	0x002000
#define ENABLE_STRIDE	0x80
#define CTX_BASE	0x200000
#define CTX_STRIDE	0x1000
#define PRIO_MAX	SNAP_PLIC_PRIO_MAX	/* what its table allows */
#define SRC_MASK	SNAP_PLIC_SOURCE_BITS	/* source 0 does not exist */

/* Linux reads a context's enable word before every complete (plic_irq_eoi()):
 * the page of enable words is mapped read-only (vm_map_device_page()), a copy
 * kept here in step with enable[] under the lock, so those reads need no
 * exit. Stores still trap (vplic_access()). */
static void publish_enables(struct vm *vm)
{
	volatile uint32_t *page = vm->plic.enable_page;

	for (unsigned int c = 0; page && c < VPLIC_MAX_CTX; c++)
		page[c * ENABLE_STRIDE / 4] = vm->plic.s.enable[c];
}

/* Highest-priority pending, enabled source above the threshold; 0 if none. */
static unsigned int best_source(const struct snap_dev_plic *p, unsigned int ctx)
{
	uint32_t cand = p->pending & ~p->claimed & p->enable[ctx] & SRC_MASK;
	unsigned int best = 0, best_prio = p->threshold[ctx];

	/* visit only the candidates; ties go to the lowest id (PLIC spec) */
	for (; cand; cand &= cand - 1) {
		unsigned int s = bit_first(cand);

		if (p->priority[s] > best_prio) {
			best = s;
			best_prio = p->priority[s];
		}
	}
	return best;
}

/* Recompute every context's output and hand changes to the vCPUs. Lock held. */
static void update_outputs(struct vm *vm)
{
	for (unsigned int c = 0; c < vm->cfg.nr_vcpus; c++) {
		struct vcpu *v = &vm->vcpus[c];
		bool level = best_source(&vm->plic.s, c) != 0;

		if (level != v->ext_irq) {
			if (level && v->g.sta.enabled)	/* steal time counts from a wake-up */
				steal_note_wake(v, MIP_VSEIP);
			v->ext_irq = level;
			vcpu_kick(v);
		}
	}
}

void vplic_set_level(struct vm *vm, unsigned int irq, bool level)
{
	struct snap_dev_plic *p = &vm->plic.s;

	if (!irq || irq >= VPLIC_NR_SRC)
		return;
	spin_lock(&vm->plic.lock);
	if (level) {
		p->level |= 1U << irq;
		p->pending |= 1U << irq;
	} else {
		p->level &= ~(1U << irq);
		p->pending &= ~(1U << irq);
	}
	update_outputs(vm);
	spin_unlock(&vm->plic.lock);
}

static uint32_t claim(struct vm *vm, unsigned int ctx)
{
	struct snap_dev_plic *p = &vm->plic.s;
	unsigned int s = best_source(p, ctx);

	if (s) {
		p->pending &= ~(1U << s);
		p->claimed |= 1U << s;
	}
	return s;
}

static void complete(struct vm *vm, unsigned int ctx, uint32_t s)
{
	struct snap_dev_plic *p = &vm->plic.s;

	/* ignore ids that are not enabled for this context (PLIC spec) */
	if (!s || s >= VPLIC_NR_SRC || !(p->enable[ctx] & (1U << s)))
		return;
	p->claimed &= ~(1U << s);
	if (p->level & (1U << s))	/* still asserted: pending again */
		p->pending |= 1U << s;
}

static int vplic_access(struct vm *vm, void *priv, struct mmio_access *a)
{
	struct snap_dev_plic *p = &vm->plic.s;
	uint64_t off = a->gpa - VPLIC_BASE;
	uint32_t val = (uint32_t)a->value, *reg = NULL;

	(void)priv;
	if (a->width != 4)
		return -HYP_EINVAL;	/* the PLIC has 32-bit registers only */
	spin_lock(&vm->plic.lock);
	if (off < PENDING_BASE) {
		unsigned int s = (unsigned int)(off / 4);

		if (s && s < VPLIC_NR_SRC) {
			reg = &p->priority[s];
			val = MIN(val, (uint32_t)PRIO_MAX);
		}
	} else if (off == PENDING_BASE) {
		if (!a->is_write)
			a->value = p->pending;	/* read-only */
	} else if (off >= ENABLE_BASE && off < CTX_BASE) {
		unsigned int ctx = (unsigned int)((off - ENABLE_BASE) / ENABLE_STRIDE);

		if (ctx < vm->cfg.nr_vcpus && (off - ENABLE_BASE) % ENABLE_STRIDE == 0) {
			reg = &p->enable[ctx];
			val &= SRC_MASK;
		}
	} else if (off >= CTX_BASE) {
		unsigned int ctx = (unsigned int)((off - CTX_BASE) / CTX_STRIDE);
		uint64_t r = (off - CTX_BASE) % CTX_STRIDE;

		if (ctx < vm->cfg.nr_vcpus && r == 0) {
			reg = &p->threshold[ctx];
			val = MIN(val, (uint32_t)PRIO_MAX);
		} else if (ctx < vm->cfg.nr_vcpus && r == 4) {
			if (a->is_write)
				complete(vm, ctx, val);
			else
				a->value = claim(vm, ctx);
		}
	}
	/* other registers: writes ignored, reads zero (the caller zeroed a->value) */
	if (reg) {
		if (a->is_write)
			*reg = val;
		else
			a->value = *reg;
		if (a->is_write && reg >= p->enable && reg < p->enable + VPLIC_MAX_CTX)
			publish_enables(vm);
	}
	update_outputs(vm);
	spin_unlock(&vm->plic.lock);
	return 0;
}

static int vplic_register(struct vm *vm)
{
	struct mmio_region r = { VPLIC_BASE, VPLIC_SIZE, vplic_access, NULL };
	int rc;

	if (vm_is_aia(vm))
		return 0;	/* it has the APLIC and IMSICs instead (vm_alloc()) */
	rc = vm_mmio_register(vm, &r);

	if (!rc)	/* without it every enable read exits, as it did before */
		vm->plic.enable_page = vm_map_device_page(vm, VPLIC_BASE + ENABLE_BASE);
	return rc;
}

/* The lock is not part of the state: another hart may hold it. */
static void vplic_reset(struct vm *vm)
{
	spin_lock(&vm->plic.lock);
	memset(&vm->plic.s, 0, sizeof(vm->plic.s));
	publish_enables(vm);
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		vm->vcpus[i].ext_irq = false;
	spin_unlock(&vm->plic.lock);
}

static void vplic_save(struct vm *vm, void *out)
{
	spin_lock(&vm->plic.lock);
	memcpy(out, &vm->plic.s, sizeof(vm->plic.s));
	spin_unlock(&vm->plic.lock);
}

#define FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_dev_plic, n, t), bits, value, ro, live, SNAP_DEV_WHY(n, what) },
static const struct snap_field fields[] = { SNAP_DEV_PLIC(FIELD) };

/* What the table cannot say: source 0 has no priority, and a context of a
 * vCPU the VM does not have enables nothing. */
static const char *vplic_check(const struct vm *vm, const void *state, uint32_t *offset)
{
	const struct snap_dev_plic *s = state;

	*offset = offsetof(struct snap_dev_plic, priority);
	if (s->priority[0])
		return "priority of source 0 is not 0 (source 0 does not exist)";
	for (unsigned int c = vm->cfg.nr_vcpus; c < VPLIC_MAX_CTX; c++) {
		*offset = (uint32_t)(offsetof(struct snap_dev_plic, enable) + c * sizeof(s->enable[0]));
		if (s->enable[c])
			return "enable is not 0 for a context of a vCPU the VM does not have";
		*offset = (uint32_t)(offsetof(struct snap_dev_plic, threshold) +
				     c * sizeof(s->threshold[0]));
		if (s->threshold[c])
			return "threshold is not 0 for a context of a vCPU the VM does not have";
	}
	return NULL;
}

static void vplic_load(struct vm *vm, const void *in)
{
	spin_lock(&vm->plic.lock);
	memcpy(&vm->plic.s, in, sizeof(vm->plic.s));
	publish_enables(vm);
	update_outputs(vm);
	spin_unlock(&vm->plic.lock);
}

/* An AIA VM has the APLIC and IMSICs instead (its plic device is all zero). */
static bool vplic_present(const struct vm *vm)
{
	return !vm_is_aia(vm);
}

const struct vdev_ops plic_ops = {
	VDEV_STATE(plic, fields),
	.reg = vplic_register,
	.reset = vplic_reset,
	.save = vplic_save,
	.check = vplic_check,
	.load = vplic_load,
	.present = vplic_present,
};
