/* SPDX-License-Identifier: MIT */
/* An AIA VM's software IMSIC (docs/design-aia.md 3.6, 3.10): the Zicsr
 * decoding of a trapped CSR instruction (hyp/lib/csr_insn.c), the
 * vsireg/stopei emulation (hyp/vdev/vimsic_csr.c) on the vCPU's file
 * (hyp/state/vimsic.c over hyp/lib/imsic_file.c), the vIMSIC window's rules
 * (hyp/vdev/vimsic_mmio.c) and the vAPLIC's MSIs (hyp/vdev/vaplic.c over
 * hyp/lib/aplic_model.c): ext_irq follows the file's signal, and only its
 * 0 -> 1 edge from outside kicks the vCPU. */
#include <string.h>
#include <arch/riscv/csr.h>
#include <csr_insn.h>
#include <errno.h>
#include <hart.h>
#include <imsic.h>
#include <imsic_file.h>
#include <mmio.h>
#include <vdev.h>
#include <vimsic.h>
#include <vm.h>
#include "fake_imsic.h"
#include "test.h"

/* the IMSIC record's check reads it (a PLIC VM's vsiselect under Smstateen) */
struct hart_caps hart_caps;

static struct vm tvm;
static unsigned int kicks[VM_MAX_VCPUS];
static unsigned int local_flushes;

void tlb_local_gstage(const struct vm *vm)
{
	(void)vm;
	local_flushes++;
}

void vcpu_kick(struct vcpu *v)
{
	kicks[v->id]++;
}

void steal_note_wake(struct vcpu *v, unsigned long bits)
{
	(void)v;
	(void)bits;
}

/* a PLIC VM's lines go to the PLIC model (hyp/vdev/vplic.c, tested apart) */
static unsigned int plic_calls;

void vplic_set_level(struct vm *vm, unsigned int irq, bool level)
{
	(void)vm;
	(void)irq;
	(void)level;
	plic_calls++;
}

static void vm_new(unsigned int vcpus, enum vm_irqchip chip)
{
	memset(&tvm, 0, sizeof(tvm));
	memset(kicks, 0, sizeof(kicks));
	tvm.cfg.ram_gpa = VM_GUEST_RAM_BASE;
	tvm.cfg.ram_size = 64UL << 20;
	tvm.cfg.nr_vcpus = vcpus;
	tvm.cfg.irqchip = chip;
	tvm.cfg.imsic_ids = chip == VM_IRQCHIP_AIA ? VIMSIC_IDS : 0;
	for (unsigned int i = 0; i < vcpus; i++) {
		tvm.vcpus[i].vm = &tvm;
		tvm.vcpus[i].id = i;
		tvm.vcpus[i].g.ctx.sstatus = SR_SPP;	/* trapped from VS-mode */
		vimsic_reset(&tvm.vcpus[i]);
	}
	if (chip == VM_IRQCHIP_AIA) {
		EXPECT_EQ(vimsic_mmio_register(&tvm), 0);
		EXPECT_EQ(vaplic_register(&tvm), 0);
		vaplic_reset(&tvm);
	}
}

