#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora of the fuzz targets beyond the snapshot restore
(docs/fuzzing.md, "More targets"), each into tests/fuzz/corpus/<target>/:

  insn       instruction bytes: every load/store form, compressed and not,
             the shadow-stack instructions, transformed (htinst) values
  mgmt       management requests, one client connection per seed, behind
             the 3-byte harness header of tests/fuzz/fuzz_mgmt.c
  mig_recv   migration streams from a source (valid ones: pre-copy rounds,
             ZERO, arriving paused, 1 and 2 vCPUs, disks copied; and
             refusals, in copy mode before and after disk blocks were
             written), behind the 8-byte harness header of
             tests/fuzz/fuzz_mig_recv.c
  fdt_guest  VM configurations for the guest DT builder (the 64-byte
             record tests/fuzz/fuzz_fdt_guest.c reads)
  fdt_host   host DTBs: QEMU virt's shape with Carapace's /chosen VM nodes,
             compiled with dtc from the sources below
  virtq      guest virtqueues: a queue configuration, a script of operations
             and a guest RAM image with the rings (tests/fuzz/fuzz_virtq.c):
             good chains and one seed per refusal of docs/virtio.md
  vnet       a guest virtio-net device: queue sizes, a script of operations
             (notifies, frames from the switch, detach, pause) and a guest RAM
             image with transmit and receive buffers (tests/fuzz/fuzz_vnet.c)
  vswitch    scripts of attach, detach and send on 3 switches and 24 ports
             (tests/fuzz/fuzz_vswitch.c): each forwarding rule and refusal
  hostio     the host disk driver: a device configuration and a script of
             driver and device operations (tests/fuzz/fuzz_hostio.c): good
             I/O, refusals, and one seed per way the device breaks its ring
  vblk       a guest virtio-blk device: disk and backend configuration, a
             script of operations and a guest RAM image with requests
             (tests/fuzz/fuzz_vblk.c): each request type, each refusal of
             docs/virtio.md "virtio-blk", a full backend, a reset mid-request

The migration streams (of the protocol version in
include/abi/migration_format.h) reuse the snapshot layouts of the
carapace package through tests/fuzz/make_seeds.py. Deterministic: running it again writes the
same bytes (dtc included).

    /usr/bin/python3 tests/fuzz/make_more_seeds.py [TARGET...]
