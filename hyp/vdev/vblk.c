/* SPDX-License-Identifier: MIT */
/* virtio-blk (virtio 1.2 section 5.2): one request queue whose chains are a
 * 16-byte header, data, and a status byte (hyp/include/vblk.h; the rules:
 * docs/virtio.md, "virtio-blk").
 *
 * A request's header is copied into hypervisor memory before anything is
 * decided on it; the data never is: the backend moves it straight between
 * the disk and guest RAM. Every taken chain occupies one of VBLK_INFLIGHT
 * slots until its status is published, so a guest can make the device hold
 * at most that many requests. The backend is called under the device's
 * lock, with bounded work per entry; a completion never waits for that lock
 * (it is posted for the lock's holder when taken), so the host hart that
 * takes every host disk's completions never waits for a VM's hart. */
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <arch/riscv/encoding.h>
#include <bitops.h>
#include <guest_mem.h>
#include <mm.h>
#include <names.h>
#include <snap_table.h>
#include <vblk.h>
#include <virtio_mmio.h>
#include <vm.h>

_Static_assert(VBLK_INFLIGHT <= 32, "vblk.posted has a bit per request");
_Static_assert(VBLK_SEG_MAX + 2 <= VBLK_QUEUE_SIZE, "a chain of SEG_MAX segments fits the queue");

enum io_state {
	IO_FREE,
	IO_READY,	/* checked, waiting for the backend (or its room) */
	IO_SUBMIT,	/* with the backend */
	IO_DONE,	/* finished; status and used element not yet published */
};
_Static_assert(IO_DONE < ARRAY_SIZE(((struct vblk *)0)->in_state), "a mask per state");
_Static_assert(VBLK_INFLIGHT <= 32, "a bit per request");
#define ALL_IO		((uint32_t)((1ULL << VBLK_INFLIGHT) - 1))

/* Every state change goes through here: in_state[] follows. */
static void set_state(struct vblk *b, struct vblk_io *io, enum io_state st)
{
	b->in_state[io->state] &= ~(1U << io->index);
	b->in_state[st] |= 1U << io->index;
	io->state = (uint8_t)st;
}


#define RUN_ROUNDS	32	/* hand-out rounds per entry (completions in between) */

static struct vblk *to_blk(struct vio_dev *d)
{
	return container_of(d, struct vblk, dev);
}

static struct virtq *queue(struct vblk *b)
{
	return &b->dev.s.q[0];
}

static gpa_t seg_gpa(const struct vblk *b, const struct blk_seg *s)
{
	return s->hpa - b->dev.vm->ram_hpa + b->dev.vm->cfg.ram_gpa;
}

/* Give a finished request to the guest: data pages (IN) dirty again, status
 * byte, used element. -HYP_EBUSY: guest memory cannot be written now (a live
 * snapshot short of memory); tried again at the next entry. Lock held. */
static int publish(struct vblk *b, struct vblk_io *io)
{
	struct vm *vm = b->dev.vm;
	volatile uint8_t *st;
	int rc;

	/* the host device wrote them behind the G-stage: count them as written
	 * (when something counts: else they were mapped writable at the take,
	 * and that is all a segment needs; 254 of them cost about 10 K
	 * instructions a request) */
	if (io->type == VIRTIO_BLK_T_IN && vm_ram_counts_writes(vm))
		for (uint32_t i = 0; i < io->nr_seg; i++)
			if (!vm_gpa_to_hva(vm, seg_gpa(b, &io->seg[i]), io->seg[i].len, true))
				return -HYP_EBUSY;
	st = vm_gpa_to_hva(vm, io->status_gpa, 1, true);
	if (!st)
		return -HYP_EBUSY;
	*st = io->status;
	rc = virtq_push(queue(b), vm, io->head, io->written);
	if (rc == -HYP_EBUSY)
		return rc;
	/* -HYP_EINVAL: the queue faulted meanwhile; its chains are abandoned */
	if (io->status == VIRTIO_BLK_S_OK) {
		b->b.stats.requests++;
		b->b.stats.bytes += io->data_len;
	} else {
		b->b.stats.errors++;
	}
	set_state(b, io, IO_FREE);
	return rc;
}

/* Publish every finished request; one used notification for them. */
static void publish_all(struct vblk *b)
{
	bool pushed = false;

	for (uint32_t m = b->in_state[IO_DONE]; m; m &= m - 1)
		if (!publish(b, &b->io[bit_first(m)]))
			pushed = true;
	if (pushed)
		vio_mmio_used(&b->dev, 0);
}

