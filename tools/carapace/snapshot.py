# SPDX-License-Identifier: MIT
"""The snapshot reader (docs/snapshot-format.md): parse() checks a stream or a
file (gzip-compressed or not) section by section, as a restore does, and
returns a Snapshot; every problem is a SnapError naming the section and the
byte offset (from the start of the uncompressed stream) of what is wrong.
verify() is parse() that stops at the first problem."""

import gzip
import io
import os
import zlib

from .crc32c import crc32c
from .snapshot_format import (CONFIG, DEVICE, DEVICES, DISK_BLOCK_SECTORS, DISK_SECTOR, DISKRUN,
    DISKID, DISKID_SAMPLE, DISK_ID_SAMPLES, SEC_DISK_ID, VERSION_DISK_ID, disk_id_blocks,
    disk_id_samples,
    END, FEAT_ALL, F_DISKS, F_LIVE, GZIP_MAGIC, HEADER, MAGIC, MAX_VCPUS, MEMRUN, NAME_RE,
    PAGE_SIZE, PLIC_CONTEXTS, PMU_CYCLE,
    PMU_EVENT_CYCLES, PMU_EVENT_INSTRUCTIONS, PMU_EVENT_TYPE_FW, PMU_FW_EVENTS, PMU_FW_FIRST,
    PMU_INSTRET, PMU_VALID, RAM_ALIGN, RAM_MIN, RUN_MAX_PAGES, SECTION, SECTION_TYPES,
    SEC_CONFIG, SEC_DEVICE, SEC_DISK, SEC_END, SEC_MEMORY, SEC_VCPU, SEC_VIRTIO, SECTION_RANK,
    STA_OFF, STA_SIZE, TRAILING_SCAN_MAX, UART_RX_FIFO, RECORDS, VCPU, VCPU_V2, VCPU_V2_ONLY,
    VERSION, VERSIONS, VERSION_VIRTIO, VIO_BLK_F_RO, VIO_BLK_SEG_MAX, VIO_F_VERSION_1,
    VIO_MODELS, VIO_OFFER, VIO_QUEUE_MAX, VIO_QUEUES, VIO_STATUS, MAX_DISKS, MAX_NICS,
    fixed_length, known_flags, section_types, vcpu_size, pmu_event_words, vcpu_from_stream,
    FEAT_AIA, IMSIC_MAX_IDS, IMSIC_WORDS, IRQCHIP_DEVICES, VERSION_AIA, VERSION_MISALIGNED,
    VERSION_DBTR, DBTR_ENTRY, DBTR_SHMEM_ALIGN, DBTR_TRIGGERS,
    devices_of)
from .snapshot_legal import legal_problems


# --- errors ------------------------------------------------------------------------


class SnapError(Exception):
    """A problem in a snapshot: @section names where ("header", "CONFIG",
    "VCPU 1", "DEVICE 0 (uart16550)", "MEMORY run 3", "END", ...), @offset is the
    byte offset from the start of the stream of what is wrong."""

    def __init__(self, section, offset, message, type_name=None, instance=None):
        super().__init__(f"{section}, byte {offset}: {message}")
        self.section, self.offset, self.message = section, offset, message
        self.type_name, self.instance = type_name, instance

    def as_json(self):
        return {"section": self.section, "type": self.type_name, "instance": self.instance,
                "offset": self.offset, "message": self.message}


class _Fatal(Exception):
    """Parsing cannot go on (wraps the SnapError)."""


# --- the parser --------------------------------------------------------------------


class Section:
    def __init__(self, offset, hdr, ordinal):
        self.offset = offset                        # of the section header
        self.type, self.instance = hdr["type"], hdr["instance"]
        self.length, self.crc, self.reserved = hdr["length"], hdr["crc32c"], hdr["reserved"]
        self.ordinal = ordinal                      # MEMORY: its index among the runs;
                                                    # DISK: among its disk's runs
        self.crc_actual = None                      # CRC32C of the payload, once read
        self.device_name = None

    @property
    def payload(self):
        return self.offset + SECTION.size

    @property
    def type_name(self):
        return SECTION_TYPES.get(self.type, f"type {self.type}")

    @property
    def label(self):
        if self.type == SEC_VCPU:
            return f"VCPU {self.instance}"
        if self.type == SEC_DEVICE:
            name = f" ({self.device_name})" if self.device_name else ""
            return f"DEVICE {self.instance}{name}"
        if self.type == SEC_MEMORY:
            return f"MEMORY run {self.ordinal}"
        if self.type == SEC_DISK:
            return f"DISK {self.instance} run {self.ordinal}"
        if self.type == SEC_DISK_ID:
            return f"DISK_ID {self.instance}"
        if self.type == SEC_VIRTIO:
            name = f" ({self.device_name})" if self.device_name else ""
            return f"VIRTIO {self.instance}{name}"
        if self.type in SECTION_TYPES:
            return SECTION_TYPES[self.type]
        return f"section of type {self.type}"

    @property
    def crc_ok(self):
        return self.crc_actual is not None and self.crc_actual == self.crc

    def as_json(self):
        return {"offset": self.offset, "type": self.type_name, "type_code": self.type,
                "instance": self.instance, "length": self.length, "crc32c": self.crc,
                "crc_ok": self.crc_ok, "label": self.label}


class Snapshot:
    """What parse() found.  @problems is empty for a valid stream."""

    def __init__(self, name):
        self.name = name            # the file's name, for messages
        self.size = 0               # bytes read
        self.header = None
        self.sections = []
        self.config = None
        self.vcpus = []             # decoded VCPU payloads, in stream order
        self.devices = []           # {"index", "name", "state_size", "state" (bytes), ...}
        self.virtio = []            # {"slot", "name", "state_size", "state", "fields"}: VIRTIO
        self.runs = []              # {"gpa", "pages", "data_offset", "zero_pages"}
        self.disk_runs = []         # {"slot", "sector", "sectors", "data_offset", "zero"}: DISK
        self.disk_ids = []          # {"slot", "sectors", "samples": [{"block", "crc32c"}]}:
                                    # DISK_ID, a disk's identity (no DISKS, version 6)
        self.end = None
        self.problems = []
        self.complete = False       # the END was reached
        self.source = None          # how to read the pages again (diff)
        self.compressed = False     # the file is gzip (the stream expanded from it)
        self.file_size = 0          # bytes of the file itself

    @property
    def valid(self):
        return self.complete and not self.problems

    @property
    def live(self):
        return bool(self.header and self.header["flags"] & F_LIVE)

    @property
    def disks_included(self):
        """The header's flag DISKS: every disk's content is in the stream
        (its DISK sections; a block none holds is zero)."""
        return bool(self.header and self.header["flags"] & F_DISKS)

    @property
    def disks(self):
        """The VM's disks, slot order: [{"slot", "capacity" (sectors, None
        if its state was not decoded), "read_only", "pci_dev"}]."""
        out = []
        for v in self.virtio:
            if v["name"] != "virtio_blk":
                continue
            s = v["fields"]
            out.append({"slot": v["slot"], "capacity": s["capacity"] if s else None,
                        "read_only": bool(s["read_only"]) if s else None,
                        "pci_dev": s["pci_dev"] if s else None})
        return out

    @property
    def version(self):
        return self.header["version"] if self.header else None

    @property
    def memory_pages(self):
        return sum(run["pages"] for run in self.runs)


def cstr(raw):
    """The text of a NUL-terminated field (bytes up to the first NUL)."""
    return raw.split(b"\0", 1)[0].decode("utf-8", "backslashreplace")


