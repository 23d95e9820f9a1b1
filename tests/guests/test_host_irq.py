# SPDX-License-Identifier: MIT
"""Host interrupts (hyp/drivers/host_irq.c, plic_host.c, aplic_host.c,
docs/architecture.md "Host interrupts"): a real PCI INTx reaches the host disk
driver on hart 0, on the PLIC machine and on the AIA machine (--aia: the
S-level APLIC sends it as an MSI to hart 0's S-level IMSIC file). The
launcher's --selftest-pci-irq makes the hypervisor read sector 0 of the first
host disk through its driver (hyp/boot/hostio_selftest.c, hostblk.c); QEMU
signals each completion on INTA, which virt's interrupt-map routes to a PLIC
or APLIC source, whose handler (hyp/host/host_io.c) polls the disk, whose
done() sends the next read; the last prints one line. Taken two ways: at a
guest exit (a guest spins on the only hart) and in the scheduler's loop (no
guest at all: hart 0 sleeps in WFI until the interrupt wakes it)."""

import re

import pytest

from harness.report import check_report
from harness.runs import EXIT_OK, assert_exit, run_carapace, vm_spec

# issue 24/25's guest I/O: in make test (they were left out of every tier)
pytestmark = pytest.mark.quick

DONE_RE = re.compile(r"carapace: hostio selftest: irq: blk slot (?P<slot>\d+) irq "
                     r"(?P<irq>\d+): (?P<n>\d+) requests answered, (?P<bad>\d+) with an error, "
                     r"data (?P<data>[0-9a-f]{8}); taken at a guest exit (?P<exit>\d+), "
                     r"in the scheduler's loop (?P<loop>\d+)$")
SECTOR0 = b"CRPC"       # the disk's first bytes: the device wrote our buffer
MACHINES = {"plic": ["--plic"], "aia": ["--aia"]}


def disk_args(tmp_path):
    disk = tmp_path / "disk.img"
    disk.write_bytes(SECTOR0 + bytes(64 * 1024 - len(SECTOR0)))
    args = ["-drive", f"if=none,id=d0,file={disk},format=raw",
            "-device", "virtio-blk-pci,drive=d0,disable-legacy=on"]
    return ["--selftest-pci-irq", *(f"--qemu-arg={a}" for a in args)]


def answered(lines, out):
    """(taken at a guest exit, taken in the scheduler's loop) of the answers
    (reads go on for 500 ms, 16 at least), each checked: no error, the
    sector's bytes, slot 1's INTA (QEMU virt swizzles INTA of slot s to PLIC
    or APLIC source 32 + s % 4)."""
    found = [m for m in map(DONE_RE.match, lines) if m]
    assert len(found) == 1, out
    m = found[0]
    assert (m.group("slot"), m.group("irq"), m.group("bad")) == ("1", "33", "0"), out
    assert int(m.group("n")) >= 16, out
    assert bytes.fromhex(m.group("data")) == SECTOR0, out
    assert int(m.group("exit")) + int(m.group("loop")) == int(m.group("n")), out
    return int(m.group("exit")), int(m.group("loop"))


@pytest.mark.parametrize("machine", MACHINES)
def test_pci_intx_taken_at_a_guest_exit(tmp_path, guests_built, machine):
    # one hart, one vCPU that never waits: answers that come while it runs
    # are exits (more than one claim loop's worth: some must)
    run = run_carapace([vm_spec("s", "spin", vcpus=1, bootargs="spin_ms=1500")], smp=1,
                       names=["s"], extra=[*MACHINES[machine], *disk_args(tmp_path)])
    assert_exit(run, EXIT_OK)       # not stopped for an "unexpected host interrupt"
    assert "hostio selftest: irq: blk slot 1 irq 33: request sent" in run.out, run.out
    at_exit, _ = answered(run.hyp, run.out)
    assert at_exit >= 1, run.out


@pytest.mark.parametrize("machine", MACHINES)
def test_pci_intx_wakes_an_idle_hart(tmp_path, host_factory, machine):
    # no VM: hart 0 sleeps in the scheduler's wfi; the interrupts must wake it
    h = host_factory([], extra=["--persist", "--smp", "1", *MACHINES[machine],
                                *disk_args(tmp_path)], timeout=60)
    h.wait_for(lambda l: "requests answered" in l, 30)
    lines = h.snapshot()
    at_exit, in_loop = answered(lines, "\n".join(lines))
    assert (at_exit, in_loop >= 16) == (0, True), "\n".join(lines)


def test_no_selftest_without_the_property(tmp_path, guests_built):
    run = run_carapace([vm_spec("s", "spin", vcpus=1, bootargs="spin_ms=200")], smp=1,
                       names=["s"], extra=disk_args(tmp_path)[1:])
    assert_exit(run, EXIT_OK)
    assert "hostio selftest" not in run.out, run.out
    # the driver took the disk and its line all the same
    assert "carapace: host blk 00:01.0: 128 sectors" in run.out, run.out


def test_guest_disk_on_the_aia_machine(tmp_path, guests_built):
    """On an AIA machine (QEMU virt aia=aplic-imsic, here given as QEMU's own
    option) the bridge's interrupt-map names the APLIC with two cells
    (source, trigger): the host disk's INTx is routed through it, not polled,
    and a guest's disk works (a host disk with neither an interrupt nor the
    poll never completes a guest's request)."""
    img = tmp_path / "guest.img"
    img.write_bytes(bytes(128 * 512))
    run = run_carapace([vm_spec("a", "vio_blk", 1, "sectors=128").replace(
        ",bootargs=", f",disk={img},bootargs=")], names=["a"],
        extra=["--qemu-arg=-machine", "--qemu-arg=aia=aplic-imsic"], timeout=90)
    assert_exit(run, EXIT_OK)
    assert "carapace: host interrupts: AIA (APLIC 0xd000000 in MSI mode" in run.out, run.out
    assert "no interrupt" not in run.out, run.out
    check_report(run.guests["a"], "vm a")
