# SPDX-License-Identifier: MIT
"""Host interrupts on the AIA machine (carapace-run --aia: QEMU virt
aia=aplic-imsic, with and without guest interrupt files): the S-level APLIC
sends the host devices' wired lines as MSIs to hart 0's S-level IMSIC file
(hyp/drivers/aplic_host.c, imsic_host.c; docs/architecture.md, "Host
interrupts"), and everything runs as on the PLIC machine, which is the same
test's first case. Two guests each do disk and network I/O through host
virtio-blk-pci disks and a switch (vio_io's ring: frames to each other, a disk
operation at each turn), a third asks the switch's uplink (a host
virtio-net-pci NIC on QEMU user networking) for the gateway's MAC, and the
management channel is scraped while they run. The boot log names the
controller; no host device and not the management device is left to polling
(a host disk without its interrupt never completes a guest's request: see
test_host_irq.py); `carapace-ctl metrics` says the controller and counts the
interrupts hart 0 took, and a scrape of an idle host is itself interrupts
(the management device's)."""

import pytest

from harness.report import Report, check_report
from harness.runs import vm_spec

# issue 24/25's guest I/O: in make test (they were left out of every tier)
pytestmark = pytest.mark.quick

MACHINES = {
    # id: (launcher options, irq_chip, GEILEN the boot log reports)
    "plic": (("--plic",), "plic", 0),
    "aia": (("--aia", "--aia-guests", "0"), "aia", 0),
    "aia-guests3": (("--aia", "--aia-guests", "3"), "aia", 3),
}
AIA_LINE = ("carapace: host interrupts: AIA (APLIC 0xd000000 in MSI mode, 96 sources, to "
            "hart index 0's S-level IMSIC file at 0x28000000, 255 identities)")
PLIC_LINE = "carapace: host interrupts: PLIC 0xc000000, S-mode context 1"


def disk(tmp_path, name):
    path = tmp_path / f"{name}.raw"
    with open(path, "wb") as f:
        f.truncate(4 << 20)
    return path


def vms(tmp_path):
    ring = [vm_spec(f"r{i}", "vio_io", 1, f"mode=ring ring={i} ring_n=2 count=50").replace(
        ",bootargs=", f",mem=32M,disk={disk(tmp_path, f'd{i}')},net=lan/02:ca:fe:00:00:0{i},"
                      "bootargs=") for i in (1, 2)]
    arp = vm_spec("u", "vio_net", 1, "mode=arp").replace(",bootargs=", ",mem=32M,net=lan,bootargs=")
    return [*ring, arp]


def metrics(h):
    data, _ = h.ctl("metrics")
    return data["host"]


@pytest.mark.parametrize("machine", MACHINES)
def test_host_devices_interrupt_driven(host_factory, tmp_path, machine):
    options, chip, geilen = MACHINES[machine]
    h = host_factory(vms(tmp_path), extra=[*options, "--persist", "--switch",
                                           "name=lan,uplink=user"], timeout=300)
    for vm in ("r1", "r2", "u"):
        h.wait_for(lambda l, vm=vm: l.startswith(f"[{vm}] DONE:"), 200)
    log = h.snapshot()
    text = "\n".join(log)
    for vm in ("r1", "r2", "u"):
        check_report(Report(h.guest(vm)), f"vm {vm}")
    assert (AIA_LINE if chip == "aia" else PLIC_LINE) in log, text
    caps = [l for l in log if l.startswith("carapace: hart caps: ")]
    assert len(caps) == 1 and caps[0].endswith(
        f", ssaia {'yes' if chip == 'aia' else 'no'}, geilen {geilen}"), text
    # every host device and the management device on its interrupt
    assert not [l for l in log if "no interrupt" in l], text
    # the disks (two guests), the uplink and the management device answered
    devices = [l for l in log if l.startswith(("carapace: host blk 00:", "carapace: host net 00:"))]
    assert len(devices) == 3, text

    busy = metrics(h)
    assert busy["irq_chip"] == chip, busy
    assert busy["irq_unknown"] == 0, busy
    # 50 frames each way and a disk write, read and flush at every turn
    assert busy["irq_handled"] >= 1000, busy
    # the VMs are done: what a scrape of the idle host takes is the
    # management device's own interrupts (its request, then its reply's buffer)
    before = metrics(h)["irq_handled"]
    for _ in range(3):
        metrics(h)
    assert metrics(h)["irq_handled"] > before, busy
