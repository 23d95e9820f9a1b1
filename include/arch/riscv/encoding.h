/* SPDX-License-Identifier: MIT */
/* RISC-V CSR numbers, bit fields and cause codes: the only home of these numbers. */
#ifndef ARCH_RISCV_ENCODING_H
#define ARCH_RISCV_ENCODING_H

#ifdef __ASSEMBLER__
#define _UL(x) x
#else
#define _UL(x) x##UL
#endif
#define BIT(n) (_UL(1) << (n))

/* Supervisor CSRs */
#define CSR_SSTATUS	0x100
#define CSR_SIE		0x104
#define CSR_STVEC	0x105
#define CSR_SCOUNTEREN	0x106
#define CSR_SENVCFG	0x10a
#define CSR_SSCRATCH	0x140
#define CSR_SEPC	0x141
#define CSR_SCAUSE	0x142
#define CSR_STVAL	0x143
#define CSR_SIP		0x144
#define CSR_STIMECMP	0x14d
#define CSR_SATP	0x180
#define CSR_SSP		0x011	/* Zicfiss shadow-stack pointer (not banked for VS) */
#define CSR_CYCLE	0xc00
#define CSR_TIME	0xc01
#define CSR_INSTRET	0xc02
#define CSR_SSTATEEN0	0x10c
/* Ssaia (AIA spec, "CSRs"): the S-level interrupt file through an indirect window */
#define CSR_SISELECT	0x150
#define CSR_SIREG	0x151
#define CSR_STOPEI	0x15c
#define CSR_STOPI	0xdb0

/* Hypervisor CSRs */
#define CSR_HSTATUS	0x600
#define CSR_HEDELEG	0x602
#define CSR_HIDELEG	0x603
#define CSR_HIE		0x604
#define CSR_HTIMEDELTA	0x605
#define CSR_HCOUNTEREN	0x606
#define CSR_HGEIE	0x607
#define CSR_HENVCFG	0x60a
#define CSR_HSTATEEN0	0x60c
#define CSR_HTVAL	0x643
#define CSR_HIP		0x644
#define CSR_HVIP	0x645
#define CSR_HTINST	0x64a
#define CSR_HGATP	0x680
#define CSR_HGEIP	0xe12

/* Virtual supervisor CSRs */
#define CSR_VSSTATUS	0x200
#define CSR_VSIE	0x204
#define CSR_VSTVEC	0x205
#define CSR_VSSCRATCH	0x240
#define CSR_VSEPC	0x241
#define CSR_VSCAUSE	0x242
#define CSR_VSTVAL	0x243
#define CSR_VSIP	0x244
#define CSR_VSTIMECMP	0x24d
#define CSR_VSATP	0x280
#define CSR_HVICTL	0x609
#define CSR_VSISELECT	0x250
#define CSR_VSIREG	0x251
#define CSR_VSTOPEI	0x25c
#define CSR_VSTOPI	0xeb0

/* sstatus */
#define SR_SIE		BIT(1)
#define SR_SPIE		BIT(5)
#define SR_SPP		BIT(8)
#define SR_FS_SHIFT	13
#define SR_FS		(_UL(3) << 13)
#define SR_FS_INITIAL	(_UL(1) << 13)
#define SR_FS_CLEAN	(_UL(2) << 13)
#define SR_FS_DIRTY	(_UL(3) << 13)
#define SR_SUM		BIT(18)
#define SR_MXR		BIT(19)
#define SR_SPELP	BIT(23)	/* Zicfilp: ELP of the trapped context */
#define SR_SDT		BIT(24)
#define SR_UXL_SHIFT	32
#define SR_UXL		(_UL(3) << 32)
#define SR_UXL_64	(_UL(2) << 32)
#define SR_SD		(_UL(1) << 63)	/* read-only: FS (or VS, XS) is Dirty */

/* hcounteren: the counters VS/VU may read (CY cycle, TM time, IR instret) */
#define HCOUNTEREN_CY	BIT(0)
#define HCOUNTEREN_TM	BIT(1)
#define HCOUNTEREN_IR	BIT(2)

/* hstatus */
#define HSTATUS_VSBE	BIT(5)
#define HSTATUS_GVA	BIT(6)
#define HSTATUS_SPV	BIT(7)
#define HSTATUS_SPVP	BIT(8)
#define HSTATUS_HU	BIT(9)
#define HSTATUS_VTVM	BIT(20)
#define HSTATUS_VTW	BIT(21)
#define HSTATUS_VTSR	BIT(22)
#define HSTATUS_VGEIN_SHIFT	12
#define HSTATUS_VGEIN	(_UL(0x3f) << 12)	/* the guest interrupt file VS-level sees */
#define HSTATUS_VSXL_64	(_UL(2) << 32)

/* envcfg (menvcfg/henvcfg/senvcfg share the low layout) */
#define ENVCFG_FIOM	BIT(0)
#define ENVCFG_LPE	BIT(2)	/* Zicfilp */
#define ENVCFG_SSE	BIT(3)	/* Zicfiss */
#define ENVCFG_CBIE	(_UL(3) << 4)
#define ENVCFG_CBCFE	BIT(6)
#define ENVCFG_CBZE	BIT(7)
#define ENVCFG_ADUE	BIT(61)
#define ENVCFG_PBMTE	BIT(62)
#define ENVCFG_STCE	BIT(63)

