/* SPDX-License-Identifier: MIT */
/* Guest state to and from the snapshot structs, and the checks a restore makes
 * before installing anything. Pure: host-tested (tests/unit/test_snap.c). */
#include <arch/riscv/encoding.h>
#include <stddef.h>
#include <string.h>
#include <cfi.h>
#include <hart.h>
#include <pmu.h>
#include <abi/sbi_sta.h>
#include <snapshot.h>
#include <vm.h>
#include <vm_lifecycle.h>

_Static_assert(SNAP_FEAT_ZICFILP == VM_FEAT_ZICFILP && SNAP_FEAT_ZICFISS == VM_FEAT_ZICFISS &&
	       SNAP_FEAT_SSTC == VM_FEAT_SSTC && SNAP_FEAT_SVPBMT == VM_FEAT_SVPBMT &&
	       SNAP_FEAT_SVADU == VM_FEAT_SVADU, "snapshot features are VM features");

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

const char *snap_header_check(const struct snap_header *h)
{
	/* A gzip file sent as it is: compression is the file's, never the stream's. */
	if ((uint8_t)h->magic[0] == 0x1f && (uint8_t)h->magic[1] == 0x8b)
		return "gzip data, not a stream (carapace-ctl restore expands a gzip file)";
	if (memcmp(h->magic, SNAP_MAGIC, sizeof(h->magic)))
		return "not a Carapace snapshot (bad magic)";
	if (h->version < SNAP_VERSION_MIN || h->version > SNAP_VERSION)
		return "unknown snapshot version (this Carapace reads versions 1 and 2)";
	if (h->header_size != sizeof(*h))
		return "bad header size";
	if (h->flags & ~SNAP_F_LIVE)
		return "unknown header flags";
	if (h->reserved)
		return "reserved header field is not 0";
	return NULL;
}

void snap_config_save(const struct vm *vm, uint64_t guest_time, uint64_t rate_hz,
		      struct snap_config *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->name, vm->cfg.name, sizeof(c->name));
	c->ram_gpa = vm->cfg.ram_gpa;
	c->ram_size = vm->cfg.ram_size;
	c->nr_vcpus = vm->cfg.nr_vcpus;
	c->cfi_policy = vm->cfg.cfi_policy;
	c->features = vm->cfg.features;
	c->boot_count = vm->cfg.boot_count;
	c->debug_ext = vm->cfg.debug_ext;
	c->vs_sv = vm->cfg.vs_sv;
	c->guest_time = guest_time;
	c->timebase_hz = rate_hz;
	memcpy(c->kernel_image, vm->cfg.kernel_image, sizeof(c->kernel_image));
	memcpy(c->initrd_image, vm->cfg.initrd_image, sizeof(c->initrd_image));
	memcpy(c->bootargs, vm->cfg.bootargs, sizeof(c->bootargs));
}

