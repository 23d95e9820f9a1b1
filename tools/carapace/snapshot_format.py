# SPDX-License-Identifier: MIT
"""The snapshot format (docs/snapshot-format.md; include/abi/snapshot_format.h,
snapshot_records.h and snapshot_devices.h are its C form): the constants, and
a Layout per record (header, section header, CONFIG, VCPU, DEVICE, the devices'
states, MEMORY run, END) that unpacks it into named fields.  CONFIG, the vCPU
records (CORE, FP, CFI, FWFT, HSM, STA, PMU) and the device states
(uart16550, plic, vmgenid) and the virtio models' states (virtio_blk,
virtio_net: VIRTIO sections, version 4) are not restated here: their layouts,
the device models' order and names are read from the tables of
snapshot_records.h and snapshot_devices.h, the tables the hypervisor saves
and loads with.  DISK sections (version 5) carry the disks' content, a
block of sectors each (DISKRUN); DISK_ID sections (version 6, a stream
without the disks' content) each disk's identity, CRCs of sampled blocks
(DISKID, DISKID_SAMPLE, disk_id_blocks()).  Version 7 adds AIA VMs: the
CONFIG's feature aia, the IMSIC record in every VCPU section and the aplic
device (a PLIC VM's all zero, as an AIA VM's plic device is).  Version 8
gives the FWFT record's first reserved byte to misaligned_emulate (FWFT
MISALIGNED_EXC_DELEG's value, inverted; 0 in older streams) and adds the
DBTR record (SBI DBTR: shared memory and triggers).  Versions 1 to
8 are read: a version 3 to 6 VCPU section ends before the IMSIC record
(VCPU_V6_SIZE bytes, read as a PLIC VM's), a version 7 one before the DBTR
record (VCPU_V7_SIZE bytes, read as DBTR unused), a version 2 one is one 848-byte
record (VCPU_V2), a version 1 one its first 672 bytes; vcpu_from_stream()
reads them all into the records' fields."""

import re
import struct

from . import c_header, paths
from .limits import CFI_POLICIES, MAX_VCPUS  # noqa: F401 (names of the format too)
from .units import MiB


MAGIC = b"CARASNAP"
VERSION = 8                    # what Carapace writes
VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8)   # what this reader reads (older VCPU records are converted)
VERSION_VIRTIO = 4             # the first with VIRTIO sections
VERSION_DISK = 5               # the first with DISK sections and flag DISKS
VERSION_DISK_ID = 6            # the first with DISK_ID sections
VERSION_AIA = 7                # the first with AIA VMs: the IMSIC record, the aplic device
VERSION_MISALIGNED = 8         # the first with FWFT misaligned_emulate (a reserved byte before)
VERSION_DBTR = 8               # the first with the DBTR record
PAGE_SIZE = 4096
RUN_MAX_PAGES = 512
F_LIVE = 1 << 0
F_DISKS = 1 << 1               # version 5, 6: every disk's content is in the stream
KNOWN_FLAGS = F_LIVE | F_DISKS
DISK_SECTOR = 512
DISK_BLOCK_SECTORS = 128       # a DISK section is one block of a disk (64 KiB), or its tail
DISK_BLOCK = DISK_SECTOR * DISK_BLOCK_SECTORS
RAM_ALIGN = 2 * MiB
RAM_MIN = 8 * MiB

SEC_CONFIG, SEC_VCPU, SEC_DEVICE, SEC_MEMORY, SEC_END, SEC_VIRTIO, SEC_DISK, SEC_DISK_ID = \
    range(1, 9)
SECTION_TYPES = {SEC_CONFIG: "CONFIG", SEC_VCPU: "VCPU", SEC_DEVICE: "DEVICE",
                 SEC_MEMORY: "MEMORY", SEC_END: "END", SEC_VIRTIO: "VIRTIO", SEC_DISK: "DISK",
                 SEC_DISK_ID: "DISK_ID"}
# where each type comes in a stream: VIRTIO between the devices and memory,
# DISK_ID between VIRTIO and memory, DISK after memory
SECTION_RANK = {SEC_CONFIG: 1, SEC_VCPU: 2, SEC_DEVICE: 3, SEC_VIRTIO: 4, SEC_DISK_ID: 5,
                SEC_MEMORY: 6, SEC_DISK: 7, SEC_END: 8}