/* Zicsr encodings: csr[31:20] rs1/uimm[19:15] funct3[14:12] rd[11:7] 0x73 */
static uint32_t csr_insn(unsigned int f3, unsigned int csr, unsigned int rd, unsigned int rs1)
{
	return (csr << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x73;
}

#define CSRRW	1
#define CSRRS	2
#define CSRRC	3
#define CSRRWI	5
#define CSRRSI	6
#define CSRRCI	7

/* ---- decoding ---- */

TEST(csr_insn_decode_forms)
{
	unsigned long gpr[32] = { 0 };
	struct csr_insn c;

	gpr[5] = 0xf0;
	EXPECT_TRUE(csr_insn_decode(csr_insn(CSRRW, 0x151, 3, 5), gpr, &c));
	EXPECT_EQ(c.csr, 0x151);
	EXPECT_EQ(c.rd, 3);
	EXPECT_TRUE(c.write);
	EXPECT_EQ(c.val, 0xf0);
	EXPECT_EQ(c.wmask, ~0ULL);
	/* csrrw with x0: still a write, of 0 */
	EXPECT_TRUE(csr_insn_decode(csr_insn(CSRRW, 0x151, 0, 0), gpr, &c));
	EXPECT_TRUE(c.write);
	EXPECT_EQ(c.val, 0);
	EXPECT_TRUE(csr_insn_decode(csr_insn(CSRRS, 0x15c, 7, 5), gpr, &c));
	EXPECT_TRUE(c.write);
	EXPECT_EQ(c.wmask, 0xf0);
	EXPECT_EQ(c.val & c.wmask, 0xf0);
	/* csrr = csrrs rd, csr, x0: no write, even if x0's slot held junk */
	gpr[0] = 0x55;
	EXPECT_TRUE(csr_insn_decode(csr_insn(CSRRS, 0x15c, 7, 0), gpr, &c));
	EXPECT_FALSE(c.write);
	EXPECT_EQ(c.wmask, 0);
	EXPECT_TRUE(csr_insn_decode(csr_insn(CSRRC, 0x151, 1, 5), gpr, &c));
	EXPECT_TRUE(c.write);
	EXPECT_EQ(c.wmask, 0xf0);
	EXPECT_EQ(c.val & c.wmask, 0);
	EXPECT_TRUE(csr_insn_decode(csr_insn(CSRRWI, 0x151, 2, 17), gpr, &c));
	EXPECT_TRUE(c.write);
	EXPECT_EQ(c.val, 17);	/* the immediate, not x17 */
	EXPECT_TRUE(csr_insn_decode(csr_insn(CSRRSI, 0x151, 2, 0), gpr, &c));
	EXPECT_FALSE(c.write);
	EXPECT_TRUE(csr_insn_decode(csr_insn(CSRRCI, 0x151, 2, 3), gpr, &c));
	EXPECT_TRUE(c.write);
	EXPECT_EQ(c.wmask, 3);
	EXPECT_EQ(c.val & c.wmask, 0);
	/* not Zicsr: wfi (funct3 0), a load, a word of zeros */
	EXPECT_FALSE(csr_insn_decode(0x10500073, gpr, &c));
	EXPECT_FALSE(csr_insn_decode(0x00052503, gpr, &c));
	EXPECT_FALSE(csr_insn_decode(0, gpr, &c));
	EXPECT_FALSE(csr_insn_decode(csr_insn(4, 0x151, 1, 1), gpr, &c));	/* funct3 4: reserved */
}

/* ---- the CSR exits ---- */

/* vCPU @i runs @insn in a virtual-instruction exit with vsiselect @isel */
static int csr_exit(unsigned int i, uint32_t insn, unsigned long isel)
{
	fake_csr[CSR_VSISELECT] = isel;
	return vimsic_csr_exit(&tvm.vcpus[i], insn);
}

TEST(vimsic_csr_registers_through_vsireg)
{
	struct vcpu *v;

	vm_new(2, VM_IRQCHIP_AIA);
	v = &tvm.vcpus[0];
	v->g.ctx.gpr[5] = 1;
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRW, CSR_SIREG, 6, 5), IMSIC_ISEL_EIDELIVERY), 1);
	EXPECT_EQ(v->imsic.file.eidelivery, 1);
	EXPECT_EQ(v->g.ctx.gpr[6], 0);		/* the old value */
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 7, 0), IMSIC_ISEL_EIDELIVERY), 1);
	EXPECT_EQ(v->g.ctx.gpr[7], 1);
	/* eie0 |= identities 1..3 (csrrsi 0xe); bit 0 is no identity */
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRSI, CSR_SIREG, 0, 0xf), IMSIC_ISEL_EIE0), 1);
	EXPECT_EQ(v->imsic.file.eie[0], 0xe);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRCI, CSR_SIREG, 8, 2), IMSIC_ISEL_EIE0), 1);
	EXPECT_EQ(v->g.ctx.gpr[8], 0xe);
	EXPECT_EQ(v->imsic.file.eie[0], 0xc);
	/* eithreshold, eip2 (identities 64..127), and the other vCPU untouched */
	v->g.ctx.gpr[5] = 5;
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRW, CSR_SIREG, 0, 5), IMSIC_ISEL_EITHRESHOLD), 1);
	EXPECT_EQ(v->imsic.file.eithreshold, 5);
	v->g.ctx.gpr[5] = 1UL << 63;
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 0, 5), IMSIC_ISEL_EIP0 + 2), 1);
	EXPECT_EQ(v->imsic.file.eip[1], 1UL << 63);
	EXPECT_EQ(tvm.vcpus[1].imsic.file.eip[1], 0);
	EXPECT_EQ(tvm.vcpus[1].imsic.file.eie[0], 0);
}

TEST(vimsic_csr_illegal_and_iprio)
{
	struct vcpu *v;

	vm_new(1, VM_IRQCHIP_AIA);
	v = &tvm.vcpus[0];
	v->g.ctx.gpr[9] = 0x1234;
	/* odd eip/eie (RV64): illegal, nothing written to rd */
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 9, 0), IMSIC_ISEL_EIP0 + 1), -1);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 9, 0), IMSIC_ISEL_EIE0 + 3), -1);
	EXPECT_EQ(v->g.ctx.gpr[9], 0x1234);
	/* reserved vsiselect values */
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 9, 0), 0x00), -1);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 9, 0), 0x40), -1);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 9, 0), 0x6f), -1);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 9, 0), 0x100), -1);
	EXPECT_EQ(v->g.ctx.gpr[9], 0x1234);
	/* iprio0..15: even ones read 0 and ignore writes, odd ones do not exist */
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRW, CSR_SIREG, 9, 9), 0x30), 1);
	EXPECT_EQ(v->g.ctx.gpr[9], 0);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 9, 0), 0x3e), 1);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 9, 0), 0x31), -1);
	/* registers 0x71, 0x73..0x7f: read 0, writes ignored */
	v->g.ctx.gpr[9] = 7;
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRW, CSR_SIREG, 10, 9), 0x71), 1);
	EXPECT_EQ(v->g.ctx.gpr[10], 0);
	EXPECT_EQ(v->imsic.file.eidelivery, 0);
}

