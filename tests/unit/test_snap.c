/* SPDX-License-Identifier: MIT */
/* hyp/snap/snap_state.c: guest state to and from the snapshot structs, and
 * the checks a restore makes before it installs anything. Also the CRC. */
#include <string.h>
#include <arch/riscv/encoding.h>
#include <abi/sbi_dbtr.h>
#include <abi/sbi_defs.h>
#include <dbtr.h>
#include <crc32c.h>
#include <fwft.h>
#include <hart.h>
#include <pmu.h>
#include <snapshot.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include "test.h"

/* every ISA feature: a PLIC VM (the AIA bit makes an AIA VM) */
#define ISA_ALL	(SNAP_FEAT_ALL & ~SNAP_FEAT_AIA)

struct hart_caps hart_caps;
uint64_t timebase_hz = 10000000;

static struct vm vm;

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	hart_caps = (struct hart_caps){ .sstc = true, .zicfilp = true, .zicfiss = true,
					.henvcfg_ok = ENVCFG_STCE | ENVCFG_PBMTE | ENVCFG_ADUE };
	strcpy(vm.cfg.name, "alpha");
	vm.cfg.ram_gpa = VM_GUEST_RAM_BASE;
	vm.cfg.ram_size = 256UL << 20;
	vm.cfg.nr_vcpus = 2;
	vm.cfg.cfi_policy = CFI_POLICY_TRAP;
	vm.cfg.features = vm_features(CFI_POLICY_TRAP);
	vm.cfg.boot_count = 1;
	vm.cfg.vs_sv = 48;
	strcpy(vm.cfg.kernel_image, "alpha.kernel");
	strcpy(vm.cfg.bootargs, "console=ttyS0");
	for (unsigned int i = 0; i < 2; i++) {
		vm.vcpus[i].vm = &vm;
		vm.vcpus[i].id = i;
		/* what vcpu_reset() gives every vCPU */
		vm.vcpus[i].g.ctx.sstatus = SR_SPP | VCPU_SSTATUS_HOST;
		vm.vcpus[i].g.csr.vsstatus = SR_UXL_64;
	}
}

/* hyp/vsbi/vsbi_hsm.c and vsbi_sta.c own the HSM and STA records' hooks;
 * their SBI calls, which use these, are not made here */
void sched_lock(void)
{
	unit_fail_str(__FILE__, __LINE__, "sched_lock", "not called", "HSM call", "called");
}

void sched_unlock(void)
{
}

void sched_kick_idle(void)
{
}

void vcpu_reset(struct vcpu *v, unsigned long entry, unsigned long arg)
{
	(void)v;
	(void)entry;
	(void)arg;
	unit_fail_str(__FILE__, __LINE__, "vcpu_reset", "not called", "HSM call", "called");
}

bool vm_gpa_range_is_ram(const struct vm *v, gpa_t gpa, uint64_t len)
{
	(void)v;
	(void)gpa;
	(void)len;
	return false;
}

void *vm_gpa_to_hva(struct vm *v, gpa_t gpa, uint64_t len, bool write)
{
	(void)v;
	(void)gpa;
	(void)len;
	(void)write;
	return NULL;
}

/* vimsic.c owns the IMSIC record's hooks; its injections, which use these,
 * are not made here */
void vcpu_kick(struct vcpu *v)
{
	(void)v;
	unit_fail_str(__FILE__, __LINE__, "vcpu_kick", "not called", "an injection", "called");
}

void steal_note_wake(struct vcpu *v, unsigned long bits)
{
	(void)v;
	(void)bits;
}

/* pmu.c asks which vCPU this hart runs: none here (snapshots are taken off CPU) */
static struct hart the_hart;
struct hart *test_this_hart = &the_hart;

/* snap_vcpu_check() against a VM like setup()'s, given @features */
static const char *vcpu_check(const struct snap_vcpu *s, uint32_t features)
{
	struct snap_config c;

	snap_config_save(&vm, 0, 1, &c);
	c.features = features;
	return snap_vcpu_check(s, &c);
}

TEST(crc32c_check_value)
{
	EXPECT_EQ(crc32c("123456789", 9), 0xe3069283);
	EXPECT_EQ(crc32c("", 0), 0);
	/* in pieces, at every alignment, the same as at once */
	static char buf[100];
	for (unsigned int i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7 + 3);
	uint32_t whole = crc32c(buf, sizeof(buf));
	for (unsigned int cut = 0; cut <= sizeof(buf); cut++) {
		uint32_t c = crc32c_update(CRC32C_INIT, buf, cut);

		EXPECT_EQ(crc32c_final(crc32c_update(c, buf + cut, sizeof(buf) - cut)), whole);
	}
}

