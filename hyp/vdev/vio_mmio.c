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
#include <errno.h>
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

/* The level follows InterruptStatus. Lock held. */
static void update_line(struct vio_dev *d)
{
	bool level = d->s.interrupt_status != 0;

	if (level != d->s.irq_level) {
		d->s.irq_level = level;
		vplic_set_level(d->vm, VIO_MMIO_IRQ(d->slot), level);
	}
}

void vio_mmio_interrupt(struct vio_dev *d, uint32_t bits)
{
	d->s.interrupt_status |= bits;
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
	config_interrupt(d);
}

void vio_mmio_config_changed(struct vio_dev *d)
{
	d->s.config_generation++;
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
