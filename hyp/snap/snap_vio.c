/* SPDX-License-Identifier: MIT */
/* The VIRTIO sections of snapshots and migrations (docs/snapshot-format.md,
 * "VIRTIO"): a VM's disks and NICs, one section per virtio-mmio slot. The
 * guest-visible state is the device models' (their tables in
 * include/abi/snapshot_devices.h, their hooks in hyp/vdev/); what binds a
 * device to a host is done here: the host disk a disk goes to (the saved
 * PCI device, or the one the restore names), its size, read-only and
 * SEG_MAX checked against the saved disk; the switch a NIC joins, and a new
 * MAC for a restored copy whose original is on that switch; the port's
 * counters. Once the VM runs, each NIC announces itself (a RARP frame). */
#include <stddef.h>
#include <string.h>
#include <crc32c.h>
#include <errno.h>
#include <log.h>
#include <printf.h>
#include <snapshot.h>
#include <vblk.h>
#include <vio_mmio.h>
#include <vm.h>
#include <vm_io.h>
#include <vnet.h>
#include <vswitch.h>

#define MAC_TRIES	16	/* derived candidates before a restore gives up */
#define ETH_P_RARP	0x8035
#define RARP_FRAME	60	/* the minimum Ethernet frame without FCS */

_Static_assert(VIO_MMIO_SLOTS <= 32, "a mask of slots");
_Static_assert(ARRAY_SIZE(((struct snap_io_map *)0)->disk_pci) == VM_MAX_DISKS,
	       "a host disk for each disk a VM may have");
_Static_assert(VM_MAX_NICS <= 32, "a mask of NICs (snap_result.macs_derived)");

unsigned int snap_vio_count(const struct vm *vm)
{
	unsigned int n = 0;

	while (n < VIO_MMIO_SLOTS && vm->vio[n])
		n++;
	return n;
}

/* Disks and NICs before @slot: the index of the one in @slot among its kind. */
static unsigned int index_of_kind(const struct vm *vm, unsigned int slot, const struct vio_model *m)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < slot; i++)
		if (vm->vio[i] && vm->vio[i]->kind->model == m)
			k++;
	return k;
}

size_t snap_vio_save(struct vm *vm, uint32_t slot, void *payload, size_t room)
{
	struct vio_dev *d = vm->vio[slot];
	const struct vio_model *m = d->kind->model;
	struct snap_device h = { .state_size = m->state_size };
	uint8_t *state = (uint8_t *)payload + sizeof(h);
	unsigned int k = index_of_kind(vm, slot, m);

	HYP_ASSERT(sizeof(h) + m->state_size <= room);
	memset(payload, 0, sizeof(h) + m->state_size);
	memcpy(h.name, m->name, strlen(m->name));
	memcpy(payload, &h, sizeof(h));
	m->save(d, state);
	if (m == &virtio_blk_model) {
		const struct vm_disk_desc *dd = vm_io_disk(vm, k);

		((struct snap_dev_virtio_blk *)(void *)state)->pci_dev = dd ? dd->pci_dev : 0;
	} else {
		struct snap_dev_virtio_net *s = (void *)state;
		const struct vm_nic_desc *nd = vm_io_nic(vm, k);
		struct vswitch_port *p = vm_io_nic_port(vm, k);
		struct vswitch_counters c = { 0 };

		if (nd)
			memcpy(s->switch_name, nd->sw, strnlen(nd->sw, sizeof(s->switch_name) - 1));
		if (p)
			vswitch_port_counters(p, &c);
		s->port_rx_frames = c.rx_frames;
		s->port_rx_bytes = c.rx_bytes;
		s->port_tx_frames = c.tx_frames;
		s->port_tx_bytes = c.tx_bytes;
		s->port_tx_drops = c.tx_drops;
		s->port_tx_spoofed = c.tx_spoofed;
	}
	/* the models hold only legal values; masked all the same */
	snap_fields_mask(state, m->fields, m->nr_fields, 0);
	return sizeof(h) + m->state_size;
}

bool snap_vio_length_ok(uint64_t length)
{
	for (unsigned int i = 0; i < vio_model_count; i++)
		if (length == sizeof(struct snap_device) + vio_models[i]->state_size)
			return true;
	return false;
}

/* 52:54:00 (QEMU's locally administered prefix, as the launcher's) and three
 * bytes of CRC32C("NAME/nicN") or, for the k-th try, "NAME/nicN/k". */
static void derive_mac(const struct vm *vm, unsigned int nic, unsigned int k, uint8_t mac[6])
{
	char seed[VM_NAME_LEN + 16];
	int n = k ? snprintf(seed, sizeof(seed), "%s/nic%u/%u", vm->cfg.name, nic, k)
		  : snprintf(seed, sizeof(seed), "%s/nic%u", vm->cfg.name, nic);
	uint32_t h = crc32c(seed, (size_t)n);

	mac[0] = 0x52;
	mac[1] = 0x54;
	mac[2] = 0x00;
	mac[3] = (uint8_t)h;
	mac[4] = (uint8_t)(h >> 8);
	mac[5] = (uint8_t)(h >> 16);
}