TEST(snap_header_checks)
{
	struct snap_header h = { .version = SNAP_VERSION, .header_size = sizeof(h) };

	memcpy(h.magic, SNAP_MAGIC, 8);
	EXPECT_TRUE(snap_header_check(&h) == NULL);
	h.version = 1;				/* still read */
	EXPECT_TRUE(snap_header_check(&h) == NULL);
	h.version = 0;
	EXPECT_TRUE(snap_header_check(&h) != NULL);
	h.version = SNAP_VERSION + 1;
	EXPECT_TRUE(snap_header_check(&h) != NULL);
	h.version = SNAP_VERSION;
	h.flags = 4;				/* unknown */
	EXPECT_TRUE(snap_header_check(&h) != NULL);
	h.flags = SNAP_F_DISKS;			/* version 5's */
	EXPECT_TRUE(snap_header_check(&h) == NULL);
	h.version = SNAP_VERSION_DISK - 1;
	EXPECT_TRUE(snap_header_check(&h) != NULL);
	h.version = SNAP_VERSION;
	h.flags = SNAP_F_LIVE;
	EXPECT_TRUE(snap_header_check(&h) == NULL);
	h.magic[0] = 'X';
	EXPECT_TRUE(snap_header_check(&h) != NULL);
	EXPECT_TRUE(strstr(snap_header_check(&h), "bad magic") != NULL);
	h.magic[0] = 0x1f;
	h.magic[1] = (char)0x8b;
	EXPECT_TRUE(strstr(snap_header_check(&h), "gzip") != NULL);
}

TEST(snap_config_round_trip_and_checks)
{
	struct snap_config c, bad;
	struct vm_desc d;

	setup();
	snap_config_save(&vm, 12345, timebase_hz, &c);
	EXPECT_TRUE(snap_config_check(&c) == NULL);
	EXPECT_EQ(c.guest_time, 12345);
	EXPECT_EQ(c.features, vm.cfg.features);
	EXPECT_EQ(c.vs_sv, vm.cfg.vs_sv);
	snap_config_desc(&c, NULL, &d);
	EXPECT_STREQ(d.name, "alpha");
	EXPECT_EQ(d.memory, 256UL << 20);
	EXPECT_EQ(d.vcpus, 2);
	EXPECT_STREQ(d.kernel, "alpha.kernel");
	snap_config_desc(&c, "copy", &d);
	EXPECT_STREQ(d.name, "copy");

	bad = c; bad.nr_vcpus = 0;		EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; bad.nr_vcpus = 9;		EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; bad.ram_size = 3UL << 20;	EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; bad.ram_size += 4096;		EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; bad.ram_gpa = 0;		EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; bad.cfi_policy = 4;		EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; bad.features |= 1U << 9;	EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; bad.debug_ext = 2;		EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; bad.vs_sv = 40;		EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; bad.vs_sv = 0;			EXPECT_TRUE(snap_config_check(&bad) == NULL);
	bad = c; bad.timebase_hz = 0;		EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; strcpy(bad.name, "Bad Name");	EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; memset(bad.name, 'a', 16);	EXPECT_TRUE(snap_config_check(&bad) != NULL);
	bad = c; memset(bad.bootargs, 'x', sizeof(bad.bootargs));
	EXPECT_TRUE(snap_config_check(&bad) != NULL);
}

TEST(snap_lost_features_names_cfi)
{
	struct snap_config c;

	setup();
	snap_config_save(&vm, 0, timebase_hz, &c);
	EXPECT_EQ(snap_lost_features(&c), 0);
	hart_caps.zicfiss = false;	/* a host without shadow stacks */
	EXPECT_EQ(snap_lost_features(&c), SNAP_FEAT_ZICFISS);
	hart_caps.zicfilp = false;
	EXPECT_EQ(snap_lost_features(&c), SNAP_FEAT_ZICFISS | SNAP_FEAT_ZICFILP);
	c.cfi_policy = CFI_POLICY_OFF;	/* a cfi=off guest was given neither */
	c.features &= ~(SNAP_FEAT_ZICFISS | SNAP_FEAT_ZICFILP);
	EXPECT_EQ(snap_lost_features(&c), 0);
}

TEST(snap_vcpu_round_trip)
{
	struct snap_vcpu s, t;
	struct vcpu *v;

	setup();
	v = &vm.vcpus[1];
	for (unsigned int i = 1; i < 32; i++)
		v->g.ctx.gpr[i] = 0x1000 + i;
	v->g.ctx.sepc = 0xffffffff80001234UL;	/* any pc: the guest's business */
	v->g.ctx.sstatus = SR_SPP | SR_SPELP | SR_FS_DIRTY | SR_UXL_64;
	v->g.csr.ssp = 0x80400ff8;
	v->g.csr.senvcfg = ENVCFG_LPE | ENVCFG_SSE;
	v->g.csr.vstimecmp = 777;
	v->g.csr.hvip = MIP_VSSIP;
	v->irq_pending = MIP_VSTIP;		/* posted by another hart */
	v->g.fwft = (struct cfi_fwft){ 1, 1, 1, 1 };
	v->g.fwft_mem = (struct vcpu_fwft_mem){ .misaligned_locked = 1, .pte_ad_value = 1,
						.pte_ad_locked = 1 };
	v->g.hsm.state = VCPU_HSM_SUSPENDED;
	v->g.hsm.waiting = true;
	v->g.fp.f[31] = 0x4000000000000000UL;
	snap_vcpu_save(v, &s);
	EXPECT_EQ(s.core.sstatus, SR_SPP | SR_SPELP | SR_FS_DIRTY);	/* UXL is not the guest's */
	EXPECT_EQ(s.core.hvip, MIP_VSSIP | MIP_VSTIP);
	EXPECT_TRUE(vcpu_check(&s, vm.cfg.features) == NULL);

	memset(&vm.vcpus[0].g, 0x5a, sizeof(vm.vcpus[0].g));
	snap_vcpu_load(&vm.vcpus[0], &s);
	snap_vcpu_save(&vm.vcpus[0], &t);
	/* the trapped context's FS is the hypervisor's own, as at a reset */
	EXPECT_EQ(t.core.sstatus, SR_SPP | SR_SPELP | SR_FS_INITIAL);
	t.core.sstatus = s.core.sstatus;
	EXPECT_EQ(memcmp(&s, &t, sizeof(s)), 0);
	EXPECT_EQ(vm.vcpus[0].g.ctx.sstatus, SR_SPP | SR_SPELP | VCPU_SSTATUS_HOST);
	/* henvcfg follows the restored FWFT values */
	EXPECT_EQ(vm.vcpus[0].henvcfg & (ENVCFG_LPE | ENVCFG_SSE | ENVCFG_ADUE),
		  ENVCFG_LPE | ENVCFG_SSE | ENVCFG_ADUE);
	EXPECT_EQ(s.fwft.pte_ad_value, 1);
	EXPECT_EQ(s.fwft.misaligned_locked, 1);
}

