/* SPDX-License-Identifier: MIT */
/* Host management channel: a polled virtio-serial (virtio-console with
 * MULTIPORT) device on virtio-mmio, found in the host DT, never shown to guests.
 * Ports are named by QEMU (virtserialport name=...) and found by name.
 *
 * Not thread-safe: every function must be called from hart 0 only (the driver
 * takes no lock). Interrupts are never used: call vcon_poll() often. */
#ifndef HYP_VIRTIO_CONSOLE_H
#define HYP_VIRTIO_CONSOLE_H
#include <types.h>

#define VCON_MAX_PORTS	5		/* port ids 0..4 (QEMU nr=1..4; 0 is a virtconsole's) */
#define VCON_NAME_MAX	64		/* port name, NUL included; longer names are ignored */
#define VCON_BUFS	16		/* rx and tx buffers per port */
#define VCON_BUF_SIZE	4096
#define VCON_TX_MAX	(VCON_BUFS * VCON_BUF_SIZE)	/* most one vcon_write() takes */

/** vcon_init() - find and start the virtio-serial device in the host DT; false
 *  if there is none (the hypervisor then runs without a management channel).
 *  Waits (at most 100 ms) until QEMU has announced and named its ports. Once. */
bool vcon_init(const void *fdt);
/** vcon_poll() - process control messages (port add/name/open/close), reclaim
 *  tx buffers, collect received data. Call often: QEMU drops control messages
 *  (a client connecting or leaving) when no control buffer is free. */
void vcon_poll(void);
/** vcon_port_find() - port number of the port named @name, or -1. */
int vcon_port_find(const char *name);
/** vcon_port_connected() - is a host client connected to the port (QEMU
 *  PORT_OPEN 1)? As of the last vcon_poll(). */
bool vcon_port_connected(int port);
/** vcon_port_generation() - connection generation of the port, as of the
 *  last vcon_poll(): it grows by one at every host connect and every
 *  disconnect. 0 for an unknown port. */
unsigned int vcon_port_generation(int port);
/** vcon_read_generation() - generation of the bytes vcon_read() returns next
 *  (older than vcon_port_generation() while a departed client's bytes are
 *  still queued). All bytes of one connection carry the same value and one
 *  vcon_read() never returns bytes of two generations. Read it before each
 *  vcon_read(): when it changed, drop the previous client's half-received
 *  line; reply only while it equals vcon_port_generation() (otherwise the
 *  client is gone and the port may belong to a new one already). */
unsigned int vcon_read_generation(int port);
/** vcon_read() - up to @len received bytes, non-blocking; 0 if none. Bytes a
 *  client sent before disconnecting are still returned (with their old
 *  generation: see vcon_read_generation()). Consumed buffers go straight back to the device. */
size_t vcon_read(int port, void *buf, size_t len);
/** vcon_write() - queue up to @len bytes (at most VCON_TX_MAX at once);
 *  returns how many were accepted, which may be less (even 0) when tx buffers
 *  are busy: the caller retries after vcon_poll(), never spinning without
 *  bound (a client that does not read keeps them busy). With no client
 *  connected QEMU accepts and silently drops the bytes. */
size_t vcon_write(int port, const void *buf, size_t len);
#endif
