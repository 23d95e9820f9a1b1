/* SPDX-License-Identifier: MIT */
/* The VM state a snapshot (snap_save.c) and a migration's source
 * (hyp/migrate/mig_send.c) both send, staged on their transmitter one
 * section at a time: CONFIG; the state's pieces, one VCPU section per vCPU
 * by id, one DEVICE section per device model by index (snap_device_save():
 * nothing here knows a device), one VIRTIO section per virtio device by slot
 * (snap_vio_save()); END. Each
 * payload is written in place in the transmitter's stage. */
#include <string.h>
#include <hart.h>
#include <log.h>
#include <section_stream.h>
#include <snapshot.h>
#include <vdev.h>
#include <vm.h>

void snap_emit_config(struct section_tx *t, const struct vm *vm, uint64_t guest_time)
{
	snap_config_save(vm, guest_time, timebase_hz, section_tx_payload(t));
	section_tx_seal(t, SNAP_SEC_CONFIG, 0, sizeof(struct snap_config));
}

unsigned int snap_state_pieces(const struct vm *vm)
{
	return vm->cfg.nr_vcpus + vdev_count + snap_vio_count(vm);
}

void snap_emit_state(struct section_tx *t, struct vm *vm, unsigned int index)
{
	unsigned int nr_vcpus = vm->cfg.nr_vcpus;

	if (index < nr_vcpus) {
		snap_vcpu_save(&vm->vcpus[index], section_tx_payload(t));
		section_tx_seal(t, SNAP_SEC_VCPU, index, sizeof(struct snap_vcpu));
	} else if (index < nr_vcpus + vdev_count) {
		section_tx_seal(t, SNAP_SEC_DEVICE, index - nr_vcpus,
				snap_device_save(vm, index - nr_vcpus, section_tx_payload(t),
						 SECTION_TX_ROOM));
	} else {
		uint32_t slot = index - nr_vcpus - vdev_count;

		section_tx_seal(t, SNAP_SEC_VIRTIO, slot,
				snap_vio_save(vm, slot, section_tx_payload(t), SECTION_TX_ROOM));
	}
}

void snap_emit_end(struct section_tx *t, uint64_t pages)
{
	struct snap_end e = { t->sections, pages };

	section_tx_small(t, SNAP_SEC_END, 0, &e, sizeof(e));
}