ZERO_BLOCK = bytes(DISK_BLOCK_SECTORS * DISK_SECTOR)


APLIC_IE = 1 << 8     # domaincfg.IE


def dbtr_words_problem(tdata1, tdata3):
    """Why install_triggers would refuse these words (dbtr_check(),
    hyp/state/dbtr_word.c), or None: mcontrol6, no dmode, m nor reserved bit,
    the breakpoint action, no chain, no tdata3."""
    reserved = (((1 << 59) - 1) & ~((1 << 27) - 1)) | (3 << 19)
    action = tdata1 >> 12 & 0xF
    if tdata1 >> 60 != 6:
        return "not an mcontrol6 trigger (type 6)"
    if tdata1 & ((1 << 59) | (1 << 6) | reserved):
        return "dmode, m or a reserved bit set"
    if action != 0 or tdata1 & (1 << 11) or tdata3:
        return "only the breakpoint action, no chain, no tdata3"
    return None


def imsic_word_mask(nr_ids, w):
    """The bits of eip/eie word @w (identities 64 w .. 64 w + 63) a file of
    @nr_ids identities has: never identity 0, none above @nr_ids."""
    first = 64 * w
    if first > min(nr_ids, IMSIC_MAX_IDS):
        return 0
    mask = (1 << 64) - 1 if w else (1 << 64) - 2
    top = min(nr_ids, IMSIC_MAX_IDS) - first
    return mask & ((2 << top) - 1) if top < 63 else mask


