/* SPDX-License-Identifier: MIT */
/* Prints the device tree the guest was given, as hex, for the host to compare
 * with QEMU virt's own (tests/guests/test_dt_parity.py). Same in both modes.
 * Output: "DTB-SIZE <bytes>", then "DTB <offset> <up to 64 bytes in hex>"
 * lines, then the usual report (one check: the blob's magic). */
#include "libguest.h"

#define T "dt_dump"
#define FDT_MAGIC	0xd00dfeedU

void test_main(unsigned long hartid)
{
	const uint8_t *b = env.fdt;
	uint32_t size;

	(void)hartid;
	if (!check_eqx(T, "device tree magic", fdt_be32(b), FDT_MAGIC))
		return;
	size = fdt_be32(b + 4);	/* totalsize */
	printf("DTB-SIZE %u\n", size);
	for (uint32_t off = 0; off < size; off += 64) {
		char line[2 * 64 + 1];
		uint32_t n = size - off < 64 ? size - off : 64;

		for (uint32_t i = 0; i < n; i++)
			snprintf(line + 2 * i, 3, "%02x", b[off + i]);
		printf("DTB %u %s\n", off, line);
	}
}