static bool name_ok(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (!n || n >= VM_NAME_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

const char *snap_config_problem(const struct snap_config *c, uint32_t *offset)
{
	const char *why = snap_legal_config(c, offset);

	if (why)
		return why;
	*offset = offsetof(struct snap_config, name);
	if (!name_ok(c->name, sizeof(c->name)))
		return "name: 1-15 of a-z 0-9 _ -";
	*offset = offsetof(struct snap_config, ram_gpa);
	if (c->ram_gpa != VM_GUEST_RAM_BASE)
		return "RAM base is not where this platform puts guest RAM";
	*offset = offsetof(struct snap_config, ram_size);
	if (c->ram_size < 4 * SZ_2M || c->ram_size & (SZ_2M - 1) ||
	    c->ram_size > (1ULL << 40))
		return "RAM size: a multiple of 2 MiB, 8 MiB to 1 TiB";
	*offset = offsetof(struct snap_config, nr_vcpus);
	if (c->nr_vcpus > VM_MAX_VCPUS)
		return "vCPU count: 1..8";
	*offset = offsetof(struct snap_config, timebase_hz);
	if (!c->timebase_hz)
		return "timebase is 0";
	*offset = offsetof(struct snap_config, kernel_image);
	if (!terminated(c->kernel_image, sizeof(c->kernel_image)))
		return "a string field is not NUL-terminated";
	*offset = offsetof(struct snap_config, initrd_image);
	if (!terminated(c->initrd_image, sizeof(c->initrd_image)))
		return "a string field is not NUL-terminated";
	*offset = offsetof(struct snap_config, bootargs);
	if (!terminated(c->bootargs, sizeof(c->bootargs)))
		return "a string field is not NUL-terminated";
	return NULL;
}

const char *snap_config_check(const struct snap_config *c)
{
	uint32_t offset;

	return snap_config_problem(c, &offset);
}

void snap_config_desc(const struct snap_config *c, const char *name, struct vm_desc *d)
{
	const char *n = name ? name : c->name;

	memset(d, 0, sizeof(*d));
	memcpy(d->name, n, strnlen(n, VM_NAME_LEN - 1));	/* NUL from the memset */
	d->memory = c->ram_size;
	d->vcpus = c->nr_vcpus;
	d->cfi = (enum cfi_policy)c->cfi_policy;
	d->debug = c->debug_ext;
	memcpy(d->bootargs, c->bootargs, sizeof(d->bootargs));
	memcpy(d->kernel, c->kernel_image, sizeof(d->kernel));
	memcpy(d->initrd, c->initrd_image, sizeof(d->initrd));
}

uint32_t snap_lost_features(const struct snap_config *c)
{
	return c->features & ~vm_features((enum cfi_policy)c->cfi_policy);
}

void snap_vcpu_save(const struct vcpu *v, struct snap_vcpu *s)
{
	const struct vcpu_guest *g = &v->g;

	memset(s, 0, sizeof(*s));
	for (unsigned int i = 1; i < 32; i++)
		s->gpr[i] = g->ctx.gpr[i];
	s->pc = g->ctx.sepc;
	s->sstatus = g->ctx.sstatus & (SNAP_SSTATUS_GUEST | SR_FS);
	s->vsstatus = g->csr.vsstatus;
	s->vsie = g->csr.vsie;
	s->vstvec = g->csr.vstvec;
	s->vsscratch = g->csr.vsscratch;
	s->vsepc = g->csr.vsepc;
	s->vscause = g->csr.vscause;
	s->vstval = g->csr.vstval;
	s->vsatp = g->csr.vsatp;
	s->vstimecmp = g->csr.vstimecmp;
	/* files hold SPELP where the spec keeps it, whatever this CPU does */
	cfi_spelp_to_spec(v, &s->sstatus, &s->vsstatus);
	/* interrupts other harts posted count as pending (vcpu_put folds them) */
	s->hvip = (g->csr.hvip | v->irq_pending) & VS_IRQ_MASK;
	s->scounteren = g->csr.scounteren;
	s->senvcfg = g->csr.senvcfg;
	s->ssp = g->csr.ssp;
	memcpy(s->f, g->fp.f, sizeof(s->f));
	s->fcsr = g->fp.fcsr;
	s->lp_value = g->fwft.lp_value;
	s->lp_locked = g->fwft.lp_locked;
	s->ss_value = g->fwft.ss_value;
	s->ss_locked = g->fwft.ss_locked;
	s->hsm_state = g->hsm.state;
	s->waiting = g->hsm.waiting;
	s->resume_nonret = g->hsm.resume_nonret;
	s->resume_addr = g->hsm.resume_addr;
	s->resume_opaque = g->hsm.resume_opaque;
	s->misaligned_locked = g->fwft_mem.misaligned_locked;
	s->pte_ad_value = g->fwft_mem.pte_ad_value;
	s->pte_ad_locked = g->fwft_mem.pte_ad_locked;
	s->system_suspend = g->hsm.system;
	s->sta_shmem = g->sta.enabled ? g->sta.shmem : SNAP_STA_OFF;
	/* off its hart, a vCPU's PMU struct holds every counter's value */
	s->pmu_configured = g->pmu.configured;
	s->pmu_started = g->pmu.started;
	memcpy(s->pmu_event_idx, g->pmu.event_idx, sizeof(s->pmu_event_idx));
	memcpy(s->pmu_value, g->pmu.value, sizeof(s->pmu_value));
	/* what the guest's ISA cannot hold (a bit of an extension the hardware
	 * has and the VM was not given, inert here) is not saved: never a record
	 * a restore would refuse */
	snap_legal_vcpu_mask(s, v->vm->cfg.features);
}

static void pmu_from_record(const struct snap_vcpu *s, struct vcpu_pmu *p)
{
	memset(p, 0, sizeof(*p));
	p->configured = s->pmu_configured;
	p->started = s->pmu_started;
	memcpy(p->event_idx, s->pmu_event_idx, sizeof(p->event_idx));
	memcpy(p->value, s->pmu_value, sizeof(p->value));
}

uint64_t snap_vcpu_size(uint32_t version)
{
	return version == 1 ? SNAP_VCPU_V1_SIZE : sizeof(struct snap_vcpu);
}

void snap_vcpu_from_stream(const void *payload, uint32_t version, uint32_t features,
			   struct snap_vcpu *s)
{
	memset(s, 0, sizeof(*s));
	memcpy(s, payload, snap_vcpu_size(version));
	if (version == 1) {
		/* what a version 1 writer ran its guests with: A/D updating on
		 * wherever they had Svadu, no STA, no PMU */
		s->pte_ad_value = !!(features & SNAP_FEAT_SVADU);
		s->sta_shmem = SNAP_STA_OFF;
	}
}

/* Bare, or a mode the host CPU has: a write of another is ignored (WARL). */
static bool vsatp_mode_ok(uint64_t vsatp)
{
	switch (vsatp >> ATP_MODE_SHIFT) {
	case 0:
	case ATP_MODE_SV39: return true;
	case ATP_MODE_SV48: return hart_caps.vs_sv >= 48;
	case ATP_MODE_SV57: return hart_caps.vs_sv >= 57;
	default: return false;
	}
}

const char *snap_vcpu_problem(const struct snap_vcpu *s, const struct snap_config *c,
			      uint32_t *offset)
{
	const char *why = snap_legal_vcpu(s, c->features, offset);
	struct vcpu_pmu pmu;

	if (why)
		return why;
	*offset = offsetof(struct snap_vcpu, gpr);
	if (s->gpr[0])
		return "x0 is not 0";
	*offset = offsetof(struct snap_vcpu, system_suspend);
	if (s->system_suspend && (s->hsm_state != VCPU_HSM_SUSPENDED || !s->resume_nonret))
		return "a system suspend is a non-retentive suspend";
	*offset = offsetof(struct snap_vcpu, reserved3);
	if (s->reserved3[0] || s->reserved3[1])
		return "reserved field is not 0";
	*offset = offsetof(struct snap_vcpu, vsatp);
	if (!vsatp_mode_ok(s->vsatp))
		return "the guest's page tables use a paging mode this host's CPU lacks";
	*offset = offsetof(struct snap_vcpu, sta_shmem);
	if (s->sta_shmem != SNAP_STA_OFF &&
	    (s->sta_shmem % SBI_STA_RECORD_SIZE || s->sta_shmem < c->ram_gpa ||
	     s->sta_shmem - c->ram_gpa > c->ram_size - SBI_STA_RECORD_SIZE))
		return "STA shared memory: 64-byte aligned, inside the VM's RAM";
	*offset = offsetof(struct snap_vcpu, pmu_configured);
	pmu_from_record(s, &pmu);
	if (!pmu_state_check(&pmu))
		return "PMU counters: an unknown counter, an event it cannot count, or started "
		       "without an event";
	return NULL;
}

const char *snap_vcpu_check(const struct snap_vcpu *s, const struct snap_config *c)
{
	uint32_t offset;

	return snap_vcpu_problem(s, c, &offset);
}

void snap_vcpu_load(struct vcpu *v, const struct snap_vcpu *s)
{
	struct vcpu_guest *g = &v->g;
	struct snap_vcpu legal = *s;
	struct vcpu_pmu pmu;

	/* checked by snap_vcpu_check(); masked again all the same, so that no bit
	 * a guest could not have written reaches a CSR */
	snap_legal_vcpu_mask(&legal, v->vm->cfg.features);
	s = &legal;
	memset(g, 0, sizeof(*g));
	for (unsigned int i = 1; i < 32; i++)
		g->ctx.gpr[i] = s->gpr[i];
	g->ctx.sepc = s->pc;
	/* the HS sstatus image: the trap's SPP, SPIE, SPELP are the guest's, the
	 * rest (FS on, UXL) the hypervisor's own, as a vCPU reset sets them */
	g->ctx.sstatus = (s->sstatus & SNAP_SSTATUS_GUEST) | VCPU_SSTATUS_HOST;
	g->csr.vsstatus = s->vsstatus;
	g->csr.vsie = s->vsie;
	g->csr.vstvec = s->vstvec;
	g->csr.vsscratch = s->vsscratch;
	g->csr.vsepc = s->vsepc;
	g->csr.vscause = s->vscause;
	g->csr.vstval = s->vstval;
	g->csr.vsatp = s->vsatp;
	g->csr.vstimecmp = s->vstimecmp;
	g->csr.hvip = s->hvip & VS_IRQ_MASK;
	g->csr.scounteren = s->scounteren;
	g->csr.senvcfg = s->senvcfg;
	g->csr.ssp = s->ssp;
	memcpy(g->fp.f, s->f, sizeof(g->fp.f));
	g->fp.fcsr = s->fcsr;
	g->fwft.lp_value = s->lp_value;
	g->fwft.lp_locked = s->lp_locked;
	g->fwft.ss_value = s->ss_value;
	g->fwft.ss_locked = s->ss_locked;
	g->hsm.state = (enum vcpu_hsm_state)s->hsm_state;
	g->hsm.waiting = s->waiting;
	g->hsm.resume_nonret = s->resume_nonret;
	g->hsm.resume_addr = s->resume_addr;
	g->hsm.resume_opaque = s->resume_opaque;
	g->hsm.system = s->system_suspend;
	g->fwft_mem.misaligned_locked = s->misaligned_locked;
	g->fwft_mem.pte_ad_value = s->pte_ad_value;
	g->fwft_mem.pte_ad_locked = s->pte_ad_locked;
	g->sta.enabled = s->sta_shmem != SNAP_STA_OFF;
	g->sta.shmem = g->sta.enabled ? s->sta_shmem : 0;
	v->irq_pending = 0;
	/* derived state follows the restored FWFT values (never taken raw) */
	v->henvcfg = (v->henvcfg & ~(ENVCFG_LPE | ENVCFG_SSE | ENVCFG_ADUE)) | vcpu_henvcfg_guest(v);
	cfi_spelp_from_spec(v);
	v->requests = VCPU_REQ_FENCE_I | VCPU_REQ_HFENCE_VVMA;
	pmu_from_record(s, &pmu);
	pmu_vcpu_restore(v, &pmu);	/* checked by snap_vcpu_check(); posts its load */
}
