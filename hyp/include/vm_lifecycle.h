/* SPDX-License-Identifier: MIT */
/* Creating, resetting and destroying VMs (hyp/lifecycle/vm_lifecycle.c), and the host images
 * they boot from. */
#ifndef HYP_VM_LIFECYCLE_H
#define HYP_VM_LIFECYCLE_H
#include <types.h>
#include <cfi.h>
#include <vm.h>
#include <vswitch.h>

#define HOST_MAX_IMAGES	24
#define VM_MAX_DISKS	2
#define VM_MAX_NICS	2
/* Device numbers on the host's PCIe bus 0 that can hold a disk or an uplink:
 * 0 is QEMU virt's host bridge, so 0 also means "none". */
#define HOST_PCI_DEV_MIN	1
#define HOST_PCI_DEV_MAX	31

/* A disk of a VM: the host's virtio-blk-pci device at 00:pci_dev.0, which
 * the launcher put there for this VM alone (docs/virtio.md, "The I/O path"). */
struct vm_disk_desc {
	uint8_t pci_dev;		/* HOST_PCI_DEV_MIN..HOST_PCI_DEV_MAX */
	bool read_only;			/* the guest sees VIRTIO_BLK_F_RO, writes fail */
	uint64_t iops;			/* requests a second; 0: no limit */
	uint64_t bandwidth;		/* data bytes a second; 0: no limit */
};

/* The rate limits of a disk or NIC whose host DT node does not give them:
 * what keeps a VM that floods its disk or its NIC from starving its
 * neighbours' I/O (docs/virtio.md, "Fair share"). Token buckets hold a
 * tenth of a second's worth. */
#define VM_DISK_IOPS_DEFAULT		2000
#define VM_DISK_BANDWIDTH_DEFAULT	(32ull << 20)
#define VM_NIC_PPS_DEFAULT		5000
#define VM_NIC_BANDWIDTH_DEFAULT	(8ull << 20)
/* A limit that is given: 0 (none), or a rate up to 2^40 a second (the token
 * bucket's limit); a bandwidth of at least a page a second (less would hold
 * one request or frame past a guest's I/O timeout). */
#define VM_IO_RATE_MAX			(1ull << 40)
#define VM_IO_BANDWIDTH_MIN		4096

/* A NIC of a VM: a port with this MAC on the switch named sw. */
struct vm_nic_desc {
	char sw[VSWITCH_NAME_LEN];
	uint8_t mac[ETH_ALEN];		/* unicast, not all zero */
	uint64_t pps;			/* frames the guest sends a second; 0: no limit */
	uint64_t bandwidth;		/* bytes of those frames a second; 0: no limit */
};

/* A VM as asked for: by the host DT at boot, or by the operator at run time. */
struct vm_desc {
	char name[VM_NAME_LEN];
	uint64_t memory;
	unsigned int vcpus;
	enum cfi_policy cfi;
	bool debug;			/* carapace,debug: offer the debug SBI extension */
	enum vm_irqchip irqchip;	/* carapace,irqchip: "plic" (default) or "aia" */
	char bootargs[VM_BOOTARGS_LEN];
	char kernel[VM_IMAGE_NAME_LEN];	/* image names */
	char initrd[VM_IMAGE_NAME_LEN];	/* "" for none */
	struct vm_disk_desc disks[VM_MAX_DISKS];	/* the guest's vda, vdb in this order */
	unsigned int nr_disks;
	struct vm_nic_desc nics[VM_MAX_NICS];	/* the guest's eth0, eth1 */
	unsigned int nr_nics;
};

/* A file QEMU's loader put in host RAM (a kernel, an initrd). */
struct host_image {
	char name[VM_IMAGE_NAME_LEN];
	hpa_t addr;
	uint64_t size;
};

/** image_register() - make an image known by name (boot time). */
int image_register(const char *name, hpa_t addr, uint64_t size);
/** image_find() - the image named @name, or NULL. */
const struct host_image *image_find(const char *name);
/** image_at() - the i-th image, or NULL past the end. */
const struct host_image *image_at(unsigned int i);

/** vm_create() - check @d, take a free slot, allocate its memory and VMID,
 *  load it and start it. On failure nothing is left allocated; *why says
 *  why and the return value is -HYP_E*. */
int vm_create(const struct vm_desc *d, struct vm **out, const char **why);
/** vm_alloc() - vm_create() without the boot: the VM exists, not scheduled
 *  (RESETTING), for a restore to fill in; @need_images: refuse a description
 *  naming images this host does not have. */
int vm_alloc(const struct vm_desc *d, bool need_images, struct vm **out, const char **why);
/** vm_start() - schedule a VM whose state is complete. */
void vm_start(struct vm *vm);
/** vm_start_paused() - the same, but PAUSED: it runs once resumed (a VM that
 *  arrives paused by its operator). */
void vm_start_paused(struct vm *vm);
/** vm_reset() - (re)load images, guest DT and vCPU 0; other vCPUs stopped. */
int vm_reset(struct vm *vm);
/** vm_destroy_finish() - a DESTROYING VM whose vCPUs are all off CPU: return
 *  its memory and VMID, free the slot. Returns the bytes given back. */
uint64_t vm_destroy_finish(struct vm *vm);
#endif