"""

import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_seeds as ms  # noqa: E402  (the snapshot seeds' layouts and helpers)

snap = ms.snap
ROOT = ms.ROOT
CORPUS = ROOT / "tests" / "fuzz" / "corpus"

# ---- insn -------------------------------------------------------------------


def insn_seeds():
    def r32(v):
        return struct.pack("<I", v)

    def r16(v):
        return struct.pack("<H", v)

    out = {}
    # lb lh lw ld lbu lhu lwu x10, 8(x11); sb sh sw sd x12, 8(x11)
    for f3, n in enumerate(["lb", "lh", "lw", "ld", "lbu", "lhu", "lwu", "l7"]):
        out[f"load-{n}"] = r32(0x03 | 10 << 7 | f3 << 12 | 11 << 15 | 8 << 20)
    for f3, n in enumerate(["sb", "sh", "sw", "sd", "s4"]):
        out[f"store-{n}"] = r32(0x23 | 12 << 20 | 11 << 15 | f3 << 12 | 8 << 7)
    # c.lw c.ld c.sw c.sd (quadrant 0), c.lwsp c.ldsp c.swsp c.sdsp (quadrant 2)
    for f3, n in ((2, "c.lw"), (3, "c.ld"), (6, "c.sw"), (7, "c.sd"), (1, "c.fld")):
        out[f"cq0-{n}"] = r16(f3 << 13 | 3 << 7 | 1 << 5 | 2 << 2 | 0)
    for f3, n in ((2, "c.lwsp"), (3, "c.ldsp"), (6, "c.swsp"), (7, "c.sdsp")):
        out[f"cq2-{n}"] = r16(f3 << 13 | 9 << 7 | 5 << 2 | 2)
    out["cq2-c.lwsp-x0"] = r16(2 << 13 | 0 << 7 | 2)
    # shadow stack: c.sspush x1, c.sspopchk x5, sspush x1, sspopchk x5, ssamoswap.d
    out["ss-c.sspush"] = r16(0x6081)
    out["ss-c.sspopchk"] = r16(0x6281)
    out["ss-sspush"] = r32(0xce104073)
    out["ss-sspopchk"] = r32(0xcdc2c073)
    out["ss-ssamoswap.d"] = r32(0x48b5352f)
    # a short stream: c.lw, lw, c.sdsp, then a halfword of a 32-bit one
    out["stream"] = r16(0x4188) + r32(0x0085a503) + r16(0xe426) + r16(0x0003)
    # transformed (htinst) values: lw/sd from 32-bit and compressed traps
    out["htinst-lw"] = struct.pack("<Q", 0x00002503)
    out["htinst-c.lw"] = struct.pack("<Q", 0x00002501)
    out["htinst-sd"] = struct.pack("<Q", 0x00c03023)
    out["htinst-pseudo"] = struct.pack("<Q", 0x00002000)
    out["htinst-high"] = struct.pack("<Q", 0x100002503)
    return out

# ---- mgmt -------------------------------------------------------------------


def mgmt_seeds():
    def conn(lines, flags=0, rd=0, wr=0):
        return bytes([flags, rd, wr]) + b"".join(l + b"\n" for l in lines)

    hello = b'{"v":1,"id":1,"cmd":"hello"}'
    out = {
        "hello": conn([hello]),
        "all-reads": conn([hello, b'{"v":1,"cmd":"list"}', b'{"v":1,"id":2,"cmd":"images"}',
                           b'{"v":1,"cmd":"stats"}', b'{"v":1,"cmd":"stats","vm":"beta"}',
                           b'{"v":1,"id":3,"cmd":"cfi","vm":"gamma"}']),
        "lifecycle": conn([b'{"v":1,"id":4,"cmd":"pause","vm":"alpha"}',
                           b'{"v":1,"id":5,"cmd":"resume","vm":"beta"}',
                           b'{"v":1,"id":6,"cmd":"wake","vm":"gamma"}',
                           b'{"v":1,"id":7,"cmd":"destroy","vm":"beta"}']),
        "lifecycle-fails": conn([b'{"v":1,"id":4,"cmd":"pause","vm":"beta"}',
                                 b'{"v":1,"cmd":"resume","vm":"alpha"}',
                                 b'{"v":1,"cmd":"wake","vm":"alpha"}',
                                 b'{"v":1,"cmd":"destroy","vm":"alpha"}'], flags=0x04),
        "create": conn([b'{"v":1,"id":9,"cmd":"create","name":"new-1","kernel":"alpha.kernel",'
                        b'"initrd":"x","mem":33554432,"vcpus":2,"cfi":"strict",'
                        b'"bootargs":"console=ttyS0 \\u00e9\\ud83d\\ude00","debug":true}',
                        b'{"v":1,"cmd":"create","name":"Bad","kernel":"k"}',
                        b'{"v":1,"cmd":"create","name":"x","kernel":"k","cfi":"maybe"}',
                        b'{"v":1,"cmd":"create","name":"x","kernel":"k","mem":"1"}']),
        "create-boot-fails": conn([b'{"v":1,"cmd":"create","name":"y","kernel":"k"}'],
                                  flags=0x10),
        "streams": conn([b'{"v":1,"id":10,"cmd":"snapshot","vm":"alpha","live":true}',
                         b'{"v":1,"id":11,"cmd":"snapshot","vm":"beta"}',
                         b'{"v":1,"id":12,"cmd":"restore","bytes":4096,"name":"back"}',
                         b'{"v":1,"id":13,"cmd":"migrate","vm":"alpha","max_rounds":5}',
                         b'{"v":1,"id":14,"cmd":"incoming","name":"in"}']),
        "streams-err": conn([b'{"v":1,"id":10,"cmd":"snapshot","vm":"alpha"}',
                             b'{"v":1,"id":12,"cmd":"restore","bytes":4096}',
                             b'{"v":1,"id":13,"cmd":"migrate","vm":"beta"}',
                             b'{"v":1,"id":14,"cmd":"incoming"}'], flags=0x08),
        "streams-busy": conn([b'{"v":1,"cmd":"restore","bytes":40}',
                              b'{"v":1,"cmd":"migrate","vm":"alpha"}'], flags=0x02, rd=1),
        "no-stream": conn([b'{"v":1,"cmd":"snapshot","vm":"alpha"}',
                           b'{"v":1,"cmd":"incoming"}'], flags=0x01),
        "errors": conn([b'{"v":2,"cmd":"hello"}', b'{"cmd":"hello"}', b'{"v":1,"id":-1}',
                        b'{"v":1,"id":"x","cmd":"hello"}', b'{"v":1,"cmd":"frob"}',
                        b'{"v":1,"cmd":"list","extra' + b"k" * 60 + b'":1}',
                        b'{"v":1,"cmd":"cfi"}', b'{"v":1,"cmd":"cfi","vm":1}',
                        b'{"v":1,"cmd":"cfi","vm":"nobody"}',
                        b'{"v":1,"cmd":"migrate","vm":"alpha","max_rounds":0}',
                        b'{"v":1,"cmd":"hello","a":{"b":1}}', b'[1]', b'{"v":1,,}',
                        b'{"v":1,"cmd":"hello"} x', b'{"v":1,"v":1}', b"\x00\xff{",
                        b'{"v":18446744073709551615,"id":18446744073709551616}',
                        b'{"v":-9223372036854775808,"s":"\\ud800"}', b'{"v":01}', b'']),
        "json-strings": conn([b'{"v":1,"cmd":"hello","id":null,"s":"\\"\\\\\\/\\b\\f\\n\\r\\t'
                              b'\\u0041\\u00ff\\u20ac\\udbff\\udfff \xc3\xa9 \xf0\x9f\x98\x80"}',
                              b' { "v" : 1 , "cmd" : "list" } \r',
                              b'{"v":1,"cmd":"hello","t":true,"f":false,"n":-0,"m":-1}']),
        "overlong": conn([b'{"v":1,"cmd":"hello","pad":"' + b"a" * 4100 + b'"}', hello],
                         rd=200, wr=13),
        "split": bytes([0, 1, 1]) + hello + b"\n" + b'{"v":1,"cmd":"li',
    }
    return out

# ---- mig_recv ---------------------------------------------------------------


MIG_MAGIC = b"CARAMIGR"
CAPS, ACCEPT, ZERO, ROUND, SWITCHOVER, RUNNING, DONE, ABORT, DISK_LAYOUT = range(16, 25)
DISK_READ_ONLY = 1             # DISK_LAYOUT flags


def _mig_version():
    """MIG_VERSION of include/abi/migration_format.h: seeds of another
    version would all stop at the header (as they did once: regenerate the
    corpus when it changes)."""
    text = (ROOT / "include" / "abi" / "migration_format.h").read_text()
    for line in text.splitlines():
        words = line.split()
        if words[:2] == ["#define", "MIG_VERSION"]:
            return int(words[2])
    raise SystemExit("make_more_seeds.py: no MIG_VERSION in migration_format.h")


MIG_VERSION = _mig_version()

# tests/fuzz/fuzz_mig_recv.c's header flags beyond the snapshot target's
FL_SLOW_TX, FL_COPY, FL_COPY_RO, FL_SLOW_DISK = 0x10, 0x20, 0x40, 0x80
# its copy-mode host disks (tests/fuzz/fuzz_restore_host.h): disk 0 at PCI 4
# (two blocks, the second of 16 sectors), disk 1 at PCI 5 (one of 8 sectors)
# or, with FL_COPY_RO, the read-only disk at PCI 3
COPY_DISK_PCI, COPY_DISK_SECTORS = 4, 128 + 16
COPY_DISK2_PCI, COPY_DISK2_SECTORS = 5, 8


def mig_hdr(flags=0, wmode=0, sizes=ms.WHOLE):
    return struct.pack("<BB6B", flags, wmode, *sizes)


def disk_data(sectors, seed):
    """A DISK block's sectors: a few non-zero words a sector (small in git),
    different for each @seed (a block sent again must land as the last)."""
    buf = bytearray(sectors * 512)
    for s in range(sectors):
        struct.pack_into("<QQ", buf, s * 512 + (seed * 24) % 496, 0xD15C0000 + seed,
                         (0x9E3779B97F4A7C15 * (seed * 1000 + s + 1)) & (2 ** 64 - 1))
    return bytes(buf)


def mig_stream(name="alpha", nr_vcpus=1, ram=8 * ms.MiB, rounds=((((0x200000, 1),), ()),),
               final_runs=((0x201000, 1),), paused=False, cfi=True, done=True,
               end_over=None, abort_at=None, vcpu_over=None, config_over=None,
               order=None, vio=(), layouts=(), round_disks=(), final_disks=()):
    """A source's stream: header, CONFIG, in copy mode a DISK_LAYOUT per disk
    (@layouts: (sectors, flags) each), pre-copy rounds (each: MEMORY runs and
    ZERO ranges, the round's DISK runs (@round_disks[k]: (disk, sector,
    sectors, seed) each, whole 4 KiB units inside one block), then ROUND),
    SWITCHOVER, memory and DISK runs (@final_disks) sent while paused, the VCPUs, the DEVICEs, the VIRTIO
    sections (@vio: (model, state) each), END, DONE. @abort_at: an ABORT
    instead of the section of that index (0 = CONFIG)."""
    secs = []
    config = snap.CONFIG.encode({
        "name": name.encode(), "ram_gpa": ms.RAM_BASE, "ram_size": ram, "nr_vcpus": nr_vcpus,
        "cfi_policy": 0 if cfi else 3, "features": ms.FEAT_ALL if cfi else ms.FEAT_NO_CFI,
        "boot_count": 2, "debug_ext": 0, "guest_time": 123456789, "timebase_hz": ms.TIMEBASE,
        "kernel_image": b"linux.image", "initrd_image": b"",
        "bootargs": b"console=ttyS0"})
    if config_over:
        config = ms.override(snap.CONFIG, config, config_over)
    secs.append((snap.SEC_CONFIG, 0, config))
    for slot, (sectors, flags) in enumerate(layouts):
        secs.append((DISK_LAYOUT, slot, struct.pack("<QII", sectors, flags, 0)))
    pages = 0
    seed = 0

    def disks_of(blocks):
        for slot, sector, sectors, dseed in blocks:
            run = snap.DISKRUN.encode({"sector": sector, "sectors": sectors})
            secs.append((snap.SEC_DISK, slot, run + disk_data(sectors, dseed)))
        return len(blocks)

    def disks_in(k):
        return round_disks[k] if k < len(round_disks) else ()

    def runs_of(runs):
        nonlocal pages, seed
        for off, n in runs:
            body = snap.MEMRUN.encode({"gpa": ms.RAM_BASE + off, "pages": n})
            body += b"".join(ms.page(seed + p) for p in range(n))
            seed += n
            secs.append((snap.SEC_MEMORY, 0, body))
            pages += n

    for k, (runs, zeros) in enumerate(rounds):
        before = pages
        runs_of(runs)
        for off, n in zeros:
            secs.append((ZERO, 0, struct.pack("<QQ", ms.RAM_BASE + off, n)))
            pages += n
        blocks = disks_of(disks_in(k))
        dirty = sum((n + 7) // 8 for _, _, n, _ in
                    (disks_in(k + 1) if k + 1 < len(rounds) else final_disks))  # 4 KiB units
        secs.append((ROUND, 0, struct.pack("<IIQQQQQQQ", k + 1, 0, pages - before, 1, 4096 * k,
                                           blocks, dirty, 2500 * (k + 1), 2000 * k)))
    secs.append((SWITCHOVER, 0, struct.pack("<QII", 987654321, len(rounds), 1 if paused else 0)))
    runs_of(final_runs)
    disks_of(final_disks)
    for i in range(nr_vcpus):
        rec = ms.vcpu_record(i, cfi)
        if vcpu_over and i == nr_vcpus - 1:
            rec = ms.override(snap.VCPU, rec, vcpu_over)
        secs.append((snap.SEC_VCPU, i, rec))
    for idx, (dname, layout) in enumerate(snap.DEVICES):
        state = ms.device_state(dname, nr_vcpus, b"mig")
        dev = snap.DEVICE.encode({"name": dname.encode(), "state_size": layout.size})
        secs.append((snap.SEC_DEVICE, idx, dev + state))
    for slot, (model, state) in enumerate(vio):
        dev = snap.DEVICE.encode({"name": model.encode(), "state_size": len(state)})
        secs.append((snap.SEC_VIRTIO, slot, dev + state))
    end = {"sections": len(secs), "memory_pages": pages}
    end.update(end_over or {})
    secs.append((snap.SEC_END, 0, snap.END.encode(end)))
    if done:
        secs.append((DONE, 0, struct.pack("<QQ", 5000, ms.TIMEBASE)))
    if order:
        secs = order(secs)
    if abort_at is not None:
        secs[abort_at] = (ABORT, 0, struct.pack("<16s160s", b"no-memory", b"the source gave up"))
        secs = secs[:abort_at + 1]
    out = [snap.HEADER.encode({"magic": MIG_MAGIC, "version": MIG_VERSION, "header_size": 32,
                               "flags": 0})]
    out += [ms.section(t, i, p) for t, i, p in secs]
    return b"".join(out)


def mig_seeds():
    h = mig_hdr()
    two_rounds = ((((0x200000, 2), (0x7ff000, 1)), ()), (((0x200000, 1),), ((0x201000, 1),)))
    dup_round = lambda s: s[:4] + [s[3]] + s[4:]  # noqa: E731  ROUND 1 twice
    # a DEVICE past the last model (index vdev_count, its length 0 as
    # snap_section_length() gives for no model) just before END
    device_past_last = lambda s: s[:-2] + [(snap.SEC_DEVICE, len(snap.DEVICES), b"")] + s[-2:]  # noqa: E731
    return {
        "valid": h + mig_stream(),
        "valid-2vcpus-rounds": h + mig_stream(nr_vcpus=2, rounds=two_rounds),
        "valid-paused-nocfi": h + mig_stream(paused=True, cfi=False, rounds=()),
        "valid-no-precopy": h + mig_stream(rounds=(), final_runs=((0, 1), (0x7ff000, 1))),
        "valid-named": mig_hdr(flags=0x01) + mig_stream(name="taken"),
        "valid-pieces": mig_hdr(sizes=(1, 7, 130, 255, 0, 33)) + mig_stream(nr_vcpus=2),
        "valid-slow-tx": mig_hdr(flags=0x10) + mig_stream(),
        "no-done": h + mig_stream(done=False),
        "source-stops-reading": mig_hdr(wmode=255) + mig_stream(),
        "stall": mig_hdr(sizes=(254, 0, 0, 0, 0, 0)) + mig_stream()[:3000],
        "abort-config": h + mig_stream(abort_at=0),
        "abort-vcpu": h + mig_stream(abort_at=5),
        "bad-end-count": h + mig_stream(end_over={"sections": 1}),
        "bad-round-order": h + mig_stream(order=dup_round, rounds=two_rounds),
        "bad-name-taken": h + mig_stream(name="taken"),
        "bad-too-big": h + mig_stream(ram=128 * ms.MiB),
        "bad-no-zicfiss": mig_hdr(flags=0x04) + mig_stream(),
        "bad-no-svadu": mig_hdr(flags=0x02) + mig_stream(),
        "bad-vcpu-field": h + mig_stream(vcpu_over={"hsm_state": 9}),
        # version 9: a vCPU's DBTR state moves (the harness's host has 4 triggers:
        # one at index 5 is no-feature there)
        "valid-dbtr": h + mig_stream(vcpu_over=ms.dbtr_over()),
        "nofeature-dbtr-trigger-5": h + mig_stream(vcpu_over=ms.dbtr_over(
            dbtr_state=[0b111] + [0] * 4 + [0b111, 0, 0],
            dbtr_tdata1=[ms.DBTR_EXEC] + [0] * 4 + [ms.DBTR_EXEC, 0, 0])),
        "bad-dbtr-tdata1-chain": h + mig_stream(vcpu_over=ms.dbtr_over(
            dbtr_tdata1=[ms.DBTR_EXEC | 1 << 11] + [0] * 7)),
        "bad-device-past-last": h + mig_stream(order=device_past_last),
        "bad-snapshot-magic": h + ms.stream(runs=()),
        "fixcrc-valid": mig_hdr(flags=0x08) + mig_stream(nr_vcpus=2),
        "fixcrc-bad-config": mig_hdr(flags=0x08) + mig_stream(config_over={"nr_vcpus": 9}),
        # restored CSRs a guest could never have written (include/abi/snapshot_records.h)
        "fixcrc-legal-fs-off": mig_hdr(flags=0x08) + mig_stream(vcpu_over={"sstatus": 1 << 8}),
        "fixcrc-legal-vsstatus-tw": mig_hdr(flags=0x08) + mig_stream(
            vcpu_over={"vsstatus": (2 << 32) | 1 << 21}),
        # a disk and a NIC move with the VM (VIRTIO sections after the DEVICEs)
        "vio-valid": h + mig_stream(vio=(("virtio_blk", ms.vio_blk()),
                                         ("virtio_net", ms.vio_net()))),
        "vio-fixcrc-valid": mig_hdr(flags=0x08) + mig_stream(
            vio=(("virtio_blk", ms.vio_blk()), ("virtio_net", ms.vio_net()))),
        # a move keeps its MAC: one on the switch already is refused
        "vio-mac-taken": h + mig_stream(vio=(("virtio_net", ms.vio_net(
            mac=list(ms.VIO_TAKEN_MAC))),)),
        "vio-no-disk": h + mig_stream(vio=(("virtio_blk", ms.vio_blk(pci_dev=9)),)),
        "vio-bad-order": h + mig_stream(vio=(("virtio_net", ms.vio_net()),
                                             ("virtio_blk", ms.vio_blk()))),
        "vio-fixcrc-bad-q-size": mig_hdr(flags=0x08) + mig_stream(
            vio=(("virtio_blk", ms.vio_blk(q_size=[12, 0])),)),
    } | mig_copy_seeds()


def copy_vio(slot, capacity, read_only=0):
    """The VIRTIO state of copy-mode disk @slot: its rings apart from the
    other disk's; pci_dev is the source's (its DISK_LAYOUT bound it here)."""
    base = ms.RAM_BASE + 0x30000 + slot * 0x4000
    over = {"capacity": capacity, "pci_dev": 7 + slot, "serial": b"alpha-vd" + bytes([97 + slot]),
            "q_desc": [base, 0], "q_avail": [base + 0x1000, 0], "q_used": [base + 0x2000, 0],
            "q_next_avail": [0, 0], "q_next_used": [0, 0], "requests": 0, "bytes": 0}
    if read_only:
        over |= {"read_only": 1,
                 "device_features": snap.VIO_OFFER["virtio_blk"] | snap.VIO_BLK_F_RO}
    return ("virtio_blk", ms.vio_blk(**over))


def copy_stream(ro=False, **over):
    """A copy-mode stream (docs/migration.md, "Disks: shared or copied") of
    a VM with two disks: round 1 the non-zero blocks, disk 0's second (its
    first, 64 KiB, is zero) and disk 1's only one; round 2 the 4 KiB units
    the guest wrote meanwhile: one of disk 0's second block (over what round
    1 sent) and two of its first; the stop-and-copy disk 1's block again and
    the last unit of disk 0's first block; their VIRTIO states. With @ro
    disk 1 is read-only (FL_COPY_RO's host disk), none of its blocks sent."""
    d1 = (ms.VIO_SECTORS, DISK_READ_ONLY) if ro else (COPY_DISK2_SECTORS, 0)
    args = dict(
        rounds=((((0x200000, 1),), ()), (((0x200000, 1),), ())),
        layouts=((COPY_DISK_SECTORS, 0), d1),
        round_disks=(((0, 128, 16, 1),) + (() if ro else ((1, 0, 8, 2),)),
                     ((0, 136, 8, 3), (0, 8, 16, 5))),
        final_disks=((0, 120, 8, 6),) + (() if ro else ((1, 0, 8, 4),)),
        vio=(copy_vio(0, COPY_DISK_SECTORS), copy_vio(1, d1[0], read_only=d1[1])))
    args.update(over)
    return mig_stream(**args)


def mig_copy_seeds():
    """Copy mode (FL_COPY): valid streams, and refusals after blocks were
    written (the destination wipes them: tests/fuzz/fuzz_mig_recv.c checks
    the host disks are zero again when it answers) or before."""
    h = mig_hdr(flags=FL_COPY)
    ok = copy_stream()
    disk_at = lambda data, slot, nth: ms.offset_of(data, snap.SEC_DISK, slot, nth)  # noqa: E731
    crc_at = lambda off: off + 16  # noqa: E731  (struct snap_section's crc32c)

    def move_first(stype, before_type):
        """the first section of @stype moved to just before the first @before_type"""
        def order(secs):
            i = next(k for k, s in enumerate(secs) if s[0] == stype)
            sec = secs.pop(i)
            j = next(k for k, s in enumerate(secs) if s[0] == before_type)
            return secs[:j] + [sec] + secs[j:]
        return order

    def swap_layouts(secs):
        i = next(k for k, s in enumerate(secs) if s[0] == DISK_LAYOUT)
        return secs[:i] + [secs[i + 1], secs[i]] + secs[i + 2:]

    def layout_late(secs):
        """disk 1's DISK_LAYOUT after round 1's first block"""
        i = next(k for k, s in enumerate(secs) if s[0] == DISK_LAYOUT and s[1] == 1)
        sec = secs.pop(i)
        j = next(k for k, s in enumerate(secs) if s[0] == snap.SEC_DISK)
        return secs[:j + 1] + [sec] + secs[j + 1:]

    return {
        "copy-valid": h + ok,
        "copy-valid-pieces": mig_hdr(flags=FL_COPY | FL_SLOW_TX, sizes=(1, 7, 130, 255, 0, 33))
                             + ok,
        "copy-valid-slow-disks": mig_hdr(flags=FL_COPY | FL_SLOW_DISK) + ok,
        "copy-valid-ro-disk": mig_hdr(flags=FL_COPY | FL_COPY_RO) + copy_stream(ro=True),
        "copy-valid-paused": h + copy_stream(paused=True),
        "copy-fixcrc-valid": mig_hdr(flags=FL_COPY | ms.FL_FIX_CRC) + ok,
        "copy-no-done": h + copy_stream(done=False),
        # late refusals: blocks were written, the wipe runs before the answer
        "copy-bad-crc-late-disk": h + ms.flip(ok, crc_at(disk_at(ok, 1, 1))),
        "copy-bad-crc-late-disk-slow": mig_hdr(flags=FL_COPY | FL_SLOW_DISK)
                                       + ms.flip(ok, crc_at(disk_at(ok, 1, 1))),
        "copy-bad-end-count": h + copy_stream(end_over={"sections": 9}),
        "copy-disk-after-vcpu": h + copy_stream(order=move_first(snap.SEC_DISK, snap.SEC_DEVICE)),
        "copy-layout-late": h + copy_stream(order=layout_late),
        "copy-vio-wrong-size": h + copy_stream(vio=(copy_vio(0, COPY_DISK_SECTORS),
                                                    copy_vio(1, 16))),
        "copy-vio-missing": h + copy_stream(vio=(copy_vio(0, COPY_DISK_SECTORS),)),
        "copy-abort-after-disks": h + copy_stream(done=False, abort_at=-3),
        "copy-ro-disk-written": mig_hdr(flags=FL_COPY | FL_COPY_RO)
                                + copy_stream(ro=True, final_disks=((1, 0, 8, 4),)),
        # a migration's run: whole 4 KiB units inside one block
        "copy-unit-misaligned": h + copy_stream(final_disks=((0, 124, 4, 6),)),
        "copy-unit-across-blocks": h + copy_stream(final_disks=((0, 120, 16, 6),)),
        "copy-unit-short": h + copy_stream(final_disks=((0, 128, 4, 6),)),
        "copy-ro-flag-disk-written": h + copy_stream(
            layouts=((COPY_DISK_SECTORS, 0), (COPY_DISK2_SECTORS, DISK_READ_ONLY))),
        # the source stops reading when the refusal's ABORT goes out: the
        # wipe must not wait for it
        "copy-bad-crc-source-stops-reading": mig_hdr(flags=FL_COPY, wmode=3)
                                             + ms.flip(ok, crc_at(disk_at(ok, 1, 1))),
        # early refusals: nothing written
        "copy-layout-swapped": h + copy_stream(order=swap_layouts),
        "copy-layout-wrong-size": h + copy_stream(
            layouts=((COPY_DISK_SECTORS, 0), (COPY_DISK2_SECTORS + 8, 0))),
        "copy-layout-ro-host-disk": mig_hdr(flags=FL_COPY | FL_COPY_RO) + copy_stream(
            layouts=((COPY_DISK_SECTORS, 0), (ms.VIO_SECTORS, 0))),
        "copy-disk-no-layout": h + copy_stream(layouts=(), vio=()),
        "copy-in-shared-mode": mig_hdr() + ok,
    }

# ---- fdt_guest --------------------------------------------------------------


def fdt_guest_seeds():
    def cfg(flags=0, vcpus=1, cfi=0, sv=39, ram_mib=64, boot=0, index=0, initrd=(0, 0),
            bufsize=0, name=b"alpha", bootargs=b"", timebase=10000000):
        rec = struct.pack("<BBBBHHIQQQ", flags, vcpus, cfi, sv, ram_mib, index, boot,
                          initrd[0], initrd[1], bufsize)
        rec += name.ljust(16, b"\0")[:16] + struct.pack("<I", timebase)
        assert len(rec) == 56, len(rec)
        return rec + bootargs

    return {
        "one": cfg(),
        "two-cfi-initrd": cfg(vcpus=2, cfi=0, initrd=(0x88000000, 0x88100000),
                              bootargs=b"console=ttyS0 root=/dev/ram0"),
        "eight-sv57": cfg(flags=0x0f, vcpus=8, cfi=2, sv=57, ram_mib=2048, boot=7,
                          bootargs=b"x" * 300),
        "no-cfi-sv48": cfg(flags=0x10, vcpus=3, cfi=3, sv=48, name=b"a-very-long-nam"),
        "tight-buffer": cfg(vcpus=4, bufsize=1500),
        "tiny-buffer": cfg(bufsize=40),
        "restored-features": cfg(flags=0x40 | 0x30, vcpus=2, initrd=(0x1f, 0), timebase=0),
    }

# ---- fdt_host ---------------------------------------------------------------


FDT_HOST_DTS = {
    "virt-2vms": """
/dts-v1/;
/ {
	#address-cells = <2>; #size-cells = <2>;
	compatible = "riscv-virtio";
	chosen {
		#address-cells = <2>; #size-cells = <2>;
		stdout-path = "/soc/serial@10000000:115200";
		rng-seed = [01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10
			    11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f 20];
		carapace,timeslice-us = <1000>;
		carapace,partial-flush-ms = <0>;
		carapace,vmid-bits = <4>;
		carapace,stream-stall-ms = <500>;
		vm@0 {
			compatible = "carapace,vm";
			carapace,name = "alpha";
			carapace,memory = <0x0 0x8000000>;
			carapace,vcpus = <2>;
			carapace,cfi = "strict";
			carapace,debug;
			bootargs = "console=ttyS0 quiet";
			kernel { compatible = "carapace,kernel"; reg = <0x0 0x84000000 0x0 0x200000>; };
			ramdisk { compatible = "carapace,ramdisk"; reg = <0x0 0x86000000 0x0 0x100000>; };
		};
		vm@1 {
			compatible = "carapace,vm";
			#address-cells = <1>; #size-cells = <1>;
			carapace,name = "beta";
			carapace,memory = <0x4000000>;
			carapace,cfi = "off";
			module@0 { compatible = "carapace,kernel"; reg = <0x87000000 0x1000>; };
		};
		image@0 {
			compatible = "carapace,image";
			carapace,name = "spare.img";
			reg = <0x0 0x88000000 0x0 0x1000>;
		};
	};
	memory@80000000 { device_type = "memory"; reg = <0x0 0x80000000 0x0 0x40000000>; };
	reserved-memory {
		#address-cells = <2>; #size-cells = <2>; ranges;
		mmode_resv0@80000000 { reg = <0x0 0x80000000 0x0 0x40000>; no-map; };
		mmode_resv1@80040000 { reg = <0x0 0x80040000 0x0 0x20000>; no-map; };
	};
	cpus {
		#address-cells = <1>; #size-cells = <0>;
		timebase-frequency = <10000000>;
		cpu@0 {
			device_type = "cpu"; reg = <0>; status = "okay"; compatible = "riscv";
			riscv,isa-extensions = "i", "m", "a", "f", "d", "c", "h", "zicsr", "zifencei",
				"zicfilp", "zicfiss", "smstateen", "sstc", "svadu", "zimop", "zcmop";
		};
		cpu@1 {
			device_type = "cpu"; reg = <1>; status = "okay"; compatible = "riscv";
			riscv,isa-extensions = "i", "m", "h", "zicfilp", "zicfiss", "sstc";
		};
		cpu@2 { device_type = "cpu"; reg = <2>; status = "disabled"; };
	};
	soc {
		#address-cells = <2>; #size-cells = <2>;
		compatible = "simple-bus"; ranges;
		serial@10000000 {
			compatible = "ns16550a"; reg = <0x0 0x10000000 0x0 0x100>;
			reg-shift = <0>;
		};
		virtio_mmio@10008000 { compatible = "virtio,mmio"; reg = <0x0 0x10008000 0x0 0x1000>; };
	};
};
""",
    # QEMU virt's PCIe host bridge (hw/riscv/virt.c): ECAM, bus-range, and
    # ranges with the I/O, 32-bit and 64-bit windows.
    "virt-pcie": """
/dts-v1/;
/ {
	#address-cells = <2>; #size-cells = <2>;
	memory@80000000 { device_type = "memory"; reg = <0x0 0x80000000 0x0 0x10000000>; };
	cpus { #address-cells = <1>; #size-cells = <0>; timebase-frequency = <10000000>;
		cpu@0 { device_type = "cpu"; reg = <0>; }; };
	soc {
		#address-cells = <2>; #size-cells = <2>; ranges;
		pci@30000000 {
			compatible = "pci-host-ecam-generic";
			device_type = "pci";
			#address-cells = <3>; #size-cells = <2>;
			bus-range = <0x0 0xff>;
			reg = <0x0 0x30000000 0x0 0x10000000>;
			ranges = <0x1000000 0x0 0x0 0x0 0x3000000 0x0 0x10000
				  0x2000000 0x0 0x40000000 0x0 0x40000000 0x0 0x40000000
				  0x3000000 0x4 0x0 0x4 0x0 0x4 0x0>;
			interrupt-map-mask = <0x1800 0x0 0x0 0x7>;
			interrupt-map = <0x0 0x0 0x0 0x1 0x1 0x20  0x0 0x0 0x0 0x2 0x1 0x21
					 0x800 0x0 0x0 0x1 0x1 0x21  0x800 0x0 0x0 0x2 0x1 0x22>;
		};
		plic@c000000 {
			compatible = "sifive,plic-1.0.0";
			#address-cells = <0>; #interrupt-cells = <1>;
			interrupt-controller;
			phandle = <0x1>;
		};
	};
};
""",
    # QEMU virt's PLIC as OpenSBI passes it on (hart h: M context 2h listed
    # as -1, S context 2h + 1 as 9), both harts' local controllers, and the
    # bridge's interrupt-map pointing at it.
    "virt-plic": """
/dts-v1/;
/ {
	#address-cells = <2>; #size-cells = <2>;
	memory@80000000 { device_type = "memory"; reg = <0x0 0x80000000 0x0 0x10000000>; };
	cpus { #address-cells = <1>; #size-cells = <0>; timebase-frequency = <10000000>;
		cpu@0 { device_type = "cpu"; reg = <0>;
			intc0: interrupt-controller { compatible = "riscv,cpu-intc";
				#interrupt-cells = <1>; interrupt-controller; }; };
		cpu@1 { device_type = "cpu"; reg = <1>;
			intc1: interrupt-controller { compatible = "riscv,cpu-intc";
				#interrupt-cells = <1>; interrupt-controller; }; }; };
	soc {
		#address-cells = <2>; #size-cells = <2>; ranges;
		plic: plic@c000000 {
			compatible = "sifive,plic-1.0.0", "riscv,plic0";
			reg = <0x0 0xc000000 0x0 0x600000>;
			riscv,ndev = <0x5f>;
			#address-cells = <0>; #interrupt-cells = <1>;
			interrupt-controller;
			interrupts-extended = <&intc0 0xffffffff &intc0 9 &intc1 0xffffffff &intc1 9>;
		};
		pci@30000000 {
			compatible = "pci-host-ecam-generic";
			device_type = "pci";
			#address-cells = <3>; #size-cells = <2>;
			reg = <0x0 0x30000000 0x0 0x10000000>;
			ranges = <0x2000000 0x0 0x40000000 0x0 0x40000000 0x0 0x40000000>;
			interrupt-map-mask = <0x1800 0x0 0x0 0x7>;
			interrupt-map = <0x0 0x0 0x0 0x1 &plic 0x20  0x800 0x0 0x0 0x1 &plic 0x21>;
		};
	};
};
""",
    "minimal": """
/dts-v1/;
/ {
	#address-cells = <2>; #size-cells = <1>;
	memory@80000000 { device_type = "memory"; reg = <0x0 0x80000000 0x8000000>; };
	cpus { timebase-frequency = <0x0 0x989680>;
		cpu@0 { device_type = "cpu"; reg = <0x0 0x0>; status = "ok"; }; };
	uart@10000000 { compatible = "ns16550a"; reg = <0x0 0x10000000 0x100>; reg-shift = <2>; };
};
""",
    "errors": """
/dts-v1/;
/ {
	#address-cells = <2>; #size-cells = <2>;
	chosen {
		#address-cells = <2>; #size-cells = <2>;
		stdout-path = "";
		rng-seed = [00];
		vm@0 { compatible = "carapace,vm"; carapace,name = "a"; carapace,memory = <1>;
		       kernel { compatible = "carapace,kernel"; reg = <0 1 0 0>; }; };
	};
	memory@80000000 { device_type = "memory"; reg = <0x0 0x80000000 0x0 0x40000000 0 0 0 1>; };
	cpus { #address-cells = <1>; #size-cells = <0>; timebase-frequency = <10000000>;
		cpu@0 { device_type = "cpu"; reg = <0>; }; };
};
""",
}


# virt-2vms with issue 24's devices: two switches (one with an uplink), alpha
# with two disks and two NICs, beta with a NIC
FDT_HOST_DTS["virt-devices"] = FDT_HOST_DTS["virt-2vms"].replace(
    "\t\tvm@0 {", """\t\tswitch@0 { compatible = "carapace,switch"; carapace,name = "lan";
			carapace,uplink-pci-dev = <3>; };
		switch@1 { compatible = "carapace,switch"; carapace,name = "dmz"; };
		vm@0 {""", 1).replace(
    "\t\t\tramdisk {", """\t\t\tdisk@0 { compatible = "carapace,disk"; carapace,pci-dev = <1>;
				carapace,read-only; };
			disk@1 { compatible = "carapace,disk"; carapace,pci-dev = <2>; };
			nic@0 { compatible = "carapace,nic"; carapace,switch = "lan";
				local-mac-address = [52 54 00 aa 00 01]; };
			nic@1 { compatible = "carapace,nic"; carapace,switch = "dmz";
				local-mac-address = [52 54 00 aa 00 02]; };
			ramdisk {""", 1).replace(
    "\t\t\tmodule@0 {", """\t\t\tnic@0 { compatible = "carapace,nic"; carapace,switch = "lan";
				local-mac-address = [52 54 00 bb 00 01]; };
			module@0 {""", 1)
assert FDT_HOST_DTS["virt-devices"].count("carapace,nic") == 3


def fdt_host_seeds():
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, src in FDT_HOST_DTS.items():
            dts = Path(tmp) / (name + ".dts")
            dts.write_text(src)
            out[name] = subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", str(dts)],
                                       check=True, capture_output=True).stdout
    return out


