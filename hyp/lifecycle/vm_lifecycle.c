/* SPDX-License-Identifier: MIT */
/* VM lifecycle: create from a description (at boot or at run time), load and
 * reset, destroy; and the table of host images VMs boot from. */
#include <arch/riscv/csr.h>
#include <string.h>
#include <errno.h>
#include <entropy.h>
#include <fdt_guest.h>
#include <gstage.h>
#include <guest_mem.h>
#include <hart.h>
#include <imsic_files.h>
#include <log.h>
#include <mm.h>
#include <printf.h>
#include <sched.h>
#include <tlb.h>
#include <vio_mmio.h>
#include <vimsic.h>
#include <vm.h>
#include <vm_io.h>
#include <vm_lifecycle.h>
#include <vsbi.h>

static struct host_image images[HOST_MAX_IMAGES];
static unsigned int nr_images;
static uint64_t vm_serial;
static struct spinlock create_lock = SPINLOCK_INIT;

int image_register(const char *name, hpa_t addr, uint64_t size)
{
	if (nr_images == HOST_MAX_IMAGES || strlen(name) >= VM_IMAGE_NAME_LEN || image_find(name))
		return -HYP_EINVAL;
	memcpy(images[nr_images].name, name, strlen(name) + 1);
	images[nr_images].addr = addr;
	images[nr_images].size = size;
	nr_images++;
	return 0;
}

const struct host_image *image_find(const char *name)
{
	for (unsigned int i = 0; i < nr_images; i++)
		if (!strcmp(images[i].name, name))
			return &images[i];
	return NULL;
}

const struct host_image *image_at(unsigned int i)
{
	return i < nr_images ? &images[i] : NULL;
}


/* RISC-V Linux Image header (Documentation/arch/riscv/boot-image-header.rst). */
#define IMAGE_MAGIC2_OFF	0x38
#define IMAGE_MAGIC2		0x05435352U	/* "RSC\x05" */
#define IMAGE_TEXT_OFFSET_OFF	8
#define IMAGE_SIZE_OFF		16

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* Where the kernel goes and how much RAM it claims (bss included). */
static int kernel_layout(struct vm *vm, uint64_t *load_off, uint64_t *claim)
{
	const uint8_t *img = (const uint8_t *)(uintptr_t)vm->kernel.hpa;

	*load_off = VM_KERNEL_OFFSET;
	*claim = vm->kernel.size;
	if (vm->kernel.size >= 64 && (uint32_t)rd64(img + IMAGE_MAGIC2_OFF) == IMAGE_MAGIC2) {
		uint64_t text = rd64(img + IMAGE_TEXT_OFFSET_OFF);
		uint64_t size = rd64(img + IMAGE_SIZE_OFF);

		if (text & (PAGE_SIZE - 1) || text >= vm->cfg.ram_size)
			return -HYP_EINVAL;
		*load_off = text ? text : VM_KERNEL_OFFSET;
		*claim = MAX(size, vm->kernel.size);
	}
	if (*claim > vm->cfg.ram_size - *load_off - VM_FDT_MAX)
		return -HYP_ERANGE;
	return 0;
}

