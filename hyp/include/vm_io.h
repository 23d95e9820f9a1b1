/* SPDX-License-Identifier: MIT */
/* A VM's I/O devices from its description (hyp/lifecycle/vm_io.c): each disk
 * a virtio-blk model over the host disk the launcher gave it, each NIC a
 * virtio-net model on a port of its switch (docs/virtio.md, "The I/O path"). */
#ifndef HYP_VM_IO_H
#define HYP_VM_IO_H
#include <hostblk.h>
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
/* ---- A disk's content, for snapshots and migrations ----
 * Whole blocks read from the guest's disk as it is, or written into the
 * host disk a restore bound, through the same host disk as the guest's
 * requests and beside them (no rate limit: the host's own work). */

/* One such request; its buffer is the caller's host memory, never guest RAM. */
struct vm_disk_req {
	struct hostblk_req req;
	struct blk_seg seg;
	uint32_t done;			/* set (release) once status is the answer */
	uint8_t status;			/* VIRTIO_BLK_S_* */
};

/** vm_io_disk_sectors() - capacity of @vm's disk @disk (its slot: disks come
 *  first), 0 if it has none there. */
uint64_t vm_io_disk_sectors(struct vm *vm, unsigned int disk);
/** vm_io_disk_read_only() - the guest cannot write disk @disk: its content
 *  is its image's, never a snapshot's. */
bool vm_io_disk_read_only(struct vm *vm, unsigned int disk);
/** vm_io_disk_submit() - start @r on disk @disk: a read (@write false) or a
 *  write of @sectors sectors at @sector, data at @buf (host memory,
 *  physically contiguous). 0: r->done follows; -HYP_EBUSY: the host ring is
 *  full, try again; -HYP_ENOENT: no such disk; other: refused. */
int vm_io_disk_submit(struct vm *vm, unsigned int disk, struct vm_disk_req *r, bool write,
		      uint64_t sector, uint32_t sectors, void *buf);
/** vm_io_disk_flush() - start a FLUSH of disk @disk: once r->done, every
 *  write completed before is on stable storage. Returns as _submit(). */
int vm_io_disk_flush(struct vm *vm, unsigned int disk, struct vm_disk_req *r);
/** vm_io_disk_poll() - let disk @disk's host device complete what it
 *  finished (a caller waiting for its request polls). */
void vm_io_disk_poll(struct vm *vm, unsigned int disk);
/** vm_io_guest_disk_busy() - guest requests (every VM's) at the host disks now. */
unsigned int vm_io_guest_disk_busy(void);
/** vm_disk_guard_fn - may the guest's write of @sectors at @sector of disk
 *  @disk go to the host disk now? Called on any hart, under that disk's
 *  device lock. False: it is held, handed out again at a later poll. */
typedef bool (*vm_disk_guard_fn)(unsigned int disk, uint64_t sector, uint64_t sectors);
/** vm_io_disk_guard() - put @fn (NULL: none) before every guest write to
 *  @vm's disks (a live snapshot that has not saved every block yet). The
 *  VM is paused with its devices drained when one is set; when it is taken
 *  away the writes it held go at the next poll. */
void vm_io_disk_guard(struct vm *vm, vm_disk_guard_fn fn);

/** vm_disk_written_fn - the guest's write of @sectors at @sector of disk
 *  @disk has completed (OK or not). Called on any hart, under that disk's
 *  host device completion; must not wait. */
typedef void (*vm_disk_written_fn)(unsigned int disk, uint64_t sector, uint64_t sectors);
/** vm_io_disk_watch() - call @fn (NULL: none) at every guest write's
 *  completion on @vm's disks (a migration copying them). */
void vm_io_disk_watch(struct vm *vm, vm_disk_written_fn fn);

/** vm_io_disk_kick() - hand out now the requests @vm's disks held back (a
 *  guard's block just read), rather than at the next vm_io_poll(). */
void vm_io_disk_kick(struct vm *vm);

/** vm_io_nic_set() - take NIC @nic of @vm off its switch (@attach false: the
 *  guest sees its link go down, nothing reaches or leaves it) or put it back.
 *  -HYP_ENOENT: no such NIC; -HYP_EEXIST: its MAC is on the switch again
 *  (another NIC took it meanwhile); 0 also when it was already so. */
int vm_io_nic_set(struct vm *vm, unsigned int nic, bool attach);
#endif
