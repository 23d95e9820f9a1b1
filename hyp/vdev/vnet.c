/* SPDX-License-Identifier: MIT */
/* virtio-net (virtio 1.2 section 5.1), one queue pair, no offloads
 * (hyp/include/vnet.h; the rules: docs/virtio.md, "virtio-net").
 *
 * Transmit copies the header and the frame out of guest memory (a guest
 * could rewrite a checked frame under a reader), gives the chain back at
 * once and hands the copy to the switch port without the device's lock, so
 * a frame that the switch delivers to another VM (its lock) or back to this
 * one never waits on a lock held here. Receive writes a frame into the next
 * receive buffer under the device's lock. */
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <arch/riscv/encoding.h>
#include <guest_mem.h>
#include <mm.h>
#include <names.h>
#include <snap_table.h>
#include <virtio_mmio.h>
#include <vnet.h>
#include <vm.h>

static const struct vio_kind vnet_kind;

static struct vnet *to_net(struct vio_dev *d)
{
	return container_of(d, struct vnet, dev);
}

/* The header and frame of a transmit chain, copied into @buf (12 + 1514
 * bytes); the frame's length, or 0 if it must be dropped. Lock held. */
static uint32_t take_frame(struct vnet *n, const struct virtq_chain *c, uint8_t *buf)
{
	uint64_t off = 0;

	if (c->nr_read != c->nr_segs)
		return 0;	/* transmit buffers are device-readable only */
	if (c->read_len < VNET_HDR_SIZE + VNET_FRAME_MIN ||
	    c->read_len > VNET_HDR_SIZE + VNET_FRAME_MAX)
		return 0;
	for (unsigned int i = 0; i < c->nr_segs; i++) {
		const void *src = vm_gpa_to_hva(n->dev.vm, c->seg[i].gpa, c->seg[i].len, false);

		if (!src)
			return 0;
		memcpy(buf + off, src, c->seg[i].len);
		off += c->seg[i].len;
	}
	/* flags and gso_type: nothing to do for the device, as no offload
	 * (CSUM, GSO) was offered (section 5.1.6.2) */
	if (buf[0] || buf[1])
		return 0;
	return (uint32_t)(c->read_len - VNET_HDR_SIZE);
}

/* The port's rate limit holds the chain just taken back in the guest's
 * queue: given back untaken (the frame and every one after it wait for
 * vnet_kick()). A chain of a size the switch never gets is dropped without
 * costing tokens; any other costs its frame's (a header with offload flags
 * too: copied, then dropped), so the limit bounds the work of every frame.
 * Lock held. */
static bool held_back(struct vnet *n, const struct virtq_chain *c)
{
	const struct vnet_port_ops *ops = n->ops;
	uint64_t len = c->read_len - VNET_HDR_SIZE;

	if (!ops || !ops->may_send || c->nr_read != c->nr_segs ||
	    c->read_len < VNET_HDR_SIZE + VNET_FRAME_MIN ||
	    c->read_len > VNET_HDR_SIZE + VNET_FRAME_MAX)
		return false;
	if (ops->may_send(n->port, (uint32_t)len))
		return false;
	virtq_unpop(&n->dev.s.q[VNET_TXQ], c->head);
	return true;
}

/* Is a chain waiting in the queue? (taken and given back at once). Lock held. */
static bool chain_waiting(struct vnet *n)
{
	struct virtq *q = &n->dev.s.q[VNET_TXQ];

	if (virtq_pop(q, n->dev.vm, &n->dev.chain) <= 0)
		return false;
	virtq_unpop(q, n->dev.chain.head);
	return true;
}

/* Send at most @budget frames of what the guest queued. @wait: the guest's
 * own notify, which takes the lock whoever holds it; else a kick from the
 * host hart, which never waits: it stops where the lock is taken, and
 * raises each frame's used notification before it lets the lock go (the
 * holder may push nothing). */
