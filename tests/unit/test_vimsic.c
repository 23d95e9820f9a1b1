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
#include <imsic_file.h>
#include <mmio.h>
#include <vdev.h>
#include <vimsic.h>
#include <vm.h>
#include "test.h"

/* the IMSIC record's check reads it (a PLIC VM's vsiselect under Smstateen) */
struct hart_caps hart_caps;

static struct vm tvm;
static unsigned int kicks[VM_MAX_VCPUS];

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
