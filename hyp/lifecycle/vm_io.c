/* SPDX-License-Identifier: MIT */
/* A VM's disks and NICs, joined to the host's disks and switches (vm_io.h).
 * The glue only: the guest device models (vblk.c, vnet.c) check everything
 * the guest wrote before a request or a frame gets here. */
#include <errno.h>
#include <hart.h>
#include <hostblk.h>
#include <atomic.h>
#include <string.h>
#include <token_bucket.h>
#include <vblk.h>
#include <vm.h>
#include <vm_io.h>
#include <vnet.h>
#include <vswitch.h>

/* One host disk and the VM that owns it; a request of its guest device
 * model travels as the hostblk_req of the same index. */
struct disk_link {
	struct hostblk *hb;
	/* the disk's rate limit: requests and bytes (docs/virtio.md, "Fair share") */
	struct token_bucket iops, bandwidth;
	uint32_t throttled;		/* a request waits for tokens: vm_io_poll() kicks it
					 * (32 bits: the hart has no byte-wide atomic swap) */
	uint64_t held;			/* requests held back so far */
	unsigned int slot;		/* its guest slot */
	const struct vm *owner;		/* NULL: free */
	bool read_only;			/* the VM's description says so (QEMU's drive too) */
	/* a live snapshot's: may a guest write go now? (vm_io_disk_guard()) */
	vm_disk_guard_fn guard;
	/* a migration's: told of every guest write done (vm_io_disk_watch()) */
	vm_disk_written_fn watch;
	struct hostblk_req req[VBLK_INFLIGHT];
};

/* A NIC's port on its switch and the rate limit of what its guest sends. */
struct nic_link {
	struct vswitch_port port;	/* first: the vnet's port pointer is this */
	struct token_bucket pps, bandwidth;
	uint32_t throttled;		/* a frame waits for tokens: vm_io_poll() kicks it */
	uint64_t held_since;		/* time of the first refusal since a frame went (0: none) */
	uint64_t held;			/* frames held back so far */
	unsigned int slot;		/* its guest slot */
	struct vm *owner;		/* NULL: not attached to a VM */
};

/* a guest request's segments fit a host request's */
_Static_assert(VBLK_SEG_MAX <= HOSTBLK_MAX_SEGS, "vblk segments must fit a hostblk request");
/* a rate the host DT may give fits a token bucket */
_Static_assert(VM_IO_RATE_MAX <= TB_RATE_MAX, "rate limits must fit a token bucket");

static struct disk_link disks[HOST_PCI_DEV_MAX + 1];	/* by PCI device number */
static struct nic_link nics[VM_MAX][VM_MAX_NICS];

/* What each VM was given, by VM slot: to list its devices and find a NIC's
 * switch again. Written at attach, under the VM creation lock. */
struct vm_io_rec {
	unsigned int nr_disks, nr_nics;
	struct vm_disk_desc disk[VM_MAX_DISKS];
	struct vm_nic_desc nic[VM_MAX_NICS];
	struct spinlock lock;		/* a NIC's detach and attach, one at a time */
};

static struct vm_io_rec recs[VM_MAX];

/* The rate limit: both buckets must hold enough, and only then are both
 * taken (a refusal costs no tokens). Under the device model's lock. */
static bool disk_tokens(struct disk_link *l, const struct vblk_io *io)
{
	uint64_t now = time_now(), bytes = 0;

	for (uint32_t i = 0; i < io->nr_seg; i++)
		bytes += io->seg[i].len;
	if (tb_wait(&l->iops, 1, now) || tb_wait(&l->bandwidth, bytes, now)) {
		l->held++;
		__atomic_store_n(&l->throttled, 1, __ATOMIC_RELEASE);
		return false;
	}
	tb_take(&l->iops, 1, now);
	tb_take(&l->bandwidth, bytes, now);
	return true;
}

/* A write that a live snapshot must first save the blocks of waits: held
 * as a rate limit holds it (vm_io_poll() kicks it), and asked again then. */
