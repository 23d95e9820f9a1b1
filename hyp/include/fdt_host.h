/* SPDX-License-Identifier: MIT */
/* What the hypervisor reads from the host device tree OpenSBI hands over. */
#ifndef HYP_FDT_HOST_H
#define HYP_FDT_HOST_H
#include <types.h>
#include <cfi.h>
#include <host_irq.h>
#include <mm.h>
#include <pci_host.h>
#include <vm_lifecycle.h>

#define HOST_MAX_HARTS	8
#define HOST_MAX_VMS	8
#define HOST_MAX_SWITCHES	VSWITCH_MAX

/* A virtual switch the host DT asks for (a "carapace,switch" node). */
struct host_switch {
	char name[VSWITCH_NAME_LEN];	/* [a-z0-9_-]{1,15}, unique */
	uint8_t uplink_pci;		/* the uplink's virtio-net-pci at 00:N.0; 0: none */
};

/* /chosen carapace,selftest-cfi (tests/guests/test_hyp_cfi.py): the debug
 * hook that breaks the hypervisor's own control flow (hyp_cfi_selftest.h) */
#define HOST_SELFTEST_CFI_NONE	0
#define HOST_SELFTEST_CFI_RET	1	/* "ret": a corrupted return address */
#define HOST_SELFTEST_CFI_CALL	2	/* "call": a call past a landing pad */
#define HOST_SELFTEST_CFI_BAD	3	/* any other value */

struct host_info {
	struct mm_range mem[MM_MAX_RANGES];
	unsigned int nr_mem;
	struct mm_range reserved[MM_MAX_RANGES];	/* /reserved-memory, the DT itself */
	unsigned int nr_reserved;
	unsigned long hartids[HOST_MAX_HARTS];
	unsigned int nr_harts;
	uint64_t timebase_hz;
	uint64_t uart_base;
	unsigned int uart_shift;
	uint32_t timeslice_us;		/* /chosen carapace,timeslice-us, 0 if absent */
	uint32_t partial_flush_ms;	/* carapace,partial-flush-ms: 20 if absent, 0 = never */
	uint8_t rng_seed[64];		/* /chosen/rng-seed (QEMU gives 32 bytes) */
	unsigned int rng_seed_len;
	bool isa_zicfilp, isa_zicfiss, isa_sstc, isa_smstateen;	/* advertised on every hart */
	bool isa_zimop, isa_zcmop;
	bool isa_zbc;		/* carry-less products: the stream's checksums */
	uint32_t cboz_block;	/* Zicboz's block on every hart; 0: not on all */
	bool isa_ssaia;		/* the S-level AIA CSRs (siselect, stopei, ...) */
	bool persist;			/* carapace,persist: stay up with no VM */
	bool wfi_traps;			/* carapace,wfi-traps: no guest WFI sleeps natively */
	bool incoming;			/* carapace,incoming: wait for a migrated VM */
	uint8_t incoming_disks[2];	/* carapace,incoming-disks: the host disks (PCI
					 * device numbers) its disks go to (0: as sent) */
	bool incoming_copy;		/* carapace,incoming-copy-disks: copy mode */
	bool selftest_hostio;		/* carapace,selftest-hostio: exercise the host
					 * disks and NICs at boot (tests only: writes disks) */
	uint32_t vmid_bits;		/* carapace,vmid-bits: use at most this many (0: all) */
	uint32_t stream_stall_ms;	/* carapace,stream-stall-ms (0: the default) */
	struct pci_host_desc pci;	/* the ECAM host bridge (present false: none) */
	uint32_t intc_phandle[HOST_MAX_HARTS];	/* each hart's riscv,cpu-intc (0: none) */
	struct plic_host_desc plic;	/* the host PLIC (present false: none) */
	uint32_t plic_s_context[HOST_MAX_HARTS];	/* each hart's S-mode context, or PLIC_NO_CONTEXT */
	struct imsic_host_desc imsic;	/* the S-level IMSIC (present false: none usable) */
	uint32_t imsic_hart_index[HOST_MAX_HARTS];	/* each hart's position in it, or IMSIC_NO_HART */
	struct aplic_host_desc aplic;	/* the S-level APLIC domain sending MSIs to that IMSIC */
	uint64_t sswi_setssip[HOST_MAX_HARTS];	/* each hart's ACLINT SSWI register (0: none) */
	enum { HOST_SELFTEST_WX_NONE, HOST_SELFTEST_WX_STORE, HOST_SELFTEST_WX_EXEC }
		selftest_wx;		/* /chosen carapace,selftest-wx (tests/guests/test_hyp_wx.py) */
	bool selftest_pci_irq;		/* /chosen carapace,selftest-pci-irq (tests/guests/test_host_irq.py) */
	uint8_t selftest_cfi;		/* /chosen carapace,selftest-cfi: HOST_SELFTEST_CFI_* */
	struct host_switch switches[HOST_MAX_SWITCHES];	/* in DT order */
	unsigned int nr_switches;
	struct vm_desc vms[HOST_MAX_VMS];
	unsigned int nr_vms;
	/* images QEMU loaded: each VM's kernel/initrd ("NAME.kernel", "NAME.initrd")
	 * and the "carapace,image" nodes */
	struct host_image images[HOST_MAX_IMAGES];
	unsigned int nr_images;
};

/** fdt_host_parse() - fill @hi from @fdt. Returns 0 or -HYP_E*; @err gets a message. */
int fdt_host_parse(const void *fdt, struct host_info *hi, const char **err);
#endif