TEST(vimsic_csr_not_ours)
{
	vm_new(1, VM_IRQCHIP_AIA);
	/* other CSRs, and non-CSR instructions: the caller's business */
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG + 1, 1, 0), 0x70), 0);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, 0xc00, 1, 0), 0x70), 0);
	EXPECT_EQ(csr_exit(0, 0x10500073, 0x70), 0);
	/* from VU-mode: a U access to an S CSR, illegal for the caller to raise */
	tvm.vcpus[0].g.ctx.sstatus = 0;
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 1, 0), 0x70), 0);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_STOPEI, 1, 0), 0), 0);
	/* a PLIC VM has no IMSIC: its accesses stay illegal (hstateen0) */
	vm_new(1, VM_IRQCHIP_PLIC);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRS, CSR_SIREG, 1, 0), 0x70), 0);
	EXPECT_EQ(csr_exit(0, csr_insn(CSRRW, CSR_STOPEI, 1, 0), 0), 0);
}

/* ---- signal, stopei claims, kicks ---- */

TEST(vimsic_inject_signal_claim_and_kicks)
{
	struct vcpu *v;

	vm_new(2, VM_IRQCHIP_AIA);
	v = &tvm.vcpus[1];
	/* delivery off: pending, no signal, no kick */
	vimsic_inject(v, 1);
	EXPECT_FALSE(v->ext_irq);
	EXPECT_EQ(kicks[1], 0);
	EXPECT_EQ(v->imsic.file.eip[0], 2);
	/* the guest turns delivery on and enables 1 and 9: its own exit applies
	 * ext_irq at entry, no kick */
	v->g.ctx.gpr[5] = 1;
	EXPECT_EQ(csr_exit(1, csr_insn(CSRRW, CSR_SIREG, 0, 5), IMSIC_ISEL_EIDELIVERY), 1);
	EXPECT_FALSE(v->ext_irq);
	v->g.ctx.gpr[5] = (1UL << 1) | (1UL << 9);
	EXPECT_EQ(csr_exit(1, csr_insn(CSRRS, CSR_SIREG, 0, 5), IMSIC_ISEL_EIE0), 1);
	EXPECT_TRUE(v->ext_irq);
	EXPECT_EQ(kicks[1], 0);
	/* stopei read: identity and priority 1, nothing claimed */
	EXPECT_EQ(csr_exit(1, csr_insn(CSRRS, CSR_STOPEI, 6, 0), 0), 1);
	EXPECT_EQ(v->g.ctx.gpr[6], (1UL << 16) | 1);
	EXPECT_TRUE(v->ext_irq);
	/* csrrw stopei: the read half is the old value, then the claim */
	EXPECT_EQ(csr_exit(1, csr_insn(CSRRW, CSR_STOPEI, 6, 0), 0), 1);
	EXPECT_EQ(v->g.ctx.gpr[6], (1UL << 16) | 1);
	EXPECT_EQ(v->imsic.file.eip[0], 0);
	EXPECT_FALSE(v->ext_irq);
	/* a store from elsewhere: the edge kicks once, a second store does not */
	vimsic_inject(v, 9);
	EXPECT_TRUE(v->ext_irq);
	EXPECT_EQ(kicks[1], 1);
	vimsic_inject(v, 1);
	EXPECT_EQ(kicks[1], 1);
	EXPECT_EQ(kicks[0], 0);
	/* the threshold masks: 1 passes a threshold of 2, 9 does not */
	v->g.ctx.gpr[5] = 2;
	EXPECT_EQ(csr_exit(1, csr_insn(CSRRW, CSR_SIREG, 0, 5), IMSIC_ISEL_EITHRESHOLD), 1);
	EXPECT_EQ(csr_exit(1, csr_insn(CSRRSI, CSR_STOPEI, 6, 1), 0), 1);	/* claims 1 */
	EXPECT_EQ(v->g.ctx.gpr[6], (1UL << 16) | 1);
	EXPECT_FALSE(v->ext_irq);	/* 9 pending, enabled, masked */
	EXPECT_EQ(csr_exit(1, csr_insn(CSRRS, CSR_STOPEI, 6, 0), 0), 1);
	EXPECT_EQ(v->g.ctx.gpr[6], 0);
	/* identity 0, and identities past imsic_ids, are no MSI at all */
	vimsic_inject(v, 0);
	vimsic_inject(v, VIMSIC_IDS + 1);
	vimsic_inject(v, ~0U);
	EXPECT_EQ(kicks[1], 1);
	/* reset: nothing pending, delivery off, no signal */
	vimsic_reset(v);
	EXPECT_FALSE(v->ext_irq);
	EXPECT_EQ(v->imsic.file.eip[0], 0);
	EXPECT_EQ(v->imsic.file.eidelivery, 0);
}

