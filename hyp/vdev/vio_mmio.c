/* SPDX-License-Identifier: MIT */
/* The virtio-mmio version 2 register file of a guest virtio device (virtio
 * 1.2 section 4.2.2), for any device kind (hyp/include/vio_mmio.h; the rules:
 * docs/virtio.md, "The virtio-mmio transport"). One window covers QEMU
 * virt's eight slots; an access to a slot without a device reads 0.
 *
 * Everything the guest writes is taken as a value to check, never as a
 * reason to fault: an access of the wrong width or to no register is
 * ignored and reads 0. The queues' configuration goes to the virtqueue
 * walker (virtq.c), which checks it when the driver sets QueueReady. */
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <abi/snapshot_devices.h>
#include <guest_mem.h>
#include <log.h>
#include <mm.h>
#include <mmio.h>
#include <vio_mmio.h>
#include <virtio_mmio.h>
#include <vm.h>

#define VIO_VENDOR_ID	0x43505243u	/* "CRPC" */
/* the status bits a driver sets; NEEDS_RESET is the device's */
#define DRIVER_BITS	(VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | \
			 VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK | \
			 VIRTIO_STATUS_FAILED)
#define NO_NOTIFY	(~0U)

_Static_assert(SNAP_VIO_QUEUES == VIO_MAX_QUEUES, "a state holds every queue a device can have");
_Static_assert(SNAP_VIO_STATUS_BITS == (DRIVER_BITS | VIRTIO_STATUS_NEEDS_RESET),
	       "the status bits a state may hold");
_Static_assert(SNAP_VIO_INT_BITS == (VIRTIO_MMIO_INT_VRING | VIRTIO_MMIO_INT_CONFIG),
	       "the interrupt bits a state may hold");
_Static_assert(SNAP_VIO_FAULTS == VIRTQ_FAULT_COUNT, "a state's fault is a virtq fault");

static uint32_t reg_read(struct vio_dev *d, uint32_t off);
static uint64_t config_read(struct vio_dev *d, uint32_t off, unsigned int width);

/* ---- The read-only window ----
 * Linux reads InterruptStatus at every interrupt: the window's page is
 * mapped read-only into the guest (vm_map_device_page()), holding every
 * register and the config space as reg_read() and config_read() give them,
 * so a load needs no exit; every store still traps to vio_mmio_handle().
 * Whatever changes a readable value rewrites the page under the lock
 * before the lock is let go (and InterruptStatus before the line rises):
 * render() after a register write, a reset, a restore or a config change,
 * render_isr() where only InterruptStatus moves. A VM whose page could not
 * be mapped has view NULL: every access traps, as before. */
static void render(struct vio_dev *d)
{
	uint8_t cfg[VIO_CONFIG_MAX] = { 0 };

	if (!d->view)
		return;
	for (uint32_t off = 0; off < VIRTIO_MMIO_CONFIG; off += 4)
		d->view[off / 4] = reg_read(d, off);
	d->kind->config(d, cfg);
	for (uint32_t off = 0; off < VIO_CONFIG_MAX; off += 4)
		d->view[(VIRTIO_MMIO_CONFIG + off) / 4] =
			off < d->kind->config_size ? (uint32_t)config_read(d, off, 4) : 0;
}

static void render_isr(struct vio_dev *d)
{
	if (d->view)
		d->view[VIRTIO_MMIO_INTERRUPT_STATUS / 4] = d->s.interrupt_status;
}

/* The level follows InterruptStatus. Lock held. */
static void update_line(struct vio_dev *d)
{
	bool level = d->s.interrupt_status != 0;

	if (level != d->s.irq_level) {
		d->s.irq_level = level;
		virq_set_level(d->vm, VIO_MMIO_IRQ(d->slot), level);
	}
}

void vio_mmio_interrupt(struct vio_dev *d, uint32_t bits)
{
	d->s.interrupt_status |= bits;
	render_isr(d);		/* readable before the line rises */
	update_line(d);
}