static bool guard_allows(struct disk_link *l, const struct vblk_io *io)
{
	vm_disk_guard_fn guard = __atomic_load_n(&l->guard, __ATOMIC_ACQUIRE);
	uint64_t bytes = 0;

	if (!guard)
		return true;
	for (uint32_t i = 0; i < io->nr_seg; i++)
		bytes += io->seg[i].len;
	if (guard(l->slot, io->sector, bytes / VIRTIO_BLK_SECTOR))
		return true;
	__atomic_store_n(&l->throttled, 1, __ATOMIC_RELEASE);
	return false;
}

/* guest requests at the host disks, every VM's: a live snapshot's reads
 * yield to them (snap_disk_save.c) */
static unsigned int guest_disk_busy;

static int disk_submit(void *be, struct vblk_io *io)
{
	struct disk_link *l = be;
	struct hostblk_req *r = &l->req[io->index];
	int rc;

	if (io->type == VIRTIO_BLK_T_OUT && !guard_allows(l, io))
		return -HYP_EBUSY;	/* kept by vblk; vm_io_poll() kicks it */
	if (!disk_tokens(l, io))
		return -HYP_EBUSY;	/* kept by vblk; vm_io_poll() kicks it */

	/* vblk holds io->index until it completes: r is free */
	r->type = io->type;
	r->sector = io->sector;
	r->nr_seg = (uint16_t)io->nr_seg;
	r->seg = io->seg;	/* checked by vblk; read during the submit only */
	r->owner = io;
	rc = hostblk_submit(l->hb, r);
	if (!rc)
		__atomic_add_fetch(&guest_disk_busy, 1, __ATOMIC_RELAXED);
	return rc;
}

/* A guest write is on the host disk (or failed part way): a migration
 * copying the disk sends its blocks again. Told at completion, never at
 * submission: a block read after this sees the write, and one whose read
 * began before it is marked again here. */
static void disk_done(struct hostblk_req *r)
{
	struct vblk_io *io = r->owner;

	if (r->type == VIRTIO_BLK_T_OUT) {
		struct disk_link *l = container_of(r - io->index, struct disk_link, req[0]);
		vm_disk_written_fn watch = __atomic_load_n(&l->watch, __ATOMIC_ACQUIRE);
		uint64_t bytes = 0;

		for (uint16_t i = 0; watch && i < r->nr_seg; i++)
			bytes += r->seg[i].len;
		if (watch)
			watch(l->slot, r->sector, bytes / VIRTIO_BLK_SECTOR);
	}
	__atomic_sub_fetch(&guest_disk_busy, 1, __ATOMIC_RELAXED);
	vblk_complete(io, r->status);
}

unsigned int vm_io_guest_disk_busy(void)
{
	return __atomic_load_n(&guest_disk_busy, __ATOMIC_RELAXED);
}

static uint64_t disk_sectors(void *be)
{
	return hostblk_sectors(((struct disk_link *)be)->hb);
}

static bool disk_read_only(void *be)
{
	const struct disk_link *l = be;

	return l->read_only || hostblk_read_only(l->hb);
}

static uint32_t disk_seg_max(void *be)
{
	return hostblk_seg_max(((struct disk_link *)be)->hb);
}

static const struct vblk_backend_ops disk_ops = {
	.submit = disk_submit,
	.sectors = disk_sectors,
	.read_only = disk_read_only,
	.seg_max = disk_seg_max,
};

static void nic_tx(void *port, const void *frame, uint32_t len)
{
	vswitch_tx(port, frame, len);
}

/* The NIC's rate limit, as a disk's: a frame and its bytes. Under the vnet's
 * lock (its transmit). */
static bool nic_may_send(void *port, uint32_t len)
{
	struct nic_link *l = container_of((struct vswitch_port *)port, struct nic_link, port);
	uint64_t now = time_now();

	if (tb_wait(&l->pps, 1, now) || tb_wait(&l->bandwidth, len, now)) {
		l->held++;
		if (!__atomic_load_n(&l->held_since, __ATOMIC_RELAXED))
			__atomic_store_n(&l->held_since, now, __ATOMIC_RELAXED);
		__atomic_store_n(&l->throttled, 1, __ATOMIC_RELEASE);
		return false;
	}
	__atomic_store_n(&l->held_since, 0, __ATOMIC_RELAXED);
	tb_take(&l->pps, 1, now);
	tb_take(&l->bandwidth, len, now);
	return true;
}