/* ---- the vIMSIC window ---- */

static int access(gpa_t gpa, unsigned int width, bool write, uint32_t value, uint64_t *out)
{
	struct mmio_region *r = vm_mmio_find(&tvm, gpa);
	struct mmio_access a = { .gpa = gpa, .width = width, .is_write = write, .value = value };
	int rc;

	EXPECT_TRUE(r != NULL);
	if (!r)
		return -1000;
	a.value = write ? value : 0;	/* the exit path zeroes a read's value */
	rc = r->handle(&tvm, r->priv, &a);
	if (out)
		*out = a.value;
	return rc;
}

TEST(vimsic_window_rules)
{
	uint64_t val = 1;

	vm_new(2, VM_IRQCHIP_AIA);
	/* vCPU 1's page, seteipnum_le */
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE, 4, true, 5, NULL), 0);
	EXPECT_EQ(tvm.vcpus[1].imsic.file.eip[0], 1UL << 5);
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eip[0], 0);
	/* seteipnum_be and other offsets: ignored */
	EXPECT_EQ(access(VIMSIC_BASE + 4, 4, true, 6, NULL), 0);
	EXPECT_EQ(access(VIMSIC_BASE + 0x800, 4, true, 6, NULL), 0);
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eip[0], 0);
	/* reads: 0 */
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE, 4, false, 0, &val), 0);
	EXPECT_EQ(val, 0);
	/* pages past the VM's vCPUs: in the window, ignored, read 0 */
	EXPECT_EQ(access(VIMSIC_BASE + 2 * VIMSIC_PAGE, 4, true, 3, NULL), 0);
	EXPECT_EQ(access(VIMSIC_BASE + 7 * VIMSIC_PAGE, 4, false, 0, &val), 0);
	EXPECT_EQ(val, 0);
	EXPECT_EQ(tvm.vcpus[2].imsic.file.eip[0], 0);
	EXPECT_TRUE(vm_mmio_find(&tvm, VIMSIC_BASE + VIMSIC_SIZE) == NULL);
	/* other widths, misaligned words: the window's fault */
	EXPECT_EQ(access(VIMSIC_BASE, 1, true, 5, NULL), -HYP_EINVAL);
	EXPECT_EQ(access(VIMSIC_BASE, 2, true, 5, NULL), -HYP_EINVAL);
	EXPECT_EQ(access(VIMSIC_BASE, 8, true, 5, NULL), -HYP_EINVAL);
	EXPECT_EQ(access(VIMSIC_BASE + 2, 4, true, 5, NULL), -HYP_EINVAL);
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eip[0], 0);
}

TEST(vimsic_counters_count_from_creation)
{
	struct vcpu *v;

	vm_new(2, VM_IRQCHIP_AIA);
	v = &tvm.vcpus[1];
	/* sw_stores: 32-bit stores into the target's page, any offset, any
	 * identity; not reads, faulting widths, or pages of no vCPU */
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE, 4, true, 5, NULL), 0);
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE, 4, true, 0, NULL), 0);
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE + 4, 4, true, 5, NULL), 0);
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE, 4, false, 0, NULL), 0);
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE, 1, true, 5, NULL), -HYP_EINVAL);
	EXPECT_EQ(access(VIMSIC_BASE + 2 * VIMSIC_PAGE, 4, true, 5, NULL), 0);
	EXPECT_EQ(v->imsic.sw_stores, 3);
	EXPECT_EQ(tvm.vcpus[0].imsic.sw_stores, 0);
	/* an APLIC MSI is no store into the page */
	vimsic_inject(v, 7);
	EXPECT_EQ(v->imsic.sw_stores, 3);
	/* csr_exits: each emulated vsireg (0x70..0xFF) and stopei access */
	EXPECT_EQ(csr_exit(1, csr_insn(CSRRS, CSR_SIREG, 6, 0), IMSIC_ISEL_EIP0), 1);
	EXPECT_EQ(csr_exit(1, csr_insn(CSRRW, CSR_STOPEI, 6, 0), 0), 1);
	EXPECT_EQ(v->imsic.csr_exits, 2);
	EXPECT_EQ(tvm.vcpus[0].imsic.csr_exits, 0);
	/* a reboot resets the file, not the counters */
	vimsic_reset(v);
	EXPECT_EQ(v->imsic.file.eip[0], 0);
	EXPECT_EQ(v->imsic.sw_stores, 3);
	EXPECT_EQ(v->imsic.csr_exits, 2);
}