static void finish(struct vblk_io *io, uint8_t status, uint32_t written)
{
	io->status = status;
	io->written = written;
	set_state(io->dev, io, IO_DONE);
}

/* Copy @len bytes at offset @off of the chain's readable part. */
static bool read_chain(struct vblk *b, const struct virtq_chain *c, uint64_t off, void *out,
		       uint64_t len)
{
	uint8_t *dst = out;

	for (unsigned int i = 0; i < c->nr_read && len; i++) {
		const struct virtq_seg *s = &c->seg[i];
		uint64_t n;
		const uint8_t *src;

		if (off >= s->len) {
			off -= s->len;
			continue;
		}
		n = MIN(len, s->len - off);
		src = vm_gpa_to_hva(b->dev.vm, s->gpa + off, n, false);
		if (!src)
			return false;
		memcpy(dst, src, n);
		dst += n;
		len -= n;
		off = 0;
	}
	return !len;
}

/* The data part of a request as segments: @len bytes from byte @off of the
 * chain's segments [@first, @last). Each piece is mapped (populated; for a
 * device @write, made writable and marked dirty) before the backend sees it.
 * S_OK, or the status that refuses the request. */
static uint8_t data_segs(struct vblk *b, const struct virtq_chain *c, unsigned int first,
			 unsigned int last, uint64_t off, uint64_t len, bool write,
			 struct vblk_io *io)
{
	struct vm *vm = b->dev.vm;

	io->nr_seg = 0;
	for (unsigned int i = first; i < last && len; i++) {
		const struct virtq_seg *s = &c->seg[i];
		uint64_t n;

		if (off >= s->len) {
			off -= s->len;
			continue;
		}
		n = MIN(len, s->len - off);
		if (io->nr_seg == b->b.seg_max)
			return VIRTIO_BLK_S_IOERR;	/* more segments than SEG_MAX */
		if (!vm_gpa_to_hva(vm, s->gpa + off, n, write))
			return VIRTIO_BLK_S_IOERR;
		io->seg[io->nr_seg].hpa = vm->ram_hpa + (s->gpa + off - vm->cfg.ram_gpa);
		io->seg[io->nr_seg].len = (uint32_t)n;
		io->nr_seg++;
		len -= n;
		off = 0;
	}
	return VIRTIO_BLK_S_OK;
}

/* A read or write: data size, range, segments. */
static uint8_t check_rw(struct vblk *b, const struct virtq_chain *c, struct vblk_io *io)
{
	uint64_t nsec, cap = b->b.capacity;

	if (io->type == VIRTIO_BLK_T_IN) {
		if (c->read_len != VIRTIO_BLK_HDR_SIZE)
			return VIRTIO_BLK_S_IOERR;	/* data the device would read */
		io->data_len = c->write_len - 1;
	} else {
		if (c->write_len != 1)
			return VIRTIO_BLK_S_IOERR;	/* data the device would write */
		if (b->b.read_only)
			return VIRTIO_BLK_S_IOERR;
		io->data_len = c->read_len - VIRTIO_BLK_HDR_SIZE;
	}
	if (!io->data_len || io->data_len % VIRTIO_BLK_SECTOR)
		return VIRTIO_BLK_S_IOERR;
	nsec = io->data_len / VIRTIO_BLK_SECTOR;
	if (io->sector > cap || nsec > cap - io->sector)
		return VIRTIO_BLK_S_IOERR;	/* past the end, without overflow */
	if (io->type == VIRTIO_BLK_T_IN)
		return data_segs(b, c, c->nr_read, c->nr_segs, 0, io->data_len, true, io);
	return data_segs(b, c, 0, c->nr_read, VIRTIO_BLK_HDR_SIZE, io->data_len, false, io);
}

static uint8_t answer_get_id(struct vblk *b, const struct virtq_chain *c, struct vblk_io *io)
{
	uint32_t done = 0;

	if (c->read_len != VIRTIO_BLK_HDR_SIZE || c->write_len != VIRTIO_BLK_ID_BYTES + 1)
		return VIRTIO_BLK_S_IOERR;
	if (data_segs(b, c, c->nr_read, c->nr_segs, 0, VIRTIO_BLK_ID_BYTES, true, io))
		return VIRTIO_BLK_S_IOERR;
	for (uint32_t i = 0; i < io->nr_seg; i++) {
		memcpy((void *)(uintptr_t)io->seg[i].hpa, b->b.serial + done, io->seg[i].len);
		done += io->seg[i].len;
	}
	io->data_len = VIRTIO_BLK_ID_BYTES;
	return VIRTIO_BLK_S_OK;
}

