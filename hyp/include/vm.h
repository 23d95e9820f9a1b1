/* SPDX-License-Identifier: MIT */
/* A virtual machine. What the VM is (struct vm_config), what its devices and
 * vCPUs hold (guest state), and what the host keeps for it (memory, VMID,
 * counters, locks) are kept apart. */
#ifndef HYP_VM_H
#define HYP_VM_H
#include <types.h>
#include <atomic.h>
#include <cfi.h>
#include <console_filter.h>
#include <guest_map.h>
#include <vcpu.h>
#include <vdev.h>

#define VM_MAX			8
#define VM_MAX_VCPUS		8
#define VM_NAME_LEN		16
#define VM_BOOTARGS_LEN		512
#define VM_IMAGE_NAME_LEN	32
#define VM_KERNEL_OFFSET	SZ_2M		/* flat kernels load at RAM base + 2 MiB */
#define VM_FDT_MAX		SZ_64K
#define VM_MMIO_MAX		5
#define VM_REASON_LEN		256

/* Lifecycle. Only RUNNING VMs are scheduled; the others drain off the harts. */
enum vm_state {
	VM_EMPTY,	/* slot unused */
	VM_RUNNING,
	VM_PAUSING,	/* pause asked for: its vCPUs are leaving their harts */
	VM_PAUSED,	/* every vCPU off CPU, whole context in memory */
	VM_REBOOTING,	/* SRST reboot: reset once every vCPU is off CPU */
	VM_RESETTING,	/* a hart is reloading it */
	VM_STOPPING,	/* going down: its outcome is being reported */
	VM_DOWN,	/* shut down or stopped; runs again only if created anew */
	VM_DESTROYING,	/* resources are returned once every vCPU is off CPU */
};

/* A migration that ended without its last message: where the other copy may be. */
enum vm_mig_unconfirmed {
	VM_MIG_CONFIRMED,	/* no such migration */
	VM_MIG_LEFT,		/* this paused copy stayed: the destination may run the VM */
	VM_MIG_ARRIVED,		/* it runs here: the source may still hold a paused copy */
};

/* ISA and CFI features a VM was given (recorded so a restore can check that
 * a host offers them). */
#define VM_FEAT_ZICFILP		(1U << 0)
#define VM_FEAT_ZICFISS		(1U << 1)
#define VM_FEAT_SSTC		(1U << 2)
#define VM_FEAT_SVPBMT		(1U << 3)
#define VM_FEAT_SVADU		(1U << 4)
#define VM_FEAT_AIA		(1U << 5)	/* irqchip AIA (docs/design-aia.md 3.1) */
/* An AIA VM's hstateen0 bits: its IMSIC, AIA and indirect CSRs (a PLIC VM's
 * stay illegal). */
#define HSTATEEN0_AIA_VM	(HSTATEEN0_IMSIC | HSTATEEN0_AIA | HSTATEEN0_CSRIND)

/* The VM's interrupt architecture, fixed at creation. */
enum vm_irqchip {
	VM_IRQCHIP_PLIC,	/* the PLIC model (vplic.c) */
	VM_IRQCHIP_AIA,		/* an IMSIC per vCPU and an APLIC in MSI mode */
};

/* What the VM is: everything needed to create it again. */
struct vm_config {
	char name[VM_NAME_LEN];
	gpa_t ram_gpa;
	uint64_t ram_size;
	unsigned int nr_vcpus;
	enum cfi_policy cfi_policy;	/* in force */
	enum cfi_policy cfi_requested;	/* asked for (delegate may run as trap) */
	uint32_t features;		/* VM_FEAT_* */
	enum vm_irqchip irqchip;
	unsigned int imsic_ids;		/* AIA: identities per IMSIC file (255); 0 for PLIC */
	unsigned int vs_sv;		/* widest paging mode its DT names: 39, 48 or 57 */
	uint32_t boot_count;
	bool debug_ext;			/* SBI_EXT_CARAPACE_DEBUG offered (debug=1) */
	char bootargs[VM_BOOTARGS_LEN];
	char kernel_image[VM_IMAGE_NAME_LEN];	/* host image names it boots from */
	char initrd_image[VM_IMAGE_NAME_LEN];
};

struct vm_image {
	hpa_t hpa;	/* where QEMU's loader put it (kept for reboot) */
	uint64_t size;
};

struct mmio_access;
struct vio_dev;
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
	uint64_t console_bytes;		/* the guest wrote to its console (UART, DBCN) */
	/* CFI violations of earlier boots: a vCPU's counters restart with a
	 * reboot, the VM's lifetime totals go on */
	uint64_t cfi_lp_earlier, cfi_ss_earlier;
};