bool vio_mmio_driver_ok(const struct vio_dev *d)
{
	return d->s.status & VIRTIO_STATUS_DRIVER_OK;
}

bool vio_mmio_has_feature(const struct vio_dev *d, unsigned int bit)
{
	return bit < 64 && (d->s.driver_features & (1ULL << bit));
}

void vio_mmio_used(struct vio_dev *d, unsigned int qi)
{
	if (virtq_should_interrupt(&d->s.q[qi], d->vm))
		vio_mmio_interrupt(d, VIRTIO_MMIO_INT_VRING);
}

/* A configuration change notification is sent only once DRIVER_OK is set
 * (section 2.1.2, 4.2.2.1). */
static void config_interrupt(struct vio_dev *d)
{
	if (vio_mmio_driver_ok(d))
		vio_mmio_interrupt(d, VIRTIO_MMIO_INT_CONFIG);
}

void vio_mmio_queue_fault(struct vio_dev *d, unsigned int qi, enum virtq_fault why)
{
	virtq_fail(&d->s.q[qi], why);
	if (d->s.status & VIRTIO_STATUS_NEEDS_RESET)
		return;
	/* not logged: a guest could fault and reset in a loop; the fault stays
	 * readable in the queue (q->fault) */
	d->s.status |= VIRTIO_STATUS_NEEDS_RESET;
	render(d);
	config_interrupt(d);
}

void vio_mmio_config_changed(struct vio_dev *d)
{
	d->s.config_generation++;
	render(d);
	config_interrupt(d);
}

/* Status 0, a reboot, a destroy: back to the state of attach. Lock held. */
static void device_reset(struct vio_dev *d)
{
	struct vio_mmio_state *s = &d->s;

	d->kind->reset(d, VIO_MAX_QUEUES);
	s->status = 0;
	s->driver_features = 0;
	s->device_features_sel = s->driver_features_sel = s->queue_sel = 0;
	s->interrupt_status = 0;
	for (unsigned int i = 0; i < d->kind->nr_queues; i++)
		virtq_reset(&s->q[i]);
	render(d);
	update_line(d);
}

/* FEATURES_OK is kept only for a subset of the offered features that has
 * VERSION_1 (no legacy interface: section 6.1). */
static bool features_acceptable(const struct vio_mmio_state *s)
{
	return !(s->driver_features & ~s->device_features) &&
	       (s->driver_features & (1ULL << VIRTIO_F_VERSION_1));
}

static void write_status(struct vio_dev *d, uint32_t v)
{
	struct vio_mmio_state *s = &d->s;
	uint32_t old = s->status, now;

	if (!v) {
		device_reset(d);
		return;
	}
	/* a driver only adds bits (section 2.1.2); clearing one is ignored */
	now = old | (v & DRIVER_BITS);
	if ((now & VIRTIO_STATUS_FEATURES_OK) && !(old & VIRTIO_STATUS_FEATURES_OK) &&
	    !features_acceptable(s))
		now &= ~VIRTIO_STATUS_FEATURES_OK;	/* the driver reads it back: refused */
	if (!(now & VIRTIO_STATUS_FEATURES_OK))
		now &= ~VIRTIO_STATUS_DRIVER_OK;	/* no device operation before that */
	s->status = now;
	/* a fault before DRIVER_OK is told when the driver can hear it */
	if ((now & VIRTIO_STATUS_DRIVER_OK) && !(old & VIRTIO_STATUS_DRIVER_OK) &&
	    (now & VIRTIO_STATUS_NEEDS_RESET))
		config_interrupt(d);
}

static struct virtq *selected_queue(struct vio_dev *d)
{
	return d->s.queue_sel < d->kind->nr_queues ? &d->s.q[d->s.queue_sel] : NULL;
}

static uint32_t half(uint64_t v, bool high)
{
	return (uint32_t)(high ? v >> 32 : v);
}