static int transmit(struct vnet *n, bool wait, unsigned int budget)
{
	struct vio_dev *d = &n->dev;
	struct virtq *q = &d->s.q[VNET_TXQ];
	uint8_t buf[VNET_HDR_SIZE + VNET_FRAME_MAX];
	bool pushed = false;
	int left = VNET_TX_DONE;

	if (wait)
		spin_lock(&d->lock);
	else if (!spin_trylock(&d->lock))
		return VNET_TX_BUSY;
	for (;; budget--) {
		const struct vnet_port_ops *ops;
		void *port;
		uint32_t len;
		int rc;

		if (d->frozen)
			break;	/* for a snapshot: the chains stay in the ring, sent after it */
		if (!budget) {
			if (chain_waiting(n))
				left = VNET_TX_MORE;
			break;
		}
		rc = virtq_pop(q, d->vm, &d->chain);
		if (rc == -HYP_EINVAL)
			vio_mmio_queue_fault(d, VNET_TXQ, q->fault);
		if (rc <= 0)
			break;
		if (held_back(n, &d->chain))
			break;
		len = take_frame(n, &d->chain, buf);
		/* the copy is all that is used from here: the buffer goes back */
		if (!virtq_push(q, d->vm, d->chain.head, 0))
			pushed = true;
		if (!len) {
			n->n.tx.errors++;
			continue;
		}
		ops = n->ops;
		port = n->port;
		if (!ops) {
			n->n.tx.drops++;	/* detached: the link is down */
			continue;
		}
		n->n.tx.requests++;
		n->n.tx.bytes += len;
		if (!wait && pushed) {
			vio_mmio_used(d, VNET_TXQ);
			pushed = false;
		}
		spin_unlock(&d->lock);
		ops->tx(port, buf + VNET_HDR_SIZE, len);
		if (wait) {
			spin_lock(&d->lock);
		} else if (!spin_trylock(&d->lock)) {
			return VNET_TX_MORE;	/* the holder goes on; a kick may follow */
		}
	}
	if (pushed)
		vio_mmio_used(d, VNET_TXQ);
	spin_unlock(&d->lock);
	return left;
}

static void vnet_notify(struct vio_dev *d, unsigned int qi)
{
	/* receive buffers are taken when a frame comes */
	if (qi == VNET_TXQ)
		transmit(to_net(d), true, d->s.q[VNET_TXQ].size);	/* a queue's worth */
}

/* Write the header and @len bytes of @frame into the chain's writable
 * segments (mapped for writing: marked dirty). Lock held. */
static bool put_frame(struct vnet *n, const struct virtq_chain *c, const void *frame,
		      uint32_t len)
{
	uint8_t hdr[VNET_HDR_SIZE] = { 0 };
	uint64_t total = VNET_HDR_SIZE + len, off = 0;

	hdr[10] = 1;	/* num_buffers (little-endian u16 at 10) */
	for (unsigned int i = c->nr_read; i < c->nr_segs && off < total; i++) {
		uint64_t cnt = MIN(c->seg[i].len, total - off);
		uint8_t *dst = vm_gpa_to_hva(n->dev.vm, c->seg[i].gpa, cnt, true);

		if (!dst)
			return false;
		/* the header's bytes first (a buffer may hold part of it), then
		 * the frame's, each as one copy */
		uint64_t h = off < VNET_HDR_SIZE ? MIN(cnt, VNET_HDR_SIZE - off) : 0;

		if (h)
			memcpy(dst, hdr + off, h);
		if (cnt > h)
			memcpy(dst + h, (const uint8_t *)frame + (off + h - VNET_HDR_SIZE), cnt - h);
		off += cnt;
	}
	return true;
}

void vnet_rx_deliver(struct vnet *n, const void *frame, uint32_t len)
{
	struct vio_dev *d = &n->dev;
	struct virtq *q = &d->s.q[VNET_RXQ];
	struct virtq_chain *c = &d->chain;
	int rc;

	spin_lock(&d->lock);
	/* a paused VM's memory is not written (a snapshot may be reading it) */
	if (len < VNET_FRAME_MIN || len > VNET_FRAME_MAX || !vio_mmio_driver_ok(d) ||
	    !(n->n.link & VIRTIO_NET_S_LINK_UP) || d->vm->state != VM_RUNNING || d->frozen) {
		n->n.rx.drops++;
		goto out;
	}
	rc = virtq_pop(q, d->vm, c);
	if (rc == -HYP_EINVAL)
		vio_mmio_queue_fault(d, VNET_RXQ, q->fault);
	if (rc <= 0) {
		n->n.rx.drops++;	/* no receive buffer */
		goto out;
	}
	if (c->nr_read || c->write_len < VNET_HDR_SIZE + len || !put_frame(n, c, frame, len)) {
		/* a buffer the device may not write, or too small: given back empty */
		n->n.rx.errors++;
		n->n.rx.drops++;
		if (!virtq_push(q, d->vm, c->head, 0))
			vio_mmio_used(d, VNET_RXQ);
		goto out;
	}
	if (!virtq_push(q, d->vm, c->head, VNET_HDR_SIZE + len)) {
		n->n.rx.requests++;
		n->n.rx.bytes += len;
		vio_mmio_used(d, VNET_RXQ);
	}
out:
	spin_unlock(&d->lock);
}