/* Check the chain just taken into @io. True: it goes to the backend (READY);
 * false: it is answered (DONE) or the queue faulted (FREE). Lock held. */
static bool prepare(struct vblk *b, const struct virtq_chain *c, struct vblk_io *io)
{
	const struct virtq_seg *last = &c->seg[c->nr_segs - 1];
	uint8_t hdr[VIRTIO_BLK_HDR_SIZE], st;

	io->head = c->head;
	io->epoch = b->b.epoch;
	io->nr_seg = 0;
	io->data_len = 0;
	io->sector = 0;
	if (!c->write_len) {
		/* no status byte to answer with (readable before writable: the
		 * last segment is writable if any is) */
		vio_mmio_queue_fault(&b->dev, 0, VIRTQ_FAULT_UNUSABLE);
		set_state(b, io, IO_FREE);
		return false;
	}
	io->status_gpa = last->gpa + last->len - 1;
	io->type = ~0U;
	if (c->read_len < VIRTIO_BLK_HDR_SIZE || !read_chain(b, c, 0, hdr, sizeof(hdr))) {
		finish(io, VIRTIO_BLK_S_IOERR, 1);
		return false;
	}
	memcpy(&io->type, hdr, 4);	/* reserved (bytes 4..7) is ignored */
	memcpy(&io->sector, hdr + 8, 8);
	switch (io->type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT:
		st = check_rw(b, c, io);
		break;
	case VIRTIO_BLK_T_FLUSH:
		st = c->read_len == VIRTIO_BLK_HDR_SIZE && c->write_len == 1 ? VIRTIO_BLK_S_OK
								     : VIRTIO_BLK_S_IOERR;
		break;
	case VIRTIO_BLK_T_GET_ID:
		st = answer_get_id(b, c, io);
		io->nr_seg = 0;		/* written already: nothing to mark at publish */
		finish(io, st, st == VIRTIO_BLK_S_OK ? VIRTIO_BLK_ID_BYTES + 1 : 1);
		return false;
	default:
		finish(io, VIRTIO_BLK_S_UNSUPP, 1);
		return false;
	}
	if (st != VIRTIO_BLK_S_OK) {
		io->nr_seg = 0;
		finish(io, st, 1);
		return false;
	}
	set_state(b, io, IO_READY);
	return true;
}

static struct vblk_io *free_slot(struct vblk *b)
{
	uint32_t m = b->in_state[IO_FREE];

	return m ? &b->io[bit_first(m)] : NULL;
}

/* Take up to *@budget chains while a slot is free. Lock held. */
static void take_chains(struct vblk *b, unsigned int *budget)
{
	struct vio_dev *d = &b->dev;
	struct vblk_io *io;

	if (!vio_mmio_driver_ok(d))
		return;
	/* frozen for a snapshot: chains stay in the ring, taken after it */
	while (!d->frozen && *budget && (io = free_slot(b))) {
		int rc = virtq_pop(queue(b), d->vm, &d->chain);

		if (rc == -HYP_EINVAL)
			vio_mmio_queue_fault(d, 0, queue(b)->fault);
		if (rc <= 0)
			break;
		(*budget)--;
		prepare(b, &d->chain, io);
		if (queue(b)->fault)
			break;
	}
	publish_all(b);
}

/* A request of a driver before a device reset (a guest's, or a reboot's)
 * still at the backend? The reset is not over until it finishes: a new
 * driver's write handed out meanwhile could land before an old one to the
 * same sectors, and an old read overwrite the new driver's buffers. Lock
 * held. */
static bool old_at_backend(const struct vblk *b)
{
	return b->old_at_backend != 0;
}

/* Hand READY requests to the backend, in slot order, the lock held (a
 * completion the backend gives meanwhile, even from inside submit, is
 * posted: vblk_complete() never waits). Stops at the first -HYP_EBUSY (the
 * rest stay READY); a refused request fails. None while a request of an
 * earlier driver is at the backend: its completion runs this again. */