TEST(virq_picks_the_vms_controller)
{
	vm_new(1, VM_IRQCHIP_PLIC);
	plic_calls = 0;
	EXPECT_TRUE(vm_mmio_find(&tvm, VIMSIC_BASE) == NULL);
	EXPECT_TRUE(vm_mmio_find(&tvm, VAPLIC_BASE) == NULL);
	virq_set_level(&tvm, 10, true);
	EXPECT_EQ(plic_calls, 1);
	vm_new(1, VM_IRQCHIP_AIA);
	plic_calls = 0;
	virq_set_level(&tvm, 10, true);
	EXPECT_EQ(plic_calls, 0);
	EXPECT_EQ(tvm.aplic.s.level, 1U << 10);
}

/* ---- the vAPLIC's MSIs ---- */

#define APLIC_DOMAINCFG_OFF	0x0000
#define APLIC_SOURCECFG_OFF(i)	(4 * (i))
#define APLIC_SETIENUM_OFF	0x1edc
#define APLIC_TARGET_OFF(i)	(0x3000 + 4 * (i))
#define APLIC_GENMSI_OFF	0x3000
#define APLIC_SETIP0_OFF	0x1c00
#define APLIC_SETIPNUM_OFF	0x1cdc
#define APLIC_IN_CLRIP0_OFF	0x1d00
#define APLIC_SETIE0_OFF	0x1e00

static void aplic_write(uint32_t off, uint32_t val)
{
	EXPECT_EQ(access(VAPLIC_BASE + off, 4, true, val, NULL), 0);
}

TEST(vaplic_msis_reach_the_target_file)
{
	struct vcpu *v;

	vm_new(2, VM_IRQCHIP_AIA);
	v = &tvm.vcpus[1];
	v->imsic.file.eidelivery = 1;
	v->imsic.file.eie[0] = ~1UL;
	/* UART source 10, level-high, to vCPU 1 identity 33 */
	aplic_write(APLIC_SOURCECFG_OFF(10), 6);
	aplic_write(APLIC_TARGET_OFF(10), (1U << 18) | 33);
	aplic_write(APLIC_SETIENUM_OFF, 10);
	aplic_write(APLIC_DOMAINCFG_OFF, 1U << 8);	/* IE */
	virq_set_level(&tvm, 10, true);
	EXPECT_EQ(v->imsic.file.eip[0], 1UL << 33);
	EXPECT_TRUE(v->ext_irq);
	EXPECT_EQ(kicks[1], 1);
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eip[0], 0);
	/* a target hart past the VM's vCPUs, or an EIID past imsic_ids: dropped */
	v->imsic.file.eip[0] = 0;
	virq_set_level(&tvm, 10, false);
	aplic_write(APLIC_TARGET_OFF(10), (2U << 18) | 33);
	virq_set_level(&tvm, 10, true);
	virq_set_level(&tvm, 10, false);
	aplic_write(APLIC_TARGET_OFF(10), (1U << 18) | 300);
	virq_set_level(&tvm, 10, true);
	for (unsigned int w = 0; w < IMSIC_FILE_WORDS; w++) {
		EXPECT_EQ(tvm.vcpus[0].imsic.file.eip[w], 0);
		EXPECT_EQ(v->imsic.file.eip[w], 0);
	}
	/* genmsi: hart 0, identity 7 */
	aplic_write(APLIC_GENMSI_OFF, 7);
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eip[0], 1UL << 7);
}

/* ---- a vCPU holding a hardware guest file (imsic_files.c moves it) ---- */

/* QEMU virt's IMSIC, 2 harts, 3 guest files each (design-aia 1.1) */
static const struct imsic_host_desc qemu_imsic = {
	.present = true, .base = 0x28000000, .size = 0x10000, .num_ids = 255,
	.guest_ids = 255, .guest_bits = 2,
};
static uint64_t stored_pa[8];
static uint32_t stored_id[8];
static unsigned int stores;

static void record_store(unsigned long long pa, unsigned int id)
{
	if (stores < 8) {
		stored_pa[stores] = pa;
		stored_id[stores] = id;
	}
	stores++;
}

static void gfiles_new(void)
{
	fake_csr_reset();
	fake_imsic_install(255);
	fake_imsic_install_guests(3, 255);
	fake_mmio_store32 = record_store;
	stores = 0;
	local_flushes = 0;
	EXPECT_EQ(imsic_gfiles_setup(0, &qemu_imsic, 0, 3), 3);
	EXPECT_EQ(imsic_gfiles_setup(1, &qemu_imsic, 1, 3), 3);
}

