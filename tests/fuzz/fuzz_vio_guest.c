/* SPDX-License-Identifier: MIT */
/* The harness the guest virtio device targets share (fuzz_vio_guest.h). */
#include <string.h>
#include <guest_mem.h>
#include <mm.h>
#include <mmio.h>
#include <vio_mmio.h>
#include <virtio_mmio.h>
#include "fuzz_check.h"
#include "fuzz_vio_guest.h"

struct vm fuzz_vm;
uint8_t *fuzz_ram;
bool fuzz_line;

static struct {
	struct fuzz_vio_queue q[VIO_MAX_QUEUES];
	uint16_t qnum[VIO_MAX_QUEUES];
	unsigned int nr;
} init;

/* ---- what the device models call outside vdev/ ---- */

uint64_t time_now(void)
{
	return 0;
}

void virq_set_level(struct vm *v, unsigned int irq, bool level)
{
	CHECK(v == &fuzz_vm);
	CHECK(irq == VIO_MMIO_IRQ(0));
	fuzz_line = level;
}

void pr_info(const char *fmt, ...)
{
	(void)fmt;
}

hpa_t mm_alloc(uint64_t size, uint64_t align)
{
	void *p = aligned_alloc(align, ALIGN_UP(size, align));

	if (p)
		memset(p, 0, size);
	return (hpa_t)(uintptr_t)p;
}

void mm_free(hpa_t pa, uint64_t size)
{
	(void)size;
	free((void *)(uintptr_t)pa);
}

static bool in_ram(uint64_t gpa, uint64_t len)
{
	unsigned __int128 end = (unsigned __int128)gpa + len;

	return gpa >= FUZZ_RAM_GPA && end <= (unsigned __int128)FUZZ_RAM_GPA + FUZZ_RAM_SIZE;
}

bool vm_gpa_range_is_ram(const struct vm *v, gpa_t gpa, uint64_t len)
{
	CHECK(v == &fuzz_vm);
	return in_ram(gpa, len);
}

/* as if something counted writes: the models take their marking path */
bool vm_ram_counts_writes(const struct vm *vm)
{
	(void)vm;
	return true;
}

void *vm_gpa_to_hva(struct vm *v, gpa_t gpa, uint64_t len, bool write)
{
	(void)write;
	CHECK(v == &fuzz_vm);
	if (!in_ram(gpa, len))
		return NULL;
	return fuzz_ram + (gpa - FUZZ_RAM_GPA);
}

/* The window's read-only page (vio_mmio.c, "The read-only window"). */
static uint32_t window_page[SZ_4K / 4] __attribute__((aligned(SZ_4K)));

void *vm_map_device_page(struct vm *v, gpa_t gpa)
{
	CHECK(v == &fuzz_vm && gpa == VIO_MMIO_BASE);	/* slot 0's window */
	memset(window_page, 0, sizeof(window_page));
	return window_page;
}

void fuzz_vio_check_view(void)
{
	const struct vio_dev *d = fuzz_vm.vio[0];

	CHECK(d && d->view == window_page);
	/* what a guest load reads without an exit is what the handler answers:
	 * every register and the config space, at every moment */
	for (uint32_t off = 0; off < VIRTIO_MMIO_CONFIG + VIO_CONFIG_MAX; off += 4)
		CHECK(window_page[off / 4] == (uint32_t)fuzz_vio_mmio(off, 4, false, 0));
}

/* ---- the VM ---- */

void fuzz_vio_reset(const uint8_t *image, size_t len)
{
	if (!fuzz_ram)
		fuzz_ram = malloc(FUZZ_RAM_SIZE);
	memset(fuzz_ram, 0, FUZZ_RAM_SIZE);
	memcpy(fuzz_ram, image, MIN(len, (size_t)FUZZ_RAM_SIZE));
	memset(&fuzz_vm, 0, sizeof(fuzz_vm));
	memcpy(fuzz_vm.cfg.name, "fuzz", 5);
	fuzz_vm.cfg.ram_gpa = FUZZ_RAM_GPA;
	fuzz_vm.cfg.ram_size = FUZZ_RAM_SIZE;
	fuzz_vm.ram_hpa = (hpa_t)(uintptr_t)fuzz_ram;	/* one host range, as the hypervisor's */
	fuzz_vm.state = VM_RUNNING;
	fuzz_line = false;
}

