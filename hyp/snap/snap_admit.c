/* SPDX-License-Identifier: MIT */
/* Admission of VM state from outside, shared by a restore (snap_load.c) and
 * an incoming migration (hyp/migrate/mig_recv.c): the length each section
 * type has, the CONFIG that creates the VM, a VCPU section's records (checked
 * with their tables and hooks, then installed), a DEVICE section (the model
 * at that index: checked with its table, include/abi/snapshot_devices.h, and
 * its check hook, then installed by its load hook). Nothing is installed that
 * was not checked. Also the DEVICE payloads both writers send. */
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <cfi.h>
#include <hart.h>
#include <log.h>
#include <snapshot.h>
#include <vdev.h>
#include <vimsic.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include <vsbi.h>

unsigned int snap_device_count(uint32_t version)
{
	return version < SNAP_VERSION_AIA ? SNAP_DEVICES_V6 : vdev_count;
}

uint64_t snap_section_length(uint32_t type, uint32_t instance, uint32_t version)
{
	switch (type) {
	case SNAP_SEC_CONFIG: return sizeof(struct snap_config);
	case SNAP_SEC_VCPU: return snap_vcpu_size(version);
	case SNAP_SEC_DEVICE:
		return instance < snap_device_count(version) ?
		       sizeof(struct snap_device) + vdev_all[instance]->state_size : 0;
	case SNAP_SEC_END: return sizeof(struct snap_end);
	case SNAP_SEC_DISK_ID:
		return version >= SNAP_VERSION_DISK_ID ? sizeof(struct snap_disk_id) : 0;
	default: return 0;
	}
}

struct vm *snap_admit(const struct snap_config *c, const char *name, const char **code,
		      const char **why)
{
	struct vm_desc d;
	struct vm *vm;
	uint32_t lost;
	int rc;

	*code = "bad-snapshot";
	*why = snap_config_check(c);
	if (*why)
		return NULL;
	*code = "invalid";
	*why = "saved on a host with another timebase";
	if (c->timebase_hz != timebase_hz)
		return NULL;
	lost = snap_lost_features(c);
	*code = "no-feature";
	*why = SNAP_AIA_NO_SSAIA;
	if (lost & SNAP_FEAT_AIA)
		return NULL;
	*code = "no-cfi";
	*why = lost & SNAP_FEAT_ZICFISS ?
	       "the guest was given shadow stacks (Zicfiss) and this host cannot "
	       "give them: it would lose its protection" :
	       "the guest was given landing pads (Zicfilp) and this host cannot "
	       "give them: it would lose its protection";
	if (lost & (SNAP_FEAT_ZICFILP | SNAP_FEAT_ZICFISS))
		return NULL;
	*code = "no-feature";
	*why = "the guest was given an extension this host lacks";
	if (lost)
		return NULL;
	*why = "the guest was given a wider paging mode (Sv48/Sv57) than this host's CPU has";
	if (c->vs_sv > hart_caps.vs_sv)
		return NULL;
	snap_config_desc(c, name, &d);
	rc = vm_alloc(&d, false, &vm, why);
	if (rc) {
		*code = rc == -HYP_EEXIST ? "exists" : rc == -HYP_ENOMEM ? "no-memory" : "invalid";
		return NULL;
	}
	/* exactly what the guest had: its ISA, boot count (rng-seed) */
	vm->cfg.features = c->features;
	vm->cfg.vs_sv = c->vs_sv ? c->vs_sv : hart_caps.vs_sv;	/* version 1: not recorded */
	vm->cfg.boot_count = c->boot_count;
	/* and again what vm_alloc() derived from the features it gave: from the
	 * guest's now (senvcfg trapped where the VM lacks CFI the host has; the
	 * SBI extensions' probes), never from this host's */
	vm->hstateen0 = cfi_hstateen0(vm) | (vm->hstateen0 & HSTATEEN0_AIA_VM);	/* vm_alloc's
										 * for AIA */
	vsbi_vm_init(vm);
	*code = *why = NULL;
	return vm;
}