class _Parser:
    def __init__(self, f, snap, strict):
        self.f, self.snap, self.strict = f, snap, strict
        self.pos = 0
        self.section = None
        self.phase = 0              # highest section type seen so far
        self.prev_run_end = None
        self.nr_vcpus = None        # the CONFIG's, clamped to 1..8 to go on checking
        self.version = VERSION      # the header's, once read
        self.disk_blocks = set()    # (slot, sector) of every DISK run taken

    # -- reading and reporting

    def read(self, n, what, label):
        data = self.f.read(n)
        if len(data) < n:
            end = self.pos + len(data)
            self.pos = end
            self.snap.size = end
            start = end - len(data)
            self.fatal(label, end, f"truncated: the stream ends at byte {end}, in the middle "
                                   f"of {what} (bytes {start}..{start + n - 1})")
        self.pos += n
        self.snap.size = self.pos
        return data

    def error(self, label, offset, message):
        sec = self.section
        return SnapError(label, offset, message,
                         sec.type_name if sec and label != "header" else None,
                         sec.instance if sec and label != "header" else None)

    def problem(self, label, offset, message):
        err = self.error(label, offset, message)
        if self.strict:
            raise err
        self.snap.problems.append(err)

    def fatal(self, label, offset, message):
        raise _Fatal(self.error(label, offset, message))

    def field_problem(self, layout, base, fname, message, index=0):
        sec = self.section
        self.problem(sec.label, base + layout.offset(fname, index), message)

    # -- the stream

    def run(self):
        self.header()
        while True:
            offset = self.pos
            raw = self.f.read(SECTION.size)
            self.section = None
            if not raw:
                self.fatal("END", offset, f"truncated: the stream ends at byte {offset} "
                                          "without an END section")
            if len(raw) < SECTION.size:
                end = offset + len(raw)
                self.snap.size = end
                self.fatal(f"section header at byte {offset}", end,
                           f"truncated: the stream ends at byte {end}, in the middle of a "
                           f"section header (bytes {offset}..{offset + SECTION.size - 1})")
            self.pos += SECTION.size
            self.snap.size = self.pos
            hdr = SECTION.decode(raw)
            ordinal = len(self.snap.runs) if hdr["type"] != SEC_DISK else sum(
                1 for s in self.snap.sections
                if s.type == SEC_DISK and s.instance == hdr["instance"])
            sec = Section(offset, hdr, ordinal)
            self.section = sec
            self.snap.sections.append(sec)
            self.section_header(sec)
            payload = self.read(sec.length, f"the {sec.label} payload", sec.label)
            sec.crc_actual = crc32c(payload)
            if sec.crc_actual != sec.crc:
                self.problem(sec.label, sec.offset + SECTION.offset("crc32c"),
                             f"CRC32C mismatch: the section header says {sec.crc:#010x}, "
                             f"the payload (bytes {sec.payload}..{sec.payload + sec.length - 1}) "
                             f"has {sec.crc_actual:#010x}")
            {SEC_CONFIG: self.config, SEC_VCPU: self.vcpu, SEC_DEVICE: self.device,
             SEC_VIRTIO: self.virtio, SEC_MEMORY: self.memory, SEC_DISK: self.disk,
             SEC_DISK_ID: self.disk_id, SEC_END: self.end}[sec.type](sec, payload)
            self.phase = max(self.phase, SECTION_RANK[sec.type])
            if sec.type == SEC_END:
                break
        self.snap.complete = True
        self.section = None
        rest, more = 0, False
        while True:
            chunk = self.f.read(1 << 20)
            if not chunk:
                break
            rest += len(chunk)
            if rest >= TRAILING_SCAN_MAX:
                more = True
                break
        if rest:
            self.snap.size = self.pos + rest
            count = f"at least {rest}" if more else str(rest)
            self.problem("after END", self.pos, f"{count} trailing byte(s) after the END "
                                                "section (nothing may follow END)")

    def header(self):
        raw = self.read(HEADER.size, "the header", "header")
        h = HEADER.decode(raw)
        self.snap.header = h
        if h["magic"] != MAGIC:
            self.fatal("header", 0, f"bad magic {h['magic']!r}, expected {MAGIC!r}: "
                                    "not a Carapace snapshot")
        if h["version"] not in VERSIONS:
            self.fatal("header", HEADER.offset("version"),
                       f"version {h['version']} is not supported (this reader knows "
                       f"versions {', '.join(map(str, VERSIONS[:-1]))} and {VERSIONS[-1]})")
        self.version = h["version"]
        if h["header_size"] != HEADER.size:
            self.fatal("header", HEADER.offset("header_size"),
                       f"header_size {h['header_size']}, must be {HEADER.size}")
        known = known_flags(self.version)
        if h["flags"] & ~known:
            words = "0x1 live" + (", 0x2 disks" if known & F_DISKS else "")
            self.problem("header", HEADER.offset("flags"),
                         f"unknown flag bits {h['flags'] & ~known:#x} in flags "
                         f"{h['flags']:#x} (known in version {self.version}: {words})")
        if h["reserved"]:
            self.problem("header", HEADER.offset("reserved"),
                         f"reserved is {h['reserved']:#x}, must be 0")

    def section_header(self, sec):
        label = sec.label
        types = section_types(self.version)
        if sec.type not in types:
            self.fatal(label, sec.offset, f"unknown section type {sec.type} (version "
                                          f"{self.version} has " +
                                          ", ".join(f"{t} {n}" for t, n in types.items()) + ")")
        length_at = sec.offset + SECTION.offset("length")
        fixed = fixed_length(self.version)
        if sec.type in fixed:
            want = fixed[sec.type]
            if sec.length != want:
                self.fatal(label, length_at, f"length {sec.length}, must be {want} "
                                             f"(the size of its payload struct in version "
                                             f"{self.version})")
        elif sec.type == SEC_DEVICE:
            biggest = max(layout.size for _, layout in DEVICES)
            if not DEVICE.size <= sec.length <= DEVICE.size + biggest:
                self.fatal(label, length_at, f"length {sec.length}, must be {DEVICE.size} + "
                                             "the device's state size")
        elif sec.type == SEC_VIRTIO:
            sizes = sorted(DEVICE.size + layout.size for _, layout in VIO_MODELS.values())
            if sec.length not in sizes:
                self.fatal(label, length_at, f"length {sec.length}, must be {DEVICE.size} + a "
                                             "virtio model's state size "
                                             f"({' or '.join(map(str, sizes))})")
        elif sec.type == SEC_MEMORY:
            pages, rest = divmod(sec.length - MEMRUN.size, PAGE_SIZE)
            if sec.length < MEMRUN.size or rest or not 1 <= pages <= RUN_MAX_PAGES:
                self.fatal(label, length_at, f"length {sec.length}, must be {MEMRUN.size} + "
                                             f"pages * {PAGE_SIZE} with 1..{RUN_MAX_PAGES} "
                                             "pages")
        elif sec.type == SEC_DISK:
            sectors, rest = divmod(sec.length - DISKRUN.size, DISK_SECTOR)
            if sec.length < DISKRUN.size or rest or not 1 <= sectors <= DISK_BLOCK_SECTORS:
                self.fatal(label, length_at, f"length {sec.length}, must be {DISKRUN.size} + "
                                             f"sectors * {DISK_SECTOR} with "
                                             f"1..{DISK_BLOCK_SECTORS} sectors")
        if sec.reserved:
            self.problem(label, sec.offset + SECTION.offset("reserved"),
                         f"reserved is {sec.reserved:#x}, must be 0")
        self.order(sec)

    def instance_problem(self, sec, want):
        self.problem(sec.label, sec.offset + SECTION.offset("instance"),
                     f"instance {sec.instance}, expected {want}")

    def expected_next(self):
        """What the stream needs next, in words (for order problems)."""
        if not self.snap.sections[:-1]:
            return "CONFIG"
        nr = self.nr_vcpus
        if self.phase <= SEC_VCPU and (nr is None or len(self.snap.vcpus) < nr):
            return f"VCPU {len(self.snap.vcpus)}"
        devices = devices_of(self.version)
        if self.phase <= SECTION_RANK[SEC_DEVICE] and len(self.snap.devices) < len(devices):
            i = len(self.snap.devices)
            return f"DEVICE {i} ({devices[i][0]})"
        if self.version >= VERSION_VIRTIO and self.phase <= SECTION_RANK[SEC_VIRTIO]:
            if self.disk_ids_needed():
                return f"VIRTIO {len(self.snap.virtio)} or DISK_ID 0"
            return f"VIRTIO {len(self.snap.virtio)}, MEMORY or END"
        if self.phase <= SECTION_RANK[SEC_DISK_ID] and self.disk_ids_needed():
            missing = self.disk_id_missing()
            if missing is not None:
                return f"DISK_ID {missing}"
        if self.phase <= SECTION_RANK[SEC_MEMORY]:
            return "MEMORY, DISK or END" if self.snap.disks_included else "MEMORY or END"
        return "DISK or END"

    def disk_ids_needed(self):
        """A version 6 stream without the disks' content names each disk's
        identity (DISK_ID)."""
        return self.version >= VERSION_DISK_ID and not self.snap.disks_included

    def disk_id_missing(self):
        """The slot of the first disk without its DISK_ID yet, or None."""
        have = {d["slot"] for d in self.snap.disk_ids}
        return next((d["slot"] for d in self.snap.disks if d["slot"] not in have), None)

    def order(self, sec):
        """The order rules: CONFIG, VCPU 0..n-1, DEVICE 0..k-1, VIRTIO 0.., DISK_ID 0..
        (version 6 without DISKS), MEMORY..., DISK..., END."""
        first = len(self.snap.sections) == 1
        where = sec.offset + SECTION.offset("type")
        if first and sec.type != SEC_CONFIG:
            self.problem(sec.label, where, f"the first section is {sec.type_name}; it must be "
                                           "CONFIG")
            return
        if sec.type == SEC_CONFIG:
            if not first:
                self.problem(sec.label, where, "a second CONFIG section (there is exactly "
                                               "one, first)")
            elif sec.instance:
                self.instance_problem(sec, 0)
            return
        if SECTION_RANK[sec.type] < self.phase:
            after = next(t for t, r in SECTION_RANK.items() if r == self.phase)
            self.problem(sec.label, where, f"{sec.type_name} section after a "
                                           f"{SECTION_TYPES[after]} section; "
                                           f"expected {self.expected_next()}")
            return
        nr = self.nr_vcpus
        vcpus, devices = len(self.snap.vcpus), len(self.snap.devices)
        if sec.type == SEC_VCPU:
            if nr is not None and vcpus >= nr:
                self.problem(sec.label, where, f"a VCPU section too many: the CONFIG says "
                                               f"{nr} vCPU(s)")
            elif sec.instance != vcpus:
                self.instance_problem(sec, vcpus)
            return
        if nr is not None and vcpus < nr:
            self.problem(sec.label, where, f"{sec.type_name} section where VCPU {vcpus} was "
                                           f"expected (the CONFIG says {nr} vCPU(s))")
            return
        models = devices_of(self.version)
        if sec.type == SEC_DEVICE:
            if devices >= len(models):
                self.problem(sec.label, where, f"a DEVICE section too many (version "
                                               f"{self.version} has {len(models)} devices)")
            elif sec.instance != devices:
                self.instance_problem(sec, devices)
            return
        if devices < len(models):
            self.problem(sec.label, where, f"{sec.type_name} section where DEVICE {devices} "
                                           f"({models[devices][0]}) was expected")
            return
        if sec.type == SEC_VIRTIO:
            if sec.instance != len(self.snap.virtio):
                self.instance_problem(sec, len(self.snap.virtio))
            return
        if SECTION_RANK[sec.type] > SECTION_RANK[SEC_DISK_ID] and \
                self.phase <= SECTION_RANK[SEC_DISK_ID] and self.disk_ids_needed():
            missing = self.disk_id_missing()
            if missing is not None:
                self.problem(sec.label, where, f"{sec.type_name} section before disk {missing}'s "
                                               "DISK_ID: a version 6 stream without the disks' "
                                               "content names each disk's identity, after the "
                                               "VIRTIO sections")
        if sec.type == SEC_DISK_ID:
            self.disk_id_order(sec, where)
            return
        if sec.type == SEC_DISK:
            self.disk_order(sec, where)
            return
        if sec.instance:
            self.instance_problem(sec, 0)

    def disk_id_order(self, sec, where):
        """A DISK_ID section: only without the flag DISKS, one per disk a VIRTIO
        section gave, in slot order."""
        if self.snap.disks_included:
            self.problem(sec.label, where, "a DISK_ID section in a stream with the disks' "
                                           "content (header flag DISKS)")
            return
        slots = [d["slot"] for d in self.snap.disks]
        want = self.disk_id_missing()
        if sec.instance not in slots:
            self.problem(sec.label, sec.offset + SECTION.offset("instance"),
                         f"instance {sec.instance} is not a disk's slot (the VIRTIO sections "
                         f"put disks in slot(s) {', '.join(map(str, slots)) or 'none'})")
        elif sec.instance != want:
            self.instance_problem(sec, want if want is not None else "none (every disk had "
                                                                      "its DISK_ID)")

    def disk_order(self, sec, where):
        """A DISK section: only in a stream with the flag DISKS, of a disk a
        VIRTIO section gave (its instance is that disk's slot), one the guest
        could write (a read-only disk's content is its image's)."""
        if not self.snap.disks_included:
            self.problem(sec.label, where, "a DISK section in a stream without the disks "
                                           "(header flag DISKS is not set)")
            return
        slots = [d["slot"] for d in self.snap.disks]
        if sec.instance not in slots:
            self.problem(sec.label, sec.offset + SECTION.offset("instance"),
                         f"instance {sec.instance} is not a disk's slot (the VIRTIO sections "
                         f"put disks in slot(s) {', '.join(map(str, slots)) or 'none'})")
        elif self.snap.disks[slots.index(sec.instance)]["read_only"]:
            self.problem(sec.label, sec.offset + SECTION.offset("instance"),
                         f"instance {sec.instance} is a read-only disk: a DISK section for a "
                         "read-only disk (its content is its image's, never the snapshot's)")

    # -- payloads

    def check_cstr(self, layout, base, values, fname):
        if b"\0" not in values[fname]:
            self.field_problem(layout, base, fname, f"{fname} is not NUL-terminated within its "
                                                    f"{len(values[fname])} bytes")

    def config(self, sec, payload):
        c = CONFIG.decode(payload)
        if self.snap.config is not None:       # a second CONFIG: reported by order()
            return
        self.snap.config = c
        self.nr_vcpus = max(1, min(c["nr_vcpus"], MAX_VCPUS))
        base = sec.payload
        name = c["name"].split(b"\0", 1)[0]
        if b"\0" not in c["name"] or not NAME_RE.match(name):
            self.field_problem(CONFIG, base, "name", f"name {c['name']!r} must be "
                                                     "[a-z0-9_-]{1,15}, NUL-terminated")
        if c["ram_size"] % RAM_ALIGN or c["ram_size"] < RAM_MIN:
            self.field_problem(CONFIG, base, "ram_size", f"ram_size {c['ram_size']:#x} must be "
                                                         "a multiple of 2 MiB, at least 8 MiB")
        if c["ram_gpa"] + c["ram_size"] > 1 << 64:
            self.field_problem(CONFIG, base, "ram_size", "ram_gpa + ram_size is beyond 2^64")
        if self.version == 1 and c["vs_sv"]:
            self.field_problem(CONFIG, base, "vs_sv",
                               f"vs_sv is {c['vs_sv']}, must be 0 (reserved in version 1)")
        if self.version < VERSION_AIA and c["features"] & FEAT_AIA:
            self.field_problem(CONFIG, base, "features",
                               f"features is {c['features']:#x}; bits {FEAT_AIA:#x} are not "
                               f"legal in a version {self.version} stream: AIA (bit 5) is "
                               f"version {VERSION_AIA}'s (an older stream has no IMSIC record "
                               "nor aplic device)")
        for fname, message, _ in legal_problems("CONFIG", c, 0):
            if not (fname == "vs_sv" and self.version == 1):
                self.field_problem(CONFIG, base, fname, message)
        if not c["timebase_hz"]:
            self.field_problem(CONFIG, base, "timebase_hz", "timebase_hz is 0")
        for fname in ("kernel_image", "initrd_image", "bootargs"):
            self.check_cstr(CONFIG, base, c, fname)

    def vcpu(self, sec, payload):
        features = self.snap.config["features"] if self.snap.config else FEAT_ALL
        v = vcpu_from_stream(payload, self.version, features)
        v["instance"] = sec.instance
        v["record_version"] = self.version
        self.snap.vcpus.append(v)
        base = sec.payload
        # where a field is in this version's payload (older ones: by name)
        layout = VCPU if self.version >= 3 else VCPU_V2
        if self.version >= 3:
            for rid, upper, name, rec in RECORDS:
                if v[f"{name}_rec_id"] != rid:
                    self.field_problem(VCPU, base, f"{name}_rec_id",
                                       f"record id {v[f'{name}_rec_id']} where {upper} ({rid}) "
                                       "must be (CORE, FP, CFI, FWFT, HSM, STA, PMU, IMSIC, "
                                       "DBTR by id)")
                    return
                if v[f"{name}_rec_size"] != rec.size:
                    self.field_problem(VCPU, base, f"{name}_rec_size",
                                       f"{upper} record size {v[f'{name}_rec_size']}, must be "
                                       f"{rec.size}")
                    return
        else:
            old = VCPU_V2.decode(bytes(payload[:vcpu_size(self.version)]).ljust(VCPU_V2.size,
                                                                                b"\0"))
            for fname, _, count, _ in VCPU_V2_ONLY:
                values = old[fname] if count > 1 else [old[fname]]
                for i, value in enumerate(values):
                    if not value:
                        continue
                    if count > 1:
                        msg = f"{fname}[{i}] is {value:#x}, must be 0"
                    else:
                        msg = f"{fname} is {value:#x}; bits {value:#x} are not legal for this VM: 0"
                    self.field_problem(VCPU_V2, base, fname, msg, i)
        if v["gpr"][0]:
            self.field_problem(layout, base, "gpr", f"x0 is {v['gpr'][0]:#x}, must be 0")
        if self.version < VERSION_MISALIGNED and v["misaligned_emulate"]:
            # versions 3 to 7: a reserved byte (1 and 2 have none: it reads as 0)
            self.field_problem(layout, base, "misaligned_emulate",
                               f"misaligned_emulate is {v['misaligned_emulate']:#x}, must be 0 "
                               f"(a reserved byte before version {VERSION_MISALIGNED})")
        # a version 1 record's tail is the reader's own, and always legal
        for fname, message, i in legal_problems("VCPU", v, features):
            self.field_problem(layout, base, fname, message, i)
        if self.version >= 2:
            self.vcpu_tail(v, base, layout)
        if self.version >= VERSION_AIA:
            self.imsic_record(v, base, features)
        if self.version >= VERSION_DBTR:
            self.dbtr_record(v, base)

    def dbtr_record(self, v, base):
        """The DBTR record's hook (hyp/state/dbtr_record.c), less what only
        the host that reads it knows (its firmware's trig_max: the shared
        memory is checked for one entry here, every trigger slot may be used):
        an address only with dbtr_shmem_on, aligned, in RAM; a free trigger
        all zero; an installed one's words as install_triggers takes them."""
        def bad(fname, message, index=0):
            self.field_problem(VCPU, base, fname, message, index)
        shmem, cfg = v["dbtr_shmem"], self.snap.config
        if not v["dbtr_shmem_on"] and shmem:
            bad("dbtr_shmem", f"dbtr_shmem is {shmem:#x}; must be 0 without dbtr_shmem_on")
        elif v["dbtr_shmem_on"] == 1:
            if shmem % DBTR_SHMEM_ALIGN:
                bad("dbtr_shmem", f"dbtr_shmem {shmem:#x} is not {DBTR_SHMEM_ALIGN}-byte aligned")
            elif cfg and not (cfg["ram_gpa"] <= shmem and
                              shmem + DBTR_ENTRY <= cfg["ram_gpa"] + cfg["ram_size"]):
                bad("dbtr_shmem", f"dbtr_shmem {shmem:#x} is not inside RAM "
                                  f"{cfg['ram_gpa']:#x}..{cfg['ram_gpa'] + cfg['ram_size'] - 1:#x}")
        for i in range(DBTR_TRIGGERS):
            words = {f: v[f][i] for f in ("dbtr_tdata1", "dbtr_tdata2", "dbtr_tdata3")}
            if not v["dbtr_state"][i]:
                for fname, word in words.items():
                    if word:
                        bad(fname, f"{fname}[{i}] is {word:#x}; a free trigger (dbtr_state 0) "
                                   "is all zero", i)
                continue
            why = dbtr_words_problem(words["dbtr_tdata1"], words["dbtr_tdata3"])
            if why:
                bad("dbtr_tdata1", f"dbtr_tdata1[{i}] is {words['dbtr_tdata1']:#x}: {why}", i)

    def imsic_record(self, v, base, features):
        """The IMSIC record's hook (hyp/state/vimsic.c): it fits the VM's kind
        (a PLIC VM's is 0 but vsiselect), the same identity count in every
        VCPU, the threshold and the bits that count allows."""
        def bad(fname, message, index=0):
            self.field_problem(VCPU, base, fname, message, index)
        n = v["imsic_nr_ids"]
        if not features & FEAT_AIA:
            if n:
                bad("imsic_nr_ids", f"imsic_nr_ids is {n}; a PLIC VM's (CONFIG's features "
                                    "lack aia) is 0")
            if v["imsic_eidelivery"]:
                bad("imsic_eidelivery", f"imsic_eidelivery is {v['imsic_eidelivery']}; a PLIC "
                                        "VM's is 0")
        elif n & 63 != 63 or n > IMSIC_MAX_IDS:
            bad("imsic_nr_ids", f"imsic_nr_ids is {n}; an AIA VM's is 63..2047 with "
                                "(n & 63) == 63")
        elif len(self.snap.vcpus) > 1 and n != self.snap.vcpus[0]["imsic_nr_ids"]:
            bad("imsic_nr_ids", f"imsic_nr_ids is {n}; VCPU 0's is "
                                f"{self.snap.vcpus[0]['imsic_nr_ids']} (every file of a VM has "
                                "as many identities)")
        if v["imsic_eithreshold"] > n:
            bad("imsic_eithreshold", f"imsic_eithreshold is {v['imsic_eithreshold']}; at most "
                                     f"imsic_nr_ids ({n})")
        for w in range(IMSIC_WORDS):
            mask = imsic_word_mask(n, w)
            for fname in ("imsic_eip", "imsic_eie"):
                word = v[fname][w]
                if word & ~mask:
                    bad(fname, f"{fname}[{w}] is {word:#x}; bits {word & ~mask:#x} are of "
                               f"identity 0 or above imsic_nr_ids ({n})", w)

    def vcpu_tail(self, v, base, layout):
        """The rules of the records the tables cannot say (SUSP, STA, PMU)."""
        def bad(fname, message, index=0):
            self.field_problem(layout, base, fname, message, index)
        if v["system_suspend"] == 1 and (v["hsm_state"] != 2 or v["resume_nonret"] != 1):
            bad("system_suspend", "system_suspend is set, but the vCPU is not in a "
                                  "non-retentive suspend (hsm_state 2, resume_nonret 1): a "
                                  "system suspend is one")
        sta = v["sta_shmem"]
        if sta != STA_OFF:
            cfg = self.snap.config
            if sta % STA_SIZE:
                bad("sta_shmem", f"sta_shmem {sta:#x} is not {STA_SIZE}-byte aligned (all ones "
                                 "is none)")
            elif cfg and not (cfg["ram_gpa"] <= sta and
                              sta + STA_SIZE <= cfg["ram_gpa"] + cfg["ram_size"]):
                bad("sta_shmem", f"sta_shmem {sta:#x}..{sta + STA_SIZE - 1:#x} is not inside "
                                 f"RAM {cfg['ram_gpa']:#x}.."
                                 f"{cfg['ram_gpa'] + cfg['ram_size'] - 1:#x}")
        configured, started = v["pmu_configured"], v["pmu_started"]
        if configured & ~PMU_VALID:
            bad("pmu_configured", f"pmu_configured {configured:#x} has bits "
                                  f"{configured & ~PMU_VALID:#x} that are no counter (valid: "
                                  f"{PMU_VALID:#x}: 0 cycle, 2 instret, 3..10 firmware)")
        if started & ~configured:
            bad("pmu_started", f"pmu_started {started:#x} has bits {started & ~configured:#x} "
                               f"that are not configured (pmu_configured {configured:#x})")
        for i, idx in enumerate(v["pmu_event_idx"]):
            if not configured >> i & 1:
                if idx:
                    bad("pmu_event_idx", f"pmu_event_idx[{i}] is {idx:#x}, but counter {i} is "
                                         "not configured (must be 0)", i)
            elif i in (PMU_CYCLE, PMU_INSTRET):
                want = PMU_EVENT_CYCLES if i == PMU_CYCLE else PMU_EVENT_INSTRUCTIONS
                if idx != want:
                    bad("pmu_event_idx", f"pmu_event_idx[{i}] is {idx:#x}; counter {i} counts "
                                         f"{pmu_event_words(want)} ({want:#x}) only", i)
            elif i >= PMU_FW_FIRST and not (idx >> 16 == PMU_EVENT_TYPE_FW and
                                            idx & 0xFFFF < len(PMU_FW_EVENTS)):
                bad("pmu_event_idx", f"pmu_event_idx[{i}] is {idx:#x}; firmware counter {i} "
                                     f"counts firmware events 0xf0000..0xf{len(PMU_FW_EVENTS) - 1:04x} "
                                     "only", i)

    def device(self, sec, payload):
        d = DEVICE.decode(payload)
        index = len(self.snap.devices)
        name = cstr(d["name"])
        sec.device_name = name
        state = payload[DEVICE.size:]
        entry = {"index": sec.instance, "name": name, "state_size": d["state_size"],
                 "state": bytes(state), "fields": None}
        self.snap.devices.append(entry)
        base = sec.payload
        if b"\0" not in d["name"]:
            self.field_problem(DEVICE, base, "name", "name is not NUL-terminated")
        if DEVICE.size + d["state_size"] != sec.length:
            self.field_problem(DEVICE, base, "state_size",
                               f"state_size {d['state_size']} does not match the section "
                               f"length {sec.length} (must be {DEVICE.size} + state_size)")
            return
        if d["reserved"]:
            self.field_problem(DEVICE, base, "reserved", f"reserved is {d['reserved']:#x}, "
                                                         "must be 0")
        models = devices_of(self.version)
        if index >= len(models):
            return                                  # reported by order()
        want_name, layout = models[index]
        if name != want_name:
            self.field_problem(DEVICE, base, "name", f"device {index} is {name!r}; version "
                                                     f"{self.version} has {want_name!r} there")
            return
        if d["state_size"] != layout.size:
            self.field_problem(DEVICE, base, "state_size",
                               f"state_size {d['state_size']}, {want_name} has {layout.size}")
            return
        entry["fields"] = layout.decode(state)
        state_base = base + DEVICE.size
        aia = bool(self.snap.config and self.snap.config["features"] & FEAT_AIA)
        if want_name in IRQCHIP_DEVICES and IRQCHIP_DEVICES[want_name] != aia:
            # the interrupt controller of the other kind: all zero, not loaded
            nonzero = next((i for i, b in enumerate(state) if b), None)
            if nonzero is not None:
                self.problem(sec.label, state_base + nonzero,
                             f"byte {nonzero} of the {want_name} state is not 0: this "
                             f"{'AIA' if aia else 'PLIC'} VM does not have this device (the "
                             "interrupt controller of the other kind), its state is all zero")
            return
        # the table's rules (include/abi/snapshot_devices.h), then, as a
        # restore does, what the table cannot say: the model's hook
        problems = legal_problems(want_name, entry["fields"], 0)
        for fname, message, i in problems:
            self.field_problem(layout, state_base, fname, message, i)
        hook = {"uart16550": self.uart_state, "plic": self.plic_state,
                "aplic": self.aplic_state}.get(want_name)
        if hook and not problems:
            hook(entry["fields"], layout, state_base)

    def uart_state(self, s, layout, base):
        """The UART model's hook (hyp/vdev/vuart.c): the queue fits the ring."""
        queued = (s["rx_head"] - s["rx_tail"]) & 0xFFFFFFFF
        if queued > UART_RX_FIFO:
            self.field_problem(layout, base, "rx_head",
                               f"rx_head {s['rx_head']} - rx_tail {s['rx_tail']} = {queued} "
                               f"bytes queued; at most {UART_RX_FIFO}")

    def plic_state(self, s, layout, base):
        """The PLIC model's hook (hyp/vdev/vplic.c): source 0 has no priority,
        the contexts of vCPUs the VM does not have are 0."""
        nr = self.nr_vcpus or PLIC_CONTEXTS
        if s["priority"][0]:
            self.field_problem(layout, base, "priority",
                               f"priority[0] is {s['priority'][0]}: source 0 does not exist, "
                               "must be 0")
        for c in range(nr, PLIC_CONTEXTS):
            for fname in ("enable", "threshold"):
                if s[fname][c]:
                    self.field_problem(layout, base, fname,
                                       f"{fname}[{c}] is {s[fname][c]:#x}, but the VM has {nr} "
                                       "vCPU(s) (contexts beyond them must be 0)", c)

    def aplic_state(self, s, layout, base):
        """The APLIC model's hook (hyp/vdev/vaplic.c, hyp/lib/aplic_model.c's
        aplic_model_check()): source 0 does not exist; an inactive source has
        no target, pending or enable bit; a level source pends only while its
        rectified input is high; with IE set nothing pending is enabled."""
        def bad(fname, message, index=0):
            self.field_problem(layout, base, fname, message, index)
        sm = [cfg & 7 for cfg in s["sourcecfg"]]
        active = sum(1 << i for i in range(1, 32) if sm[i] in (1, 4, 5, 6, 7))
        level = sum(1 << i for i in range(1, 32) if sm[i] in (6, 7))
        inverted = sum(1 << i for i in range(1, 32) if sm[i] in (5, 7))
        wired = sum(1 << i for i in range(1, 32) if sm[i] in (4, 5, 6, 7))
        rectified = (s["level"] ^ inverted) & wired
        if s["sourcecfg"][0]:
            bad("sourcecfg", f"sourcecfg[0] is {s['sourcecfg'][0]:#x}: source 0 does not "
                             "exist, must be 0")
        for i in range(32):
            if s["target"][i] and not active >> i & 1:
                bad("target", f"target[{i}] is {s['target'][i]:#x}, but source {i} is "
                              "inactive (SM 0): must be 0", i)
        pending = s["pending"]
        if pending & ~active:
            bad("pending", f"pending is {pending:#x}; bits {pending & ~active:#x} are of "
                           "inactive sources")
        elif pending & level & ~rectified:
            bad("pending", f"pending is {pending:#x}; bits {pending & level & ~rectified:#x} "
                           "are of level sources whose input is low")
        elif s["domaincfg"] & APLIC_IE and pending & s["enabled"]:
            bad("pending", f"pending is {pending:#x}; bits {pending & s['enabled']:#x} are "
                           "enabled with IE set: their MSIs would have been sent")
        if s["enabled"] & ~active:
            bad("enabled", f"enabled is {s['enabled']:#x}; bits {s['enabled'] & ~active:#x} "
                           "are of inactive sources")

    def virtio(self, sec, payload):
        """A VIRTIO section: the model named, its table's rules, then what
        the model's hook checks (hyp/vdev/vio_mmio.c, vblk.c, vnet.c)."""
        d = DEVICE.decode(payload)
        name = cstr(d["name"])
        sec.device_name = name
        entry = {"slot": sec.instance, "name": name, "state_size": d["state_size"],
                 "state": bytes(payload[DEVICE.size:]), "fields": None}
        kinds = [v["name"] for v in self.snap.virtio]
        self.snap.virtio.append(entry)
        base = sec.payload
        if name not in VIO_MODELS or b"\0" not in d["name"]:
            self.field_problem(DEVICE, base, "name", f"{name!r} is not a virtio model "
                                                     f"({', '.join(VIO_MODELS)})")
            return
        layout = VIO_MODELS[name][1]
        if d["state_size"] != layout.size or DEVICE.size + layout.size != sec.length:
            self.field_problem(DEVICE, base, "state_size",
                               f"state_size {d['state_size']}, {name} has {layout.size} (and "
                               f"the section length must be {DEVICE.size} + it)")
            return
        if d["reserved"]:
            self.field_problem(DEVICE, base, "reserved", f"reserved is {d['reserved']:#x}, "
                                                         "must be 0")
            return
        # where a VM puts its devices: disks first, two of each at most
        if name == "virtio_blk" and "virtio_net" in kinds:
            self.field_problem(DEVICE, base, "name", "a disk after a NIC (disks come first)")
            return
        if kinds.count(name) >= (MAX_DISKS if name == "virtio_blk" else MAX_NICS):
            self.field_problem(DEVICE, base, "name", "more devices of this kind than a VM has "
                                                     "(2)")
            return
        entry["fields"] = layout.decode(payload[DEVICE.size:])
        state_base = base + DEVICE.size
        problems = legal_problems(name, entry["fields"], 0)
        for fname, message, i in problems:
            self.field_problem(layout, state_base, fname, message, i)
        if not problems:
            self.vio_state(name, entry["fields"], layout, state_base)

    def vio_state(self, name, s, layout, base):
        """The models' hooks (docs/snapshot-format.md, "VIRTIO"): the first
        rule broken, as a restore names it."""
        def bad(fname, message, index=0):
            self.field_problem(layout, base, fname, message, index)
        if name == "virtio_blk":
            if not 1 <= s["seg_max"] <= VIO_BLK_SEG_MAX:
                return bad("seg_max", f"seg_max is {s['seg_max']}; legal: 1..{VIO_BLK_SEG_MAX}")
            if not serial_ok(s["serial"]):
                return bad("serial", f"serial {s['serial']!r} is not a GET_ID answer this "
                                     "device gives (NAME-vdX, NUL-padded)")
            offer = VIO_OFFER[name] | (VIO_BLK_F_RO if s["read_only"] else 0)
        else:
            if s["mac"][0] & 1 or not any(s["mac"]):
                return bad("mac", f"mac {mac_text(s['mac'])} is not a unicast address")
            raw = s["switch_name"].split(b"\0", 1)[0]
            if b"\0" not in s["switch_name"] or not NAME_RE.match(raw):
                return bad("switch_name", f"switch_name {s['switch_name']!r} must be "
                                          "[a-z0-9_-]{1,15}, NUL-terminated")
            offer = VIO_OFFER[name]
        why = vio_transport_problem(name, s, offer, self.snap.config)
        if why:
            bad(*why)

    def memory(self, sec, payload):
        r = MEMRUN.decode(payload)
        base = sec.payload
        zero = bytes(PAGE_SIZE)
        data = memoryview(payload)[MEMRUN.size:]
        run = {"gpa": r["gpa"], "pages": r["pages"], "data_offset": base + MEMRUN.size,
               "zero_pages": sum(1 for i in range(0, len(data), PAGE_SIZE)
                                 if data[i:i + PAGE_SIZE] == zero)}
        self.snap.runs.append(run)
        if not 1 <= r["pages"] <= RUN_MAX_PAGES:
            self.field_problem(MEMRUN, base, "pages",
                               f"pages {r['pages']} must be 1..{RUN_MAX_PAGES}")
        elif MEMRUN.size + r["pages"] * PAGE_SIZE != sec.length:
            self.field_problem(MEMRUN, base, "pages",
                               f"pages {r['pages']} does not match the section length "
                               f"{sec.length} (must be {MEMRUN.size} + pages * {PAGE_SIZE})")
        run["pages"] = (sec.length - MEMRUN.size) // PAGE_SIZE    # what the bytes hold
        if r["gpa"] % PAGE_SIZE:
            self.field_problem(MEMRUN, base, "gpa", f"gpa {r['gpa']:#x} is not page aligned")
        end = r["gpa"] + run["pages"] * PAGE_SIZE
        cfg = self.snap.config
        if cfg and not (cfg["ram_gpa"] <= r["gpa"] and end <= cfg["ram_gpa"] + cfg["ram_size"]):
            self.field_problem(MEMRUN, base, "gpa",
                               f"run {r['gpa']:#x}..{end - 1:#x} is not inside RAM "
                               f"{cfg['ram_gpa']:#x}..{cfg['ram_gpa'] + cfg['ram_size'] - 1:#x}")
        elif self.prev_run_end is not None and r["gpa"] < self.prev_run_end:
            self.field_problem(MEMRUN, base, "gpa",
                               f"gpa {r['gpa']:#x} is below the end of the previous run "
                               f"{self.prev_run_end:#x} (runs must be in increasing order, "
                               "not overlapping)")
        self.prev_run_end = max(end, self.prev_run_end or 0)

    def disk(self, sec, payload):
        """A DISK run (docs/snapshot-format.md, "DISK"): its first problem,
        in the order the hypervisor's restore checks (snap_disk_load.c)."""
        r = DISKRUN.decode(payload)
        base = sec.payload
        data = memoryview(payload)[DISKRUN.size:]
        run = {"slot": sec.instance, "sector": r["sector"], "sectors": len(data) // DISK_SECTOR,
               "data_offset": base + DISKRUN.size, "zero": data == ZERO_BLOCK[:len(data)]}
        self.snap.disk_runs.append(run)
        disk = next((d for d in self.snap.disks if d["slot"] == sec.instance), None)
        if disk is None or not self.snap.disks_included or disk["read_only"]:
            return                                  # reported by order()
        cap = disk["capacity"]

        def bad(fname, message):
            self.field_problem(DISKRUN, base, fname, message)
        if r["sectors"] != run["sectors"]:
            return bad("sectors", f"sectors {r['sectors']} does not match the section length "
                                  f"{sec.length} (must be {DISKRUN.size} + sectors * "
                                  f"{DISK_SECTOR})")
        if r["reserved"]:
            return bad("reserved", f"reserved is {r['reserved']:#x}, must be 0")
        if r["sector"] % DISK_BLOCK_SECTORS:
            return bad("sector", f"sector {r['sector']} is not the start of a block (a multiple "
                                 f"of {DISK_BLOCK_SECTORS})")
        if cap is None:
            return                                  # its VIRTIO section was refused
        if r["sector"] >= cap:
            return bad("sector", f"sector {r['sector']} is past the disk's end (its capacity is "
                                 f"{cap} sectors)")
        want = min(DISK_BLOCK_SECTORS, cap - r["sector"])
        if r["sectors"] != want:
            return bad("sectors", f"sectors {r['sectors']}: the block at sector {r['sector']} "
                                  f"has {want} (a whole block, or the disk's last)")
        if (sec.instance, r["sector"]) in self.disk_blocks:
            return bad("sector", f"sector {r['sector']}: a block that came before (each block "
                                 "comes at most once)")
        self.disk_blocks.add((sec.instance, r["sector"]))

    def disk_id(self, sec, payload):
        """A DISK_ID (docs/snapshot-format.md, "DISK_ID"): its first problem, in
        the order the hypervisor's restore checks (snap_disk_id.c)."""
        h = DISKID.decode(payload)
        samples = disk_id_samples(payload)
        base = sec.payload
        self.snap.disk_ids.append({"slot": sec.instance, "sectors": h["sectors"],
                                   "samples": [{"block": x["block"], "crc32c": x["crc32c"]}
                                               for x in samples[:min(h["samples"],
                                                                     DISK_ID_SAMPLES)]]})
        disk = next((d for d in self.snap.disks if d["slot"] == sec.instance), None)

        def bad(fname, message, i=None):
            if i is None:
                return self.field_problem(DISKID, base, fname, message)
            at = base + DISKID.offset("sample") + i * DISKID_SAMPLE.size
            return self.problem(sec.label, at + DISKID_SAMPLE.offset(fname),
                                f"sample[{i}].{fname}: {message}")
        if h["reserved"]:
            return bad("reserved", f"reserved is {h['reserved']:#x}, must be 0")
        if disk is None or disk["capacity"] is None:
            return
        if h["sectors"] != disk["capacity"]:
            return bad("sectors", f"sectors {h['sectors']} is not the disk's capacity "
                                  f"({disk['capacity']}, its VIRTIO section's)")
        blocks = disk_id_blocks(h["sectors"]) if h["sectors"] else []
        if h["samples"] != len(blocks):
            return bad("samples", f"samples {h['samples']}, must be {len(blocks)} "
                                  f"(min({DISK_ID_SAMPLES}, the disk's blocks))")
        for i, x in enumerate(samples):
            if i >= len(blocks) and (x["block"] or x["crc32c"] or x["reserved"]):
                return bad("block", "a sample after the last is not all zero", i)
            if i < len(blocks) and x["block"] != blocks[i]:
                return bad("block", f"block {x['block']} is not the sample's ({blocks[i]}: "
                                    "the first, the last and evenly spaced ones between)", i)
            if x["reserved"]:
                return bad("reserved", f"reserved is {x['reserved']:#x}, must be 0", i)

    def end(self, sec, payload):
        e = END.decode(payload)
        self.snap.end = e
        base = sec.payload
        before = len(self.snap.sections) - 1
        if e["sections"] != before:
            self.field_problem(END, base, "sections", f"sections is {e['sections']}, but "
                                                      f"{before} sections came before END")
        pages = self.snap.memory_pages
        if e["memory_pages"] != pages:
            self.field_problem(END, base, "memory_pages",
                               f"memory_pages is {e['memory_pages']}, but the MEMORY sections "
                               f"hold {pages} pages")


