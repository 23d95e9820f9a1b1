# SPDX-License-Identifier: MIT
"""Guest disks and NICs (issue 24) with the bare-metal payloads vio_blk and
vio_net (tests/guests/lib/vio.c, a polled virtio-mmio driver): the driver's
contract the same on bare QEMU's own virtio devices and on Carapace's models
over QEMU's virtio-pci devices; the malformed-ring attacks beside a victim
doing I/O; the switch's forwarding, tenant isolation, anti-spoofing and
uplink; eight VMs with a disk and a NIC each."""

import re
import time

import pytest

from harness.report import Report, check_report
from harness.runs import (EXIT_OK, assert_carapace_mode, assert_exit, reference_cmd, run_carapace,
                          run_to_end, vm_spec)
from harness.paths import GUESTS

SECTORS = 16384                         # 8 MiB disks
BARE_VIRTIO = ["-global", "virtio-mmio.force-legacy=false"]    # version 2, as Carapace's


def disk(tmp_path, name, size=SECTORS * 512):
    path = tmp_path / f"{name}.raw"
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def checks(rep):
    """The PASS/FAIL lines without their order: what a parity test compares."""
    return sorted(l for l in rep.lines if l.startswith(("PASS: ", "FAIL: ")))


def run_bare(payload, bootargs, extra):
    code, out = run_to_end(reference_cmd(GUESTS / f"{payload}.bin", smp=1, append=bootargs,
                                         extra=[*BARE_VIRTIO, *extra]), payload)
    return code, Report([l.rstrip("\r") for l in out.replace("\0", "").splitlines()])


@pytest.mark.parametrize("ro", [False, True], ids=["rw", "ro"])
def test_vio_blk_contract_matches_bare_qemu(guests_built, tmp_path, ro):
    """The driver's contract (negotiation, config, multi-segment write and
    read, FLUSH, GET_ID, requests at and past the end, an unknown type, data
    kept across a device reset): every check passes on bare QEMU's
    virtio-blk-device and under Carapace, and the two sets are identical."""
    args = f"sectors={SECTORS}" + (" ro=1" if ro else "")
    img = disk(tmp_path, "bare")
    code, bare = run_bare("vio_blk", args, [
        "-drive", f"file={img},if=none,id=d0,format=raw" + (",readonly=on" if ro else ""),
        "-device", "virtio-blk-device,drive=d0"])
    check_report(bare, "bare QEMU")
    img = disk(tmp_path, "hyp")
    run = run_carapace([vm_spec("a", "vio_blk", 1, args) .replace(
        ",bootargs=", f",disk={img}{':ro' if ro else ''},bootargs=")], names=["a"])
    assert_exit(run, EXIT_OK)
    assert_carapace_mode(run.guests["a"], "vm a")
    check_report(run.guests["a"], "vm a")
    assert checks(run.guests["a"]) == checks(bare), \
        f"Carapace and bare QEMU differ:\n{checks(run.guests['a'])}\n{checks(bare)}"
    if not ro:
        data = img.read_bytes()
        assert any(data[8 * 512:11 * 512]), "the write never reached the host's disk image"


def victim_ops(run, vm):
    for l in run.guests[vm].lines:
        m = re.match(r"INFO: vio_blk: VIO-RATE: ops=(\d+) us=(\d+)", l)
        if m:
            return int(m.group(1))
    raise AssertionError(f"vm {vm}: no VIO-RATE line\n" + "\n".join(run.guests[vm].lines))


