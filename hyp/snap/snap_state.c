/* SPDX-License-Identifier: MIT */
/* Guest state to and from the snapshot structs, and the checks a restore makes
 * before installing anything: CONFIG, and the vCPU records (their tables in
 * include/abi/snapshot_records.h; their hooks, what a table does not copy or
 * check, are their owners': CORE's here, HSM's in hyp/vsbi/vsbi_hsm.c, STA's
 * in hyp/vsbi/vsbi_sta.c, PMU's in hyp/state/pmu.c, IMSIC's in
 * hyp/state/vimsic.c, DBTR's in hyp/state/dbtr_record.c), and the reader of older
 * VCPU records. Pure: host-tested (tests/unit/test_snap.c). */
#include <arch/riscv/encoding.h>
#include <stddef.h>
#include <string.h>
#include <cfi.h>
#include <dbtr.h>
#include <hart.h>
#include <names.h>
#include <pmu.h>
#include <snapshot.h>
#include <vimsic.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include <vsbi.h>

_Static_assert(SNAP_FEAT_ZICFILP == VM_FEAT_ZICFILP && SNAP_FEAT_ZICFISS == VM_FEAT_ZICFISS &&
	       SNAP_FEAT_SSTC == VM_FEAT_SSTC && SNAP_FEAT_SVPBMT == VM_FEAT_SVPBMT &&
	       SNAP_FEAT_SVADU == VM_FEAT_SVADU && SNAP_FEAT_AIA == VM_FEAT_AIA,
	       "snapshot features are VM features");

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
		return "unknown snapshot version (this Carapace reads versions 1 to 8)";
	if (h->header_size != sizeof(*h))
		return "bad header size";
	if (h->flags & ~(SNAP_F_LIVE | SNAP_F_DISKS) ||
	    (h->version < SNAP_VERSION_DISK && (h->flags & SNAP_F_DISKS)))
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
	d->irqchip = c->features & SNAP_FEAT_AIA ? VM_IRQCHIP_AIA : VM_IRQCHIP_PLIC;
	memcpy(d->bootargs, c->bootargs, sizeof(d->bootargs));
	memcpy(d->kernel, c->kernel_image, sizeof(d->kernel));
	memcpy(d->initrd, c->initrd_image, sizeof(d->initrd));
}

/* AIA is the VM's kind, not in vm_features(): any host with Ssaia gives it
 * (in software where it has no guest files). */
uint32_t snap_lost_features(const struct snap_config *c)
{
	uint32_t can = vm_features((enum cfi_policy)c->cfi_policy) |
		       (hart_caps.ssaia ? SNAP_FEAT_AIA : 0);

	return c->features & ~can;
}

/* CORE's hooks, what its table does not copy or check (the other records'
 * hooks are in the files that own their state). */

/* CORE: x0 is 0; the trapped sstatus keeps the guest's bits and FS, with
 * SPELP where the spec keeps it (whatever this CPU does); interrupts other
 * harts posted count as pending (vcpu_put folds them). */
static void core_save(const struct vcpu *v, void *rec)
{
	struct snap_rec_core *r = rec;

	for (unsigned int i = 1; i < 32; i++)
		r->gpr[i] = v->g.ctx.gpr[i];
	r->gpr[0] = 0;
	r->sstatus = v->g.ctx.sstatus & (SNAP_SSTATUS_GUEST | SR_FS);
	cfi_spelp_to_spec(v, &r->sstatus, &r->vsstatus);
	r->hvip = (r->hvip | v->irq_pending) & VS_IRQ_MASK;
}

/* The HS sstatus image: the trap's SPP, SPIE, SPELP are the guest's, the
 * rest (FS on, UXL) the hypervisor's own, as a vCPU reset sets them. */