static void nic_deliver(void *vnet, const void *frame, uint32_t len)
{
	vnet_rx_deliver(vnet, frame, len);
}

static const struct vnet_port_ops nic_ops = { .tx = nic_tx, .may_send = nic_may_send };

/* Owners of disks and NICs: a kick (vm_io_poll()) looks at them under it,
 * and a VM gives its devices back under it before they are freed. */
static struct spinlock io_lock = SPINLOCK_INIT;

/* A bucket of @rate tokens a second holding a tenth of a second's worth (a
 * larger request passes on a full bucket and is paid for before the next:
 * token_bucket.h). */
static void rate_limit(struct token_bucket *b, uint64_t rate)
{
	tb_init(b, rate, rate / 10, timebase_hz, time_now());
}

/* Take the host disk at @pci_dev for @vm. */
static struct disk_link *claim_disk(const struct vm *vm, const struct vm_disk_desc *dd,
				    const char **why)
{
	struct hostblk *hb = dd->pci_dev < ARRAY_SIZE(disks) ? hostblk_by_slot(dd->pci_dev) : NULL;
	struct disk_link *l = &disks[hb ? dd->pci_dev : 0];

	if (!hb) {
		*why = "a disk's host device is not there (no virtio-blk-pci at its PCI slot)";
		return NULL;
	}
	spin_lock(&io_lock);
	if (l->owner) {
		spin_unlock(&io_lock);
		*why = "a disk's host device is another VM's";
		return NULL;
	}
	l->owner = vm;
	l->hb = hb;
	l->read_only = dd->read_only;
	l->throttled = 0;
	l->held = 0;
	rate_limit(&l->iops, dd->iops);		/* 0: no limit */
	rate_limit(&l->bandwidth, dd->bandwidth);
	for (unsigned int i = 0; i < VBLK_INFLIGHT; i++)
		l->req[i].done = disk_done;
	spin_unlock(&io_lock);
	return l;
}


static void release_devices(const struct vm *vm)
{
	spin_lock(&io_lock);
	for (unsigned int i = 0; i < ARRAY_SIZE(disks); i++)
		if (disks[i].owner == vm)
			disks[i].owner = NULL;
	for (unsigned int i = 0; i < VM_MAX_NICS; i++)
		nics[vm->index][i].owner = NULL;
	spin_unlock(&io_lock);
}

static int attach_nic(struct vm *vm, unsigned int i, unsigned int slot, const struct vm_nic_desc *n,
		      const char **why)
{
	struct vswitch *sw = vswitch_find(n->sw);
	struct nic_link *l = &nics[vm->index][i];
	struct vswitch_port *p = &l->port;
	int rc;

	if (!sw) {
		*why = "a NIC's switch does not exist";
		return -HYP_ENOENT;
	}
	rate_limit(&l->pps, n->pps);		/* 0: no limit */
	rate_limit(&l->bandwidth, n->bandwidth);
	l->throttled = 0;
	l->held_since = 0;
	l->held = 0;
	l->slot = slot;
	rc = vio_attach_net(vm, slot, n->mac, &nic_ops, p);
	if (rc) {
		*why = "no memory for a NIC";
		return rc;
	}
	spin_lock(&io_lock);
	l->owner = vm;
	spin_unlock(&io_lock);
	vswitch_port_init(p, VSWITCH_PORT_VM, n->mac, nic_deliver, vnet_of(vm, slot));
	rc = vswitch_attach(sw, p);
	if (rc)
		*why = rc == -HYP_EEXIST ? "a NIC's MAC is already on its switch" :
		       rc == -HYP_ENOMEM ? "a NIC's switch has no free port" : "a NIC's MAC is refused";
	return rc;
}