# ---- hostio -----------------------------------------------------------------

HB_SUBMIT, HB_COMPLETE, HB_RAW_USED, HB_POLL, HB_ISR, HB_CONFIG = range(6)
HB_IN, HB_OUT, HB_FLUSH, HB_GET_ID, HB_DISCARD = range(5)
HB_FLUSH_F, HB_RO_F, HB_SEG_MAX_F, HB_BLK_SIZE_F = 1, 2, 4, 8


def hostio_seeds():
    """Disks of 1000 sectors unless said otherwise; requests of 512-byte
    segments. Heads are the driver's free descriptors in order: the first
    request of an empty queue has head 0."""

    def seed(ops, cap=1000, seg_max=8, qsize=128, feat=HB_FLUSH_F | HB_SEG_MAX_F, bsize=512):
        hdr = struct.pack("<QIHBBI", cap, seg_max, qsize, feat, len(ops), bsize)
        return hdr + b"".join(struct.pack("<BBHI", *o) for o in ops)

    def submit(typ, segs=1, seg_len=512, sector=0, again=False):
        return (HB_SUBMIT, typ | segs << 3, seg_len | (0x8000 if again else 0), sector)

    def complete(status=0, length=1):
        return (HB_COMPLETE, status, 0, length)

    poll = (HB_POLL, 0, 0, 0)

    def raw(head, length=1, bump=1):
        return (HB_RAW_USED, bump, head, length)

    return {
        "io": seed([submit(HB_IN), complete(0, 513), poll, submit(HB_OUT, 2, sector=10),
                    complete(0, 1), poll, submit(HB_FLUSH, 0), complete(), poll,
                    submit(HB_GET_ID, 1, 20), complete(0, 21), poll]),
        "errors": seed([submit(HB_IN), complete(1), submit(HB_IN, sector=5), complete(2),
                        submit(HB_IN, sector=6), complete(0x7f), poll]),
        "read-only": seed([submit(HB_OUT), submit(HB_IN), complete(), poll],
                          feat=HB_RO_F | HB_FLUSH_F),
        "no-flush": seed([submit(HB_FLUSH, 0), submit(HB_IN), complete(), poll], feat=0),
        "refusals": seed([submit(HB_IN, 9), submit(HB_IN, 0), submit(HB_OUT, 2, sector=999),
                          submit(HB_IN, 1, 100), submit(HB_IN, 1, 0), submit(HB_FLUSH, 1),
                          submit(HB_GET_ID, 2), submit(HB_DISCARD),
                          submit(HB_OUT, 1, sector=0xffffffff)]),
        "busy": seed([submit(HB_OUT, 6), submit(HB_OUT, 6, sector=6), submit(HB_IN),
                      complete(), poll, submit(HB_IN)], qsize=16, seg_max=64),
        "resubmit": seed([submit(HB_IN, again=True), complete(), poll, complete(), poll]),
        "used-id-out-of-range": seed([submit(HB_IN), raw(200), poll, submit(HB_IN)]),
        "used-id-inside-chain": seed([submit(HB_IN), submit(HB_IN, sector=1), raw(1), poll]),
        "used-id-twice": seed([submit(HB_IN), submit(HB_IN, sector=1), raw(0), raw(0), poll]),
        "used-idx-ahead": seed([submit(HB_IN), raw(0, bump=3), poll]),
        "used-len-huge": seed([submit(HB_IN), complete(0, 0xffffffff), poll]),
        "needs-reset": seed([submit(HB_IN), submit(HB_OUT, sector=3), (HB_ISR, 2 | 4, 0, 0),
                             poll, submit(HB_IN)]),
        "resize": seed([(HB_CONFIG, 30, 0, 5000), submit(HB_IN, sector=4000), complete(), poll]),
        "generation-never-settles": seed([submit(HB_IN), (HB_CONFIG, 200, 0, 5000), poll]),
        "queue-too-small": seed([submit(HB_IN)], qsize=2),
        "seg-max-zero": seed([submit(HB_IN)], seg_max=0),
        "full-ring": seed([submit(HB_IN, 30), submit(HB_IN, 30, sector=30),
                           submit(HB_IN, 30, sector=60), submit(HB_IN, 30, sector=90),
                           submit(HB_IN, sector=120), complete(), poll, submit(HB_IN)],
                          seg_max=64),
        "block-size-4k": seed([submit(HB_IN, 8), complete(), poll],
                              feat=HB_FLUSH_F | HB_BLK_SIZE_F, bsize=4096),
        "block-size-bad": seed([submit(HB_IN)], feat=HB_BLK_SIZE_F, bsize=1000),
        "queue-not-power-of-two": seed([submit(HB_IN, 8), submit(HB_IN, 8, sector=8),
                                        submit(HB_IN, 8, sector=16), complete(), poll],
                                       qsize=100),
    }