/* STA's record and the PMU's counters travel in the VCPU record and come
 * back installed; bad ones are refused */
TEST(snap_vcpu_sta_pmu)
{
	struct snap_vcpu s, t, bad;
	struct vcpu *v;

	setup();
	v = &vm.vcpus[0];
	v->g.sta = (struct vcpu_sta){ .shmem = VM_GUEST_RAM_BASE + 0x1000, .enabled = true };
	v->g.pmu.configured = (1U << PMU_CTR_CYCLE) | (1U << PMU_CTR_FW_FIRST);
	v->g.pmu.started = 1U << PMU_CTR_FW_FIRST;
	v->g.pmu.event_idx[PMU_CTR_CYCLE] = PMU_EVENT_HW_CYCLES;
	v->g.pmu.event_idx[PMU_CTR_FW_FIRST] = (PMU_TYPE_FW << 16) | SBI_PMU_FW_SET_TIMER;
	v->g.pmu.value[PMU_CTR_CYCLE] = 1234567;
	v->g.pmu.value[PMU_CTR_FW_FIRST] = 42;
	snap_vcpu_save(v, &s);
	EXPECT_EQ(s.sta.sta_shmem, VM_GUEST_RAM_BASE + 0x1000);
	EXPECT_EQ(s.pmu.pmu_configured, v->g.pmu.configured);
	EXPECT_EQ(s.pmu.pmu_value[PMU_CTR_CYCLE], 1234567);
	EXPECT_TRUE(vcpu_check(&s, vm.cfg.features) == NULL);
	memset(&vm.vcpus[1].g, 0x5a, sizeof(vm.vcpus[1].g));
	snap_vcpu_load(&vm.vcpus[1], &s);
	EXPECT_TRUE(vm.vcpus[1].g.sta.enabled);
	EXPECT_EQ(vm.vcpus[1].g.sta.shmem, VM_GUEST_RAM_BASE + 0x1000);
	EXPECT_EQ(vm.vcpus[1].g.pmu.value[PMU_CTR_FW_FIRST], 42);
	EXPECT_TRUE(vm.vcpus[1].requests & VCPU_REQ_PMU_LOAD);	/* counting resumes */
	EXPECT_TRUE(vm.vcpus[1].pmu_live.fw_events & (1U << SBI_PMU_FW_SET_TIMER));
	snap_vcpu_save(&vm.vcpus[1], &t);
	EXPECT_EQ(memcmp(&s, &t, sizeof(s)), 0);
	/* disabled STA: the all-ones value, and nothing enabled on load */
	v->g.sta.enabled = false;
	snap_vcpu_save(v, &t);
	EXPECT_EQ(t.sta.sta_shmem, SNAP_STA_OFF);
	snap_vcpu_load(&vm.vcpus[1], &t);
	EXPECT_FALSE(vm.vcpus[1].g.sta.enabled);
	/* STA outside RAM, straddling its end, or misaligned */
	bad = s; bad.sta.sta_shmem = VM_GUEST_RAM_BASE - 64;
	EXPECT_TRUE(vcpu_check(&bad, vm.cfg.features) != NULL);
	bad = s; bad.sta.sta_shmem = VM_GUEST_RAM_BASE + vm.cfg.ram_size - 32;
	EXPECT_TRUE(vcpu_check(&bad, vm.cfg.features) != NULL);
	bad = s; bad.sta.sta_shmem = VM_GUEST_RAM_BASE + vm.cfg.ram_size - 64;
	EXPECT_TRUE(vcpu_check(&bad, vm.cfg.features) == NULL);
	bad = s; bad.sta.sta_shmem = VM_GUEST_RAM_BASE + 8;
	EXPECT_TRUE(vcpu_check(&bad, vm.cfg.features) != NULL);
	bad = s; bad.sta.sta_shmem = 0xffffffffffffffc0UL;
	EXPECT_TRUE(vcpu_check(&bad, vm.cfg.features) != NULL);
	/* PMU: the time hole, started without an event, an event the counter cannot count */
	bad = s; bad.pmu.pmu_configured |= 1U << PMU_CTR_HOLE;
	EXPECT_TRUE(vcpu_check(&bad, vm.cfg.features) != NULL);
	bad = s; bad.pmu.pmu_started |= 1U << PMU_CTR_INSTRET;
	EXPECT_TRUE(vcpu_check(&bad, vm.cfg.features) != NULL);
	bad = s; bad.pmu.pmu_event_idx[PMU_CTR_CYCLE] = PMU_EVENT_HW_INSNS;
	EXPECT_TRUE(vcpu_check(&bad, vm.cfg.features) != NULL);
	bad = s; bad.pmu.pmu_event_idx[PMU_CTR_INSTRET] = PMU_EVENT_HW_INSNS;	/* not configured */
	EXPECT_TRUE(vcpu_check(&bad, vm.cfg.features) != NULL);
}

