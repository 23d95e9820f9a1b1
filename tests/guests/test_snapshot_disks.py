# SPDX-License-Identifier: MIT
"""A snapshot holds the VM's disks' content (issue 25, format 5: header flag
DISKS, DISK sections), or without it their identity (format 6: DISK_ID
sections), with the bare-metal payload snap_vio
(tests/guests/snap_vio.c: it writes sectors 0..3 of its first disk before
SNAPSHOT-READY and, restored, reads them back; it keeps writing its second
disk). The host put data of its own in each image first (a block in the
middle of the first, the partial last block of the second, 40 sectors), so
the stream carries blocks the guest never touched, a partial one among them:

- a plain snapshot holds exactly the non-zero blocks of the disks, as the
  images have them; the original images are never written by what follows;
  `--no-disks` gives a file without the flag or a DISK section;
- a DISK run the hypervisor refuses (--no-verify) is named at the same byte
  as carapace-snap names it, and nothing reaches the host disks;
- carapace-ctl restore onto two --spare-disk images of the running host
  (and without --disk: refused before anything is sent): the restored guest
  reads back what it wrote before the snapshot, and the spare images hold
  the saved blocks;
- carapace-run --restore of a live snapshot into a fresh QEMU writes each
  disk into a new image it creates beside the file, which the guest then
  uses; the original images are untouched; a restore the hypervisor refuses
  (its NIC's switch missing) removes the new images again; an existing file
  as the new image is refused before QEMU starts;
- reading a big empty disk keeps the stream moving (a block of zeroes
  stored at least every 500 ms), so a client's silence timeout is not hit;
- a --no-disks snapshot names each disk's identity (DISK_ID): restored into
  a fresh QEMU onto copies of the images, the guest goes on; onto a copy in
  which a sampled block changed (as if the guest wrote on), the restore is
  refused no-device, naming the disk and the block; one changed in a block
  no sample has is not noticed (the check is cheap, not a full compare)."""

import gzip
import hashlib
import re
import struct
import subprocess

import pytest

from carapace.snapshot_format import VERSION as SNAP_VERSION  # what Carapace writes
from harness.paths import LAUNCHER, ROOT, SNAP
from harness.report import Report, check_report
from harness.runs import EXIT_OK, vm_spec
from harness.snapshots import SECTION_HEADER, crc32c, inspect, sections

pytestmark = pytest.mark.quick

SECTOR = 512
BLOCK = 128 * SECTOR                      # a DISK run covers one block, or a disk's tail
SECTORS_A = 16384                         # 8 MiB
SECTORS_B = 16384 + 40                    # its last block: 40 sectors
HOST_A_SECTOR = 5000                      # the host's data in disk a: block 39
HOST_A = b"host data of disk a, never the guest's " * 13
HOST_B = bytes([0xA5]) * 40 * SECTOR      # disk b's partial last block, all of it
SEC_DISK, RUN_HEADER = 7, 16
DISK_ID_SIZE = 272
# the blocks that are not all zero (a block of zeroes may be stored too: one
# every 500 ms of reading, see the last test)
SAVED_RUNS = [(0, 0, 128), (0, 4992, 128), (1, 0, 128), (1, 16384, 40)]


def image(tmp_path, name, sectors, at=None, data=b""):
    path = tmp_path / f"{name}.raw"
    with open(path, "wb") as f:
        f.truncate(sectors * SECTOR)
        if at is not None:
            f.seek(at * SECTOR)
            f.write(data)
    return path


def spec(name, bootargs, disks, net="lan"):
    s = vm_spec(name, "snap_vio", 1, bootargs)
    extra = "".join(f",disk={d}" for d in disks) + f",net={net}"
    return s.replace(",bootargs=", f"{extra},bootargs=")


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def disk_sections(stream):
    """(offset, slot, sector, sectors, data) of each DISK section of @stream,
    read with this file's own reading of the format."""
    out, off = [], 32
    while off + SECTION_HEADER <= len(stream):
        stype, slot, length = struct.unpack_from("<IIQ", stream, off)
        if stype == SEC_DISK:
            sector, sectors, _ = struct.unpack_from("<QII", stream, off + SECTION_HEADER)
            body = off + SECTION_HEADER + RUN_HEADER
            out.append((off, slot, sector, sectors, stream[body:body + sectors * SECTOR]))
        off += SECTION_HEADER + length
    return out


