# SPDX-License-Identifier: MIT
"""Host virtio drivers (hyp/drivers/virtio_pci.c, hostblk.c, hostnet.c) on
QEMU's virtio-blk-pci and virtio-net-pci devices (passed with --qemu-arg at
chosen slots): each is probed at boot (one line: capacity or MAC, queue
size), and with --selftest-hostio (/chosen carapace,selftest-hostio) the boot
self-test writes a pattern to sectors 8-15 of the read-write disk, flushes,
reads it back, and this test finds the pattern in the image file afterwards;
the read-only disk refuses the write (its image is unchanged, and what it
reads matches the file); the NIC on QEMU user networking gets an ARP reply
from the gateway 10.0.2.2."""

import re

import pytest

from harness.runs import EXIT_OK, assert_exit, run_carapace, vm_spec

# issue 24/25's guest I/O: in make test (they were left out of every tier)
pytestmark = pytest.mark.quick

RW_SLOT, RO_SLOT, NET_SLOT = 3, 4, 5
DISK_BYTES = 64 * 1024
SECTOR, SECTORS = 8, 8                 # hyp/boot/hostio_selftest.c
SLIRP_GATEWAY_MAC = "52:55:0a:00:02:02"   # QEMU user networking's 10.0.2.2
NIC_MAC = "52:54:00:12:34:77"


def pattern(slot):
    """hostio_selftest.c pattern(): byte k of the sectors written on @slot's disk."""
    return bytes(((k * 7 + slot * 13 + (k >> 9)) ^ 0x5a) & 0xff for k in range(SECTORS * 512))


def qemu_args(rw, ro):
    args = ["-drive", f"if=none,id=rw,file={rw},format=raw",
            "-device", f"virtio-blk-pci,drive=rw,addr={RW_SLOT:#x}",
            "-drive", f"if=none,id=ro,file={ro},format=raw,readonly=on",
            "-device", f"virtio-blk-pci,drive=ro,addr={RO_SLOT:#x}",
            "-netdev", "user,id=up0",
            "-device", f"virtio-net-pci,netdev=up0,mac={NIC_MAC},addr={NET_SLOT:#x},romfile="]
    return [f"--qemu-arg={a}" for a in args]


def images(tmp_path):
    rw, ro = tmp_path / "rw.img", tmp_path / "ro.img"
    rw.write_bytes(bytes(DISK_BYTES))
    ro_data = bytes((i * 5 + 1) & 0xff for i in range(DISK_BYTES))
    ro.write_bytes(ro_data)
    return rw, ro, ro_data


def boot(tmp_path, selftest):
    rw, ro, ro_data = images(tmp_path)
    extra = qemu_args(rw, ro) + (["--selftest-hostio"] if selftest else [])
    run = run_carapace([vm_spec("a", "sbi_base", vcpus=1)], names=["a"], extra=extra)
    assert_exit(run, EXIT_OK)
    return run, rw, ro, ro_data


def line(run, prefix):
    found = [l for l in run.hyp if l.startswith(prefix)]
    assert len(found) == 1, f"want one line starting {prefix!r}\n{run.out}"
    return found[0]


def check_probe_lines(run):
    sectors = DISK_BYTES // 512
    rw = line(run, f"carapace: host blk 00:{RW_SLOT:02x}.0: ")
    assert re.search(rf": {sectors} sectors \(0 MiB\), block 512, seg_max \d+, queue \d+, "
                     r"read-write, flush$", rw), rw
    ro = line(run, f"carapace: host blk 00:{RO_SLOT:02x}.0: ")
    assert f": {sectors} sectors" in ro and "read-only" in ro, ro
    seg_max = int(re.search(r"seg_max (\d+)", rw).group(1))
    queue = int(re.search(r"queue (\d+)", rw).group(1))
    assert 1 <= seg_max <= 254 and seg_max <= queue - 2 and queue == 256, rw
    net = line(run, f"carapace: host net 00:{NET_SLOT:02x}.0: ")
    assert net.endswith(f": MAC {NIC_MAC}, rx queue 32, tx queue 32"), net
    assert not [l for l in run.hyp if "out of service" in l or "not used" in l], run.out


def test_host_virtio_selftest(tmp_path, guests_built):
    run, rw, ro, ro_data = boot(tmp_path, selftest=True)
    check_probe_lines(run)
    blk = line(run, f"carapace: hostio selftest: blk slot {RW_SLOT}:")
    assert blk.endswith(f"wrote {SECTORS} sectors at {SECTOR}, flushed, read back equal; "
                        "past the end refused"), blk
    data = rw.read_bytes()
    start, end = SECTOR * 512, (SECTOR + SECTORS) * 512
    assert data[start:end] == pattern(RW_SLOT), "the pattern is not in the image file"
    assert data[:start] == bytes(start) and data[end:] == bytes(DISK_BYTES - end), \
        "bytes outside the written sectors changed"
    robl = line(run, f"carapace: hostio selftest: blk slot {RO_SLOT}:")
    first = ro_data[SECTOR * 512:SECTOR * 512 + 8].hex()
    assert robl.endswith(f"read-only: write refused; sector {SECTOR} starts {first}"), robl
    assert ro.read_bytes() == ro_data, "the read-only image changed"
    net = line(run, f"carapace: hostio selftest: net slot {NET_SLOT}:")
    assert net.endswith(f"ARP reply from 10.0.2.2 at {SLIRP_GATEWAY_MAC}; "
                        "a 1515-byte frame refused"), net
    line(run, "carapace: hostio selftest: done")


def test_host_virtio_probe_only(tmp_path, guests_built):
    """Without the DT property the drivers come up and write nothing."""
    run, rw, ro, ro_data = boot(tmp_path, selftest=False)
    check_probe_lines(run)
    assert not [l for l in run.hyp if "hostio selftest" in l], run.out
    assert rw.read_bytes() == bytes(DISK_BYTES) and ro.read_bytes() == ro_data