/* The version 2 record of @s, field by field (written here, not taken from
 * the code under test's tables). */
static void as_v2(const struct snap_vcpu *s, struct snap_vcpu_v2 *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->gpr, s->core.gpr, sizeof(o->gpr));
	o->pc = s->core.pc; o->sstatus = s->core.sstatus; o->vsstatus = s->core.vsstatus;
	o->vsie = s->core.vsie; o->vstvec = s->core.vstvec; o->vsscratch = s->core.vsscratch;
	o->vsepc = s->core.vsepc; o->vscause = s->core.vscause; o->vstval = s->core.vstval;
	o->vsatp = s->core.vsatp; o->vstimecmp = s->core.vstimecmp; o->hvip = s->core.hvip;
	o->scounteren = s->core.scounteren; o->senvcfg = s->core.senvcfg; o->ssp = s->cfi.ssp;
	memcpy(o->f, s->fp.f, sizeof(o->f));
	o->fcsr = s->fp.fcsr;
	o->lp_value = s->cfi.lp_value; o->lp_locked = s->cfi.lp_locked;
	o->ss_value = s->cfi.ss_value; o->ss_locked = s->cfi.ss_locked;
	o->hsm_state = s->hsm.hsm_state; o->waiting = s->hsm.waiting;
	o->resume_nonret = s->hsm.resume_nonret; o->resume_addr = s->hsm.resume_addr;
	o->resume_opaque = s->hsm.resume_opaque; o->system_suspend = (uint8_t)s->hsm.system_suspend;
	o->misaligned_locked = s->fwft.misaligned_locked; o->pte_ad_value = s->fwft.pte_ad_value;
	o->pte_ad_locked = s->fwft.pte_ad_locked; o->sta_shmem = s->sta.sta_shmem;
	o->pmu_configured = s->pmu.pmu_configured; o->pmu_started = s->pmu.pmu_started;
	memcpy(o->pmu_event_idx, s->pmu.pmu_event_idx, sizeof(o->pmu_event_idx));
	memcpy(o->pmu_value, s->pmu.pmu_value, sizeof(o->pmu_value));
}

/* Versions 1 and 2: a version 2 record is the same state in the records; a
 * version 1 record (672 bytes) reads as what its writer gave the guest: A/D
 * updating on where it had Svadu, no STA; the rest as written. */
TEST(snap_vcpu_versions_1_and_2)
{
	struct snap_vcpu s, t;
	struct snap_vcpu_v2 o, bad;
	uint8_t v1[SNAP_VCPU_V1_SIZE + 8];
	uint32_t off;

	setup();
	EXPECT_EQ(snap_vcpu_size(1), 672);
	EXPECT_EQ(snap_vcpu_size(2), 848);
	EXPECT_EQ(snap_vcpu_size(SNAP_VERSION), sizeof(struct snap_vcpu));
	vm.vcpus[0].g.ctx.gpr[5] = 55;
	vm.vcpus[0].g.hsm.resume_opaque = 0x1234;
	vm.vcpus[0].g.fwft.ss_locked = 1;
	vm.vcpus[0].g.pmu.value[4] = 77;
	snap_vcpu_save(&vm.vcpus[0], &s);
	as_v2(&s, &o);
	EXPECT_TRUE(snap_vcpu_from_stream(&o, 2, ISA_ALL, &t, &off) == NULL);
	EXPECT_EQ(memcmp(&s, &t, sizeof(s)), 0);
	memcpy(v1, &o, SNAP_VCPU_V1_SIZE);
	memset(v1 + SNAP_VCPU_V1_SIZE, 0xee, 8);	/* not part of the record */
	EXPECT_TRUE(snap_vcpu_from_stream(v1, 1, ISA_ALL, &t, &off) == NULL);
	EXPECT_EQ(t.core.gpr[5], 55);
	EXPECT_EQ(t.hsm.resume_opaque, 0x1234);
	EXPECT_EQ(t.cfi.ss_locked, 1);
	EXPECT_EQ(t.fwft.pte_ad_value, 1);
	EXPECT_EQ(t.sta.sta_shmem, SNAP_STA_OFF);
	EXPECT_EQ(t.pmu.pmu_value[4], 0);
	EXPECT_TRUE(vcpu_check(&t, ISA_ALL) == NULL);
	EXPECT_TRUE(snap_vcpu_from_stream(v1, 1, ISA_ALL & ~SNAP_FEAT_SVADU, &t, &off) == NULL);
	EXPECT_EQ(t.fwft.pte_ad_value, 0);
	EXPECT_TRUE(vcpu_check(&t, ISA_ALL & ~SNAP_FEAT_SVADU) == NULL);
	/* a version 2 field with no place in the records is reserved: 0 */
	bad = o; bad.reserved2 = 1;
	EXPECT_TRUE(snap_vcpu_from_stream(&bad, 2, ISA_ALL, &t, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_vcpu_v2, reserved2));
	bad = o; bad.reserved3[1] = 1;
	EXPECT_TRUE(snap_vcpu_from_stream(&bad, 2, ISA_ALL, &t, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_vcpu_v2, reserved3[1]));
	bad = o; bad.reserved = 1;
	EXPECT_TRUE(snap_vcpu_from_stream(&bad, 2, ISA_ALL, &t, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_vcpu_v2, reserved));
	/* a refusal of a converted record names the byte of the version 2 payload */
	EXPECT_EQ(snap_vcpu_stream_offset(2, offsetof(struct snap_vcpu, core.vsstatus)),
		  offsetof(struct snap_vcpu_v2, vsstatus));
	EXPECT_EQ(snap_vcpu_stream_offset(2, offsetof(struct snap_vcpu, pmu.pmu_value[3])),
		  offsetof(struct snap_vcpu_v2, pmu_value[3]));
	EXPECT_EQ(snap_vcpu_stream_offset(2, offsetof(struct snap_vcpu, hsm.system_suspend)),
		  offsetof(struct snap_vcpu_v2, system_suspend));
	EXPECT_EQ(snap_vcpu_stream_offset(3, 123), 123);
}

