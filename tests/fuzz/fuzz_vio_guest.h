/* SPDX-License-Identifier: MIT */
/* The harness of the guest virtio device targets (fuzz_vblk.c, fuzz_vnet.c):
 * one running VM with 16 KiB of RAM and one virtio-mmio device in slot 0,
 * what the device models call outside vdev/ (RAM lookups, allocation, the
 * PLIC line, a log that says nothing, a clock that stands still), and the
 * guest driver's side: register accesses, a driver init, and the script
 * operations both targets share. */
#ifndef FUZZ_VIO_GUEST_H
#define FUZZ_VIO_GUEST_H
#include <stddef.h>
#include <stdint.h>
#include <vm.h>

#define FUZZ_RAM_GPA		VM_GUEST_RAM_BASE
#define FUZZ_RAM_SIZE		0x4000UL

/* Where a queue's rings are, as offsets in the guest RAM. */
struct fuzz_vio_queue {
	uint32_t desc, avail, used;
};

extern struct vm fuzz_vm;
extern uint8_t *fuzz_ram;	/* exactly FUZZ_RAM_SIZE bytes: ASan sees any access past it */
extern bool fuzz_line;		/* device 0's PLIC line, as the device last set it */

/* fuzz_vio_reset() - a fresh running VM whose RAM starts with the @len bytes
 *  at @image (zero after; more than FUZZ_RAM_SIZE are ignored), line low. */
void fuzz_vio_reset(const uint8_t *image, size_t len);

/* fuzz_vio_mmio() - a guest access to register @off of device 0; never a
 *  guest fault. The value read (or @value for a write). */
uint64_t fuzz_vio_mmio(uint32_t off, unsigned int width, bool write, uint64_t value);
void fuzz_vio_wr(uint32_t off, uint32_t v);
/** fuzz_vio_check_view() - slot 0's read-only window page says what its
 *  handler reads, register by register and the config space. */
void fuzz_vio_check_view(void);

/* fuzz_vio_driver_init() - a device reset, then the driver's init with all
 *  the device's features of word 0, VERSION_1, and queue i of @nr with
 *  @qnum[i] entries at @q[i]; DRIVER_OK. Kept for FUZZ_OP_REINIT. */
void fuzz_vio_driver_init(const struct fuzz_vio_queue *q, const uint16_t *qnum, unsigned int nr);

/* The script operations both targets number alike (a, b, c: the record's
 * fields): the guest writes u16 c at RAM offset b; a 32-bit register write
 * at offset b & 0xffc of value c | a << 16; a read at offset b of width
 * 1 << (a & 3), aligned; a device reset and a new driver init. */
enum { FUZZ_OP_RAM = 2, FUZZ_OP_WRITE = 3, FUZZ_OP_READ = 4, FUZZ_OP_REINIT = 5 };

/* fuzz_vio_guest_op() - do operation @kind if it is one of those: true if
 *  it was. */
bool fuzz_vio_guest_op(unsigned int kind, uint8_t a, uint16_t b, uint16_t c);

static inline uint16_t fuzz_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t fuzz_rd32(const uint8_t *p)
{
	return fuzz_rd16(p) | (uint32_t)fuzz_rd16(p + 2) << 16;
}
#endif
