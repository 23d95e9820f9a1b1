/* SPDX-License-Identifier: MIT */
/* Emulated devices each VM gets: a 16550 UART wired to a PLIC, and a VM
 * generation ID. Each model keeps its guest-visible state in one plain
 * struct (no pointers, no locks) beside its lock: the struct generated from
 * its table in include/abi/snapshot_devices.h, so that the snapshot code
 * checks, masks and saves it with that table and the model's hooks, and
 * knows no device. */
#ifndef HYP_VDEV_H
#define HYP_VDEV_H
#include <types.h>
#include <aplic_model.h>
#include <atomic.h>
#include <guest_map.h>
#include <snap_table.h>

struct vm;
struct vcpu;
struct mmio_region;

#define VUART_RX_FIFO	SNAP_UART_RX_FIFO	/* received bytes the guest has not read yet */
#define VPLIC_NR_SRC	SNAP_PLIC_SOURCES	/* sources 1..31 */
#define VPLIC_MAX_CTX	SNAP_PLIC_CONTEXTS	/* one S-mode context per vCPU */

/* struct snap_dev_uart16550: ier, lcr, mcr, scr, fcr, dll, dlm; thre_pending
 * (the THR-empty interrupt condition, cleared by an IIR read); irq_level
 * (what the UART drives onto its PLIC line); rx_head, rx_tail (free-running:
 * rx_head - rx_tail bytes queued) and the ring rx. */
struct vuart {
	struct spinlock lock;
	struct snap_dev_uart16550 s;
};

/* struct snap_dev_plic: priority, level (device lines, a bit per source),
 * pending, claimed (in service: not pending again until completed), enable
 * and threshold per context. */
struct vplic {
	struct spinlock lock;
	struct snap_dev_plic s;
	/* the guest's read-only view of the enable words, or NULL (vplic.c) */
	uint32_t *enable_page;
};

/* The APLIC of an AIA VM (vaplic.c): struct aplic_state (aplic_model.h), the
 * layout of struct snap_dev_aplic (the aplic device of snapshot version 7,
 * vaplic.c asserts it field by field). */
struct vaplic {
	struct spinlock lock;
	struct aplic_state s;
};

/* struct snap_dev_vmgenid: id (what the guest reads), level (interrupt line
 * up: a new ID not read yet). */
struct vmgenid {
	struct spinlock lock;
	struct snap_dev_vmgenid s;
};

/* One device model as the rest of the hypervisor sees it. */
struct vdev_ops {
	const char *name;	/* its DEVICE sections': SNAP_DEVICES' name */
	uint32_t state_size;	/* sizeof its struct snap_dev_<name> */
	/* its table: the rows of SNAP_DEV_<NAME> (VDEV_STATE() fills these) */
	const struct snap_field *fields;
	size_t nr_fields;
	/** reg() - add its MMIO window (once, at VM creation). */
	int (*reg)(struct vm *vm);
	/** reset() - power-on state (VM boot and reboot). */
	void (*reset)(struct vm *vm);
	/** save() - copy the guest-visible state out (the VM is paused). */
	void (*save)(struct vm *vm, void *out);
	/** check() - what its table cannot say (NULL: nothing): NULL if @state,
	 *  whose table's rules hold, is one @vm's model can hold; else why not,
	 *  naming the field, and *@offset: the field's in @state. */
	const char *(*check)(const struct vm *vm, const void *state, uint32_t *offset);
	/** load() - install a state its table and check() accepted. */
	void (*load)(struct vm *vm, const void *in);
	/** present() - @vm has this model (NULL: every VM has). A stream
	 *  carries every model; one the VM lacks (the interrupt controller of
	 *  the other kind) is saved all zero, must be all zero, and is not
	 *  loaded. */
	bool (*present)(const struct vm *vm);
};

/* The state part of a model's struct vdev_ops: @model's name and struct, and
 * @rows, its table as struct snap_field rows. */
#define VDEV_STATE(model, rows) 	.name = #model, .state_size = sizeof(struct snap_dev_##model), 	.fields = (rows), .nr_fields = ARRAY_SIZE(rows)

/* Each model's ops, named for it: uart16550_ops, plic_ops, vmgenid_ops,
 * aplic_ops. */
#define VDEV_OPS_DECL(index, NAME, name)	extern const struct vdev_ops name##_ops;
SNAP_DEVICES(VDEV_OPS_DECL)
/* every device model, in SNAP_DEVICES' order (snapshots use it) */
extern const struct vdev_ops *const vdev_all[];
extern const unsigned int vdev_count;

/** vuart_input() - host keyboard bytes for @vm's UART; returns how many fitted. */
size_t vuart_input(struct vm *vm, const char *buf, size_t len);
/** vuart_read_input() - take up to @len received bytes (SBI DBCN read). */
size_t vuart_read_input(struct vm *vm, char *buf, size_t len);
/** vplic_set_level() - drive source @irq's line of the PLIC model. */
void vplic_set_level(struct vm *vm, unsigned int irq, bool level);
/** virq_set_level() - drive device line @irq of @vm's interrupt controller
 *  (the PLIC, or the APLIC of an AIA VM): what every device model calls. */
void virq_set_level(struct vm *vm, unsigned int irq, bool level);

/* AIA VMs (docs/design-aia.md 3.6, 3.10): the vIMSIC window, the IMSIC CSR
 * exits of vCPUs in software, and the APLIC in MSI mode. */
/** vimsic_mmio_register() - add the vIMSIC window (VM creation). */
int vimsic_mmio_register(struct vm *vm);
/** vimsic_csr_exit() - a virtual-instruction exit for @insn: 1 if it was the
 *  guest's sireg/stopei access, emulated on its software file (the caller
 *  moves pc past it); -1 if that access is illegal (the caller injects an
 *  illegal instruction); 0 if @insn is no such access or the VM is not AIA. */
int vimsic_csr_exit(struct vcpu *v, unsigned long insn);
/** vaplic_register()/vaplic_reset() - the APLIC window (creation; nothing for
 *  a PLIC VM), its power-on state (boot and reboot): aplic_ops' reg/reset. */
int vaplic_register(struct vm *vm);
void vaplic_reset(struct vm *vm);
/** vaplic_set_level() - drive source @irq's line of the APLIC. */
void vaplic_set_level(struct vm *vm, unsigned int irq, bool level);

/* Emulated device windows in guest physical space (hyp/vdev/mmio.c). */
/** vm_mmio_register() - add an emulated window; fails if it overlaps RAM or another. */
int vm_mmio_register(struct vm *vm, const struct mmio_region *r);
/** vm_mmio_find() - the window that holds @gpa, or NULL. */
struct mmio_region *vm_mmio_find(struct vm *vm, gpa_t gpa);
#endif