/* Version 3: the records in id order, each of its own size. */
TEST(snap_vcpu_record_headers)
{
	struct snap_vcpu s, t, bad;
	uint32_t off;

	setup();
	snap_vcpu_save(&vm.vcpus[0], &s);
	EXPECT_EQ(s.core_rec.id, SNAP_REC_ID_CORE);
	EXPECT_EQ(s.core_rec.size, sizeof(s.core));
	EXPECT_EQ(s.pmu_rec.id, SNAP_REC_ID_PMU);
	EXPECT_EQ(s.pmu_rec.size, sizeof(s.pmu));
	EXPECT_EQ(offsetof(struct snap_vcpu, core), sizeof(struct snap_record));
	EXPECT_TRUE(snap_vcpu_from_stream(&s, 3, ISA_ALL, &t, &off) == NULL);
	EXPECT_EQ(memcmp(&s, &t, sizeof(s)), 0);
	bad = s; bad.sta_rec.id = SNAP_REC_ID_PMU;
	EXPECT_TRUE(snap_vcpu_from_stream(&bad, 3, ISA_ALL, &t, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_vcpu, sta_rec.id));
	bad = s; bad.cfi_rec.size = 8;
	EXPECT_TRUE(snap_vcpu_from_stream(&bad, 3, ISA_ALL, &t, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_vcpu, cfi_rec.size));
}

TEST(snap_vcpu_checks)
{
	struct snap_vcpu s, bad;
	uint32_t all = ISA_ALL, no_cfi = ISA_ALL & ~(SNAP_FEAT_ZICFILP | SNAP_FEAT_ZICFISS);

	setup();
	snap_vcpu_save(&vm.vcpus[0], &s);
	EXPECT_TRUE(vcpu_check(&s, all) == NULL);
	bad = s; bad.core.gpr[0] = 1;		EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.core.sstatus = SR_SIE;		EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.core.hvip = MIP_SEIP;		EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.cfi.ss_locked = 2;		EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.hsm.hsm_state = 3;		EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.hsm.waiting = 2;		EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	/* CFI on in a guest that was not given CFI: refused, never half-installed */
	bad = s; bad.cfi.ss_value = 1;		EXPECT_TRUE(vcpu_check(&bad, no_cfi) != NULL);
	bad = s; bad.cfi.lp_locked = 1;		EXPECT_TRUE(vcpu_check(&bad, no_cfi) != NULL);
	bad = s; bad.core.pc = 0x1234;		EXPECT_TRUE(vcpu_check(&bad, all) == NULL);
	/* paging modes: Bare and Sv39 always, Sv48/Sv57 where this CPU has them */
	hart_caps.vs_sv = 48;
	bad = s; bad.core.vsatp = ATP_MODE_SV48 << ATP_MODE_SHIFT | 0x80123;
	EXPECT_TRUE(vcpu_check(&bad, all) == NULL);
	bad = s; bad.core.vsatp = ATP_MODE_SV57 << ATP_MODE_SHIFT;
	EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.core.vsatp = 5UL << ATP_MODE_SHIFT;	EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	hart_caps.vs_sv = 57;
	bad = s; bad.core.vsatp = ATP_MODE_SV57 << ATP_MODE_SHIFT;
	EXPECT_TRUE(vcpu_check(&bad, all) == NULL);
	/* version 2 fields */
	bad = s; bad.fwft.pte_ad_value = 2;		EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.fwft.misaligned_locked = 2;	EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.fwft.pte_ad_locked = 1;
	EXPECT_TRUE(vcpu_check(&bad, all & ~SNAP_FEAT_SVADU) != NULL);
	bad = s; bad.cfi.cfi_reserved = 1;	EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.fwft.fwft_reserved[3] = 1;	EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.pmu.pmu_reserved = 1;	EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad = s; bad.hsm.system_suspend = 1;	EXPECT_TRUE(vcpu_check(&bad, all) != NULL);
	bad.hsm.hsm_state = VCPU_HSM_SUSPENDED; bad.hsm.resume_nonret = 1;
	EXPECT_TRUE(vcpu_check(&bad, all) == NULL);
}

/* Versions 3 to 6: the records end after PMU (896 bytes); the IMSIC record
 * reads as all zero, a PLIC VM's, and the rest as written. Version 7 has the
 * IMSIC record too, behind its own header. */
