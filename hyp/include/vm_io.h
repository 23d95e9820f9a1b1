/* SPDX-License-Identifier: MIT */
/* A VM's I/O devices from its description (hyp/lifecycle/vm_io.c): each disk
 * a virtio-blk model over the host disk the launcher gave it, each NIC a
 * virtio-net model on a port of its switch (docs/virtio.md, "The I/O path"). */
#ifndef HYP_VM_IO_H
#define HYP_VM_IO_H
#include <vio_mmio.h>
#include <vm_lifecycle.h>

struct vm;

/** vm_io_attach() - give @vm the disks and NICs @d names, in guest slots
 *  0.. (disks first, so the first disk is the guest's vda). On failure
 *  nothing of it stays attached and *@why says why: a host disk that is not
 *  there, is another VM's, or a switch that does not exist. VM creation,
 *  under its lock. */
int vm_io_attach(struct vm *vm, const struct vm_desc *d, const char **why);
/** vm_io_detach() - take @vm's NICs off their switches (waits for frames
 *  being delivered to them) and give its host disks back. Before its device
 *  models are freed (vio_detach_all()), after vio_quiesce(). */
void vm_io_detach(struct vm *vm);

/** vm_io_add_disk() - a restore or an incoming migration gives @vm (not
 *  running) a disk over the host disk @dd names, in @slot: the next disk
 *  slot, before any NIC. -HYP_E* and *@why as vm_io_attach(). */
int vm_io_add_disk(struct vm *vm, unsigned int slot, const struct vm_disk_desc *dd,
		   const char **why);
/** vm_io_add_nic() - the same for a NIC on the switch @nd names, with its
 *  MAC: the slot after the disks and NICs it has. -HYP_EEXIST: the MAC is
 *  on that switch already (a device made meanwhile goes with the VM's
 *  destroy). */
int vm_io_add_nic(struct vm *vm, unsigned int slot, const struct vm_nic_desc *nd,
		  const char **why);
/** vm_io_nic_port() - NIC @nic's switch port (its counters), or NULL. */
struct vswitch_port *vm_io_nic_port(struct vm *vm, unsigned int nic);
/** vm_io_disk(), vm_io_nic() - what @vm's disk @disk (NIC @nic) was given,
 *  or NULL: its host disk, its switch and MAC. */
const struct vm_disk_desc *vm_io_disk(const struct vm *vm, unsigned int disk);
const struct vm_nic_desc *vm_io_nic(const struct vm *vm, unsigned int nic);

/* One device of a VM as carapace-ctl shows it (vm_io_list()). */
struct vm_io_info {
	unsigned int slot;		/* guest virtio-mmio slot */
	bool is_net;
	/* a disk */
	uint8_t pci_dev;		/* its host virtio-blk-pci at 00:pci_dev.0 */
	bool read_only;
	uint64_t sectors;
	struct vio_stats blk;
	/* a NIC */
	unsigned int nic;		/* its index: eth0, eth1 */
	char sw[VSWITCH_NAME_LEN];
	uint8_t mac[6];
	bool attached;			/* on its switch (carapace-ctl nic ... detach) */
	struct vio_stats tx, rx;	/* guest-sent and guest-received frames */
	uint64_t spoofed;		/* of tx: dropped by the switch for their source MAC */
	/* either: the rate limit (0: none) and how often it held one back */
	uint64_t limit_ops;		/* a disk's requests, a NIC's sent frames, a second */
	uint64_t limit_bytes;		/* their bytes a second */
	uint64_t held;			/* requests or frames held back for tokens */
};

/* A NIC whose rate limit holds frames back is kicked (vnet_kick(), a few
 * frames, on the host hart) once this long has passed since the first was
 * held and none went out: a guest still sending sends them itself, on its
 * own hart; only one that waits for them needs the kick. */
#define VM_NIC_KICK_DELAY_US	10000

/** vm_io_poll() - hand out the requests of disks and the frames of NICs
 *  whose rate limit held them back, and completions posted while a disk's
 *  transport held its lock (host services, hart 0, every millisecond).
 *  Never waits for a device's lock: a busy one is kicked at the next poll. */
void vm_io_poll(void);
/** vm_io_list() - @vm's devices, at most @max, in slot order; how many. */
unsigned int vm_io_list(struct vm *vm, struct vm_io_info *out, unsigned int max);
/** vm_io_nic_set() - take NIC @nic of @vm off its switch (@attach false: the
 *  guest sees its link go down, nothing reaches or leaves it) or put it back.
 *  -HYP_ENOENT: no such NIC; -HYP_EEXIST: its MAC is on the switch again
 *  (another NIC took it meanwhile); 0 also when it was already so. */
int vm_io_nic_set(struct vm *vm, unsigned int nic, bool attach);
#endif