void vnet_port_detach(struct vnet *n)
{
	spin_lock(&n->dev.lock);
	n->ops = NULL;
	n->port = NULL;
	if (n->n.link & VIRTIO_NET_S_LINK_UP) {
		n->n.link &= (uint16_t)~VIRTIO_NET_S_LINK_UP;
		vio_mmio_config_changed(&n->dev);
	}
	spin_unlock(&n->dev.lock);
}

void vnet_port_attach(struct vnet *n, const struct vnet_port_ops *ops, void *port)
{
	spin_lock(&n->dev.lock);
	n->ops = ops;
	n->port = port;
	if (!(n->n.link & VIRTIO_NET_S_LINK_UP)) {
		n->n.link |= VIRTIO_NET_S_LINK_UP;
		vio_mmio_config_changed(&n->dev);
	}
	spin_unlock(&n->dev.lock);
}

int vnet_kick(struct vm *vm, unsigned int slot)
{
	struct vnet *n = vnet_of(vm, slot);

	return n ? transmit(n, false, VNET_KICK_BUDGET) : VNET_TX_DONE;
}

struct vnet *vnet_of(struct vm *vm, unsigned int slot)
{
	if (slot >= VIO_MMIO_SLOTS || !vm->vio[slot] || vm->vio[slot]->kind != &vnet_kind)
		return NULL;
	return to_net(vm->vio[slot]);
}

/* Nothing is held across an exit: a frame is given back when it is copied
 * (transmit) or written (receive). */
static void vnet_reset(struct vio_dev *d, unsigned int qi)
{
	(void)d;
	(void)qi;
}

static bool vnet_busy(struct vio_dev *d)
{
	(void)d;
	return false;
}

/* struct virtio_net_config: mac, status (section 5.1.4) */
static void vnet_config(struct vio_dev *d, uint8_t *out)
{
	struct vnet *n = to_net(d);

	memcpy(out, n->n.mac, 6);
	memcpy(out + 6, &n->n.link, 2);
}

#define OFFERED	((1ULL << VIRTIO_NET_F_MAC) | (1ULL << VIRTIO_NET_F_STATUS))
_Static_assert(SNAP_VIO_NET_FEATURES == (OFFERED | (1ULL << VIRTIO_F_VERSION_1)) &&
	       SNAP_VIO_NET_QUEUE_MAX == VNET_QUEUE_SIZE && SNAP_VIO_LINK_UP == VIRTIO_NET_S_LINK_UP,
	       "docs/snapshot-format.md, virtio_net");

/* ---- snapshots (docs/snapshot-format.md, "virtio_net") ---- */

static const uint16_t queue_max[SNAP_VIO_QUEUES] = { VNET_QUEUE_SIZE, VNET_QUEUE_SIZE };

#define FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_dev_virtio_net, n, t), bits, value, ro, live, SNAP_DEV_WHY(n, what) },
static const struct snap_field fields[] = { SNAP_DEV_VIRTIO_NET(FIELD) };

static bool switch_name_ok(const char *s)
{
	return name_ok(s, SNAP_VIO_SWITCH_NAME);
}