int vm_reset(struct vm *vm)
{
	static char fdt_buf[VM_FDT_MAX];	/* callers serialize (boot, or the reset claim) */
	static struct spinlock fdt_lock = SPINLOCK_INIT;
	struct guest_fdt_info gi = { 0 };
	uint64_t load_off, claim;
	int rc;

	if (!vm->kernel.size) {
		vm_stop(vm, "cannot boot: its kernel image '%s' is not on this host",
			vm->cfg.kernel_image);
		return -HYP_ENOENT;
	}
	if (kernel_layout(vm, &load_off, &claim)) {
		vm_stop(vm, "kernel image (%lu bytes) does not fit in %lu MiB of guest RAM",
			(unsigned long)vm->kernel.size, (unsigned long)(vm->cfg.ram_size >> 20));
		return -HYP_ERANGE;
	}
	/* A host device still doing a request of the last boot: its read would
	 * land in the new boot's memory, its write after the new boot's writes
	 * to the same sectors. The devices are reset (nothing new is taken);
	 * the reboot is tried again every millisecond until they are done. */
	if (!vio_quiesce(vm)) {
		sched_reboot_later(vm, time_now() + timebase_hz / 1000);
		return -HYP_EBUSY;
	}
	vm->htimedelta = 0;	/* a fresh boot: guest time is host time */
	if (vm->cfg.boot_count)	/* a reboot must not see the previous run's memory */
		vm_ram_discard(vm);
	vm->kernel_gpa = vm->cfg.ram_gpa + load_off;
	vm->fdt_gpa = vm->cfg.ram_gpa + vm->cfg.ram_size - VM_FDT_MAX;
	vm_copy_to_guest(vm, vm->kernel_gpa, (void *)(uintptr_t)vm->kernel.hpa, vm->kernel.size);
	if (vm->initrd.size) {
		gpa_t start = ALIGN_DOWN(vm->fdt_gpa - vm->initrd.size, PAGE_SIZE);

		if (vm->initrd.size > vm->fdt_gpa - vm->cfg.ram_gpa ||
		    start < vm->kernel_gpa + claim) {
			vm_stop(vm, "initrd (%lu bytes) does not fit beside the kernel",
				(unsigned long)vm->initrd.size);
			return -HYP_ERANGE;
		}
		vm_copy_to_guest(vm, start, (void *)(uintptr_t)vm->initrd.hpa, vm->initrd.size);
		gi.initrd_start = start;
		gi.initrd_end = start + vm->initrd.size;
	}
	/* never the seed of an earlier boot or of the slot's earlier tenant */
	entropy_fresh(gi.rng_seed, sizeof(gi.rng_seed));
	spin_lock(&fdt_lock);
	rc = fdt_guest_build(vm, &gi, fdt_buf, sizeof(fdt_buf));
	if (!rc)
		vm_copy_to_guest(vm, vm->fdt_gpa, fdt_buf, sizeof(fdt_buf));
	spin_unlock(&fdt_lock);
	if (rc) {
		vm_stop(vm, "cannot build the guest device tree (libfdt error %d)", rc);
		return -HYP_EINVAL;
	}
	for (unsigned int i = 0; i < vdev_count; i++)
		vdev_all[i]->reset(vm);	/* the APLIC's too (aplic_ops) */
	if (vm_is_aia(vm))
		imsic_files_vm_release(vm);	/* a reboot: its files come back first */
	vio_reset_all(vm);
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		/* a new boot counts its own violations; the VM keeps the total */
		vm->stats.cfi_lp_earlier += v->cfi_stats.swcheck_lp;
		vm->stats.cfi_ss_earlier += v->cfi_stats.swcheck_ss;
		memset(&v->cfi_stats, 0, sizeof(v->cfi_stats));
		vcpu_reset(v, vm->kernel_gpa, vm->fdt_gpa);
		if (vm_is_aia(vm))
			vimsic_reset(v);
		v->g.hsm.state = i ? VCPU_HSM_STOPPED : VCPU_HSM_STARTED;
	}
	pr_info("vm %s: boot %u, %u vcpu(s), %lu MiB RAM, kernel at 0x%lx, dtb at 0x%lx%s (t=%lu)",
		vm->cfg.name, vm->cfg.boot_count, vm->cfg.nr_vcpus, (unsigned long)(vm->cfg.ram_size >> 20),
		(unsigned long)vm->kernel_gpa, (unsigned long)vm->fdt_gpa,
		vm->initrd.size ? ", initrd" : "", (unsigned long)time_now());
	vm->cfg.boot_count++;
	vm_start(vm);
	return 0;
}


static const char *check_desc(const struct vm_desc *d, bool need_images)
{
	if (!d->name[0] || strnlen(d->name, VM_NAME_LEN) == VM_NAME_LEN)
		return "bad name";
	if (!d->vcpus || d->vcpus > VM_MAX_VCPUS)
		return "vcpus must be 1..8";
	if (d->memory < 4 * SZ_2M || d->memory & (SZ_2M - 1) ||
	    d->memory > (1UL << GSTAGE_GPA_BITS) - VM_GUEST_RAM_BASE)
		return "memory must be a multiple of 2 MiB, at least 8 MiB";
	if ((unsigned int)d->cfi > CFI_POLICY_OFF)
		return "unknown cfi policy";
	if (d->irqchip == VM_IRQCHIP_AIA && !hart_caps.ssaia)
		return "irqchip aia needs a host CPU with Ssaia (an AIA machine: carapace-run --aia); "
		       "this one has none";
	if ((unsigned int)d->irqchip > VM_IRQCHIP_AIA)
		return "unknown irqchip";
	if (strnlen(d->bootargs, VM_BOOTARGS_LEN) == VM_BOOTARGS_LEN)
		return "bootargs too long";
	if (need_images && !image_find(d->kernel))
		return "no such kernel image";
	if (need_images && d->initrd[0] && !image_find(d->initrd))
		return "no such initrd image";
	return NULL;
}