# ---- virtq ------------------------------------------------------------------

VQ_RAM = 0x80000000
VQ_RAM_SIZE = 0x4000
VQ_NEXT, VQ_WRITE, VQ_INDIRECT = 1, 2, 4
OP_POP, OP_PUSH, OP_GUEST_WRITE, OP_INTERRUPT, OP_RESET, OP_RACE = range(6)


def virtq_seeds():
    """Rings at RAM offsets 0 (descriptors), 0x100 (avail), 0x200 (used),
    buffers from 0x1000; the RAM image stops after the used ring."""
    D, A, U = 0x000, 0x100, 0x200

    def seed(descs=(), heads=(), ops=(), qnum=8, log2max=4, chain_max=16, start=0,
             avail_flags=0, avail_idx=None, rings=(D, A, U), offsets=True, image=0x300):
        ram = bytearray(image)
        d, a, u = rings if offsets else (D, A, U)
        for i, (addr, ln, flags, nxt) in descs:
            struct.pack_into("<QIHH", ram, d + 16 * i, addr, ln, flags, nxt)
        n = max(qnum, 1)
        for k, h in enumerate(heads):
            struct.pack_into("<H", ram, a + 4 + 2 * ((start + k) % n), h)
        idx = (start + len(heads)) & 0xffff if avail_idx is None else avail_idx
        struct.pack_into("<HH", ram, a, avail_flags, idx)
        if u + 4 <= len(ram):   # a refused ring may lie past the image
            struct.pack_into("<H", ram, u + 2, start & 0xffff)
        hdr = struct.pack("<HBBHBBQQQ", qnum, log2max, chain_max - 1, start & 0xffff,
                          len(ops), 1 if offsets else 0, *rings)
        assert len(hdr) == 32
        return hdr + b"".join(struct.pack("<BBHH", *o) for o in ops) + bytes(ram)

    def buf(off):
        return VQ_RAM + 0x1000 + off

    pop = (OP_POP, 0, 0, 0)
    irq = (OP_INTERRUPT, 0, 0, 0)

    def push(nth=0, written=0):
        return (OP_PUSH, nth, 0, written)

    blk = [(0, (buf(0), 16, VQ_NEXT, 1)), (1, (buf(0x100), 512, VQ_NEXT | VQ_WRITE, 2)),
           (2, (buf(0x400), 1, VQ_WRITE, 0))]
    every = [(i, (buf(0x10 * i), 8, VQ_NEXT if i < 7 else 0, i + 1)) for i in range(8)]
    return {
        # good chains
        "empty": seed(ops=[pop, irq]),
        "one-readable": seed([(0, (buf(0), 512, 0, 0))], [0], [pop, push(), irq, pop]),
        "blk-shape": seed(blk, [0], [pop, push(0, 513), irq]),
        "two-chains-out-of-order": seed(
            [(3, (buf(0), 64, 0, 0)), (5, (buf(0x40), 64, VQ_WRITE, 0))], [3, 5],
            [pop, pop, push(1, 64), push(0, 0), irq]),
        "no-interrupt": seed([(0, (buf(0), 8, 0, 0))], [0], [pop, push(), irq], avail_flags=1),
        "full-queue": seed([(i, (buf(0x10 * i), 16, VQ_WRITE, 0)) for i in range(8)],
                           list(range(8)), [pop] * 9 + [push(0, 16)] * 8 + [irq]),
        "every-descriptor": seed(every, [0], [pop, push()]),
        "end-of-ram": seed([(0, (VQ_RAM + VQ_RAM_SIZE - 64, 64, VQ_WRITE, 0))], [0], [pop]),
        "wrap-index": seed([(2, (buf(0), 8, VQ_WRITE, 0))], [2], [pop, push(0, 8), irq],
                           start=0xffff),
        "size-256": seed([(0, (buf(0), 8, 0, 0))], [0], [pop, push()], qnum=256, log2max=8,
                         chain_max=256, rings=(0x000, 0x1000, 0x1400), image=0x1c08),
        "guest-offers-later": seed([(1, (buf(0), 8, 0, 0))], [], [
            pop, (OP_GUEST_WRITE, 0, A + 4, 1), (OP_GUEST_WRITE, 0, A + 2, 1), pop, push()]),
        "reset-after-fault": seed([(0, (buf(0), 0, 0, 0))], [0], [
            pop, pop, (OP_GUEST_WRITE, 0, D + 8, 8), (OP_GUEST_WRITE, 0, A + 2, 0),
            (OP_RESET, 0, 0, 0), (OP_GUEST_WRITE, 0, A + 2, 1), pop, push(), irq]),
        "reset-new-size": seed([(0, (buf(0), 8, 0, 0))], [0], [(OP_RESET, 1, 4, 0), pop]),
        # a guest rewriting the first descriptor under the walker
        "race-desc-addr": seed(blk, [0], [(OP_RACE, 0, D + 0, 0xffff), push()]),
        "race-desc-next": seed(blk, [0], [(OP_RACE, 0, D + 14, 0), push()]),
        "race-desc-flags": seed(blk, [0], [(OP_RACE, 1, D + 16 + 12, VQ_NEXT | VQ_INDIRECT)]),
        # refusals while taking a chain
        "bad-loop": seed([(0, (buf(0), 8, VQ_NEXT, 1)), (1, (buf(8), 8, VQ_NEXT, 0))], [0],
                         [pop, pop, push()]),
        "bad-self-loop": seed([(4, (buf(0), 8, VQ_NEXT, 4))], [4], [pop]),
        "bad-longer-than-queue": seed(
            [(i, (buf(0x10 * i), 8, VQ_NEXT, (i + 1) % 8)) for i in range(8)], [0], [pop]),
        "bad-longer-than-limit": seed(every[:4] + [(3, (buf(0x30), 8, VQ_NEXT, 4)),
                                                   (4, (buf(0x40), 8, 0, 0))],
                                      [0], [pop], chain_max=4),
        "bad-next": seed([(0, (buf(0), 8, VQ_NEXT, 8))], [0], [pop]),
        "bad-head": seed([], [8], [pop]),
        "bad-head-held": seed([(1, (buf(0), 8, 0, 0))], [1, 1], [pop, pop]),
        "bad-avail-jump": seed([(0, (buf(0), 8, 0, 0))], [0], [pop], avail_idx=9),
        # one chain held by the device, eight more offered: nine out of eight
        "bad-avail-over-held": seed([(i, (buf(0x10 * i), 8, 0, 0)) for i in range(8)], [0],
                                    [pop, (OP_GUEST_WRITE, 0, A + 2, 9), pop]),
        "bad-avail-back": seed([(0, (buf(0), 8, 0, 0))], [0],
                               [pop, (OP_GUEST_WRITE, 0, A + 2, 0), pop]),
        "bad-outside-ram": seed([(0, (VQ_RAM - 0x1000, 16, 0, 0))], [0], [pop]),
        "bad-mmio-window": seed([(0, (0x10000000, 8, VQ_WRITE, 0))], [0], [pop]),
        "bad-straddles-end": seed([(0, (VQ_RAM + VQ_RAM_SIZE - 8, 16, VQ_WRITE, 0))], [0],
                                  [pop]),
        "bad-wraps-2-64": seed([(0, ((1 << 64) - 0x1000, VQ_RAM + 0x2000, 0, 0))], [0], [pop]),
        "bad-len-0": seed([(0, (buf(0), 16, VQ_NEXT, 1)), (1, (buf(16), 0, VQ_WRITE, 0))],
                          [0], [pop]),
        "bad-readable-after-writable": seed(
            [(0, (buf(0), 16, VQ_NEXT | VQ_WRITE, 1)), (1, (buf(16), 16, 0, 0))], [0], [pop]),
        "bad-indirect": seed([(0, (buf(0), 32, VQ_INDIRECT, 0))], [0], [pop]),
        "bad-push-not-held": seed([(0, (buf(0), 8, 0, 0))], [0],
                                  [(OP_PUSH, 0x80, 0, 0), pop, (OP_PUSH, 0x80, 3, 0), push()]),
        # refusals at QUEUE_READY
        "cfg-size-3": seed(qnum=3, ops=[pop]),
        "cfg-size-0": seed(qnum=0, ops=[pop]),
        "cfg-size-above-max": seed(qnum=32, log2max=4, ops=[pop]),
        "cfg-desc-misaligned": seed(rings=(D + 8, A, U), ops=[pop]),
        "cfg-avail-misaligned": seed(rings=(D, A + 1, U), ops=[pop]),
        "cfg-used-misaligned": seed(rings=(D, A, U + 2), ops=[pop]),
        "cfg-desc-outside-ram": seed(rings=(0x1000, VQ_RAM + A, VQ_RAM + U), offsets=False,
                                     ops=[pop]),
        "cfg-used-past-end": seed(rings=(D, A, VQ_RAM_SIZE - 4 - 8 * 8), ops=[pop]),
        "cfg-desc-wraps": seed(rings=((1 << 64) - 64, VQ_RAM + A, VQ_RAM + U), offsets=False,
                               ops=[pop]),
    }