int vm_io_attach(struct vm *vm, const struct vm_desc *d, const char **why)
{
	struct vm_io_rec *rec = &recs[vm->index];
	unsigned int slot = 0;
	int rc = 0;

	rec->nr_disks = d->nr_disks;
	rec->nr_nics = d->nr_nics;
	memcpy(rec->disk, d->disks, sizeof(rec->disk));
	memcpy(rec->nic, d->nics, sizeof(rec->nic));
	for (unsigned int i = 0; i < d->nr_disks && !rc; i++, slot++) {
		struct disk_link *l = claim_disk(vm, &d->disks[i], why);

		if (l)
			l->slot = slot;
		rc = l ? vio_attach_blk(vm, slot, &disk_ops, l) : -HYP_ENOENT;
		if (l && rc)
			*why = "no memory for a disk";
	}
	for (unsigned int i = 0; i < d->nr_nics && !rc; i++, slot++)
		rc = attach_nic(vm, i, slot, &d->nics[i], why);
	if (rc)
		vm_io_detach(vm);
	return rc;
}

/* A restore or a migration's arrival adds the devices one at a time, in the
 * slots vm_io_attach() would have given them: the disks first, then the NICs. */
int vm_io_add_disk(struct vm *vm, unsigned int slot, const struct vm_disk_desc *dd,
		   const char **why)
{
	struct vm_io_rec *rec = &recs[vm->index];
	struct disk_link *l;
	int rc;

	if (rec->nr_nics || rec->nr_disks == VM_MAX_DISKS || slot != rec->nr_disks) {
		*why = "a disk out of place (disks come first, in slots 0, 1)";
		return -HYP_EINVAL;
	}
	l = claim_disk(vm, dd, why);
	if (!l)
		return -HYP_ENOENT;
	l->slot = slot;
	rc = vio_attach_blk(vm, slot, &disk_ops, l);
	if (rc) {
		*why = "no memory for a disk";
		spin_lock(&io_lock);
		l->owner = NULL;
		spin_unlock(&io_lock);
		return rc;
	}
	rec->disk[rec->nr_disks++] = *dd;
	return 0;
}

int vm_io_add_nic(struct vm *vm, unsigned int slot, const struct vm_nic_desc *nd,
		  const char **why)
{
	struct vm_io_rec *rec = &recs[vm->index];
	int rc;

	if (rec->nr_nics == VM_MAX_NICS || slot != rec->nr_disks + rec->nr_nics) {
		*why = "a NIC out of place (NICs follow the disks, in order)";
		return -HYP_EINVAL;
	}
	rc = attach_nic(vm, rec->nr_nics, slot, nd, why);
	if (!rc)
		rec->nic[rec->nr_nics++] = *nd;
	return rc;
}

struct vswitch_port *vm_io_nic_port(struct vm *vm, unsigned int nic)
{
	return nic < recs[vm->index].nr_nics ? &nics[vm->index][nic].port : NULL;
}

const struct vm_disk_desc *vm_io_disk(const struct vm *vm, unsigned int disk)
{
	return disk < recs[vm->index].nr_disks ? &recs[vm->index].disk[disk] : NULL;
}

const struct vm_nic_desc *vm_io_nic(const struct vm *vm, unsigned int nic)
{
	return nic < recs[vm->index].nr_nics ? &recs[vm->index].nic[nic] : NULL;
}

void vm_io_detach(struct vm *vm)
{
	for (unsigned int i = 0; i < VM_MAX_NICS; i++)
		vswitch_detach(&nics[vm->index][i].port);
	release_devices(vm);
	recs[vm->index].nr_disks = recs[vm->index].nr_nics = 0;
}