TEST(snap_vcpu_version_6_reads_as_a_plic_vm)
{
	struct snap_vcpu s, t;
	uint8_t v6[SNAP_VCPU_V6_SIZE + 16];
	uint32_t off;

	setup();
	EXPECT_EQ(snap_vcpu_size(3), SNAP_VCPU_V6_SIZE);
	EXPECT_EQ(snap_vcpu_size(6), 896);
	EXPECT_EQ(snap_vcpu_size(7), 1440);
	EXPECT_EQ(snap_vcpu_size(SNAP_VERSION), sizeof(struct snap_vcpu));
	vm.vcpus[0].g.ctx.gpr[7] = 77;
	vm.vcpus[0].g.pmu.value[4] = 44;
	snap_vcpu_save(&vm.vcpus[0], &s);
	EXPECT_EQ(s.imsic_rec.id, SNAP_REC_ID_IMSIC);
	EXPECT_EQ(s.imsic_rec.size, 536);
	EXPECT_EQ(s.imsic.imsic_nr_ids, 0);	/* a PLIC VM's record */
	memcpy(v6, &s, SNAP_VCPU_V6_SIZE);
	memset(v6 + SNAP_VCPU_V6_SIZE, 0xee, 16);	/* not part of the record */
	EXPECT_TRUE(snap_vcpu_from_stream(v6, 6, ISA_ALL, &t, &off) == NULL);
	EXPECT_EQ(memcmp(&t, &s, SNAP_VCPU_V6_SIZE), 0);
	EXPECT_EQ(t.imsic_rec.id, SNAP_REC_ID_IMSIC);
	EXPECT_EQ(t.imsic_rec.size, sizeof(t.imsic));
	for (size_t i = 0; i < sizeof(t.imsic); i++)
		EXPECT_EQ(((const uint8_t *)&t.imsic)[i], 0);
	EXPECT_TRUE(vcpu_check(&t, ISA_ALL) == NULL);
	/* as an AIA VM's it would be refused: a version 6 stream has no AIA VM */
	EXPECT_TRUE(vcpu_check(&t, SNAP_FEAT_ALL) != NULL);
	/* version 7: the IMSIC record's header is checked like the others' */
	s.imsic_rec.id = 9;
	EXPECT_TRUE(snap_vcpu_from_stream(&s, 7, ISA_ALL, &t, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_vcpu, imsic_rec.id));
}

/* Version 8: FWFT MISALIGNED_EXC_DELEG's value travels (misaligned_emulate,
 * the vCPU's own inverted byte); a restored vCPU reads it back, keeps its lock
 * and gets the hedeleg the guest's own SET gave it. Before version 8 the byte
 * is reserved: 0 restores the vCPU delegated, anything else is refused. */
TEST(snap_vcpu_misaligned_emulate_version_8)
{
	const struct fwft_feature *f = fwft_feature(SBI_FWFT_MISALIGNED_EXC_DELEG);
	const unsigned long causes = BIT(EXC_LOAD_MISALIGNED) | BIT(EXC_STORE_MISALIGNED);
	struct snap_vcpu s, t, bad;
	struct vcpu *v = &vm.vcpus[1], *r = &vm.vcpus[0];
	uint32_t off;
	const char *why;

	setup();
	vm.hedeleg = HEDELEG_GUEST;
	EXPECT_TRUE(f != NULL);
	EXPECT_EQ((HEDELEG_GUEST & causes), causes);
	/* the guest's own SET 0 with LOCK, as vsbi_fwft.c makes it */
	EXPECT_EQ(fwft_feature_set(v, f, 0), SBI_SUCCESS);
	*fwft_feature_lock(v, f) = 1;
	snap_vcpu_save(v, &s);
	EXPECT_EQ(s.fwft.misaligned_emulate, 1);
	EXPECT_EQ(s.fwft.misaligned_locked, 1);
	EXPECT_TRUE(vcpu_check(&s, ISA_ALL) == NULL);
	EXPECT_TRUE(snap_vcpu_from_stream(&s, SNAP_VERSION_MISALIGNED, ISA_ALL, &t, &off) == NULL);
	memset(&r->g, 0x5a, sizeof(r->g));
	snap_vcpu_load(r, &t);
	EXPECT_EQ(fwft_feature_get(r, f), 0);
	EXPECT_EQ(*fwft_feature_lock(r, f), 1);
	EXPECT_EQ(vcpu_hedeleg(r), HEDELEG_GUEST & ~causes);

	/* only 0 or 1, the field named */
	bad = s; bad.fwft.misaligned_emulate = 2;
	why = vcpu_check(&bad, ISA_ALL);
	EXPECT_TRUE(why != NULL && strstr(why, "misaligned_emulate") != NULL);

	/* version 7: the byte is reserved; 0 is a delegated vCPU, its lock kept */
	EXPECT_TRUE(snap_vcpu_from_stream(&s, 7, ISA_ALL, &t, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_vcpu, fwft.misaligned_emulate));
	why = snap_vcpu_from_stream(&s, 3, ISA_ALL, &t, &off);
	EXPECT_TRUE(why != NULL && strstr(why, "misaligned_emulate") != NULL);
	bad = s; bad.fwft.misaligned_emulate = 0;
	EXPECT_TRUE(snap_vcpu_from_stream(&bad, 7, ISA_ALL, &t, &off) == NULL);
	memset(&r->g, 0x5a, sizeof(r->g));
	snap_vcpu_load(r, &t);
	EXPECT_EQ(fwft_feature_get(r, f), 1);
	EXPECT_EQ(*fwft_feature_lock(r, f), 1);
	EXPECT_EQ(vcpu_hedeleg(r), HEDELEG_GUEST);
	/* versions 1 and 2 have no such byte: delegated */
	EXPECT_EQ(snap_v2_field("misaligned_emulate"), NULL);
}