struct vm {
	struct vm_config cfg;

	/* host resources and bookkeeping (the hot fields first: exits read them
	 * at small offsets) */
	volatile enum vm_state state;
	uint32_t sbi_hidden;		/* SBI extensions whose probe said no, by slot */
	unsigned int nr_mmio;
	struct mmio_region mmio[VM_MMIO_MAX];
	unsigned int index;
	uint64_t serial;		/* creation number: slots are reused */
	bool failed;			/* stopped by the hypervisor or SRST system-failure */
	uint16_t vmid;
	unsigned long hgatp;
	unsigned long hstateen0;	/* cfi_hstateen0(): senvcfg trapped where CFI is hidden */
	unsigned long hedeleg;		/* HEDELEG_GUEST and the policy's cause 18 */
	uint64_t htimedelta;		/* guest time - host time */
	uint64_t reboot_not_before;	/* VM_REBOOTING: host time of the next try (vm_reset()) */
	hpa_t ram_hpa;
	hpa_t meta_hpa;			/* one block: G-stage tables and chunk maps */
	uint64_t meta_size;
	hpa_t gstage_root;
	uint64_t table_next, table_end;	/* G-stage table pages left in the block */
	hpa_t device_pages;		/* VM_DEVICE_PAGES in the block: vm_map_device_page() */
	unsigned int nr_device_pages;	/* mapped so far */
	/* Guest RAM is zeroed and mapped in 2 MiB chunks on first touch, so a VM
	 * starts without the cost of clearing all of it. Bit set = mapped. */
	uint64_t *populated;
	uint64_t *dirty;		/* chunks written since the last write-protect */
	bool dirty_tracking;		/* a write-protect happened: count writes */
	/* live snapshot: called under mem_lock before a write-protected chunk
	 * (populated when protection began) becomes writable; false: not now */
	bool (*cow)(struct vm *vm, uint64_t chunk);
	/* 4 KiB dirty logging (hyp/mm/dirty_log.c): a bit per page written since
	 * the last take, NULL when off; pages the hypervisor wrote for the guest */
	uint64_t *page_log, *page_sticky;
	hpa_t log_tables;		/* one 4 KiB table per 2 MiB chunk */
	/* bumped under mem_lock before a reboot discards RAM: a stream that
	 * reads RAM over time (a live snapshot) must not mix two boots */
	uint32_t ram_epoch;
	struct spinlock mem_lock;
	/* the state being loaded is this same VM moved here from another host
	 * (migration), not a copy of it (restore): device identities stay */
	bool moved_in;
	/* a migration of this VM ended without its confirmation (docs/migration.md,
	 * "Failure handling"): the other host may hold it too */
	enum vm_mig_unconfirmed mig_unconfirmed;
	volatile unsigned long tlb_harts;	/* harts that may cache its translations */
	struct vm_image kernel, initrd;
	gpa_t kernel_gpa, fdt_gpa;
	struct vm_stats stats;
	/* host console presentation of its output (hyp/host/console.c) */
	struct spinlock con_lock;
	char line[256];
	unsigned int line_len;
	uint64_t line_time;
	struct console_filter con_filter;	/* what may reach the host terminal */

	/* guest state: the devices (each with its own save/restore) and the vCPUs */
	struct vuart uart;
	struct vplic plic;
	struct vaplic aplic;		/* AIA VMs: instead of the PLIC */
	struct vmgenid genid;
	struct vcpu vcpus[VM_MAX_VCPUS];
	/* virtio devices by slot (hyp/include/vio_mmio.h), NULL: none */
	struct vio_dev *vio[VIO_MMIO_SLOTS];

	char reason[VM_REASON_LEN];	/* why it went down (cold: last, moves nothing) */
};

extern struct vm vms[VM_MAX];
extern unsigned int nr_vms;		/* slots in use so far (high-water mark) */

/** vm_is_aia() - @vm has an IMSIC per vCPU and an APLIC instead of the PLIC. */
static inline bool vm_is_aia(const struct vm *vm)
{
	return vm->cfg.irqchip == VM_IRQCHIP_AIA;
}

/** vcpu_hedeleg() - @v's hedeleg: its VM's, less the misaligned load/store
 *  causes while its FWFT MISALIGNED_EXC_DELEG is 0 (the hypervisor emulates
 *  them: hyp/state/fwft.c). Inline and branch-free: every vCPU load pays it. */
