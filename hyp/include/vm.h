/* SPDX-License-Identifier: MIT */
/* A virtual machine: its RAM, G-stage tables, vCPUs, devices, console and lifecycle. */
#ifndef HYP_VM_H
#define HYP_VM_H
#include <types.h>
#include <atomic.h>
#include <cfi.h>
#include <vcpu.h>
#include <vdev.h>

#define VM_MAX			8
#define VM_MAX_VCPUS		8
#define VM_NAME_LEN		16
#define VM_BOOTARGS_LEN		512
#define VM_GUEST_RAM_BASE	0x80000000UL
#define VM_KERNEL_OFFSET	SZ_2M		/* flat kernels load at RAM base + 2 MiB */
#define VM_FDT_MAX		SZ_64K
#define VM_CONSOLE_LINE		256
#define VM_INPUT_SIZE		256
#define VM_MMIO_MAX		4

/* Lifecycle. Only RUNNING VMs are scheduled; the others drain off the harts. */
enum vm_state {
	VM_RUNNING,
	VM_REBOOTING,	/* SRST reboot: reset once every vCPU is off CPU */
	VM_RESETTING,	/* a hart is reloading it */
	VM_STOPPING,	/* going down: its outcome is being reported */
	VM_DOWN,	/* shut down or stopped; never runs again */
};

struct vm_image {
	hpa_t hpa;	/* where QEMU's loader put it (kept for reboot) */
	uint64_t size;
};

struct mmio_access;
/* An emulated device window in guest physical space. */
struct mmio_region {
	gpa_t base;
	uint64_t size;
	/** handle() - perform @a (a->is_write); return 0 or -HYP_E* to fault the guest. */
	int (*handle)(struct vm *vm, void *priv, struct mmio_access *a);
	void *priv;
};

struct vm_stats {
	uint64_t mmio, injected;
};

struct vm {
	char name[VM_NAME_LEN];
	unsigned int index;
	uint16_t vmid;
	volatile enum vm_state state;
	bool failed;			/* stopped by the hypervisor or SRST reason system-failure */
	uint32_t boot_count;
	enum cfi_policy cfi_policy;

	gpa_t ram_gpa;
	uint64_t ram_size;
	hpa_t ram_hpa;
	hpa_t gstage_root;
	unsigned long hgatp;
	/* Guest RAM is zeroed and mapped in 2 MiB chunks on first touch, so a VM
	 * starts without the cost of clearing all of it. Bit set = mapped. */
	uint64_t *populated;
	uint64_t *dirty;		/* chunks written since the last write-protect */
	bool dirty_tracking;		/* a write-protect happened: count writes */
	struct spinlock mem_lock;
	bool debug_ext;			/* SBI_EXT_CARAPACE_DEBUG offered (debug=1) */
	uint32_t sbi_hidden;		/* SBI extensions whose probe said no, by slot */

	struct vm_image kernel, initrd;
	char bootargs[VM_BOOTARGS_LEN];
	gpa_t kernel_gpa, fdt_gpa;

	unsigned int nr_vcpus;
	struct vcpu vcpus[VM_MAX_VCPUS];
	unsigned int nr_mmio;
	struct mmio_region mmio[VM_MMIO_MAX];

	struct vuart uart;
	struct vplic plic;

	struct spinlock lock;		/* console buffers */
	char line[VM_CONSOLE_LINE];
	unsigned int line_len;
	uint64_t line_time;		/* when the guest last wrote to the line */
	uint8_t esc_state;		/* inside an escape sequence being dropped */
	char input[VM_INPUT_SIZE];
	unsigned int in_head, in_tail;

	struct vm_stats stats;
};

extern struct vm vms[VM_MAX];
extern unsigned int nr_vms;

/** vm_create_all() - build every VM described in the host DT's /chosen. */
struct host_info;
void vm_create_all(const struct host_info *hi);
/** vm_reset() - (re)load images, guest DT and vCPU 0; other vCPUs stopped. */
int vm_reset(struct vm *vm);
/** vm_stop() - stop @vm for good with a reason (fatal guest error). Other VMs go on. */
void vm_stop(struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** vm_shutdown() - SRST from the guest: shutdown (@reboot false) or reboot. */
void vm_shutdown(struct vm *vm, bool reboot, bool failure);
/** vm_exits() - exits of all its vCPUs so far. */
uint64_t vm_exits(const struct vm *vm);
/** vm_vcpu() - vCPU by guest hart id, or NULL. */
struct vcpu *vm_vcpu(struct vm *vm, unsigned long hartid);

/* Guest memory (hyp/mm/guest_mem.c); the only way the hypervisor touches guest RAM. */
#define VM_RAM_CHUNK	SZ_2M
bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len);
/** vm_gpa_to_hva() - host address of guest RAM, mapping it if needed; @write
 *  says the hypervisor will write it (dirty tracking counts that too). */
void *vm_gpa_to_hva(struct vm *vm, gpa_t gpa, uint64_t len, bool write);
int vm_copy_from_guest(struct vm *vm, void *dst, gpa_t src, uint64_t len);
int vm_copy_to_guest(struct vm *vm, gpa_t dst, const void *src, uint64_t len);
/** vm_ram_populate() - zero and map every not-yet-mapped chunk of [gpa, gpa+len);
 *  @write: the access is a write (marks chunks dirty while tracking). */
int vm_ram_populate(struct vm *vm, gpa_t gpa, uint64_t len, bool write);
/** vm_ram_discard() - unmap all guest RAM (reboot): chunks are zeroed again on touch. */
void vm_ram_discard(struct vm *vm);
/** vm_ram_init() - allocate the chunk bitmaps; nothing is mapped yet. */
int vm_ram_init(struct vm *vm);
/** vm_ram_write_protect() - clear W on every mapped chunk (dirty tracking);
 *  returns how many. The caller's vCPU must flush before it runs on. */
uint64_t vm_ram_write_protect(struct vm *vm, struct vcpu *self);
/** vm_ram_resolve_write() - a write (or shadow-stack access) hit a write-
 *  protected chunk: mark it dirty and give W back. False if it was not that. */
bool vm_ram_resolve_write(struct vm *vm, gpa_t gpa);
/** vm_ram_dirty_chunks() - chunks written since the last write-protect. */
uint64_t vm_ram_dirty_chunks(struct vm *vm);

/** vm_mmio_register() - add an emulated window; fails if it overlaps RAM or another. */
int vm_mmio_register(struct vm *vm, const struct mmio_region *r);
struct mmio_region *vm_mmio_find(struct vm *vm, gpa_t gpa);
#endif
