# SPDX-License-Identifier: MIT
"""Snapshot and restore of guests doing disk and network I/O (issue 25,
device state), with the bare-metal payload snap_vio (tests/guests/snap_vio.c):

- a VM with two disks and a NIC is snapshotted in the middle of its I/O (a
  write and read-back after another on its second disk, frames on its NIC),
  with a write made available on its first disk but never notified; the
  original is destroyed and the file restored: the parked write completes,
  the request in flight at the snapshot completed, what was written before is
  there, and the I/O goes on; the devices' state shows in carapace-snap;
- the same file with a VIRTIO section tampered (a queue size no driver could
  set) is refused, naming the section and the byte, and nothing is created;
- a NIC-only VM restored beside its original (still running on the switch)
  gets a new MAC, said in the reply and the log; the copy sends from it and
  the switch drops none of its frames as spoofed;
- a VM with a NIC sending frame after frame moves live to a fresh host
  (migration protocol 5): its NIC keeps its MAC and counters there and its
  frames go on; a destination whose switch has that MAC refuses it
  (`no-device`) and the VM runs on at the source."""

import gzip
import json
import re
import struct
import subprocess
import time

import pytest

from carapace.network import derive_mac, nic_seed
from harness.migration import OTHER, check_ok_migration, life, marker_line
from harness.paths import SNAP
from harness.ports import free_port
from harness.report import Report, check_report
from harness.runs import EXIT_OK, vm_spec
from harness.snapshots import SECTION_HEADER, crc32c, sections

pytestmark = pytest.mark.quick

SECTORS = 16384                         # 8 MiB disks
SEC_VIRTIO = 6                          # docs/snapshot-format.md
DEVICE_HEADER = 24                      # struct snap_device before a model's state
Q_SIZE = 104                            # q_size[0] in a virtio state: after 8 u64s, 6 u32s,
                                        # q_ready[2] and q_fault[2] (snapshot-format.md)


def disk(tmp_path, name):
    path = tmp_path / f"{name}.raw"
    with open(path, "wb") as f:
        f.truncate(SECTORS * 512)
    return path


def spec(name, bootargs, disks=(), net=None):
    s = vm_spec(name, "snap_vio", 1, bootargs)
    extra = "".join(f",disk={d}" for d in disks) + (f",net={net}" if net else "")
    return s.replace(",bootargs=", f"{extra},bootargs=")


def devices(h, vm):
    rep, _, _ = h.ctl("devices", vm)
    return rep["devices"]