# the first version that has each type (the others: every version)
SECTION_SINCE = {SEC_VIRTIO: VERSION_VIRTIO, SEC_DISK: VERSION_DISK,
                 SEC_DISK_ID: VERSION_DISK_ID}
DISK_ID_SAMPLES = 16           # a DISK_ID's samples at most

FEATURES = ((1 << 0, "zicfilp"), (1 << 1, "zicfiss"), (1 << 2, "sstc"),
            (1 << 3, "svpbmt"), (1 << 4, "svadu"), (1 << 5, "aia"))
FEAT_ALL = 0x3F
FEAT_AIA = 1 << 5              # version 7: an IMSIC per vCPU and an APLIC (not an extension)
HSM_STATES = ("stopped", "started", "suspended")

SSTATUS_SPIE = 1 << 5
SSTATUS_SPP = 1 << 8
SSTATUS_FS_SHIFT = 13
SSTATUS_FS = 3 << SSTATUS_FS_SHIFT
SSTATUS_SPELP = 1 << 23
SSTATUS_KNOWN = SSTATUS_SPIE | SSTATUS_SPP | SSTATUS_FS | SSTATUS_SPELP
FS_STATES = ("off", "initial", "clean", "dirty")
HVIP_BITS = ((1 << 2, "VSSIP"), (1 << 6, "VSTIP"), (1 << 10, "VSEIP"))
FEAT_ZICFILP, FEAT_ZICFISS = 1 << 0, 1 << 1
ENVCFG_LPE = 1 << 2
ENVCFG_SSE = 1 << 3
SATP_MODES = {0: "bare", 8: "sv39", 9: "sv48", 10: "sv57"}
FEAT_SVADU = 1 << 4

VCPU_V1_SIZE = 672             # a version 1 VCPU section ends before misaligned_locked
VCPU_V6_SIZE = 896             # a version 3 to 6 VCPU section ends before the IMSIC record
VCPU_V7_SIZE = 1440            # a version 7 VCPU section ends before the DBTR record
DBTR_TRIGGERS = 8              # DBTR trigger slots of a vCPU
DBTR_ENTRY = 32                # an SBI DBTR shared-memory entry (RV64)
DBTR_SHMEM_ALIGN = 8
IMSIC_WORDS = 32               # eip/eie words of an IMSIC file (2048 identities)
IMSIC_MAX_IDS = 2047
STA_OFF = (1 << 64) - 1        # sta_shmem: no STA shared memory
STA_SIZE = 64                  # the steal-time record (SBI STA), 64-byte aligned
PMU_COUNTERS = 11              # 0 cycle, 1 (a hole: time is not counted), 2 instret, 3..10 firmware
PMU_CYCLE, PMU_INSTRET = 0, 2
PMU_FW_FIRST = 3
PMU_VALID = (1 << PMU_CYCLE) | (1 << PMU_INSTRET) | (((1 << PMU_COUNTERS) - 1)
                                                   & ~((1 << PMU_FW_FIRST) - 1))   # 0x7fd
PMU_EVENT_CYCLES, PMU_EVENT_INSTRUCTIONS = 0x1, 0x2       # hardware general events (type 0)
PMU_EVENT_TYPE_FW = 0xF
PMU_FW_EVENTS = ("misaligned_load", "misaligned_store", "access_load", "access_store",
                 "illegal_insn", "set_timer", "ipi_sent", "ipi_rcvd", "fence_i_sent",
                 "fence_i_rcvd", "sfence_vma_sent", "sfence_vma_rcvd",
                 "sfence_vma_asid_sent", "sfence_vma_asid_rcvd", "hfence_gvma_sent",
                 "hfence_gvma_rcvd", "hfence_gvma_vmid_sent", "hfence_gvma_vmid_rcvd",
                 "hfence_vvma_sent", "hfence_vvma_rcvd", "hfence_vvma_asid_sent",
                 "hfence_vvma_asid_rcvd")          # SBI v3.0 firmware events, codes 0..21

GPR_NAMES = ("zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1",
             "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
             "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
             "t3", "t4", "t5", "t6")
FPR_NAMES = ("ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1",
             "fa0", "fa1", "fa2", "fa3", "fa4", "fa5", "fa6", "fa7",
             "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9", "fs10", "fs11",
             "ft8", "ft9", "ft10", "ft11")