/* A store that exits while its target holds a guest file (the sender's hart
 * cached the page's invalid entry) reaches that file's page, not the
 * software file; the sender's entry is dropped; nobody is kicked (the file
 * signals). APLIC MSIs take the same way. */
TEST(a_window_store_to_a_vcpu_holding_a_guest_file_reaches_the_file)
{
	struct vcpu *v;

	vm_new(2, VM_IRQCHIP_AIA);
	gfiles_new();
	v = &tvm.vcpus[1];
	v->imsic.mode = VIMSIC_HW;
	v->imsic.ghart = 1;
	v->imsic.gfile = 2;
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE, 4, true, 7, NULL), 0);
	EXPECT_EQ(stores, 1);
	EXPECT_EQ(stored_pa[0], 0x28006000);	/* hart 1's guest file 2 */
	EXPECT_EQ(stored_id[0], 7);
	EXPECT_EQ(local_flushes, 1);
	EXPECT_EQ(v->imsic.file.eip[0], 0);
	EXPECT_EQ(kicks[1], 0);
	/* identities the file lacks never reach it */
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE, 4, true, 0, NULL), 0);
	EXPECT_EQ(access(VIMSIC_BASE + VIMSIC_PAGE, 4, true, VIMSIC_IDS + 1, NULL), 0);
	EXPECT_EQ(stores, 1);
	/* vCPU 0, in software, as before: no page store, no flush */
	EXPECT_EQ(access(VIMSIC_BASE, 4, true, 7, NULL), 0);
	EXPECT_EQ(stores, 1);
	EXPECT_EQ(local_flushes, 3);	/* each exit to the HW target's page */
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eip[0], 1UL << 7);
	fake_mmio_store32 = NULL;
}

/* The state's moves (design-aia 3.7): hand-over loads the software file into
 * the guest file and empties it; a release reads the file back, and what was
 * raised while MOVING (into the software file) is kept. */
TEST(hand_over_and_take_back_keep_every_pending_bit)
{
	struct vcpu *v;
	struct imsic_file hw;

	vm_new(1, VM_IRQCHIP_AIA);
	gfiles_new();
	v = &tvm.vcpus[0];
	v->imsic.file.eidelivery = 1;
	v->imsic.file.eie[0] = (1UL << 3) | (1UL << 9);
	v->imsic.file.eip[0] = 1UL << 3;
	v->imsic.file.eip[2] = 1UL << 5;	/* identity 133, not enabled */
	v->imsic.file.eithreshold = 100;
	vimsic_hand_over(v, 0, 1);
	EXPECT_EQ(v->imsic.mode, VIMSIC_HW);
	EXPECT_EQ(v->imsic.gfile, 1);
	EXPECT_EQ(v->imsic.ghart, 0);
	EXPECT_FALSE(v->ext_irq);
	EXPECT_EQ(fake_imsic.g[1].eip[0], 1UL << 3);
	EXPECT_EQ(fake_imsic.g[1].eip[2], 1UL << 5);
	EXPECT_EQ(fake_imsic.g[1].eie[0], (1UL << 3) | (1UL << 9));
	EXPECT_EQ(fake_imsic.g[1].eithreshold, 100);
	EXPECT_EQ(fake_imsic.g[1].eidelivery, 1);
	EXPECT_EQ(v->imsic.file.eip[0], 0);
	EXPECT_EQ(v->imsic.file.eidelivery, 0);
	/* the guest claims 3 in its file; then a release begins */
	fake_imsic.g[1].eip[0] = 0;
	vimsic_set_moving(v);
	vimsic_inject(v, 9);		/* an MSI while MOVING: software file */
	EXPECT_EQ(stores, 0);
	imsic_gfile_read_clear(1, 255, &hw);
	vimsic_take_back(v, &hw);
	EXPECT_EQ(v->imsic.mode, VIMSIC_SW);
	EXPECT_EQ(v->imsic.file.eip[0], 1UL << 9);
	EXPECT_EQ(v->imsic.file.eip[2], 1UL << 5);
	EXPECT_EQ(v->imsic.file.eie[0], (1UL << 3) | (1UL << 9));
	EXPECT_EQ(v->imsic.file.eithreshold, 100);
	EXPECT_EQ(v->imsic.file.eidelivery, 1);
	EXPECT_TRUE(v->ext_irq);	/* 9 is enabled, below the threshold */
	EXPECT_EQ(kicks[0], 1);		/* its signal rose: it may be waiting */
	EXPECT_EQ(fake_imsic.g[1].eip[0], 0);	/* the file left zero */
	EXPECT_EQ(fake_imsic.g[1].eidelivery, 0);
	fake_mmio_store32 = NULL;
}

/* ---- snapshot version 7: the IMSIC record and the aplic device ---- */