static uint64_t with_half(uint64_t v, bool high, uint32_t part)
{
	return high ? (v & 0xffffffffULL) | ((uint64_t)part << 32)
		    : (v & ~0xffffffffULL) | part;
}

static uint32_t reg_read(struct vio_dev *d, uint32_t off)
{
	struct vio_mmio_state *s = &d->s;
	struct virtq *q = selected_queue(d);

	switch (off) {
	case VIRTIO_MMIO_MAGIC_VALUE:
		return VIRTIO_MMIO_MAGIC;
	case VIRTIO_MMIO_VERSION:
		return VIRTIO_MMIO_VERSION_MODERN;
	case VIRTIO_MMIO_DEVICE_ID:
		return d->kind->device_id;
	case VIRTIO_MMIO_VENDOR_ID:
		return VIO_VENDOR_ID;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		return s->device_features_sel < 2 ?
		       half(s->device_features, s->device_features_sel) : 0;
	case VIRTIO_MMIO_QUEUE_NUM_MAX:
		return q ? q->max_size : 0;	/* 0: no such queue */
	case VIRTIO_MMIO_QUEUE_READY:
		return q && q->ready;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		return s->interrupt_status;
	case VIRTIO_MMIO_STATUS:
		return s->status;
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
		return q ? half(q->desc, off == VIRTIO_MMIO_QUEUE_DESC_HIGH) : 0;
	case VIRTIO_MMIO_QUEUE_DRIVER_LOW:
	case VIRTIO_MMIO_QUEUE_DRIVER_HIGH:
		return q ? half(q->avail, off == VIRTIO_MMIO_QUEUE_DRIVER_HIGH) : 0;
	case VIRTIO_MMIO_QUEUE_DEVICE_LOW:
	case VIRTIO_MMIO_QUEUE_DEVICE_HIGH:
		return q ? half(q->used, off == VIRTIO_MMIO_QUEUE_DEVICE_HIGH) : 0;
	case VIRTIO_MMIO_CONFIG_GENERATION:
		return s->config_generation;
	default:
		return 0;	/* write-only and reserved registers */
	}
}

static void write_queue_ready(struct vio_dev *d, struct virtq *q, uint32_t v)
{
	unsigned int qi = (unsigned int)(q - d->s.q);

	if (v == 1) {
		if (virtq_enable(q, d->vm))
			vio_mmio_queue_fault(d, qi, q->fault);
	} else if (!v && q->ready) {
		/* the driver stops the queue: the work taken from it is forgotten */
		d->kind->reset(d, qi);
		virtq_reset(q);
	}
}

/* A register write; returns the queue to notify, or NO_NOTIFY. Lock held. */
static unsigned int reg_write(struct vio_dev *d, uint32_t off, uint32_t v)
{
	struct vio_mmio_state *s = &d->s;
	struct virtq *q = selected_queue(d);

	switch (off) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		s->device_features_sel = v;
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES:
		/* fixed once the device accepted them */
		if (!(s->status & VIRTIO_STATUS_FEATURES_OK) && s->driver_features_sel < 2)
			s->driver_features = with_half(s->driver_features,
						       s->driver_features_sel, v);
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		s->driver_features_sel = v;
		break;
	case VIRTIO_MMIO_QUEUE_SEL:
		s->queue_sel = v;
		break;
	case VIRTIO_MMIO_QUEUE_NUM:
		/* a size that does not fit 16 bits is refused at QueueReady */
		if (q)
			virtq_set_size(q, v > 0xffff ? 0 : (uint16_t)v);
		break;
	case VIRTIO_MMIO_QUEUE_READY:
		if (q)
			write_queue_ready(d, q, v);
		break;
	case VIRTIO_MMIO_QUEUE_NOTIFY:
		if (v < d->kind->nr_queues && vio_mmio_driver_ok(d))
			return v;
		break;
	case VIRTIO_MMIO_INTERRUPT_ACK:
		s->interrupt_status &= ~v;
		update_line(d);
		break;
	case VIRTIO_MMIO_STATUS:
		write_status(d, v);
		break;
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
		if (q)	/* ignored while the queue is ready (virtq.c) */
			virtq_set_desc(q, with_half(q->desc, off == VIRTIO_MMIO_QUEUE_DESC_HIGH, v));
		break;
	case VIRTIO_MMIO_QUEUE_DRIVER_LOW:
	case VIRTIO_MMIO_QUEUE_DRIVER_HIGH:
		if (q)
			virtq_set_avail(q, with_half(q->avail, off == VIRTIO_MMIO_QUEUE_DRIVER_HIGH, v));
		break;
	case VIRTIO_MMIO_QUEUE_DEVICE_LOW:
	case VIRTIO_MMIO_QUEUE_DEVICE_HIGH:
		if (q)
			virtq_set_used(q, with_half(q->used, off == VIRTIO_MMIO_QUEUE_DEVICE_HIGH, v));
		break;
	default:
		break;	/* read-only and reserved registers */
	}
	return NO_NOTIFY;
}

