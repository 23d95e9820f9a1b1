#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of the snapshot-restore fuzz target
(tests/fuzz/corpus/snap_load/): small valid snapshot streams of a tiny VM
(8 MiB RAM, 1-2 vCPUs, a few memory runs, every CRC right; format version 4,
the same seeds in version 3 (v3-*) and version 2 (named v2-*: the reader of
older versions, which reads their one VCPU record into the records by name)
and version 1 streams, which a restore reads too; version 4 streams with a
disk and a NIC (vio-*: VIRTIO sections, the rings in a memory run with a
request made available and not yet taken) and some damaged
ones, each behind the 8-byte harness header tests/fuzz/fuzz_snap_load.c reads
(flags, announced-length delta, six chunk sizes); seeds named *.snap are
plain snapshot files, which the harness also takes. Seeds named fixcrc-* have
the harness set every CRC right before the restore reads the stream, so the
fuzzer's changes to them reach the field checks.

The layouts, the device list and the CRC come from the carapace package (the
reference reader), so the seeds follow the format it checks; every seed meant
to be valid is verified with it before it is written.

    /usr/bin/python3 tests/fuzz/make_seeds.py [OUTDIR]

Deterministic: running it again writes the same bytes.
"""

import functools
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fuzz" / "corpus" / "snap_load"


sys.path.insert(0, str(ROOT / "tools"))       # run as a script: the carapace package
from carapace import snapshot  # noqa: E402
from carapace import snapshot_format as snap  # noqa: E402
from carapace.crc32c import crc32c  # noqa: E402

RAM_BASE = 0x80000000
MiB = 1 << 20
TIMEBASE = 10000000            # the harness's timebase_hz
FEAT_ALL = 0x1F                # what a VM with CFI gets on the harness's host
FEAT_NO_CFI = 0x1C             # cfi=off: Sstc, Svpbmt, Svadu
SSTATUS_SPIE, SSTATUS_SPP, SSTATUS_FS_DIRTY, SSTATUS_SPELP = 1 << 5, 1 << 8, 3 << 13, 1 << 23
HVIP_VSSIP, HVIP_VSTIP, HVIP_VSEIP = 1 << 2, 1 << 6, 1 << 10

# harness header (tests/fuzz/fuzz_snap_load.c)
FL_NAME, FL_NO_SVADU, FL_NO_ZICFISS, FL_FIX_CRC = 0x01, 0x02, 0x04, 0x08
WHOLE = (0, 0, 0, 0, 0, 0)


DBTR_EXEC = (6 << 60) | (1 << 2) | (1 << 3) | (1 << 4)     # mcontrol6: execute in U and S


def dbtr_over(**more):
    """A vCPU's DBTR record: shared memory and one execute trigger."""
    over = {"dbtr_shmem": RAM_BASE + 0x2000, "dbtr_shmem_on": 1,
            "dbtr_state": [0b111] + [0] * 7, "dbtr_tdata1": [DBTR_EXEC] + [0] * 7,
            "dbtr_tdata2": [RAM_BASE + 0x1234] + [0] * 7}
    over.update(more)
    return over


def harness(stream, flags=0, delta=0, sizes=WHOLE):
    assert len(sizes) == 6
    return struct.pack("<Bb6B", flags, delta, *sizes) + stream


def section(stype, instance, payload, crc=None):
    hdr = snap.SECTION.encode({"type": stype, "instance": instance, "length": len(payload),
                               "crc32c": crc32c(payload) if crc is None else crc})
    return hdr + payload


def page(seed):
    """A page that is not all zero but mostly is (small in git): a few words."""
    buf = bytearray(snap.PAGE_SIZE)
    for i in range(8):
        struct.pack_into("<Q", buf, (seed * 64 + i * 520) % (snap.PAGE_SIZE - 8),
                         (0x9E3779B97F4A7C15 * (seed + i + 1)) & (2 ** 64 - 1))
    return bytes(buf)


def vcpu_layout(version):
    """The VCPU payload's layout in a @version stream (a version 1 record is
    the first VCPU_V1_SIZE bytes of the version 2 one)."""
    return snap.VCPU if version >= 3 else snap.VCPU_V2


def vcpu_record(i, cfi=True, version=snap.VERSION):
    v = {"gpr": [0] + [0x1000 * (i + 1) + r for r in range(1, 32)],
         "pc": RAM_BASE + 0x200000 + 0x40 * i,
         "sstatus": SSTATUS_SPP | SSTATUS_SPIE | SSTATUS_FS_DIRTY | (SSTATUS_SPELP if cfi else 0),
         "vsstatus": 2 << 32, "vsie": 0x222, "vstvec": 0xffffffff80001000,
         "vsscratch": 0xffffffff80a00000 + i, "vsepc": 0xffffffff80002000,
         "vscause": 8, "vstval": 0, "vsatp": (8 << 60) | 0x80400,
         "vstimecmp": 123456789 + i, "hvip": HVIP_VSSIP if i else HVIP_VSTIP | HVIP_VSEIP,
         "scounteren": 7, "senvcfg": 0xC if cfi else 0, "ssp": 0x80400ff8 if cfi else 0,
         "f": [0x3FF0000000000000 + k for k in range(32)], "fcsr": 0x20,
         "hsm_state": 1 if i == 0 else 2, "waiting": 0 if i == 0 else 1,
         "resume_nonret": 0, "resume_addr": 0, "resume_opaque": 0,
         # version 2: FWFT memory features (both feature sets have Svadu), no STA, no PMU
         "misaligned_locked": 1, "pte_ad_value": 1, "pte_ad_locked": i & 1,
         "sta_shmem": snap.STA_OFF}
    if cfi:
        v.update(lp_value=1, lp_locked=1, ss_value=1, ss_locked=0)
    if version >= 3:                # each record behind its {id, size}
        for rid, _, name, layout in snap.RECORDS:
            v[f"{name}_rec_id"], v[f"{name}_rec_size"] = rid, layout.size
    return vcpu_layout(version).encode(v)


def device_state(name, nr_vcpus, queued=b""):
    if name == "uart16550":
        rx = bytearray(snap.UART_RX_FIFO)
        tail = 250                                  # the queue wraps the ring
        for k, b in enumerate(queued):
            rx[(tail + k) % snap.UART_RX_FIFO] = b
        return snap.UART.encode({"ier": 0x03, "lcr": 0x03, "mcr": 0x0B, "scr": 0x5A,
                                 "fcr": 0xC1, "dll": 1, "dlm": 0, "thre_pending": 1,
                                 "irq_level": 1, "rx_head": tail + len(queued),
                                 "rx_tail": tail, "rx": bytes(rx)})
    if name == "plic":
        prio = [0] + [(s % 7) + 1 for s in range(1, 32)]
        enable = [0x00000C00 if c < nr_vcpus else 0 for c in range(8)]
        threshold = [c % 2 if c < nr_vcpus else 0 for c in range(8)]
        return snap.PLIC.encode({"priority": prio, "level": 1 << 10, "pending": 1 << 10,
                                 "claimed": 1 << 11, "enable": enable,
                                 "threshold": threshold})
    if name == "vmgenid":
        return snap.VMGENID.encode({"id": bytes(range(16)), "level": 1})
    if name == "aplic":             # a PLIC VM's (version 7): all zero
        return bytes(snap.APLIC.size)
    raise SystemExit(f"make_seeds.py: no state for device {name!r}: add one")


# The disk and NIC of the vio-* seeds: their rings and a read request in RAM
# (tests/unit/test_snap_vio.c has the same layout), what the stub host
# (tests/fuzz/fuzz_restore_host.h) offers: a disk at PCI 2 of 16384 sectors,
# a switch "lan" on which 52:54:00:12:34:56 is taken.
VIO_QSIZE = 16
VIO_RING = 0x10000            # RAM offset of the disk's descriptor table
VIO_DONE = 5                  # chains the disk had returned
VIO_DISK_PCI, VIO_DISK_RO_PCI, VIO_SECTORS = 2, 3, 16384
VIO_TAKEN_MAC = bytes([0x52, 0x54, 0x00, 0x12, 0x34, 0x56])
VIO_STATUS_UP = 0x0F          # ACKNOWLEDGE DRIVER DRIVER_OK FEATURES_OK


def stub_disk_id(sectors, changed=None):
    """A DISK_ID payload for a stub host disk of @sectors (format version 6):
    block b of both stub disks reads all FUZZ_DISK_BYTE(b) = b * 7 + 1
    (tests/fuzz/fuzz_restore_host.h); block @changed as the guest left it
    after the snapshot (0xee), so the restore refuses it."""
    crcs = []
    for b in snap.disk_id_blocks(sectors):
        n = min(snap.DISK_BLOCK_SECTORS, sectors - b * snap.DISK_BLOCK_SECTORS)
        byte = 0xEE if b == changed else (b * 7 + 1) & 0xFF
        crcs.append(crc32c(bytes([byte]) * (n * snap.DISK_SECTOR)))
    return snap.disk_id_payload(sectors, crcs)


def vio_blk(**over):
    q = [0, 0]
    base = RAM_BASE + VIO_RING
    values = {
        "device_features": snap.VIO_OFFER["virtio_blk"],
        "driver_features": snap.VIO_F_VERSION_1 | (1 << 9), "status": VIO_STATUS_UP,
        "interrupt_status": 1, "config_generation": 3,
        "q_desc": [base, 0], "q_avail": [base + 0x1000, 0], "q_used": [base + 0x2000, 0],
        "q_ready": [1, 0], "q_fault": q, "q_size": [VIO_QSIZE, 0],
        "q_next_avail": [VIO_DONE, 0], "q_next_used": [VIO_DONE, 0],
        "capacity": VIO_SECTORS, "requests": VIO_DONE, "bytes": VIO_DONE * 512, "seg_max": 8,
        "pci_dev": VIO_DISK_PCI, "serial": b"alpha-vda"}
    values.update(over)
    return snap.VIO_MODELS["virtio_blk"][1].encode(values)


def vio_net(**over):
    base = RAM_BASE + 0x20000
    values = {
        "device_features": snap.VIO_OFFER["virtio_net"],
        "driver_features": snap.VIO_OFFER["virtio_net"], "status": VIO_STATUS_UP,
        "q_desc": [base, base + 0x4000], "q_avail": [base + 0x1000, base + 0x5000],
        "q_used": [base + 0x2000, base + 0x6000], "q_ready": [1, 1],
        "q_size": [VIO_QSIZE, VIO_QSIZE], "tx_requests": 11, "port_tx_frames": 11,
        "link": 1, "mac": list(bytes([0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc])),
        "switch_name": b"lan"}
    values.update(over)
    return snap.VIO_MODELS["virtio_net"][1].encode(values)


def vio_ring_run():
    """(RAM offset, pages, bytes): the disk's rings with a 6th chain made
    available (a read of sector 2), not taken: a restore's rescan takes it."""
    pages = bytearray(5 * 4096)
    desc = struct.pack("<QIHH", RAM_BASE + 0x13000, 16, 1, 1)
    desc += struct.pack("<QIHH", RAM_BASE + 0x14000, 512, 3, 2)
    desc += struct.pack("<QIHH", RAM_BASE + 0x13800, 1, 2, 0)
    pages[0:len(desc)] = desc
    struct.pack_into("<HH", pages, 0x1000, 0, VIO_DONE + 1)            # avail flags, idx
    struct.pack_into("<H", pages, 0x1004 + 2 * VIO_DONE, 0)             # ring[5]: head 0
    struct.pack_into("<HH", pages, 0x2000, 0, VIO_DONE)                 # used flags, idx
    struct.pack_into("<IIQ", pages, 0x3000, 0, 0, 2)                    # IN, sector 2
    pages[0x3800] = 0xff
    return VIO_RING, 5, bytes(pages)


def override(layout, raw, fields):
    """@raw with some fields of @layout set to other values."""
    values = layout.decode(raw)
    values.update(fields)
    return layout.encode(values)


def stream(name="alpha", nr_vcpus=1, ram=8 * MiB, runs=((0x200000, 1),), cfi=True,
           live=False, queued=b"hi\n", timebase=TIMEBASE, features=None, vcpu_over=None,
           dev_over=None, end_over=None, version=snap.VERSION, vcpu_version=None,
           config_over=None, vio=(), ring=False, disks=None, disk_flag=None, disk_ids=None):
    """A valid stream (unless an override makes a field wrong: the CRCs stay
    right, so the field checks see it); @runs: (offset in RAM, pages).
    @version: the header's; the VCPU records are of @vcpu_version (default the
    same: a version 1 record is the first VCPU_V1_SIZE bytes). @vio: (model,
    state) of each VIRTIO section, slots 0, 1, ...; @ring: the disk's rings
    (vio_ring_run()) as the first run. @disks: (slot, sector, bytes) of each
    DISK section (version 5), after the memory; @disk_flag: the header's flag
    DISKS (default: set when @disks is given). @disk_ids: (slot, payload) of
    each DISK_ID section after the VIRTIO ones; default in a version 6 stream
    without DISKS, each disk's as the stub host's disks read
    (stub_disk_id())."""
    if disk_flag is None:
        disk_flag = disks is not None
    out = [snap.HEADER.encode({"magic": snap.MAGIC, "version": version, "header_size": 32,
                               "flags": (snap.F_LIVE if live else 0) |
                                        (snap.F_DISKS if disk_flag else 0)})]
    config = snap.CONFIG.encode({
        "name": name.encode(), "ram_gpa": RAM_BASE, "ram_size": ram, "nr_vcpus": nr_vcpus,
        "cfi_policy": 0 if cfi else 3,
        "features": (FEAT_ALL if cfi else FEAT_NO_CFI) if features is None else features,
        "boot_count": 1, "debug_ext": 1 if nr_vcpus > 1 else 0,
        "guest_time": 987654321, "timebase_hz": timebase,
        "kernel_image": b"linux.image", "initrd_image": b"rootfs.cpio.gz" if cfi else b"",
        "bootargs": b"console=ttyS0 quiet"})
    if config_over:
        config = override(snap.CONFIG, config, config_over)
    out.append(section(snap.SEC_CONFIG, 0, config))
    rec_version = vcpu_version or version
    for i in range(nr_vcpus):
        rec = vcpu_record(i, cfi, rec_version)
        if vcpu_over and i == nr_vcpus - 1:
            rec = override(vcpu_layout(rec_version), rec, vcpu_over)
        rec = rec[:snap.vcpu_size(rec_version)]
        out.append(section(snap.SEC_VCPU, i, rec))
    for idx, (dname, layout) in enumerate(snap.devices_of(version)):
        state = device_state(dname, nr_vcpus, queued)
        assert len(state) == layout.size
        if dev_over and dname in dev_over:
            state = override(layout, state, dev_over[dname])
        dev = snap.DEVICE.encode({"name": dname.encode(), "state_size": layout.size})
        out.append(section(snap.SEC_DEVICE, idx, dev + state))
    for slot, (model, state) in enumerate(vio):
        dev = snap.DEVICE.encode({"name": model.encode(), "state_size": len(state)})
        out.append(section(snap.SEC_VIRTIO, slot, dev + state))
    if disk_ids is None:
        disk_ids = [(slot, stub_disk_id(snap.VIO_MODELS[model][1].decode(state)["capacity"]))
                    for slot, (model, state) in enumerate(vio) if model == "virtio_blk"] \
            if version >= snap.VERSION_DISK_ID and not disk_flag else []
    for slot, payload in disk_ids:
        out.append(section(snap.SEC_DISK_ID, slot, payload))
    pages = 0
    if ring:
        off, n, body = vio_ring_run()
        out.append(section(snap.SEC_MEMORY, 0,
                           snap.MEMRUN.encode({"gpa": RAM_BASE + off, "pages": n}) + body))
        pages += n
    for k, (off, n) in enumerate(runs):
        body = snap.MEMRUN.encode({"gpa": RAM_BASE + off, "pages": n})
        body += b"".join(page(k * 16 + p) for p in range(n))
        out.append(section(snap.SEC_MEMORY, 0, body))
        pages += n
    for slot, sector, data in disks or ():
        run = snap.DISKRUN.encode({"sector": sector, "sectors": len(data) // snap.DISK_SECTOR})
        out.append(section(snap.SEC_DISK, slot, run + data))
    nsec = len(out) - 1
    end = {"sections": nsec, "memory_pages": pages}
    end.update(end_over or {})
    out.append(section(snap.SEC_END, 0, snap.END.encode(end)))
    return b"".join(out)


def offset_of(data, stype, instance=0, nth=0):
    """Stream offset of the nth section header of @stype/@instance."""
    off, seen = 32, 0
    while off < len(data):
        hdr = snap.SECTION.decode(data, off)
        if hdr["type"] == stype and hdr["instance"] == instance:
            if seen == nth:
                return off
            seen += 1
        off += snap.SECTION.size + hdr["length"]
    raise KeyError((stype, instance, nth))


def flip(data, at, xor=0x01):
    b = bytearray(data)
    b[at] ^= xor
    return bytes(b)


def seeds():
    """(file name, bytes, valid?) of every seed (None: valid once the harness
    has set its CRCs right): those of the version written, those of version 2
    named v2-*, and those only one version has."""
    out = versioned_seeds(snap.VERSION)
    out += [("v3-" + name, data, valid) for name, data, valid in versioned_seeds(3)]
    out += [("v2-" + name, data, valid) for name, data, valid in versioned_seeds(2)]
    out += vio_seeds()
    old = stream(name="old-1", nr_vcpus=2, version=1, runs=((0x0, 1), (0x3000, 2)))
    out += [
        # valid: a version 1 stream (672-byte VCPU records), whole and split
        ("valid-v1-2vcpu.snap", old, True),
        ("valid-v1-2vcpu-split", harness(old, sizes=(5, 200, 1, 255, 167, 3)), True),
        # the VCPU length follows the header's version, whatever the body holds
        ("bad-v1-header-v2-vcpu", harness(stream(name="mix", version=1, vcpu_version=2,
                                                 runs=())), False),
        ("bad-v2-header-v1-vcpu", harness(stream(name="mix", version=2, vcpu_version=1,
                                                 runs=())), False),
        ("bad-v3-header-v2-vcpu", harness(stream(name="mix", version=3, vcpu_version=2,
                                                 runs=())), False),
        ("bad-v2-header-v3-vcpu", harness(stream(name="mix", version=2, vcpu_version=3,
                                                 runs=())), False),
        # CONFIG's vs_sv is a reserved field in version 1
        ("bad-v1-config-vs-sv", harness(stream(name="old", version=1, runs=(),
                                               config_over={"vs_sv": 57})), False),
        # the version 2 record's reserved fields have no place in the records
        ("bad-vcpu-reserved3", harness(stream(version=2, vcpu_over={"reserved3": [0, 1]},
                                              runs=())), False),
        # version 3: the records in id order, each of its own size
        ("bad-v3-record-order", harness(stream(vcpu_over={"fp_rec_id": 3}, runs=())), False),
        ("fixcrc-bad-v3-record-size", harness(stream(vcpu_over={"pmu_rec_size": 8}, runs=()),
                                              flags=FL_FIX_CRC), False),
        # version 8: a vCPU that set FWFT MISALIGNED_EXC_DELEG to 0 (and locked it);
        # only 0 or 1 there, and before version 8 the byte is reserved (0: delegated)
        ("valid-misaligned-emulate", harness(stream(vcpu_over={"misaligned_emulate": 1},
                                                    runs=())), True),
        ("bad-misaligned-emulate-2", harness(stream(vcpu_over={"misaligned_emulate": 2},
                                                    runs=())), False),
        ("valid-v7-1vcpu", harness(stream(version=7, runs=())), True),
        ("bad-v7-misaligned-emulate", harness(stream(version=7, runs=(),
                                                     vcpu_over={"misaligned_emulate": 1})),
         False),
        # version 8: SBI DBTR shared memory and triggers (the harness's host
        # has 4: a trigger at 4..7 is valid as a format, no-feature there)
        ("valid-dbtr", harness(stream(vcpu_over=dbtr_over(), runs=())), True),
        ("valid-dbtr-trigger-7", harness(stream(vcpu_over=dbtr_over(
            dbtr_state=[0b111] + [0] * 6 + [0b101],
            dbtr_tdata1=[DBTR_EXEC] + [0] * 6 + [DBTR_EXEC]), runs=())), True),
        ("bad-dbtr-tdata1-m", harness(stream(vcpu_over=dbtr_over(
            dbtr_tdata1=[DBTR_EXEC | 1 << 6] + [0] * 7), runs=())), False),
        ("bad-dbtr-free-trigger", harness(stream(vcpu_over=dbtr_over(
            dbtr_tdata2=[0, 5] + [0] * 6), runs=())), False),
        ("bad-dbtr-shmem-outside-ram", harness(stream(vcpu_over=dbtr_over(
            dbtr_shmem=RAM_BASE - 32), runs=())), False),
        ("bad-dbtr-state", harness(stream(vcpu_over=dbtr_over(
            dbtr_state=[0b110] + [0] * 7), runs=())), False),
    ]
    return out


def vio_seeds():
    """Version 4 streams of a VM with a disk and a NIC (docs/snapshot-format.md,
    "VIRTIO")."""
    blk, net = ("virtio_blk", vio_blk()), ("virtio_net", vio_net())
    runs = ((0x400000, 1),)          # after the ring run
    vs = functools.partial(stream, name="alpha", runs=runs, ring=True)
    return [
        ("vio-valid-blk-net", harness(vs(vio=(blk, net))), True),
        ("vio-valid-blk-net-split", harness(vs(vio=(blk, net)), sizes=(7, 130, 1, 255, 0, 3)),
         True),
        ("vio-valid-net-only.snap", vs(vio=(net,), ring=False), True),
        ("vio-valid-copy-beside", harness(vs(vio=(("virtio_net", vio_net(
            mac=list(VIO_TAKEN_MAC))),)), flags=FL_NAME), True),
        ("vio-valid-ro-disk", harness(vs(vio=(("virtio_blk", vio_blk(
            read_only=1, pci_dev=VIO_DISK_RO_PCI,
            device_features=snap.VIO_OFFER["virtio_blk"] | snap.VIO_BLK_F_RO)),))), True),
        ("vio-fixcrc-blk-net", harness(vs(vio=(blk, net)), flags=FL_FIX_CRC), True),
        # this host cannot give it: valid as a format
        ("vio-host-no-disk", harness(vs(vio=(("virtio_blk", vio_blk(pci_dev=9)),))), True),
        ("vio-host-disk-size", harness(vs(vio=(("virtio_blk", vio_blk(capacity=8)),))), True),
        ("vio-host-no-switch", harness(vs(vio=(("virtio_net", vio_net(
            switch_name=b"dmz")),))), True),
        # a guest could never have left these
        ("vio-fixcrc-bad-q-size", harness(vs(vio=(("virtio_blk", vio_blk(q_size=[12, 0])),)),
                                          flags=FL_FIX_CRC), False),
        ("vio-fixcrc-bad-q-desc", harness(vs(vio=(("virtio_blk", vio_blk(
            q_desc=[RAM_BASE + 8 * MiB - 16, 0])),)), flags=FL_FIX_CRC), False),
        ("vio-fixcrc-bad-in-flight", harness(vs(vio=(("virtio_blk", vio_blk(
            q_next_used=[VIO_DONE - 1, 0])),)), flags=FL_FIX_CRC), False),
        ("vio-fixcrc-bad-features", harness(vs(vio=(("virtio_net", vio_net(
            driver_features=snap.VIO_OFFER["virtio_net"] | 1)),)), flags=FL_FIX_CRC), False),
        ("vio-fixcrc-bad-status", harness(vs(vio=(("virtio_net", vio_net(status=0x05)),)),
                                          flags=FL_FIX_CRC), False),
        ("vio-bad-order", harness(vs(vio=(net, blk))), False),
        ("vio-bad-in-v3", harness(stream(name="alpha", version=3, runs=(), vio=(net,))), False),
        # version 5: no disk identity, restored without the check
        ("vio-valid-v5-blk-net", harness(vs(vio=(blk, net), version=5)), True),
    ] + disk_id_seeds()


def disk_id_seeds():
    """Version 6 streams without the disks' content: each disk's identity
    (DISK_ID, docs/snapshot-format.md), checked against the stub host's disk."""
    blk, net = ("virtio_blk", vio_blk()), ("virtio_net", vio_net())
    ro = ("virtio_blk", vio_blk(read_only=1, pci_dev=VIO_DISK_RO_PCI,
                                device_features=snap.VIO_OFFER["virtio_blk"] | snap.VIO_BLK_F_RO))
    vs = functools.partial(stream, name="alpha", runs=((0x400000, 1),), ring=True)
    good = stub_disk_id(VIO_SECTORS)
    bad_block = bytearray(good)
    struct.pack_into("<Q", bad_block, snap.DISKID.offset("sample") + 3 * 16, 7)
    return [
        ("diskid-valid-two-disks", harness(vs(vio=(blk, ro, net))), True),
        ("diskid-valid-split", harness(vs(vio=(blk, net)), sizes=(60, 200, 1, 255, 0, 9)), True),
        # another image of the size: valid as a format, refused no-device
        ("diskid-host-changed-block", harness(vs(vio=(blk, net), disk_ids=(
            (0, stub_disk_id(VIO_SECTORS, changed=42)),))), True),
        ("diskid-fixcrc-valid", harness(vs(vio=(blk, ro, net)), flags=FL_FIX_CRC), True),
        ("diskid-bad-missing", harness(vs(vio=(blk, net), disk_ids=())), False),
        ("diskid-bad-second-missing", harness(vs(vio=(blk, ro, net), disk_ids=((0, good),))),
         False),
        ("diskid-fixcrc-bad-block", harness(vs(vio=(blk, net), disk_ids=((0, bytes(bad_block)),)),
                                            flags=FL_FIX_CRC), False),
        ("diskid-bad-in-v5", harness(vs(vio=(blk, net), version=5, disk_ids=((0, good),))),
         False),
        ("diskid-bad-with-disks", harness(vs(vio=(blk, net), disks=(), disk_ids=((0, good),))),
         False),
    ]


def versioned_seeds(version):
    """The seeds of streams of @version (2 or 3), named without it."""
    vstream = functools.partial(stream, version=version)
    one = vstream()
    two = vstream(name="beta-2", nr_vcpus=2,
                  runs=((0x0, 1), (0x1000, 1), (0x400000, 1)))   # adjacent runs, a gap
    plain_off = vstream(name="gamma_0", cfi=False, live=True, runs=(), queued=b"")
    out = [
        # valid, the way a file is read: one piece per request
        ("valid-1vcpu.snap", one, True),
        ("valid-2vcpu-3runs", harness(two), True),
        # valid, split at odd places; 255 is "nothing yet"
        ("valid-2vcpu-split", harness(two, sizes=(1, 7, 255, 13, 130, 0)), True),
        ("valid-1vcpu-bytewise", harness(one, sizes=(1, 1, 1, 1, 1, 255)), True),
        # valid: cfi=off, live, no memory at all, empty UART queue, restored as "copy"
        ("valid-nocfi-live-rename", harness(plain_off, flags=FL_NAME, sizes=(24, 0, 3, 0, 0, 0)),
         True),
        # valid, with a UART queue that fills the ring
        # runs on the first and the last page of RAM (the harness has RAM end
        # where its heap block ends, so one byte too far is an ASan report)
        ("valid-ram-edges", harness(vstream(name="edge", runs=((0x0, 1), (8 * MiB - 4096, 1))),
                                    flags=FL_FIX_CRC, sizes=(0, 100, 0, 0, 0, 0)), True),
        ("valid-64mib-edges", harness(vstream(name="cap", ram=64 * MiB,
                                             runs=((0x0, 1), (64 * MiB - 4096, 1))),
                                      flags=FL_FIX_CRC), True),
        ("valid-uart-full", harness(vstream(name="delta", queued=bytes(range(256)), runs=()),
                                    sizes=(200, 100, 0, 0, 0, 0)), True),
        # valid: a vCPU in a system suspend (SBI SUSP), PTE A/D updating off
        ("valid-system-suspend", harness(vstream(
            name="susp", nr_vcpus=2, runs=(),
            vcpu_over={"hsm_state": 2, "waiting": 0, "resume_nonret": 1,
                       "resume_addr": RAM_BASE + 0x200000, "resume_opaque": 5,
                       "system_suspend": 1, "pte_ad_value": 0})), True),
        # valid: SBI STA shared memory and PMU counters (cycle, instret, a firmware
        # counter on IPI_SENT; two of them started)
        ("valid-sta-pmu", harness(vstream(
            name="perf", runs=((0x1000, 1),),
            vcpu_over={"sta_shmem": RAM_BASE + 0x1040, "pmu_configured": 0b1101,
                       "pmu_started": 0b1001,
                       "pmu_event_idx": [0x1, 0, 0x2, 0xF0006] + [0] * 7,
                       "pmu_value": [123456789, 0, 4242, 17] + [0] * 7}),
            sizes=(0, 200, 100, 0, 0, 0)), True),
    ]
    # refused by the host, valid as a format
    out += [
        ("host-exists", harness(vstream(name="taken", runs=())), True),
        ("host-no-memory", harness(vstream(name="big", ram=128 * MiB, runs=())), True),
        ("host-no-cfi", harness(vstream(name="ss", runs=()), flags=FL_NO_ZICFISS), True),
        ("host-no-feature", harness(vstream(name="adu", runs=()), flags=FL_NO_SVADU), True),
        ("host-timebase", harness(vstream(name="tb", timebase=24000000, runs=())), True),
        ("host-no-cfi-lp", harness(vstream(name="lp", cfi=False, features=FEAT_NO_CFI | 1,
                                          runs=())), True),
    ]
    # the harness makes the CRCs right (FL_FIX_CRC): mutations reach the fields
    boot = 32 + 24 + snap.CONFIG.offset("boot_count")
    out += [
        ("fixcrc-valid-2vcpu", harness(two, flags=FL_FIX_CRC), True),
        ("fixcrc-valid-1vcpu-split", harness(one, flags=FL_FIX_CRC | FL_NAME,
                                             sizes=(3, 200, 0, 1, 255, 77)), True),
        # a field changed after the CRC was taken: the harness takes it again
        ("fixcrc-stale-crc", harness(flip(one, boot, 0x10), flags=FL_FIX_CRC), None),
        ("fixcrc-bad-vcpu-x0", harness(vstream(vcpu_over={"gpr": [1] + [0] * 31}, runs=()),
                                       flags=FL_FIX_CRC), False),
    ]
    # damaged streams
    mem = offset_of(one, snap.SEC_MEMORY)
    vcpu1 = offset_of(two, snap.SEC_VCPU, 1)
    end = offset_of(one, snap.SEC_END)
    dev0 = offset_of(one, snap.SEC_DEVICE, 0)
    out += [
        ("bad-truncated-vcpu", harness(two[:vcpu1 + 100]), False),
        ("bad-truncated-memory", harness(one[:mem + 24 + 16 + 2000], sizes=(0, 64, 0, 0, 0, 0)),
         False),
        ("bad-no-end", harness(one[:end]), False),
        ("bad-crc-memory", harness(flip(one, mem + 24 + 16 + 100)), False),
        ("bad-crc-config", harness(flip(one, 32 + 24 + 5)), False),
        ("bad-after-end", harness(one + b"\0" * 16, delta=0), False),
        ("bad-announced-longer", harness(one, delta=40), False),
        ("bad-announced-shorter", harness(one, delta=-17), False),
        ("bad-header-version", harness(flip(one, 8, 0x08)), False),
        # a version no reader knows: the one after the newest
        ("bad-header-version-next", harness(flip(one, 8, version ^ (snap.VERSION + 1))), False),
        ("bad-device-order", harness(one[:dev0 - snap.SECTION.size - snap.vcpu_size(version)] +
                                     one[dev0:]), False),
        # a field out of range behind a good CRC
        ("bad-end-counts", harness(vstream(end_over={"memory_pages": 2})), False),
        ("bad-uart-range.snap", vstream(dev_over={"uart16550": {"mcr": 0x3F}}), False),
        ("bad-plic-context", harness(vstream(dev_over={"plic": {"threshold": [0, 3] + [0] * 6}})),
         False),
        ("bad-vmgenid-pad", harness(vstream(dev_over={"vmgenid": {"pad": b"\x01" + bytes(6)}}, runs=())),
         False),
        ("bad-vcpu-hsm", harness(vstream(nr_vcpus=2, vcpu_over={"hsm_state": 3}, runs=())),
         False),
        ("bad-vcpu-nocfi-lp", harness(vstream(cfi=False, vcpu_over={"lp_value": 1}, runs=())),
         False),
        # the version 2 tail's rules
        ("bad-vcpu-noadu", harness(vstream(features=FEAT_ALL & ~0x10, runs=())), False),
        ("bad-vcpu-susp-running", harness(vstream(vcpu_over={"system_suspend": 1}, runs=())),
         False),
        ("bad-vcpu-sta-outside", harness(vstream(vcpu_over={"sta_shmem": RAM_BASE - 64},
                                                runs=())), False),
        ("bad-vcpu-pmu-started", harness(vstream(vcpu_over={"pmu_started": 1}, runs=())),
         False),
        ("bad-vcpu-pmu-event", harness(vstream(vcpu_over={"pmu_configured": 1 << 3,
                                                         "pmu_event_idx": [0, 0, 0, 0xF0016]
                                                         + [0] * 7}, runs=())), False),
        # restored CSRs a guest could never have written (include/abi/snapshot_records.h),
        # behind fixed CRCs so that mutations explore the rules around them
        ("fixcrc-legal-fs-off", harness(vstream(vcpu_over={"sstatus": SSTATUS_SPP}, runs=()),
                                        flags=FL_FIX_CRC), False),
        ("fixcrc-legal-vsstatus-tw", harness(vstream(vcpu_over={"vsstatus": (2 << 32) | 1 << 21},
                                                    runs=()), flags=FL_FIX_CRC), False),
        ("fixcrc-legal-vsstatus-sxl", harness(vstream(vcpu_over={"vsstatus": (2 << 32) | 1 << 34},
                                                     runs=()), flags=FL_FIX_CRC), False),
        ("fixcrc-legal-senvcfg-lpe", harness(vstream(cfi=False, vcpu_over={"senvcfg": 1 << 2},
                                                    runs=()), flags=FL_FIX_CRC), False),
        ("fixcrc-legal-vstvec-mode", harness(vstream(vcpu_over={"vstvec": 0xffffffff80001002},
                                                    runs=()), flags=FL_FIX_CRC), False),
        ("fixcrc-legal-vsatp-mode", harness(vstream(vcpu_over={"vsatp": 1 << 60}, runs=()),
                                            flags=FL_FIX_CRC), False),
    ]
    return out


def main():
    outdir = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    outdir.mkdir(parents=True, exist_ok=True)
    for name, data, valid in seeds():
        stream_bytes = data if data[:8] == snap.MAGIC else data[8:]
        if valid is None:
            pass                         # valid once the harness fixes its CRCs
        elif valid:
            snapshot.verify(stream_bytes)    # raises if not
        else:
            try:
                snapshot.verify(stream_bytes)
            except snapshot.SnapError:
                pass
            else:
                # announced-length seeds are valid files: the damage is in the header
                assert name.removeprefix("v2-").removeprefix("v3-").startswith("bad-announced"), \
                    name
        (outdir / name).write_bytes(data)
        print(f"{name:28} {len(data):6} bytes{'  (damaged)' if valid is False else ''}")


if __name__ == "__main__":
    main()
