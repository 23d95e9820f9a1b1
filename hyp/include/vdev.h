/* SPDX-License-Identifier: MIT */
/* Emulated devices each VM gets: a 16550 UART wired to a PLIC. State is plain
 * data (snapshot-ready); each model has its own lock. */
#ifndef HYP_VDEV_H
#define HYP_VDEV_H
#include <types.h>
#include <atomic.h>

struct vm;

/* Guest physical layout (same places as on QEMU virt, so Linux needs nothing new). */
#define VUART_BASE	0x10000000UL
#define VUART_SIZE	0x100UL
#define VUART_IRQ	10
#define VPLIC_BASE	0x0c000000UL
#define VPLIC_SIZE	0x4000000UL
#define VPLIC_NR_SRC	32		/* sources 1..31 */
#define VPLIC_MAX_CTX	8		/* one S-mode context per vCPU */

struct vuart {
	struct spinlock lock;
	uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
	bool thre_pending;	/* THR-empty interrupt condition, cleared by an IIR read */
	bool irq_level;		/* what we last drove onto the PLIC line */
};

struct vplic {
	struct spinlock lock;
	uint32_t priority[VPLIC_NR_SRC];
	uint32_t level;			/* device lines (bit per source) */
	uint32_t pending;
	uint32_t claimed;		/* in service: not pending again until completed */
	uint32_t enable[VPLIC_MAX_CTX];
	uint32_t threshold[VPLIC_MAX_CTX];
};

/** *_register() - add the model's MMIO window (once, at VM creation). */
int vplic_register(struct vm *vm);
int vuart_register(struct vm *vm);
/** *_reset() - power-on state (VM boot and reboot; the VM is off every hart). */
void vplic_reset(struct vm *vm);
void vuart_reset(struct vm *vm);
/** vuart_input_ready() - host input was queued for @vm: update the RX interrupt. */
void vuart_input_ready(struct vm *vm);
/** vplic_set_level() - drive source @irq's line. */
void vplic_set_level(struct vm *vm, unsigned int irq, bool level);
#endif
