# SPDX-License-Identifier: MIT
"""The host's I/O devices for the VMs (issue 24), put together: the checks
across VMs and switches (plan_devices), the device numbers on the host's PCIe
bus 0 (assign_pci_slots: the uplinks in --switch order, then the disks in
--vm order, the --restore disks, the --incoming-disk ones, the --spare-disk
ones) and the QEMU
arguments of them all (device_args).  The pieces are
carapace.disks and carapace.network; the host DT nodes that name the device
numbers are carapace.devicetree's."""

from .disks import check_disks, disk_args
from .errors import LaunchError
from .network import plan_network, uplink_args

# QEMU virt's pcie.0: device 0 is the host bridge; 1..31 are free (the
# launcher adds no other PCI device; a --qemu-arg device needs its own addr=).
PCI_FIRST = 1
PCI_LAST = 31


def pci_devices(vms, switches):
    """Everything that takes a device number, in the order numbers are given."""
    return [sw for sw in switches if sw.uplink] + [d for vm in vms for d in vm.disks]


def assign_pci_slots(vms, switches, first=PCI_FIRST, last=PCI_LAST):
    devices = pci_devices(vms, switches)
    free = last - first + 1
    if len(devices) > free:
        disks = sum(len(vm.disks) for vm in vms)
        raise LaunchError(f"{len(devices)} PCI devices ({disks} disks and "
                          f"{len(devices) - disks} uplinks) but bus 0 has {free} free "
                          f"device numbers ({first}..{last}); give fewer disks or uplinks")
    for number, dev in enumerate(devices, first):
        dev.pci_dev = number


class _NoVM:
    """Host disks no VM has at start (--incoming-disk, --spare-disk), where
    the plan wants a VM's."""

    def __init__(self, disks):
        self.disks = list(disks)


def disk_owners(vms, restores=(), spares=(), incoming=()):
    """Everything with disks, in the order their disks take device numbers."""
    return list(vms) + list(restores) + [_NoVM(incoming), _NoVM(spares)]


def plan_devices(vms, switches, restores=(), spares=(), incoming=()):
    """Check the VMs' disks and NICs against each other and the switches,
    derive MACs and addresses, choose device numbers; @restores' disks (the
    host disks of --restore FILE,disk=PATH) take numbers after the VMs', the
    @incoming ones (--incoming-disk) after them, the @spares (--spare-disk)
    last."""
    owners = disk_owners(vms, restores, spares, incoming)
    check_disks(owners)
    plan_network(vms, switches)
    assign_pci_slots(owners, switches)


def device_args(vms, switches, restores=(), spares=(), incoming=()):
    """The QEMU arguments of every uplink and disk (after plan_devices)."""
    args = []
    for sw in switches:
        if sw.uplink:
            args += uplink_args(sw)
    for owner in disk_owners(vms, restores, spares, incoming):
        for disk in owner.disks:
            args += disk_args(disk)
    return args
