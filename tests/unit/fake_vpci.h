/* SPDX-License-Identifier: MIT */
/* A virtio-pci device played in host memory for the host virtio drivers
 * (hyp/drivers/virtio_pci.c, hostblk.c, hostnet.c, built with HOST_TEST):
 * the driver's register accesses reach vpci_test_rd/wr() here, which play
 * the common configuration (features, status, queues), the ISR, the device
 * configuration (fd.cfg, under a generation count that can be made to
 * change on every read) and the notifications (counted per queue). Its
 * rings are the driver's memory, read and written directly (host pointers
 * stand for host-physical addresses). pci_host_funcs() lists funcs[]. */
#ifndef FAKE_VPCI_H
#define FAKE_VPCI_H
#include <stdbool.h>
#include <stdint.h>
#include <pci_host.h>
#include <virtio_pci.h>

/* the BAR: the four structures at these offsets */
#define COMMON		0x0000
#define ISR		0x1000
#define DEVCFG		0x2000
#define NOTIFY		0x3000
#define BAR_SIZE	0x4000
#define DEVCFG_LEN	64
#define NR_Q		3
#define SLOT		3	/* device number of the function under test */
#define FAKE_MAX_FUNCS	16

struct fake_vpci {
	uint64_t features;		/* offered */
	uint64_t driver_features;
	uint32_t dfsel, gfsel;
	uint8_t status, gen, isr;
	unsigned int unsettled;		/* config_generation reads that change it */
	uint16_t qsel;
	struct {
		uint16_t max, size, enable, noff;
		uint64_t desc, avail, used;
		uint16_t next_avail;
		unsigned int notifies;
	} q[NR_Q];
	uint8_t cfg[DEVCFG_LEN];
	uint8_t last_status_write;
	unsigned int resets;
	bool refuse_features;		/* FEATURES_OK does not stick */
	/* called at each notification, in the driver's kick (its lock held) */
	void (*on_notify)(unsigned int qi);
};

extern uint8_t bar[BAR_SIZE];
extern struct fake_vpci fd;
extern struct pci_func funcs[FAKE_MAX_FUNCS];
extern unsigned int nr_funcs;

/** fake_device() - a fresh device offering @features, virtio type @type
 *  (funcs[0] at SLOT; INTA routed to 35 for a disk), queues of 256. */
void fake_device(uint64_t features, unsigned int type);
/** fake_replicate() - @n functions sharing the device, the last one at SLOT:
 *  the driver under test then uses the last element of its static pool (what
 *  it writes past that is a global overflow the sanitizer reports). */
void fake_replicate(unsigned int n);
/** fake_reset_queues() - the queues as a device reset leaves them. */
void fake_reset_queues(void);

struct virtq_desc *desc_of(unsigned int qi);
struct sring_avail *avail_of(unsigned int qi);
struct sring_used *used_of(unsigned int qi);
/** fake_take() - the next chain the driver published on queue @qi. */
bool fake_take(unsigned int qi, uint16_t *head);
/** fake_put_used() - (@id, @len) at used.idx, then used.idx + 1. */
void fake_put_used(unsigned int qi, uint32_t id, uint32_t len);
#endif
