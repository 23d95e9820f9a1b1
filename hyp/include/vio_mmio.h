/* SPDX-License-Identifier: MIT */
/* The virtio-mmio version 2 transport of one guest virtio device (virtio 1.2
 * section 4.2.2; the rules: docs/virtio.md, "The virtio-mmio transport"),
 * generic over the device kind (hyp/vdev/vblk.c, vnet.c). A VM has up to
 * VIO_MMIO_SLOTS of them at QEMU virt's slots; a VM without any is unchanged
 * (no window, no DT node).
 *
 * A device is one struct vio_dev (its lock, the guest-visible transport
 * state, its queues) embedded first in its kind's struct, allocated when it
 * is attached and freed when its VM is destroyed. Guest accesses, backend
 * completions and frames from the switch all take the device's lock; the
 * lock is never held while calling out of the device (a backend's submit, a
 * switch port's tx), so two devices never wait for each other. */
#ifndef HYP_VIO_MMIO_H
#define HYP_VIO_MMIO_H
#include <types.h>
#include <atomic.h>
#include <guest_map.h>
#include <virtq.h>
#include <abi/snapshot_devices.h>

struct vm;
struct vio_dev;
struct mmio_access;
struct snap_field;
struct snap_vio_transport;

#define VIO_MAX_QUEUES		2	/* net: rx and tx; blk: one */
#define VIO_CONFIG_MAX		32	/* bytes of config space a kind may have */

/* A device kind's part in snapshots and migrations (docs/snapshot-format.md,
 * "VIRTIO"): its model's table (include/abi/snapshot_devices.h) and hooks. */
struct vio_model {
	const char *name;		/* SNAP_VIO_MODELS' name */
	uint32_t state_size;		/* sizeof its struct snap_dev_<name> */
	const struct snap_field *fields;
	size_t nr_fields;
	/** check() - what its table cannot say: NULL if @state, whose table's
	 *  rules hold, is one a device of this model in @vm can hold (the
	 *  state a guest's own register writes can reach, drained: no request
	 *  in flight); else why not, and *@offset the field's in @state. */
	const char *(*check)(const struct vm *vm, const void *state, uint32_t *offset);
	/** save() - the device's state (takes its lock; the VM paused, its
	 *  devices drained: vio_drained()). Host fields (a disk's PCI device,
	 *  a NIC's switch and port counters) are the caller's. */
	void (*save)(struct vio_dev *d, void *state);
	/** load() - install a state check() accepted into @d, attached (its
	 *  host side bound) and not yet run; raises its PLIC line if an
	 *  interrupt is pending. */
	void (*load)(struct vio_dev *d, const void *state);
};

/* The models, named for SNAP_VIO_MODELS' rows: virtio_blk_model (vblk.c),
 * virtio_net_model (vnet.c); every one of them in vio_models[] (devices.c). */
#define VIO_MODEL_DECL(NAME, name, id)	extern const struct vio_model name##_model;
SNAP_VIO_MODELS(VIO_MODEL_DECL)
extern const struct vio_model *const vio_models[];
extern const unsigned int vio_model_count;

/* What a device kind gives the transport. */
struct vio_kind {
	const char *name;
	uint32_t device_id;		/* VIRTIO_ID_* */
	unsigned int nr_queues;		/* <= VIO_MAX_QUEUES */
	uint32_t config_size;		/* <= VIO_CONFIG_MAX */
	/** config() - the config space as it is now, @config_size bytes
	 *  (little-endian); lock held. */
	void (*config)(struct vio_dev *d, uint8_t *out);
	/** notify() - the driver notified queue @qi (< nr_queues) with
	 *  DRIVER_OK set. Called WITHOUT the lock: the kind takes it. */
	void (*notify)(struct vio_dev *d, unsigned int qi);
	/** reset() - device reset (Status 0, the VM's reboot or destroy) or,
	 *  @qi < nr_queues, that one queue's (QueueReady 0): forget the work
	 *  taken from the queue(s); lock held, the queues are reset after. */
	void (*reset)(struct vio_dev *d, unsigned int qi);
	/** busy() - a host device still works on a request of this device
	 *  (it may write guest RAM): the VM's memory must not be freed. */
	bool (*busy)(struct vio_dev *d);
	/** drained() - the device holds no request (every chain it took is
	 *  back in the used ring, its interrupt raised); it finishes what it
	 *  can first (publishes, hands out what waited). Lock not held. */
	bool (*drained)(struct vio_dev *d);
	const struct vio_model *model;
};

/* Counters of a device (or of one direction of it). */
struct vio_stats {
	uint64_t requests;	/* requests (frames) done */
	uint64_t bytes;		/* data bytes they moved */
	uint64_t errors;	/* refused: malformed, or failed by the host */
	uint64_t drops;		/* frames dropped: no buffer, no link, too big */
};

/* The transport's guest-visible state: plain data, no pointers. */
struct vio_mmio_state {
	uint64_t device_features;	/* offered (fixed at attach) */
	uint64_t driver_features;	/* accepted by the driver */
	uint32_t status;		/* device status (VIRTIO_STATUS_*) */
	uint32_t device_features_sel, driver_features_sel;
	uint32_t queue_sel;
	uint32_t interrupt_status;	/* VIRTIO_MMIO_INT_* not yet acknowledged */
	uint32_t config_generation;
	bool irq_level;			/* what the device drives onto its PLIC line */
	struct virtq q[VIO_MAX_QUEUES];
};

