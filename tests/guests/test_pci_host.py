# SPDX-License-Identifier: MIT
"""Host PCIe (hyp/drivers/pci_host.c): Carapace boots with QEMU virtio-pci
devices on virt's ECAM bridge (passed with --qemu-arg), finds each on bus 0,
places its BARs inside the DT's windows and finds the four virtio structures,
each read back through its BAR (the num_queues the line prints), and
the INTx route QEMU virt's interrupt-map gives each slot."""

import re

import pytest

from harness.runs import EXIT_OK, assert_exit, run_carapace, vm_spec

# issue 24/25's guest I/O: in make test (they were left out of every tier)
pytestmark = pytest.mark.quick

WINDOWS_RE = re.compile(r"carapace: pci: ECAM (0x[0-9a-f]+)\+(0x[0-9a-f]+), buses (\d+)-(\d+), "
                        r"mem32 (0x[0-9a-f]+)\+(0x[0-9a-f]+), mem64 (0x[0-9a-f]+)\+(0x[0-9a-f]+)")
FUNC_RE = re.compile(r"carapace: pci (?P<bdf>[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) (?P<name>.+?) "
                     r"\((?P<id>[0-9a-f]{4}:[0-9a-f]{4})\) class (?P<cls>[0-9a-f]{6})(?P<rest>.*)$")
BAR_RE = re.compile(r", BAR(\d) (0x[0-9a-f]+)\+(0x[0-9a-f]+)")
CAP_RE = re.compile(r", (common|notify|isr|device) BAR(\d)\+(0x[0-9a-f]+)")
NR_PAIRS = 8        # issue 24: eight VMs, each with a disk and a NIC


def qemu_args(tmp_path, pairs):
    """--qemu-arg options for @pairs virtio-blk (modern only; disk i has i + 1
    queues, so a read through its BAR tells it from any other device) and
    virtio-net (transitional, QEMU's default on a root bus; 3 queues) devices."""
    args = []
    for i in range(pairs):
        disk = tmp_path / f"disk{i}.img"
        disk.write_bytes(bytes(64 * 1024))
        args += ["-drive", f"if=none,id=d{i},file={disk},format=raw",
                 "-device", f"virtio-blk-pci,drive=d{i},disable-legacy=on,num-queues={i + 1}",
                 "-device", "virtio-net-pci,romfile="]
    return [f"--qemu-arg={a}" for a in args]


def boot(tmp_path, pairs):
    run = run_carapace([vm_spec("a", "sbi_base", vcpus=1)], names=["a"],
                       extra=qemu_args(tmp_path, pairs))
    assert_exit(run, EXIT_OK)
    windows = [WINDOWS_RE.match(l) for l in run.hyp if WINDOWS_RE.match(l)]
    assert len(windows) == 1, run.out
    funcs = [FUNC_RE.match(l) for l in run.hyp if FUNC_RE.match(l)]
    return run, [int(x, 16) if x.startswith("0x") else int(x) for x in windows[0].groups()], funcs


def in_window(addr, size, base, wsize):
    return base <= addr and addr + size <= base + wsize


def test_pci_virtio_blk_and_net_found(tmp_path, guests_built):
    run, (ecam, ecam_size, b0, b1, m32, m32_size, m64, m64_size), funcs = boot(tmp_path, NR_PAIRS)
    assert (ecam, ecam_size, b0) == (0x30000000, 0x10000000, 0), run.out   # QEMU virt's gpex
    assert funcs[0].group("bdf") == "00:00.0" and funcs[0].group("cls") == "060000", run.out
    virtio = funcs[1:]
    assert len(virtio) == 2 * NR_PAIRS, run.out
    assert [f.group("name") for f in virtio] == ["virtio-blk", "virtio-net"] * NR_PAIRS, run.out
    assert {f.group("id") for f in virtio} == {"1af4:1042", "1af4:1000"}, run.out
    assert len({f.group("bdf") for f in funcs}) == len(funcs)
    placed = []
    for n, f in enumerate(virtio):
        rest = f.group("rest")
        assert "unassigned" not in rest and "MISSING" not in rest and "cut" not in rest, rest
        bars = {int(i): (int(a, 16), int(s, 16)) for i, a, s in BAR_RE.findall(rest)}
        for addr, size in bars.values():
            assert addr % size == 0, rest                       # naturally aligned
            assert (in_window(addr, size, m32, m32_size) or
                    in_window(addr, size, m64, m64_size)), rest
            placed.append((addr, size))
        caps = {name: (int(bar), int(off, 16)) for name, bar, off in CAP_RE.findall(rest)}
        assert set(caps) == {"common", "notify", "isr", "device"}, rest
        for bar, off in caps.values():
            assert bar in bars and off < bars[bar][1], rest
        # interrupt-map: QEMU virt swizzles INTA of slot s to PLIC source 32 + s % 4
        slot = int(f.group("bdf")[3:5], 16)
        assert f", INTA irq {32 + slot % 4}," in rest, rest
        m = re.search(r", (\d+) queues", rest)
        # read through the BAR just placed: this device's own registers answer
        assert m and int(m.group(1)) == (3 if n % 2 else n // 2 + 1), rest
    placed.sort()
    for (a, s), (b, _) in zip(placed, placed[1:]):
        assert a + s <= b, f"BARs overlap: {placed}"


def test_pci_no_devices_only_the_bridge(tmp_path, guests_built):
    run, _, funcs = boot(tmp_path, 0)
    assert [(f.group("bdf"), f.group("name")) for f in funcs] == [("00:00.0", "host bridge")], \
        run.out