/* Config space: any width, little-endian; past the kind's size reads 0.
 * Nothing in it is writable (no feature that makes a field so is offered). */
static uint64_t config_read(struct vio_dev *d, uint32_t off, unsigned int width)
{
	uint8_t cfg[VIO_CONFIG_MAX] = { 0 };
	uint64_t v = 0;

	d->kind->config(d, cfg);
	for (unsigned int i = 0; i < width; i++)
		if (off + i < d->kind->config_size)
			v |= (uint64_t)cfg[off + i] << (8 * i);
	return v;
}

int vio_mmio_handle(struct vm *vm, void *priv, struct mmio_access *a)
{
	uint64_t rel = a->gpa - VIO_MMIO_BASE;
	unsigned int slot = (unsigned int)(rel / VIO_MMIO_STRIDE), notify = NO_NOTIFY;
	uint32_t off = (uint32_t)(rel % VIO_MMIO_STRIDE);
	struct vio_dev *d;

	(void)priv;
	if (!a->is_write)
		a->value = 0;
	if (a->gpa < VIO_MMIO_BASE || slot >= VIO_MMIO_SLOTS)
		return 0;
	d = vm->vio[slot];
	if (!d)
		return 0;	/* an empty slot: DeviceID 0 (section 4.2.3.1.1) */
	spin_lock(&d->lock);
	if (off >= VIRTIO_MMIO_CONFIG) {
		if (!a->is_write)
			a->value = config_read(d, off - VIRTIO_MMIO_CONFIG, a->width);
	} else if (a->width == 4) {
		/* registers are 32 bits wide (section 4.2.2.2) */
		if (a->is_write)
			notify = reg_write(d, off, (uint32_t)a->value);
		else
			a->value = reg_read(d, off);
	}
	/* a notify changes nothing readable; an acknowledgement only InterruptStatus */
	if (a->is_write && off == VIRTIO_MMIO_INTERRUPT_ACK)
		render_isr(d);
	else if (a->is_write && off != VIRTIO_MMIO_QUEUE_NOTIFY)
		render(d);
	spin_unlock(&d->lock);
	/* outside the lock: the kind may hand work to a host device */
	if (notify != NO_NOTIFY)
		d->kind->notify(d, notify);
	return 0;
}

