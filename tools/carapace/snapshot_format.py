# SPDX-License-Identifier: MIT
"""The snapshot format (docs/snapshot-format.md; include/abi/snapshot_format.h
is its C form): the constants, and a Layout per record (header, section
header, CONFIG, VCPU, DEVICE, the devices' states, MEMORY run, END) that
unpacks it into named fields.  Versions 1 and 2 are read; a version 1 VCPU
record is the first 672 bytes of the 848-byte one (vcpu_from_stream())."""

import re
import struct

from .limits import CFI_POLICIES, MAX_VCPUS  # noqa: F401 (names of the format too)
from .units import MiB


MAGIC = b"CARASNAP"
VERSION = 2                    # what Carapace writes
VERSIONS = (1, 2)              # what this reader reads (a version 1 VCPU record is shorter)
PAGE_SIZE = 4096
RUN_MAX_PAGES = 512
F_LIVE = 1 << 0
KNOWN_FLAGS = F_LIVE
RAM_ALIGN = 2 * MiB
RAM_MIN = 8 * MiB

SEC_CONFIG, SEC_VCPU, SEC_DEVICE, SEC_MEMORY, SEC_END = 1, 2, 3, 4, 5
SECTION_TYPES = {SEC_CONFIG: "CONFIG", SEC_VCPU: "VCPU", SEC_DEVICE: "DEVICE",
                 SEC_MEMORY: "MEMORY", SEC_END: "END"}

FEATURES = ((1 << 0, "zicfilp"), (1 << 1, "zicfiss"), (1 << 2, "sstc"),
            (1 << 3, "svpbmt"), (1 << 4, "svadu"))
FEAT_ALL = 0x1F
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

# The VCPU record's version 2 tail (docs/snapshot-format.md, VCPU).
VCPU_V1_SIZE = 672             # a version 1 VCPU section ends before misaligned_locked
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

UART_RX_FIFO = 256
PLIC_SOURCES = 32
PLIC_CONTEXTS = 8
PRIO_MAX = 7
UART_IER_MASK = 0x0F           # the model's own load() checks (hyp/vdev/vuart.c)
UART_MCR_MASK = 0x1F
VMGENID_ID_SIZE = 16

GZIP_MAGIC = b"\x1f\x8b"       # a gzip-compressed snapshot file (RFC 1952)
TRAILING_SCAN_MAX = 64 * MiB   # bytes after END counted at most (a gzip bomb stops here)


class Layout:
    """A fixed-size little-endian struct: fields (name, kind, count) with kind
    B (u8), I (u32), Q (u64) or s (bytes, count long).  count > 1 on B/I/Q makes
    an array (a list).  The offsets follow from the order: no padding."""

    SIZES = {"B": 1, "I": 4, "Q": 8, "s": 1}

    def __init__(self, name, fields, size):
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
        assert self.size == size, (name, self.size, size)
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
CONFIG = Layout("snap_config", [
    ("name", "s", 16), ("ram_gpa", "Q"), ("ram_size", "Q"), ("nr_vcpus", "I"),
    ("cfi_policy", "I"), ("features", "I"), ("boot_count", "I"), ("debug_ext", "I"),
    ("vs_sv", "I"), ("guest_time", "Q"), ("timebase_hz", "Q"),
    ("kernel_image", "s", 32), ("initrd_image", "s", 32), ("bootargs", "s", 512)], 648)
VCPU_CSRS = ("pc", "sstatus", "vsstatus", "vsie", "vstvec", "vsscratch", "vsepc", "vscause",
             "vstval", "vsatp", "vstimecmp", "hvip", "scounteren", "senvcfg", "ssp")
VCPU = Layout("snap_vcpu", [("gpr", "Q", 32)] + [(name, "Q") for name in VCPU_CSRS] + [
    ("f", "Q", 32), ("fcsr", "Q"),
    ("lp_value", "B"), ("lp_locked", "B"), ("ss_value", "B"), ("ss_locked", "B"),
    ("hsm_state", "I"), ("waiting", "I"), ("resume_nonret", "I"),
    ("resume_addr", "Q"), ("resume_opaque", "Q"),
    # version 2 from here (a version 1 record ends above: VCPU_V1_SIZE)
    ("misaligned_locked", "B"), ("pte_ad_value", "B"), ("pte_ad_locked", "B"),
    ("system_suspend", "B"), ("reserved", "I"), ("sta_shmem", "Q"),
    ("pmu_configured", "I"), ("pmu_started", "I"), ("pmu_event_idx", "I", PMU_COUNTERS),
    ("reserved2", "I"), ("pmu_value", "Q", PMU_COUNTERS), ("reserved3", "Q", 2)], 848)
assert VCPU.offset("misaligned_locked") == VCPU_V1_SIZE
VCPU_V2_FIELDS = tuple(f[0] for f in VCPU.fields if f[3] >= VCPU_V1_SIZE)
DEVICE = Layout("snap_device", [("name", "s", 16), ("state_size", "I"), ("reserved", "I")],
                24)
MEMRUN = Layout("snap_mem_run", [("gpa", "Q"), ("pages", "Q")], 16)
END = Layout("snap_end", [("sections", "Q"), ("memory_pages", "Q")], 16)
UART = Layout("uart16550 state", [
    ("ier", "B"), ("lcr", "B"), ("mcr", "B"), ("scr", "B"), ("fcr", "B"), ("dll", "B"),
    ("dlm", "B"), ("thre_pending", "B"), ("irq_level", "B"), ("pad", "s", 7),
    ("rx_head", "I"), ("rx_tail", "I"), ("rx", "s", UART_RX_FIFO)], 280)
PLIC = Layout("plic state", [
    ("priority", "I", PLIC_SOURCES), ("level", "I"), ("pending", "I"), ("claimed", "I"),
    ("enable", "I", PLIC_CONTEXTS), ("threshold", "I", PLIC_CONTEXTS)], 204)
VMGENID = Layout("vmgenid state", [("id", "s", VMGENID_ID_SIZE), ("level", "B"),
                                   ("pad", "s", 7)], 24)

# The devices of versions 1 and 2, in stream order: (name, state layout).
DEVICES = (("uart16550", UART), ("plic", PLIC), ("vmgenid", VMGENID))
SECTION_MAX = MEMRUN.size + RUN_MAX_PAGES * PAGE_SIZE


def vcpu_size(version):
    """A VCPU section's length in a stream of @version (1 or 2)."""
    return VCPU_V1_SIZE if version == 1 else VCPU.size


def fixed_length(version):
    """{section type: payload length} of the fixed-size sections of @version."""
    return {SEC_CONFIG: CONFIG.size, SEC_VCPU: vcpu_size(version), SEC_END: END.size}


def vcpu_from_stream(payload, version, features):
    """A VCPU payload of a @version stream as the current (version 2) record:
    a version 1 record gets what its writer ran the guest with (A/D updating
    on where the guest had Svadu, no STA shared memory, no PMU, the rest 0)."""
    v = VCPU.decode(bytes(payload[:VCPU.size]).ljust(VCPU.size, b"\0"))
    if version == 1:
        v["pte_ad_value"] = 1 if features & FEAT_SVADU else 0
        v["sta_shmem"] = STA_OFF
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