NAME_RE = re.compile(rb"[a-z0-9_-]{1,15}\Z")

GZIP_MAGIC = b"\x1f\x8b"       # a gzip-compressed snapshot file (RFC 1952)
TRAILING_SCAN_MAX = 64 * MiB   # bytes after END counted at most (a gzip bomb stops here)


class Layout:
    """A fixed-size little-endian struct: fields (name, kind, count) with kind
    B (u8), I (u32), Q (u64) or s (bytes, count long).  count > 1 on B/I/Q makes
    an array (a list).  The offsets follow from the order: no padding."""

    SIZES = {"B": 1, "I": 4, "Q": 8, "s": 1}

    def __init__(self, name, fields, size=None):
        self.name = name
        self.fields = []
        offset = 0
        for field in fields:
            fname, kind, count = (field + (1,))[:3]
            width = self.SIZES[kind]
            if kind != "s":
                assert offset % width == 0, (name, fname)    # naturally aligned
            self.fields.append((fname, kind, count, offset))
            offset += width * count
        self.size = offset
        assert size is None or self.size == size, (name, self.size, size)
        self.offsets = {fname: off for fname, _, _, off in self.fields}

    def decode(self, buf, base=0):
        out = {}
        for fname, kind, count, off in self.fields:
            if kind == "s":
                out[fname] = bytes(buf[base + off:base + off + count])
            elif count == 1:
                out[fname] = struct.unpack_from("<" + kind, buf, base + off)[0]
            else:
                out[fname] = list(struct.unpack_from(f"<{count}{kind}", buf, base + off))
        return out

    def encode(self, values):
        """The struct's bytes from @values (missing fields are zero)."""
        buf = bytearray(self.size)
        for fname, kind, count, off in self.fields:
            value = values.get(fname)
            if value is None:
                continue
            if kind == "s":
                value = bytes(value)[:count]
                buf[off:off + len(value)] = value
            elif count == 1:
                struct.pack_into("<" + kind, buf, off, value)
            else:
                struct.pack_into(f"<{count}{kind}", buf, off, *value)
        return bytes(buf)

    def offset(self, fname, index=0):
        """Byte offset of field @fname (element @index of an array)."""
        for name, kind, _, off in self.fields:
            if name == fname:
                return off + index * self.SIZES[kind]
        raise KeyError(fname)


HEADER = Layout("snap_header", [("magic", "s", 8), ("version", "I"), ("header_size", "I"),
                                ("flags", "Q"), ("reserved", "Q")], 32)
SECTION = Layout("snap_section", [("type", "I"), ("instance", "I"), ("length", "Q"),
                                  ("crc32c", "I"), ("reserved", "I")], 24)
DEVICE = Layout("snap_device", [("name", "s", 16), ("state_size", "I"), ("reserved", "I")],
                24)
MEMRUN = Layout("snap_mem_run", [("gpa", "Q"), ("pages", "Q")], 16)
END = Layout("snap_end", [("sections", "Q"), ("memory_pages", "Q")], 16)
DISKRUN = Layout("snap_disk_run", [("sector", "Q"), ("sectors", "I"), ("reserved", "I")], 16)
DISKID_SAMPLE = Layout("snap_disk_id_sample", [("block", "Q"), ("crc32c", "I"),
                                               ("reserved", "I")], 16)
DISKID = Layout("snap_disk_id", [("sectors", "Q"), ("samples", "I"), ("reserved", "I"),
                                 ("sample", "s", DISK_ID_SAMPLES * DISKID_SAMPLE.size)], 272)
SECTION_MAX = MEMRUN.size + RUN_MAX_PAGES * PAGE_SIZE


def known_flags(version):
    """The header flag bits a stream of @version may set."""
    return KNOWN_FLAGS if version >= VERSION_DISK else F_LIVE


