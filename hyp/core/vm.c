/* SPDX-License-Identifier: MIT */
/* VM lifecycle: create from the host DT's descriptions, load, reset, stop, shut down. */
#include <arch/riscv/csr.h>
#include <stdarg.h>
#include <string.h>
#include <errno.h>
#include <console.h>
#include <fdt_guest.h>
#include <fdt_host.h>
#include <gstage.h>
#include <hart.h>
#include <mm.h>
#include <printf.h>
#include <sched.h>
#include <vm.h>
#include <vsbi.h>

struct vm vms[VM_MAX];
unsigned int nr_vms;

/* RISC-V Linux Image header (Documentation/arch/riscv/boot-image-header.rst). */
#define IMAGE_MAGIC2_OFF	0x38
#define IMAGE_MAGIC2		0x05435352U	/* "RSC\x05" */
#define IMAGE_TEXT_OFFSET_OFF	8
#define IMAGE_SIZE_OFF		16

uint64_t vm_exits(const struct vm *vm)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		n += vcpu_exits(&vm->vcpus[i]);
	return n;
}

struct vcpu *vm_vcpu(struct vm *vm, unsigned long hartid)
{
	return hartid < vm->nr_vcpus ? &vm->vcpus[hartid] : NULL;
}

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

		if (text & (PAGE_SIZE - 1) || text >= vm->ram_size)
			return -HYP_EINVAL;
		*load_off = text ? text : VM_KERNEL_OFFSET;
		*claim = MAX(size, vm->kernel.size);
	}
	if (*claim > vm->ram_size - *load_off - VM_FDT_MAX)
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

	if (kernel_layout(vm, &load_off, &claim)) {
		vm_stop(vm, "kernel image (%lu bytes) does not fit in %lu MiB of guest RAM",
			(unsigned long)vm->kernel.size, (unsigned long)(vm->ram_size >> 20));
		return -HYP_ERANGE;
	}
	if (vm->boot_count)	/* a reboot must not see the previous run's memory */
		vm_ram_discard(vm);
	vm->kernel_gpa = vm->ram_gpa + load_off;
	vm->fdt_gpa = vm->ram_gpa + vm->ram_size - VM_FDT_MAX;
	vm_copy_to_guest(vm, vm->kernel_gpa, (void *)(uintptr_t)vm->kernel.hpa, vm->kernel.size);
	if (vm->initrd.size) {
		gpa_t start = ALIGN_DOWN(vm->fdt_gpa - vm->initrd.size, PAGE_SIZE);

		if (vm->initrd.size > vm->fdt_gpa - vm->ram_gpa ||
		    start < vm->kernel_gpa + claim) {
			vm_stop(vm, "initrd (%lu bytes) does not fit beside the kernel",
				(unsigned long)vm->initrd.size);
			return -HYP_ERANGE;
		}
		vm_copy_to_guest(vm, start, (void *)(uintptr_t)vm->initrd.hpa, vm->initrd.size);
		gi.initrd_start = start;
		gi.initrd_end = start + vm->initrd.size;
	}
	spin_lock(&fdt_lock);
	rc = fdt_guest_build(vm, &gi, fdt_buf, sizeof(fdt_buf));
	if (!rc)
		vm_copy_to_guest(vm, vm->fdt_gpa, fdt_buf, sizeof(fdt_buf));
	spin_unlock(&fdt_lock);
	if (rc) {
		vm_stop(vm, "cannot build the guest device tree (libfdt error %d)", rc);
		return -HYP_EINVAL;
	}
	vuart_reset(vm);
	vplic_reset(vm);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		vcpu_reset(v, vm->kernel_gpa, vm->fdt_gpa);
		v->hsm = i ? VCPU_HSM_STOPPED : VCPU_HSM_STARTED;
	}
	pr_info("vm %s: boot %u, %u vcpu(s), %lu MiB RAM, kernel at 0x%lx, dtb at 0x%lx%s (t=%lu)",
		vm->name, vm->boot_count, vm->nr_vcpus, (unsigned long)(vm->ram_size >> 20),
		(unsigned long)vm->kernel_gpa, (unsigned long)vm->fdt_gpa,
		vm->initrd.size ? ", initrd" : "", (unsigned long)time_now());
	vm->boot_count++;
	sched_lock();
	vm->state = VM_RUNNING;
	sched_unlock();
	sched_kick_idle();
	return 0;
}