struct vio_dev {
	struct spinlock lock;
	struct vio_mmio_state s;
	/* host side, fixed at attach */
	const struct vio_kind *kind;
	struct vm *vm;
	unsigned int slot;		/* window VIO_MMIO_BASE + slot * stride */
	uint64_t alloc_size;		/* bytes of the block it lives in */
	bool frozen;			/* the VM is paused for its state: take no chain */
	/* the guest's read-only view of the window, or NULL (vio_mmio.c,
	 * "The read-only window") */
	volatile uint32_t *view;
	struct virtq_chain chain;	/* a taken chain (lock held) */
};

/** vio_mmio_attach() - put @d (zeroed, its kind's fields filled) in @slot of
 *  @vm: queues of @queue_max entries, chains of at most @chain_max
 *  descriptors, offering @features (VERSION_1 is added). Adds the VM's
 *  virtio window on the first attach. -HYP_EINVAL: bad slot or kind,
 *  -HYP_EEXIST: the slot is taken. Before the VM first boots: its DT names
 *  the slots attached when it is built. */
int vio_mmio_attach(struct vm *vm, unsigned int slot, struct vio_dev *d,
		    const struct vio_kind *kind, uint64_t features,
		    const uint16_t *queue_max, const uint16_t *chain_max);
/** vio_mmio_handle() - the MMIO handler of the virtio window (every slot):
 *  never faults the guest; a bad access is ignored and reads 0. */
int vio_mmio_handle(struct vm *vm, void *priv, struct mmio_access *a);

/* For the device kinds, with the device's lock held. */
/** vio_mmio_driver_ok() - the driver set DRIVER_OK (and no reset since). */
bool vio_mmio_driver_ok(const struct vio_dev *d);
/** vio_mmio_has_feature() - the driver accepted feature bit @bit. */
bool vio_mmio_has_feature(const struct vio_dev *d, unsigned int bit);
/** vio_mmio_interrupt() - raise InterruptStatus @bits (and the line). */
void vio_mmio_interrupt(struct vio_dev *d, uint32_t bits);
/** vio_mmio_used() - chains of queue @qi were returned: a used buffer
 *  notification unless the driver suppressed it. */
void vio_mmio_used(struct vio_dev *d, unsigned int qi);
/** vio_mmio_queue_fault() - queue @qi faulted (its q->fault, or @why if it
 *  has none yet: a chain the device cannot use): DEVICE_NEEDS_RESET, and a
 *  configuration change notification once DRIVER_OK is set. */
void vio_mmio_queue_fault(struct vio_dev *d, unsigned int qi, enum virtq_fault why);
/** vio_mmio_config_changed() - the config space changed: a new
 *  ConfigGeneration and a configuration change notification. */
void vio_mmio_config_changed(struct vio_dev *d);

/* Snapshots of the transport, the first rows of each model's state
 * (SNAP_VIO_TRANSPORT); for the kinds' model hooks. */
/** vio_mmio_save_state() - @d's transport into @t. Lock held. */
void vio_mmio_save_state(const struct vio_dev *d, struct snap_vio_transport *t);
/** vio_mmio_check_state() - NULL if @t is a transport state a device of
 *  @kind in @vm, offering @offered, can hold with nothing in flight (queues
 *  of at most @queue_max entries); else why not, *@offset the field's. */
const char *vio_mmio_check_state(const struct vm *vm, const struct vio_kind *kind,
				 const uint16_t *queue_max, uint64_t offered,
				 const struct snap_vio_transport *t, uint32_t *offset);
/** vio_mmio_load_state() - install a checked @t into @d (its queues' limits
 *  stay) and drive its line as InterruptStatus says. Lock held. */
void vio_mmio_load_state(struct vio_dev *d, const struct snap_vio_transport *t);

/* For the VM's lifecycle. */
/** vio_freeze() - @vm is pausing so its state can be taken (a snapshot, a
 *  migration's stop-and-copy, an operator's pause): its devices take no
 *  new chain; what they took is finished (vio_drained()). */
void vio_freeze(struct vm *vm);
/** vio_drained() - every device of @vm holds no request: what it took is in
 *  the used rings. Hands out and publishes what it can meanwhile. */
bool vio_drained(struct vm *vm);
/** vio_resume() - @vm runs again (a resume, a restore, a migration's
 *  arrival): its devices take chains again and every queue is rescanned,
 *  so a request made available while they were frozen (or before a
 *  snapshot) is served without a new notify. */
void vio_resume(struct vm *vm);
/** vio_reset_all() - reset every device of @vm (reboot), frozen no more. */
void vio_reset_all(struct vm *vm);
/** vio_quiesce() - reset every device of @vm and say whether a host device
 *  still works on one of its requests; destroy waits for true. */
bool vio_quiesce(struct vm *vm);
/** vio_detach_all() - free @vm's devices (destroy, after vio_quiesce()). */
void vio_detach_all(struct vm *vm);
#endif
