/* SPDX-License-Identifier: MIT */
/* The device states of the snapshot stream and the migration protocol, each
 * described once (docs/snapshot-format.md, "DEVICE" and "Legal values", is
 * normative; this header is their C form).
 *
 * SNAP_DEVICES(X) lists the device models in stream order, X(index, NAME,
 * name): DEVICE section @index holds model @name ("uart16550", ...: its
 * struct snap_device's name). Each model's state is one table,
 * SNAP_DEV_<NAME>(X), in the row format of abi/snapshot_records.h:
 *   X(name, type, dim, bits, value, readonly, live, what)
 * with no extension columns (a device's rules are the same in every VM) and
 * live always SNAP_STATE: the struct generated from the table, struct
 * snap_dev_<name>, is the model's own state (hyp/include/vdev.h), saved and
 * loaded whole. So the table is the layout (fields in row order, no padding)
 * and the legal values. What a table cannot say (a relation between two
 * fields; the PLIC contexts a VM of nr_vcpus vCPUs has) is the model's check
 * hook (hyp/vdev/) and carapace-snap's (tools/carapace/snapshot.py), both as
 * the document states it. The hypervisor checks, masks and saves with these
 * tables (hyp/snap/snap_admit.c); tools/carapace-snap parses this file for
 * the layouts and rules, as it does abi/snapshot_records.h. Keep it
 * parseable in the same way. */
#ifndef HYP_SNAPSHOT_DEVICES_H
#define HYP_SNAPSHOT_DEVICES_H
#include <stdint.h>
#include <abi/snapshot_records.h>

#define SNAP_UART_RX_FIFO	256	/* bytes of the receive FIFO's ring */
#define SNAP_UART_IER_BITS	0x0f	/* the interrupt enables */
#define SNAP_UART_MCR_BITS	0x1f	/* DTR, RTS, OUT1, OUT2, LOOP */
#define SNAP_PLIC_SOURCES	32	/* PLIC sources 1..31: source 0 does not exist */
#define SNAP_PLIC_CONTEXTS	8	/* one S-mode context per vCPU */
#define SNAP_PLIC_SOURCE_BITS	0xfffffffeU	/* a mask of sources: never bit 0 */
#define SNAP_PLIC_PRIO_MAX	7
#define SNAP_PLIC_PRIORITIES	(BIT(SNAP_PLIC_PRIO_MAX + 1) - 1)	/* 0..7 */
#define SNAP_VMGENID_SIZE	16
#define SNAP_APLIC_SOURCES	32	/* APLIC sources 1..31: source 0 does not exist */
#define SNAP_APLIC_SOURCE_BITS	0xfffffffeU	/* a mask of sources: never bit 0 */
#define SNAP_APLIC_IE		0x100	/* domaincfg.IE */
#define SNAP_APLIC_SM_MODES	0xf3	/* sourcecfg.SM: 0, 1, 4..7 (no 2, 3; no D) */
#define SNAP_APLIC_TARGET_BITS	0xfffc07ffU	/* hart index 31:18, EIID 10:0 */

/* The models, in stream order: X(index, NAME, name). */
#define SNAP_DEVICES(X) \
	X(0, UART16550, uart16550) \
	X(1, PLIC, plic) \
	X(2, VMGENID, vmgenid) \
	X(3, APLIC, aplic)
/* Versions 1 to 6 have the first three. */
#define SNAP_DEVICES_V6		3

/* uart16550: the 16550A at VUART_BASE. The receive FIFO is a ring of which
 * rx_head - rx_tail (mod 2^32) bytes are queued: the model's hook checks
 * that this is at most SNAP_UART_RX_FIFO. */