static void submit_ready(struct vblk *b)
{
	bool failed = false;

	if (old_at_backend(b))
		return;
	for (uint32_t m = b->in_state[IO_READY]; m; m &= m - 1) {
		struct vblk_io *io = &b->io[bit_first(m)];
		int rc;

		set_state(b, io, IO_SUBMIT);
		rc = b->ops->submit(b->be, io);
		if (rc == -HYP_EBUSY) {
			set_state(b, io, IO_READY);
			break;
		}
		if (rc) {
			finish(io, VIRTIO_BLK_S_IOERR, 1);
			failed = true;
		}
	}
	if (failed)
		publish_all(b);
}

/* Take the completions the backend posted (vblk_complete()). Lock held. */
static bool take_posted(struct vblk *b)
{
	uint32_t posted = __atomic_exchange_n(&b->posted, 0, __ATOMIC_ACQUIRE);

	for (uint32_t m = posted; m; m &= m - 1) {
		struct vblk_io *io = &b->io[bit_first(m)];

		if (io->state != IO_SUBMIT) {
			/* not a request the backend holds (a backend bug): ignored */
		} else if (io->epoch != b->b.epoch) {
			set_state(b, io, IO_FREE);	/* of a device since reset: nothing to tell */
			b->old_at_backend--;
		} else {
			finish(io, io->done_status == VIRTIO_BLK_S_OK ? VIRTIO_BLK_S_OK
								      : VIRTIO_BLK_S_IOERR,
			       io->done_status == VIRTIO_BLK_S_OK && io->type == VIRTIO_BLK_T_IN ?
			       (uint32_t)io->data_len + 1 : 1);
		}
	}
	return posted;
}

static bool any_posted(struct vblk *b)
{
	return __atomic_load_n(&b->posted, __ATOMIC_RELAXED);
}

/* Publish, take, hand out, until no completion was posted meanwhile (at
 * most RUN_ROUNDS times). At most the queue's size of chains per entry.
 * Lock held. */
static void run(struct vblk *b)
{
	unsigned int budget = queue(b)->size;

	for (unsigned int round = 0; round < RUN_ROUNDS; round++) {
		take_posted(b);
		publish_all(b);
		take_chains(b, &budget);
		submit_ready(b);
		if (!any_posted(b))
			break;
	}
}

/* Let go of the lock, then take what was posted while it was held: the
 * poster found it taken and left the work here (the fence pairs with
 * vblk_complete()'s, so one of the two always sees the other). Never
 * waits: if another hart took the lock meanwhile, that hart's leave() does
 * it. At most RUN_ROUNDS passes: the rest waits for the next entry
 * (vm_io_poll() kicks a device with posted work every millisecond). */
static void leave(struct vblk *b)
{
	for (unsigned int pass = 0; pass < RUN_ROUNDS; pass++) {
		spin_unlock(&b->dev.lock);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (!any_posted(b) || !spin_trylock(&b->dev.lock))
			return;
		run(b);
	}
	spin_unlock(&b->dev.lock);
}

static void vblk_notify(struct vio_dev *d, unsigned int qi)
{
	struct vblk *b = to_blk(d);

	(void)qi;
	spin_lock(&d->lock);
	run(b);
	leave(b);
}

void vblk_complete(struct vblk_io *io, uint8_t status)
{
	struct vblk *b = io->dev;

	io->done_status = status;
	__atomic_fetch_or(&b->posted, 1U << io->index, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!spin_trylock(&b->dev.lock))
		return;		/* its holder takes it in leave() */
	run(b);
	leave(b);
}

/* Requests not with the backend are dropped; those with it are left to
 * finish into the void (their epoch is old). Lock held. */
static void vblk_reset(struct vio_dev *d, unsigned int qi)
{
	struct vblk *b = to_blk(d);

	(void)qi;	/* one queue: a queue reset is a device reset */
	b->b.epoch++;
	b->old_at_backend = 0;
	for (unsigned int i = 0; i < VBLK_INFLIGHT; i++) {
		if (b->io[i].state == IO_READY || b->io[i].state == IO_DONE)
			set_state(b, &b->io[i], IO_FREE);
		else if (b->io[i].state == IO_SUBMIT)
			b->old_at_backend++;	/* every one is of an earlier epoch now */
	}
}

