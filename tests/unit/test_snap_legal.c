/* SPDX-License-Identifier: MIT */
/* Restored state is checked like the guest's own writes (issue 22): crafted
 * snapshot streams, one class of illegal value each (snap_legal_cases.h,
 * shared with the carapace-snap test), go through the real loader
 * (hyp/snap/snap_load.c, snap_admit.c, snap_state.c, snap_record.c) on the fuzz targets'
 * stub host (tests/fuzz/fuzz_restore_host.c): each is refused naming the
 * field's byte, or installed legal. Also what a restore installs and what a
 * save writes, and the features a restored VM's derived state follows. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <arch/riscv/encoding.h>
#include <abi/sbi_dbtr.h>
#include <cfi.h>
#include <crc32c.h>
#include <dbtr.h>
#include <hart.h>
#include <log.h>
#include <snapshot.h>
#include <vdev.h>
#include <vimsic.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include "../fuzz/fuzz_restore_host.h"
#include "snap_legal_cases.h"
#include "test.h"

#define RAM_SIZE	(8UL << 20)

static uint8_t stream[8192];
static struct vm tmpl;		/* the VM the crafted records come from */
/* each device's state in the stream build() writes: all zero (power-on) but
 * for what a test sets */
static uint64_t devs[4][SNAP_DEVICE_MAX / sizeof(uint64_t)];

static struct {
	unsigned int calls;
	char err[256];
	const char *code;
	struct vm *vm;
} seen;

static void done(const struct snap_result *r)
{
	seen.calls++;
	seen.code = r->code;
	seen.vm = r->vm;
	if (r->err)
		snprintf(seen.err, sizeof(seen.err), "%s", r->err);
}

/* A legal 1-vCPU VM given @features, as a restore's CONFIG and VCPU records. */
static void base(uint32_t features, struct snap_config *c, struct snap_vcpu *s)
{
	static bool host;

	if (!host) {
		fuzz_host_init();
		host = true;
	}
	fuzz_host_input(0, NULL, 0, (const uint8_t[6]){ 0 });	/* the host's caps */
	memset(&tmpl, 0, sizeof(tmpl));
	strcpy(tmpl.cfg.name, "crafted");
	tmpl.cfg.ram_gpa = VM_GUEST_RAM_BASE;
	tmpl.cfg.ram_size = RAM_SIZE;
	tmpl.cfg.nr_vcpus = 1;
	tmpl.cfg.cfi_policy = CFI_POLICY_TRAP;
	tmpl.cfg.features = features;
	if (features & SNAP_FEAT_AIA) {
		tmpl.cfg.irqchip = VM_IRQCHIP_AIA;
		tmpl.cfg.imsic_ids = VIMSIC_IDS;
	}
	tmpl.cfg.vs_sv = 39;
	tmpl.cfg.boot_count = 1;
	tmpl.vcpus[0].vm = &tmpl;
	vcpu_reset(&tmpl.vcpus[0], VM_GUEST_RAM_BASE, 0);
	memset(devs, 0, sizeof(devs));
	snap_config_save(&tmpl, 1000, timebase_hz, c);
	snap_vcpu_save(&tmpl.vcpus[0], s);
}

static size_t section(size_t off, uint32_t type, uint32_t instance, const void *p, size_t len)
{
	struct snap_section sec = { type, instance, len, crc32c(p, len), 0 };

	memcpy(stream + off, &sec, sizeof(sec));
	memcpy(stream + off + sizeof(sec), p, len);
	return off + sizeof(sec) + len;
}

/* The whole stream: header, CONFIG, VCPU 0, the devices (reset state), END. */
static size_t build(const struct snap_config *c, const struct snap_vcpu *s)
{
	struct snap_header h = { .version = SNAP_VERSION, .header_size = sizeof(h) };
	uint8_t dev[1024];
	struct snap_end end = { 2 + vdev_count, 0 };
	size_t off = sizeof(h);

	memcpy(h.magic, SNAP_MAGIC, sizeof(h.magic));
	memcpy(stream, &h, sizeof(h));
	off = section(off, SNAP_SEC_CONFIG, 0, c, sizeof(*c));
	off = section(off, SNAP_SEC_VCPU, 0, s, sizeof(*s));
	for (unsigned int i = 0; i < vdev_count; i++) {
		struct snap_device d = { .state_size = vdev_all[i]->state_size };

		HYP_ASSERT(i < ARRAY_SIZE(devs) && d.state_size <= sizeof(devs[i]));
		memset(dev, 0, sizeof(dev));
		strcpy(d.name, vdev_all[i]->name);
		memcpy(dev, &d, sizeof(d));
		memcpy(dev + sizeof(d), devs[i], d.state_size);
		off = section(off, SNAP_SEC_DEVICE, i, dev, sizeof(d) + d.state_size);
	}
	return section(off, SNAP_SEC_END, 0, &end, sizeof(end));
}