def test_vio_blk_attacks_beside_a_victim(guests_built, tmp_path):
    """Every malformed ring (loops, chains past SEG_MAX, buffers in holes, at
    RAM's end, wrapping 2^64, in MMIO windows, avail.idx jumps, heads out of
    range, wrong directions, INDIRECT, zero lengths, TOCTOU rewrites, a reset
    in flight, a notify storm, a bad queue configuration) is refused and the
    device works after a reset; the hypervisor stays up; a victim VM keeps
    writing, reading back and verifying its own disk all along, every request
    right. (Its rate beside a flooding neighbour against its rate alone is a
    figure of `make bench`, measured under -icount: a timed assertion here
    would measure how busy the host machine is.)"""
    victim = vm_spec("v", "vio_blk", 1, f"sectors={SECTORS} mode=victim seconds=10").replace(
        ",bootargs=", f",disk={disk(tmp_path, 'v')},bootargs=")
    attacker = vm_spec("x", "vio_blk", 1, f"sectors={SECTORS} mode=attack").replace(
        ",bootargs=", f",disk={disk(tmp_path, 'x')},bootargs=")
    run = run_carapace([victim, attacker], names=["v", "x"], timeout=240)
    assert_exit(run, EXIT_OK)
    check_report(run.guests["x"], "attacker")
    check_report(run.guests["v"], "victim")
    begun = run.guests["x"].kind("INFO: vio_blk: ATTACK-BEGIN")
    ended = run.guests["x"].kind("INFO: vio_blk: ATTACK-END")
    assert len(begun) == len(ended) >= 19, "\n".join(run.guests["x"].lines)
    assert victim_ops(run, "v") >= 100, f"victim did {victim_ops(run, 'v')} requests in 10 s"


def net_vm(name, switch, args, payload="vio_net"):
    return vm_spec(name, payload, 1, args).replace(",bootargs=", f",net={switch},bootargs=")