static uint32_t aplic_read(uint32_t off)
{
	uint64_t v = 0;

	EXPECT_EQ(access(VAPLIC_BASE + off, 4, false, 0, &v), 0);
	return (uint32_t)v;
}

/* vCPU 0's file: identities pending but masked (9 and 40 above the
 * threshold, 195 not enabled), bit 0 and an identity past 255 that the file
 * cannot hold; vCPU 1's: 66 pending and enabled (its signal), 70 pending. The
 * APLIC: source 10 level-high to vCPU 1 identity 33, enabled, its input high,
 * pending with IE off; source 3 edge, pending, not enabled. */
static void aia_state(void)
{
	struct imsic_file *f0 = &tvm.vcpus[0].imsic.file, *f1 = &tvm.vcpus[1].imsic.file;

	f0->eidelivery = 1;
	f0->eithreshold = 5;
	f0->eip[0] = (1UL << 9) | (1UL << 40) | 1;
	f0->eie[0] = (1UL << 9) | (1UL << 40);
	f0->eip[3] = 1UL << 3;
	f0->eip[5] = 1;
	f1->eidelivery = 1;
	f1->eip[1] = (1UL << 2) | (1UL << 6);
	f1->eie[1] = 1UL << 2;
	f1->eie[31] = 1UL << 63;
	tvm.vcpus[0].g.csr.vsiselect = 0x72;
	aplic_write(APLIC_SOURCECFG_OFF(10), 6);
	aplic_write(APLIC_TARGET_OFF(10), (1U << 18) | 33);
	aplic_write(APLIC_SETIENUM_OFF, 10);
	virq_set_level(&tvm, 10, true);
	aplic_write(APLIC_SOURCECFG_OFF(3), 4);
	aplic_write(APLIC_TARGET_OFF(3), 7);
	aplic_write(APLIC_SETIPNUM_OFF, 3);
}

TEST(vimsic_record_and_vaplic_state_round_trip)
{
	struct snap_config c = { .features = SNAP_FEAT_AIA };
	struct snap_rec_imsic r[2];
	uint8_t state[sizeof(struct snap_dev_aplic)];
	uint32_t off;

	vm_new(2, VM_IRQCHIP_AIA);
	aia_state();
	EXPECT_EQ(aplic_read(APLIC_SETIP0_OFF), (1U << 10) | (1U << 3));
	for (unsigned int i = 0; i < 2; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		vimsic_record.save(&tvm.vcpus[i], &r[i]);
		EXPECT_TRUE(vimsic_record.check(&r[i], &c, &off) == NULL);
		EXPECT_EQ(r[i].imsic_nr_ids, VIMSIC_IDS);
		EXPECT_EQ(r[i].imsic_eidelivery, 1);
	}
	EXPECT_EQ(r[0].imsic_eithreshold, 5);
	EXPECT_EQ(r[0].imsic_eip[0], (1UL << 9) | (1UL << 40));	/* identity 0 never */
	EXPECT_EQ(r[0].imsic_eip[3], 1UL << 3);
	EXPECT_EQ(r[0].imsic_eip[5], 0);			/* identity 320: no such */
	EXPECT_EQ(r[1].imsic_eie[31], 0);
	EXPECT_EQ(r[1].imsic_eip[1], (1UL << 2) | (1UL << 6));
	EXPECT_TRUE(aplic_ops.present(&tvm));
	aplic_ops.save(&tvm, state);
	EXPECT_TRUE(aplic_ops.check(&tvm, state, &off) == NULL);

	/* into a fresh VM: the same files, the same APLIC, ext_irq from the file */
	vm_new(2, VM_IRQCHIP_AIA);
	tvm.cfg.imsic_ids = 0;		/* the record says it */
	for (unsigned int i = 0; i < 2; i++)
		vimsic_record.load(&tvm.vcpus[i], &r[i]);
	aplic_ops.load(&tvm, state);
	EXPECT_EQ(tvm.cfg.imsic_ids, VIMSIC_IDS);
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eithreshold, 5);
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eip[0], (1UL << 9) | (1UL << 40));
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eie[0], (1UL << 9) | (1UL << 40));
	EXPECT_EQ(tvm.vcpus[0].imsic.file.eip[3], 1UL << 3);
	EXPECT_FALSE(tvm.vcpus[0].ext_irq);		/* all masked */
	EXPECT_TRUE(tvm.vcpus[1].ext_irq);		/* 66 */
	EXPECT_EQ(kicks[0] + kicks[1], 0);		/* a load kicks nobody */
	EXPECT_EQ(aplic_read(APLIC_SOURCECFG_OFF(10)), 6);
	EXPECT_EQ(aplic_read(APLIC_TARGET_OFF(10)), (1U << 18) | 33);
	EXPECT_EQ(aplic_read(APLIC_SETIP0_OFF), (1U << 10) | (1U << 3));
	EXPECT_EQ(aplic_read(APLIC_SETIE0_OFF), 1U << 10);
	EXPECT_EQ(aplic_read(APLIC_IN_CLRIP0_OFF), 1U << 10);
	/* and it works on: IE sends source 10's MSI to vCPU 1's file */
	aplic_write(APLIC_DOMAINCFG_OFF, 1U << 8);
	EXPECT_EQ(tvm.vcpus[1].imsic.file.eip[0], 1UL << 33);
	EXPECT_EQ(aplic_read(APLIC_SETIP0_OFF), 1U << 3);
}