unsigned int vm_io_list(struct vm *vm, struct vm_io_info *out, unsigned int max)
{
	const struct vm_io_rec *rec = &recs[vm->index];
	unsigned int n = 0;

	for (unsigned int i = 0; i < rec->nr_disks && n < max; i++, n++) {
		const struct vblk *b = vm->vio[n] ? (const struct vblk *)vm->vio[n] : NULL;
		const struct disk_link *l = &disks[rec->disk[i].pci_dev];

		out[n] = (struct vm_io_info){ .slot = n, .pci_dev = rec->disk[i].pci_dev,
					      .limit_ops = rec->disk[i].iops,
					      .limit_bytes = rec->disk[i].bandwidth };
		if (l->owner == vm)
			out[n].held = l->held;
		if (b) {
			out[n].read_only = b->b.read_only;
			out[n].sectors = b->b.capacity;
			out[n].blk = b->b.stats;
		}
	}
	for (unsigned int i = 0; i < rec->nr_nics && n < max; i++, n++) {
		const struct vnet *v = vnet_of(vm, n);
		const struct nic_link *l = &nics[vm->index][i];
		const struct vswitch_port *p = &l->port;
		struct vswitch_counters c;

		out[n] = (struct vm_io_info){ .slot = n, .is_net = true, .nic = i };
		memcpy(out[n].sw, rec->nic[i].sw, sizeof(out[n].sw));
		memcpy(out[n].mac, rec->nic[i].mac, sizeof(out[n].mac));
		out[n].attached = __atomic_load_n(&p->attached, __ATOMIC_RELAXED);
		vswitch_port_counters(p, &c);
		out[n].spoofed = c.tx_spoofed;
		out[n].limit_ops = rec->nic[i].pps;
		out[n].limit_bytes = rec->nic[i].bandwidth;
		out[n].held = l->held;
		if (v) {
			out[n].tx = v->n.tx;
			out[n].rx = v->n.rx;
		}
	}
	return n;
}

int vm_io_nic_set(struct vm *vm, unsigned int nic, bool attach)
{
	struct vm_io_rec *rec = &recs[vm->index];
	struct vswitch_port *p;
	struct vnet *v;
	int rc = 0;

	if (nic >= rec->nr_nics)
		return -HYP_ENOENT;
	v = vnet_of(vm, rec->nr_disks + nic);
	p = &nics[vm->index][nic].port;
	if (!v)
		return -HYP_ENOENT;
	spin_lock(&rec->lock);
	if (!attach) {
		vswitch_detach(p);	/* nothing delivered to it from here on */
		vnet_port_detach(v);	/* nothing sent; the guest sees the link down */
	} else if (!p->attached) {
		struct vswitch *sw = vswitch_find(rec->nic[nic].sw);

		rc = sw ? vswitch_attach(sw, p) : -HYP_ENOENT;
		if (!rc)
			vnet_port_attach(v, &nic_ops, p);
	}
	spin_unlock(&rec->lock);
	return rc;
}

/* How long a NIC's frames wait for their guest's own next notify before a
 * kick sends some (VM_NIC_KICK_DELAY_US). */
static uint64_t nic_kick_delay(void)
{
	return timebase_hz * VM_NIC_KICK_DELAY_US / 1000000;
}

void vm_io_poll(void)
{
	/* under io_lock: a VM being destroyed gives its devices back under it,
	 * so a kick never reaches a device model that is being freed */
	spin_lock(&io_lock);
	for (unsigned int i = 0; i < ARRAY_SIZE(disks); i++) {
		struct disk_link *l = &disks[i];
		struct vm *owner = (struct vm *)l->owner;
		bool held;

		if (!owner || owner->state != VM_RUNNING)
			continue;	/* a paused VM's memory is not written */
		held = __atomic_exchange_n(&l->throttled, 0, __ATOMIC_ACQ_REL);
		/* a device whose lock is taken is kicked at the next poll */
		if (!vblk_kick(owner, l->slot, held) && held)
			__atomic_store_n(&l->throttled, 1, __ATOMIC_RELEASE);
	}
	for (unsigned int v = 0; v < VM_MAX; v++)
		for (unsigned int i = 0; i < VM_MAX_NICS; i++) {
			struct nic_link *l = &nics[v][i];
			uint64_t since = __atomic_load_n(&l->held_since, __ATOMIC_RELAXED);

			/* a guest that goes on sending sends the held frames itself;
			 * one that waits for them gets a few from here */
			if (!l->owner || l->owner->state != VM_RUNNING || !since ||
			    time_now() - since < nic_kick_delay())
				continue;
			if (!__atomic_exchange_n(&l->throttled, 0, __ATOMIC_ACQ_REL))
				continue;
			/* frames still waiting (the kick's budget, or its lock
			 * taken): held again from now, kicked again */
			if (vnet_kick(l->owner, l->slot) != VNET_TX_DONE) {
				__atomic_store_n(&l->held_since, time_now(), __ATOMIC_RELAXED);
				__atomic_store_n(&l->throttled, 1, __ATOMIC_RELEASE);
			}
		}
	spin_unlock(&io_lock);
}