def recv_counts(rep):
    counts, other = {}, None
    for l in rep.lines:
        m = re.match(r"INFO: vio_net: NET-RECV: tag=(\d+) data=(\d+) echo=(\d+)", l)
        if m:
            counts[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
        m = re.match(r"INFO: vio_net: NET-RECV: other=(\d+)", l)
        if m:
            other = int(m.group(1))
    assert other is not None, "no NET-RECV line\n" + "\n".join(rep.lines)
    return counts, other


def test_vio_net_switches_isolate_tenants(guests_built):
    """Two VMs on switch lan exchange 50 frames (ping, echo: each intact);
    a VM on switch dmz, listening all along, sees none of them."""
    run = run_carapace([net_vm("a", "lan", "mode=echo seconds=8"),
                        net_vm("b", "lan", "mode=ping count=50 tag=2"),
                        net_vm("c", "dmz", "mode=recv seconds=8")],
                       names=["a", "b", "c"], extra=["--switch", "name=lan", "--switch", "name=dmz"],
                       timeout=120)
    assert_exit(run, EXIT_OK)
    for vm in "abc":
        check_report(run.guests[vm], f"vm {vm}")
    assert "INFO: vio_net: NET-ECHO: echoed=50" in run.guests["a"].lines
    counts, other = recv_counts(run.guests["c"])
    assert counts == {} and other == 0, f"frames crossed switches: {counts}, other {other}"


def test_vio_net_drops_spoofed_and_oversized_frames(guests_built):
    """On one switch: a sender with a forged source MAC and one with frames
    above 1514 bytes reach nobody; an honest sender's frames all arrive."""
    run = run_carapace([net_vm("s", "lan", "mode=send spoof=1 count=20 tag=3"),
                        net_vm("o", "lan", "mode=send big=1 count=20 tag=4"),
                        net_vm("h", "lan", "mode=send count=20 tag=5"),
                        net_vm("r", "lan", "mode=recv seconds=8")],
                       names=["s", "o", "h", "r"], extra=["--switch", "name=lan"], timeout=120)
    assert_exit(run, EXIT_OK)
    counts, _ = recv_counts(run.guests["r"])
    assert 3 not in counts, f"spoofed frames delivered: {counts}"
    assert 4 not in counts, f"oversized frames delivered: {counts}"
    assert counts.get(5) == (20, 0), f"honest frames lost: {counts}"


def test_vio_net_uplink_answers_arp(guests_built):
    """A VM on a switch with a QEMU user-networking uplink gets an ARP reply
    from the gateway 10.0.2.2 (the uplink's host side)."""
    run = run_carapace([net_vm("a", "lan", "mode=arp")], names=["a"],
                       extra=["--switch", "name=lan,uplink=user"])
    assert_exit(run, EXIT_OK)
    check_report(run.guests["a"], "vm a")


def test_eight_vms_with_a_disk_and_a_nic_each(guests_built, tmp_path):
    """Eight VMs, each with its own disk and a NIC on one switch, run the
    disk contract at once: 16 host PCI devices plus the uplink, all served."""
    vms = []
    for i in range(8):
        spec = vm_spec(f"v{i}", "vio_blk", 1, f"sectors={SECTORS}")
        vms.append(spec.replace(",bootargs=", f",mem=32M,disk={disk(tmp_path, f'd{i}')},net=lan,"
                                              "bootargs="))
    run = run_carapace(vms, names=[f"v{i}" for i in range(8)],
                       extra=["--switch", "name=lan,uplink=user"], timeout=300)
    assert_exit(run, EXIT_OK)
    for i in range(8):
        check_report(run.guests[f"v{i}"], f"vm v{i}")
        assert any((tmp_path / f"d{i}.raw").read_bytes()[8 * 512:11 * 512]), f"v{i}'s disk untouched"


def test_ctl_shows_devices_and_detaches_a_nic(host_factory, tmp_path):
    """carapace-ctl devices: each disk and NIC of a VM with its counters;
    nic VM N detach: nothing reaches the NIC any more while its neighbour
    keeps sending, attach: frames arrive again; bad indices are refused."""
    img = disk(tmp_path, "v")
    h = host_factory([net_vm("r", "lan", "mode=recv seconds=40"),
                      net_vm("s", "lan", "mode=send count=30000 tag=6"),
                      vm_spec("v", "vio_blk", 1, f"sectors={SECTORS} mode=victim seconds=30")
                      .replace(",bootargs=", f",disk={img},bootargs=")],
                     extra=["--switch", "name=lan"], timeout=120)

    def rx(vm):
        rep, _ = h.ctl("devices", vm)
        (nic,) = [d for d in rep["devices"] if d["kind"] == "net"]
        return nic, nic["rx"]["requests"]

    h.wait_for(lambda l: "virtio-net in slot" in l and l.startswith("[s]"), 60)
    deadline = time.monotonic() + 30
    while rx("r")[1] < 50 and time.monotonic() < deadline:
        time.sleep(0.5)
    nic, before = rx("r")
    assert nic["attached"] and nic["switch"] == "lan" and before >= 50, nic
    disks, _ = h.ctl("devices", "v")
    (d,) = disks["devices"]
    assert d["kind"] == "blk" and d["sectors"] == SECTORS and d["io"]["requests"] > 0, d
    rep, _ = h.ctl("nic", "r", "0", "detach")
    assert rep["attached"] is False, rep
    nic, at_detach = rx("r")
    assert not nic["attached"], nic
    sent = rx("s")[0]["tx"]["requests"]
    time.sleep(2)
    assert rx("s")[0]["tx"]["requests"] > sent + 20, "the sender stopped: no test of the detach"
    assert rx("r")[1] == at_detach, "frames reached a detached NIC"
    rep, _ = h.ctl("nic", "r", "0", "attach")
    assert rep["attached"] is True, rep
    time.sleep(2)
    assert rx("r")[1] > at_detach + 20, "no frames after the NIC was attached again"
    assert h.ctl("nic", "r", "1", "detach", check=False)[1] == 1     # no such NIC: remote error
    assert h.ctl("nic", "r", "7", "detach", check=False)[1] == 3     # usage error


def test_disk_rate_limit_caps_a_guest_at_its_default(guests_built, tmp_path):
    """A guest writing and reading 4 KiB blocks as fast as it can gets no
    more than its disk's default rate limit (2000 requests a second and a
    tenth of a second's burst: docs/virtio.md, "Fair share"): at most 1000
    write+read operations a second, measured in the guest's own time."""
    secs = 3
    run = run_carapace([vm_spec("v", "vio_blk", 1, f"sectors={SECTORS} mode=victim seconds={secs}")
                        .replace(",bootargs=", f",disk={disk(tmp_path, 'v')},bootargs=")],
                       names=["v"], timeout=120)
    assert_exit(run, EXIT_OK)
    check_report(run.guests["v"], "vm v")
    ops = victim_ops(run, "v")
    assert 0 < ops <= 1000 * secs + 100 + 100, f"{ops} operations in {secs} s: no rate limit"