#define SNAP_DEV_UART16550(X) \
	X(ier,          uint8_t,  , SNAP_BITS(SNAP_UART_IER_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "bits 0-3 only (the interrupt enables)") \
	X(lcr,          uint8_t,  , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(mcr,          uint8_t,  , SNAP_BITS(SNAP_UART_MCR_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "bits 0-4 only (DTR, RTS, OUT1, OUT2, LOOP)") \
	X(scr,          uint8_t,  , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(fcr,          uint8_t,  , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(dll,          uint8_t,  , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(dlm,          uint8_t,  , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(thre_pending, uint8_t,  , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, "0 or 1") \
	X(irq_level,    uint8_t,  , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, "0 or 1") \
	X(pad,          uint8_t,  [7], SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, "0") \
	X(rx_head,      uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "bytes received (free-running); at most 256 ahead of rx_tail") \
	X(rx_tail,      uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "bytes the guest read (free-running)") \
	X(rx,           uint8_t,  [SNAP_UART_RX_FIFO], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "any (the ring)")

/* plic: the PLIC at VPLIC_BASE; bit i of a mask is source i. Context c is
 * vCPU c's: the model's hook checks that priority[0] is 0 (source 0 does
 * not exist) and that the contexts of vCPUs the VM does not have are 0. */
#define SNAP_DEV_PLIC(X) \
	X(priority,  uint32_t, [SNAP_PLIC_SOURCES], SNAP_ANY_BITS, \
	  SNAP_VALUE(0, 0xffffffff, SNAP_PLIC_PRIORITIES), 0, SNAP_STATE, \
	  "0..7; priority[0] is 0") \
	X(level,     uint32_t, , SNAP_BITS(SNAP_PLIC_SOURCE_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "sources 1..31 (bit 0 is 0)") \
	X(pending,   uint32_t, , SNAP_BITS(SNAP_PLIC_SOURCE_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "sources 1..31 (bit 0 is 0)") \
	X(claimed,   uint32_t, , SNAP_BITS(SNAP_PLIC_SOURCE_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "sources 1..31 (bit 0 is 0)") \
	X(enable,    uint32_t, [SNAP_PLIC_CONTEXTS], SNAP_BITS(SNAP_PLIC_SOURCE_BITS, 0, 0, 0), \
	  SNAP_ANY_VALUE, 0, SNAP_STATE, "sources 1..31 (bit 0 is 0); 0 beyond nr_vcpus") \
	X(threshold, uint32_t, [SNAP_PLIC_CONTEXTS], SNAP_ANY_BITS, \
	  SNAP_VALUE(0, 0xffffffff, SNAP_PLIC_PRIORITIES), 0, SNAP_STATE, "0..7; 0 beyond nr_vcpus")

/* vmgenid: the VM generation ID at VMGENID_BASE (a restore replaces id). */
#define SNAP_DEV_VMGENID(X) \
	X(id,    uint8_t, [SNAP_VMGENID_SIZE], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(level, uint8_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, "0 or 1") \
	X(pad,   uint8_t, [7], SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, "0")

/* aplic (version 7): the APLIC of an AIA VM at VAPLIC_BASE, one supervisor
 * domain in MSI mode (AIA spec, AdvPLIC.adoc; docs/design-aia.md 3.10); bit
 * i of a mask is source i. All zero in a PLIC VM, as the plic device is in
 * an AIA VM. The model's hook (hyp/vdev/vaplic.c over hyp/lib/
 * aplic_model.c's aplic_model_check()) checks what the table cannot: a
 * source whose SM is 0 (inactive) has target 0 and neither pending nor
 * enabled; a level source (SM 6, 7) is pending only while its rectified
 * input (level, inverted for SM 7) is high; with IE set no source is both
 * pending and enabled (its MSI would have been sent). Hart indexes and
 * EIIDs are any a guest can write: MSIs naming no file are dropped. */
#define SNAP_DEV_APLIC(X) \
	X(domaincfg, uint32_t, , SNAP_BITS(SNAP_APLIC_IE, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "IE (bit 8) only") \
	X(sourcecfg, uint32_t, [SNAP_APLIC_SOURCES], SNAP_BITS(7, 0, 0, 0), \
	  SNAP_VALUE(0, 7, SNAP_APLIC_SM_MODES), 0, SNAP_STATE, \
	  "SM 0, 1, 4, 5, 6 or 7, no D; sourcecfg[0] is 0") \
	X(target,    uint32_t, [SNAP_APLIC_SOURCES], SNAP_BITS(SNAP_APLIC_TARGET_BITS, 0, 0, 0), \
	  SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "hart index (31:18) and EIID (10:0), guest index 0; 0 for an inactive source and [0]") \
	X(pending,   uint32_t, , SNAP_BITS(SNAP_APLIC_SOURCE_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "sources 1..31, active ones; a level source only while its input is high") \
	X(enabled,   uint32_t, , SNAP_BITS(SNAP_APLIC_SOURCE_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "sources 1..31, active ones") \
	X(level,     uint32_t, , SNAP_BITS(SNAP_APLIC_SOURCE_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "sources 1..31 (bit 0 is 0): each device line as driven") \
	X(genmsi,    uint32_t, , SNAP_BITS(SNAP_APLIC_TARGET_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "hart index (31:18) and EIID (10:0) of the last extempore MSI") \
	X(pad,       uint32_t, , SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, "0")

/* The virtio devices (snapshot version 4, migration protocol 5): a VIRTIO
 * section per virtio-mmio slot the VM uses, instance = the slot; its payload
 * a struct snap_device naming the model, then the model's state. Both
 * models' states begin with the transport's rows (SNAP_VIO_TRANSPORT: the
 * virtio-mmio registers, the driver's features, two queues' configuration
 * and progress; a model with one queue holds queue 1 all zero), then the
 * kind's own. SNAP_VIO_MODELS(X) lists them, X(NAME, name, device_id).
 * What a table cannot say (a queue's rings inside RAM, its indices, the
 * features against the offer, the status a driver can reach, a serial, a
 * MAC, a switch name) is the model's check hook (hyp/vdev/vio_mmio.c,
 * vblk.c, vnet.c) and carapace-snap's, as the document states it. The host
 * side of a device (its host disk, its switch and the port's counters) is
 * the restore's to bind (hyp/snap/snap_vio.c). */
#define SNAP_VIO_QUEUES		2	/* queue slots in a state: net rx and tx; blk uses 0 */
#define SNAP_VIO_STATUS_ACKNOWLEDGE	0x01
#define SNAP_VIO_STATUS_DRIVER		0x02
#define SNAP_VIO_STATUS_DRIVER_OK	0x04
#define SNAP_VIO_STATUS_FEATURES_OK	0x08
#define SNAP_VIO_STATUS_NEEDS_RESET	0x40
#define SNAP_VIO_STATUS_FAILED		0x80
#define SNAP_VIO_STATUS_BITS	0xcf	/* the bits above */
#define SNAP_VIO_INT_BITS	0x3	/* InterruptStatus: used buffer 1, configuration change 2 */
#define SNAP_VIO_FAULTS		15	/* queue faults: 0 none, 1..14 (docs/virtio.md) */
#define SNAP_VIO_U16		0xffff	/* a 16-bit register or index, held in a u32 */
#define SNAP_VIO_SERIAL		20	/* a virtio-blk GET_ID answer */
#define SNAP_VIO_SWITCH_NAME	16	/* a switch's name, NUL included */
#define SNAP_VIO_LINK_UP	1	/* virtio-net config status: VIRTIO_NET_S_LINK_UP */
#define SNAP_VIO_F_VERSION_1	BIT(32)
/* What each model offers (device_features), its queues' maximum sizes and
 * a disk's largest SEG_MAX (docs/virtio.md): a state holds exactly these. */
#define SNAP_VIO_BLK_FEATURES	(SNAP_VIO_F_VERSION_1 | BIT(2) | BIT(6) | BIT(9))	/* SEG_MAX, BLK_SIZE, FLUSH */
#define SNAP_VIO_BLK_F_RO	BIT(5)	/* offered for a read-only disk */
#define SNAP_VIO_BLK_QUEUE_MAX	256
#define SNAP_VIO_BLK_SEG_MAX	254
#define SNAP_VIO_NET_FEATURES	(SNAP_VIO_F_VERSION_1 | BIT(5) | BIT(16))	/* MAC, STATUS */
#define SNAP_VIO_NET_QUEUE_MAX	256

#define SNAP_VIO_MODELS(X) \
	X(VIRTIO_BLK, virtio_blk, 2) \
	X(VIRTIO_NET, virtio_net, 1)

/* The transport, first in each model's state: the u64 rows, then the u32. */
#define SNAP_VIO_TRANSPORT(X) \
	X(device_features,     uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "the features the device offers: its model's set") \
	X(driver_features,     uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "any; with FEATURES_OK a subset of device_features with VERSION_1") \
	X(q_desc,              uint64_t, [SNAP_VIO_QUEUES], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "any; a ready queue's table: 16-byte aligned, inside RAM") \
	X(q_avail,             uint64_t, [SNAP_VIO_QUEUES], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "any; a ready queue's available ring: 2-byte aligned, inside RAM") \
	X(q_used,              uint64_t, [SNAP_VIO_QUEUES], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "any; a ready queue's used ring: 4-byte aligned, inside RAM") \
	X(status,              uint32_t, , SNAP_BITS(SNAP_VIO_STATUS_BITS, 0, 0, 0), SNAP_ANY_VALUE, \
	  0, SNAP_STATE, "ACKNOWLEDGE, DRIVER, DRIVER_OK, FEATURES_OK, NEEDS_RESET, FAILED") \
	X(device_features_sel, uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(driver_features_sel, uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(queue_sel,           uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(interrupt_status,    uint32_t, , SNAP_BITS(SNAP_VIO_INT_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "used buffer (1), configuration change (2); only with DRIVER_OK") \
	X(config_generation,   uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any") \
	X(q_ready,             uint32_t, [SNAP_VIO_QUEUES], SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_STATE, "0 or 1") \
	X(q_fault,             uint32_t, [SNAP_VIO_QUEUES], SNAP_ANY_BITS, \
	  SNAP_VALUE(0, 0xffffffff, BIT(SNAP_VIO_FAULTS) - 1), 0, SNAP_STATE, \
	  "0..14; 1..3 only on a queue not ready, 4..14 only on a ready one") \
	X(q_size,              uint32_t, [SNAP_VIO_QUEUES], SNAP_BITS(SNAP_VIO_U16, 0, 0, 0), \
	  SNAP_ANY_VALUE, 0, SNAP_STATE, "0..65535; a ready queue's a power of two <= its maximum") \
	X(q_next_avail,        uint32_t, [SNAP_VIO_QUEUES], SNAP_BITS(SNAP_VIO_U16, 0, 0, 0), \
	  SNAP_ANY_VALUE, 0, SNAP_STATE, "0..65535; 0 on a queue not ready") \
	X(q_next_used,         uint32_t, [SNAP_VIO_QUEUES], SNAP_BITS(SNAP_VIO_U16, 0, 0, 0), \
	  SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "0..65535; q_next_avail on a healthy queue (nothing in flight), at most q_size behind it")

/* virtio_blk: the transport (one queue), then the disk as the guest sees it
 * and the host device it was bound to. */
#define SNAP_DEV_VIRTIO_BLK(X) \
	SNAP_VIO_TRANSPORT(X) \
	X(capacity,  uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "sectors of 512 bytes: the host disk's size") \
	X(requests,  uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(bytes,     uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(errors,    uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(drops,     uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(seg_max,   uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "1..254") \
	X(read_only, uint32_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "0 or 1: 1 exactly when device_features has RO") \
	X(pci_dev,   uint32_t, , SNAP_ANY_BITS, SNAP_VALUE(0, 0xffffffff, 0xfffffffe), 0, SNAP_STATE, \
	  "1..31: the host's virtio-blk-pci at 00:pci_dev.0") \
	X(serial,    char,     [SNAP_VIO_SERIAL], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "the GET_ID answer: NAME-vdX, NUL-padded")

/* virtio_net: the transport (receive queue 0, transmit 1), then the NIC's
 * counters, the switch port's, its link, MAC and switch. */
#define SNAP_DEV_VIRTIO_NET(X) \
	SNAP_VIO_TRANSPORT(X) \
	X(tx_requests, uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(tx_bytes,    uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(tx_errors,   uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(tx_drops,    uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(rx_requests, uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(rx_bytes,    uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(rx_errors,   uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(rx_drops,    uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, "any (a counter)") \
	X(port_rx_frames,  uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "any (the switch port's counter)") \
	X(port_rx_bytes,   uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "any (the switch port's counter)") \
	X(port_tx_frames,  uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "any (the switch port's counter)") \
	X(port_tx_bytes,   uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "any (the switch port's counter)") \
	X(port_tx_drops,   uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "any (the switch port's counter)") \
	X(port_tx_spoofed, uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "any (the switch port's counter)") \
	X(link,        uint32_t, , SNAP_BITS(SNAP_VIO_LINK_UP, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "LINK_UP (1): on its switch, or 0: taken off it") \
	X(mac,         uint8_t,  [6], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "a unicast address, not all zero") \
	X(pad,         uint8_t,  [6], SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_STATE, "0") \
	X(switch_name, char,     [SNAP_VIO_SWITCH_NAME], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_STATE, \
	  "its switch: [a-z0-9_-]{1,15}, NUL-terminated")

#define SNAP_DEV_STRUCT(index, NAME, name)	struct snap_dev_##name { SNAP_DEV_##NAME(SNAP_MEMBER) };
#define SNAP_DEV_INDEX(index, NAME, name)	SNAP_DEV_INDEX_##NAME = index,

enum snap_device_index { SNAP_DEVICES(SNAP_DEV_INDEX) };
SNAP_DEVICES(SNAP_DEV_STRUCT)
#define SNAP_VIO_STRUCT(NAME, name, id)	struct snap_dev_##name { SNAP_DEV_##NAME(SNAP_MEMBER) };
SNAP_VIO_MODELS(SNAP_VIO_STRUCT)
/* the transport alone: the first bytes of each model's state */
struct snap_vio_transport { SNAP_VIO_TRANSPORT(SNAP_MEMBER) };

_Static_assert(sizeof(struct snap_dev_uart16550) == 280, "snap_dev_uart16550");
_Static_assert(sizeof(struct snap_dev_plic) == 204, "snap_dev_plic");
_Static_assert(sizeof(struct snap_dev_vmgenid) == 24, "snap_dev_vmgenid");
_Static_assert(sizeof(struct snap_dev_aplic) == 280, "snap_dev_aplic");
_Static_assert(sizeof(struct snap_vio_transport) == 128, "snap_vio_transport");
_Static_assert(sizeof(struct snap_dev_virtio_blk) == 200, "snap_dev_virtio_blk");
_Static_assert(sizeof(struct snap_dev_virtio_net) == 272, "snap_dev_virtio_net");
#endif