/* Restore @len bytes of stream on the stub host; the outcome is in seen. */
static void restore(size_t len)
{
	fuzz_host_input(0, stream, len, (const uint8_t[6]){ 0 });
	memset(&seen, 0, sizeof(seen));
	EXPECT_EQ(snap_load_start(len, NULL, NULL, done), 0);
	for (unsigned int polls = 0; snap_busy() && polls < 10000; polls++)
		snap_load_poll();
	EXPECT_FALSE(snap_busy());
	EXPECT_EQ(seen.calls, 1);
}

/* A legal case's restore made a VM (destroyed again), or fail naming @name. */
static void expect_accepted(const char *name)
{
	if (!seen.vm)
		unit_fail_str(__FILE__, __LINE__, "legal case", "refusal", name, seen.err);
	else
		vm_destroy_finish(seen.vm);
}

/* A crafted case's restore was refused as bad-snapshot, its message holding
 * @want (the field's byte), and left nothing half-restored. */
static void expect_refused(const char *name, const char *want)
{
	if (seen.vm || !seen.code || strcmp(seen.code, "bad-snapshot") || !strstr(seen.err, want))
		unit_fail_str(__FILE__, __LINE__, name, want, name, seen.vm ? "restored" : seen.err);
	EXPECT_FALSE(vms_seen.live);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
}

/* Stream offsets of the payloads: CONFIG's, then VCPU 0's. */
#define CONFIG_AT	(sizeof(struct snap_header) + sizeof(struct snap_section))
#define VCPU_AT		(CONFIG_AT + sizeof(struct snap_config) + sizeof(struct snap_section))

static void set(void *rec, size_t offset, size_t size, uint64_t v)
{
	uint8_t b = (uint8_t)v;
	uint32_t w = (uint32_t)v;

	/* an array's first element (its size: the whole array's) */
	memcpy((uint8_t *)rec + offset, size == 1 ? (void *)&b : size == 4 ? (void *)&w : (void *)&v,
	       size == 1 || size == 4 ? size : sizeof(v));
}

struct legal_case {
	const char *name;
	bool config;
	size_t offset, size;
	uint64_t value;
	uint32_t features;
	bool refused;
};

/* Where a case's field is: CONFIG's payload, or VCPU 0's record. */
#define AT_CONFIG(f)	offsetof(struct snap_config, f), sizeof(((struct snap_config *)0)->f)
#define AT_REC(r, f)	offsetof(struct snap_vcpu, r.f), sizeof(((struct snap_vcpu *)0)->r.f)
#define AT_CORE(f)	AT_REC(core, f)
#define AT_FP(f)	AT_REC(fp, f)
#define AT_CFI(f)	AT_REC(cfi, f)
#define AT_FWFT(f)	AT_REC(fwft, f)
#define AT_HSM(f)	AT_REC(hsm, f)
#define AT_STA(f)	AT_REC(sta, f)
#define AT_PMU(f)	AT_REC(pmu, f)
#define AT_IMSIC(f)	AT_REC(imsic, f)
#define AT_DBTR(f)	AT_REC(dbtr, f)
#define CASE(rec, f, value, features, refused) \
	{ #rec " " #f " = " #value, !strcmp(#rec, "CONFIG"), AT_##rec(f), value, features, refused },
static const struct legal_case cases[] = { SNAP_LEGAL_CASES(CASE) };

TEST(each_class_of_illegal_value_is_refused_at_its_byte)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct legal_case *k = &cases[i];
		struct snap_config c;
		struct snap_vcpu s;
		char want[64];

		base(k->features, &c, &s);
		set(k->config ? (void *)&c : (void *)&s, k->offset, k->size, k->value);
		restore(build(&c, &s));
		if (!k->refused) {
			expect_accepted(k->name);
			continue;
		}
		snprintf(want, sizeof(want), ", byte %lu: ",
			 (unsigned long)((k->config ? CONFIG_AT : VCPU_AT) + k->offset));
		expect_refused(k->name, want);
	}
}