/* A free slot, claimed under the scheduler lock (RESETTING: not scheduled,
 * and a failing first reset can still stop it with a reason). */
static struct vm *claim_slot(const char *name, const char **why)
{
	struct vm *vm = NULL;

	sched_lock();
	if (vm_find(name)) {
		*why = "a VM with that name exists";
	} else {
		for (unsigned int i = 0; i < VM_MAX && !vm; i++)
			if (!vm_slot_used(&vms[i]))
				vm = &vms[i];
		if (vm) {
			unsigned int index = (unsigned int)(vm - vms);

			vm->state = VM_RESETTING;
			memcpy(vm->cfg.name, name, VM_NAME_LEN);	/* reserved */
			if (index + 1 > nr_vms)
				nr_vms = index + 1;
		} else {
			*why = "no free VM slot (8 VMs at most)";
		}
	}
	sched_unlock();
	return vm;
}

static void release_slot(struct vm *vm)
{
	sched_lock();
	vm->state = VM_EMPTY;	/* the name stays, for whoever reports the destroy */
	vm->cfg.nr_vcpus = 0;
	sched_unlock();
}

int vm_alloc(const struct vm_desc *d, bool need_images, struct vm **out, const char **why)
{
	const struct host_image *k, *r;
	struct vm *vm;
	unsigned int index;

	*why = check_desc(d, need_images);
	if (*why)
		return -HYP_EINVAL;
	spin_lock(&create_lock);	/* one creation at a time: names stay unique */
	vm = claim_slot(d->name, why);
	if (!vm) {
		spin_unlock(&create_lock);
		return vm_find(d->name) ? -HYP_EEXIST : -HYP_ENOMEM;
	}
	index = (unsigned int)(vm - vms);
	/* a slot may have been used before: start from nothing but the locks */
	memset(&vm->cfg, 0, sizeof(vm->cfg));
	memset(&vm->vcpus, 0, sizeof(vm->vcpus));
	memset(&vm->uart.s, 0, sizeof(vm->uart.s));
	memset(&vm->plic.s, 0, sizeof(vm->plic.s));
	memset(&vm->aplic.s, 0, sizeof(vm->aplic.s));
	memset(&vm->genid.s, 0, sizeof(vm->genid.s));
	memset(&vm->stats, 0, sizeof(vm->stats));
	vm->index = index;
	vm->serial = ++vm_serial;
	vm->failed = false;
	vm->reason[0] = '\0';
	vm->nr_mmio = 0;
	vm->cow = NULL;
	vm->moved_in = false;
	vm->mig_unconfirmed = VM_MIG_CONFIRMED;
	vm->page_log = vm->page_sticky = NULL;
	vm->log_tables = 0;
	vm->line_len = 0;
	console_filter_reset(&vm->con_filter);
	memcpy(vm->cfg.name, d->name, VM_NAME_LEN);
	vm->cfg.ram_gpa = VM_GUEST_RAM_BASE;
	vm->cfg.ram_size = d->memory;
	vm->cfg.cfi_requested = vm->cfg.cfi_policy = d->cfi;
	if (d->cfi == CFI_POLICY_DELEGATE && !cfi_delegate_exact()) {
		vm->cfg.cfi_policy = CFI_POLICY_TRAP;
		pr_info("vm %s: policy delegate would lose landing-pad checks on this CPU (an exit "
			"loses the guest's SPELP: CFI self-test, docs/cfi.md §7): running under trap, "
			"which gives the guest the same view", d->name);
	}
	vm->cfg.features = vm_features(vm->cfg.cfi_policy);
	vm->cfg.vs_sv = hart_caps.vs_sv;
	vm->hstateen0 = cfi_hstateen0(vm);
	if (d->irqchip == VM_IRQCHIP_AIA) {
		/* no guest files yet (stage 3): every vCPU's IMSIC is in software */
		vm->cfg.irqchip = VM_IRQCHIP_AIA;
		vm->cfg.imsic_ids = VIMSIC_IDS;
		vm->cfg.features |= VM_FEAT_AIA;
		/* its IMSIC, AIA and indirect CSRs: a PLIC VM's stay illegal */
		vm->hstateen0 |= HSTATEEN0_AIA_VM;
	}
	vm->hedeleg = HEDELEG_GUEST | cfi_hedeleg(vm);
	if (!(vm->hstateen0 & HSTATEEN0_ENVCFG) && !hart_caps.smstateen)
		pr_info("vm %s: this CPU has no Smstateen, so senvcfg cannot be trapped: the guest "
			"can still turn on user-mode landing pads through senvcfg.LPE (docs/cfi.md §8)",
			d->name);
	vm->cfg.debug_ext = d->debug;
	memcpy(vm->cfg.bootargs, d->bootargs, VM_BOOTARGS_LEN);
	memcpy(vm->cfg.kernel_image, d->kernel, VM_IMAGE_NAME_LEN);
	memcpy(vm->cfg.initrd_image, d->initrd, VM_IMAGE_NAME_LEN);
	/* a restored VM boots again (reboot) only if this host has its images */
	k = image_find(d->kernel);
	r = d->initrd[0] ? image_find(d->initrd) : NULL;
	vm->kernel = (struct vm_image){ k ? k->addr : 0, k ? k->size : 0 };
	vm->initrd = (struct vm_image){ r ? r->addr : 0, r ? r->size : 0 };
	vsbi_vm_init(vm);
	for (unsigned int i = 0; i < VM_MAX_VCPUS; i++) {
		vm->vcpus[i].vm = vm;
		vm->vcpus[i].id = i;
		vm->vcpus[i].hart = -1;
	}
	/* only now: whoever walks the vCPUs finds them set up */
	__atomic_store_n(&vm->cfg.nr_vcpus, d->vcpus, __ATOMIC_RELEASE);
	vm->ram_hpa = mm_alloc_raw(d->memory, SZ_2M);
	vm->meta_hpa = vm->ram_hpa ? mm_alloc(vm_meta_size(d->memory), GSTAGE_ROOT_SIZE) : 0;
	if (!vm->meta_hpa) {
		if (vm->ram_hpa)
			mm_free(vm->ram_hpa, d->memory);
		release_slot(vm);
		spin_unlock(&create_lock);
		*why = "not enough host memory";
		return -HYP_ENOMEM;
	}
	vm_ram_init(vm);
	for (unsigned int i = 0; i < vdev_count; i++)
		vdev_all[i]->reg(vm);	/* fixed windows that cannot clash: the PLIC's,
					 * or the APLIC's of an AIA VM */
	if (vm_is_aia(vm)) {	/* in place of the PLIC's window too */
		vimsic_mmio_register(vm);
		imsic_files_vm_init(vm);	/* its tables are budgeted: cannot fail */
	}
	if (vm_io_attach(vm, d, why)) {
		vio_detach_all(vm);
		mm_free(vm->meta_hpa, vm_meta_size(d->memory));
		mm_free(vm->ram_hpa, d->memory);
		release_slot(vm);
		spin_unlock(&create_lock);
		return -HYP_EINVAL;
	}
	vm->vmid = vmid_alloc();
	vm->hgatp = gstage_hgatp(vm->gstage_root, vm->vmid);
	tlb_vm_created(vm);
	spin_unlock(&create_lock);
	pr_info("vm %s: overhead %lu bytes (G-stage tables and chunk maps %lu, VM and vCPU state %lu), "
		"VMID %u%s", vm->cfg.name, (unsigned long)(vm->meta_size + sizeof(*vm)),
		(unsigned long)vm->meta_size, (unsigned long)sizeof(*vm), vm->vmid,
		vm->vmid == VMID_SHARED ? " (shared: flushed on every switch)" : "");
	*out = vm;
	return 0;
}

int vm_create(const struct vm_desc *d, struct vm **out, const char **why)
{
	int rc = vm_alloc(d, true, out, why);

	return rc ? rc : vm_reset(*out);
}

void vm_start(struct vm *vm)
{
	sched_lock();
	vm->state = VM_RUNNING;
	sched_unlock();
	sched_kick_idle();
}

void vm_start_paused(struct vm *vm)
{
	sched_lock();
	vm->state = VM_PAUSED;
	sched_unlock();
}

uint64_t vm_destroy_finish(struct vm *vm)
{
	uint64_t freed = vm->cfg.ram_size + vm->meta_size;

	vm_dirty_log_stop(vm);	/* a migration that ended with the VM */
	/* harts that ran it drop its translations before the VMID or the
	 * memory can serve anyone else */
	tlb_flush_vm_gstage(vm);
	vmid_free(vm->vmid);
	vm_io_detach(vm);	/* off its switches, its host disks free again */
	vio_detach_all(vm);	/* after vio_quiesce(): no host device writes its RAM */
	mm_free(vm->ram_hpa, vm->cfg.ram_size);
	mm_free(vm->meta_hpa, vm->meta_size);
	vm->ram_hpa = vm->meta_hpa = 0;
	release_slot(vm);
	return freed;
}
