/* SPDX-License-Identifier: MIT */
/* The state tables (include/abi/snapshot_records.h, snapshot_devices.h) as
 * the hypervisor holds them, and what the owner of a piece of state hands
 * the snapshot code for what its table cannot say: a vCPU record's hooks
 * (struct snap_record_ops), a device model's table and check hook (struct
 * vdev_ops, vdev.h). The owners sit in layers below the snapshot code: they
 * include this header and never call snap code; the snap layer reads their
 * tables and calls their hooks (docs/architecture.md, "Layers"). */
#ifndef HYP_SNAP_TABLE_H
#define HYP_SNAP_TABLE_H
#include <stddef.h>
#include <types.h>
#include <abi/snapshot_format.h>

struct vcpu;

/** struct snap_field - a row of a table: where the field is in its record
 *  (and in struct vcpu_guest: @live, -1 when a hook does it or the record is
 *  a model's own state), its width and count, and its legal values. */
struct snap_field {
	const char *name;
	uint16_t offset;
	uint16_t width, count;
	uint64_t any, zicfilp, zicfiss, svadu;	/* bit rule */
	uint8_t shift;				/* value rule */
	uint64_t vmask, legal;
	uint64_t readonly;
	int16_t live;
	uint16_t live_size;
	const char *bits_why, *value_why;
};

/* The live column of a row that is not a member of struct vcpu_guest. */
#define SNAP_HOOK		-1, 0
#define SNAP_STATE		-1, 0

/* A row as a struct snap_field, in a record of type @T: the head, then the
 * rules as the row gives them (a rule expands to several initializers, so
 * each table's row macro spells the row out: { SNAP_ROW_HEAD(...), bits,
 * value, ro, live, why }). */
#define SNAP_ROW_HEAD(T, name, type) \
	#name, offsetof(T, name), sizeof(type), sizeof(((T *)0)->name) / sizeof(type)
#define SNAP_WHY(f, what) \
	#f " has a bit a guest given this VM's ISA cannot hold (legal: " what ")", \
	#f " is out of range (legal: " what ")"
#define SNAP_DEV_WHY(f, what) \
	#f " has a bit the device never holds (legal: " what ")", \
	#f " is out of range (legal: " what ")"

/** struct snap_record_ops - a vCPU record's hooks, for what its table does
 *  not copy or check (NULL: nothing). A record's owner defines them. */
struct snap_record_ops {
	/** save() - fill the record's hook fields from @v (the table did the rest). */
	void (*save)(const struct vcpu *v, void *rec);
	/** load() - install the record's hook fields into @v (checked, masked). */
	void (*load)(struct vcpu *v, const void *rec);
	/** check() - NULL if @rec, whose table's rules hold, can be installed in
	 *  the VM @c describes; else why not, *@offset the field's in @rec. */
	const char *(*check)(const void *rec, const struct snap_config *c, uint32_t *offset);
};
#endif
