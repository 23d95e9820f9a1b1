# SPDX-License-Identifier: MIT
"""The records test (issue 25; docs/testing.md, "The records test"): our
guest kernel (ext4 and virtio-blk built in) boots the tests/linux initramfs
with carapace.records=, mounts its ext4 disk and runs tests/linux/records.c,
which appends numbered, checksummed records to /records, fsync()s each and
only then acks it on the console. Once the VM is gone the host reads the
image (harness.records.check_image()): fsck-clean, the records one unbroken
sequence from 0, each right, at least up to the last ack.

- the writer runs to its count and the guest unmounts and powers off: the
  image is clean without a journal to replay and holds exactly the acked
  records; the host's checker reports a flipped byte at its record and a
  record dropped from the middle as a gap, on the file and in the image;
- the guest's own checker (`records check`) on files the host built: ok
  with a torn tail, and each fault said exactly as the host's checker says it;
- a VM writing records moves to a fresh QEMU by snapshot
  (harness.moves.move_to_fresh_host(): pause, snapshot with its disk's
  content, restore into a new image): the acks go on from where they were,
  the restored writer goes on from the record the restored disk ends at,
  and after the VM is destroyed mid-write both images (the original, the
  moved copy) are fsck-clean once their journals are replayed and hold
  every acked record;
- the same writer moved A -> B -> A -> B by snapshot, into B fresh, then
  into the running hosts onto the host disk it had left there (zeroed, then
  filled by the restore): its acks go on across the four stays, and the
  last image holds them all;
- the writer moved by live migration (harness.moves.migrate_to_fresh_host(),
  migrate_to_host()), running on through the pre-copy (it acks records on
  the source while the migration runs): to a fresh `carapace-run
  --incoming` host in copy mode (its disk's blocks in the stream, into a
  new image the launcher makes) and in shared mode (--incoming-disk the
  image the source uses); and A -> B -> A -> B, shared into a fresh B,
  shared back onto the image A had, then copied onto a spare disk of B.
  The acks go on across the stays; after the VM is destroyed mid-write the
  image it last ran on is fsck-clean once its journal is replayed and holds
  every ack; the image a copy left behind (only read by it) holds every
  ack made before the switchover, and the writer went on from the record
  it ends at.
The disks' content travels in the snapshot (format 5, "DISK") or in the
migration stream (protocol 6, copy mode; docs/migration.md)."""

import pytest

from harness.disks import block_offset, make_ext4, read_file
from harness.hosts import SnapHost, started_hosts, wait_new_line
from harness.linux import mig_host
from harness.moves import (migrate_to_fresh_host, migrate_to_host, move_to_fresh_host, move_to_host,
                           spare_disk_pci, vm_disk_pci, vm_lines)
from harness.records import (DISK_MIB, FILE, SIZE, acks, build, check_acks_go_on, check_image,
                             scan, spec, wait_acks)
from harness.runs import EXIT_OK, live_console, run_batch

pytestmark = pytest.mark.linux

RUN_TIMEOUT = 400       # each launcher's --timeout
BOOT_TIMEOUT = 300      # from the launcher's start to the first acks
COUNT = 100             # records of the run to its end: 5 s at 20 a second


def console_of(out, vm):
    return [line for name, line in live_console(out, [vm])[0] if name == vm]


# --- the writer to its end, and the host's checker failing -------------------------------

