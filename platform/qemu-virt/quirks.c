/* SPDX-License-Identifier: MIT */
/* QEMU virt quirks (docs/cfi.md, section "QEMU quirks"). */
#include <libfdt.h>
#include <platform.h>

bool platform_quirk_spelp(const void *fdt)
{
	/* QEMU's virt machine says "riscv-virtio" at the root */
	return !fdt_node_check_compatible(fdt, 0, "riscv-virtio");
}