static bool vblk_busy(struct vio_dev *d)
{
	struct vblk *b = to_blk(d);
	bool busy = false;

	spin_lock(&d->lock);
	take_posted(b);		/* a completion no entry took yet */
	busy = b->in_state[IO_SUBMIT] != 0;
	leave(b);
	return busy;
}

/* Drained: every request taken is published (run() hands out what was
 * throttled and publishes what finished; a frozen device takes nothing). */
static bool vblk_drained(struct vio_dev *d)
{
	struct vblk *b = to_blk(d);
	bool drained = true;

	spin_lock(&d->lock);
	run(b);
	drained = b->in_state[IO_FREE] == ALL_IO;
	leave(b);
	return drained;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* struct virtio_blk_config through blk_size (section 5.2.4) */
static void vblk_config(struct vio_dev *d, uint8_t *out)
{
	struct vblk *b = to_blk(d);

	memcpy(out, &b->b.capacity, 8);
	put32(out + 12, b->b.seg_max);
	put32(out + 20, VIRTIO_BLK_SECTOR);
}

static uint64_t offered(bool read_only)
{
	return (1ULL << VIRTIO_BLK_F_SEG_MAX) | (1ULL << VIRTIO_BLK_F_BLK_SIZE) |
	       (1ULL << VIRTIO_BLK_F_FLUSH) | (read_only ? 1ULL << VIRTIO_BLK_F_RO : 0);
}

/* what the snapshot format says a disk offers and holds */
_Static_assert(SNAP_VIO_BLK_FEATURES == ((1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_BLK_F_SEG_MAX) |
					 (1ULL << VIRTIO_BLK_F_BLK_SIZE) | (1ULL << VIRTIO_BLK_F_FLUSH)) &&
	       SNAP_VIO_BLK_F_RO == 1ULL << VIRTIO_BLK_F_RO &&
	       SNAP_VIO_BLK_QUEUE_MAX == VBLK_QUEUE_SIZE && SNAP_VIO_BLK_SEG_MAX == VBLK_SEG_MAX,
	       "docs/snapshot-format.md, virtio_blk");

/* ---- snapshots (docs/snapshot-format.md, "virtio_blk") ---- */

static const uint16_t queue_max[SNAP_VIO_QUEUES] = { VBLK_QUEUE_SIZE, 0 };

#define FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_dev_virtio_blk, n, t), bits, value, ro, live, SNAP_DEV_WHY(n, what) },
static const struct snap_field fields[] = { SNAP_DEV_VIRTIO_BLK(FIELD) };

static const struct vio_kind vblk_kind;

/* "NAME-vdX" NUL-padded, NAME a VM name: what make_serial() writes. */
static bool serial_ok(const char *s)
{
	size_t n = strnlen(s, SNAP_VIO_SERIAL);

	if (n < 5 || n > VM_NAME_LEN - 1 + 4 || memcmp(s + n - 4, "-vd", 3) ||
	    s[n - 1] < 'a' || s[n - 1] >= 'a' + VIO_MMIO_SLOTS)
		return false;
	if (!name_chars_ok(s, n - 4))
		return false;
	for (size_t i = n; i < SNAP_VIO_SERIAL; i++)
		if (s[i])
			return false;
	return true;
}

static const char *vblk_check_state(const struct vm *vm, const void *state, uint32_t *offset)
{
	const struct snap_dev_virtio_blk *s = state;

	*offset = offsetof(struct snap_dev_virtio_blk, seg_max);
	if (!s->seg_max || s->seg_max > VBLK_SEG_MAX)
		return "seg_max: 1..254";
	*offset = offsetof(struct snap_dev_virtio_blk, serial);
	if (!serial_ok(s->serial))
		return "serial: not a GET_ID answer this device gives (NAME-vdX, NUL-padded)";
	return vio_mmio_check_state(vm, &vblk_kind, queue_max, offered(s->read_only),
				    state, offset);
}

static void vblk_save_state(struct vio_dev *d, void *state)
{
	struct vblk *b = to_blk(d);
	struct snap_dev_virtio_blk *s = state;

	spin_lock(&d->lock);
	vio_mmio_save_state(d, state);
	s->capacity = b->b.capacity;
	s->requests = b->b.stats.requests;
	s->bytes = b->b.stats.bytes;
	s->errors = b->b.stats.errors;
	s->drops = b->b.stats.drops;
	s->seg_max = b->b.seg_max;
	s->read_only = b->b.read_only;
	memcpy(s->serial, b->b.serial, sizeof(s->serial));
	spin_unlock(&d->lock);
}

/* The disk as the guest knew it: its size (the caller checked the host
 * disk's), SEG_MAX (the host disk's is at least that), serial, RO. */
static void vblk_load_state(struct vio_dev *d, const void *state)
{
	struct vblk *b = to_blk(d);
	const struct snap_dev_virtio_blk *s = state;

	spin_lock(&d->lock);
	b->b.capacity = s->capacity;
	b->b.stats.requests = s->requests;
	b->b.stats.bytes = s->bytes;
	b->b.stats.errors = s->errors;
	b->b.stats.drops = s->drops;
	b->b.seg_max = s->seg_max;
	b->b.read_only = s->read_only;
	memcpy(b->b.serial, s->serial, sizeof(b->b.serial));
	virtq_init(&d->s.q[0], VBLK_QUEUE_SIZE, (uint16_t)(s->seg_max + 2));
	vio_mmio_load_state(d, state);
	spin_unlock(&d->lock);
}

const struct vio_model virtio_blk_model = {
	.name = "virtio_blk",
	.state_size = sizeof(struct snap_dev_virtio_blk),
	.fields = fields,
	.nr_fields = ARRAY_SIZE(fields),
	.check = vblk_check_state,
	.save = vblk_save_state,
	.load = vblk_load_state,
};

static const struct vio_kind vblk_kind = {
	.name = "blk",
	.device_id = VIRTIO_ID_BLOCK,
	.nr_queues = 1,
	.config_size = 24,
	.config = vblk_config,
	.notify = vblk_notify,
	.reset = vblk_reset,
	.busy = vblk_busy,
	.drained = vblk_drained,
	.model = &virtio_blk_model,
};

bool vblk_kick(struct vm *vm, unsigned int slot, bool held)
{
	struct vio_dev *d = slot < VIO_MMIO_SLOTS ? vm->vio[slot] : NULL;
	struct vblk *b;

	if (!d || d->kind != &vblk_kind)
		return true;
	b = to_blk(d);
	if (!held && !any_posted(b))
		return true;
	if (!spin_trylock(&d->lock))
		return false;
	run(b);
	leave(b);
	return true;
}

/* "<vm name>-vd<letter>": unique on the host, at most 19 bytes and a NUL */
static void make_serial(struct vblk *b, const struct vm *vm, unsigned int slot)
{
	size_t n = strnlen(vm->cfg.name, VM_NAME_LEN - 1);

	memset(b->b.serial, 0, sizeof(b->b.serial));
	memcpy(b->b.serial, vm->cfg.name, n);
	memcpy(b->b.serial + n, "-vd", 3);
	b->b.serial[n + 3] = (char)('a' + slot);
}

int vio_attach_blk(struct vm *vm, unsigned int slot, const struct vblk_backend_ops *ops,
		   void *be)
{
	uint64_t size = ALIGN_UP(sizeof(struct vblk), PAGE_SIZE);
	uint16_t qmax = VBLK_QUEUE_SIZE, chain;
	struct vblk *b;
	int rc;

	if (!ops || !ops->submit || !ops->sectors || !ops->read_only || !ops->seg_max)
		return -HYP_EINVAL;
	b = (struct vblk *)(uintptr_t)mm_alloc(size, PAGE_SIZE);
	if (!b)
		return -HYP_ENOMEM;
	b->dev.alloc_size = size;
	b->ops = ops;
	b->be = be;
	b->b.capacity = ops->sectors(be);
	b->b.read_only = ops->read_only(be);
	b->b.seg_max = MAX(MIN(ops->seg_max(be), (uint32_t)VBLK_SEG_MAX), 1U);
	make_serial(b, vm, slot);
	for (unsigned int i = 0; i < VBLK_INFLIGHT; i++) {
		b->io[i].index = i;
		b->io[i].dev = b;
	}
	b->in_state[IO_FREE] = ALL_IO;	/* zeroed: every request IO_FREE */
	/* header and status beside the data segments */
	chain = (uint16_t)(b->b.seg_max + 2);
	rc = vio_mmio_attach(vm, slot, &b->dev, &vblk_kind, offered(b->b.read_only), &qmax, &chain);
	if (rc)
		mm_free((hpa_t)(uintptr_t)b, size);
	return rc;
}