# ---- vblk -------------------------------------------------------------------

VB_NOTIFY, VB_COMPLETE, VB_GUEST_WRITE, VB_REG_WRITE, VB_REG_READ, VB_REINIT, VB_COMPLETE_ALL = \
    range(7)


def vblk_seeds():
    """Descriptors at RAM offset 0, the available ring at 0x1000, the used
    ring at 0x1400 (tests/fuzz/fuzz_vblk.c); requests from 0x2000, each a
    header, its data and a status byte, in consecutive descriptors."""
    D, A = 0x000, 0x1000
    T_IN, T_OUT, T_FLUSH, T_GET_ID = 0, 1, 4, 8

    def seed(reqs, ops, seg_max=8, flags=0, room=4, qnum=16, capacity=64, image=0x3000):
        """reqs: [(type, sector, [(offset, len, writable), ...])]; the
        header goes at the first segment's offset when it is readable."""
        ram = bytearray(image)
        desc = 0
        heads = []
        for rtype, sector, segs in reqs:
            heads.append(desc)
            if segs and not segs[0][2] and segs[0][1] >= 16:
                struct.pack_into("<IIQ", ram, segs[0][0], rtype, 0, sector)
            for k, (off, ln, wr) in enumerate(segs):
                last = k + 1 == len(segs)
                struct.pack_into("<QIHH", ram, D + 16 * desc, VQ_RAM + off, ln,
                                 (0 if last else VQ_NEXT) | (VQ_WRITE if wr else 0),
                                 (desc + 1) % qnum)
                desc += 1
        for k, h in enumerate(heads):
            struct.pack_into("<H", ram, A + 4 + 2 * k, h)
        struct.pack_into("<HH", ram, A, 0, len(heads))
        hdr = struct.pack("<BBBBHHII", seg_max, flags, room, len(ops), qnum, 0, capacity, 0)
        assert len(hdr) == 16
        return hdr + b"".join(struct.pack("<BBHH", *o) for o in ops) + bytes(ram)

    notify = (VB_NOTIFY, 0, 0, 0)
    done = (VB_COMPLETE_ALL, 0, 0, 0)

    def rw(rtype, sector=1, n=1, at=0x2000, data_w=None):
        w = rtype == T_IN if data_w is None else data_w
        return (rtype, sector, [(at, 16, False), (at + 0x100, 512 * n, w), (at + 0x80, 1, True)])

    return {
        "read": seed([rw(T_IN)], [notify, done]),
        "write": seed([rw(T_OUT)], [notify, done]),
        "flush": seed([(T_FLUSH, 0, [(0x2000, 16, False), (0x2080, 1, True)])], [notify, done]),
        "get-id": seed([(T_GET_ID, 0, [(0x2000, 16, False), (0x2100, 20, True),
                                       (0x2080, 1, True)])], [notify]),
        "unsupported": seed([rw(11)], [notify]),
        "sync-backend": seed([rw(T_IN), rw(T_OUT, at=0x2800)], [notify], flags=2),
        "failing-backend": seed([rw(T_IN)], [notify], flags=4),
        "read-only-write": seed([rw(T_OUT)], [notify], flags=1),
        "last-sector": seed([rw(T_IN, sector=63)], [notify, done]),
        "past-end": seed([rw(T_IN, sector=63, n=2)], [notify]),
        "sector-wraps": seed([rw(T_IN, sector=(1 << 64) - 1)], [notify]),
        "not-whole-sectors": seed([(T_IN, 0, [(0x2000, 16, False), (0x2100, 500, True),
                                              (0x2080, 1, True)])], [notify]),
        "read-readable-data": seed([rw(T_IN, data_w=False)], [notify]),
        "write-writable-data": seed([rw(T_OUT, data_w=True)], [notify]),
        "short-header": seed([(T_IN, 0, [(0x2000, 8, False), (0x2100, 512, True),
                                         (0x2080, 1, True)])], [notify]),
        "split-header": seed([(T_IN, 0, [(0x2000, 8, False), (0x2008, 8, False),
                                         (0x2100, 513, True)])], [notify, done]),
        "no-status": seed([(T_OUT, 0, [(0x2000, 16, False), (0x2100, 512, False)])], [notify]),
        "over-seg-max": seed([(T_IN, 0, [(0x2000, 16, False), (0x2100, 512, True),
                                         (0x2400, 512, True), (0x2700, 513, True)])],
                             [notify], seg_max=2),
        "backend-full": seed([rw(T_IN, at=0x2000 + 0x300 * i) for i in range(3)],
                             [notify, (VB_COMPLETE, 0, 0, 0), (VB_COMPLETE, 1, 0, 0), done],
                             room=1, image=0x3000),
        "reset-mid-request": seed([rw(T_IN)], [notify, (VB_REG_WRITE, 0, 0x70, 0), done,
                                               (VB_REINIT, 0, 0, 0), notify]),
        # the new driver's request (the same chain, still available) must
        # wait until the old driver's, still at the backend, is done
        "reset-old-still-held": seed([rw(T_OUT)], [notify, (VB_REG_WRITE, 0, 0x70, 0),
                                                   (VB_REINIT, 0, 0, 0), notify,
                                                   (VB_COMPLETE, 0, 0, 0), done]),
        "queue-ready-zero": seed([rw(T_IN)], [notify, (VB_REG_WRITE, 0, 0x44, 0), done]),
        "guest-offers-later": seed([rw(T_IN)], [notify, done, (VB_GUEST_WRITE, 0, A + 4 + 2, 0),
                                                (VB_GUEST_WRITE, 0, A + 2, 2), notify, done]),
        "config-reads": seed([], [(VB_REG_READ, 3, 0x100, 0), (VB_REG_READ, 2, 0x10c, 0),
                                  (VB_REG_READ, 0, 0x114, 0), (VB_REG_READ, 2, 0x0, 0)]),
        "loop-fault": seed([(T_IN, 0, [(0x2000, 16, False)])],
                           [(VB_GUEST_WRITE, 0, D + 12, VQ_NEXT), (VB_GUEST_WRITE, 0, D + 14, 0), notify,
                            (VB_REG_WRITE, 0, 0x64, 3)]),
    }

