/* SPDX-License-Identifier: MIT */
/* A virtio-pci device played in host memory (fake_vpci.h), for
 * tests/unit/test_hostio.c and tests/fuzz/fuzz_hostio.c. */
#include <string.h>
#include <virtio_pci.h>
#include "fake_vpci.h"

#define func funcs[0]

uint8_t bar[BAR_SIZE] __attribute__((aligned(4096)));

struct fake_vpci fd;

struct pci_func funcs[FAKE_MAX_FUNCS];
unsigned int nr_funcs;

const struct pci_func *pci_host_funcs(unsigned int *nr)
{
	*nr = nr_funcs;
	return funcs;
}

/* The functions before the last stay bound to rings the device no longer uses. */
void fake_replicate(unsigned int n)
{
	for (unsigned int i = n; i-- > 0;) {
		funcs[i] = funcs[0];
		funcs[i].dev = (uint8_t)(i == n - 1 ? SLOT : SLOT + 1 + i);
	}
	nr_funcs = n;
}

void fake_reset_queues(void)
{
	for (unsigned int i = 0; i < NR_Q; i++) {
		fd.q[i].size = fd.q[i].max;
		fd.q[i].enable = 0;
		fd.q[i].next_avail = 0;
	}
	fd.driver_features = 0;
}

uint64_t vpci_test_rd(uintptr_t a, unsigned int width)
{
	unsigned int off = (unsigned int)(a - (uintptr_t)bar), s = fd.qsel < NR_Q ? fd.qsel : 0;
	uint64_t v = 0;

	if (off >= DEVCFG && off < DEVCFG + DEVCFG_LEN) {
		memcpy(&v, &fd.cfg[off - DEVCFG], width);
		return v;
	}
	switch (off) {
	case COMMON + 0x04: return (uint32_t)(fd.features >> (fd.dfsel ? 32 : 0));
	case COMMON + 0x12: return NR_Q;
	case COMMON + 0x14: return fd.status;
	case COMMON + 0x15:
		if (fd.unsettled) {
			fd.unsettled--;
			fd.gen++;
		}
		return fd.gen;
	case COMMON + 0x18: return fd.qsel < NR_Q ? fd.q[s].size : 0;
	case COMMON + 0x1c: return fd.qsel < NR_Q ? fd.q[s].enable : 0;
	case COMMON + 0x1e: return fd.q[s].noff;
	case ISR:
		v = fd.isr;
		fd.isr = 0;
		return v;
	default: return 0;
	}
}

static void set_half(uint64_t *p, unsigned int off, uint32_t v)
{
	*p = off % 8 ? (*p & 0xffffffffu) | (uint64_t)v << 32 : (*p & ~0xffffffffull) | v;
}

void vpci_test_wr(uintptr_t a, unsigned int width, uint32_t v)
{
	unsigned int off = (unsigned int)(a - (uintptr_t)bar), s = fd.qsel < NR_Q ? fd.qsel : 0;

	(void)width;
	if (off >= NOTIFY && off < BAR_SIZE) {
		if (v < NR_Q)
			fd.q[v].notifies++;
		if (v < NR_Q && fd.on_notify)
			fd.on_notify(v);
		return;
	}
	switch (off) {
	case COMMON + 0x00: fd.dfsel = v; break;
	case COMMON + 0x08: fd.gfsel = v; break;
	case COMMON + 0x0c: set_half(&fd.driver_features, fd.gfsel ? 4 : 0, v); break;
	case COMMON + 0x14:
		fd.last_status_write = (uint8_t)v;
		fd.status = (uint8_t)v;
		if (fd.refuse_features)
			fd.status &= (uint8_t)~VIRTIO_STATUS_FEATURES_OK;
		if (!v) {
			fd.resets++;
			fake_reset_queues();
		}
		break;
	case COMMON + 0x16: fd.qsel = (uint16_t)v; break;
	case COMMON + 0x18: fd.q[s].size = (uint16_t)v; break;
	case COMMON + 0x1c: fd.q[s].enable = (uint16_t)v; break;
	case COMMON + 0x20: case COMMON + 0x24: set_half(&fd.q[s].desc, off, v); break;
	case COMMON + 0x28: case COMMON + 0x2c: set_half(&fd.q[s].avail, off, v); break;
	case COMMON + 0x30: case COMMON + 0x34: set_half(&fd.q[s].used, off, v); break;
	default: break;
	}
}

/* ---- the device's side of the rings ---- */

struct virtq_desc *desc_of(unsigned int qi)
{
	return (struct virtq_desc *)(uintptr_t)fd.q[qi].desc;
}

struct sring_avail *avail_of(unsigned int qi)
{
	return (struct sring_avail *)(uintptr_t)fd.q[qi].avail;
}

struct sring_used *used_of(unsigned int qi)
{
	return (struct sring_used *)(uintptr_t)fd.q[qi].used;
}

/* The next chain the driver published; false if none. */
bool fake_take(unsigned int qi, uint16_t *head)
{
	if (avail_of(qi)->idx == fd.q[qi].next_avail)
		return false;
	*head = avail_of(qi)->ring[fd.q[qi].next_avail++ % fd.q[qi].size];
	return true;
}

/* Put (@id, @len) in the used ring; @bump: publish it (used.idx + 1). */
void fake_put_used(unsigned int qi, uint32_t id, uint32_t len)
{
	struct sring_used *u = used_of(qi);

	u->ring[u->idx % fd.q[qi].size] = (struct virtq_used_elem){ id, len };
	u->idx++;
}

void fake_device(uint64_t features, unsigned int type)
{
	memset(&fd, 0, sizeof(fd));
	memset(bar, 0, sizeof(bar));
	fd.features = features;
	for (unsigned int i = 0; i < NR_Q; i++) {
		fd.q[i].max = 256;
		fd.q[i].noff = (uint16_t)i;
	}
	fake_reset_queues();
	memset(&func, 0, sizeof(func));
	func.dev = SLOT;
	func.virtio_type = type;
	func.bar[4] = (struct pci_bar){ .cpu = (uintptr_t)bar, .size = BAR_SIZE, .is64 = true };
	func.cap[VPCI_COMMON] = (struct virtio_pci_loc){ true, 4, COMMON, 0x1000 };
	func.cap[VPCI_ISR] = (struct virtio_pci_loc){ true, 4, ISR, 0x1000 };
	func.cap[VPCI_DEVICE] = (struct virtio_pci_loc){ true, 4, DEVCFG, DEVCFG_LEN };
	func.cap[VPCI_NOTIFY] = (struct virtio_pci_loc){ true, 4, NOTIFY, 0x1000 };
	func.notify_off_multiplier = 4;
	if (type == 2) {	/* disks: INTA routed to 35 */
		func.int_pin = 1;
		func.int_irq = 35;
	} else {
		func.int_irq = -1;
	}
	nr_funcs = 1;
}