/* Version 8: a vCPU's SBI DBTR state travels (the DBTR record): shared
 * memory and installed triggers come back as the guest reads them, live
 * recomputed. A restore admits only what the guest's own calls could set on
 * this host; a trigger this firmware has no slot for is dbtr_no_triggers
 * (`no-feature`). Version 7 streams have no record: DBTR unused. */
#define DBTR_EXEC	(MC6_TYPE | MC6_EXECUTE | MC6_S | MC6_U)

static void dbtr_setup(struct vcpu *v)
{
	dbtr_host = (struct dbtr_host){ .ok = true, .trig_max = 4 };
	v->dbtr.shmem = VM_GUEST_RAM_BASE + 0x1000;
	v->dbtr.shmem_on = true;
	v->dbtr.trig[0] = (struct dbtr_trigger){ DBTR_EXEC, 0x80201234, 0,
		SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_U | SBI_DBTR_TS_S };
	/* disabled after install: no mode bits, the saved ones kept in state */
	v->dbtr.trig[2] = (struct dbtr_trigger){ MC6_TYPE | MC6_LOAD, 0x80300000, 0,
		SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_S };
	v->dbtr.live = 1;
}

static const char *dbtr_check_field(const struct snap_vcpu *s, uint32_t *off)
{
	struct snap_config c;

	snap_config_save(&vm, 0, 1, &c);
	return snap_vcpu_problem(s, &c, off);
}

TEST(snap_vcpu_dbtr_round_trip)
{
	struct snap_vcpu s, t;
	struct vcpu *v = &vm.vcpus[1], *r = &vm.vcpus[0];
	uint32_t off;

	setup();
	dbtr_setup(v);
	snap_vcpu_save(v, &s);
	EXPECT_EQ(s.dbtr_rec.id, SNAP_REC_ID_DBTR);
	EXPECT_EQ(s.dbtr_rec.size, 216);
	EXPECT_EQ(s.dbtr.dbtr_shmem, VM_GUEST_RAM_BASE + 0x1000);
	EXPECT_EQ(s.dbtr.dbtr_shmem_on, 1);
	EXPECT_EQ(s.dbtr.dbtr_tdata1[0], DBTR_EXEC);
	EXPECT_EQ(s.dbtr.dbtr_tdata2[2], 0x80300000);
	EXPECT_EQ(s.dbtr.dbtr_state[2], SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_S);
	EXPECT_TRUE(vcpu_check(&s, ISA_ALL) == NULL);
	EXPECT_TRUE(snap_vcpu_from_stream(&s, SNAP_VERSION_DBTR, ISA_ALL, &t, &off) == NULL);
	memset(&r->dbtr, 0x5a, sizeof(r->dbtr));
	snap_vcpu_load(r, &t);
	EXPECT_EQ(r->dbtr.shmem, v->dbtr.shmem);
	EXPECT_EQ(r->dbtr.shmem_on, 1);
	for (unsigned int i = 0; i < DBTR_MAX_TRIGGERS; i++) {
		EXPECT_EQ(r->dbtr.trig[i].tdata1, v->dbtr.trig[i].tdata1);
		EXPECT_EQ(r->dbtr.trig[i].tdata2, v->dbtr.trig[i].tdata2);
		EXPECT_EQ(r->dbtr.trig[i].tdata3, 0);
		EXPECT_EQ(r->dbtr.trig[i].state, v->dbtr.trig[i].state);
	}
	EXPECT_EQ(r->dbtr.live, 1);	/* recomputed: the disabled one needs no hardware */

	/* version 7 ends before the record: DBTR unused (a stale vCPU's cleared) */
	EXPECT_EQ(snap_vcpu_size(7), SNAP_VCPU_V7_SIZE);
	EXPECT_TRUE(snap_vcpu_from_stream(&s, 7, ISA_ALL, &t, &off) == NULL);
	EXPECT_EQ(t.dbtr_rec.id, SNAP_REC_ID_DBTR);
	EXPECT_EQ(t.dbtr.dbtr_shmem_on, 0);
	EXPECT_EQ(t.dbtr.dbtr_state[0], 0);
	snap_vcpu_load(r, &t);
	EXPECT_EQ(r->dbtr.shmem_on, 0);
	EXPECT_EQ(r->dbtr.trig[0].state, 0);
	EXPECT_EQ(r->dbtr.live, 0);
	/* version 8: the record's header is checked like the others' */
	t = s;
	t.dbtr_rec.id = 10;
	EXPECT_TRUE(snap_vcpu_from_stream(&t, 8, ISA_ALL, &s, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_vcpu, dbtr_rec.id));
	dbtr_host = (struct dbtr_host){ 0 };
}

