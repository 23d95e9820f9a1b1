/* SPDX-License-Identifier: MIT */
/* Admission of VM state from outside, shared by a restore (snap_load.c) and
 * an incoming migration (hyp/migrate/mig_recv.c): the length each section
 * type has, the CONFIG that creates the VM, a VCPU section's records (checked
 * with their tables and hooks, then installed), a DEVICE section (the model
 * at that index, its load hook). Nothing is installed that was not checked. */
#include <string.h>
#include <errno.h>
#include <cfi.h>
#include <hart.h>
#include <snapshot.h>
#include <vdev.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include <vsbi.h>

uint64_t snap_section_length(uint32_t type, uint32_t instance, uint32_t version)
{
	switch (type) {
	case SNAP_SEC_CONFIG: return sizeof(struct snap_config);
	case SNAP_SEC_VCPU: return snap_vcpu_size(version);
	case SNAP_SEC_DEVICE:
		return instance < vdev_count ?
		       sizeof(struct snap_device) + vdev_all[instance]->state_size : 0;
	case SNAP_SEC_END: return sizeof(struct snap_end);
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
	vm->hstateen0 = cfi_hstateen0(vm);
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
	if (why) {
		*offset = snap_vcpu_stream_offset(version, *offset);
		return why;
	}
	/* reset first: what the records do not hold (derived CSRs) is fresh */
	vcpu_reset(&vm->vcpus[instance], 0, 0);
	snap_vcpu_load(&vm->vcpus[instance], &s);
	return NULL;
}

const char *snap_admit_device(struct vm *vm, uint32_t index, const void *payload)
{
	const struct vdev_ops *ops = vdev_all[index];
	struct snap_device d;

	memcpy(&d, payload, sizeof(d));
	if (d.reserved || d.state_size != ops->state_size ||
	    strncmp(d.name, ops->name, sizeof(d.name)) || !memchr(d.name, 0, sizeof(d.name)))
		return "not the device this host has at that index";
	if (ops->load(vm, (const uint8_t *)payload + sizeof(d)))
		return "a device register is out of range";
	return NULL;
}