def mac_text(mac):
    return ":".join(f"{b:02x}" for b in mac)


def serial_ok(raw):
    """@raw (20 bytes) is NAME-vdX NUL-padded, NAME a VM name, X a..h: what a
    disk's GET_ID answers."""
    text = raw.split(b"\0", 1)[0]
    n = len(text)
    return (5 <= n <= 19 and text[-4:-1] == b"-vd" and 0x61 <= text[-1] <= 0x68 and
            NAME_RE.match(text[:-4]) is not None and not any(raw[n:]))


def _in_ram(cfg, gpa, length):
    if cfg is None:
        return True
    base, size = cfg["ram_gpa"], cfg["ram_size"]
    return gpa >= base and length <= size and gpa - base <= size - length


def vio_transport_problem(model, s, offer, cfg):
    """(field, message, index) of the first transport rule @s breaks for a
    device of @model offering @offer in the VM @cfg describes, or None
    (hyp/vdev/vio_mmio.c vio_mmio_check_state, in its order)."""
    st = s["status"]
    driver_ok, features_ok = VIO_STATUS["driver_ok"], VIO_STATUS["features_ok"]
    needs_reset = VIO_STATUS["needs_reset"]
    if s["device_features"] != offer:
        return ("device_features", f"device_features {s['device_features']:#x} is not what the "
                                   f"device offers ({offer:#x})", 0)
    if st & driver_ok and not st & features_ok:
        return ("status", f"status {st:#x}: DRIVER_OK without FEATURES_OK", 0)
    if st & features_ok and (s["driver_features"] & ~s["device_features"] or
                             not s["driver_features"] & VIO_F_VERSION_1):
        return ("driver_features", f"driver_features {s['driver_features']:#x}: with "
                                   "FEATURES_OK, a subset of device_features with VERSION_1", 0)
    if s["interrupt_status"] and not st & driver_ok:
        return ("interrupt_status", f"interrupt_status {s['interrupt_status']:#x}: an interrupt "
                                    "before DRIVER_OK", 0)
    for q in range(VIO_QUEUES):
        qmax = VIO_QUEUE_MAX[model][q]
        fields = ("q_desc", "q_avail", "q_used", "q_ready", "q_fault", "q_size", "q_next_avail",
                  "q_next_used")
        if not qmax:
            if any(s[f][q] for f in fields):
                return ("q_desc", f"queue {q}: a queue this device does not have is not all "
                                  "zero", q)
            continue
        why = _queue_problem(s, q, qmax, cfg)
        if why:
            return why
    return None


