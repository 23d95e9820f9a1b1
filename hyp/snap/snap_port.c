/* SPDX-License-Identifier: MIT */
/* The snapshot stream's transport: the hypervisor-owned virtio-serial port
 * "org.carapace.stream". A snapshot file is what a client saved from it. */
#include <hart.h>
#include <snapshot.h>
#include <virtio_console.h>

static int port = -1;
uint32_t snap_stall_ms = SNAP_STALL_MS_DEFAULT;

bool snap_port_stalled(uint64_t since)
{
	return time_now() - since > timebase_hz / 1000 * snap_stall_ms;
}

static bool find_port(void)
{
	if (port < 0)
		port = vcon_port_find(SNAP_PORT_NAME);
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