int vio_mmio_attach(struct vm *vm, unsigned int slot, struct vio_dev *d,
		    const struct vio_kind *kind, uint64_t features,
		    const uint16_t *queue_max, const uint16_t *chain_max)
{
	static const struct mmio_region window = {
		VIO_MMIO_BASE, VIO_MMIO_SLOTS * VIO_MMIO_STRIDE, vio_mmio_handle, NULL
	};
	bool first = true;
	int rc;

	if (slot >= VIO_MMIO_SLOTS || !kind || kind->nr_queues > VIO_MAX_QUEUES ||
	    kind->config_size > VIO_CONFIG_MAX)
		return -HYP_EINVAL;
	if (vm->vio[slot])
		return -HYP_EEXIST;
	for (unsigned int i = 0; i < VIO_MMIO_SLOTS; i++)
		if (vm->vio[i])
			first = false;
	if (first) {
		rc = vm_mmio_register(vm, &window);
		if (rc)
			return rc;
	}
	d->kind = kind;
	d->vm = vm;
	d->slot = slot;
	d->s.device_features = features | (1ULL << VIRTIO_F_VERSION_1);
	for (unsigned int i = 0; i < kind->nr_queues; i++)
		virtq_init(&d->s.q[i], queue_max[i], chain_max[i]);
	d->view = vm_map_device_page(vm, VIO_MMIO_BASE + slot * VIO_MMIO_STRIDE);
	render(d);
	vm->vio[slot] = d;
	return 0;
}

void vio_reset_all(struct vm *vm)
{
	for (unsigned int i = 0; i < VIO_MMIO_SLOTS; i++) {
		struct vio_dev *d = vm->vio[i];

		if (!d)
			continue;
		spin_lock(&d->lock);
		device_reset(d);
		/* a reboot runs the VM: a pause its guest's reset overtook (its
		 * freeze) must not leave the new boot's devices frozen */
		d->frozen = false;
		spin_unlock(&d->lock);
	}
}

bool vio_quiesce(struct vm *vm)
{
	bool idle = true;

	vio_reset_all(vm);
	for (unsigned int i = 0; i < VIO_MMIO_SLOTS; i++)
		if (vm->vio[i] && vm->vio[i]->kind->busy(vm->vio[i]))
			idle = false;
	return idle;
}

void vio_detach_all(struct vm *vm)
{
	for (unsigned int i = 0; i < VIO_MMIO_SLOTS; i++) {
		struct vio_dev *d = vm->vio[i];

		if (!d)
			continue;
		vm->vio[i] = NULL;
		spin_lock(&d->lock);
		device_reset(d);	/* what is still out touches no guest memory */
		d->view = NULL;		/* nor the VM's block, which goes back now */
		spin_unlock(&d->lock);
		/* a host device still holding a request of it completes into
		 * the device: it is kept (leaked) rather than freed under it */
		if (d->kind->busy(d))
			pr_info("vm %s: virtio %s (slot %u) still busy at destroy: kept",
				vm->cfg.name, d->kind->name, i);
		else
			mm_free((hpa_t)(uintptr_t)d, d->alloc_size);
	}
}

/* ---- snapshots of the transport (docs/snapshot-format.md, "VIRTIO") ---- */

void vio_mmio_save_state(const struct vio_dev *d, struct snap_vio_transport *t)
{
	const struct vio_mmio_state *s = &d->s;

	memset(t, 0, sizeof(*t));
	t->device_features = s->device_features;
	t->driver_features = s->driver_features;
	t->status = s->status;
	t->device_features_sel = s->device_features_sel;
	t->driver_features_sel = s->driver_features_sel;
	t->queue_sel = s->queue_sel;
	t->interrupt_status = s->interrupt_status;
	t->config_generation = s->config_generation;
	for (unsigned int i = 0; i < d->kind->nr_queues; i++) {
		const struct virtq *q = &s->q[i];

		t->q_desc[i] = q->desc;
		t->q_avail[i] = q->avail;
		t->q_used[i] = q->used;
		t->q_ready[i] = q->ready;
		t->q_fault[i] = q->fault;
		t->q_size[i] = q->size;
		t->q_next_avail[i] = q->next_avail;
		t->q_next_used[i] = q->next_used;
	}
}

#define AT(f)		(uint32_t)offsetof(struct snap_vio_transport, f)
#define AT_Q(f, i)	(uint32_t)(offsetof(struct snap_vio_transport, f) + (i) * sizeof(((struct snap_vio_transport *)0)->f[0]))

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Queue @i of a device in a state: what the driver's writes and the
 * device's work can leave there (docs/virtio.md, "Virtqueue validation"). */