/* ---- a disk's content, for snapshots and migrations ---- */

/* @vm's disk @disk: its host disk's link, or NULL. */
static struct disk_link *disk_of(const struct vm *vm, unsigned int disk)
{
	const struct vm_io_rec *rec = &recs[vm->index];
	struct disk_link *l;

	if (disk >= rec->nr_disks || rec->disk[disk].pci_dev >= ARRAY_SIZE(disks))
		return NULL;
	l = &disks[rec->disk[disk].pci_dev];
	return l->owner == vm ? l : NULL;
}

void vm_io_disk_kick(struct vm *vm)
{
	spin_lock(&io_lock);	/* as vm_io_poll(): never a model being freed */
	for (unsigned int i = 0; i < VM_MAX_DISKS; i++) {
		struct disk_link *l = disk_of(vm, i);

		if (!l || vm->state != VM_RUNNING ||
		    !__atomic_exchange_n(&l->throttled, 0, __ATOMIC_ACQ_REL))
			continue;
		if (!vblk_kick(vm, l->slot, true))
			__atomic_store_n(&l->throttled, 1, __ATOMIC_RELEASE);
	}
	spin_unlock(&io_lock);
}

uint64_t vm_io_disk_sectors(struct vm *vm, unsigned int disk)
{
	struct disk_link *l = disk_of(vm, disk);

	return l ? hostblk_sectors(l->hb) : 0;
}

bool vm_io_disk_read_only(struct vm *vm, unsigned int disk)
{
	struct disk_link *l = disk_of(vm, disk);

	return !l || disk_read_only(l);
}

static void disk_req_done(struct hostblk_req *hr)
{
	struct vm_disk_req *r = hr->owner;

	r->status = hr->status;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

int vm_io_disk_submit(struct vm *vm, unsigned int disk, struct vm_disk_req *r, bool write,
		      uint64_t sector, uint32_t sectors, void *buf)
{
	struct disk_link *l = disk_of(vm, disk);

	if (!l)
		return -HYP_ENOENT;
	r->seg = (struct blk_seg){ (hpa_t)(uintptr_t)buf, sectors * VIRTIO_BLK_SECTOR };
	r->req = (struct hostblk_req){ .type = write ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN,
				       .sector = sector, .seg = &r->seg, .nr_seg = 1,
				       .done = disk_req_done, .owner = r };
	r->done = 0;
	return hostblk_submit(l->hb, &r->req);
}

int vm_io_disk_flush(struct vm *vm, unsigned int disk, struct vm_disk_req *r)
{
	struct disk_link *l = disk_of(vm, disk);

	if (!l)
		return -HYP_ENOENT;
	r->req = (struct hostblk_req){ .type = VIRTIO_BLK_T_FLUSH, .done = disk_req_done,
				       .owner = r };
	r->done = 0;
	return hostblk_submit(l->hb, &r->req);
}

void vm_io_disk_poll(struct vm *vm, unsigned int disk)
{
	struct disk_link *l = disk_of(vm, disk);

	if (l)
		hostblk_poll(l->hb);
}

void vm_io_disk_watch(struct vm *vm, vm_disk_written_fn fn)
{
	const struct vm_io_rec *rec = &recs[vm->index];

	for (unsigned int i = 0; i < rec->nr_disks; i++) {
		struct disk_link *l = disk_of(vm, i);

		if (l)
			__atomic_store_n(&l->watch, fn, __ATOMIC_RELEASE);
	}
}

void vm_io_disk_guard(struct vm *vm, vm_disk_guard_fn fn)
{
	const struct vm_io_rec *rec = &recs[vm->index];

	for (unsigned int i = 0; i < rec->nr_disks; i++) {
		struct disk_link *l = disk_of(vm, i);

		if (!l)
			continue;
		__atomic_store_n(&l->guard, fn, __ATOMIC_RELEASE);
		if (!fn)	/* what it held goes at the next poll */
			__atomic_store_n(&l->throttled, 1, __ATOMIC_RELEASE);
	}
}
