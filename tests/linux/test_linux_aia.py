# SPDX-License-Identifier: MIT
"""Linux as an AIA VM in software (docs/design-aia.md stage 3: irqchip=aia on
the AIA machine without guest interrupt files, --aia --aia-guests 0): the
kernel finds an IMSIC and an APLIC in its DT, takes its IPIs through the
IMSIC (stores to the other vCPU's file page, claimed through stopei) and its
devices' interrupts through the APLIC in MSI mode, and boots to init; a PLIC
VM beside it on the same host is unchanged. The init's `interrupts` test
prints the kernel's controller lines and /proc/interrupts
("init: irq: ..."), read here.

Two kernels: the Debian one (IMSIC and APLIC drivers built in; virtio-blk is
a module it cannot load from the initramfs, so the UART and the VM
generation ID are its APLIC devices) and our guest kernel
(guest-linux-patches/guest.config: CONFIG_RISCV_IMSIC/APLIC/APLIC_MSI), with
a virtio disk it reads through the APLIC."""

import re

import pytest

from harness.linux import INITRAMFS, KERNEL, run_carapace

pytestmark = pytest.mark.linux

AIA_SW = ("--aia", "--aia-guests", "0")
IPI_LINE = "riscv-imsic: interrupt-controller@28000000: providing IPIs using interrupt 1"
SBI_IPI_LINE = "riscv: providing IPIs using SBI IPI extension"
APLIC_LINE = "riscv-aplic d000000.interrupt-controller: 31 interrupts forwarded to MSI base"


def spec(name, kernel, irqchip=None, disk=None, mem="256M"):
    s = f"name={name},kernel={kernel},initrd={INITRAMFS},mem={mem},vcpus=2"
    s += f",irqchip={irqchip}" if irqchip else ""
    s += f",disk={disk}" if disk else ""
    return s + ",bootargs=console=ttyS0 carapace.test=interrupts"


def irq_rows(lines):
    """/proc/interrupts as the init printed it: {name: (cpu0, cpu1, rest)}."""
    rows = {}
    for l in lines:
        m = re.search(r"init: irq: +(\S+):\s+(\d+)\s+(\d+)\s+(.*)$", l)
        if m:
            rows[m.group(1)] = (int(m.group(2)), int(m.group(3)), m.group(4))
    return rows


def device_row(rows, device):
    hits = [r for r in rows.values() if r[2].split()[-1] == device]
    assert len(hits) == 1, (device, rows)
    return hits[0]


def check_aia_guest(name, rep, out, devices):
    text = "\n".join(rep.lines)
    assert rep.has("init: interrupts ok"), f"the AIA guest never reached init\n{out[-6000:]}"
    assert any(IPI_LINE in l for l in rep.lines), text
    assert any(APLIC_LINE in l for l in rep.lines), text
    rows = irq_rows(rep.lines)
    # IPIs went both ways (20 tasks forked across two CPUs, and the boot's
    # function calls), and no SBI IPI driver: the IMSIC provides them
    ipis = [r for k, r in rows.items() if k.startswith("IPI")]
    assert sum(r[0] for r in ipis) > 0 and sum(r[1] for r in ipis) > 0, rows
    assert not any(SBI_IPI_LINE in l for l in rep.lines), text
    # ... so they cost no SBI call: the VM made fewer than it took IPIs
    m = re.search(rf"carapace: vm {name}: exits \d+, sbi calls (\d+),", out)
    assert m and int(m.group(1)) < sum(r[0] + r[1] for r in ipis), (m and m.group(0), rows)
    for dev in devices:
        cpu0, cpu1, rest = device_row(rows, dev)
        assert "APLIC-MSI-d000000" in rest, (dev, rest)
        if dev != "vmgenid":    # its line rises only on a restore
            assert cpu0 + cpu1 > 0, (dev, rows)
    assert not any("PLIC" in r[2] and "APLIC" not in r[2] for r in rows.values()), rows


def check_plic_guest(rep, out):
    assert rep.has("init: interrupts ok"), f"the PLIC guest never reached init\n{out[-6000:]}"
    rows = irq_rows(rep.lines)
    cpu0, cpu1, rest = device_row(rows, "ttyS0")
    assert "PLIC" in rest and "APLIC" not in rest and cpu0 + cpu1 > 0, rows
    assert not any("riscv-imsic" in l for l in rep.lines), "\n".join(rep.lines)
    assert any(SBI_IPI_LINE in l for l in rep.lines), "\n".join(rep.lines)


# with guest interrupt files (design-aia.md stage 4): one TCG thread, as
# carapace-run advises on QEMU 10.0.2
AIA_GFILES = ("--aia", "--aia-guests", "3", "--icount")


@pytest.mark.parametrize("machine", [AIA_SW, AIA_GFILES], ids=["sw", "gfiles"])
def test_linux_aia_guest_beside_a_plic_guest(initramfs, machine):
    code, out, reps = run_carapace([spec("a", KERNEL, "aia"), spec("p", KERNEL)], ["a", "p"],
                                   extra=machine)
    if machine == AIA_GFILES:
        assert "guest interrupt files: 3 per hart" in out, out[-4000:]
    check_aia_guest("a", reps["a"], out, ["ttyS0", "vmgenid"])
    check_plic_guest(reps["p"], out)
    assert code == 0, f"launcher exit {code}\n{out[-4000:]}"


def test_guest_kernel_aia_virtio_disk(initramfs, guest_kernel, tmp_path):
    disk = tmp_path / "d.raw"
    with open(disk, "wb") as f:
        f.truncate(4 << 20)
    code, out, reps = run_carapace([spec("g", guest_kernel, "aia", disk=disk)], ["g"],
                                   extra=AIA_SW)
    assert reps["g"].has("init: read /dev/vda"), out[-6000:]
    check_aia_guest("g", reps["g"], out, ["ttyS0", "virtio0"])
    assert code == 0, f"launcher exit {code}\n{out[-4000:]}"