const char *snap_admit_vcpu(struct vm *vm, uint32_t instance, const void *payload,
			    uint32_t version, const struct snap_config *c, uint32_t *offset)
{
	struct snap_vcpu s;
	const char *why;

	why = snap_vcpu_from_stream(payload, version, c->features, &s, offset);
	if (why)
		return why;
	why = snap_vcpu_problem(&s, c, offset);
	if (!why)
		why = vimsic_record_fits(vm, instance, &s.imsic, offset);
	if (why) {
		*offset = snap_vcpu_stream_offset(version, *offset);
		return why;
	}
	/* reset first: what the records do not hold (derived CSRs) is fresh */
	vcpu_reset(&vm->vcpus[instance], 0, 0);
	snap_vcpu_load(&vm->vcpus[instance], &s);
	return NULL;
}

const char *snap_device_check(const struct vm *vm, uint32_t index, const void *state,
			      uint32_t *offset)
{
	const struct vdev_ops *ops = vdev_all[index];
	const char *why;

	if (ops->present && !ops->present(vm)) {
		/* the other kind's interrupt controller: never used, all zero */
		for (*offset = 0; *offset < ops->state_size; (*offset)++)
			if (((const uint8_t *)state)[*offset])
				return "not 0: this VM does not have this device (the interrupt "
				       "controller of the other kind), its state is all zero";
		return NULL;
	}
	why = snap_fields_check(state, ops->fields, ops->nr_fields, 0, offset);
	return why || !ops->check ? why : ops->check(vm, state, offset);
}

const char *snap_admit_device_at(struct vm *vm, uint32_t index, const void *payload,
				 uint32_t *offset)
{
	const struct vdev_ops *ops;
	uint64_t state[(SNAP_DEVICE_MAX - sizeof(struct snap_device)) / sizeof(uint64_t)];
	struct snap_device d;
	const char *why;

	/* the stream's index: each caller checks the order too, and this one
	 * check keeps a caller that forgot off the end of the model table */
	*offset = 0;
	if (index >= vdev_count)
		return "no device at that index on this host";
	ops = vdev_all[index];
	HYP_ASSERT(ops->state_size <= sizeof(state));
	memcpy(&d, payload, sizeof(d));
	*offset = offsetof(struct snap_device, name);
	if (strncmp(d.name, ops->name, sizeof(d.name)) || !memchr(d.name, 0, sizeof(d.name)))
		return "not the device this host has at that index";
	*offset = offsetof(struct snap_device, state_size);
	if (d.state_size != ops->state_size)
		return "state_size is not that of the device this host has at that index";
	*offset = offsetof(struct snap_device, reserved);
	if (d.reserved)
		return "reserved field is not 0";
	/* a copy, aligned for the model's hook */
	memcpy(state, (const uint8_t *)payload + sizeof(d), ops->state_size);
	why = snap_device_check(vm, index, state, offset);
	if (why) {
		*offset += sizeof(d);
		return why;
	}
	if (!ops->present || ops->present(vm))
		ops->load(vm, state);
	return NULL;
}

size_t snap_device_save(struct vm *vm, uint32_t index, void *payload, size_t room)
{
	const struct vdev_ops *ops = vdev_all[index];
	struct snap_device d = { .state_size = ops->state_size };
	uint8_t *state = (uint8_t *)payload + sizeof(d);

	HYP_ASSERT(sizeof(d) + ops->state_size <= room);
	memcpy(d.name, ops->name, MIN(strlen(ops->name), sizeof(d.name) - 1));
	memcpy(payload, &d, sizeof(d));
	if (ops->present && !ops->present(vm))
		memset(state, 0, ops->state_size);	/* a device the VM does not have */
	else
		ops->save(vm, state);
	/* the model holds only legal values; masked all the same, as a vCPU's
	 * records are, so a save never writes what a restore refuses */
	snap_fields_mask(state, ops->fields, ops->nr_fields, 0);
	return sizeof(d) + ops->state_size;
}