static int vm_create(struct vm *vm, const struct vm_desc *d)
{
	const char *why = NULL;
	unsigned long chunk_map = ALIGN_UP((d->memory / VM_RAM_CHUNK + 63) / 64 * 8, PAGE_SIZE);

	memcpy(vm->name, d->name, sizeof(vm->name));
	vm->name[sizeof(vm->name) - 1] = '\0';
	vm->state = VM_DOWN;
	vm->cfi_policy = d->cfi;
	vm->debug_ext = d->debug;
	vsbi_vm_init(vm);
	vm->nr_vcpus = d->vcpus;
	vm->ram_gpa = VM_GUEST_RAM_BASE;
	vm->ram_size = d->memory;
	vm->kernel = (struct vm_image){ d->kernel_addr, d->kernel_size };
	vm->initrd = (struct vm_image){ d->initrd_addr, d->initrd_size };
	memcpy(vm->bootargs, d->bootargs, sizeof(vm->bootargs));
	for (unsigned int i = 0; i < VM_MAX_VCPUS; i++) {
		vm->vcpus[i].vm = vm;
		vm->vcpus[i].id = i;
		vm->vcpus[i].hart = -1;
	}

	if (!d->vcpus || d->vcpus > VM_MAX_VCPUS)
		why = "vcpus must be 1..8";
	else if (d->memory < 4 * SZ_2M || d->memory & (SZ_2M - 1) ||
		 d->memory > (1UL << GSTAGE_GPA_BITS) - VM_GUEST_RAM_BASE)
		why = "memory must be a multiple of 2 MiB, at least 8 MiB";
	if (!why) {
		vm->ram_hpa = mm_alloc_raw(d->memory, SZ_2M);
		vm->gstage_root = mm_alloc(GSTAGE_ROOT_SIZE, GSTAGE_ROOT_SIZE);
		if (!vm->ram_hpa || !vm->gstage_root || vm_ram_init(vm))
			why = "not enough host memory";
	}
	if (!why && (vuart_register(vm) || vplic_register(vm)))
		why = "cannot register its devices";
	if (why) {
		vm->failed = true;
		pr_info("vm %s: not created: %s", vm->name, why);
		return -HYP_EINVAL;
	}
	pr_info("vm %s: overhead %lu bytes (G-stage root %lu, chunk map %lu, VM and vCPU state %lu)",
		vm->name, (unsigned long)(GSTAGE_ROOT_SIZE + chunk_map + sizeof(*vm)),
		(unsigned long)GSTAGE_ROOT_SIZE, (unsigned long)chunk_map,
		(unsigned long)sizeof(*vm));
	vm->vmid = (uint16_t)(hart_caps.vmid_bits ? (vm->index + 1) : 0);
	vm->hgatp = gstage_hgatp(vm->gstage_root, vm->vmid);
	return vm_reset(vm);
}

void vm_create_all(const struct host_info *hi)
{
	if (!hi->nr_vms)
		pr_info("no VMs described in /chosen: nothing to run");
	for (unsigned int i = 0; i < hi->nr_vms && i < VM_MAX; i++) {
		vms[i].index = i;
		nr_vms = i + 1;
		vm_create(&vms[i], &hi->vms[i]);
	}
}

static void kick_all(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		vcpu_kick(&vm->vcpus[i]);
}

static void print_stats(const struct vm *vm)
{
	uint64_t sbi = 0, wfi = 0, lp = 0, ss = 0;

	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		sbi += vm->vcpus[i].stats.by_cause[EXC_ECALL_VS];
		wfi += vm->vcpus[i].stats.wfi;
		lp += vm->vcpus[i].cfi_stats.swcheck_lp;
		ss += vm->vcpus[i].cfi_stats.swcheck_ss;
	}
	pr_info("vm %s: exits %lu, sbi calls %lu, wfi %lu, injected traps %lu, "
		"cfi violations: landing pad %lu, shadow stack %lu",
		vm->name, (unsigned long)vm_exits(vm), (unsigned long)sbi,
		(unsigned long)wfi, (unsigned long)vm->stats.injected, (unsigned long)lp,
		(unsigned long)ss);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		const struct cfi_stats *cs = &vm->vcpus[i].cfi_stats;

		if (cs->swcheck_lp || cs->swcheck_ss)
			pr_info("vm %s: vcpu %u: cfi violations: landing pad %lu, shadow stack %lu, "
				"last at pc 0x%lx from %s", vm->name, i,
				(unsigned long)cs->swcheck_lp, (unsigned long)cs->swcheck_ss,
				(unsigned long)cs->last_pc, cs->last_from_vs ? "VS" : "VU");
	}
}

/* Claim the right to take @vm down; false if someone already did. The VM stops
 * being scheduled at once but counts as down only after its outcome is printed,
 * so the machine cannot power off before that line (the launcher reads it). */
static bool vm_claim_down(struct vm *vm, bool failed)
{
	bool claimed;

	sched_lock();
	claimed = vm->state != VM_DOWN && vm->state != VM_STOPPING;
	if (claimed) {
		vm->state = VM_STOPPING;
		vm->failed = failed;
	}
	sched_unlock();
	if (claimed) {
		kick_all(vm);
		console_vm_flush(vm);
	}
	return claimed;
}

static void vm_finish_down(struct vm *vm)
{
	print_stats(vm);
	sched_lock();
	vm->state = VM_DOWN;
	sched_unlock();
	sched_check_all_down();
}

void vm_stop(struct vm *vm, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!vm_claim_down(vm, true))
		return;
	pr_info("vm %s: stopped: %s", vm->name, msg);
	vm_finish_down(vm);
}

void vm_shutdown(struct vm *vm, bool reboot, bool failure)
{
	if (reboot) {
		sched_lock();
		if (vm->state == VM_RUNNING)
			vm->state = VM_REBOOTING;
		sched_unlock();
		console_vm_flush(vm);
		pr_info("vm %s: rebooting", vm->name);
		kick_all(vm);
		return;
	}
	if (!vm_claim_down(vm, failure))
		return;
	pr_info("vm %s: shut down%s", vm->name, failure ? " (system failure)" : "");
	vm_finish_down(vm);
}