static void mac_text(const uint8_t mac[6], char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
		 mac[5]);
}

/* A refusal of the host binding: "no-device", naming the field at @at. */
static const char *no_device(const char **code, uint32_t *offset, size_t at, const char *why)
{
	*code = "no-device";
	*offset = (uint32_t)(sizeof(struct snap_device) + at);
	return why;
}

/* A disk a copy-mode migration's DISK_LAYOUT bound to its host disk. */
static bool is_bound(const struct snap_io_map *map, uint32_t slot)
{
	return map && map->copy && slot < 8 && map->bound & (1U << slot);
}

static const char *bind_disk(struct vm *vm, uint32_t slot, unsigned int k,
			     const struct snap_dev_virtio_blk *s, const struct snap_io_map *map,
			     const char **code, uint32_t *offset)
{
	/* the limits are the host's, never the stream's: the defaults */
	struct vm_disk_desc dd = { .read_only = s->read_only, .iops = VM_DISK_IOPS_DEFAULT,
				   .bandwidth = VM_DISK_BANDWIDTH_DEFAULT };
	const struct vblk *b;
	const char *why;

	dd.pci_dev = map && k < VM_MAX_DISKS && map->disk_pci[k] ? map->disk_pci[k]
								  : (uint8_t)s->pci_dev;
	/* copy mode: its DISK_LAYOUT bound it, and its blocks came into it */
	if (!is_bound(map, slot) && vm_io_add_disk(vm, slot, &dd, &why))
		return no_device(code, offset, offsetof(struct snap_dev_virtio_blk, pci_dev), why);
	b = (const struct vblk *)vm->vio[slot];
	/* the disk's content is the user's (docs/snapshot-format.md): at least
	 * it is a disk of the size, and the writability, the guest had */
	if (b->b.capacity != s->capacity)
		return no_device(code, offset, offsetof(struct snap_dev_virtio_blk, capacity),
				 "the host disk's size is not the saved disk's");
	if (is_bound(map, slot) && b->b.read_only != !!s->read_only)
		return no_device(code, offset, offsetof(struct snap_dev_virtio_blk, read_only),
				 "read_only is not its DISK_LAYOUT's");
	if (b->b.read_only && !s->read_only)
		return no_device(code, offset, offsetof(struct snap_dev_virtio_blk, read_only),
				 "the host disk is read-only and the saved disk was not");
	if (b->b.seg_max < s->seg_max)
		return no_device(code, offset, offsetof(struct snap_dev_virtio_blk, seg_max),
				 "the host disk takes fewer segments a request than the saved disk");
	return NULL;
}

static const char *bind_nic(struct vm *vm, uint32_t slot, unsigned int k,
			    struct snap_dev_virtio_net *s, uint32_t *derived, const char **code,
			    uint32_t *offset)
{
	struct vswitch *sw = vswitch_find(s->switch_name);
	struct vm_nic_desc nd;
	const char *why;
	unsigned int tries = 0;

	if (!sw)
		return no_device(code, offset, offsetof(struct snap_dev_virtio_net, switch_name),
				 "no switch of that name on this host");
	memset(&nd, 0, sizeof(nd));
	memcpy(nd.sw, s->switch_name, strnlen(s->switch_name, sizeof(nd.sw) - 1));
	memcpy(nd.mac, s->mac, sizeof(nd.mac));
	nd.pps = VM_NIC_PPS_DEFAULT;	/* the host's limits, never the stream's */
	nd.bandwidth = VM_NIC_BANDWIDTH_DEFAULT;
	/* A copy beside its original (the switch has its MAC): a new one. A
	 * migration moves the VM itself: its MAC is never on the switch twice. */
	while (vswitch_has_mac(sw, nd.mac)) {
		if (vm->moved_in)
			return no_device(code, offset, offsetof(struct snap_dev_virtio_net, mac),
					 "the NIC's MAC is on its switch here already");
		if (tries == MAC_TRIES)
			return no_device(code, offset, offsetof(struct snap_dev_virtio_net, mac),
					 "the NIC's MAC is on its switch already, and so are the "
					 "ones derived for it");
		derive_mac(vm, k, tries++, nd.mac);
	}
	if (vm_io_add_nic(vm, slot, &nd, &why))
		return no_device(code, offset, offsetof(struct snap_dev_virtio_net, mac), why);
	if (tries) {
		char was[18], now[18];

		*derived |= 1U << k;
		mac_text(s->mac, was);
		mac_text(nd.mac, now);
		pr_info("vm %s: NIC %u: its MAC %s is on switch %s already (its original runs "
			"there): given %s", vm->cfg.name, k, was, nd.sw, now);
	}
	return NULL;
}

/* After the model's state: a derived MAC, the port's counters, a link the
 * operator had taken down. */