static const char *check_queue(const struct vm *vm, uint16_t max, const struct snap_vio_transport *t,
			       unsigned int i, uint32_t *offset)
{
	uint32_t fault = t->q_fault[i], size = t->q_size[i];
	uint16_t out = (uint16_t)(t->q_next_avail[i] - t->q_next_used[i]);
	bool ready = t->q_ready[i];

	*offset = AT_Q(q_fault, i);
	if (fault && !(t->status & VIRTIO_STATUS_NEEDS_RESET))
		return "q_fault: a faulted queue sets NEEDS_RESET in status";
	if (fault >= VIRTQ_FAULT_AVAIL_IDX && !ready)
		return "q_fault: a chain's fault on a queue that is not ready";
	if (fault && fault < VIRTQ_FAULT_AVAIL_IDX && ready)
		return "q_fault: a configuration fault on a ready queue";
	if (fault >= VIRTQ_FAULT_AVAIL_IDX && !(t->status & VIRTIO_STATUS_DRIVER_OK))
		return "q_fault: a chain's fault before DRIVER_OK (no chain is taken before it)";
	if (!ready) {
		*offset = t->q_next_avail[i] ? AT_Q(q_next_avail, i) : AT_Q(q_next_used, i);
		if (t->q_next_avail[i] || t->q_next_used[i])
			return "a queue that is not ready has taken no chain (its indices are 0)";
		return NULL;
	}
	*offset = AT_Q(q_size, i);
	if (!is_pow2(size) || size > max)
		return "q_size: a ready queue's size is a power of two up to the device's maximum";
	*offset = AT_Q(q_desc, i);
	if (t->q_desc[i] % 16)
		return "q_desc: the descriptor table is 16-byte aligned";
	if (!vm_gpa_range_is_ram(vm, t->q_desc[i], 16ULL * size))
		return "q_desc: the descriptor table is not inside the VM's RAM";
	*offset = AT_Q(q_avail, i);
	if (t->q_avail[i] % 2)
		return "q_avail: the available ring is 2-byte aligned";
	if (!vm_gpa_range_is_ram(vm, t->q_avail[i], 6 + 2ULL * size))
		return "q_avail: the available ring is not inside the VM's RAM";
	*offset = AT_Q(q_used, i);
	if (t->q_used[i] % 4)
		return "q_used: the used ring is 4-byte aligned";
	if (!vm_gpa_range_is_ram(vm, t->q_used[i], 6 + 8ULL * size))
		return "q_used: the used ring is not inside the VM's RAM";
	*offset = AT_Q(q_next_used, i);
	if (!fault && out)
		return "q_next_used: chains in flight (a state is taken drained: q_next_used is "
		       "q_next_avail)";
	if (out > size)
		return "q_next_used: more chains in flight than the queue holds";
	*offset = AT_Q(q_next_avail, i);
	if (!(t->status & VIRTIO_STATUS_DRIVER_OK) && t->q_next_avail[i])
		return "q_next_avail: a chain taken before DRIVER_OK";
	return NULL;
}

