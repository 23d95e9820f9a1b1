# SPDX-License-Identifier: MIT
"""The hypervisor's limits and names that the launcher, the management client
and the snapshot reader all check (hyp/include/fdt_host.h, vm.h, lifecycle/vm_lifecycle.c,
docs/management.md): one copy."""

import re

from .units import MiB

MAX_VMS = 8
MAX_VCPUS = 8
MAX_HARTS = 8
MAX_BOOTARGS = 511             # the hypervisor's char bootargs[512], NUL included
VM_MEM_MIN = 8 * MiB
VM_MEM_ALIGN = 2 * MiB

NAME_RE = re.compile(r"[a-z0-9_-]{1,15}\Z")       # a VM's name
IMAGE_RE = re.compile(r"[a-z0-9_.-]{1,31}\Z")     # a host image's name
CFI_POLICIES = ("trap", "delegate", "strict", "off")
IRQCHIPS = ("plic", "aia")     # a VM's interrupt controller (docs/design-aia.md 3.1)

# What a VM gets when its creator does not say (carapace-run --vm, carapace-ctl create).
DEFAULT_MEM = 64 * MiB
DEFAULT_VCPUS = 1
DEFAULT_CFI = "trap"
