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

/* The models, in stream order: X(index, NAME, name). */
#define SNAP_DEVICES(X) \
	X(0, UART16550, uart16550) \
	X(1, PLIC, plic) \
	X(2, VMGENID, vmgenid)

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

#define SNAP_DEV_STRUCT(index, NAME, name)	struct snap_dev_##name { SNAP_DEV_##NAME(SNAP_MEMBER) };
#define SNAP_DEV_INDEX(index, NAME, name)	SNAP_DEV_INDEX_##NAME = index,

enum snap_device_index { SNAP_DEVICES(SNAP_DEV_INDEX) };
SNAP_DEVICES(SNAP_DEV_STRUCT)

_Static_assert(sizeof(struct snap_dev_uart16550) == 280, "snap_dev_uart16550");
_Static_assert(sizeof(struct snap_dev_plic) == 204, "snap_dev_plic");
_Static_assert(sizeof(struct snap_dev_vmgenid) == 24, "snap_dev_vmgenid");
#endif