/* stvec/vstvec MODE (bits 1:0): 0 Direct, 1 Vectored, 2 and 3 reserved */
#define TVEC_MODE_MASK	_UL(3)

/* counteren (scounteren/hcounteren): the cycle, time and instret bits */
#define COUNTEREN_CY	BIT(0)
#define COUNTEREN_TM	BIT(1)
#define COUNTEREN_IR	BIT(2)

#define HSTATEEN0_IMSIC	 BIT(58)	/* Ssaia: the guest file's CSRs at VS-level */
#define HSTATEEN0_AIA	 BIT(59)
#define HSTATEEN0_CSRIND BIT(60)
#define HSTATEEN0_ENVCFG BIT(62)
/* hvictl (Ssaia): IID 27:16, IPRIO 7:0. IID 9 with IPRIO non-zero makes
 * vstopi report a supervisor external interrupt while hstatus.VGEIN is 0 */
#define HVICTL_IID_SHIFT 16
#define HVICTL_IPRIO	 0xffUL
#define HSTATEEN0_SE0	 BIT(63)

/* hgatp */
#define HGATP_MODE_SHIFT	60
#define HGATP_MODE_SV39X4	_UL(8)
#define ATP_MODE_SHIFT		60	/* satp/vsatp MODE: Sv39 8, Sv48 9, Sv57 10 */
#define ATP_MODE_SV39		8UL
#define ATP_MODE_SV48		9UL
#define ATP_MODE_SV57		10UL
#define ATP_MODE_MASK		_UL(0xf)
#define HGATP_VMID_SHIFT	44
#define HGATP_VMID_MASK		_UL(0x3fff)
#define HGATP_PPN_MASK		_UL(0xfffffffffff)

/* The interrupt file registers behind siselect/vsiselect (IMSIC spec,
 * "Indirectly accessed interrupt-file registers"). On RV64 only the even
 * eip/eie numbers exist: register 2k holds identities 64k..64k+63. */
#define ISELECT_EIDELIVERY	0x70
#define ISELECT_EITHRESHOLD	0x72
#define ISELECT_EIP0		0x80
#define ISELECT_EIE0		0xc0
#define IMSIC_EIDELIVERY_ON	1
/* *topei: the top identity in bits 26:16 (its priority, the same number, in 10:0) */
#define TOPEI_ID_SHIFT		16
#define TOPEI_ID_MASK		_UL(0x7ff)

/* Interrupts (bit numbers in sip/hip/hvip) */
#define IRQ_S_SOFT	1
#define IRQ_VS_SOFT	2
#define IRQ_S_TIMER	5
#define IRQ_VS_TIMER	6
#define IRQ_S_EXT	9
#define IRQ_VS_EXT	10
#define IRQ_SGEI	12
#define MIP_SSIP	BIT(IRQ_S_SOFT)
#define MIP_VSSIP	BIT(IRQ_VS_SOFT)
#define MIP_STIP	BIT(IRQ_S_TIMER)
#define MIP_VSTIP	BIT(IRQ_VS_TIMER)
#define MIP_SEIP	BIT(IRQ_S_EXT)
#define MIP_VSEIP	BIT(IRQ_VS_EXT)
#define MIP_SGEIP	BIT(IRQ_SGEI)
#define VS_IRQ_MASK	(MIP_VSSIP | MIP_VSTIP | MIP_VSEIP)

/* Exception causes */
#define CAUSE_IRQ_FLAG			(_UL(1) << 63)
#define EXC_INST_MISALIGNED		0
#define EXC_INST_ACCESS			1
#define EXC_ILLEGAL_INST		2
#define EXC_BREAKPOINT			3
#define EXC_LOAD_MISALIGNED		4
#define EXC_LOAD_ACCESS			5
#define EXC_STORE_MISALIGNED		6
#define EXC_STORE_ACCESS		7
#define EXC_ECALL_U			8
#define EXC_ECALL_VS			10
#define EXC_INST_PAGE_FAULT		12
#define EXC_LOAD_PAGE_FAULT		13
#define EXC_STORE_PAGE_FAULT		15
#define EXC_SW_CHECK			18	/* Zicfilp/Zicfiss: tval 2 LP, 3 SS */
#define EXC_INST_GUEST_PAGE_FAULT	20
#define EXC_LOAD_GUEST_PAGE_FAULT	21
#define EXC_VIRTUAL_INST		22
#define EXC_STORE_GUEST_PAGE_FAULT	23

#define SWCHECK_TVAL_LANDING_PAD	2
#define SWCHECK_TVAL_SHADOW_STACK	3

/* G-stage / VS-stage PTE bits */
#define PTE_V	BIT(0)
#define PTE_R	BIT(1)
#define PTE_W	BIT(2)
#define PTE_X	BIT(3)
#define PTE_U	BIT(4)
#define PTE_G	BIT(5)
#define PTE_A	BIT(6)
#define PTE_D	BIT(7)
#define PTE_PPN_SHIFT	10

#define PAGE_SHIFT	12
#define PAGE_SIZE	(_UL(1) << PAGE_SHIFT)

#endif
