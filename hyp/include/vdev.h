/* SPDX-License-Identifier: MIT */
/* Emulated devices each VM gets: a 16550 UART wired to a PLIC. Each model
 * keeps its guest-visible state in one plain struct (no pointers, no locks)
 * beside its lock, and offers save/load hooks over that struct, so snapshot
 * code needs to know no device. */
#ifndef HYP_VDEV_H
#define HYP_VDEV_H
#include <types.h>
#include <atomic.h>
#include <guest_map.h>

struct vm;
struct mmio_region;

#define VUART_RX_FIFO	256	/* received bytes the guest has not read yet */
#define VPLIC_NR_SRC	32	/* sources 1..31 */
#define VPLIC_MAX_CTX	8	/* one S-mode context per vCPU */

struct vuart_state {
	uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
	uint8_t thre_pending;	/* THR-empty interrupt condition, cleared by an IIR read */
	uint8_t irq_level;	/* what the UART drives onto its PLIC line */
	uint8_t pad[7];
	uint32_t rx_head, rx_tail;	/* free-running; rx_head - rx_tail bytes queued */
	uint8_t rx[VUART_RX_FIFO];
};

struct vuart {
	struct spinlock lock;
	struct vuart_state s;
};

struct vplic_state {
	uint32_t priority[VPLIC_NR_SRC];
	uint32_t level;			/* device lines (bit per source) */
	uint32_t pending;
	uint32_t claimed;		/* in service: not pending again until completed */
	uint32_t enable[VPLIC_MAX_CTX];
	uint32_t threshold[VPLIC_MAX_CTX];
};

struct vplic {
	struct spinlock lock;
	struct vplic_state s;
};

struct vmgenid_state {
	uint8_t id[16];		/* the VM generation ID the guest reads */
	uint8_t level;		/* interrupt line up: a new ID not read yet */
	uint8_t pad[7];
};

struct vmgenid {
	struct spinlock lock;
	struct vmgenid_state s;
};

/* One device model as the rest of the hypervisor sees it. */
struct vdev_ops {
	const char *name;
	uint32_t state_size;	/* bytes save() writes and load() reads */
	/** reg() - add its MMIO window (once, at VM creation). */
	int (*reg)(struct vm *vm);
	/** reset() - power-on state (VM boot and reboot). */
	void (*reset)(struct vm *vm);
	/** save() - copy the guest-visible state out (the VM is paused). */
	void (*save)(struct vm *vm, void *out);
	/** load() - check and install saved state; -HYP_EINVAL names nothing
	 *  installed when any field is out of range. */
	int (*load)(struct vm *vm, const void *in);
};

extern const struct vdev_ops vuart_ops, vplic_ops, vmgenid_ops;
/* every device model, in a stable order (snapshots use it) */
extern const struct vdev_ops *const vdev_all[];
extern const unsigned int vdev_count;

/** vuart_input() - host keyboard bytes for @vm's UART; returns how many fitted. */
size_t vuart_input(struct vm *vm, const char *buf, size_t len);
/** vuart_read_input() - take up to @len received bytes (SBI DBCN read). */
size_t vuart_read_input(struct vm *vm, char *buf, size_t len);
/** vplic_set_level() - drive source @irq's line. */
void vplic_set_level(struct vm *vm, unsigned int irq, bool level);

/* Emulated device windows in guest physical space (hyp/vdev/mmio.c). */
/** vm_mmio_register() - add an emulated window; fails if it overlaps RAM or another. */
int vm_mmio_register(struct vm *vm, const struct mmio_region *r);
/** vm_mmio_find() - the window that holds @gpa, or NULL. */
struct mmio_region *vm_mmio_find(struct vm *vm, gpa_t gpa);
#endif