# ---- vswitch ----------------------------------------------------------------

VS_ATTACH, VS_DETACH, VS_SEND, VS_RAW = range(4)
VS_BCAST, VS_MCAST, VS_GATEWAY, VS_ZERO = 4, 5, 6, 7


def vswitch_seeds():
    """Ports 0, 5, 10, 15, 20 are uplinks; VM port i has MAC ..:00:(i % 22),
    so ports 1 and 23 collide; port 19's MAC is multicast."""
    def attach(port, sw):
        return bytes([VS_ATTACH, port, sw])

    def detach(port):
        return bytes([VS_DETACH, port])

    def mac(port):              # a dst/src choice naming port's MAC (c % 8 == 0)
        return port * 8

    def send(port, dst, src, length=60):
        return bytes([VS_SEND, port, dst, src]) + struct.pack("<H", length)

    def raw(port, frame):
        return bytes([VS_RAW, port]) + struct.pack("<H", len(frame)) + frame

    lan = attach(1, 0) + attach(2, 0) + attach(3, 0) + attach(0, 0)
    dmz = attach(6, 1) + attach(7, 1) + attach(5, 1)
    both = lan + dmz
    assert all(mac(p) % 8 < 4 and mac(p) // 8 % 24 == p for p in (1, 2, 3, 6, 7))
    return {
        "unicast": both + send(1, mac(2), mac(1)),
        "unicast-from-uplink": both + send(0, mac(3), VS_GATEWAY),
        "broadcast": both + send(1, VS_BCAST, mac(1)),
        "multicast": both + send(2, VS_MCAST, mac(2)),
        "broadcast-from-uplink": both + send(0, VS_BCAST, VS_GATEWAY),
        "unknown-unicast": both + send(1, VS_GATEWAY, mac(1)),
        "unknown-unicast-from-uplink": both + send(0, VS_GATEWAY, VS_GATEWAY),
        "no-uplink": attach(1, 0) + attach(2, 0) + send(1, VS_GATEWAY, mac(1)),
        "cross-switch": both + send(1, mac(6), mac(1)) + send(6, mac(1), mac(6)),
        "spoof": both + send(1, mac(2), mac(2)) + send(1, VS_BCAST, mac(3)),
        "uplink-multicast-source": both + send(0, mac(1), VS_BCAST),
        "to-self": both + send(1, mac(1), mac(1)),
        "short": both + send(1, mac(2), mac(1), 13) + send(1, mac(2), mac(1), 14),
        "long": both + send(1, mac(2), mac(1), 1514) + send(1, mac(2), mac(1), 1515),
        "detached": both + detach(2) + send(1, mac(2), mac(1)) + send(2, mac(1), mac(2)),
        "reattach-elsewhere": both + detach(2) + attach(2, 1) + send(1, VS_BCAST, mac(1))
                              + send(2, mac(6), mac(2)),
        "mac-collision": attach(1, 0) + attach(23, 0) + attach(23, 1) + send(23, mac(1), mac(1)),
        "second-uplink": attach(0, 0) + attach(5, 0) + attach(5, 1),
        "bad-mac": attach(19, 0) + attach(19, 1),
        "attach-twice": attach(1, 0) + attach(1, 0) + attach(1, 1),
        "full-switch": b"".join(attach(p, 2) for p in range(24)) + send(1, VS_BCAST, mac(1)),
        "raw-frame": both + raw(1, bytes.fromhex("525400000002525400000001") + b"\x08\x00"
                                + bytes(46)),
        "raw-zero-dst": both + raw(1, bytes(6) + bytes.fromhex("525400000001") + bytes(50)),
    }


# ---- vnet -------------------------------------------------------------------

VN_TX, VN_RX, VN_GUEST_WRITE, VN_REG_WRITE, VN_REG_READ, VN_REINIT, VN_DETACH, VN_PAUSE = range(8)


def vnet_seeds():
    """Receive queue at RAM offsets 0 / 0x1000 / 0x1400, transmit queue at
    0x2000 / 0x3000 / 0x3400 (tests/fuzz/fuzz_vnet.c); buffers between the
    rings of 16-entry queues, from 0x400 (3 KiB) and 0x2400."""
    RX, TX = (0x0000, 0x1000), (0x2000, 0x3000)

    def seed(rx=(), tx=(), ops=(), qnum=(16, 16), image=0x4000):
        """rx: [[(offset, len, writable)...] per chain]; tx: [(header flags,
        gso, frame len, [(offset, len)...])]"""
        ram = bytearray(image)
        for (desc, avail), chains in ((RX, rx), (TX, [c[3] for c in tx])):
            d = 0
            heads = []
            for segs in chains:
                heads.append(d)
                for k, seg in enumerate(segs):
                    off, ln = seg[0], seg[1]
                    wr = seg[2] if len(seg) > 2 else False
                    last = k + 1 == len(segs)
                    struct.pack_into("<QIHH", ram, desc + 16 * d, VQ_RAM + off, ln,
                                     (0 if last else VQ_NEXT) | (VQ_WRITE if wr else 0), d + 1)
                    d += 1
            for k, h in enumerate(heads):
                struct.pack_into("<H", ram, avail + 4 + 2 * k, h)
            struct.pack_into("<HH", ram, avail, 0, len(heads))
        for flags, gso, flen, segs in tx:
            off = segs[0][0]
            ram[off] = flags
            ram[off + 1] = gso
            for i in range(flen):
                pos = off + 12 + i
                if pos < image:
                    ram[pos] = (i * 7) & 0xff
        hdr = struct.pack("<HHB3x", qnum[0], qnum[1], len(ops))
        assert len(hdr) == 8
        return hdr + b"".join(struct.pack("<BBHH", *o) for o in ops) + bytes(ram)

    B = 0x400

    def rxbuf(at=B, ln=1526):
        return [(at, ln, True)]

    tx = (VN_TX, 1, 0, 0)

    def rx(n=60, pat=0x11):
        return (VN_RX, 0, n, pat)

    return {
        "tx-frame": seed(tx=[(0, 0, 60, [(B, 72)])], ops=[tx]),
        "tx-two-buffers": seed(tx=[(0, 0, 60, [(B, 12), (B + 0x40, 60)])], ops=[tx]),
        "tx-offload-flags": seed(tx=[(1, 0, 60, [(B, 72)])], ops=[tx]),
        "tx-offload-gso": seed(tx=[(0, 4, 60, [(B, 72)])], ops=[tx]),
        "tx-too-short": seed(tx=[(0, 0, 13, [(B, 25)])], ops=[tx]),
        "tx-too-long": seed(tx=[(0, 0, 1515, [(B, 1527)])], ops=[tx]),
        "tx-longest": seed(tx=[(0, 0, 1514, [(B, 12), (0x2400, 1514)])], ops=[tx]),
        "tx-writable": seed(tx=[(0, 0, 60, [(B, 72), (B + 0x80, 64, True)])], ops=[tx]),
        "tx-detached": seed(tx=[(0, 0, 60, [(B, 72)])], ops=[(VN_DETACH, 0, 0, 0), tx]),
        "rx-frame": seed(rx=[rxbuf()], ops=[rx()]),
        "rx-split-buffer": seed(rx=[[(B, 12, True), (B + 0x20, 64, True)]], ops=[rx(60)]),
        "rx-max-frame": seed(rx=[rxbuf()], ops=[rx(1514)]),
        "rx-bad-lengths": seed(rx=[rxbuf(), rxbuf()], ops=[rx(13), rx(1515), rx(14)]),
        "rx-no-buffer": seed(ops=[rx()]),
        "rx-too-small": seed(rx=[rxbuf(ln=40)], ops=[rx(60)]),
        "rx-readable": seed(rx=[[(B, 16, False), (B + 0x20, 1526, True)]], ops=[rx()]),
        "rx-paused": seed(rx=[rxbuf()], ops=[(VN_PAUSE, 1, 0, 0), rx(), (VN_PAUSE, 0, 0, 0),
                                             rx()]),
        "rx-after-detach": seed(rx=[rxbuf()], ops=[(VN_DETACH, 0, 0, 0), rx()]),
        "reset-and-again": seed(rx=[rxbuf()], tx=[(0, 0, 60, [(0x2400, 72)])],
                                ops=[rx(), (VN_REINIT, 0, 0, 0), tx, rx()]),
        "rx-queue-fault": seed(rx=[[(0x4000 - 8, 16, True)]], ops=[rx()]),
        "config-reads": seed(ops=[(VN_REG_READ, 0, 0x100, 0), (VN_REG_READ, 1, 0x106, 0),
                                  (VN_REG_READ, 2, 0x104, 0), (VN_REG_READ, 2, 0x08, 0)]),
        "queue-ready-zero": seed(tx=[(0, 0, 60, [(B, 72)])],
                                 ops=[(VN_REG_WRITE, 0, 0x30, 1), (VN_REG_WRITE, 0, 0x44, 0), tx]),
    }


TARGETS = {"insn": insn_seeds, "mgmt": mgmt_seeds, "mig_recv": mig_seeds,
           "fdt_guest": fdt_guest_seeds, "fdt_host": fdt_host_seeds,
           "virtq": virtq_seeds, "hostio": hostio_seeds, "vblk": vblk_seeds,
           "vswitch": vswitch_seeds, "vnet": vnet_seeds}


def main():
    for target in sys.argv[1:] or TARGETS:
        outdir = CORPUS / target
        outdir.mkdir(parents=True, exist_ok=True)
        for name, data in TARGETS[target]().items():
            (outdir / name).write_bytes(data)
            print(f"{target:10} {name:24} {len(data):6} bytes")


if __name__ == "__main__":
    main()
