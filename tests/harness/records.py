# SPDX-License-Identifier: MIT
"""The records test (issue 25; docs/testing.md, "The records test"): a Linux
guest's `records write` (tests/linux/records.c, booted by tests/linux/init
with carapace.records=) appends numbered, checksummed records to /records on
its ext4 disk and acks each on its console once fsync() returned. Here, on
the host: the record format written anew (build(), not the guest's code, so
one checks the other), the checker with the guest's rules (scan()), the acks
a console showed (acks(), wait_acks(), check_acks_go_on()), a writer's VM
spec (spec()), and the verdict on a disk image once its VM is gone
(check_image(): fsck-clean, the records one unbroken sequence from 0, at
least up to the last ack)."""

import re
import shutil
import struct
import time
import zlib
from dataclasses import dataclass

import pytest

from harness.disks import check_fsck, needs_recovery, read_file, replay_journal
from harness.linux import INITRAMFS

MAGIC = 0x44434552              # "RECD" as it lies in the file
HEADER, TRAILER = 16, 4         # magic, size, seq; CRC32
SIZE = 4096                     # the writer's default record size
RATE = 20                       # and records a second
FILE = "/records"               # where the guest's init has it (/mnt/records)
DISK_MIB = 64
# the suffix: a line torn by a snapshot or a move never parses as a shorter number
ACK_RE = re.compile(r"records: acked (\d+) \(fsync ok\)")
GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1


def payload(seq, n):
    """@n bytes: the splitmix64 stream seeded with @seq, little-endian words."""
    out, state = bytearray(), seq
    while len(out) < n:
        state = (state + GOLDEN) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        out += struct.pack("<Q", z ^ (z >> 31))
    return bytes(out[:n])


def build(seq, size=SIZE):
    """Record @seq of @size bytes, as `records write` makes it."""
    body = struct.pack("<IIQ", MAGIC, size, seq) + payload(seq, size - HEADER - TRAILER)
    return body + struct.pack("<I", zlib.crc32(body))


@dataclass
class Scan:
    """What scan() found: records 0..count-1 good (of @size bytes), then
    @torn bytes of a partial record, or a bad record at offset @bad_at."""
    size: int
    count: int
    torn: int = 0
    bad_at: int | None = None
    why: str = ""

    @property
    def last(self):
        return self.count - 1

    def text(self):
        """As `records check` says it."""
        if self.bad_at is not None:
            return f"records: check FAIL at offset {self.bad_at}: {self.why}"
        return f"records: check ok last={self.last}" + \
            (f"; torn tail {self.torn} bytes" if self.torn else "")


def fault(rec, size, seq):
    """What is wrong with @rec as record @seq of @size bytes (the guest's
    words), or None."""
    magic, rsize, got = struct.unpack_from("<IIQ", rec)
    (crc,) = struct.unpack_from("<I", rec, size - TRAILER)
    if magic != MAGIC:
        return f"bad magic {magic:08x} (record {seq})"
    if rsize != size:
        return f"record size {rsize}, the file's records have {size}"
    computed = zlib.crc32(rec[:size - TRAILER])
    if computed != crc:
        return f"CRC wrong (record {seq}: stored {crc:08x}, computed {computed:08x})"
    if got > seq:
        return f"gap: record {got} where {seq} belongs ({got - seq} missing)"
    if got < seq:
        return f"record {got} again where {seq} belongs"
    want = payload(seq, size - HEADER - TRAILER)
    if rec[HEADER:size - TRAILER] != want:
        i = next(i for i, (a, b) in enumerate(zip(rec[HEADER:], want)) if a != b)
        return f"payload byte {HEADER + i} wrong (record {seq})"
    return None