static void core_load(struct vcpu *v, const void *rec)
{
	const struct snap_rec_core *r = rec;

	for (unsigned int i = 1; i < 32; i++)
		v->g.ctx.gpr[i] = r->gpr[i];
	v->g.ctx.sstatus = (r->sstatus & SNAP_SSTATUS_GUEST) | VCPU_SSTATUS_HOST;
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

static const char *core_check(const void *rec, const struct snap_config *c, uint32_t *offset)
{
	const struct snap_rec_core *r = rec;

	(void)c;
	*offset = offsetof(struct snap_rec_core, gpr);
	if (r->gpr[0])
		return "x0 is not 0";
	*offset = offsetof(struct snap_rec_core, vsatp);
	if (!vsatp_mode_ok(r->vsatp))
		return "the guest's page tables use a paging mode this host's CPU lacks";
	return NULL;
}

static const struct snap_record_ops core_record = {
	.save = core_save,
	.load = core_load,
	.check = core_check,
};

#define SNAP_LIVE(m)	offsetof(struct vcpu_guest, m), sizeof(((struct vcpu_guest *)0)->m)
/* A row as a struct snap_field (the bits and value rules expand to several
 * initializers, so each record's macro builds its row itself). */
#define CORE_FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_rec_core, n, t), bits, value, ro, live, SNAP_WHY(n, what) },
#define FP_FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_rec_fp, n, t), bits, value, ro, live, SNAP_WHY(n, what) },
#define CFI_FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_rec_cfi, n, t), bits, value, ro, live, SNAP_WHY(n, what) },
#define FWFT_FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_rec_fwft, n, t), bits, value, ro, live, SNAP_WHY(n, what) },
#define HSM_FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_rec_hsm, n, t), bits, value, ro, live, SNAP_WHY(n, what) },
#define STA_FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_rec_sta, n, t), bits, value, ro, live, SNAP_WHY(n, what) },
#define PMU_FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_rec_pmu, n, t), bits, value, ro, live, SNAP_WHY(n, what) },
#define IMSIC_FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_rec_imsic, n, t), bits, value, ro, live, SNAP_WHY(n, what) },
#define DBTR_FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_rec_dbtr, n, t), bits, value, ro, live, SNAP_WHY(n, what) },

static const struct snap_field core_fields[] = { SNAP_REC_CORE(CORE_FIELD) };
static const struct snap_field fp_fields[] = { SNAP_REC_FP(FP_FIELD) };
static const struct snap_field cfi_fields[] = { SNAP_REC_CFI(CFI_FIELD) };
static const struct snap_field fwft_fields[] = { SNAP_REC_FWFT(FWFT_FIELD) };
static const struct snap_field hsm_fields[] = { SNAP_REC_HSM(HSM_FIELD) };
static const struct snap_field sta_fields[] = { SNAP_REC_STA(STA_FIELD) };
static const struct snap_field pmu_fields[] = { SNAP_REC_PMU(PMU_FIELD) };
static const struct snap_field imsic_fields[] = { SNAP_REC_IMSIC(IMSIC_FIELD) };
static const struct snap_field dbtr_fields[] = { SNAP_REC_DBTR(DBTR_FIELD) };

/* Each record's hooks are its owner's (NULL: the table does everything). */
#define RECORD(id, NAME, name, ops) \
	{ id, #NAME, offsetof(struct snap_vcpu, name), sizeof(struct snap_rec_##name), \
	  name##_fields, ARRAY_SIZE(name##_fields), ops }
const struct snap_record_desc snap_vcpu_records[] = {
	RECORD(SNAP_REC_ID_CORE, CORE, core, &core_record),
	RECORD(SNAP_REC_ID_FP, FP, fp, NULL),
	RECORD(SNAP_REC_ID_CFI, CFI, cfi, NULL),
	RECORD(SNAP_REC_ID_FWFT, FWFT, fwft, NULL),
	RECORD(SNAP_REC_ID_HSM, HSM, hsm, &vsbi_hsm_record),
	RECORD(SNAP_REC_ID_STA, STA, sta, &vsbi_sta_record),
	RECORD(SNAP_REC_ID_PMU, PMU, pmu, &pmu_record),
	RECORD(SNAP_REC_ID_IMSIC, IMSIC, imsic, &vimsic_record),
	RECORD(SNAP_REC_ID_DBTR, DBTR, dbtr, &dbtr_record),
};
const size_t snap_nr_vcpu_records = ARRAY_SIZE(snap_vcpu_records);

#define REC_COUNT(id, NAME, name)	+1
_Static_assert(ARRAY_SIZE(snap_vcpu_records) == 0 SNAP_VCPU_RECORDS(REC_COUNT),
	       "a descriptor for every record of SNAP_VCPU_RECORDS");

static void *rec_of(struct snap_vcpu *s, const struct snap_record_desc *d)
{
	return (uint8_t *)s + d->offset;
}

static const void *crec_of(const struct snap_vcpu *s, const struct snap_record_desc *d)
{
	return (const uint8_t *)s + d->offset;
}

static void set_headers(struct snap_vcpu *s)
{
	for (size_t i = 0; i < snap_nr_vcpu_records; i++) {
		const struct snap_record_desc *d = &snap_vcpu_records[i];
		struct snap_record h = { d->id, d->size };

		memcpy((uint8_t *)s + d->offset - sizeof(h), &h, sizeof(h));
	}
}

void snap_vcpu_mask(struct snap_vcpu *s, uint32_t features)
{
	for (size_t i = 0; i < snap_nr_vcpu_records; i++) {
		const struct snap_record_desc *d = &snap_vcpu_records[i];

		snap_fields_mask(rec_of(s, d), d->fields, d->nr_fields, features);
	}
}

void snap_vcpu_save(const struct vcpu *v, struct snap_vcpu *s)
{
	memset(s, 0, sizeof(*s));
	set_headers(s);
	for (size_t i = 0; i < snap_nr_vcpu_records; i++) {
		const struct snap_record_desc *d = &snap_vcpu_records[i];

		snap_fields_save(&v->g, rec_of(s, d), d->fields, d->nr_fields);
		if (d->ops && d->ops->save)
			d->ops->save(v, rec_of(s, d));
	}
	/* what the guest's ISA cannot hold (a bit of an extension the hardware
	 * has and the VM was not given, inert here) is not saved: never a record
	 * a restore would refuse */
	snap_vcpu_mask(s, v->vm->cfg.features);
}

uint64_t snap_vcpu_size(uint32_t version)
{
	return version == 1 ? SNAP_VCPU_V1_SIZE :
	       version == 2 ? sizeof(struct snap_vcpu_v2) :
	       version < SNAP_VERSION_AIA ? SNAP_VCPU_V6_SIZE :
	       version < SNAP_VERSION_DBTR ? SNAP_VCPU_V7_SIZE : sizeof(struct snap_vcpu);
}

/* The record field named @name, and its offset in struct snap_vcpu. */
static const struct snap_field *field_named(const char *name, uint32_t *at)
{
	for (size_t i = 0; i < snap_nr_vcpu_records; i++) {
		const struct snap_record_desc *d = &snap_vcpu_records[i];

		for (size_t j = 0; j < d->nr_fields; j++)
			if (!strcmp(d->fields[j].name, name)) {
				*at = d->offset + d->fields[j].offset;
				return &d->fields[j];
			}
	}
	return NULL;
}

/* Versions 1 and 2: each field goes to its namesake; one without MUST be 0
 * (a reserved field). A version 1 record is the first 672 bytes of a
 * version 2 one, and gets what its writer ran the guest with: A/D updating
 * on wherever it had Svadu, no STA, no PMU. */
static const char *from_v2(const uint8_t *payload, uint32_t version, uint32_t features,
			   struct snap_vcpu *s, uint32_t *offset)
{
	struct snap_vcpu_v2 old;

	memset(&old, 0, sizeof(old));
	memcpy(&old, payload, snap_vcpu_size(version));
	if (version == 1) {
		old.pte_ad_value = !!(features & SNAP_FEAT_SVADU);
		old.sta_shmem = SNAP_STA_OFF;
	}
	memset(s, 0, sizeof(*s));
	set_headers(s);
	for (size_t i = 0; i < snap_nr_vcpu_v2_fields; i++) {
		const struct snap_v2_field *o = &snap_vcpu_v2_fields[i];
		uint32_t at;
		const struct snap_field *f = field_named(o->name, &at);

		for (unsigned int e = 0; e < o->count; e++) {
			uint64_t v = snap_get((const uint8_t *)&old + o->offset + e * o->width, o->width);

			if (!f) {
				*offset = o->offset + e * o->width;
				if (v)
					return "reserved field is not 0";
				continue;
			}
			snap_put((uint8_t *)s + at + e * f->width, f->width, v);
		}
	}
	return NULL;
}

const char *snap_vcpu_from_stream(const void *payload, uint32_t version, uint32_t features,
				  struct snap_vcpu *s, uint32_t *offset)
{
	if (version < 3)
		return from_v2(payload, version, features, s, offset);
	/* versions 3 to 6 end after PMU: their IMSIC record is a PLIC VM's, zero;
	 * version 7 ends after IMSIC: its DBTR record is zero (DBTR unused) */
	memset(s, 0, sizeof(*s));
	set_headers(s);
	memcpy(s, payload, snap_vcpu_size(version));
	for (size_t i = 0; i < snap_nr_vcpu_records; i++) {
		const struct snap_record_desc *d = &snap_vcpu_records[i];
		struct snap_record h;

		*offset = d->offset - sizeof(h);
		memcpy(&h, (const uint8_t *)s + *offset, sizeof(h));
		if (h.id != d->id)
			return "records out of order, missing or unknown (CORE, FP, CFI, FWFT, HSM, STA, "
			       "PMU, IMSIC, DBTR by id)";
		*offset += offsetof(struct snap_record, size);
		if (h.size != d->size)
			return "a record's size is not its layout's";
	}
	/* before version 8 misaligned_emulate was a reserved byte: the vCPU is
	 * restored delegated (MISALIGNED_EXC_DELEG 1), as its writer ran it */
	*offset = offsetof(struct snap_vcpu, fwft) + offsetof(struct snap_rec_fwft, misaligned_emulate);
	if (version < SNAP_VERSION_MISALIGNED && s->fwft.misaligned_emulate)
		return "misaligned_emulate is not 0 (a reserved byte before version 8)";
	return NULL;
}

uint32_t snap_vcpu_stream_offset(uint32_t version, uint32_t offset)
{
	if (version >= 3)
		return offset;
	for (size_t i = 0; i < snap_nr_vcpu_records; i++) {
		const struct snap_record_desc *d = &snap_vcpu_records[i];

		for (size_t j = 0; j < d->nr_fields; j++) {
			const struct snap_field *f = &d->fields[j];
			uint32_t at = d->offset + f->offset;
			const struct snap_v2_field *o;

			if (offset < at || offset >= at + f->width * f->count)
				continue;
			o = snap_v2_field(f->name);
			return o ? o->offset + (offset - at) / f->width * o->width : 0;
		}
	}
	return 0;
}

const char *snap_vcpu_problem(const struct snap_vcpu *s, const struct snap_config *c,
			      uint32_t *offset)
{
	for (size_t i = 0; i < snap_nr_vcpu_records; i++) {
		const struct snap_record_desc *d = &snap_vcpu_records[i];
		const char *why = snap_fields_check(crec_of(s, d), d->fields, d->nr_fields,
						    c->features, offset);

		if (!why && d->ops && d->ops->check)
			why = d->ops->check(crec_of(s, d), c, offset);
		if (why) {
			*offset += d->offset;
			return why;
		}
	}
	return NULL;
}

const char *snap_vcpu_check(const struct snap_vcpu *s, const struct snap_config *c)
{
	uint32_t offset;

	return snap_vcpu_problem(s, c, &offset);
}

void snap_vcpu_load(struct vcpu *v, const struct snap_vcpu *s)
{
	struct snap_vcpu legal = *s;

	/* checked by snap_vcpu_check(); masked again all the same, so that no bit
	 * a guest could not have written reaches a CSR */
	snap_vcpu_mask(&legal, v->vm->cfg.features);
	memset(&v->g, 0, sizeof(v->g));
	v->irq_pending = 0;
	v->requests = VCPU_REQ_FENCE_I | VCPU_REQ_HFENCE_VVMA;	/* the PMU's hook adds its load */
	for (size_t i = 0; i < snap_nr_vcpu_records; i++) {
		const struct snap_record_desc *d = &snap_vcpu_records[i];

		snap_fields_load(&v->g, crec_of(&legal, d), d->fields, d->nr_fields);
		if (d->ops && d->ops->load)
			d->ops->load(v, crec_of(&legal, d));
	}
	/* derived state follows the restored FWFT values (never taken raw) */
	v->henvcfg = (v->henvcfg & ~(ENVCFG_LPE | ENVCFG_SSE | ENVCFG_ADUE)) | vcpu_henvcfg_guest(v);
	cfi_spelp_from_spec(v);
}