/* ---- the guest's side ---- */

uint64_t fuzz_vio_mmio(uint32_t off, unsigned int width, bool write, uint64_t value)
{
	struct mmio_region *r = vm_mmio_find(&fuzz_vm, VIO_MMIO_BASE + off);
	struct mmio_access a = { .gpa = VIO_MMIO_BASE + off, .width = width,
				 .is_write = write, .value = value };

	CHECK(r != NULL);
	CHECK(r->handle(&fuzz_vm, r->priv, &a) == 0);	/* never a guest fault */
	return a.value;
}

void fuzz_vio_wr(uint32_t off, uint32_t v)
{
	fuzz_vio_mmio(off, 4, true, v);
}

/* the init of the queues last given to fuzz_vio_driver_init() */
static void driver_init(void)
{
	fuzz_vio_wr(VIRTIO_MMIO_STATUS, 0);
	fuzz_vio_wr(VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	fuzz_vio_wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	fuzz_vio_wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	fuzz_vio_wr(VIRTIO_MMIO_DRIVER_FEATURES,
		    (uint32_t)fuzz_vio_mmio(VIRTIO_MMIO_DEVICE_FEATURES, 4, false, 0));
	fuzz_vio_wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	fuzz_vio_wr(VIRTIO_MMIO_DRIVER_FEATURES, 1);
	fuzz_vio_wr(VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
					VIRTIO_STATUS_FEATURES_OK);
	CHECK(fuzz_vio_mmio(VIRTIO_MMIO_STATUS, 4, false, 0) & VIRTIO_STATUS_FEATURES_OK);
	for (unsigned int qi = 0; qi < init.nr; qi++) {
		const struct fuzz_vio_queue *q = &init.q[qi];

		fuzz_vio_wr(VIRTIO_MMIO_QUEUE_SEL, qi);
		fuzz_vio_wr(VIRTIO_MMIO_QUEUE_NUM, init.qnum[qi]);
		fuzz_vio_wr(VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)(FUZZ_RAM_GPA + q->desc));
		fuzz_vio_wr(VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)(FUZZ_RAM_GPA + q->avail));
		fuzz_vio_wr(VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)(FUZZ_RAM_GPA + q->used));
		fuzz_vio_wr(VIRTIO_MMIO_QUEUE_READY, 1);
	}
	fuzz_vio_wr(VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
					VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
}

void fuzz_vio_driver_init(const struct fuzz_vio_queue *q, const uint16_t *qnum, unsigned int nr)
{
	CHECK(nr <= VIO_MAX_QUEUES);
	memcpy(init.q, q, nr * sizeof(*q));
	memcpy(init.qnum, qnum, nr * sizeof(*qnum));
	init.nr = nr;
	driver_init();
}

bool fuzz_vio_guest_op(unsigned int kind, uint8_t a, uint16_t b, uint16_t c)
{
	unsigned int w;

	switch (kind) {
	case FUZZ_OP_RAM:
		if (b < FUZZ_RAM_SIZE - 1)
			memcpy(fuzz_ram + b, &c, 2);
		return true;
	case FUZZ_OP_WRITE:
		fuzz_vio_wr(b & 0xffc, c | (uint32_t)a << 16);
		return true;
	case FUZZ_OP_READ:
		w = 1U << (a & 3);
		fuzz_vio_mmio((b & 0xfff) & ~(w - 1), w, false, 0);
		return true;
	case FUZZ_OP_REINIT:
		driver_init();
		return true;
	default:
		return false;
	}
}