def scan(data, size_hint=SIZE):
    """The records in @data (a whole /records), by `records check`'s rules:
    the record size is the first record's; records 0, 1, 2, ... each whole
    and right; a partial record may follow the last, nothing else."""
    if not data:
        return Scan(0, 0)
    size = size_hint
    if len(data) >= 8 and struct.unpack_from("<I", data)[0] == MAGIC:
        size = struct.unpack_from("<I", data, 4)[0]
    if not 512 <= size <= 65536 or size % 512:
        return Scan(size, 0, bad_at=0, why=f"no record size in the first record ({size})")
    count = 0
    for off in range(0, len(data) - size + 1, size):
        why = fault(data[off:off + size], size, count)
        if why:
            return Scan(size, count, bad_at=off, why=why)
        count += 1
    return Scan(size, count, torn=len(data) - count * size)


def acks(lines):
    """The record numbers a writer acked in the console @lines, in order."""
    return [int(m.group(1)) for line in lines if (m := ACK_RE.search(line))]


def wait_acks(h, vm, n, timeout):
    """Until VM @vm on host @h (a harness.hosts.Host) has acked record @n or
    a later one; its acks there."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = acks(h.guest(vm))
        if got and got[-1] >= n:
            return got
        if h.proc.poll() is not None and not h.reader.is_alive():
            break
        time.sleep(0.1)
    pytest.fail(f"{vm} did not ack record {n} in {timeout} s\n" + "\n".join(h.snapshot()[-60:]))


def check_acks_go_on(stays, log=""):
    """A writer's acks in each of its stays on hosts, in order (@stays: the
    console lines of each): each stay's one run of numbers, the first from
    0, each next one going on from where the previous ended (no ack again;
    one lost at most: the line in flight at a move, torn between the two
    consoles). Returns each stay's acks."""
    out, last = [], -1
    for i, lines in enumerate(stays):
        got = acks(lines)
        assert got, f"stay {i}: no acks\n{log[-3000:]}"
        assert got == list(range(got[0], got[-1] + 1)), f"stay {i}: {got}"
        assert last < got[0] <= last + (1 if i == 0 else 2), \
            f"stay {i} acks from {got[0]}, the one before to {last}\n{log[-3000:]}"
        out.append(got)
        last = got[-1]
    return out


def spec(name, kernel, disk, mem="256M", vcpus=2, **opts):
    """A --vm spec of a Linux guest running `records write` on @disk (or
    what @opts' mode= says: "check"); @opts: count=, rate=, bytes= (the
    writer's --count, --rate, --bytes)."""
    mode = opts.pop("mode", "write")
    args = "".join(f" carapace.records_{k}={v}" for k, v in opts.items())
    return (f"name={name},kernel={kernel},initrd={INITRAMFS},mem={mem},vcpus={vcpus},"
            f"disk={disk},bootargs=console=ttyS0 quiet carapace.records={mode}{args}")


def check_image(image, tmp_path, at_least, console="", unmounted=None):
    """The verdict on the disk image @image once its VM is gone: its ext4 is
    fsck-clean (after replaying its journal, as the next mount would, if the
    guest was stopped with it mounted: on a scratch copy, @image is left as
    it is) and /records holds records 0..K, each right, K >= @at_least (the
    last ack the test counts on). @unmounted: True, the guest must have
    unmounted it (nothing to replay); False, it must not have. Returns the
    Scan."""
    raw = tmp_path / f"{image.stem}.check.raw"
    shutil.copyfile(image, raw)
    recovering = needs_recovery(raw)
    if unmounted is not None:
        assert recovering != unmounted, \
            f"{image.name}: needs_recovery {recovering}, unmounted {unmounted}\n{console[-3000:]}"
    if recovering:
        replay_journal(raw)
    check_fsck(raw, tmp_path, console)
    s = scan(read_file(raw, FILE))
    raw.unlink()
    assert s.bad_at is None, f"{image.name}: {s.text()}\n{console[-3000:]}"
    assert s.last >= at_least, \
        f"{image.name}: records 0..{s.last} only; record {at_least} was acked\n{console[-3000:]}"
    return s