def test_snapshot_mid_io_restores_with_nothing_lost(snap_host, tmp_path):
    a, b = disk(tmp_path, "a"), disk(tmp_path, "b")
    # "other" keeps the host up between the destroy and the restore
    h = snap_host([spec("orig", "max_wait_ms=120000", (a, b), "lan"),
                   vm_spec("other", "demo", 1, "count=100000 delay_us=20000")],
                  extra=["--persist", "--switch", "name=lan", "--expect", "orig=destroyed",
                         "--expect", "other=destroyed"], timeout=300)
    h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    path = tmp_path / "vio.snap"
    # the devices' state only: the restore goes back onto the same images
    # (the disks' content in the stream: test_snapshot_disks.py), which must
    # be as they were at the snapshot (the restore checks sampled blocks):
    # paused first, it stays paused through the snapshot until destroyed,
    # so nothing writes them meanwhile
    h.ctl("pause", "orig")
    rep, _, _ = h.ctl("snapshot", "orig", str(path), "--no-disks")
    assert rep["ok"] and not rep["disks"], rep
    # the devices' state is in the file: two disks, a NIC, each where it was
    info = subprocess.run([str(SNAP), "inspect", "--json", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert info.returncode == 0, info.stdout + info.stderr
    vio = json.loads(info.stdout)["virtio"]
    assert [v["name"] for v in vio] == ["virtio_blk", "virtio_blk", "virtio_net"], vio
    assert vio[0]["state"]["capacity"] == SECTORS and vio[2]["state"]["switch_name"] == "lan"
    parked = vio[0]["queues"][0]
    assert parked["ready"] and parked["next_avail"] == parked["next_used"], parked
    h.ctl("destroy", "orig")
    rep, _, _ = h.ctl("restore", str(path), "--name", "copy")
    assert rep["ok"] and rep["vm"] == "copy", rep
    assert [n["new_mac"] for n in rep["nics"]] == [False], rep
    h.wait_for(lambda l: l.startswith("[copy] DONE:"), 120)
    before = h.guest("orig")
    before = before[:next(i for i, l in enumerate(before) if l.startswith("SNAPSHOT-READY"))]
    report = Report(before + h.guest("copy"))
    check_report(report, "vm orig, then copy (restored)")
    for want in ("restored: the write made available before the snapshot completed",
                 "restored: disk 1 goes on (writes and reads back)",
                 "restored: every frame sent went out (used)"):
        assert any(l.startswith("PASS: snap_vio: " + want) for l in report.lines), want
    # the restored VM's disks are the same host disks; the counters went on
    # from the saved ones
    devs = devices(h, "copy")
    assert [d["kind"] for d in devs] == ["blk", "blk", "net"], devs
    assert devs[0]["io"]["requests"] > 8 and devs[1]["io"]["requests"] > 64, devs
    assert devs[2]["tx"]["requests"] > 32 and devs[2]["tx_spoofed"] == 0, devs

    # a VIRTIO section tampered: refused at its byte, nothing created
    stream = bytearray(gzip.decompress(path.read_bytes()))
    off, _, inst, length = next(s for s in sections(stream) if s[1] == SEC_VIRTIO)
    byte = off + SECTION_HEADER + DEVICE_HEADER + Q_SIZE
    assert struct.unpack_from("<I", stream, byte)[0] == 16
    struct.pack_into("<I", stream, byte, 12)            # not a power of two
    payload = stream[off + SECTION_HEADER:off + SECTION_HEADER + length]
    struct.pack_into("<I", stream, off + 16, crc32c(payload))
    bad = tmp_path / "tampered.snap"
    bad.write_bytes(stream)
    r = subprocess.run([str(SNAP), "verify", str(bad)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and f"VIRTIO {inst} (virtio_blk), byte {byte}: q_size" in r.stderr, \
        r.stderr
    rep, rc, _ = h.ctl("restore", str(bad), "--name", "bad", "--no-verify", check=False)
    assert rc != 0 and rep["code"] == "bad-snapshot", rep
    assert re.search(rf"section VIRTIO {inst} at offset {off}, byte {byte}: q_size", rep["error"]), rep
    listing, _, _ = h.ctl("list")
    assert sorted(v["name"] for v in listing["vms"]) == ["copy", "other"], listing
    h.ctl("destroy", "other")
    h.wait_for(lambda l: l == "carapace: vm copy: shut down", 30)
    assert h.finish() == EXIT_OK


def test_restore_beside_the_original_gets_a_new_mac(snap_host, tmp_path):
    h = snap_host([spec("orig", "max_wait_ms=60000 after=64", net="lan")],
                  extra=["--persist", "--switch", "name=lan", "--expect", "orig=destroyed"],
                  timeout=300)
    h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    path = tmp_path / "nic.snap"
    rep, _, _ = h.ctl("snapshot", "orig", str(path))
    assert rep["ok"], rep
    orig_mac = devices(h, "orig")[0]["mac"]
    rep, _, _ = h.ctl("restore", str(path), "--name", "copy")
    assert rep["ok"], rep
    (nic,) = rep["nics"]
    assert nic["new_mac"] and nic["mac"] != orig_mac, (rep, orig_mac)
    h.wait_for(lambda l: f"vm copy: NIC 0: its MAC {orig_mac} is on switch lan already" in l, 30)
    h.wait_for(lambda l: l.startswith("[copy] DONE:"), 120)
    check_report(Report(h.guest("copy")), "copy (restored beside its original)")
    mac_line = next(l for l in h.guest("copy") if "mac before" in l)
    assert f"mac before {orig_mac} after {nic['mac']}" in mac_line, mac_line
    # the copy sends from its new MAC: the switch takes its frames. Only
    # frames the guest had made available before the snapshot (built with
    # the old MAC, sent at the restore's rescan) may be dropped as spoofed:
    # at most a ring's worth, never the 64 it sent since
    copy = devices(h, "copy")[0]
    assert copy["mac"] == nic["mac"] and copy["tx"]["requests"] >= 32, copy
    assert copy["tx_spoofed"] < 16, copy
    # the original still has its own, and keeps sending
    assert devices(h, "orig")[0]["mac"] == orig_mac
    h.wait_for(lambda l: l == "carapace: vm copy: shut down", 30)
    h.ctl("destroy", "orig")
    assert h.finish() == EXIT_OK


def test_a_vm_with_a_nic_moves_live(hosts):
    port = free_port()
    lan = ["--switch", "name=lan"]
    a = hosts("a", [spec("n", "move_ms=8000 after=32", net="lan"), OTHER], extra=lan)
    b = hosts("b", incoming=port, extra=lan)
    a.ready(), b.ready()
    marker_line(a, "n", "SNAPSHOT-READY")
    nic_a, _ = a.ctl("devices", "n")
    m = a.migrate("n", port)
    check_ok_migration(m, "n", "a -> b")
    assert b.vms() == {"n": "running"}, b.console()
    b.wait_for(lambda l: l.startswith("[n] DONE:"), 90)
    check_report(Report(life(a.guest("n"), b.guest("n"), "SNAPSHOT-READY")),
                 "vm n: on a, then on b")
    mac_line = next(l for l in b.guest("n") if "mac before" in l)
    (before,) = nic_a["devices"]
    nic_b, _ = b.ctl("devices", "n")
    (after,) = nic_b["devices"]
    # the same NIC: its MAC, its switch, its counters going on from a's
    assert after["mac"] == before["mac"] and after["switch"] == "lan", (before, after)
    assert f"mac before {before['mac']} after {before['mac']}" in mac_line, mac_line
    assert after["tx"]["requests"] >= before["tx"]["requests"] + 32, (before, after)
    assert after["tx_spoofed"] == 0 and after["attached"], after


def test_a_move_onto_a_switch_with_its_mac_is_refused(hosts):
    """A move keeps the VM's MAC: a destination whose switch has that MAC
    already (another VM there) refuses the NIC at its VIRTIO section
    (`no-device`, the MAC's byte named), and the VM runs on at the source."""
    port = free_port()
    lan = ["--switch", "name=lan"]
    mac = derive_mac(nic_seed("n", 0))                  # what the launcher gives n's NIC
    a = hosts("a", [spec("n", "move_ms=60000", net="lan")], extra=lan)
    b = hosts("b", [spec("x", "move_ms=60000", net=f"lan/{mac}")], incoming=port, extra=lan)
    a.ready(), b.ready()
    marker_line(a, "n", "SNAPSHOT-READY")
    m = a.migrate("n", port)
    assert m.rc != 0 and m.reply and m.reply["code"] == "refused", m.text()
    assert "MAC is on its switch here already" in m.reply["error"], m.reply
    assert re.search(r"section 6 0 at offset \d+, byte \d+", m.reply["error"]), m.reply
    assert a.vms() == {"n": "running"} and b.vms() == {"x": "running"}, (a.vms(), b.vms())
    sent, _ = a.ctl("devices", "n")
    time.sleep(1)
    again, _ = a.ctl("devices", "n")
    assert again["devices"][0]["tx"]["requests"] > sent["devices"][0]["tx"]["requests"], \
        "the VM stopped sending at the source"