static const char *vnet_check_state(const struct vm *vm, const void *state, uint32_t *offset)
{
	const struct snap_dev_virtio_net *s = state;
	static const uint8_t zero[6];

	*offset = offsetof(struct snap_dev_virtio_net, mac);
	if ((s->mac[0] & 1) || !memcmp(s->mac, zero, sizeof(zero)))
		return "mac: not a unicast address (the group bit, or all zero)";
	*offset = offsetof(struct snap_dev_virtio_net, switch_name);
	if (!switch_name_ok(s->switch_name))
		return "switch_name: [a-z0-9_-]{1,15}, NUL-terminated";
	return vio_mmio_check_state(vm, &vnet_kind, queue_max, OFFERED, state, offset);
}

static void vnet_save_state(struct vio_dev *d, void *state)
{
	struct vnet *n = to_net(d);
	struct snap_dev_virtio_net *s = state;

	spin_lock(&d->lock);
	vio_mmio_save_state(d, state);
	s->tx_requests = n->n.tx.requests;
	s->tx_bytes = n->n.tx.bytes;
	s->tx_errors = n->n.tx.errors;
	s->tx_drops = n->n.tx.drops;
	s->rx_requests = n->n.rx.requests;
	s->rx_bytes = n->n.rx.bytes;
	s->rx_errors = n->n.rx.errors;
	s->rx_drops = n->n.rx.drops;
	s->link = n->n.link;
	memcpy(s->mac, n->n.mac, sizeof(s->mac));
	spin_unlock(&d->lock);
}

/* The NIC as the guest knew it; its port (attached with the state's MAC,
 * or taken off its switch for a link that was down) is the caller's. */
static void vnet_load_state(struct vio_dev *d, const void *state)
{
	struct vnet *n = to_net(d);
	const struct snap_dev_virtio_net *s = state;

	spin_lock(&d->lock);
	n->n.tx = (struct vio_stats){ s->tx_requests, s->tx_bytes, s->tx_errors, s->tx_drops };
	n->n.rx = (struct vio_stats){ s->rx_requests, s->rx_bytes, s->rx_errors, s->rx_drops };
	n->n.link = (uint16_t)s->link;
	memcpy(n->n.mac, s->mac, sizeof(n->n.mac));
	vio_mmio_load_state(d, state);
	spin_unlock(&d->lock);
}

const struct vio_model virtio_net_model = {
	.name = "virtio_net",
	.state_size = sizeof(struct snap_dev_virtio_net),
	.fields = fields,
	.nr_fields = ARRAY_SIZE(fields),
	.check = vnet_check_state,
	.save = vnet_save_state,
	.load = vnet_load_state,
};

static const struct vio_kind vnet_kind = {
	.name = "net",
	.device_id = VIRTIO_ID_NET,
	.nr_queues = 2,
	.config_size = 8,
	.config = vnet_config,
	.notify = vnet_notify,
	.reset = vnet_reset,
	.busy = vnet_busy,
	.model = &virtio_net_model,
};

void vnet_set_mac(struct vnet *n, const uint8_t mac[6])
{
	spin_lock(&n->dev.lock);
	if (memcmp(n->n.mac, mac, sizeof(n->n.mac))) {
		memcpy(n->n.mac, mac, sizeof(n->n.mac));
		vio_mmio_config_changed(&n->dev);
	}
	spin_unlock(&n->dev.lock);
}

int vio_attach_net(struct vm *vm, unsigned int slot, const uint8_t mac[6],
		   const struct vnet_port_ops *ops, void *port)
{
	uint64_t size = ALIGN_UP(sizeof(struct vnet), PAGE_SIZE);
	/* a frame is header and data in one or two buffers; a few more are allowed */
	static const uint16_t qmax[2] = { VNET_QUEUE_SIZE, VNET_QUEUE_SIZE };
	static const uint16_t chain[2] = { 32, 32 };
	struct vnet *n;
	int rc;

	if (!ops || !ops->tx)
		return -HYP_EINVAL;
	n = (struct vnet *)(uintptr_t)mm_alloc(size, PAGE_SIZE);
	if (!n)
		return -HYP_ENOMEM;
	n->dev.alloc_size = size;
	memcpy(n->n.mac, mac, 6);
	n->n.link = VIRTIO_NET_S_LINK_UP;
	n->ops = ops;
	n->port = port;
	rc = vio_mmio_attach(vm, slot, &n->dev, &vnet_kind, OFFERED, qmax, chain);
	if (rc)
		mm_free((hpa_t)(uintptr_t)n, size);
	return rc;
}
