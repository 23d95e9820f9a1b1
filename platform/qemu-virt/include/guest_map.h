/* SPDX-License-Identifier: MIT */
/* QEMU virt: the guest physical map every VM gets. Devices sit where QEMU's
 * own virt machine puts them, so a guest kernel built for QEMU virt needs
 * nothing new. */
#ifndef PLATFORM_GUEST_MAP_H
#define PLATFORM_GUEST_MAP_H

#define VM_GUEST_RAM_BASE	0x80000000UL
#define VUART_BASE		0x10000000UL
#define VUART_SIZE		0x100UL
#define VUART_IRQ		10
#define VPLIC_BASE		0x0c000000UL
#define VPLIC_SIZE		0x4000000UL
#define VMGENID_BASE		0x10100000UL	/* not on QEMU virt: ours */
#define VMGENID_SIZE		0x1000UL
#define VMGENID_IRQ		11
/* virtio-mmio transports (docs/virtio.md): QEMU virt's eight slots, a 4 KiB
 * window each, slot i on PLIC source 1 + i */
#define VIO_MMIO_BASE		0x10001000UL
#define VIO_MMIO_STRIDE		0x1000UL
#define VIO_MMIO_SLOTS		8
#define VIO_MMIO_IRQ(slot)	(1 + (slot))
/* AIA VMs (docs/design-aia.md 3.1), at QEMU virt's aia=aplic-imsic
 * addresses: an IMSIC file page per vCPU (vCPU i's at VIMSIC_BASE + i *
 * VIMSIC_PAGE; pages of vCPUs the VM lacks read 0, ignore writes) and an
 * APLIC domain in MSI mode, in place of the PLIC */
#define VIMSIC_BASE		0x28000000UL
#define VIMSIC_PAGE		0x1000UL
#define VIMSIC_SIZE		(8 * VIMSIC_PAGE)	/* VM_MAX_VCPUS pages */
#define VAPLIC_BASE		0x0d000000UL
#define VAPLIC_SIZE		0x8000UL
#define VAPLIC_NR_SRC		32			/* sources 1..31, as the PLIC model */
/* Pages of device registers a VM's guest reads without an exit (the PLIC's
 * enable words, each virtio-mmio window), and the G-stage tables they take:
 * one level-1 table for the GiB below RAM, a level-0 table for each of the
 * two 2 MiB regions they lie in (0x0c000000, 0x10000000), and one for the
 * vIMSIC pages' (0x28000000: leaves mapped to guest interrupt files). */
#define VM_DEVICE_PAGES		(1 + VIO_MMIO_SLOTS)
#define VM_DEVICE_PAGE_TABLES	4
#endif