/* The stream offset of DEVICE @index's payload in what build() writes. */
static size_t device_at(unsigned int index)
{
	size_t at = VCPU_AT + sizeof(struct snap_vcpu) + sizeof(struct snap_section);

	for (unsigned int i = 0; i < index; i++)
		at += sizeof(struct snap_device) + vdev_all[i]->state_size +
		      sizeof(struct snap_section);
	return at;
}

struct device_case {
	const char *name, *model, *field;
	unsigned int index;
	uint64_t value;
	bool refused;
};

#define DEVICE_CASE(model, field, index, value, refused) \
	{ #model " " #field "[" #index "] = " #value, #model, #field, index, value, refused },
static const struct device_case device_cases[] = { SNAP_DEVICE_CASES(DEVICE_CASE) };

/* The row of @field in device @dev's table. */
static const struct snap_field *device_field(unsigned int dev, const char *field)
{
	for (size_t i = 0; i < vdev_all[dev]->nr_fields; i++)
		if (!strcmp(vdev_all[dev]->fields[i].name, field))
			return &vdev_all[dev]->fields[i];
	return NULL;
}

TEST(each_illegal_device_field_is_refused_by_name_at_its_byte)
{
	for (size_t i = 0; i < ARRAY_SIZE(device_cases); i++) {
		const struct device_case *k = &device_cases[i];
		const struct snap_field *f = NULL;
		unsigned int dev = 0;
		struct snap_config c;
		struct snap_vcpu s;
		size_t at;
		char want[96];

		while (dev < vdev_count && strcmp(vdev_all[dev]->name, k->model))
			dev++;
		if (dev < vdev_count)
			f = device_field(dev, k->field);
		if (!f || k->index >= f->count) {
			unit_fail_str(__FILE__, __LINE__, k->name, "a field of the model", k->name,
				      "none");
			continue;
		}
		base(strcmp(k->model, "aplic") ? ISA_ALL : AIA_ALL, &c, &s);
		at = f->offset + k->index * f->width;
		snap_put((uint8_t *)devs[dev] + at, f->width, k->value);
		restore(build(&c, &s));
		if (!k->refused) {
			expect_accepted(k->name);
			continue;
		}
		/* the field's stream byte, then its name */
		snprintf(want, sizeof(want), "section DEVICE %u at offset %lu, byte %lu: %s ", dev,
			 (unsigned long)(device_at(dev) - sizeof(struct snap_section)),
			 (unsigned long)(device_at(dev) + sizeof(struct snap_device) + at), k->field);
		expect_refused(k->name, want);
	}
}

/* The models are the header's: each index holds the model SNAP_DEVICES
 * names there, with its struct's size, and every row of its table. */
TEST(device_models_are_the_headers_tables)
{
#define ROWS(field, type, dim, ...)	+1
#define MODEL(i, NAME, model) \
	EXPECT_TRUE(i < vdev_count && !strcmp(vdev_all[i]->name, #model)); \
	EXPECT_EQ(vdev_all[i]->state_size, sizeof(struct snap_dev_##model)); \
	EXPECT_EQ(vdev_all[i]->nr_fields, 0 SNAP_DEV_##NAME(ROWS));
	SNAP_DEVICES(MODEL)
#undef MODEL
#undef ROWS
#define COUNT(index, NAME, name)	+1
	EXPECT_EQ(vdev_count, 0 SNAP_DEVICES(COUNT));
#undef COUNT
}

/* The shared admission refuses an index past the last model by itself (a
 * migration receiver once let DEVICE 3 through to vdev_all[3]). */
TEST(device_admission_refuses_an_index_past_the_models)
{
	uint8_t payload[SNAP_DEVICE_MAX] = { 0 };
	uint32_t offset = 1;
	const char *why = snap_admit_device_at(NULL, vdev_count, payload, &offset);

	EXPECT_TRUE(why && strstr(why, "no device at that index"));
	EXPECT_EQ(offset, 0);
	EXPECT_TRUE(snap_admit_device_at(NULL, UINT32_MAX, payload, &offset) != NULL);
}

/* What a model holds saves to a state its table and hook accept, and a save
 * masks with the table: a bit the model should never hold is not written. */
TEST(device_save_writes_what_a_restore_accepts)
{
	struct snap_config c;
	struct snap_vcpu s;
	uint8_t payload[SNAP_DEVICE_MAX];
	uint32_t offset;

	base(ISA_ALL, &c, &s);
	tmpl.uart.s.rx_head = 300;
	tmpl.uart.s.rx_tail = 100;
	tmpl.uart.s.ier = 0xff;			/* never so in the model: masked */
	tmpl.plic.s.priority[5] = 7;
	tmpl.plic.s.enable[0] = 1U << 5;
	tmpl.genid.s.level = 1;
	for (unsigned int i = 0; i < vdev_count; i++) {
		EXPECT_EQ(snap_device_save(&tmpl, i, payload, sizeof(payload)),
			  sizeof(struct snap_device) + vdev_all[i]->state_size);
		EXPECT_TRUE(snap_device_check(&tmpl, i, payload + sizeof(struct snap_device),
					      &offset) == NULL);
	}
	snap_device_save(&tmpl, SNAP_DEV_INDEX_UART16550, payload, sizeof(payload));
	EXPECT_EQ(payload[sizeof(struct snap_device) +
			  offsetof(struct snap_dev_uart16550, ier)], 0x0f);
}

/* The trapped context's FS: a record's FS (Initial, Clean, Dirty) is
 * accepted, and the restored vCPU gets the hypervisor's own. */
TEST(restore_installs_the_hypervisors_fs_and_the_guests_trap_bits)
{
	struct snap_config c;
	struct snap_vcpu s;

	base(ISA_ALL, &c, &s);
	s.core.sstatus = SR_SPIE | SR_FS_DIRTY | SR_SPELP;
	s.core.vsstatus = SR_UXL_64 | SR_FS_DIRTY | SR_SD | SR_SUM;
	restore(build(&c, &s));
	EXPECT_TRUE(seen.vm != NULL);
	if (!seen.vm)
		return;
	EXPECT_EQ(seen.vm->vcpus[0].g.ctx.sstatus, SR_SPIE | SR_SPELP | VCPU_SSTATUS_HOST);
	/* SD is the CPU's to compute: never written to vsstatus */
	EXPECT_EQ(seen.vm->vcpus[0].g.csr.vsstatus, SR_UXL_64 | SR_FS_DIRTY | SR_SUM);
	vm_destroy_finish(seen.vm);
}

/* The loader masks what it installs with the same table even if a check
 * were missing: nothing a guest could not have written reaches a CSR. */
TEST(load_masks_with_the_table)
{
	struct snap_config c;
	struct snap_vcpu s;
	struct vcpu *v = &tmpl.vcpus[0];

	base(ISA_ALL & ~(SNAP_FEAT_ZICFILP | SNAP_FEAT_ZICFISS), &c, &s);
	s.core.sstatus = SR_SPP;				/* FS Off */
	s.core.vsstatus = SR_UXL_64 | BIT(20) | BIT(21) | BIT(34) | SR_SPELP;
	s.core.senvcfg = ENVCFG_LPE | ENVCFG_SSE | ENVCFG_CBZE;
	s.core.scounteren = ~0UL;
	s.core.vsie = ~0UL;
	s.cfi.ssp = 0x1000;
	s.core.pc = 0x80000001;
	snap_vcpu_load(v, &s);
	EXPECT_EQ(v->g.ctx.sstatus, SR_SPP | VCPU_SSTATUS_HOST);
	EXPECT_EQ(v->g.csr.vsstatus, SR_UXL_64);
	EXPECT_EQ(v->g.csr.senvcfg, 0);
	EXPECT_EQ(v->g.csr.scounteren, COUNTEREN_CY | COUNTEREN_TM | COUNTEREN_IR);
	EXPECT_EQ(v->g.csr.vsie, MIP_SSIP | MIP_STIP | MIP_SEIP);
	EXPECT_EQ(v->g.csr.ssp, 0);
	EXPECT_EQ(v->g.ctx.sepc, 0x80000000);
}

/* A save writes only what a restore accepts: whatever the hardware let the
 * guest leave in a CSR of an extension it was not given is not saved. */
TEST(save_never_writes_what_a_restore_refuses)
{
	static const uint32_t features[] = {
		ISA_ALL, ISA_ALL & ~(SNAP_FEAT_ZICFILP | SNAP_FEAT_ZICFISS),
	};

	for (size_t i = 0; i < ARRAY_SIZE(features); i++) {
		struct snap_config c;
		struct snap_vcpu s;
		struct vcpu *v = &tmpl.vcpus[0];

		base(features[i], &c, &s);
		v->g.csr.vsstatus = ~(SR_UXL | SR_SPELP) | SR_UXL_64;
		v->g.csr.senvcfg = ~0UL;
		v->g.csr.scounteren = ~0UL;
		v->g.csr.vsie = ~0UL;
		v->g.csr.vsepc = 0x80000003;
		v->g.ctx.sepc = 0x80000005;	/* an odd HSM start address, not entered yet */
		v->g.fp.fcsr = ~0UL;
		v->irq_pending = ~0UL;
		snap_vcpu_save(v, &s);
		EXPECT_TRUE(snap_vcpu_check(&s, &c) == NULL);
		EXPECT_EQ(s.core.vsstatus & (BIT(20) | BIT(21) | BIT(34) | SR_SD), 0);
		EXPECT_EQ(s.core.senvcfg & ~(ENVCFG_FIOM | ENVCFG_LPE | ENVCFG_SSE), 0);
	}
}

/* A restored VM's derived state follows the features the guest was given,
 * not the ones a VM created on this host would get: a guest without Zicfilp
 * on a host with it keeps its senvcfg accesses trapped (hstateen0.ENVCFG 0),
 * so it can never turn on user landing pads. */
TEST(restore_derives_hstateen0_and_probes_from_the_guests_features)
{
	struct snap_config c;
	struct snap_vcpu s;
	uint32_t no_cfi = ISA_ALL & ~(SNAP_FEAT_ZICFILP | SNAP_FEAT_ZICFISS);

	base(no_cfi, &c, &s);
	restore(build(&c, &s));
	EXPECT_TRUE(seen.vm != NULL);
	if (!seen.vm)
		return;
	EXPECT_EQ(seen.vm->cfg.features, no_cfi);
	EXPECT_EQ(seen.vm->hstateen0 & HSTATEEN0_ENVCFG, 0);
	EXPECT_EQ(seen.vm->hstateen0, cfi_hstateen0(seen.vm));
	EXPECT_EQ(vms_seen.probed_features, no_cfi);
	vm_destroy_finish(seen.vm);
}

/* An AIA VM (version 7) through the loader: its vCPU's file (pending bits
 * masked by the threshold and by eie) and its APLIC (a source pending and
 * enabled, IE off) are installed as saved; ext_irq follows the file. */
TEST(restore_installs_an_aia_vms_file_and_aplic)
{
	struct snap_config c;
	struct snap_vcpu s;
	struct imsic_file *f = &tmpl.vcpus[0].imsic.file;
	struct snap_dev_aplic *a = (struct snap_dev_aplic *)devs[SNAP_DEV_INDEX_APLIC];

	base(AIA_ALL, &c, &s);
	f->eidelivery = 1;
	f->eithreshold = 8;
	f->eip[0] = (1UL << 9) | (1UL << 20) | (1UL << 3);
	f->eie[0] = (1UL << 9) | (1UL << 20);		/* 3 not enabled, 9 and 20 above 8 */
	f->eip[2] = 1UL << 5;
	tmpl.vcpus[0].g.csr.vsiselect = 0x80;
	snap_vcpu_save(&tmpl.vcpus[0], &s);
	EXPECT_EQ(s.imsic.imsic_nr_ids, VIMSIC_IDS);
	EXPECT_EQ(s.imsic.vsiselect, 0x80);
	a->sourcecfg[10] = 6;
	a->target[10] = 33;
	a->level = 1U << 10;
	a->pending = 1U << 10;
	a->enabled = 1U << 10;
	a->genmsi = 7;
	restore(build(&c, &s));
	EXPECT_TRUE(seen.vm != NULL);
	if (!seen.vm)
		return;
	EXPECT_TRUE(vm_is_aia(seen.vm));
	EXPECT_EQ(seen.vm->cfg.imsic_ids, VIMSIC_IDS);
	/* its AIA CSRs stay the guest's (hstateen0 re-derived for CFI keeps them) */
	EXPECT_EQ(seen.vm->hstateen0 & HSTATEEN0_AIA_VM, HSTATEEN0_AIA_VM);
	EXPECT_EQ(memcmp(&seen.vm->vcpus[0].imsic.file, f, sizeof(*f)), 0);
	EXPECT_EQ(seen.vm->vcpus[0].g.csr.vsiselect, 0x80);
	EXPECT_FALSE(seen.vm->vcpus[0].ext_irq);
	EXPECT_EQ(memcmp(&seen.vm->aplic.s, a, sizeof(*a)), 0);
	vm_destroy_finish(seen.vm);
	/* the same with identity 3 enabled: the file signals */
	base(AIA_ALL, &c, &s);
	f->eidelivery = 1;
	f->eip[0] = f->eie[0] = 1UL << 3;
	snap_vcpu_save(&tmpl.vcpus[0], &s);
	restore(build(&c, &s));
	EXPECT_TRUE(seen.vm && seen.vm->vcpus[0].ext_irq);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
}

/* An AIA snapshot on a host without Ssaia: refused at CONFIG with the
 * message docs/design-aia.md 5 gives, before anything is created. A PLIC
 * snapshot restores there. */
TEST(aia_snapshot_refused_without_ssaia)
{
	struct snap_config c;
	struct snap_vcpu s;

	base(AIA_ALL, &c, &s);
	fuzz_no_ssaia = true;
	restore(build(&c, &s));
	EXPECT_TRUE(seen.vm == NULL);
	EXPECT_TRUE(seen.code && !strcmp(seen.code, "no-feature"));
	EXPECT_TRUE(strstr(seen.err, "the guest uses AIA (an IMSIC per vCPU and an APLIC); this "
			   "host's CPU has no Ssaia") != NULL);
	EXPECT_EQ(vms_seen.allocs, 0);
	base(ISA_ALL, &c, &s);
	restore(build(&c, &s));
	fuzz_no_ssaia = false;
	EXPECT_TRUE(seen.vm != NULL);
	if (seen.vm)
		vm_destroy_finish(seen.vm);
}

/* A vCPU's DBTR record through the real loader: installed as saved (live
 * recomputed); a trigger at an index this host's firmware lacks (the stub
 * host has trig_max 4) is no-feature and leaves no VM; an illegal word is
 * bad-snapshot naming the field. */
TEST(dbtr_record_restores_or_is_refused)
{
	const uint64_t exec = MC6_TYPE | MC6_EXECUTE | MC6_S;
	struct snap_config c;
	struct snap_vcpu s;

	base(ISA_ALL, &c, &s);
	s.dbtr.dbtr_shmem = c.ram_gpa + 0x4000;
	s.dbtr.dbtr_shmem_on = 1;
	s.dbtr.dbtr_state[1] = SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_S;
	s.dbtr.dbtr_tdata1[1] = exec;
	s.dbtr.dbtr_tdata2[1] = c.ram_gpa + 0x1000;
	restore(build(&c, &s));
	EXPECT_TRUE(seen.vm != NULL);
	if (seen.vm) {
		const struct vcpu_dbtr *d = &seen.vm->vcpus[0].dbtr;

		EXPECT_EQ(d->shmem, c.ram_gpa + 0x4000);
		EXPECT_EQ(d->shmem_on, 1);
		EXPECT_EQ(d->trig[1].tdata1, exec);
		EXPECT_EQ(d->trig[1].tdata2, c.ram_gpa + 0x1000);
		EXPECT_EQ(d->trig[1].state, SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_S);
		EXPECT_EQ(d->live, 1);
		vm_destroy_finish(seen.vm);
	}

	s.dbtr.dbtr_state[5] = SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_S;
	s.dbtr.dbtr_tdata1[5] = exec;
	restore(build(&c, &s));
	EXPECT_TRUE(seen.vm == NULL);
	EXPECT_TRUE(seen.code && !strcmp(seen.code, "no-feature"));
	EXPECT_TRUE(seen.err && strstr(seen.err, "dbtr_state") != NULL);
	EXPECT_FALSE(vms_seen.live);

	s.dbtr.dbtr_state[5] = 0;
	s.dbtr.dbtr_tdata1[5] = 0;
	s.dbtr.dbtr_tdata1[1] = exec | MC6_M;
	restore(build(&c, &s));
	expect_refused("dbtr_tdata1 with m", "dbtr_tdata1");
}

/* Version 6 and older have no AIA VM; a version 7 stream carries both
 * interrupt controllers' devices, the one the VM lacks all zero. */
TEST(aia_feature_and_the_absent_controller)
{
	struct snap_config c;
	struct snap_vcpu s;
	size_t len;
	char want[96];

	base(AIA_ALL, &c, &s);
	len = build(&c, &s);
	((struct snap_header *)stream)->version = 6;
	restore(len);
	snprintf(want, sizeof(want), "byte %lu: features: AIA (bit 5) is version 7's",
		 (unsigned long)(CONFIG_AT + offsetof(struct snap_config, features)));
	expect_refused("AIA in a version 6 CONFIG", want);
	/* an AIA VM's plic device: zero */
	base(AIA_ALL, &c, &s);
	((struct snap_dev_plic *)devs[SNAP_DEV_INDEX_PLIC])->threshold[0] = 1;
	restore(build(&c, &s));
	snprintf(want, sizeof(want), "section DEVICE %u at offset %lu, byte %lu: not 0: this VM "
		 "does not have this device", SNAP_DEV_INDEX_PLIC,
		 (unsigned long)(device_at(SNAP_DEV_INDEX_PLIC) - sizeof(struct snap_section)),
		 (unsigned long)(device_at(SNAP_DEV_INDEX_PLIC) + sizeof(struct snap_device) +
				 offsetof(struct snap_dev_plic, threshold)));
	expect_refused("an AIA VM's plic", want);
	/* a PLIC VM's aplic device: zero, even a legal state */
	base(ISA_ALL, &c, &s);
	((struct snap_dev_aplic *)devs[SNAP_DEV_INDEX_APLIC])->domaincfg = 0x100;
	restore(build(&c, &s));
	expect_refused("a PLIC VM's aplic", "section DEVICE 3 ");
	/* and a PLIC VM's state is not touched by its zero aplic */
	base(ISA_ALL, &c, &s);
	((struct snap_dev_plic *)devs[SNAP_DEV_INDEX_PLIC])->threshold[0] = 3;
	restore(build(&c, &s));
	EXPECT_TRUE(seen.vm && seen.vm->plic.s.threshold[0] == 3 && !vm_is_aia(seen.vm));
	if (seen.vm)
		vm_destroy_finish(seen.vm);
}

/* A save of an AIA VM writes a zero plic device and the APLIC's state; of
 * a PLIC VM a zero aplic device. */
TEST(device_save_of_the_absent_controller_is_zero)
{
	struct snap_config c;
	struct snap_vcpu s;
	uint8_t payload[SNAP_DEVICE_MAX], zero[SNAP_DEVICE_MAX] = { 0 };
	uint32_t offset;

	base(AIA_ALL, &c, &s);
	tmpl.cfg.irqchip = VM_IRQCHIP_AIA;
	tmpl.plic.s.threshold[0] = 5;		/* never so in an AIA VM: not saved */
	tmpl.aplic.s.sourcecfg[4] = 4;
	snap_device_save(&tmpl, SNAP_DEV_INDEX_PLIC, payload, sizeof(payload));
	EXPECT_EQ(memcmp(payload + sizeof(struct snap_device), zero, sizeof(struct snap_dev_plic)), 0);
	snap_device_save(&tmpl, SNAP_DEV_INDEX_APLIC, payload, sizeof(payload));
	EXPECT_EQ(((struct snap_dev_aplic *)(payload + sizeof(struct snap_device)))->sourcecfg[4], 4);
	EXPECT_TRUE(snap_device_check(&tmpl, SNAP_DEV_INDEX_APLIC,
				      payload + sizeof(struct snap_device), &offset) == NULL);
	tmpl.cfg.irqchip = VM_IRQCHIP_PLIC;
	snap_device_save(&tmpl, SNAP_DEV_INDEX_APLIC, payload, sizeof(payload));
	EXPECT_EQ(memcmp(payload + sizeof(struct snap_device), zero, sizeof(struct snap_dev_aplic)), 0);
}