static void finish_nic(struct vm *vm, uint32_t slot, unsigned int k,
		       const struct snap_dev_virtio_net *s)
{
	struct vnet *n = vnet_of(vm, slot);
	struct vswitch_port *p = vm_io_nic_port(vm, k);
	const struct vm_nic_desc *nd = vm_io_nic(vm, k);

	vnet_set_mac(n, nd->mac);	/* a derived one: the guest is told */
	__atomic_store_n(&p->c.rx_frames, s->port_rx_frames, __ATOMIC_RELAXED);
	__atomic_store_n(&p->c.rx_bytes, s->port_rx_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&p->c.tx_frames, s->port_tx_frames, __ATOMIC_RELAXED);
	__atomic_store_n(&p->c.tx_bytes, s->port_tx_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&p->c.tx_drops, s->port_tx_drops, __ATOMIC_RELAXED);
	__atomic_store_n(&p->c.tx_spoofed, s->port_tx_spoofed, __ATOMIC_RELAXED);
	if (!(s->link & SNAP_VIO_LINK_UP))
		vm_io_nic_set(vm, k, false);	/* as its operator had left it */
}

const char *snap_vio_admit(struct vm *vm, uint32_t slot, const void *payload, uint64_t length,
			   const struct snap_io_map *map, uint32_t *derived, uint32_t *offset,
			   const char **code)
{
	uint64_t state[(SNAP_DEVICE_MAX - sizeof(struct snap_device)) / sizeof(uint64_t)];
	const struct vio_model *m = NULL;
	struct snap_device h;
	unsigned int k;
	const char *why;

	*code = "bad-snapshot";
	*offset = 0;
	if (slot >= VIO_MMIO_SLOTS || (vm->vio[slot] && !is_bound(map, slot)))
		return "no such slot, or one restored already";
	memcpy(&h, payload, sizeof(h));
	*offset = offsetof(struct snap_device, name);
	for (unsigned int i = 0; i < vio_model_count; i++)
		if (!strncmp(h.name, vio_models[i]->name, sizeof(h.name)))
			m = vio_models[i];
	if (!m || !memchr(h.name, 0, sizeof(h.name)))
		return "not a virtio model (virtio_blk, virtio_net)";
	*offset = offsetof(struct snap_device, state_size);
	if (h.state_size != m->state_size || length != sizeof(h) + m->state_size)
		return "state_size is not the model's";
	*offset = offsetof(struct snap_device, reserved);
	if (h.reserved)
		return "reserved field is not 0";
	/* where a VM of this host puts its devices: disks first, then NICs */
	k = index_of_kind(vm, slot, m);
	*offset = offsetof(struct snap_device, name);
	if (m == &virtio_blk_model && slot != k)
		return "a disk after a NIC (disks come first)";
	if (k >= (m == &virtio_blk_model ? VM_MAX_DISKS : VM_MAX_NICS))
		return "more devices of this kind than a VM has (2)";
	if (is_bound(map, slot) != (map && map->copy && m == &virtio_blk_model))
		return m == &virtio_blk_model ? "a disk whose DISK_LAYOUT did not come (copy mode)"
					      : "a NIC in a disk's slot";
	HYP_ASSERT(m->state_size <= sizeof(state));
	memcpy(state, (const uint8_t *)payload + sizeof(h), m->state_size);
	why = snap_fields_check(state, m->fields, m->nr_fields, 0, offset);
	if (!why)
		why = m->check(vm, state, offset);
	if (why) {
		*offset += sizeof(h);
		return why;
	}
	why = m == &virtio_blk_model ? bind_disk(vm, slot, k, (const void *)state, map, code, offset)
				     : bind_nic(vm, slot, k, (void *)state, derived, code, offset);
	if (why)
		return why;
	m->load(vm->vio[slot], state);
	if (m == &virtio_net_model)
		finish_nic(vm, slot, k, (const void *)state);
	return NULL;
}

/* A RARP request from @mac to everyone, as QEMU's announce-self sends: the
 * switches between here and the NIC's peers learn where the MAC is now. */
static void rarp_frame(const uint8_t mac[6], uint8_t *f)
{
	memset(f, 0, RARP_FRAME);
	memset(f, 0xff, 6);			/* broadcast */
	memcpy(f + 6, mac, 6);
	f[12] = ETH_P_RARP >> 8;
	f[13] = ETH_P_RARP & 0xff;
	f[15] = 1;				/* hardware: Ethernet */
	f[16] = 0x08;				/* protocol: IPv4 */
	f[18] = 6;				/* address lengths */
	f[19] = 4;
	f[21] = 3;				/* reverse request */
	memcpy(f + 22, mac, 6);			/* sender: the NIC, IP 0 */
	memcpy(f + 32, mac, 6);			/* target: the NIC, IP 0 */
}

void snap_vio_started(struct vm *vm, bool paused)
{
	uint8_t frame[RARP_FRAME];

	if (paused)
		vio_freeze(vm);		/* as a pause would: its resume rescans */
	else
		vio_resume(vm);		/* a request made available before the snapshot */
	for (unsigned int k = 0; k < VM_MAX_NICS; k++) {
		struct vswitch_port *p = vm_io_nic_port(vm, k);

		if (!p || !__atomic_load_n(&p->attached, __ATOMIC_ACQUIRE))
			continue;
		rarp_frame(p->mac, frame);
		vswitch_tx(p, frame, sizeof(frame));
	}
}