def test_records_written_to_the_end_and_checked(guest_kernel, initramfs, tmp_path):
    disk = make_ext4(tmp_path / "alpha.raw", DISK_MIB)
    r = run_batch([spec("alpha", guest_kernel, disk, count=COUNT)], timeout=RUN_TIMEOUT)
    out = r.stdout + r.stderr
    assert r.returncode == EXIT_OK, out
    lines = console_of(r.stdout, "alpha")
    for want in (f"records: wrote records 0..{COUNT - 1}", "init: records exit 0",
                 "init: records: unmounted"):
        assert want in lines, f"no '{want}'\n{out}"
    got = acks(lines)
    assert got == list(range(COUNT)), got
    s = check_image(disk, tmp_path, COUNT - 1, out, unmounted=True)
    assert (s.last, s.torn, s.size) == (COUNT - 1, 0, SIZE), s

    # the host's checker can fail: a byte of record 37 flipped, record 50 left out
    data = read_file(disk, FILE)
    assert len(data) == COUNT * SIZE
    flipped = bytearray(data)
    flipped[37 * SIZE + 1000] ^= 0x10
    bad = scan(bytes(flipped))
    assert (bad.bad_at, bad.count) == (37 * SIZE, 37), bad
    assert bad.why.startswith("CRC wrong (record 37: stored "), bad
    gap = scan(data[:50 * SIZE] + data[51 * SIZE:])
    assert (gap.bad_at, gap.why) == (50 * SIZE, "gap: record 51 where 50 belongs (1 missing)"), gap
    # ... and so does the verdict on an image: the same byte flipped in a
    # copy's data block (the file system's metadata untouched: fsck-clean)
    copy = tmp_path / "flipped.raw"
    copy.write_bytes(disk.read_bytes())
    off, block = block_offset(copy, FILE, 37 * SIZE // 4096)
    assert block == 4096
    with open(copy, "r+b") as f:
        f.seek(off + 1000)
        byte = f.read(1)[0]
        f.seek(off + 1000)
        f.write(bytes([byte ^ 0x10]))
    with pytest.raises(AssertionError, match=r"at offset 151552: CRC wrong \(record 37: "):
        check_image(copy, tmp_path, COUNT - 1)
    # ... and an image short of the last ack
    with pytest.raises(AssertionError, match=rf"records 0..{COUNT - 1} only; record {COUNT} was"):
        check_image(disk, tmp_path, COUNT)


# --- the guest's checker ------------------------------------------------------------------

def test_records_guest_checker_agrees_with_the_host(guest_kernel, initramfs, tmp_path):
    """`records check` in three guests, on files the host built: 30 records
    and a torn tail (ok), a byte of record 10 flipped, record 20 left out
    (each FAIL at its offset). Each guest's verdict is the host checker's,
    word for word."""
    good = b"".join(build(n) for n in range(30))
    flipped = bytearray(good)
    flipped[10 * SIZE + 300] ^= 1
    files = {"torn": good + build(30)[:1000], "flipped": bytes(flipped),
             "gap": good[:20 * SIZE] + good[21 * SIZE:]}
    vms, want = [], {}
    for name, data in files.items():
        d = tmp_path / name
        d.mkdir()
        (d / FILE.lstrip("/")).write_bytes(data)
        disk = make_ext4(tmp_path / f"{name}.raw", 16, files=d)
        vms.append(spec(name, guest_kernel, disk, mem="128M", vcpus=1, mode="check"))
        want[name] = scan(data).text()
    assert want["torn"] == "records: check ok last=29; torn tail 1000 bytes"
    assert want["flipped"].startswith(f"records: check FAIL at offset {10 * SIZE}: CRC wrong")
    assert want["gap"] == (f"records: check FAIL at offset {20 * SIZE}: gap: record 21 where "
                           "20 belongs (1 missing)")
    r = run_batch(vms, timeout=RUN_TIMEOUT)
    out = r.stdout + r.stderr
    assert r.returncode == EXIT_OK, out
    for name in files:
        lines = console_of(r.stdout, name)
        said = [l for l in lines if l.startswith("records: check ")]
        assert said == [want[name]], (name, said, want[name], out)
        assert f"init: records exit {0 if name == 'torn' else 1}" in lines, (name, out)


# --- moved by snapshot ---------------------------------------------------------------------

MOVE_AT = 20            # the writer's ack before the first move
BETWEEN = 40            # acks on a host before the next move (or the end): 2 s at 20 a second


@pytest.fixture
def hosts(tmp_path):
    """make(tag, vms, extra=...): a SnapHost in its own directory."""
    def start(tmp, tag, vms, extra=()):
        where = tmp / tag
        where.mkdir()
        return SnapHost(where, vms, extra, timeout=RUN_TIMEOUT)
    yield from started_hosts(start, tmp_path)


def test_records_survive_a_move_by_snapshot(guest_kernel, initramfs, hosts, tmp_path):
    """alpha writes records on A; at its ack MOVE_AT it is paused,
    snapshotted with its disk's content, destroyed, and restored into a
    fresh QEMU B, its disk into a new image. Its acks go on there from where they were (no repeat, at
    most one line torn by the move), the writer going on from the record the
    copy ends at; B destroys it mid-write. Both images are fsck-clean once
    their journals are replayed (alpha never unmounted either) and hold
    every record acked on them."""
    disk = make_ext4(tmp_path / "alpha.raw", DISK_MIB)
    a = hosts("a", [spec("alpha", guest_kernel, disk)], extra=["--expect", "alpha=destroyed"])
    wait_acks(a, "alpha", MOVE_AT, BOOT_TIMEOUT)
    moved = move_to_fresh_host(a, "alpha", [disk], hosts, "b",
                               extra=["--expect", "alpha=destroyed"])
    b = moved.host
    assert a.finish() == EXIT_OK, "\n".join(a.snapshot())
    before = acks(a.guest("alpha"))
    wait_acks(b, "alpha", before[-1] + BETWEEN, 120)
    b.ctl("destroy", "alpha")
    assert b.finish() == EXIT_OK, "\n".join(b.snapshot())
    log = "\n".join(a.snapshot() + b.snapshot())
    before, after = check_acks_go_on([a.guest("alpha"), moved.lines("alpha")], log)
    # the original image: as the pause left it, every ack made on A in it
    orig = check_image(disk, tmp_path, before[-1], log, unmounted=False)
    # the writer went on from the record the copy ended at (the one in
    # flight at the pause is in it or not, its ack line may be torn)
    assert orig.last <= after[0] <= orig.last + 2, (orig, after[:3])
    end = check_image(moved.disks[0], tmp_path, after[-1], log, unmounted=False)
    print(f"records: a acked 0..{before[-1]}, b {after[0]}..{after[-1]}; a's image ends at "
          f"{orig.last}, b's at {end.last}; stopped {moved.stopped_s:.1f} s (snapshot "
          f"pause {moved.snapshot_pause_us / 1e6:.2f} s)")


def test_records_survive_a_live_snapshot_restored_in_a_fresh_qemu(guest_kernel, initramfs,
                                                                   hosts, tmp_path):
    """alpha writes records on A; at its ack MOVE_AT a live snapshot of it
    is taken with its disk's content while it runs on (its instant: the
    pause at its start), then the original writes on and is destroyed; the
    file is restored into a fresh QEMU B, its disk into a new image. The
    restored writer acks on from the snapshot's instant: every record acked
    before that pause is on the restored disk (a write the live snapshot
    held until its block was saved never reaches the copy), the writer goes
    on from the record the copy ends at, and B's image at the end is
    fsck-clean and holds every ack made on B; A's image, which ran on, holds
    every ack made on A."""
    disk = make_ext4(tmp_path / "alpha.raw", DISK_MIB)
    a = hosts("a", [spec("alpha", guest_kernel, disk)], extra=["--persist"])
    wait_acks(a, "alpha", MOVE_AT, BOOT_TIMEOUT)
    snap = a.sock.parent / "alpha-live.snap"
    mark = len(a.snapshot())
    rep, _, _ = a.ctl("snapshot", "alpha", str(snap), "--live")
    assert rep["ok"] and rep["live"] and rep["disks"] and rep["disk_runs"] > 0, rep
    lines = a.snapshot()
    pause = next(i for i in range(mark, len(lines))
                 if lines[i].endswith("vm alpha: paused"))
    saved = acks([l for l in lines[:pause] if l.startswith("[alpha] ")])
    # the original runs on past the snapshot, then goes
    on_a = wait_acks(a, "alpha", saved[-1] + BETWEEN, 120)
    a.ctl("destroy", "alpha")
    a.wait_for(lambda l: l.startswith("carapace: vm alpha: destroyed"), 30)
    new = tmp_path / "restored" / "alpha.raw"
    new.parent.mkdir()
    b = hosts("b", [], extra=["--restore", f"{snap},disk={new}", "--expect", "alpha=destroyed"])
    b.wait_for(lambda l: l.startswith("carapace-run: restored vm alpha "), 120)
    wait_acks(b, "alpha", saved[-1] + BETWEEN, 120)
    b.ctl("destroy", "alpha")
    assert b.finish() == EXIT_OK, "\n".join(b.snapshot())
    log = "\n".join(a.snapshot() + b.snapshot())
    after = acks(b.guest("alpha"))
    # the restored writer goes on from the snapshot's instant: the record in
    # flight at the pause may be acked again, none before it
    assert saved[-1] <= after[0] <= saved[-1] + 2, (saved[-3:], after[:3])
    copy = check_image(new, tmp_path, after[-1], log, unmounted=False)
    orig = check_image(disk, tmp_path, on_a[-1], log, unmounted=False)
    print(f"records: a acked 0..{saved[-1]} before the snapshot's pause and on to "
          f"{on_a[-1]}; restored on b {after[0]}..{after[-1]}; b's image ends at "
          f"{copy.last}, a's at {orig.last}; snapshot pause {rep['pause_us']} us, "
          f"{rep['disk_runs']} disk blocks")


def test_records_survive_ping_pong_by_snapshot(guest_kernel, initramfs, hosts, tmp_path):
    """alpha moves A -> B (a fresh QEMU) -> A -> B (restored into the
    running host each time, onto the host disk it left there, zeroed and
    filled with the disk it comes with), a few seconds of records on each: its acks
    go on across the four stays without a repeat, and B's image at the end
    (alpha destroyed mid-write) is fsck-clean and holds every ack."""
    disk_a = make_ext4(tmp_path / "alpha.raw", DISK_MIB)
    a = hosts("a", [spec("alpha", guest_kernel, disk_a)], extra=["--persist"])
    wait_acks(a, "alpha", MOVE_AT, BOOT_TIMEOUT)
    hop1 = move_to_fresh_host(a, "alpha", [disk_a], hosts, "b")
    b, disk_b = hop1.host, hop1.disks[0]
    wait_acks(b, "alpha", acks(a.guest("alpha"))[-1] + BETWEEN, 120)
    hop2 = move_to_host(b, "alpha", [disk_b], a, [disk_a])
    wait_acks(a, "alpha", acks(b.guest("alpha"))[-1] + BETWEEN, 120)
    hop3 = move_to_host(a, "alpha", [disk_a], b, [disk_b])
    last = acks(hop2.lines("alpha"))[-1]
    wait_acks(b, "alpha", last + BETWEEN, 120)
    b.ctl("destroy", "alpha")
    b.wait_for(lambda l: l.startswith("carapace: vm alpha: destroyed"), 30)
    log = "\n".join(a.snapshot() + b.snapshot())
    stays = check_acks_go_on([vm_lines(a, "alpha", until=hop2.mark),
                              hop1.lines("alpha", until=hop3.mark),
                              hop2.lines("alpha"), hop3.lines("alpha")], log)
    assert stays[-1][-1] >= last + BETWEEN, stays
    s = check_image(disk_b, tmp_path, stays[-1][-1], log, unmounted=False)
    print("records: " + ", ".join(f"{h} {st[0]}..{st[-1]}" for h, st in zip("abab", stays)) +
          f"; b's image ends at {s.last}; stopped " +
          ", ".join(f"{m.stopped_s:.1f} s" for m in (hop1, hop2, hop3)))


# --- moved by live migration ---------------------------------------------------------------

LIVE_RATE = 0           # no pause between records: the disk is written all through a migration
# A copy's pre-copy rounds (carapace-ctl migrate --max-rounds). Round 1
# sends every block written so far and takes a second or so: the writer
# writes dozens of records meanwhile. Those go in round 2 (TWO_ROUNDS: found
# by the dirty-block tracking while the VM runs) or, with ONE_ROUND, in the
# stop-and-copy. Left to converge, the pre-copy ends on a short round whose
# few writes (often journal blocks the guest writes again) may test nothing.
TWO_ROUNDS = ["--max-rounds", "2"]
ONE_ROUND = ["--max-rounds", "1"]


@pytest.fixture
def mig_hosts(tmp_path, tls_creds):
    """make(tag, vms, incoming=PORT, extra=...): a Linux migration host
    (harness.linux.mig_host()) in its own directory, TLS between them."""
    yield from started_hosts(mig_host, tmp_path, timeout=RUN_TIMEOUT, creds=tls_creds.main)


def migrate_writer(src, vm, move):
    """Run @move() (a migration of @vm away from @src) and check the writer
    ran on through its pre-copy: it acked records on @src while the
    migration went on (a VM paused for the whole move would ack none). A
    copy sent blocks in every round: after round 1, the writer's writes
    during the round before, found by the dirty-block tracking. The
    stop-and-copy sends what it wrote after the last round's scan: 1-3
    blocks in most runs, none when the pause falls between two of its
    fsyncs (seen once in CI), so it is not asserted here; the images'
    records (every ack on the image the VM ran on last) show nothing was
    lost either way. What @move returned."""
    at_start = acks(src.guest(vm))[-1]
    moved = move()
    during = acks(src.guest(vm))[-1] - at_start
    print(f"records: {src.tag} -> {moved.host.tag}: {moved.summary()}; {during} acks on "
          f"{src.tag} during the migration")
    assert during >= 2, (f"{vm} acked {during} records on {src.tag} while it migrated: not "
                         f"live?\n{moved.summary()}")
    if moved.mode == "copy":
        assert all(moved.disk_rounds), moved.summary()
    return moved


@pytest.mark.parametrize("mode", ["copy", "shared"])
def test_records_survive_live_migration_to_a_fresh_host(guest_kernel, initramfs, mig_hosts,
                                                        tmp_path, mode):
    """alpha writes records on A, as fast as its fsyncs go; at its ack
    MOVE_AT it is live-migrated to a fresh `carapace-run --incoming` host B,
    acking records on A all through the pre-copy: copy, its disk's blocks in
    the stream into a new image B's launcher makes (--incoming-disk
    NEW:size=SIZE; two pre-copy rounds, the second carrying what the
    writer wrote during the first);
    shared, B opens A's image (--incoming-disk PATH). Its acks go on on B from where they were; B
    destroys it mid-write. The image it ran on last is fsck-clean once its
    journal is replayed and holds every ack. Copy: A's image, only read by
    the copy, holds every ack made on A, and the writer went on on B from
    the record it ends at."""
    disk = make_ext4(tmp_path / "alpha.raw", DISK_MIB)
    a = mig_hosts("a", [spec("alpha", guest_kernel, disk, rate=LIVE_RATE)])
    wait_acks(a, "alpha", MOVE_AT, BOOT_TIMEOUT)
    moved = migrate_writer(a, "alpha", lambda: migrate_to_fresh_host(
        a, "alpha", [disk], mig_hosts, "b", mode, extra=["--expect", "alpha=destroyed"],
        opts=TWO_ROUNDS if mode == "copy" else ()))
    b = moved.host
    assert a.vms() == {} and b.vms() == {"alpha": "running"}, a.console() + b.console()
    assert (moved.disks == [disk]) == (mode == "shared"), moved.disks
    wait_acks(b, "alpha", acks(a.guest("alpha"))[-1] + BETWEEN, 120)
    b.ctl("destroy", "alpha")
    assert b.finish() == EXIT_OK, b.console()
    log = a.console(300) + "\n" + b.console(300)
    before, after = check_acks_go_on([a.guest("alpha"), moved.lines("alpha")], log)
    end = check_image(moved.disks[0], tmp_path, after[-1], log, unmounted=False)
    said = f"records: a acked 0..{before[-1]}, b {after[0]}..{after[-1]}; b's image ends at " \
        f"{end.last}"
    if mode == "copy":
        orig = check_image(disk, tmp_path, before[-1], log, unmounted=False)
        # the switchover's instant: the one record in flight is in it or not,
        # its ack line may be torn
        assert orig.last <= after[0] <= orig.last + 2, (orig, after[:3])
        assert orig.last < end.last, (orig, end)
        said += f", a's at {orig.last}"
    print(said)


def test_records_survive_ping_pong_by_live_migration(guest_kernel, initramfs, mig_hosts,
                                                     tmp_path):
    """alpha moves by live migration A -> B -> A -> B, a few seconds of
    records on each: shared into a fresh B (--incoming-disk A's image, B
    given a --spare-disk too), shared back onto the host disk A had it on
    (carapace-ctl incoming --disk N), then copied onto B's spare disk
    (incoming --copy-disks --disk N; one pre-copy round: the stop-and-copy
    carries what the writer wrote during it). Its acks go on across the four stays;
    once B destroys it mid-write, the spare's image is fsck-clean after its
    journal's replay and holds every ack, and A's image (only read by the
    copy) every ack up to the last switchover, the writer on B going on
    from the record it ends at. (Modes cannot alternate on two hosts: a
    shared leg needs the destination to have the very image the VM runs
    on, and a running host has only the images its QEMU opened at start.)"""
    disk_a = make_ext4(tmp_path / "alpha.raw", DISK_MIB)
    spare = tmp_path / "b-spare.raw"
    a = mig_hosts("a", [spec("alpha", guest_kernel, disk_a, rate=LIVE_RATE)])
    pci_a = vm_disk_pci(a, "alpha")
    wait_acks(a, "alpha", MOVE_AT, BOOT_TIMEOUT)
    hop1 = migrate_writer(a, "alpha", lambda: migrate_to_fresh_host(
        a, "alpha", [disk_a], mig_hosts, "b", "shared",
        extra=["--spare-disk", f"{spare}:size={disk_a.stat().st_size}"]))
    b = hop1.host
    wait_acks(b, "alpha", acks(a.guest("alpha"))[-1] + BETWEEN, 120)
    hop2 = migrate_writer(b, "alpha", lambda: migrate_to_host(
        b, "alpha", a, pci_a, "shared", [disk_a]))
    wait_acks(a, "alpha", acks(b.guest("alpha"))[-1] + BETWEEN, 120)
    hop3 = migrate_writer(a, "alpha", lambda: migrate_to_host(
        a, "alpha", b, [spare_disk_pci(b, spare)], "copy", [spare], opts=ONE_ROUND))
    last = acks(hop2.lines("alpha"))[-1]
    wait_acks(b, "alpha", last + BETWEEN, 120)
    seen = len(b.snapshot())
    b.ctl("destroy", "alpha")
    wait_new_line(b, seen, "carapace: vm alpha: destroyed", 30)
    log = a.console(300) + "\n" + b.console(300)
    stays = check_acks_go_on([vm_lines(a, "alpha", until=hop2.mark),
                              hop1.lines("alpha", until=hop3.mark),
                              hop2.lines("alpha"), hop3.lines("alpha")], log)
    assert stays[-1][-1] >= last + BETWEEN, stays
    end = check_image(spare, tmp_path, stays[-1][-1], log, unmounted=False)
    orig = check_image(disk_a, tmp_path, stays[2][-1], log, unmounted=False)
    assert orig.last <= stays[3][0] <= orig.last + 2, (orig, stays[3][:3])
    print("records: " + ", ".join(f"{h} {st[0]}..{st[-1]}" for h, st in zip("abab", stays)) +
          f"; b's spare ends at {end.last}, a's image at {orig.last}")