def blocks(path):
    """{sector: bytes} of every block of image @path that is not all zero."""
    data = path.read_bytes()
    return {i // SECTOR: data[i:i + BLOCK] for i in range(0, len(data), BLOCK)
            if any(data[i:i + BLOCK])}


def before_marker(lines):
    return lines[:next(i for i, l in enumerate(lines) if l.startswith("SNAPSHOT-READY"))]


def check_restored(before, after, where):
    report = Report(before + after)
    check_report(report, where)
    for want in ("restored: sectors 0..3 hold what was written before",
                 "restored: the write made available before the snapshot completed",
                 "restored: sector 8 holds it", "restored: disk 1 goes on"):
        assert any(l.startswith("PASS: snap_vio: " + want) for l in report.lines), \
            (want, report.lines)


def test_disks_content_restored_onto_spare_disks(snap_host, tmp_path):
    a = image(tmp_path, "a", SECTORS_A, HOST_A_SECTOR, HOST_A)
    b = image(tmp_path, "b", SECTORS_B, SECTORS_A, HOST_B)
    spares = [f"{tmp_path}/s0.raw:size={SECTORS_A * SECTOR}",
              f"{tmp_path}/s1.raw:size={SECTORS_B * SECTOR}"]
    h = snap_host([spec("orig", "max_wait_ms=120000", (a, b)),
                   vm_spec("other", "demo", 1, "count=100000 delay_us=20000")],
                  extra=["--persist", "--switch", "name=lan", "--expect", "orig=destroyed",
                         "--expect", "other=destroyed", "--expect", "copy=shutdown",
                         *(x for s in spares for x in ("--spare-disk", s))], timeout=300)
    h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    # the spare disks come after orig's two: host PCI devices 3 and 4
    for n, s in ((3, "s0"), (4, "s1")):
        h.wait_for(lambda l: l.startswith(f"carapace-run: spare disk {tmp_path}/{s}.raw") and
                   f"at host PCI device {n} " in l, 5)
    # paused first: a paused VM stays paused through a snapshot, so its
    # images stay as the snapshot read them (a resume would serve the write
    # it parked, sector 8)
    h.ctl("pause", "orig")
    path = tmp_path / "plain.snap"
    rep, _, _ = h.ctl("snapshot", "orig", str(path))
    info = inspect(path)
    assert rep["ok"] and rep["disks"] is True and rep["disk_runs"] == len(info["disks"]["runs"])
    assert info["header"]["version"] == SNAP_VERSION and info["header"]["disks"] is True, info["header"]
    assert [(r["slot"], r["sector"], r["sectors"]) for r in info["disks"]["runs"]
            if not r["zero"]] == SAVED_RUNS, info["disks"]
    # what the stream holds of disk a is a's non-zero blocks, byte for byte;
    # disk b's tail is the host's
    stream = gzip.decompress(path.read_bytes())
    runs = disk_sections(stream)
    assert {sector: data for _, slot, sector, _, data in runs if slot == 0 and any(data)} == \
        blocks(a)
    assert [data for _, slot, sector, _, data in runs if slot == 1 and sector == 16384] == \
        [HOST_B]
    # --no-disks: no flag, no DISK section
    rep, _, _ = h.ctl("snapshot", "orig", str(tmp_path / "nodisks.snap"), "--no-disks")
    assert rep["disks"] is False and rep["disk_runs"] == 0, rep
    nodisks = inspect(tmp_path / "nodisks.snap")
    assert nodisks["header"]["disks"] is False and nodisks["header"]["flags"] == 0
    assert not [s for s in nodisks["sections"] if s["type"] == "DISK"]
    # ... but a DISK_ID of each disk (272 bytes) instead
    assert [s["instance"] for s in nodisks["sections"] if s["type"] == "DISK_ID"] == [0, 1]
    assert nodisks["bytes"] == info["bytes"] - sum(SECTION_HEADER + RUN_HEADER + n * SECTOR
                                                   for _, _, _, n, _ in runs) + \
        2 * (SECTION_HEADER + DISK_ID_SIZE)
    before = before_marker(h.guest("orig"))
    h.ctl("destroy", "orig")
    originals = {p: digest(p) for p in (a, b)}

    # a DISK run the hypervisor must refuse: sector 5 (not a block's start),
    # its CRC right; both readers name the same byte, nothing is written
    off, _, _, _, _ = runs[0]
    bad_stream = bytearray(stream)
    struct.pack_into("<Q", bad_stream, off + SECTION_HEADER, 5)
    length = struct.unpack_from("<Q", bad_stream, off + 8)[0]
    struct.pack_into("<I", bad_stream, off + 16,
                     crc32c(bytes(bad_stream[off + SECTION_HEADER:off + SECTION_HEADER + length])))
    bad = tmp_path / "bad.snap"
    bad.write_bytes(bytes(bad_stream))
    byte = off + SECTION_HEADER
    r = subprocess.run([str(SNAP), "verify", str(bad)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and f"DISK 0 run 0, byte {byte}: sector 5 is not the start of " \
                                  "a block" in r.stderr, r.stderr
    rep, rc, _ = h.ctl("restore", str(bad), "--name", "bad", "--no-verify", "--disk", "3",
                       "--disk", "4", check=False)
    assert rc == 1 and rep["code"] == "bad-snapshot", rep
    assert re.search(rf"section DISK 0 at offset {off}, byte {byte}: sector is not the start "
                     "of a block", rep["error"]), rep
    assert not any((tmp_path / "s0.raw").read_bytes()), "a refused restore wrote a spare disk"
    # a VIRTIO section after a DISK one (a stream without memory, so nothing
    # but that order rule stands in its way): refused by both
    secs = sections(stream)
    keep = lambda t, inst=None: [x for x in secs if x[1] == t and inst in (None, x[2])]
    order = (keep(1) + keep(2) + keep(3) + keep(6, 0) + keep(SEC_DISK, 0) + keep(6, 1) +
             keep(6, 2) + keep(SEC_DISK, 1))
    body = b"".join(stream[o:o + SECTION_HEADER + n] for o, _, _, n in order)
    end = struct.pack("<QQ", len(order), 0)
    odd = stream[:32] + body + struct.pack("<IIQII", 5, 0, 16, crc32c(end), 0) + end
    vio1 = 32 + sum(SECTION_HEADER + n for _, t, i, n in order[:order.index(keep(6, 1)[0])])
    (tmp_path / "odd.snap").write_bytes(odd)
    r = subprocess.run([str(SNAP), "verify", str(tmp_path / "odd.snap")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and f"VIRTIO 1, byte {vio1}: VIRTIO section after a DISK " \
                                  "section" in r.stderr, r.stderr
    rep, rc, _ = h.ctl("restore", str(tmp_path / "odd.snap"), "--name", "odd", "--no-verify",
                       "--disk", "3", "--disk", "4", check=False)
    if rc == 0:
        h.ctl("destroy", "odd")
    assert rc == 1 and rep["code"] == "bad-snapshot", rep
    assert f"section VIRTIO 1 at offset {vio1}: out of order" in rep["error"], rep

    # without a --disk for each disk: refused before anything is sent
    rep, rc, err = h.ctl("restore", str(path), "--name", "copy", check=False)
    assert rc == 3 and "holds the content of its 2 disk(s)" in err, (rc, err)
    listing, _, _ = h.ctl("list")
    assert sorted(v["name"] for v in listing["vms"]) == ["other"], listing

    rep, _, _ = h.ctl("restore", str(path), "--name", "copy", "--disk", "3", "--disk", "4")
    assert rep["vm"] == "copy" and rep["disk_runs"] == len(runs), rep
    h.wait_for(lambda l: l.startswith("[copy] DONE:"), 120)
    check_restored(before, h.guest("copy"), "vm orig, then copy (restored onto spare disks)")
    h.wait_for(lambda l: l == "carapace: vm copy: shut down", 30)
    h.ctl("destroy", "other")
    assert h.finish() == EXIT_OK
    # the originals were not written by any of it; the spares hold the saved blocks
    assert {p: digest(p) for p in (a, b)} == originals
    s0, s1 = (tmp_path / "s0.raw").read_bytes(), (tmp_path / "s1.raw").read_bytes()
    assert s0[:4 * SECTOR] == a.read_bytes()[:4 * SECTOR]
    assert s0[HOST_A_SECTOR * SECTOR:HOST_A_SECTOR * SECTOR + len(HOST_A)] == HOST_A
    assert s1[SECTORS_A * SECTOR:] == HOST_B


def test_restore_into_a_fresh_qemu_makes_new_images(snap_host, tmp_path):
    a = image(tmp_path, "a", SECTORS_A, HOST_A_SECTOR, HOST_A)
    b = image(tmp_path, "b", SECTORS_B, SECTORS_A, HOST_B)
    h = snap_host([spec("orig", "max_wait_ms=120000", (a, b))],
                  extra=["--persist", "--switch", "name=lan", "--expect", "orig=destroyed"],
                  timeout=300)
    h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    path = tmp_path / "live.snap"
    rep, _, _ = h.ctl("snapshot", "orig", str(path), "--live")
    assert rep["live"] and rep["disks"] and rep["disk_runs"] >= len(SAVED_RUNS), rep
    before = before_marker(h.guest("orig"))
    h.ctl("destroy", "orig")
    assert h.finish() == EXIT_OK
    originals = {p: digest(p) for p in (a, b)}
    new = [tmp_path / "live.snap.disk0.raw", tmp_path / "live.snap.disk1.raw"]

    # the original image as the new one: refused before QEMU starts
    r = subprocess.run([str(LAUNCHER), "--batch", "--timeout", "30", "--restore",
                        f"{path},disk={a}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 3 and f"{a} exists; the launcher creates this image itself" \
        in r.stderr, r.stderr
    # refused by the hypervisor (no switch "lan" for its NIC): the new images go
    r = subprocess.run([str(LAUNCHER), "--batch", "--timeout", "60", "--ctl-socket",
                        str(tmp_path / "c2.sock"), "--restore", str(path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 3 and "no-device" in r.stderr, r.stdout[-2000:] + r.stderr
    for p in new:
        assert f"removed the new image {p}" in r.stderr, r.stderr
        assert not p.exists()

    h2 = snap_host([], extra=["--switch", "name=lan", "--restore", str(path), "--expect",
                              "orig=shutdown"], timeout=300)
    h2.wait_for(lambda l: l.startswith("carapace-run: restored vm orig") and
                f"{rep['disk_runs']} disk runs written" in l, 120)
    h2.wait_for(lambda l: l.startswith("[orig] DONE:"), 120)
    check_restored(before, h2.guest("orig"), "vm orig, restored in a fresh QEMU")
    assert h2.finish() == EXIT_OK
    assert {p: digest(p) for p in (a, b)} == originals
    n0, n1 = (p.read_bytes() for p in new)
    assert (len(n0), len(n1)) == (SECTORS_A * SECTOR, SECTORS_B * SECTOR)
    assert [p.stat().st_mode & 0o777 for p in new] == [0o600, 0o600]
    assert n0[:4 * SECTOR] == a.read_bytes()[:4 * SECTOR]              # the guest's, saved
    assert n0[HOST_A_SECTOR * SECTOR:HOST_A_SECTOR * SECTOR + len(HOST_A)] == HOST_A
    assert n1[SECTORS_A * SECTOR:] == HOST_B


def test_a_big_empty_disk_keeps_the_stream_moving(snap_host, tmp_path):
    """2 GiB of zeroes take seconds to read: the stream stores a block of
    zeroes every 500 ms meanwhile, so a client that waits at most 4 s for a
    byte (--timeout 4) gets the whole snapshot."""
    big = image(tmp_path, "big", 2 << 21)
    h = snap_host([spec("orig", "max_wait_ms=300000", (big,))],
                  extra=["--persist", "--switch", "name=lan", "--expect", "orig=destroyed"],
                  timeout=300)
    h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    path = tmp_path / "big.snap"
    rep, rc, err = h.ctl("--timeout", "4", "snapshot", "orig", str(path), check=False)
    assert rc == 0, (rc, err)
    disk = inspect(path)["disks"]["disks"][0]
    # seconds of reading: blocks of zeroes stored along the way
    assert disk["zero_runs_stored"] >= 2 and rep["pause_us"] > 1_000_000, (disk, rep)
    h.ctl("destroy", "orig")
    assert h.finish() == EXIT_OK


def test_no_disks_snapshot_restores_only_onto_the_saved_images(snap_host, tmp_path):
    a = image(tmp_path, "a", SECTORS_A, HOST_A_SECTOR, HOST_A)
    b = image(tmp_path, "b", SECTORS_B, SECTORS_A, HOST_B)
    spares = [f"{tmp_path}/s0.raw:size={SECTORS_A * SECTOR}",
              f"{tmp_path}/s1.raw:size={SECTORS_B * SECTOR}"]
    h = snap_host([spec("orig", "max_wait_ms=120000", (a, b))],
                  extra=["--persist", "--switch", "name=lan", "--expect", "orig=destroyed",
                         *(x for s in spares for x in ("--spare-disk", s))],
                  timeout=300)
    h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    # paused through the snapshot and the destroy: the images stay as the
    # snapshot's identity read them (the user's part without the content)
    h.ctl("pause", "orig")
    path = tmp_path / "nodisks.snap"
    rep, _, _ = h.ctl("snapshot", "orig", str(path), "--no-disks")
    assert rep["disks"] is False, rep
    info = inspect(path)
    assert info["header"]["version"] == SNAP_VERSION
    ids = [d["identity"] for d in info["disks"]["disks"]]
    assert [i["sectors"] for i in ids] == [SECTORS_A, SECTORS_B]
    assert [x["block"] for x in ids[0]["samples"]][:6] == [0, 8, 16, 25, 33, 42]
    assert [x["block"] for x in ids[1]["samples"]][-1] == 128      # b's partial last block
    # the samples' CRCs are the images' blocks as they are (this file's own,
    # slow, CRC of the image bytes: a few of them)
    for img, ident, nth in ((a, ids[0], 0), (a, ids[0], 5), (b, ids[1], 15)):
        x = ident["samples"][nth]
        data = img.read_bytes()[x["block"] * BLOCK:(x["block"] + 1) * BLOCK]
        assert x["crc32c"] == crc32c(data), (img, x)
    before = before_marker(h.guest("orig"))
    h.ctl("destroy", "orig")
    # the hypervisor's own check (no launcher in the way): onto the zeroed
    # spare disks (host PCI devices 3 and 4), refused no-device
    rep, rc, _ = h.ctl("restore", str(path), "--disk", "3", "--disk", "4", check=False)
    assert rc != 0 and rep["code"] == "no-device", rep
    assert re.search(r"section DISK_ID 0 at offset \d+, byte \d+: disk 0: the host disk is "
                     r"not the saved disk \(block 0 differs\): give the image as it was at "
                     r"the snapshot", rep["error"]), rep
    assert h.finish() == EXIT_OK

    def copy(src, name, changed_sector=None):
        data = bytearray(src.read_bytes())
        if changed_sector is not None:
            data[changed_sector * SECTOR] ^= 0xFF
        dst = tmp_path / f"{name}.raw"
        dst.write_bytes(bytes(data))
        return dst

    # a copy changed in block 42 (a sampled one): refused by the launcher,
    # naming disk 0 and the block, before QEMU starts
    bad_a, copy_b = copy(a, "bad-a", 42 * 128 + 7), copy(b, "copy-b")
    r = subprocess.run([str(LAUNCHER), "--batch", "--timeout", "60", "--switch", "name=lan",
                        "--ctl-socket", str(tmp_path / "c2.sock"),
                        "--restore", f"{path},disk={bad_a},disk={copy_b}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode != 0 and "OpenSBI" not in r.stdout, r.stdout[-2000:] + r.stderr
    assert f"disk={bad_a} is not the saved disk 0 (block 42, sectors 5376-5503, differs " \
           "from the snapshot's)" in r.stderr, r.stdout[-2000:] + r.stderr
    # the copies, one changed in block 39 (no sample has it: not noticed):
    # the guest goes on from the snapshot
    copy_a = copy(a, "copy-a", 39 * 128 + 1)
    h2 = snap_host([], extra=["--switch", "name=lan", "--restore",
                              f"{path},disk={copy_a},disk={copy_b}", "--expect",
                              "orig=shutdown"], timeout=300)
    h2.wait_for(lambda l: l.startswith("carapace-run: restored vm orig"), 120)
    h2.wait_for(lambda l: l.startswith("[orig] DONE:"), 120)
    check_restored(before, h2.guest("orig"), "vm orig, restored onto copies of its images")
    assert h2.finish() == EXIT_OK
