/* SPDX-License-Identifier: MIT */
/* A guest virtio-blk device (virtio 1.2 section 5.2) over the virtio-mmio
 * transport (vio_mmio.h); the rules: docs/virtio.md, "virtio-blk".
 *
 * Each request chain is checked (its 16-byte header copied first) and only a
 * well-formed read, write or flush reaches the backend, as host-physical
 * segments inside the VM's RAM. The backend completes it with
 * vblk_complete(), on any hart, now or later. */
#ifndef HYP_VBLK_H
#define HYP_VBLK_H
#include <types.h>
#include <vio_mmio.h>
#include <virtio_blk.h>

/* QueueNumMax. A chain takes a descriptor per data segment plus header and
 * status, and no INDIRECT_DESC is offered: SEG_MAX can be at most this - 2. */
#define VBLK_QUEUE_SIZE		256
#define VBLK_SEG_MAX		254	/* most data segments a request may have */
#define VBLK_INFLIGHT		16	/* requests a device holds at once (<= 32: vblk.posted) */

struct vblk;

/* A checked request. The backend reads type, sector and the segments (IN:
 * the device writes them, OUT: it reads them; FLUSH: none) and may use
 * be_priv; the rest is vblk's. */
struct vblk_io {
	uint32_t type;			/* VIRTIO_BLK_T_IN, _OUT or _FLUSH */
	uint64_t sector;		/* IN/OUT: the first 512-byte sector */
	uint32_t nr_seg;		/* 1..seg_max for IN/OUT, 0 for FLUSH */
	struct blk_seg seg[VBLK_SEG_MAX];	/* inside the VM's RAM */
	unsigned int index;		/* 0..VBLK_INFLIGHT-1, fixed per slot */
	void *be_priv;			/* the backend's */

	/* vblk's */
	struct vblk *dev;
	uint8_t state;			/* enum in vblk.c */
	uint8_t status;			/* VIRTIO_BLK_S_* once finished */
	uint16_t head;			/* its chain */
	uint32_t epoch;			/* the device's reset count when taken */
	uint32_t written;		/* bytes written into the chain */
	uint64_t data_len;
	gpa_t status_gpa;
	uint8_t done_status;		/* the backend's answer, until it is taken */
};

/* What holds the disk. */
struct vblk_backend_ops {
	/** submit() - start @io: 0 (vblk_complete() follows, perhaps before
	 *  submit returns), -HYP_EBUSY (full: vblk tries again after the
	 *  next completion or notify), any other error (the request fails:
	 *  S_IOERR). Called with the device's lock held (a vblk_complete()
	 *  from inside it is posted, taken when the lock is let go); a backend
	 *  calls vblk_complete() holding none of the locks submit takes. */
	int (*submit)(void *be, struct vblk_io *io);
	uint64_t (*sectors)(void *be);		/* capacity in 512-byte sectors */
	bool (*read_only)(void *be);
	uint32_t (*seg_max)(void *be);		/* data segments per request it takes */
};

/* Guest-visible: plain data. */
struct vblk_state {
	uint64_t capacity;		/* sectors */
	uint32_t seg_max;		/* offered SEG_MAX: 1..VBLK_SEG_MAX */
	bool read_only;
	char serial[VIRTIO_BLK_ID_BYTES];	/* the GET_ID answer */
	uint32_t epoch;			/* device resets: a request of an older one is dropped */
	struct vio_stats stats;
};

struct vblk {
	struct vio_dev dev;		/* first: the transport */
	struct vblk_state b;
	/* host side */
	const struct vblk_backend_ops *ops;
	void *be;
	/* io[i] completed by the backend, bit i, not yet taken under the lock:
	 * a completion never waits for the lock (vblk_complete()) */
	uint32_t posted;
	/* requests of a driver before the last reset still at the backend:
	 * none of the new driver's goes there until they are done */
	unsigned int old_at_backend;
	/* io[i] is in state s (enum in vblk.c) iff bit i of in_state[s]: the
	 * hot paths visit the requests of one state only */
	uint32_t in_state[4];
	struct vblk_io io[VBLK_INFLIGHT];
};

/** vio_attach_blk() - give @vm a virtio-blk device in @slot backed by @ops
 *  and @be (VM creation, before the first boot). -HYP_ENOMEM, or as
 *  vio_mmio_attach(). */
int vio_attach_blk(struct vm *vm, unsigned int slot, const struct vblk_backend_ops *ops,
		   void *be);
/** vblk_complete() - the backend finished @io with VIRTIO_BLK_S_OK or
 *  _IOERR (anything else is IOERR): its status byte and used element go to
 *  the guest (written pages marked dirty), the line is raised, and the
 *  device takes more requests. Any hart; dropped quietly if the device was
 *  reset since. Never waits for the device's lock: if another hart holds
 *  it, the completion is posted and that hart takes it when it lets go (so
 *  hart 0, taking every host completion, never waits for a VM's hart). */
void vblk_complete(struct vblk_io *io, uint8_t status);
/** vblk_kick() - if @held, hand out what the backend refused with
 *  -HYP_EBUSY, as a completion would (the backend's rate limit has tokens
 *  again); in any case take completions posted while the transport held the
 *  lock. Never waits: false if the lock was taken (the caller tries again). */
bool vblk_kick(struct vm *vm, unsigned int slot, bool held);
#endif