def _queue_problem(s, q, qmax, cfg):
    st = s["status"]
    fault, size, ready = s["q_fault"][q], s["q_size"][q], s["q_ready"][q]
    avail_i, used_i = s["q_next_avail"][q], s["q_next_used"][q]
    out = (avail_i - used_i) & 0xFFFF
    needs_reset, driver_ok = VIO_STATUS["needs_reset"], VIO_STATUS["driver_ok"]
    chain_fault = 4                 # VIRTQ_FAULT_AVAIL_IDX: the first fault of a chain
    if fault and not st & needs_reset:
        return ("q_fault", f"q_fault[{q}] is {fault}: a faulted queue sets NEEDS_RESET in "
                           "status", q)
    if fault >= chain_fault and not ready:
        return ("q_fault", f"q_fault[{q}] is {fault}: a chain's fault on a queue that is not "
                           "ready", q)
    if fault and fault < chain_fault and ready:
        return ("q_fault", f"q_fault[{q}] is {fault}: a configuration fault on a ready queue",
                q)
    if fault >= chain_fault and not st & driver_ok:
        return ("q_fault", f"q_fault[{q}] is {fault}: a chain's fault before DRIVER_OK", q)
    if not ready:
        if avail_i or used_i:
            return ("q_next_avail" if avail_i else "q_next_used",
                    f"queue {q} is not ready: it has taken no chain (its indices are 0)", q)
        return None
    if not size or size & (size - 1) or size > qmax:
        return ("q_size", f"q_size[{q}] is {size}: a ready queue's size is a power of two up "
                          f"to {qmax}", q)
    parts = (("q_desc", 16, 16 * size, "descriptor table"), ("q_avail", 2, 6 + 2 * size,
                                                              "available ring"),
             ("q_used", 4, 6 + 8 * size, "used ring"))
    for fname, align, length, what in parts:
        gpa = s[fname][q]
        if gpa % align:
            return (fname, f"{fname}[{q}] is {gpa:#x}: the {what} is {align}-byte aligned", q)
        if not _in_ram(cfg, gpa, length):
            return (fname, f"{fname}[{q}] is {gpa:#x}: the {what} ({length} bytes) is not "
                           "inside the VM's RAM", q)
    if not fault and out:
        return ("q_next_used", f"q_next_used[{q}] is {used_i}, q_next_avail {avail_i}: chains in "
                               "flight (a state is taken drained)", q)
    if out > size:
        return ("q_next_used", f"q_next_used[{q}] is {used_i}, q_next_avail {avail_i}: more "
                               "chains in flight than the queue holds", q)
    if not st & driver_ok and avail_i:
        return ("q_next_avail", f"q_next_avail[{q}] is {avail_i}: a chain taken before "
                                "DRIVER_OK", q)
    return None