def disk_id_blocks(sectors):
    """The blocks a DISK_ID of a disk of @sectors samples: min(16, its
    blocks) of them, the first, the last and evenly spaced ones between."""
    blocks = -(-sectors // DISK_BLOCK_SECTORS)
    n = min(blocks, DISK_ID_SAMPLES)
    return [0] if n == 1 else [i * (blocks - 1) // (n - 1) for i in range(n)]


def disk_id_samples(payload):
    """The DISK_ID payload's samples: [{"block", "crc32c", "reserved"}] x 16."""
    base = DISKID.offset("sample")
    return [DISKID_SAMPLE.decode(payload, base + i * DISKID_SAMPLE.size)
            for i in range(DISK_ID_SAMPLES)]


def disk_id_payload(sectors, crcs):
    """A DISK_ID payload for a disk of @sectors whose sampled blocks (in
    disk_id_blocks() order) have the CRC32Cs @crcs."""
    blocks = disk_id_blocks(sectors) if sectors else []
    samples = b"".join(DISKID_SAMPLE.encode({"block": b, "crc32c": c})
                       for b, c in zip(blocks, crcs))
    return DISKID.encode({"sectors": sectors, "samples": len(blocks), "sample": samples})


def section_types(version):
    """{type: name} of the section types a stream of @version has."""
    return {t: name for t, name in SECTION_TYPES.items() if version >= SECTION_SINCE.get(t, 1)}


# --- CONFIG, the vCPU records and the device states (snapshot_records.h, _devices.h) -

C_KINDS = {"uint8_t": "B", "uint32_t": "I", "uint64_t": "Q", "char": "s"}


def _table(functions, objects, macro):
    """The fields of record table @macro: (name, kind, count, bits, value,
    readonly, what), bits (any, zicfilp, zicfiss, svadu) and value (shift,
    mask, legal) evaluated; a frozen table's rows (name, type, dim) have no
    rules (None).  A table's body may hold another table, NAME(X) (the
    virtio models begin with SNAP_VIO_TRANSPORT(X)): its rows come there."""
    out = []
    body = re.sub(r"\b([A-Z][A-Z0-9_]*)\(X\)",
                  lambda m: functions.get(m.group(1), m.group(0)), functions[macro])
    for args in c_header.c_rows(body):
        name, ctype, dim = args[:3]
        count = c_header.c_value(dim.strip()[1:-1], objects) if dim.strip() else 1
        kind = C_KINDS[ctype.strip()]
        if len(args) == 3:
            out.append((name, kind, count, None, None, None, None))
            continue
        bits = tuple(c_header.c_value(e, objects)
                     for e in c_header.call_args(args[3], "SNAP_BITS", objects))
        value = tuple(c_header.c_value(e, objects)
                      for e in c_header.call_args(args[4], "SNAP_VALUE", objects))
        if len(bits) != 4 or len(value) != 3:
            raise ValueError(f"{macro}: row {name}: unexpected rules")
        out.append((name, kind, count, bits, value, c_header.c_value(args[5], objects),
                    c_header.c_string(args[7])))
    return out


def load_records(root=None):
    """The tables of include/abi/snapshot_records.h and snapshot_devices.h
    under @root (default: paths.header_root()): {"CONFIG": fields, "V2":
    fields (the frozen version 2 record), "records": [(id, NAME, name,
    fields)] in stream order, "devices": [(index, NAME, name, fields)] in
    stream order, "constants": the #defined numbers the readers use}."""
    objects, functions = c_header.read_macros(root or paths.header_root())
    records, devices, vio = [], [], []
    for rid, name_upper, name in c_header.c_rows(functions["SNAP_VCPU_RECORDS"]):
        records.append((c_header.c_value(rid, objects), name_upper, name,
                        _table(functions, objects, f"SNAP_REC_{name_upper}")))
    for index, name_upper, name in c_header.c_rows(functions["SNAP_DEVICES"]):
        devices.append((c_header.c_value(index, objects), name_upper, name,
                        _table(functions, objects, f"SNAP_DEV_{name_upper}")))
    if [d[0] for d in devices] != list(range(len(devices))):
        raise ValueError("SNAP_DEVICES: the indices are not 0, 1, 2, ... in order")
    for name_upper, name, device_id in c_header.c_rows(functions["SNAP_VIO_MODELS"]):
        vio.append((name_upper, name, c_header.c_value(device_id, objects),
                    _table(functions, objects, f"SNAP_DEV_{name_upper}")))
    constants = {name: c_header.c_value(name, objects) for name in
                 ("SNAP_UART_RX_FIFO", "SNAP_PLIC_SOURCES", "SNAP_PLIC_CONTEXTS",
                  "SNAP_PLIC_PRIO_MAX", "SNAP_VIO_QUEUES", "SNAP_VIO_STATUS_ACKNOWLEDGE",
                  "SNAP_VIO_STATUS_DRIVER", "SNAP_VIO_STATUS_DRIVER_OK",
                  "SNAP_VIO_STATUS_FEATURES_OK", "SNAP_VIO_STATUS_NEEDS_RESET",
                  "SNAP_VIO_STATUS_FAILED", "SNAP_VIO_LINK_UP", "SNAP_VIO_F_VERSION_1",
                  "SNAP_VIO_BLK_FEATURES", "SNAP_VIO_BLK_F_RO", "SNAP_VIO_BLK_QUEUE_MAX",
                  "SNAP_VIO_BLK_SEG_MAX", "SNAP_VIO_NET_FEATURES", "SNAP_VIO_NET_QUEUE_MAX",
                  "SNAP_VIO_SERIAL", "SNAP_VIO_SWITCH_NAME")}
    return {"CONFIG": _table(functions, objects, "SNAP_CONFIG_FIELDS"),
            "V2": _table(functions, objects, "SNAP_VCPU_V2_FIELDS"), "records": records,
            "devices": devices, "vio_models": vio,
            "vio_transport": _table(functions, objects, "SNAP_VIO_TRANSPORT"),
            "constants": constants}


def _layout(name, fields):
    return Layout(name, [(f[0], f[1], f[2]) for f in fields])


TABLES = load_records()
CONFIG = _layout("snap_config", TABLES["CONFIG"])
# (id, NAME, name, Layout) of each vCPU record, in stream order
RECORDS = [(rid, upper, name, _layout(f"snap_rec_{name}", fields))
           for rid, upper, name, fields in TABLES["records"]]
# a version 3 VCPU payload: each record behind its {id, size} header
VCPU = Layout("snap_vcpu", [f for _, _, name, layout in RECORDS
                            for f in [(f"{name}_rec_id", "I"), (f"{name}_rec_size", "I")] +
                            [(fname, kind, count) for fname, kind, count, _ in layout.fields]])
VCPU_V2 = _layout("snap_vcpu_v2", TABLES["V2"])
# The device models in stream order, each with the layout of its struct
# snap_dev_<name>: (name, Layout).  Versions 1 to 6 have the first three.
DEVICES = tuple((name, _layout(f"snap_dev_{name}", fields))
                for _, _, name, fields in TABLES["devices"])
DEVICES_V6 = 3
UART, PLIC, VMGENID, APLIC = (dict(DEVICES)[name]
                              for name in ("uart16550", "plic", "vmgenid", "aplic"))
# the interrupt controller each kind of VM has (the other's device is all zero)
IRQCHIP_DEVICES = {"plic": False, "aplic": True}     # name: it is an AIA VM's
UART_RX_FIFO = TABLES["constants"]["SNAP_UART_RX_FIFO"]
PLIC_SOURCES = TABLES["constants"]["SNAP_PLIC_SOURCES"]
PLIC_CONTEXTS = TABLES["constants"]["SNAP_PLIC_CONTEXTS"]
PRIO_MAX = TABLES["constants"]["SNAP_PLIC_PRIO_MAX"]
# The virtio models of VIRTIO sections: {name: (device id, Layout of its
# struct snap_dev_<name>)}, and their constants.
VIO_MODELS = {name: (device_id, _layout(f"snap_dev_{name}", fields))
              for _, name, device_id, fields in TABLES["vio_models"]}
VIO_TRANSPORT = _layout("snap_vio_transport", TABLES["vio_transport"])   # their first bytes
VIO_QUEUES = TABLES["constants"]["SNAP_VIO_QUEUES"]
VIO_STATUS = {word: TABLES["constants"][f"SNAP_VIO_STATUS_{word.upper()}"]
              for word in ("acknowledge", "driver", "driver_ok", "features_ok", "needs_reset",
                           "failed")}
VIO_LINK_UP = TABLES["constants"]["SNAP_VIO_LINK_UP"]
_K = TABLES["constants"]
VIO_F_VERSION_1 = _K["SNAP_VIO_F_VERSION_1"]
VIO_BLK_F_RO = _K["SNAP_VIO_BLK_F_RO"]
VIO_BLK_SEG_MAX = _K["SNAP_VIO_BLK_SEG_MAX"]
# each model: the features it offers, its queues' maximum sizes (a queue it
# does not have: 0)
VIO_OFFER = {"virtio_blk": _K["SNAP_VIO_BLK_FEATURES"], "virtio_net": _K["SNAP_VIO_NET_FEATURES"]}
VIO_QUEUE_MAX = {"virtio_blk": (_K["SNAP_VIO_BLK_QUEUE_MAX"], 0),
                 "virtio_net": (_K["SNAP_VIO_NET_QUEUE_MAX"], _K["SNAP_VIO_NET_QUEUE_MAX"])}
VIO_FAULTS = ("none", "queue-size", "ring-alignment", "ring-not-ram", "avail-idx-jump",
              "head-index", "head-in-use", "next-index", "loop", "chain-too-long", "indirect",
              "zero-length", "buffer-not-ram", "readable-after-writable", "unusable-chain")
MAX_DISKS, MAX_NICS = 2, 2     # a VM's (docs/snapshot-format.md, "VIRTIO")
VCPU_V2_ONLY = [f for f in VCPU_V2.fields if f[0] not in VCPU.offsets]   # reserved: 0
assert VCPU_V2.offset("misaligned_locked") == VCPU_V1_SIZE
assert VCPU.offset("imsic_rec_id") == VCPU_V6_SIZE
assert VCPU.offset("dbtr_rec_id") == VCPU_V7_SIZE


def vcpu_size(version):
    """A VCPU section's length in a stream of @version."""
    return (VCPU_V1_SIZE if version == 1 else VCPU_V2.size if version == 2 else
            VCPU_V6_SIZE if version < VERSION_AIA else
            VCPU_V7_SIZE if version < VERSION_DBTR else VCPU.size)


def devices_of(version):
    """The device models (name, Layout) a stream of @version has, in order."""
    return DEVICES[:DEVICES_V6] if version < VERSION_AIA else DEVICES


def fixed_length(version):
    """{section type: payload length} of the fixed-size sections of @version."""
    out = {SEC_CONFIG: CONFIG.size, SEC_VCPU: vcpu_size(version), SEC_END: END.size}
    if version >= VERSION_DISK_ID:
        out[SEC_DISK_ID] = DISKID.size
    return out


def vcpu_from_stream(payload, version, features):
    """A VCPU payload of a @version stream as the current records' fields (one
    dict; each record's header as <name>_rec_id/_rec_size): a version 1 or 2
    record's fields go to their namesakes, and a version 1 record gets what
    its writer ran the guest with (A/D updating on where the guest had Svadu,
    no STA shared memory, no PMU, the rest 0); a version 3 to 6 record's
    IMSIC record is all zero (a PLIC VM's), a version 3 to 7 one's DBTR
    record (DBTR unused)."""
    if version >= 3:
        v = VCPU.decode(bytes(payload[:vcpu_size(version)]).ljust(VCPU.size, b"\0"))
        for rid, _, name, layout in RECORDS:       # the records a version lacks
            if VCPU.offset(f"{name}_rec_id") >= vcpu_size(version):
                v[f"{name}_rec_id"], v[f"{name}_rec_size"] = rid, layout.size
        return v
    old = VCPU_V2.decode(bytes(payload[:vcpu_size(version)]).ljust(VCPU_V2.size, b"\0"))
    if version == 1:
        old["pte_ad_value"] = 1 if features & FEAT_SVADU else 0
        old["sta_shmem"] = STA_OFF
    v = VCPU.decode(bytes(VCPU.size))
    for rid, _, name, layout in RECORDS:
        v[f"{name}_rec_id"], v[f"{name}_rec_size"] = rid, layout.size
    for fname in VCPU.offsets:
        if fname in old:
            v[fname] = old[fname]
    return v


FIXED_LENGTH = fixed_length(VERSION)


def pmu_event_words(idx):
    """An SBI PMU event_idx in words: type (bits 19:16) and code (bits 15:0)."""
    etype, code = idx >> 16, idx & 0xFFFF
    if idx == PMU_EVENT_CYCLES:
        return "cycles"
    if idx == PMU_EVENT_INSTRUCTIONS:
        return "instructions"
    if etype == PMU_EVENT_TYPE_FW and code < len(PMU_FW_EVENTS):
        return f"firmware {PMU_FW_EVENTS[code]}"
    return f"event type {etype:#x} code {code:#x}"