static inline unsigned long vcpu_hedeleg(const struct vcpu *v)
{
	unsigned long emulate = -(unsigned long)v->g.fwft_mem.misaligned_emulate;

	return v->vm->hedeleg & ~(emulate & (BIT(EXC_LOAD_MISALIGNED) | BIT(EXC_STORE_MISALIGNED)));
}

static inline bool vm_slot_used(const struct vm *vm)
{
	return vm->state != VM_EMPTY;
}

/** vm_vcpu() - vCPU by guest hart id, or NULL. */
static inline struct vcpu *vm_vcpu(struct vm *vm, unsigned long hartid)
{
	return hartid < vm->cfg.nr_vcpus ? &vm->vcpus[hartid] : NULL;
}

/* State changes any layer may ask for (hyp/state/vm_state.c). Each takes the
 * scheduler lock, kicks the VM's vCPUs and posts an event for the host
 * services; none prints or waits. */
/** vm_stop() - stop @vm for good with a reason (fatal guest error). Other VMs go on. */
void vm_stop(struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** vm_shutdown() - SRST from the guest: shutdown (@reboot false) or reboot. */
void vm_shutdown(struct vm *vm, bool reboot, bool failure);
/** vm_request_pause() - RUNNING -> PAUSING; -HYP_EBUSY in any other state. */
int vm_request_pause(struct vm *vm);
/** vm_resume() - PAUSED -> RUNNING. */
int vm_resume(struct vm *vm);
/** vm_pause_settle() - PAUSING -> PAUSED once no vCPU of @vm is on a hart;
 *  true if it is PAUSED now. */
bool vm_pause_settle(struct vm *vm);
/** vm_unpause() - end a pause the hypervisor asked for itself, finished or
 *  not (PAUSING or PAUSED -> RUNNING); -HYP_EBUSY in any other state. */
int vm_unpause(struct vm *vm);
/** vm_wake() - wake a RUNNING VM the guest suspended (SBI SUSP) as a wake-up
 *  interrupt would; -HYP_EBUSY if it is not suspended so. */
int vm_wake(struct vm *vm);
/** vm_request_destroy() - any state but EMPTY/DESTROYING -> DESTROYING. */
int vm_request_destroy(struct vm *vm);
/** vm_off_cpu() - no vCPU of @vm is on a hart (caller holds the scheduler lock). */
bool vm_off_cpu(const struct vm *vm);
/** vm_exits() - exits of all its vCPUs so far. */
uint64_t vm_exits(const struct vm *vm);

/* A VM's counters summed over its vCPUs (monitor, management, outcome lines). */
struct vm_counts {
	uint64_t exits, sbi, guest_page_faults, virtual_insn, host_irq, sw_check, wfi;
	uint64_t wfi_in_place;	/* of the wfi: woken with the hart kept (vcpu_run.c) */
	uint64_t mmio, injected, cfi_lp, cfi_ss;
	uint64_t misaligned_emulated;	/* loads/stores emulated (FWFT MISALIGNED_EXC_DELEG 0) */
	/* AIA VMs' IMSIC counters (struct vimsic_live); 0 for a PLIC VM */
	uint64_t imsic_sw_stores, imsic_csr_exits, imsic_moves, imsic_evictions, imsic_sgei;
	uint64_t by_cause[VCPU_EXIT_CAUSES];	/* exits by exception cause (scause) */
};
/** vm_count() - sum @vm's counters into @c (read without stopping it); the
 *  CFI violations are the VM's lifetime totals, every boot included. */
void vm_count(const struct vm *vm, struct vm_counts *c);
/** vm_find() - the VM named @name, or NULL. */
struct vm *vm_find(const char *name);

/* Events the VM machinery posts for the host services (printing, power-off,
 * management replies); drained on hart 0 (hyp/state/vm_events.c). */
enum vm_event_kind {
	VM_EV_DOWN,		/* stopped or shut down: vm->reason, vm->failed */
	VM_EV_REBOOT,
};
/** vm_event_post() - queue an event; never blocks. DOWN is never dropped; a
 *  REBOOT notice is dropped, and counted, when the ring is full. */
void vm_event_post(struct vm *vm, enum vm_event_kind kind);
/** vm_event_pending() - is an event waiting? (a cheap look, no lock) */
bool vm_event_pending(void);
/** vm_event_take() - the oldest event, false if none. */
bool vm_event_take(struct vm **vm, enum vm_event_kind *kind);
/** vm_events_dropped() - REBOOT notices lost to a full ring since boot. */
uint64_t vm_events_dropped(void);

/* Guest console output goes to the host through this hook (set at boot by
 * the host services), so device models need not know the host console. */
extern void (*vm_console_out)(struct vm *vm, const char *buf, size_t len);
#endif
