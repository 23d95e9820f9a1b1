/* SPDX-License-Identifier: MIT */
/* Host management channel: a polled virtio-serial (virtio-console with
 * MULTIPORT) device on virtio-mmio, found in the host DT, never shown to
 * guests. Ports are named by QEMU (virtserialport name=...) and found by name.
 *
 * Not thread-safe: call every function from hart 0 only (the driver takes no
 * lock). Call vcon_poll() often. Where the host routes the device's
 * interrupt to vcon_interrupt(), it wakes a sleeping hart 0 when a buffer
 * comes back or bytes arrive; the work is still vcon_poll()'s.
 *
 * Connection generations: a port's generation grows by one at every host
 * connect and every disconnect. Received bytes carry the generation of the
 * client that sent them. A reader does:
 *
 *	vcon_poll();
 *	for (;;) {
 *		unsigned int gen = vcon_read_generation(port);
 *		size_t n = vcon_read(port, buf, sizeof(buf));	// all of @gen
 *
 *		if (!n)
 *			break;
 *		if (gen != my_gen)
 *			drop the half-received line, my_gen = gen;
 *		... reply only if gen == vcon_port_generation(port)
 *	}
 */
#ifndef HYP_VIRTIO_CONSOLE_H
#define HYP_VIRTIO_CONSOLE_H
#include <types.h>

#define VCON_MAX_PORTS	5		/* port ids 0..4 (QEMU nr=1..4; 0 is a virtconsole's) */
#define VCON_NAME_MAX	64		/* port name, NUL included; longer names are ignored */
#define VCON_BUFS	16		/* rx and tx buffers per port */
#define VCON_BUF_SIZE	4096		/* the driver's own (vcon_port_tx_buffers()) */

/** vcon_init() - find and start the virtio-serial device in the host DT; false
 *  if there is none (the hypervisor then runs without a management channel).
 *  Waits (at most 1 s, typically a few ms) until QEMU has announced and named
 *  its ports; @timebase: host timer ticks per second (time_now()). Call once. */
bool vcon_init(const void *fdt, uint64_t timebase);
/** vcon_irq() - the device's interrupt source in the DT, (*@parent) its
 *  controller's phandle and (*@type) the specifier's second cell, the
 *  trigger (0 for a one-cell specifier); -1 when it has none or there is no
 *  device. */
int64_t vcon_irq(uint32_t *parent, uint32_t *type);
/** vcon_interrupt() - the interrupt handler (host_irq_register()): it only
 *  acknowledges the device (hart 0, as every other call). */
void vcon_interrupt(void *ctx);
/** vcon_poll() - handle control messages (port added/named, host client
 *  connected/gone), reclaim tx buffers, collect received data. Call often. */
void vcon_poll(void);
/** vcon_port_find() - port number of the port named @name, or -1 (also for a
 *  port QEMU has not announced yet: look again later). */
int vcon_port_find(const char *name);
/** vcon_port_connected() - is a host client connected to the port (QEMU
 *  PORT_OPEN 1)? Handles pending control messages first. */
bool vcon_port_connected(int port);
/** vcon_port_generation() - the port's current connection generation
 *  (pending control messages handled first); 0 for an unknown port. */
unsigned int vcon_port_generation(int port);
/** vcon_read_generation() - collect received data, then give the generation
 *  of the bytes the next vcon_read() returns: older than
 *  vcon_port_generation() while a departed client's bytes are still queued;
 *  vcon_port_generation() when nothing is queued. */
unsigned int vcon_read_generation(int port);
/** vcon_read() - up to @len received bytes, non-blocking; 0 if none. Returns
 *  only bytes already collected (by vcon_read_generation() or vcon_poll()),
 *  all of one generation: the one vcon_read_generation() just reported.
 *  Bytes a client sent before leaving are still returned, with its
 *  generation. Consumed buffers go straight back to the device. */
size_t vcon_read(int port, void *buf, size_t len);
/** vcon_port_tx_buffers() - let @port transmit from @bufs, VCON_BUFS buffers of
 *  @size bytes each (hypervisor memory the caller never frees), instead of
 *  its own VCON_BUF_SIZE ones: QEMU writes each buffer to its socket in one
 *  call, so a bulk stream moves in fewer, larger writes. Takes effect only
 *  while none of the port's transmit buffers is with the device: false
 *  then (or for an unknown port), and nothing changed; try again later. */
bool vcon_port_tx_buffers(int port, void *bufs, uint32_t size);
/** vcon_write() - queue up to @len bytes (at most VCON_BUFS times the port's
 *  buffer size per call) for the
 *  host client; returns how many were accepted, which may be fewer (even 0)
 *  while tx buffers are busy (a client that does not read keeps them busy):
 *  retry after vcon_poll(), never spinning without bound. With no client
 *  connected the bytes are dropped and @len is returned (QEMU would drop
 *  them too). 0 for an unknown port. */
size_t vcon_write(int port, const void *buf, size_t len);
#endif
