/* SPDX-License-Identifier: MIT */
/* Prints the /chosen/rng-seed it booted with ("RNG-SEED <hex>"), then, with
 * reboots=N, reboots N times (SBI SRST warm reboot) and prints it again each
 * boot. tests/guests/test_lifecycle.py checks that no two boots and no two
 * VMs of a slot ever get the same seed (issue 22). Same in both modes. */
#include "libguest.h"

#define T "rng_seed"

void test_main(unsigned long hartid)
{
	uint32_t boot = 0;
	const uint8_t *seed;
	char hex[2 * 64 + 1];
	int len;

	(void)hartid;
	fdt_chosen_u32("carapace,boot-count", &boot);
	seed = fdt_getprop(fdt_path_offset("/chosen"), "rng-seed", &len);
	if (!check_eq(T, "chosen has an rng-seed of 32 bytes", seed && len == 32, 1))
		return;
	for (int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", seed[i]);
	printf("RNG-SEED boot %u %s\n", boot, hex);
	if (boot < bootarg_ulong("reboots", 0))
		sbi_system_reset(SBI_SRST_TYPE_WARM_REBOOT, 0);
}