class GzipDamage(OSError):
    """The gzip layer of a compressed snapshot file is damaged or cut short."""


class _GzipStream:
    """The stream inside a gzip file: read() and seek() as a binary file,
    any damage of the gzip layer (bad header, corrupt deflate data, its CRC32
    or length trailer wrong, the file cut short) raised as GzipDamage."""

    def __init__(self, raw):
        self.raw = raw
        self.gz = gzip.GzipFile(fileobj=raw, mode="rb")

    def _guard(self, op, *args):
        try:
            return op(*args)
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            raise GzipDamage(f"the gzip layer is damaged: {e}") from None

    def read(self, n=-1):
        return self._guard(self.gz.read, n)

    def seek(self, offset):
        return self._guard(self.gz.seek, offset)

    def close(self):
        self.gz.close()
        self.raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_stream(source):
    """(file object reading the stream, name, compressed, file bytes) for
    @source: a path or bytes (tests).  A file that starts with gzip's magic is
    expanded as it is read; any other is the stream itself."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw, name = io.BytesIO(bytes(source)), "<bytes>"
        size = len(source)
    else:
        raw, name = open(source, "rb"), str(source)
        size = os.fstat(raw.fileno()).st_size
    compressed = raw.read(len(GZIP_MAGIC)) == GZIP_MAGIC
    raw.seek(0)
    return (_GzipStream(raw) if compressed else raw), name, compressed, size


def _open(source):
    f, name, _, _ = open_stream(source)
    return f, name


def stream_size(source):
    """Bytes of the stream in @source (a gzip file expanded), without checking it."""
    f, _, compressed, size = open_stream(source)
    with f:
        if not compressed:
            return size
        total = 0
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return total
            total += len(chunk)


def parse(source, strict=True):
    """Read the stream in @source (a path or bytes) and check every rule.
    strict: raise SnapError at the first problem.  Otherwise collect the
    problems in .problems and decode as much as possible (inspect)."""
    f, name, compressed, file_size = open_stream(source)
    snap = Snapshot(name)
    snap.source = source
    snap.compressed, snap.file_size = compressed, file_size
    with f:
        parser = _Parser(f, snap, strict)
        try:
            parser.run()
        except _Fatal as e:
            err = e.args[0]
            if strict:
                raise err from None
            snap.problems.append(err)
        except GzipDamage as e:
            # Where the expanded stream stopped: what came before was read and checked.
            label = parser.section.label if parser.section else "gzip"
            err = SnapError(label, parser.pos, f"{e} (after {parser.pos} bytes of the stream; "
                                               f"the compressed file is {file_size} bytes)")
            if strict:
                raise err from None
            snap.problems.append(err)
    return snap


def verify(source):
    """The Snapshot if @source is a valid stream; else SnapError (the first problem)."""
    return parse(source, strict=True)


