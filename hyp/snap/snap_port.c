/* SPDX-License-Identifier: MIT */
/* The snapshot stream's transport: the hypervisor-owned virtio-serial port
 * "org.carapace.stream". A snapshot file is what a client saved from it. */
#include <hart.h>
#include <log.h>
#include <mm.h>
#include <snapshot.h>
#include <virtio_console.h>

static int port = -1;
uint32_t snap_stall_ms = SNAP_STALL_MS_DEFAULT;
/* QEMU writes each transmit buffer to the stream socket in one call, and
 * its main loop, which also feeds every other device, does those calls:
 * 4 KiB buffers cost a 48 MB stream 12 000 writes (and as many wake-ups of
 * the reader), 64 KiB ones 750. */
static void *tx_bufs;
static bool tx_given;

bool snap_port_stalled(uint64_t since)
{
	return time_now() - since > timebase_hz / 1000 * snap_stall_ms;
}

void snap_port_init(void)
{
	/* not zeroed: a buffer is written before the device reads it */
	tx_bufs = (void *)mm_alloc_raw((uint64_t)VCON_BUFS * SNAP_PORT_TX_BUF_SIZE, 4096);
	if (!tx_bufs)
		pr_info("snapshot stream: no memory for its transmit buffers: 4 KiB ones used");
}

static bool find_port(void)
{
	if (port < 0)
		port = vcon_port_find(SNAP_PORT_NAME);
	if (port >= 0 && tx_bufs && !tx_given)
		tx_given = vcon_port_tx_buffers(port, tx_bufs, SNAP_PORT_TX_BUF_SIZE);
	return port >= 0;
}

bool snap_port_ready(void)
{
	return find_port() && vcon_port_connected(port);
}

size_t snap_port_write(const void *buf, size_t len)
{
	if (!find_port())
		return 0;
	return vcon_write(port, buf, len);
}

size_t snap_port_read(void *buf, size_t len)
{
	if (!find_port())
		return 0;
	return vcon_read(port, buf, len);
}

void snap_port_drain(void)
{
	char buf[256];

	if (!find_port())
		return;
	vcon_poll();
	while (vcon_read_generation(port) != vcon_port_generation(port) &&
	       vcon_read(port, buf, sizeof(buf)))
		;
}