/* each refusal names its field, at its offset */
#define DBTR_REFUSED(mutate, field, name) do { \
	struct snap_vcpu b_ = s; \
	const char *w_; \
	b_.dbtr.mutate; \
	w_ = dbtr_check_field(&b_, &off); \
	EXPECT_TRUE(w_ != NULL && strstr(w_, name) != NULL); \
	EXPECT_EQ(off, offsetof(struct snap_vcpu, dbtr.field)); \
} while (0)

TEST(snap_vcpu_dbtr_refusals)
{
	struct snap_vcpu s, b;
	struct vcpu *v = &vm.vcpus[1];
	uint64_t end = VM_GUEST_RAM_BASE + (256UL << 20);
	uint32_t off;

	setup();
	dbtr_setup(v);
	snap_vcpu_save(v, &s);
	EXPECT_TRUE(dbtr_check_field(&s, &off) == NULL);
	/* the shared memory: aligned, trig_max (4) entries of 32 bytes in RAM */
	DBTR_REFUSED(dbtr_shmem += 4, dbtr_shmem, "dbtr_shmem");
	DBTR_REFUSED(dbtr_shmem = end - 96, dbtr_shmem, "dbtr_shmem");
	DBTR_REFUSED(dbtr_shmem = VM_GUEST_RAM_BASE - 8, dbtr_shmem, "dbtr_shmem");
	DBTR_REFUSED(dbtr_shmem = ~0ULL - 7, dbtr_shmem, "dbtr_shmem");
	b = s; b.dbtr.dbtr_shmem = end - 128;	/* the last 4 entries of RAM: fine */
	EXPECT_TRUE(dbtr_check_field(&b, &off) == NULL);
	DBTR_REFUSED(dbtr_shmem_on = 0, dbtr_shmem, "dbtr_shmem");	/* an address, off */
	DBTR_REFUSED(dbtr_shmem_on = 2, dbtr_shmem_on, "dbtr_shmem_on");
	b = s; b.dbtr.dbtr_shmem_on = 0; b.dbtr.dbtr_shmem = 0;	/* off, triggers kept */
	EXPECT_TRUE(dbtr_check_field(&b, &off) == NULL);
	DBTR_REFUSED(dbtr_reserved[3] = 1, dbtr_reserved[3], "dbtr_reserved");
	/* states: MAPPED with saved modes, or 0; no other bit */
	DBTR_REFUSED(dbtr_state[0] = SBI_DBTR_TS_S, dbtr_state[0], "dbtr_state");
	DBTR_REFUSED(dbtr_state[0] = SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_HAVE_HW_TRIG, dbtr_state[0],
		     "dbtr_state");
	/* a free trigger is all zero */
	DBTR_REFUSED(dbtr_tdata1[1] = DBTR_EXEC, dbtr_tdata1[1], "dbtr_tdata1");
	DBTR_REFUSED(dbtr_tdata2[1] = 4, dbtr_tdata2[1], "dbtr_tdata2");
	DBTR_REFUSED(dbtr_tdata3[1] = 1, dbtr_tdata3[1], "dbtr_tdata3");
	/* an installed one passes dbtr_check(): mcontrol6, no m, dmode, chain, Debug Mode */
	DBTR_REFUSED(dbtr_tdata1[0] = (TDATA1_TYPE_MCONTROL << TDATA1_TYPE_SHIFT) | MC6_EXECUTE,
		     dbtr_tdata1[0], "dbtr_tdata1");
	DBTR_REFUSED(dbtr_tdata1[0] = DBTR_EXEC | MC6_M, dbtr_tdata1[0], "dbtr_tdata1");
	DBTR_REFUSED(dbtr_tdata1[0] = DBTR_EXEC | TDATA1_DMODE, dbtr_tdata1[0], "dbtr_tdata1");
	DBTR_REFUSED(dbtr_tdata1[0] = DBTR_EXEC | MC6_CHAIN, dbtr_tdata1[0], "dbtr_tdata1");
	DBTR_REFUSED(dbtr_tdata1[0] = DBTR_EXEC | MC6_ACTION_DEBUG_MODE << MC6_ACTION_SHIFT,
		     dbtr_tdata1[0], "dbtr_tdata1");
	DBTR_REFUSED(dbtr_tdata3[0] = 1, dbtr_tdata3[0], "dbtr_tdata3");

	/* a trigger at or above this firmware's trig_max: no-feature */
	b = s;
	b.dbtr.dbtr_state[5] = SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_S;
	b.dbtr.dbtr_tdata1[5] = DBTR_EXEC;
	EXPECT_TRUE(dbtr_check_field(&b, &off) == dbtr_no_triggers);
	EXPECT_EQ(off, offsetof(struct snap_vcpu, dbtr.dbtr_state[5]));
	dbtr_host.trig_max = 8;		/* a host with more: fine */
	EXPECT_TRUE(dbtr_check_field(&b, &off) == NULL);
	dbtr_host.trig_max = 2;		/* trigger 2 in use, 2 here */
	EXPECT_TRUE(dbtr_check_field(&s, &off) == dbtr_no_triggers);
	EXPECT_EQ(off, offsetof(struct snap_vcpu, dbtr.dbtr_state[2]));
	/* no DBTR at all: shared memory or a trigger is no-feature; none is fine */
	dbtr_host = (struct dbtr_host){ 0 };
	EXPECT_TRUE(dbtr_check_field(&s, &off) == dbtr_no_triggers);
	snap_vcpu_save(&vm.vcpus[0], &b);
	EXPECT_TRUE(dbtr_check_field(&b, &off) == NULL);
}