const char *vio_mmio_check_state(const struct vm *vm, const struct vio_kind *kind,
				 const uint16_t *queue_max, uint64_t offered,
				 const struct snap_vio_transport *t, uint32_t *offset)
{
	uint32_t st = t->status;

	*offset = AT(device_features);
	if (t->device_features != (offered | (1ULL << VIRTIO_F_VERSION_1)))
		return "device_features: not what the device offers";
	*offset = AT(status);
	if ((st & VIRTIO_STATUS_DRIVER_OK) && !(st & VIRTIO_STATUS_FEATURES_OK))
		return "status: DRIVER_OK without FEATURES_OK";
	*offset = AT(driver_features);
	if ((st & VIRTIO_STATUS_FEATURES_OK) &&
	    ((t->driver_features & ~t->device_features) ||
	     !(t->driver_features & (1ULL << VIRTIO_F_VERSION_1))))
		return "driver_features: with FEATURES_OK, a subset of device_features with VERSION_1";
	*offset = AT(interrupt_status);
	if (t->interrupt_status && !(st & VIRTIO_STATUS_DRIVER_OK))
		return "interrupt_status: an interrupt before DRIVER_OK";
	for (unsigned int i = 0; i < SNAP_VIO_QUEUES; i++) {
		const char *why;

		if (i >= kind->nr_queues) {
			/* a queue the device does not have holds nothing */
			*offset = AT_Q(q_desc, i);
			if (t->q_desc[i] || t->q_avail[i] || t->q_used[i] || t->q_ready[i] ||
			    t->q_fault[i] || t->q_size[i] || t->q_next_avail[i] || t->q_next_used[i])
				return "a queue this device does not have is not all zero";
			continue;
		}
		why = check_queue(vm, queue_max[i], t, i, offset);
		if (why)
			return why;
	}
	return NULL;
}

void vio_mmio_load_state(struct vio_dev *d, const struct snap_vio_transport *t)
{
	struct vio_mmio_state *s = &d->s;

	s->device_features = t->device_features;
	s->driver_features = t->driver_features;
	s->status = t->status;
	s->device_features_sel = t->device_features_sel;
	s->driver_features_sel = t->driver_features_sel;
	s->queue_sel = t->queue_sel;
	s->interrupt_status = t->interrupt_status;
	s->config_generation = t->config_generation;
	for (unsigned int i = 0; i < d->kind->nr_queues; i++) {
		struct virtq *q = &s->q[i];

		virtq_reset(q);		/* nothing held; the limits stay */
		q->size = (uint16_t)t->q_size[i];
		q->desc = t->q_desc[i];
		q->avail = t->q_avail[i];
		q->used = t->q_used[i];
		q->ready = t->q_ready[i];
		q->fault = (enum virtq_fault)t->q_fault[i];
		q->next_avail = (uint16_t)t->q_next_avail[i];
		q->next_used = (uint16_t)t->q_next_used[i];
		/* a faulted queue's abandoned chains (it refuses everything until
		 * reset, which forgets them) */
		q->in_flight = (uint16_t)(q->next_avail - q->next_used);
	}
	/* the line as the saved InterruptStatus says, driven either way: a
	 * pending interrupt is raised again on the VM's PLIC */
	s->irq_level = s->interrupt_status != 0;
	render(d);
	virq_set_level(d->vm, VIO_MMIO_IRQ(d->slot), s->irq_level);
}

/* ---- pausing for the state: drain, then rescan ---- */

void vio_freeze(struct vm *vm)
{
	for (unsigned int i = 0; i < VIO_MMIO_SLOTS; i++) {
		struct vio_dev *d = vm->vio[i];

		if (!d)
			continue;
		spin_lock(&d->lock);
		d->frozen = true;
		spin_unlock(&d->lock);
	}
}

bool vio_drained(struct vm *vm)
{
	bool drained = true;

	for (unsigned int i = 0; i < VIO_MMIO_SLOTS; i++) {
		struct vio_dev *d = vm->vio[i];

		if (d && d->kind->drained && !d->kind->drained(d))
			drained = false;
	}
	return drained;
}

void vio_resume(struct vm *vm)
{
	for (unsigned int i = 0; i < VIO_MMIO_SLOTS; i++) {
		struct vio_dev *d = vm->vio[i];
		bool ok;

		if (!d)
			continue;
		spin_lock(&d->lock);
		d->frozen = false;
		ok = vio_mmio_driver_ok(d);
		spin_unlock(&d->lock);
		/* what the driver made available while we took no chain (or before
		 * a snapshot) would otherwise wait for its next notify */
		for (unsigned int qi = 0; ok && qi < d->kind->nr_queues; qi++)
			d->kind->notify(d, qi);
	}
}