TEST(vimsic_record_rules)
{
	struct snap_config aia = { .features = SNAP_FEAT_AIA }, plic = { .features = 0 };
	struct snap_rec_imsic r, bad, zero;
	uint32_t off;

	vm_new(2, VM_IRQCHIP_AIA);
	aia_state();
	memset(&r, 0, sizeof(r));
	vimsic_record.save(&tvm.vcpus[0], &r);
	EXPECT_TRUE(vimsic_record.check(&r, &aia, &off) == NULL);
	/* an AIA VM's record in a PLIC VM, and a PLIC VM's (zero) in an AIA VM */
	EXPECT_TRUE(vimsic_record.check(&r, &plic, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_rec_imsic, imsic_nr_ids));
	memset(&zero, 0, sizeof(zero));
	EXPECT_TRUE(vimsic_record.check(&zero, &plic, &off) == NULL);
	EXPECT_TRUE(vimsic_record.check(&zero, &aia, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_rec_imsic, imsic_nr_ids));
	/* identity counts: 63..2047, (n & 63) == 63 */
	bad = r; bad.imsic_nr_ids = 63;
	bad.imsic_eip[3] = 0;			/* 195 is past 63 */
	EXPECT_TRUE(vimsic_record.check(&bad, &aia, &off) == NULL);
	bad = r; bad.imsic_nr_ids = 63;
	EXPECT_TRUE(vimsic_record.check(&bad, &aia, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_rec_imsic, imsic_eip[3]));
	bad = r; bad.imsic_nr_ids = 128;
	EXPECT_TRUE(vimsic_record.check(&bad, &aia, &off) != NULL);
	bad = r; bad.imsic_nr_ids = 4095;
	EXPECT_TRUE(vimsic_record.check(&bad, &aia, &off) != NULL);
	/* the threshold, the bits of identity 0 and past nr_ids */
	bad = r; bad.imsic_eithreshold = 256;
	EXPECT_TRUE(vimsic_record.check(&bad, &aia, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_rec_imsic, imsic_eithreshold));
	bad = r; bad.imsic_eithreshold = 255;
	EXPECT_TRUE(vimsic_record.check(&bad, &aia, &off) == NULL);
	bad = r; bad.imsic_eie[0] |= 1;
	EXPECT_TRUE(vimsic_record.check(&bad, &aia, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_rec_imsic, imsic_eie[0]));
	bad = r; bad.imsic_eip[4] = 1;		/* identity 256 */
	EXPECT_TRUE(vimsic_record.check(&bad, &aia, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_rec_imsic, imsic_eip[4]));
	bad = r; bad.imsic_eip[3] = 1UL << 63;	/* identity 255 */
	EXPECT_TRUE(vimsic_record.check(&bad, &aia, &off) == NULL);
	/* a PLIC VM: delivery off; vsiselect 0 where Smstateen keeps it so */
	bad = zero; bad.imsic_eidelivery = 1;
	EXPECT_TRUE(vimsic_record.check(&bad, &plic, &off) != NULL);
	bad = zero; bad.vsiselect = 0x70;
	hart_caps.smstateen = false;
	EXPECT_TRUE(vimsic_record.check(&bad, &plic, &off) == NULL);
	hart_caps.smstateen = true;
	EXPECT_TRUE(vimsic_record.check(&bad, &plic, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_rec_imsic, vsiselect));
	EXPECT_TRUE(vimsic_record.check(&r, &aia, &off) == NULL);	/* an AIA VM's: any */
	hart_caps.smstateen = false;
	/* every file of a VM has vCPU 0's identity count */
	EXPECT_TRUE(vimsic_record_fits(&tvm, 0, &r, &off) == NULL);
	EXPECT_TRUE(vimsic_record_fits(&tvm, 1, &r, &off) == NULL);
	bad = r; bad.imsic_nr_ids = 63;
	EXPECT_TRUE(vimsic_record_fits(&tvm, 1, &bad, &off) != NULL);
	EXPECT_EQ(off, offsetof(struct snap_vcpu, imsic.imsic_nr_ids));
	/* a PLIC VM has no APLIC: its device is all zero and never loaded */
	vm_new(1, VM_IRQCHIP_PLIC);
	EXPECT_FALSE(aplic_ops.present(&tvm));
}
