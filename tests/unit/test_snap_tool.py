# SPDX-License-Identifier: MIT
"""Tests for tools/carapace-snap (inspect, verify, diff of snapshot files) and
for carapace-ctl's snapshot/restore client against a fake hypervisor (a fake
control socket and a fake stream socket).

The snapshots are made here by a writer of our own: its struct formats, field
offsets and CRC come from docs/snapshot-format.md, not from the tool, so the
tool's parser is checked against a second reading of the format.  The layouts
are also checked against the C header (include/abi/snapshot_format.h)."""

import gzip
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from carapace import paths, snapshot, snapshot_legal, snapshot_text
from carapace import snapshot_format as snapfmt
from carapace.cli import ctl as ctl_cli
from carapace.cli import snap as snap_cli
from carapace.client import COMMANDS, ERROR_CODES
from carapace.crc32c import crc32c
from carapace.paths import default_stream_socket
from carapace.snapshot import SnapError, parse, stream_size
from carapace.snapshot_diff import diff, diff_text
from carapace.snapshot_format import (DEVICES, FEAT_SVADU, HEADER, MEMRUN, PLIC, PMU_COUNTERS,
                                      SECTION, UART, VCPU_V1_SIZE, VERSION, VERSIONS, VMGENID,
                                      Layout)
from carapace.snapshot_legal import LEGAL, LEGAL_HEADERS, load_legal_rules
from carapace.snapshot_text import inspect_json, inspect_text, uart_queue
from carapace.streams import Progress
from carapace.units import human_size
from harness.fakes import FakeHypervisor, err, ok

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
SNAP_TOOL = ROOT / "tools" / "carapace-snap"
HEADER_H = ROOT / paths.ABI_INCLUDE / "snapshot_format.h"
RECORDS_H = ROOT / paths.ABI_INCLUDE / "snapshot_records.h"
DEVICES_H = ROOT / paths.ABI_INCLUDE / "snapshot_devices.h"
MiB = 1 << 20
PAGE = 4096
RAM_GPA = 0x80000000




# --- an independent writer ---------------------------------------------------------

def _crc_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 * (c & 1))
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc32c_ref(data, crc=0):
    """CRC32C, byte at a time: init ~0, reflected 0x82F63B78, final ~0;
    continuing from the finished CRC @crc."""
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc32c_bitwise(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


# Payload formats as docs/snapshot-format.md gives them (little-endian, packed).
HEADER_FMT = "<8sIIQQ"                                   # 32
SECTION_FMT = "<IIQII"                                   # 24
CONFIG_FMT = "<16sQQIIIIIIQQ32s32s512s"                  # 648
VCPU_V1_FMT = "<32Q15Q32QQ4B3I2Q"                        # 672: a version 1 record
VCPU_FMT = VCPU_V1_FMT + "4BIQII11II11Q2Q"                # 848: version 2
DEVICE_FMT = "<16sII"                                    # 24
UART_FMT = "<9B7sII256s"                                 # 280
PLIC_FMT = "<32I3I8I8I"                                  # 204
VMGENID_FMT = "<16sB7s"                                  # 24
APLIC_FMT = "<I32I32I5I"                                 # 280: version 7
IMSIC_FMT = "<IIIIQ32Q32Q"                               # 536: the IMSIC record, version 7
DBTR_FMT = "<QB7B8B8Q8Q8Q"                                # 216: the DBTR record, version 8
DISK_RUN_FMT = "<QII"                                    # 16: sector, sectors, reserved
DISK_ID_SAMPLE_FMT = "<QII"                              # 16: block, crc32c, reserved
DISK_ID_FMT = "<QII256s"                                 # 272: sectors, samples, reserved, 16 samples
CONFIG, VCPU, DEVICE, MEMORY, END = 1, 2, 3, 4, 5
VCPU_CSR_NAMES = ["pc", "sstatus", "vsstatus", "vsie", "vstvec", "vsscratch", "vsepc",
                  "vscause", "vstval", "vsatp", "vstimecmp", "hvip", "scounteren", "senvcfg",
                  "ssp"]
# Offsets within the payloads (the document's tables).
CONFIG_OFF = {"name": 0, "ram_gpa": 16, "ram_size": 24, "nr_vcpus": 32, "cfi_policy": 36,
              "features": 40, "boot_count": 44, "debug_ext": 48, "vs_sv": 52,
              "guest_time": 56, "timebase_hz": 64, "kernel_image": 72, "initrd_image": 104,
              "bootargs": 136}
VCPU_OFF = {"gpr": 0, **{n: 256 + 8 * i for i, n in enumerate(VCPU_CSR_NAMES)}, "f": 376,
            "fcsr": 632, "lp_value": 640, "lp_locked": 641, "ss_value": 642, "ss_locked": 643,
            "hsm_state": 644, "waiting": 648, "resume_nonret": 652, "resume_addr": 656,
            "resume_opaque": 664,
            # version 2
            "misaligned_locked": 672, "pte_ad_value": 673, "pte_ad_locked": 674,
            "system_suspend": 675, "reserved": 676, "sta_shmem": 680, "pmu_configured": 688,
            "pmu_started": 692, "pmu_event_idx": 696, "reserved2": 740, "pmu_value": 744,
            "reserved3": 832}
VCPU_V2_NAMES = ["misaligned_locked", "pte_ad_value", "pte_ad_locked", "system_suspend",
                 "reserved", "sta_shmem", "pmu_configured", "pmu_started"]
STA_OFF = (1 << 64) - 1
UART_OFF = {"ier": 0, "lcr": 1, "mcr": 2, "scr": 3, "fcr": 4, "dll": 5, "dlm": 6,
            "thre_pending": 7, "irq_level": 8, "pad": 9, "rx_head": 16, "rx_tail": 20,
            "rx": 24}
PLIC_OFF = {"priority": 0, "level": 128, "pending": 132, "claimed": 136, "enable": 140,
            "threshold": 172}
VMGENID_OFF = {"id": 0, "level": 16, "pad": 17}
APLIC_OFF = {"domaincfg": 0, "sourcecfg": 4, "target": 132, "pending": 260, "enabled": 264,
             "level": 268, "genmsi": 272, "pad": 276}
# a version 7 VCPU payload: the IMSIC record's header at 896, its fields behind it
IMSIC_OFF = {"imsic_nr_ids": 904, "imsic_eidelivery": 908, "imsic_eithreshold": 912,
             "imsic_reserved": 916, "vsiselect": 920, "imsic_eip": 928, "imsic_eie": 1184}
# a version 8 VCPU payload: the DBTR record's header at 1440, its fields behind it
DBTR_OFF = {"dbtr_shmem": 1448, "dbtr_shmem_on": 1456, "dbtr_reserved": 1457,
            "dbtr_state": 1464, "dbtr_tdata1": 1472, "dbtr_tdata2": 1536, "dbtr_tdata3": 1600}
GENID = bytes.fromhex("0123456789abcdeffedcba9876543210")


def page_of(seed):
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(64)) * (PAGE // 64)


class Builder:
    """Guest state as plain dicts; build() writes the stream.  Tests change the
    state, or the section list (sections()), before writing."""

    def __init__(self, nr_vcpus=2, ram_size=16 * MiB, pages=None):
        self.flags, self.magic, self.version, self.header_size = 0, b"CARASNAP", 2, 32
        self.header_reserved = 0
        self.config = {"name": b"alpha", "ram_gpa": RAM_GPA, "ram_size": ram_size,
                       "nr_vcpus": nr_vcpus, "cfi_policy": 0, "features": 0x1F,
                       "boot_count": 1, "debug_ext": 0, "vs_sv": 39,
                       "reserved": 0,             # offset 52 in version 1, not vs_sv
                       "guest_time": 123_456_789, "timebase_hz": 10_000_000,
                       "kernel_image": b"alpha.kernel", "initrd_image": b"alpha.initrd",
                       "bootargs": b"console=ttyS0 quiet"}
        self.vcpus = [self.vcpu(i) for i in range(nr_vcpus)]
        self.uart = {"ier": 0x01, "lcr": 0x03, "mcr": 0x08, "scr": 0x5A, "fcr": 0x07,
                     "dll": 0x01, "dlm": 0x00, "thre_pending": 1, "irq_level": 0,
                     "pad": bytes(7), "rx_head": 105, "rx_tail": 100,
                     "rx": bytes(100) + b"hello" + bytes(151)}
        self.plic = {"priority": [0] + [1] * 31, "level": 1 << 10, "pending": 1 << 10,
                     "claimed": 0, "enable": [1 << 10] + [0] * 7, "threshold": [0] * 8}
        if nr_vcpus > 1:
            self.plic["enable"][1] = (1 << 10) | (1 << 3)
        self.genid = {"id": GENID, "level": 0, "pad": bytes(7)}
        # MEMORY runs: (gpa, [page bytes]).
        self.runs = pages if pages is not None else [
            (RAM_GPA, [page_of(1), page_of(2)]),
            (RAM_GPA + 2 * PAGE, [page_of(3)]),                       # adjacent
            (RAM_GPA + ram_size - PAGE, [page_of(4)])]                # the last page

    @staticmethod
    def vcpu(i):
        v = {"gpr": [0] + [0x1000 * i + r for r in range(1, 32)],
             "pc": 0xFFFFFFFF80001234 + 2 * i, "sstatus": (1 << 8) | (1 << 5) | (1 << 23) | (3 << 13),
             "vsstatus": 0x8000000200006000, "vsie": 0x222, "vstvec": 0xFFFFFFFF80002000,
             "vsscratch": 0x11, "vsepc": 0x22, "vscause": 8, "vstval": 0x33,
             "vsatp": (8 << 60) | 0x81234, "vstimecmp": 0x123456789,
             "hvip": (1 << 6), "scounteren": 7, "senvcfg": (1 << 2) | (1 << 3),
             "ssp": 0xFF60000001234000, "f": [0x3FF0000000000000 + r for r in range(32)],
             "fcsr": 0x20, "lp_value": 1, "lp_locked": 1, "ss_value": 1, "ss_locked": 1,
             "hsm_state": 1, "waiting": 0, "resume_nonret": 0, "resume_addr": 0,
             "resume_opaque": 0,
             # version 2: FWFT memory features, SUSP, STA, PMU (vCPU 0 uses them all)
             "misaligned_locked": 1, "pte_ad_value": 1, "pte_ad_locked": 0,
             "system_suspend": 0, "reserved": 0, "sta_shmem": RAM_GPA + 0x3000,
             "pmu_configured": 0b1101, "pmu_started": 0b1001,
             "pmu_event_idx": [0x1, 0, 0x2, 0xF0006] + [0] * 7, "reserved2": 0,
             "pmu_value": [0x123456, 0, 0x777, 5] + [0] * 7, "reserved3": [0, 0]}
        if i:
            v.update(hsm_state=0, lp_value=0, lp_locked=0, ss_value=0, ss_locked=0, ssp=0,
                     senvcfg=0, sstatus=1 << 13, misaligned_locked=0, pte_ad_value=0,
                     sta_shmem=STA_OFF, pmu_configured=0, pmu_started=0,
                     pmu_event_idx=[0] * 11, pmu_value=[0] * 11)
        return v

    # -- payloads

    def config_payload(self):
        c = self.config
        return struct.pack(CONFIG_FMT, c["name"], c["ram_gpa"], c["ram_size"], c["nr_vcpus"],
                           c["cfi_policy"], c["features"], c["boot_count"], c["debug_ext"],
                           c["vs_sv"] if self.version >= 2 else c["reserved"],
                           c["guest_time"], c["timebase_hz"], c["kernel_image"],
                           c["initrd_image"], c["bootargs"])

    @staticmethod
    def vcpu_payload(v, version=2):
        """The record of @version: 1 is the first 672 bytes (no version 2 fields)."""
        v1 = [*v["gpr"], *[v[n] for n in VCPU_CSR_NAMES], *v["f"], v["fcsr"], v["lp_value"],
              v["lp_locked"], v["ss_value"], v["ss_locked"], v["hsm_state"], v["waiting"],
              v["resume_nonret"], v["resume_addr"], v["resume_opaque"]]
        if version == 1:
            return struct.pack(VCPU_V1_FMT, *v1)
        return struct.pack(VCPU_FMT, *v1, *[v[n] for n in VCPU_V2_NAMES], *v["pmu_event_idx"],
                           v["reserved2"], *v["pmu_value"], *v["reserved3"])

    def uart_state(self):
        u = self.uart
        return struct.pack(UART_FMT, *[u[k] for k in ("ier", "lcr", "mcr", "scr", "fcr", "dll",
                                                      "dlm", "thre_pending", "irq_level",
                                                      "pad")],
                           u["rx_head"], u["rx_tail"], u["rx"])

    def plic_state(self):
        p = self.plic
        return struct.pack(PLIC_FMT, *p["priority"], p["level"], p["pending"], p["claimed"],
                           *p["enable"], *p["threshold"])

    def vmgenid_state(self):
        g = self.genid
        return struct.pack(VMGENID_FMT, g["id"], g["level"], g["pad"])

    @staticmethod
    def device_payload(name, state, state_size=None):
        size = len(state) if state_size is None else state_size
        return struct.pack(DEVICE_FMT, name, size, 0) + state

    @staticmethod
    def memory_payload(gpa, pages, count=None):
        return struct.pack("<QQ", gpa, len(pages) if count is None else count) + b"".join(pages)

    def sections(self):
        """[type, instance, payload] of each section before END, in order."""
        out = [[CONFIG, 0, self.config_payload()]]
        out += [[VCPU, i, self.vcpu_payload(v, self.version)] for i, v in enumerate(self.vcpus)]
        out.append([DEVICE, 0, self.device_payload(b"uart16550", self.uart_state())])
        out.append([DEVICE, 1, self.device_payload(b"plic", self.plic_state())])
        out.append([DEVICE, 2, self.device_payload(b"vmgenid", self.vmgenid_state())])
        out += [[MEMORY, 0, self.memory_payload(gpa, pages)] for gpa, pages in self.runs]
        return out

    def header(self):
        return struct.pack(HEADER_FMT, self.magic, self.version, self.header_size, self.flags,
                           self.header_reserved)

    def build(self, sections=None, end=True, end_counts=None):
        """The stream.  @sections: [type, instance, payload, {overrides}?] lists
        (default self.sections()); overrides: length, crc, reserved."""
        sections = self.sections() if sections is None else sections
        pages = sum(len(pages) for _, pages in self.runs)
        out = [self.header()]
        for sec in sections:
            out.append(write_section(*sec))
        if end:
            counts = end_counts or (len(sections), pages)
            out.append(write_section(END, 0, struct.pack("<QQ", *counts)))
        return b"".join(out)


def write_section(stype, instance, payload, over=None):
    over = over or {}
    return struct.pack(SECTION_FMT, stype, instance, over.get("length", len(payload)),
                       over.get("crc", crc32c_ref(payload)), over.get("reserved", 0)) + payload


def layout_offsets(data):
    """(offset, type, instance, payload offset, length) of each section, read
    with this file's own understanding of the format."""
    out, pos = [], 32
    while pos < len(data):
        stype, inst, length, _, _ = struct.unpack_from(SECTION_FMT, data, pos)
        out.append((pos, stype, inst, pos + 24, length))
        pos += 24 + length
    return out


def patch(data, offset, fmt, value):
    data = bytearray(data)
    struct.pack_into(fmt, data, offset, value)
    return bytes(data)


def fix_crcs(data):
    """Recompute every section's CRC (after patching a payload on purpose)."""
    data = bytearray(data)
    for pos, _, _, payload, length in layout_offsets(bytes(data)):
        struct.pack_into("<I", data, pos + 16, crc32c_ref(data[payload:payload + length]))
    return bytes(data)


def first_problem(data):
    with pytest.raises(SnapError) as info:
        snapshot.verify(data)
    return info.value


@pytest.fixture
def valid():
    return Builder().build()


# --- the CRC and the layouts ------------------------------------------------------------


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c_ref(b"123456789") == 0xE3069283 == crc32c_bitwise(b"123456789")
    assert crc32c(b"") == 0


def test_crc32c_fast_path_matches_the_reference():
    rng = random.Random(7)
    data = bytes(rng.randrange(256) for _ in range(70_001))
    assert crc32c(data) == crc32c_ref(data)
    for n in (4095, 4096, 4097, 4098, 4099, 8191):
        assert crc32c(data[:n]) == crc32c_ref(data[:n]), n
    assert crc32c(data[:5000] + b"x") == crc32c_ref(data[:5000] + b"x")
    # Continuing a CRC over pieces gives the CRC of the whole.
    assert crc32c(data[30_000:], crc32c(data[:30_000])) == crc32c_ref(data)
    assert crc32c(memoryview(bytearray(data[:9000]))) == crc32c_ref(data[:9000])


def test_crc32c_lanes_match_the_reference():
    """Long buffers go many lanes at once (crc32c._lanes): every length around
    the lanes' powers of two and the path's threshold, from any CRC."""
    rng = random.Random(11)
    data = bytes(rng.randrange(256) for _ in range(300_000))
    for n in (16_383, 16_384, 16_385, 32_767, 32_768 + 63, 65_552, 131_072 + 4_097, 262_160,
              300_000):
        start = rng.randrange(1 << 32)
        assert crc32c(data[:n], start) == crc32c_ref(data[:n], start), n
    assert crc32c(data[100_000:], crc32c(data[:100_000])) == crc32c_ref(data)
    zeros = bytes(70_000)                  # the joins run through zero bytes: none lost
    assert crc32c(zeros) == crc32c_ref(zeros)


def test_layout_sizes_match_this_writer_and_the_c_header():
    ours = {"snap_header": HEADER_FMT, "snap_section": SECTION_FMT, "snap_config": CONFIG_FMT,
            "snap_vcpu_v2": VCPU_FMT, "snap_device": DEVICE_FMT, "snap_mem_run": "<QQ",
            "snap_end": "<QQ", "snap_disk_run": DISK_RUN_FMT,
            "snap_disk_id_sample": DISK_ID_SAMPLE_FMT, "snap_disk_id": DISK_ID_FMT}
    tool = {"snap_header": HEADER, "snap_section": SECTION, "snap_config": snapfmt.CONFIG,
            "snap_vcpu_v2": snapfmt.VCPU_V2, "snap_device": snapfmt.DEVICE, "snap_mem_run": MEMRUN,
            "snap_end": snapfmt.END, "snap_vcpu": snapfmt.VCPU, "snap_disk_run": snapfmt.DISKRUN,
            "snap_disk_id_sample": snapfmt.DISKID_SAMPLE, "snap_disk_id": snapfmt.DISKID}
    tool.update({layout.name: layout for _, _, _, layout in snapfmt.RECORDS})
    tool.update({layout.name: layout for _, layout in DEVICES})
    tool.update({layout.name: layout for _, layout in snapfmt.VIO_MODELS.values()})
    tool[snapfmt.VIO_TRANSPORT.name] = snapfmt.VIO_TRANSPORT
    asserts = dict(re.findall(r"sizeof\(struct (\w+)\) == (\d+)",
                              HEADER_H.read_text() + RECORDS_H.read_text() +
                              DEVICES_H.read_text()))
    assert set(asserts) == set(tool)
    for name, fmt in ours.items():
        assert struct.calcsize(fmt) == tool[name].size == int(asserts[name]), name
    for name, layout in tool.items():
        assert layout.size == int(asserts[name]), name
    # a version 3 VCPU payload: each record behind 8 bytes of {id, size}
    assert snapfmt.VCPU.size == sum(8 + layout.size for _, _, _, layout in snapfmt.RECORDS) == 1664
    assert struct.calcsize(DBTR_FMT) == dict((n, lay) for _, _, n, lay in
                                             snapfmt.RECORDS)["dbtr"].size == 216
    assert struct.calcsize(UART_FMT) == UART.size == 280
    assert struct.calcsize(PLIC_FMT) == PLIC.size == 204
    assert struct.calcsize(VMGENID_FMT) == VMGENID.size == 24
    assert struct.calcsize(APLIC_FMT) == snapfmt.APLIC.size == 280
    assert struct.calcsize(IMSIC_FMT) == dict((n, lay) for _, _, n, lay in
                                              snapfmt.RECORDS)["imsic"].size == 536
    assert [name for name, _ in DEVICES] == ["uart16550", "plic", "vmgenid", "aplic"]
    assert [name for name, _ in snapfmt.devices_of(6)] == ["uart16550", "plic", "vmgenid"]
    assert snapfmt.vcpu_size(6) == snapfmt.VCPU_V6_SIZE == 896 and snapfmt.vcpu_size(7) == 1440
    assert snapfmt.vcpu_size(7) == snapfmt.VCPU_V7_SIZE and snapfmt.vcpu_size(8) == 1664
    for name, off in DBTR_OFF.items():
        assert snapfmt.VCPU.offset(name) == off, name
    for name, off in APLIC_OFF.items():
        assert snapfmt.APLIC.offset(name) == off, name
    for name, off in IMSIC_OFF.items():
        assert snapfmt.VCPU.offset(name) == off, name
    for name, off in CONFIG_OFF.items():
        assert snapfmt.CONFIG.offset(name) == off, name
    for name, off in VCPU_OFF.items():
        assert snapfmt.VCPU_V2.offset(name) == off, name
    for name, off in UART_OFF.items():
        assert UART.offset(name) == off, name
    for name, off in PLIC_OFF.items():
        assert PLIC.offset(name) == off, name
    for name, off in VMGENID_OFF.items():
        assert VMGENID.offset(name) == off, name


@pytest.mark.skipif(not shutil.which("cc"), reason="no host C compiler")
def test_layout_offsets_match_the_c_header(tmp_path):
    """Every field's offset in the tool equals offsetof() in the C header, the
    device states' too (the tool reads them from the tables of
    snapshot_devices.h), and the models' order and names are SNAP_DEVICES'
    as the C preprocessor expands it."""
    lines = ['#include <stdio.h>', '#include <stddef.h>', f'#include "{HEADER_H}"',
             "int main(void) {"]
    expect = []
    for layout in (HEADER, SECTION, snapfmt.CONFIG, snapfmt.VCPU_V2, snapfmt.DEVICE, MEMRUN,
                   snapfmt.END, snapfmt.DISKRUN, snapfmt.DISKID_SAMPLE, snapfmt.DISKID) + tuple(
                       layout for _, _, _, layout in snapfmt.RECORDS) + \
            tuple(layout for _, layout in DEVICES):
        for fname, _, _, off in layout.fields:
            lines.append(f'printf("%zu\\n", offsetof(struct {layout.name}, {fname}));')
            expect.append(off)
        lines.append(f'printf("%zu\\n", sizeof(struct {layout.name}));')
        expect.append(layout.size)
    # the version 3 VCPU payload: the records in struct snap_vcpu, and their ids
    for rid, upper, name, layout in snapfmt.RECORDS:
        lines.append(f'printf("%zu\\n", offsetof(struct snap_vcpu, {name}_rec));')
        expect.append(snapfmt.VCPU.offset(f"{name}_rec_id"))
        for fname, _, _, _ in layout.fields:
            lines.append(f'printf("%zu\\n", offsetof(struct snap_vcpu, {name}.{fname}));')
            expect.append(snapfmt.VCPU.offset(fname))
        lines.append(f'printf("%d\\n", (int)SNAP_REC_ID_{upper});')
        expect.append(rid)
    # the device models, in stream order: index and name
    lines.append('#define MODEL(index, NAME, name) printf("%d\\n%s\\n", index, #name);')
    lines.append("SNAP_DEVICES(MODEL)")
    for index, (name, _) in enumerate(DEVICES):
        expect += [index, name]
    # the versions and the constants of the VCPU record's version 2 fields
    for macro, value in (("SNAP_VERSION", VERSION), ("SNAP_VERSION_MIN", min(VERSIONS)),
                         ("SNAP_VERSION_VIRTIO", snapfmt.VERSION_VIRTIO),
                         ("SNAP_VERSION_DISK", snapfmt.VERSION_DISK),
                         ("SNAP_F_LIVE", snapfmt.F_LIVE), ("SNAP_F_DISKS", snapfmt.F_DISKS),
                         ("SNAP_SEC_DISK", snapfmt.SEC_DISK),
                         ("SNAP_VERSION_DISK_ID", snapfmt.VERSION_DISK_ID),
                         ("SNAP_SEC_DISK_ID", snapfmt.SEC_DISK_ID),
                         ("SNAP_DISK_ID_SAMPLES", snapfmt.DISK_ID_SAMPLES),
                         ("SNAP_DISK_BLOCK_SECTORS", snapfmt.DISK_BLOCK_SECTORS),
                         ("SNAP_DISK_SECTOR", snapfmt.DISK_SECTOR),
                         ("SNAP_VCPU_V1_SIZE", VCPU_V1_SIZE),
                         ("SNAP_PMU_COUNTERS", PMU_COUNTERS),
                         ("SNAP_STA_OFF", snapfmt.STA_OFF), ("SNAP_FEAT_SVADU", FEAT_SVADU),
                         ("SNAP_VERSION_AIA", snapfmt.VERSION_AIA),
                         ("SNAP_VCPU_V6_SIZE", snapfmt.VCPU_V6_SIZE),
                         ("SNAP_DEVICES_V6", snapfmt.DEVICES_V6),
                         ("SNAP_FEAT_AIA", snapfmt.FEAT_AIA),
                         ("SNAP_FEAT_ALL", snapfmt.FEAT_ALL)):
        lines.append(f'printf("%llu\\n", (unsigned long long)({macro}));')
        expect.append(value)
    lines.append("return 0; }")
    src, exe = tmp_path / "offsets.c", tmp_path / "offsets"
    src.write_text("\n".join(lines))
    subprocess.run(["cc", "-std=c11", "-I", str(ROOT / "include"), "-o", str(exe), str(src)],
                   check=True)
    got = [int(x) if x.isdigit() else x
           for x in subprocess.run([str(exe)], capture_output=True, text=True,
                                   check=True).stdout.split()]
    assert got == expect


def test_docs_tables_match_the_layouts():
    """docs/snapshot-format.md gives each struct as a table of offset, size,
    field: the same as the tool's."""
    text = (ROOT / "docs" / "snapshot-format.md").read_text()
    for layout in (HEADER, SECTION, snapfmt.CONFIG, snapfmt.VCPU_V2, snapfmt.DEVICE, MEMRUN,
                   snapfmt.END, snapfmt.DISKRUN, UART, PLIC, VMGENID, snapfmt.APLIC) + tuple(
                       layout for _, _, _, layout in snapfmt.RECORDS) + tuple(
                       layout for _, layout in snapfmt.VIO_MODELS.values()):
        for fname, kind, count, off in layout.fields:
            size = Layout.SIZES[kind] * count
            row = re.compile(rf"^\| {off} \| {size} \| `{re.escape(fname)}", re.MULTILINE)
            assert row.search(text), (layout.name, fname, off, size)


# --- valid snapshots ---------------------------------------------------------------------


def test_valid_snapshot_verifies(valid):
    s = snapshot.verify(valid)
    assert s.valid and s.size == len(valid)
    assert [sec.label for sec in s.sections] == [
        "CONFIG", "VCPU 0", "VCPU 1", "DEVICE 0 (uart16550)", "DEVICE 1 (plic)",
        "DEVICE 2 (vmgenid)", "MEMORY run 0", "MEMORY run 1", "MEMORY run 2", "END"]
    assert all(sec.crc_ok for sec in s.sections)
    assert s.memory_pages == 4 and s.end == {"sections": 9, "memory_pages": 4}
    assert [(d["index"], d["name"], d["state_size"]) for d in s.devices] == [
        (0, "uart16550", 280), (1, "plic", 204), (2, "vmgenid", 24)]


@pytest.mark.parametrize("kw", [
    {"nr_vcpus": 1}, {"nr_vcpus": 8}, {"pages": []},
    {"pages": [(RAM_GPA, [page_of(i) for i in range(512)]),
               (RAM_GPA + 512 * PAGE, [page_of(9)])]},
    {"ram_size": 8 * MiB, "pages": [(RAM_GPA + 8 * MiB - 2 * PAGE, [page_of(1), page_of(2)])]},
])
def test_valid_variants(kw):
    b = Builder(**kw)
    assert snapshot.verify(b.build()).valid


@pytest.mark.parametrize("vs_sv", [0, 39, 48, 57])
def test_config_paging_modes(vs_sv):
    """CONFIG's vs_sv (version 2): the widest paging mode the guest was given, or
    0: not recorded."""
    b = Builder()
    b.config["vs_sv"] = vs_sv
    s = snapshot.verify(b.build())
    assert s.config["vs_sv"] == vs_sv


def test_version_1_config_reserved_must_be_0():
    """Offset 52 of a version 1 CONFIG is reserved: 0, not a paging mode."""
    b = Builder()
    b.version = 1
    b.config["reserved"] = 39
    data = b.build()
    err = first_problem(data)
    assert err.section == "CONFIG" and err.offset == 32 + 24 + 52, str(err)
    assert "vs_sv is 39, must be 0" in err.message
    b.config["reserved"] = 0
    assert snapshot.verify(b.build()).config["vs_sv"] == 0


def test_live_flag():
    b = Builder()
    b.flags = 1
    s = snapshot.verify(b.build())
    assert s.live
    assert "flags: live" in inspect_text(s)


def test_pc_outside_ram_is_allowed():
    b = Builder()
    b.vcpus[0]["pc"] = 0x1000                 # the guest's business
    assert snapshot.verify(b.build()).valid


def test_inspect_text(valid):
    text = inspect_text(parse(valid, strict=False))
    assert "Carapace snapshot, version 2" in text and "flags: none" in text
    assert re.search(r"\b32\s+CONFIG\s+648\s+0x[0-9a-f]{8} ok", text)
    assert "config: vm alpha" in text
    assert "RAM 16M (0x1000000 bytes) at 0x80000000, 2 vCPU(s), CFI policy trap" in text
    assert "features: zicfilp zicfiss sstc svpbmt svadu (0x1f)" in text
    assert "guest time 123456789 (12.345679 s at 10000000 Hz)" in text
    assert 'bootargs "console=ttyS0 quiet"' in text
    assert ("vcpu 0: started, pc=0xffffffff80001234\n"
            "  CFI: shadow stack on (locked), ssp=0xff60000001234000, landing pads on (locked), "
            "ELP=expected, senvcfg.LPE=1 SSE=1") in text
    assert ("vcpu 1: stopped, pc=0xffffffff80001236\n"
            "  CFI: shadow stack off, landing pads off, ELP=none, senvcfg.LPE=0 SSE=0\n"
            "  FWFT: misaligned exception delegation on, PTE A/D hardware updating off\n"
            "  STA shared memory: none\n"
            "  PMU: no counter configured\n") in text
    assert ("  FWFT: misaligned exception delegation on (locked), PTE A/D hardware updating "
            "on\n"
            "  STA shared memory: 64 bytes at 0x80003000\n"
            "  PMU: counters configured 0 2 3, started 0 3\n"
            "    counter 0 (cycle): cycles (event 0x1), started, value 0x123456\n"
            "    counter 2 (instret): instructions (event 0x2), stopped, value 0x777\n"
            "    counter 3 (firmware): firmware ipi_sent (event 0xf0006), started, value 0x5\n"
            "  sstatus=") in text
    assert "version 1 record" not in text and "system suspend" not in text
    assert "sstatus=0x806120 (SPP=S SPIE=1 SPELP=1 FS=dirty)" in text
    assert "hvip=0x40 (VSTIP)" in text
    assert "vsatp=0x8000000000081234 (sv39, asid 0, root 0x81234000)" in text
    assert "x10/a0=0xa" in text and "x2/sp=0x2" in text and "f31=0x3ff000000000001f" in text
    assert "device 0 uart16550 (280 bytes of state):" in text
    assert "ier=0x01 lcr=0x03 mcr=0x08 scr=0x5a fcr=0x07 divisor=0x0001" in text
    assert "THR-empty interrupt pending: yes, interrupt line: low" in text
    assert "RX FIFO: 5 byte(s) queued (head 105, tail 100):" in text
    assert "68 65 6c 6c 6f" in text and "|hello|" in text
    assert "pending sources: 10; claimed (in service): none; lines high: 10" in text
    assert "context 0 (vcpu 0): enabled sources 10, threshold 0" in text
    assert "context 1 (vcpu 1): enabled sources 3 10, threshold 0" in text
    assert "context 2" not in text
    assert ("device 2 vmgenid (24 bytes of state):\n"
            "  generation ID 01234567-89ab-cdef-fedc-ba9876543210\n"
            "  notification pending: no (interrupt line low)\n") in text
    assert ("memory: 3 run(s), 4 page(s) stored (16K), 4092 zero page(s) elided, of 4096 "
            "pages of RAM") in text
    assert "0x80000000..0x80001fff  2 page(s)" in text
    assert "0x80fff000..0x80ffffff  1 page(s)" in text
    assert text.rstrip().endswith("valid")


def test_inspect_uart_fifo_wraps():
    b = Builder()
    rx = bytearray(256)
    rx[254:256], rx[0:3] = b"ab", b"cde"
    tail = (1 << 32) - 2                      # free-running counters wrap too
    b.uart.update(rx_tail=tail, rx_head=3, rx=bytes(rx))
    s = snapshot.verify(b.build())
    assert uart_queue(s.devices[0]["fields"]) == b"abcde"
    assert "RX FIFO: 5 byte(s) queued" in inspect_text(s)


def test_inspect_json(valid):
    j = inspect_json(parse(valid, strict=False))
    assert j["valid"] and j["problems"] == [] and j["bytes"] == len(valid)
    assert j["header"] == {"magic": "CARASNAP", "version": 2, "header_size": 32, "flags": 0,
                           "live": False, "disks": False, "reserved": 0}
    assert j["disks"] == {"included": False, "disks": [], "runs": [], "run_count": 0,
                          "bytes": 0, "stray_runs": 0}
    assert [s["type"] for s in j["sections"]][:3] == ["CONFIG", "VCPU", "VCPU"]
    assert all(s["crc_ok"] for s in j["sections"])
    assert j["config"]["name"] == "alpha" and j["config"]["cfi"] == "trap"
    assert j["config"]["vs_sv"] == 39
    v0 = j["vcpus"][0]
    assert v0["pc"] == 0xFFFFFFFF80001234 and v0["gpr"][10] == 10 and v0["hsm"] == "started"
    assert v0["cfi"]["elp"] and v0["cfi"]["ss_locked"] and v0["cfi"]["senvcfg_sse"]
    # the version 2 fields, raw and in words
    assert v0["record_version"] == 2
    assert (v0["misaligned_locked"], v0["pte_ad_value"], v0["pte_ad_locked"],
            v0["system_suspend"], v0["cfi_reserved"]) == (1, 1, 0, 0, 0)
    assert v0["sta_shmem"] == RAM_GPA + 0x3000 and v0["sta"]["shmem"] == RAM_GPA + 0x3000
    assert v0["pmu_configured"] == 0b1101 and v0["pmu_started"] == 0b1001
    assert v0["pmu_event_idx"][:4] == [1, 0, 2, 0xF0006] and v0["pmu_value"][3] == 5
    assert v0["pmu_reserved"] == 0 and v0["fwft_reserved"] == [0] * 4
    assert v0["misaligned_emulate"] == 0
    assert v0["fwft"] == {"misaligned_deleg": True, "misaligned_locked": True, "pte_ad": True,
                          "pte_ad_locked": False,
                          "text": "misaligned exception delegation on (locked), PTE A/D "
                                  "hardware updating on"}
    assert v0["system_suspend"] == 0 and j["vcpus"][0]["sta"]["text"] == "64 bytes at 0x80003000"
    assert v0["pmu"]["configured"] == [0, 2, 3] and v0["pmu"]["started"] == [0, 3]
    assert v0["pmu"]["counters"] == [
        {"counter": 0, "kind": "cycle", "event_idx": 1, "event": "cycles", "started": True,
         "value": 0x123456},
        {"counter": 2, "kind": "instret", "event_idx": 2, "event": "instructions",
         "started": False, "value": 0x777},
        {"counter": 3, "kind": "firmware", "event_idx": 0xF0006, "event": "firmware ipi_sent",
         "started": True, "value": 5}]
    v1 = j["vcpus"][1]
    assert v1["sta_shmem"] == STA_OFF and v1["sta"] == {"shmem": None, "text": "none"}
    assert v1["pmu"] == {"configured": [], "started": [], "counters": []}
    assert v1["fwft"]["misaligned_deleg"] and not v1["fwft"]["misaligned_locked"]
    uart, plic, genid = j["devices"]
    assert uart["state"]["rx_queue"] == b"hello".hex() and uart["rx_queued"] == 5
    assert plic["pending_sources"] == [10] and plic["enabled_sources"][1] == [3, 10]
    assert genid == {"index": 2, "name": "vmgenid", "state_size": 24,
                     "state": {"id": "01234567-89ab-cdef-fedc-ba9876543210", "level": 0},
                     "generation_id": "01234567-89ab-cdef-fedc-ba9876543210",
                     "notification_pending": False}
    assert j["memory"]["runs"][0] == {"gpa": RAM_GPA, "pages": 2}
    assert (j["memory"]["pages"], j["memory"]["zero_pages_elided"]) == (4, 4092)
    json.dumps(j)                                         # all serialisable


def test_inspect_counts_stored_zero_pages():
    b = Builder(pages=[(RAM_GPA, [bytes(PAGE), page_of(1)])])
    s = snapshot.verify(b.build())
    assert s.runs[0]["zero_pages"] == 1
    assert "1 stored page(s) are all zero" in inspect_text(s)


# --- corruption: every kind must be caught ---------------------------------------------


def small():
    """A small valid stream: one vCPU, one memory page."""
    return Builder(nr_vcpus=1, pages=[(RAM_GPA + PAGE, [page_of(5)])]).build()


def test_truncated_at_every_offset():
    data = small()
    page_start = len(data) - 24 - 16 - PAGE          # the page data of the MEMORY run
    offsets = [n for n in range(len(data)) if not page_start + 64 <= n < page_start + PAGE - 64]
    offsets += list(range(page_start + 64, page_start + PAGE - 64, 97))
    for n in offsets:
        err = first_problem(data[:n])
        assert "truncated" in err.message, (n, str(err))
        assert err.offset == n, (n, str(err))


def test_truncated_between_sections_names_the_missing_end():
    data = small()
    cut = len(data) - 24 - 16                          # just before END
    err = first_problem(data[:cut])
    assert err.section == "END" and "without an END section" in err.message


def test_one_flipped_byte_anywhere_is_detected():
    data = small()
    for n in range(len(data)):
        for xor in (0xFF, 0x80) if n % 3 == 0 else (0xFF,):
            bad = bytearray(data)
            bad[n] ^= xor
            with pytest.raises(SnapError):
                snapshot.verify(bytes(bad))


def test_single_bit_flips_in_headers():
    """Outside payloads nothing is CRC-protected, yet every single-bit flip of
    the stream header and of the section headers is caught, but one: flags bit
    0 (live) is a valid value either way."""
    data = small()
    spots = list(range(32)) + [p + i for p, *_ in layout_offsets(data) for i in range(24)]
    for n in spots:
        for bit in range(8):
            bad = bytearray(data)
            bad[n] ^= 1 << bit
            if n == 16 and bit == 0:
                assert snapshot.verify(bytes(bad)).live
                continue
            with pytest.raises(SnapError):
                snapshot.verify(bytes(bad))


@pytest.mark.parametrize("offset, fmt, value, where, message", [
    (0, "<8s", b"CARASNAX", 0, "bad magic"),
    (8, "<I", 9, 8, "version 9 is not supported (this reader knows versions 1, 2, 3, 4, 5, 6, "
                    "7 and 8)"),
    (8, "<I", 0, 8, "version 0 is not supported (this reader knows versions 1, 2, 3, 4, 5, 6, "
                    "7 and 8)"),
    (8, "<I", 0xFFFFFFFF, 8, "version 4294967295 is not supported"),
    (12, "<I", 40, 12, "header_size 40, must be 32"),
    (16, "<Q", 2, 16, "unknown flag bits 0x2"),
    (16, "<Q", 1 << 63, 16, "unknown flag bits"),
    (24, "<Q", 1, 24, "reserved is 0x1"),
])
def test_header_errors(offset, fmt, value, where, message):
    err = first_problem(patch(small(), offset, fmt, value))
    assert err.section == "header" and err.offset == where and message in err.message


def test_crc_mismatch_names_section_and_offset():
    data = small()
    pos, _, _, payload, _ = layout_offsets(data)[1]        # VCPU 0
    bad = bytearray(data)
    bad[payload + 300] ^= 1
    err = first_problem(bytes(bad))
    assert err.section == "VCPU 0" and err.offset == pos + 16
    assert "CRC32C mismatch" in err.message and f"bytes {payload}.." in err.message
    assert str(err).startswith(f"VCPU 0, byte {pos + 16}: CRC32C mismatch")


def sections_of(builder):
    return builder.sections()


@pytest.mark.parametrize("index, over, message", [
    (0, {"length": 647}, "length 647, must be 648"),
    (0, {"length": 649}, "length 649, must be 648"),
    (1, {"length": 847}, "length 847, must be 848"),
    (1, {"length": 672}, "length 672, must be 848 (the size of its payload struct in version 2)"),
    (0, {"reserved": 1}, "reserved is 0x1, must be 0"),
])
def test_section_header_errors(index, over, message):
    b = Builder(nr_vcpus=1)
    secs = b.sections()
    secs[index].append(over)
    err = first_problem(b.build(secs))
    assert message in err.message


def test_end_length_and_unknown_types():
    b = Builder(nr_vcpus=1)
    data = b.build()
    end_pos = layout_offsets(data)[-1][0]
    err = first_problem(patch(data, end_pos + 8, "<Q", 17))
    assert err.section == "END" and "length 17, must be 16" in err.message
    for t in (0, 6, 0xFFFFFFFF):
        err = first_problem(patch(data, end_pos, "<I", t))
        assert f"unknown section type {t}" in err.message and err.offset == end_pos


def test_device_length_must_match_state_size():
    b = Builder(nr_vcpus=1)
    secs = b.sections()
    secs[2][2] = b.device_payload(b"uart16550", b.uart_state(), state_size=279)
    err = first_problem(b.build(secs))
    assert err.section == "DEVICE 0 (uart16550)" and "state_size 279" in err.message
    secs = b.sections()
    secs[3][2] = b.device_payload(b"plic", b.plic_state() + b"\0\0\0\0")
    err = first_problem(b.build(secs))
    assert "state_size 208, plic has 204" in err.message


@pytest.mark.parametrize("payload_len, message", [
    (16, "length 16, must be 16 + pages * 4096"),
    (16 + PAGE + 1, "must be 16 + pages * 4096"),
    (16 + 513 * PAGE, "with 1..512 pages"),
])
def test_memory_lengths(payload_len, message):
    b = Builder(nr_vcpus=1, pages=[])
    payload = struct.pack("<QQ", RAM_GPA, (payload_len - 16) // PAGE) + bytes(payload_len - 16)
    err = first_problem(b.build(b.sections() + [[MEMORY, 0, payload]]))
    assert err.section == "MEMORY run 0" and message in err.message


def test_memory_pages_field_must_match_the_length():
    b = Builder(nr_vcpus=1, pages=[])
    secs = b.sections() + [[MEMORY, 0, b.memory_payload(RAM_GPA, [page_of(1)], count=2)]]
    err = first_problem(b.build(secs, end_counts=(6, 1)))
    assert "pages 2 does not match the section length 4112" in err.message


# Field rules: (what to change, the section label, the field's payload offset, words).
def _config(**kw):
    def change(b):
        b.config.update(kw)
    return change


def _vcpu(i, **kw):
    def change(b):
        b.vcpus[i].update(kw)
    return change


def _both(*changes):
    def change(b):
        for c in changes:
            c(b)
    return change


def _uart(**kw):
    def change(b):
        b.uart.update(kw)
    return change


def _plic(field, index, value):
    def change(b):
        if index is None:
            b.plic[field] = value
        else:
            b.plic[field][index] = value
    return change


def _genid(**kw):
    def change(b):
        b.genid.update(kw)
    return change


FIELD_CASES = [
    (_config(name=b"Alpha"), "CONFIG", 0, "name"),
    (_config(name=b""), "CONFIG", 0, "name"),
    (_config(name=b"a.b"), "CONFIG", 0, "name"),
    (_config(name=b"abcdefghijklmnop"), "CONFIG", 0, "NUL-terminated"),
    (_config(ram_size=8 * MiB - 2 * MiB), "CONFIG", 24, "ram_size"),
    (_config(ram_size=16 * MiB + PAGE), "CONFIG", 24, "multiple of 2 MiB"),
    (_config(nr_vcpus=0), "CONFIG", 32, "nr_vcpus is 0x0; legal: 1..8"),
    (_config(nr_vcpus=9), "CONFIG", 32, "nr_vcpus is 0x9; legal: 1..8"),
    (_config(cfi_policy=4), "CONFIG", 36, "cfi_policy is 0x4; legal: 0..3"),
    (_config(features=0x20), "CONFIG", 40, "features is 0x20; bits 0x20 are not legal"),
    (_config(debug_ext=2), "CONFIG", 48, "debug_ext is 0x2; bits 0x2 are not legal for this VM: 0 or 1"),
    (_config(vs_sv=1), "CONFIG", 52, "vs_sv is 0x1; legal: 39, 48 or 57"),
    (_config(vs_sv=64), "CONFIG", 52, "vs_sv is 0x40"),
    (_config(vs_sv=0xFFFFFFFF), "CONFIG", 52, "vs_sv is 0xffffffff"),
    (_config(kernel_image=b"k" * 32), "CONFIG", 72, "kernel_image is not NUL-terminated"),
    (_config(initrd_image=b"i" * 32), "CONFIG", 104, "initrd_image is not NUL-terminated"),
    (_config(bootargs=b"b" * 512), "CONFIG", 136, "bootargs is not NUL-terminated"),
    (_config(timebase_hz=0), "CONFIG", 64, "timebase_hz is 0"),
    (_vcpu(0, gpr=[5] + [0] * 31), "VCPU 0", 0, "x0 is 0x5, must be 0"),
    (_vcpu(0, sstatus=(1 << 8) | (1 << 13) | (1 << 1)), "VCPU 0", 264, "bits 0x2 are not legal"),
    (_vcpu(1, sstatus=1 << 18), "VCPU 1", 264, "only SPIE, SPP, FS; SPELP with Zicfilp"),
    (_vcpu(0, hvip=(1 << 6) | (1 << 1)), "VCPU 0", 344, "hvip is 0x42; bits 0x2 are not legal"),
    (_vcpu(1, hvip=1 << 5), "VCPU 1", 344, "only VSSIP, VSTIP, VSEIP"),
    (_both(_config(features=0x1E), _vcpu(0, sstatus=(1 << 8) | (1 << 13), senvcfg=1 << 3)),
     "VCPU 0", 640,
     "lp_value is 0x1; bits 0x1 are not legal for this VM: 0 or 1 with Zicfilp, else 0"),
    (_both(_config(features=0x1D), _vcpu(0, ss_value=0, senvcfg=1 << 2, ssp=0)), "VCPU 0", 643,
     "ss_locked is 0x1; bits 0x1 are not legal for this VM: 0 or 1 with Zicfiss, else 0"),
    (_vcpu(1, lp_value=2), "VCPU 1", 640, "lp_value is 0x2"),
    (_vcpu(0, lp_locked=2), "VCPU 0", 641, "lp_locked is 0x2"),
    (_vcpu(0, ss_value=3), "VCPU 0", 642, "ss_value is 0x3"),
    (_vcpu(0, ss_locked=255), "VCPU 0", 643, "ss_locked is 0xff"),
    (_vcpu(0, hsm_state=3), "VCPU 0", 644, "hsm_state is 0x3; legal: 0..2"),
    (_vcpu(1, waiting=2), "VCPU 1", 648, "waiting is 0x2"),
    (_vcpu(0, resume_nonret=7), "VCPU 0", 652, "resume_nonret is 0x7"),
    (_uart(thre_pending=2), "DEVICE 0 (uart16550)", 24 + 7,
     "thre_pending is 0x2; bits 0x2 are not legal for this VM: 0 or 1"),
    (_uart(irq_level=2), "DEVICE 0 (uart16550)", 24 + 8, "irq_level is 0x2"),
    (_uart(ier=0x10), "DEVICE 0 (uart16550)", 24 + 0, "ier is 0x10; bits 0x10 are not legal"),
    (_uart(mcr=0x28), "DEVICE 0 (uart16550)", 24 + 2, "mcr is 0x28; bits 0x20 are not legal"),
    (_uart(rx_head=357), "DEVICE 0 (uart16550)", 24 + 16, "257 bytes queued"),
    (_uart(rx_head=99), "DEVICE 0 (uart16550)", 24 + 16, "bytes queued"),
    (_plic("priority", 3, 8), "DEVICE 1 (plic)", 24 + 12, "priority[3] is 0x8; legal: 0..7"),
    (_plic("priority", 0, 1), "DEVICE 1 (plic)", 24 + 0, "source 0"),
    (_plic("pending", None, 1), "DEVICE 1 (plic)", 24 + 132,
     "pending is 0x1; bits 0x1 are not legal for this VM: sources 1..31 (bit 0 is 0)"),
    (_plic("level", None, 3), "DEVICE 1 (plic)", 24 + 128, "level is 0x3; bits 0x1 are not legal"),
    (_plic("claimed", None, 1), "DEVICE 1 (plic)", 24 + 136, "claimed is 0x1"),
    (_plic("enable", 1, 1), "DEVICE 1 (plic)", 24 + 144, "enable[1] is 0x1; bits 0x1 are not legal"),
    (_plic("enable", 2, 4), "DEVICE 1 (plic)", 24 + 148, "contexts beyond them must be 0"),
    (_plic("threshold", 1, 8), "DEVICE 1 (plic)", 24 + 176, "threshold[1] is 0x8; legal: 0..7"),
    (_plic("threshold", 5, 1), "DEVICE 1 (plic)", 24 + 192, "contexts beyond them"),
    (_genid(level=2), "DEVICE 2 (vmgenid)", 24 + 16,
     "level is 0x2; bits 0x2 are not legal for this VM: 0 or 1"),
    (_genid(level=0xFF), "DEVICE 2 (vmgenid)", 24 + 16, "level is 0xff"),
    (_genid(pad=b"\1" + bytes(6)), "DEVICE 2 (vmgenid)", 24 + 17,
     "pad[0] is 0x1; bits 0x1 are not legal for this VM: 0"),
    (_genid(pad=bytes(5) + b"\4\0"), "DEVICE 2 (vmgenid)", 24 + 22, "pad[5] is 0x4"),
]


def _pmu(i, configured=None, started=None, **events):
    """vCPU @i's PMU: @configured/@started masks, pmu_event_idx[k] from e<k>=value."""
    def change(b):
        v = b.vcpus[i]
        if configured is not None:
            v["pmu_configured"] = configured
        if started is not None:
            v["pmu_started"] = started
        for key, value in events.items():
            v["pmu_event_idx"][int(key[1:])] = value
    return change


# The version 2 tail of the VCPU record: each rule, the field's payload offset.
V2_FIELD_CASES = [
    (_vcpu(0, misaligned_locked=2), "VCPU 0", 672, "misaligned_locked is 0x2; bits 0x2 are not legal for this VM: 0 or 1"),
    (_vcpu(1, pte_ad_value=2), "VCPU 1", 673, "pte_ad_value is 0x2"),
    (_vcpu(0, pte_ad_locked=3), "VCPU 0", 674, "pte_ad_locked is 0x3"),
    (_vcpu(0, system_suspend=2), "VCPU 0", 675, "system_suspend is 0x2"),
    (_both(_config(features=0x0F), _vcpu(1, pte_ad_value=0)), "VCPU 0", 673,
     "pte_ad_value is 0x1; bits 0x1 are not legal for this VM: 0 or 1 with Svadu, else 0"),
    (_both(_config(features=0x0F), _vcpu(0, pte_ad_value=0, pte_ad_locked=1)), "VCPU 0", 674,
     "pte_ad_locked is 0x1; bits 0x1 are not legal for this VM: 0 or 1 with Svadu"),
    (_vcpu(0, system_suspend=1), "VCPU 0", 675,
     "system_suspend is set, but the vCPU is not in a non-retentive suspend"),
    (_vcpu(1, system_suspend=1, hsm_state=2), "VCPU 1", 675, "(hsm_state 2, resume_nonret 1)"),
    (_vcpu(1, system_suspend=1, resume_nonret=1), "VCPU 1", 675, "non-retentive suspend"),
    (_vcpu(0, reserved=1), "VCPU 0", 676, "reserved is 0x1; bits 0x1 are not legal for this VM: 0"),
    (_vcpu(0, sta_shmem=RAM_GPA + 0x3020), "VCPU 0", 680,
     "sta_shmem 0x80003020 is not 64-byte aligned"),
    (_vcpu(1, sta_shmem=STA_OFF - 1), "VCPU 1", 680, "not 64-byte aligned"),
    (_vcpu(0, sta_shmem=0), "VCPU 0", 680,
     "sta_shmem 0x0..0x3f is not inside RAM 0x80000000..0x80ffffff"),
    (_vcpu(0, sta_shmem=RAM_GPA - 64), "VCPU 0", 680, "is not inside RAM"),
    (_vcpu(1, sta_shmem=RAM_GPA + 16 * MiB), "VCPU 1", 680, "is not inside RAM"),
    (_vcpu(1, sta_shmem=STA_OFF - 127), "VCPU 1", 680, "is not inside RAM"),
    (_pmu(0, configured=0b1111), "VCPU 0", 688,
     "pmu_configured 0xf has bits 0x2 that are no counter"),
    (_pmu(1, configured=1 << 11), "VCPU 1", 688, "bits 0x800 that are no counter"),
    (_pmu(0, configured=1 << 31), "VCPU 0", 688, "bits 0x80000000"),
    (_pmu(0, started=0b10001), "VCPU 0", 692,
     "pmu_started 0x11 has bits 0x10 that are not configured (pmu_configured 0xd)"),
    (_pmu(1, started=0b10), "VCPU 1", 692, "bits 0x2 that are not configured"),
    (_pmu(0, e4=0xF0001), "VCPU 0", 696 + 16,
     "pmu_event_idx[4] is 0xf0001, but counter 4 is not configured (must be 0)"),
    (_pmu(1, e0=1), "VCPU 1", 696, "counter 0 is not configured"),
    (_pmu(0, e0=2), "VCPU 0", 696,
     "pmu_event_idx[0] is 0x2; counter 0 counts cycles (0x1) only"),
    (_pmu(0, e2=1), "VCPU 0", 704, "pmu_event_idx[2] is 0x1; counter 2 counts instructions"),
    (_pmu(0, e0=0x10001), "VCPU 0", 696, "counts cycles (0x1) only"),
    (_pmu(0, e3=0xF0016), "VCPU 0", 708,
     "pmu_event_idx[3] is 0xf0016; firmware counter 3 counts firmware events "
     "0xf0000..0xf0015 only"),
    (_pmu(0, e3=0xFFFFF), "VCPU 0", 708, "firmware events"),
    (_pmu(0, e3=0x10006), "VCPU 0", 708, "firmware events"),
    (_pmu(0, e3=0x1F0006), "VCPU 0", 708, "firmware events"),
    (_pmu(0, e3=0), "VCPU 0", 708, "pmu_event_idx[3] is 0x0; firmware counter 3"),
    (_pmu(0, e3=0x1), "VCPU 0", 708, "firmware events"),
    (_pmu(1, configured=1 << 10, e10=0x2), "VCPU 1", 696 + 40, "pmu_event_idx[10] is 0x2"),
    (_vcpu(0, reserved2=5), "VCPU 0", 740, "reserved2 is 0x5; bits 0x5 are not legal"),
    (_vcpu(1, reserved3=[1, 0]), "VCPU 1", 832, "reserved3[0] is 0x1, must be 0"),
    (_vcpu(0, reserved3=[0, 1 << 63]), "VCPU 0", 840, "reserved3[1] is 0x8000000000000000"),
]
FIELD_CASES += V2_FIELD_CASES


@pytest.mark.parametrize("change, label, field_offset, message", FIELD_CASES)
def test_out_of_range_fields(change, label, field_offset, message):
    b = Builder()
    change(b)
    data = b.build()
    err = first_problem(data)
    assert err.section == label, str(err)
    assert message in err.message, str(err)
    payload = {sec.label: sec.payload for sec in parse(data, strict=False).sections}[label]
    assert err.offset == payload + field_offset, str(err)
    assert str(err).startswith(f"{label}, byte {payload + field_offset}: ")


def test_lenient_parse_reports_each_bad_tail_field():
    """inspect: every rule of the version 2 tail that fails is a problem of its own
    (first the reserved fields, which have no place in the version 3 records)."""
    b = Builder()
    b.config["features"] = 0x0F
    b.vcpus[0].update(misaligned_locked=7, pte_ad_value=1, system_suspend=1, reserved=1,
                      sta_shmem=RAM_GPA + 1, pmu_configured=0b10, pmu_started=0b101,
                      reserved2=1, reserved3=[0, 2])
    b.vcpus[0]["pmu_event_idx"][:4] = [1, 0, 2, 0xF0006]
    data = b.build()
    s = parse(data, strict=False)
    payload = s.sections[1].payload
    got = [(p.section, p.offset - payload) for p in s.problems]
    assert got == [("VCPU 0", 676), ("VCPU 0", 740), ("VCPU 0", 840), ("VCPU 0", 672),
                   ("VCPU 0", 673), ("VCPU 0", 675), ("VCPU 0", 680), ("VCPU 0", 688),
                   ("VCPU 0", 692), ("VCPU 0", 696), ("VCPU 0", 704), ("VCPU 0", 708)], got
    assert all(p.type_name == "VCPU" and p.instance == 0 for p in s.problems)


@pytest.mark.parametrize("change", [
    _vcpu(1, sta_shmem=RAM_GPA), _vcpu(0, sta_shmem=RAM_GPA + 16 * MiB - 64),
    _vcpu(1, sta_shmem=STA_OFF),
    _vcpu(1, hsm_state=2, resume_nonret=1, resume_addr=RAM_GPA, system_suspend=1),
    _vcpu(0, misaligned_locked=0, pte_ad_value=0, pte_ad_locked=1),
    _both(_config(features=0x0F), _vcpu(0, pte_ad_value=0, pte_ad_locked=0)),
    _pmu(0, configured=0x7FD, started=0x7FD, e3=0xF0000, e4=0xF0015, e5=0xF000A,
         e6=0xF0001, e7=0xF0002, e8=0xF0003, e9=0xF0004, e10=0xF0005),
    _pmu(0, configured=0, started=0, e0=0, e2=0, e3=0),
    _vcpu(0, pmu_value=[(1 << 64) - 1] * 11),          # any value, configured or not
])
def test_valid_version_2_tails(change):
    b = Builder()
    change(b)
    assert snapshot.verify(b.build()).valid


def test_version_1_stream_still_reads():
    """A version 1 stream (672-byte VCPU records) verifies and inspects; its
    records get the version 2 fields a version 1 writer ran its guest with."""
    b = Builder()
    b.version = 1
    data = b.build()
    assert layout_offsets(data)[1][4] == 672
    s = snapshot.verify(data)
    assert s.valid and s.version == 1
    for v in s.vcpus:
        assert v["record_version"] == 1
        assert (v["misaligned_locked"], v["pte_ad_value"], v["pte_ad_locked"],
                v["system_suspend"], v["cfi_reserved"]) == (0, 1, 0, 0, 0)   # Svadu: A/D on
        assert v["sta_shmem"] == STA_OFF
        assert (v["pmu_configured"], v["pmu_started"]) == (0, 0)
        assert v["pmu_event_idx"] == [0] * 11 and v["pmu_value"] == [0] * 11
    assert s.vcpus[0]["pc"] == 0xFFFFFFFF80001234 and s.vcpus[1]["gpr"][31] == 0x1000 + 31
    text = inspect_text(s)
    assert "Carapace snapshot, version 1" in text and "  704  VCPU 0" in text
    assert re.search(r"VCPU 0\s+672\s+0x[0-9a-f]{8} ok", text)
    assert ("  FWFT: misaligned exception delegation on, PTE A/D hardware updating on\n"
            "  STA shared memory: none\n"
            "  PMU: no counter configured\n"
            "  (a version 1 record: FWFT PTE A/D as its writer ran the guest, no STA, no PMU, "
            "no system suspend)\n") in text
    assert text.rstrip().endswith("valid")
    j = inspect_json(s)
    assert j["valid"] and j["header"]["version"] == 1
    assert [x["length"] for x in j["sections"] if x["type"] == "VCPU"] == [672, 672]
    v0 = j["vcpus"][0]
    assert v0["record_version"] == 1 and v0["fwft"]["pte_ad"] and v0["sta"]["shmem"] is None
    assert v0["pmu"]["counters"] == []


def test_version_1_without_svadu_has_ad_updating_off():
    b = Builder()
    b.version = 1
    b.config["features"] = 0x0F
    s = snapshot.verify(b.build())
    assert [v["pte_ad_value"] for v in s.vcpus] == [0, 0]
    assert "PTE A/D hardware updating off" in inspect_text(s)


def test_version_1_checks_what_it_has():
    """The version 1 fields keep their rules in a version 1 stream, at their offsets."""
    b = Builder()
    b.version = 1
    b.vcpus[1]["hsm_state"] = 5
    data = b.build()
    err = first_problem(data)
    assert err.section == "VCPU 1" and err.offset == layout_offsets(data)[2][3] + 644
    assert "hsm_state is 0x5" in err.message


@pytest.mark.parametrize("version, length, message", [
    (1, 848, "length 848, must be 672 (the size of its payload struct in version 1)"),
    (1, 671, "length 671, must be 672"),
    (2, 672, "length 672, must be 848"),
])
def test_vcpu_length_follows_the_header_version(version, length, message):
    b = Builder(nr_vcpus=1)
    b.version = version
    secs = b.sections()
    secs[1].append({"length": length})
    data = b.build(secs)
    err = first_problem(data)
    assert err.section == "VCPU 0" and err.offset == layout_offsets(data)[1][0] + 8
    assert message in err.message


def test_a_version_2_record_in_a_version_1_stream_is_refused():
    """The record's length is the header's version's: an 848-byte record after
    a version 1 header (or a 672-byte one after a version 2 header) is refused."""
    b = Builder(nr_vcpus=1)
    b.version = 1
    secs = b.sections()
    secs[1][2] = b.vcpu_payload(b.vcpus[0], 2)
    err = first_problem(b.build(secs))
    assert err.section == "VCPU 0" and "must be 672" in err.message
    b.version = 2
    secs = b.sections()
    secs[1][2] = b.vcpu_payload(b.vcpus[0], 1)
    err = first_problem(b.build(secs))
    assert err.section == "VCPU 0" and "must be 848" in err.message


def test_inspect_system_suspend():
    b = Builder()
    b.vcpus[1].update(hsm_state=2, resume_nonret=1, resume_addr=0x80200000, resume_opaque=7,
                      system_suspend=1)
    s = snapshot.verify(b.build())
    assert ("vcpu 1: suspended, non-retentive resume pending at 0x80200000 (opaque 0x7), "
            "system suspend (SBI SUSP: the whole VM sleeps), pc=") in inspect_text(s)
    j = inspect_json(s)
    assert j["vcpus"][1]["system_suspend"] is True and j["vcpus"][0]["system_suspend"] is False


def test_diff_version_2_fields():
    a, b = Builder(), Builder()
    b.vcpus[0]["pmu_value"][3] = 6
    b.vcpus[0]["sta_shmem"] = STA_OFF
    b.vcpus[1]["pte_ad_locked"] = 1
    d = diff(snapshot.verify(a.build()), snapshot.verify(b.build()))
    assert {(x["vcpu"], x["field"]) for x in d["vcpus"]} == {
        (0, "pmu_value[3]"), (0, "sta_shmem"), (1, "pte_ad_locked")}
    text = diff_text(d)
    assert "vcpu 0 pmu_value[3]: 5 | 6" in text
    assert "vcpu 0 sta_shmem: 0x80003000 | 0xffffffffffffffff" in text


def test_diff_version_1_and_its_version_2_equivalent_are_identical():
    """diff compares guest state: a version 1 file and a version 2 file holding
    what the version 1 reader makes of it are the same guest."""
    a, b = Builder(), Builder()
    a.version = 1
    b.config["vs_sv"] = 0                              # version 1: not recorded
    for v in b.vcpus:
        v.update(misaligned_locked=0, pte_ad_value=1, pte_ad_locked=0, system_suspend=0,
                 sta_shmem=STA_OFF, pmu_configured=0, pmu_started=0,
                 pmu_event_idx=[0] * 11, pmu_value=[0] * 11)
    d = diff(snapshot.verify(a.build()), snapshot.verify(b.build()))
    assert d["identical"], d
    d = diff(snapshot.verify(a.build()), snapshot.verify(Builder().build()))
    assert ("vcpu 0 pmu_configured: 0 | 0xd" in diff_text(d)
            and not d["identical"])


def test_main_on_a_version_1_file(tmp_path, capsys):
    b = Builder()
    b.version = 1
    path = tmp_path / "old.snap"
    path.write_bytes(b.build())
    assert snap_cli.main(["verify", str(path)]) == 0
    assert "valid snapshot of vm alpha" in capsys.readouterr().out
    assert snap_cli.main(["--json", "inspect", str(path)]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["header"]["version"] == 1 and j["vcpus"][0]["record_version"] == 1
    bad = tmp_path / "v9.snap"
    bad.write_bytes(patch(b.build(), 8, "<I", 9))
    assert snap_cli.main(["verify", str(bad)]) == 1
    assert ("header, byte 8: version 9 is not supported (this reader knows versions 1, 2, 3, 4, "
            "5, 6, 7 and 8)"
            in capsys.readouterr().err)


def test_uart_padding_must_be_zero():
    """Each padding byte is a field element of its own: the one not 0 is named."""
    b = Builder()
    secs = b.sections()
    state = bytearray(b.uart_state())
    state[12] = 1
    secs[3][2] = b.device_payload(b"uart16550", bytes(state))
    data = b.build(secs)
    err = first_problem(data)
    payload = layout_offsets(data)[3][3]               # DEVICE 0's payload
    assert err.section == "DEVICE 0 (uart16550)" and err.offset == payload + 24 + 12, str(err)
    assert err.message == "pad[3] is 0x1; bits 0x1 are not legal for this VM: 0"


# --- the VM generation ID (DEVICE 2) ----------------------------------------------------


@pytest.mark.parametrize("pad_byte", range(17, 24))
def test_vmgenid_padding_must_be_zero(pad_byte):
    """Each of the 7 padding bytes on its own is refused, at its own offset."""
    b = Builder()
    pad = bytearray(7)
    pad[pad_byte - 17] = 0x80
    b.genid["pad"] = bytes(pad)
    data = b.build()
    err = first_problem(data)
    payload = layout_offsets(data)[5][3]               # DEVICE 2's payload
    message = f"pad[{pad_byte - 17}] is 0x80; bits 0x80 are not legal for this VM: 0"
    assert err.section == "DEVICE 2 (vmgenid)" and err.offset == payload + 24 + pad_byte, str(err)
    assert str(err) == f"DEVICE 2 (vmgenid), byte {payload + 24 + pad_byte}: {message}"
    j = inspect_json(parse(data, strict=False))
    assert j["problems"] == [{"section": "DEVICE 2 (vmgenid)", "type": "DEVICE", "instance": 2,
                              "offset": payload + 24 + pad_byte, "message": message}]


def test_vmgenid_level_and_padding_both_reported():
    b = Builder()
    b.genid.update(level=2, pad=bytes(6) + b"\1")
    s = parse(b.build(), strict=False)
    assert [(p.section, p.message) for p in s.problems] == [
        ("DEVICE 2 (vmgenid)", "level is 0x2; bits 0x2 are not legal for this VM: 0 or 1"),
        ("DEVICE 2 (vmgenid)", "pad[6] is 0x1; bits 0x1 are not legal for this VM: 0")]
    payload = s.sections[5].payload
    assert [p.offset for p in s.problems] == [payload + 24 + 16, payload + 24 + 23]
    text = inspect_text(s)
    assert "INVALID: 2 problem(s):" in text and "level is 0x2" in text


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("genid", [bytes(16), b"\xff" * 16, GENID])
def test_vmgenid_any_id_either_level_is_valid(level, genid):
    b = Builder()
    b.genid.update(id=genid, level=level)
    s = snapshot.verify(b.build())
    assert bytes(s.devices[2]["fields"]["id"]) == genid
    assert s.devices[2]["fields"]["level"] == level


def test_vmgenid_name_and_state_size():
    b = Builder()
    secs = b.sections()
    secs[5][2] = b.device_payload(b"genid", b.vmgenid_state())
    err = first_problem(b.build(secs))
    assert err.section == "DEVICE 2 (genid)"
    assert "device 2 is 'genid'; version 2 has 'vmgenid'" in err.message
    secs = b.sections()
    secs[5][2] = b.device_payload(b"vmgenid", b.vmgenid_state()[:16])
    err = first_problem(b.build(secs))
    assert "state_size 16, vmgenid has 24" in err.message
    secs = b.sections()
    secs[5][2] = b.device_payload(b"vmgenid", b.vmgenid_state(), state_size=23)
    err = first_problem(b.build(secs))
    assert err.offset == layout_offsets(b.build(secs))[5][3] + 16
    assert "state_size 23 does not match the section length 48" in err.message


@pytest.mark.parametrize("memory", [True, False])
def test_two_device_stream_is_refused(memory):
    """A stream of the format before the VM generation ID (two devices) is not
    version 1."""
    b = Builder(nr_vcpus=1, pages=None if memory else [])
    secs = [sec for sec in b.sections() if sec[:2] != [DEVICE, 2]]
    data = b.build(secs)
    err = first_problem(data)
    label = "MEMORY run 0" if memory else "END"
    where = layout_offsets(data)[4][0]                  # the section after the PLIC
    assert err.section == label and err.offset == where, str(err)
    assert "where DEVICE 2 (vmgenid) was expected" in err.message


def test_inspect_vmgenid_notification_pending(capsys, tmp_path):
    b = Builder()
    b.genid.update(id=bytes(range(0xA0, 0xB0)), level=1)
    path = tmp_path / "g.snap"
    path.write_bytes(b.build())
    guid = str(uuid.UUID(bytes=bytes(range(0xA0, 0xB0))))  # stream order, 8-4-4-4-12
    assert guid == "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf"
    assert snap_cli.main(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    assert (f"device 2 vmgenid (24 bytes of state):\n  generation ID {guid}\n"
            "  notification pending: yes (interrupt line high: the guest has not read this ID "
            "yet)\n") in text
    assert snap_cli.main(["inspect", "--json", str(path)]) == 0
    genid = json.loads(capsys.readouterr().out)["devices"][2]
    assert genid["generation_id"] == genid["state"]["id"] == guid
    assert genid["notification_pending"] is True and genid["state"]["level"] == 1


def test_diff_vmgenid(tmp_path, capsys):
    a, b = Builder(), Builder()
    b.genid.update(id=GENID[::-1], level=1)
    d = diff(snapshot.verify(a.build()), snapshot.verify(b.build()))
    assert not d["identical"]
    assert d["devices"] == [
        {"device": 2, "name": "vmgenid", "field": "id",
         "a": "01234567-89ab-cdef-fedc-ba9876543210", "b": "10325476-98ba-dcfe-efcd-ab8967452301"},
        {"device": 2, "name": "vmgenid", "field": "level", "a": 0, "b": 1}]
    text = diff_text(d)
    assert ('device 2 vmgenid id: "01234567-89ab-cdef-fedc-ba9876543210" | '
            '"10325476-98ba-dcfe-efcd-ab8967452301"') in text
    assert "device 2 vmgenid level: 0 | 1" in text
    assert text.endswith("differ: 0 config field(s), 0 vCPU register(s), 2 device field(s), "
                         "0 memory page(s) (values: a | b)")
    pa, pb = tmp_path / "a.snap", tmp_path / "b.snap"
    pa.write_bytes(a.build())
    pb.write_bytes(b.build())
    assert snap_cli.main(["--json", "diff", str(pa), str(pb)]) == 1
    assert json.loads(capsys.readouterr().out)["devices"] == d["devices"]
    # only the ID differs: two snapshots of one VM a restore apart
    b.genid["level"] = 0
    d = diff(snapshot.verify(a.build()), snapshot.verify(b.build()))
    assert [x["field"] for x in d["devices"]] == ["id"]


def test_devices_are_the_hypervisors_models():
    """Every model of SNAP_DEVICES is a hypervisor model named for it, whose
    state is its table's struct (VDEV_STATE), and vdev_all[] is SNAP_DEVICES
    in order (the C unit test device_models_are_the_headers_tables checks
    the same at run time)."""
    vdev = ROOT / "hyp" / "vdev"
    assert "SNAP_DEVICES(DEVICE_OPS)" in (vdev / "devices.c").read_text()
    models = {}
    for src in vdev.glob("*.c"):
        for m in re.finditer(r"const struct vdev_ops (\w+)_ops = {(.*?)};", src.read_text(),
                             re.DOTALL):
            models[m.group(1)] = re.search(r"VDEV_STATE\((\w+),", m.group(2)).group(1)
    assert models == {name: name for name, _ in DEVICES}


def test_cfi_state_without_the_feature_is_fine_when_off():
    b = Builder()
    b.config["features"] = 0x1C                     # no Zicfilp, no Zicfiss
    for v in b.vcpus:
        v.update(lp_value=0, lp_locked=0, ss_value=0, ss_locked=0, ssp=0, senvcfg=0,
                 sstatus=v["sstatus"] & ~(1 << 23))
    assert snapshot.verify(b.build()).valid


def test_full_fifo_is_fine():
    b = Builder()
    b.uart.update(rx_head=356, rx_tail=100)       # exactly 256 queued
    assert snapshot.verify(b.build()).valid


@pytest.mark.parametrize("runs, message", [
    ([(RAM_GPA + 12, [page_of(1)])], "not page aligned"),
    ([(RAM_GPA - PAGE, [page_of(1)])], "not inside RAM"),
    ([(RAM_GPA + 16 * MiB - PAGE, [page_of(1), page_of(2)])], "not inside RAM"),
    ([(0, [page_of(1)])], "not inside RAM"),
    ([(RAM_GPA + 2 * PAGE, [page_of(1)]), (RAM_GPA, [page_of(2)])], "increasing order"),
    ([(RAM_GPA, [page_of(1), page_of(2)]), (RAM_GPA + PAGE, [page_of(3)])], "not overlapping"),
    ([(RAM_GPA, [page_of(1)]), (RAM_GPA, [page_of(2)])], "increasing order"),
])
def test_memory_run_rules(runs, message):
    err = first_problem(Builder(pages=runs).build())
    assert err.section.startswith("MEMORY run") and message in err.message


def test_end_counts_must_match():
    b = Builder()
    err = first_problem(b.build(end_counts=(8, 4)))
    assert err.section == "END" and "sections is 8, but 9 sections came before END" in err.message
    err = first_problem(b.build(end_counts=(9, 5)))
    assert "memory_pages is 5, but the MEMORY sections hold 4 pages" in err.message


def reorder(b, order, **build):
    secs = b.sections()
    return b.build([secs[i] if isinstance(i, int) else i for i in order], **build)


@pytest.mark.parametrize("order, label, message", [
    ([1, 0, 2, 3, 4, 5, 6, 7, 8], "VCPU 0", "the first section is VCPU; it must be CONFIG"),
    ([0, 2, 1, 3, 4, 5, 6, 7, 8], "VCPU 1", "instance 1, expected 0"),
    ([0, 1, 3, 4, 5, 6, 7, 8], "DEVICE 0", "where VCPU 1 was expected"),
    ([0, 1, 2, 4, 3, 5, 6, 7, 8], "DEVICE 1", "instance 1, expected 0"),
    ([0, 1, 2, 3, 5, 4, 6, 7, 8], "DEVICE 2", "instance 2, expected 1"),
    ([0, 1, 2, 3, 6, 7, 8], "MEMORY run 0", "where DEVICE 1 (plic) was expected"),
    ([0, 1, 2, 3, 4, 6, 7, 8], "MEMORY run 0", "where DEVICE 2 (vmgenid) was expected"),
    ([0, 1, 2, 3, 4, 5, 6, 2, 7, 8], "VCPU 1", "VCPU section after a MEMORY section"),
    ([0, 1, 2, 3, 6, 4, 5, 7, 8], "MEMORY run 0", "where DEVICE 1 (plic) was expected"),
    ([0, 1, 2, 3, 4, 5, 6, 4, 7, 8], "DEVICE 1", "DEVICE section after a MEMORY section"),
    ([0, 1, 2, 3, 4, 5, 6, 5, 7, 8], "DEVICE 2", "DEVICE section after a MEMORY section"),
    ([0, 0, 1, 2, 3, 4, 5, 6, 7, 8], "CONFIG", "a second CONFIG"),
    ([0, 1, 2, 2, 3, 4, 5, 6, 7, 8], "VCPU 1", "a VCPU section too many"),
    ([0, 1, 2, 3, 4, 5, 5, 6, 7, 8], "DEVICE 2", "a DEVICE section too many (version 2 has 3 "
                                                 "devices)"),
])
def test_sections_out_of_order(order, label, message):
    """Order is checked from the section header, before the payload is read
    (a streaming reader's order): a DEVICE's label has no name yet."""
    b = Builder()
    err = first_problem(reorder(b, order))
    assert err.section == label and message in err.message, str(err)


def test_wrong_instances():
    b = Builder()
    secs = b.sections()
    secs[0][1] = 1
    assert "instance 1, expected 0" in first_problem(b.build(secs)).message
    secs = b.sections()
    secs[-1][1] = 3
    err = first_problem(b.build(secs))
    assert err.section == "MEMORY run 2" and "instance 3, expected 0" in err.message
    secs = b.sections()
    data = b.build(secs)
    end_pos = layout_offsets(data)[-1][0]
    err = first_problem(patch(data, end_pos + 4, "<I", 1))
    assert err.section == "END" and "instance 1" in err.message


def test_end_too_early():
    b = Builder()
    secs = b.sections()[:2]                          # CONFIG, VCPU 0, then END
    err = first_problem(b.build(secs, end_counts=(2, 4)))
    assert err.section == "END" and "where VCPU 1 was expected" in err.message


def test_device_with_the_wrong_name():
    b = Builder()
    secs = b.sections()
    secs[3][2] = b.device_payload(b"ns16550", b.uart_state())
    err = first_problem(b.build(secs))
    assert "device 0 is 'ns16550'; version 2 has 'uart16550'" in err.message


@pytest.mark.parametrize("extra", [b"\0", b"junk", Builder().build()[32:80]])
def test_trailing_bytes(extra):
    data = small()
    err = first_problem(data + extra)
    assert err.section == "after END" and err.offset == len(data)
    assert f"{len(extra)} trailing byte(s)" in err.message


# --- gzip-compressed files: the same stream, the same checks ---------------------------


def test_gzip_file_reads_as_its_stream(tmp_path):
    data = Builder(pages=[(RAM_GPA, [page_of(i) for i in range(40)])]).build()
    raw, packed = tmp_path / "raw.snap", tmp_path / "gz.snap"
    raw.write_bytes(data)
    packed.write_bytes(gzip.compress(data, 1))
    a, b = snapshot.verify(raw), snapshot.verify(packed)
    assert (a.compressed, b.compressed) == (False, True)
    assert a.size == b.size == len(data) and b.file_size == packed.stat().st_size
    assert inspect_json(a)["sections"] == inspect_json(b)["sections"]
    assert diff(a, b)["identical"]
    assert stream_size(packed) == stream_size(raw) == len(data)


def test_gzip_multi_member_file_is_one_stream():
    """RFC 1952: members one after another expand to their concatenation."""
    data = small()
    assert snapshot.verify(gzip.compress(data[:1000]) + gzip.compress(data[1000:])).valid


def test_gzip_truncated_anywhere_is_refused():
    packed = gzip.compress(small())
    for n in range(2, len(packed)):
        err = first_problem(packed[:n])
        assert "gzip layer is damaged" in err.message or "truncated" in err.message, (n, err)


def test_gzip_damage_is_refused_with_the_stream_offset():
    data = Builder(pages=[(RAM_GPA, [page_of(i) for i in range(64)])]).build()
    packed = bytearray(gzip.compress(data))
    rng = random.Random(7)
    for n in [rng.randrange(10, len(packed)) for _ in range(200)] + list(range(len(packed) - 8, len(packed))):
        bad = bytearray(packed)
        bad[n] ^= 1 << rng.randrange(8)
        with pytest.raises(SnapError) as e:
            snapshot.verify(bytes(bad))
        assert 0 <= e.value.offset <= len(data), (n, str(e.value))


def test_gzip_the_stream_inside_is_checked_too():
    bad = bytearray(small())
    bad[8] = 9                                          # version 9
    err = first_problem(gzip.compress(bytes(bad)))
    assert err.section == "header" and "version 9" in err.message


def test_gzip_trailing_bytes_are_counted_up_to_a_bound(monkeypatch):
    data = small()
    monkeypatch.setattr(snapshot, "TRAILING_SCAN_MAX", 3 << 20)
    err = first_problem(gzip.compress(data + bytes(50 << 20)))     # a small bomb
    assert err.section == "after END" and "at least 3145728 trailing" in err.message
    err = first_problem(gzip.compress(data + b"junk"))
    assert "4 trailing byte(s)" in err.message


def test_gzip_inspect_and_verify_say_so(tmp_path, capsys):
    path = tmp_path / "a.snap"
    path.write_bytes(gzip.compress(small()))
    assert snap_cli.main(["inspect", str(path)]) == 0
    assert "gzip-compressed file:" in capsys.readouterr().out
    assert snap_cli.main(["verify", "--json", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["compressed"] is True and out["file_bytes"] == path.stat().st_size
    assert out["bytes"] == len(small())


def test_a_second_end_is_trailing():
    data = small()
    end = data[layout_offsets(data)[-1][0]:]
    err = first_problem(data + end)
    assert "trailing" in err.message


def test_lenient_parse_collects_problems_and_keeps_going():
    b = Builder()
    b.vcpus[1]["hsm_state"] = 9
    data = bytearray(b.build())
    pos, _, _, payload, _ = layout_offsets(bytes(data))[1]       # VCPU 0: break its CRC
    data[payload + 8] ^= 0x40
    s = parse(bytes(data), strict=False)
    assert not s.valid and s.complete
    assert [p.section for p in s.problems] == ["VCPU 0", "VCPU 1"]
    assert len(s.vcpus) == 2 and len(s.devices) == 3 and s.end is not None
    text = inspect_text(s)
    assert "BAD (payload has 0x" in text
    assert "INVALID: 2 problem(s):" in text and "hsm_state is 0x9" in text
    j = inspect_json(s)
    assert not j["valid"] and [p["section"] for p in j["problems"]] == ["VCPU 0", "VCPU 1"]
    assert j["problems"][1] == {"section": "VCPU 1", "type": "VCPU", "instance": 1,
                                "offset": layout_offsets(bytes(data))[2][3] + 644,
                                "message": "hsm_state is 0x9; legal: 0..2 (stopped, "
                                           "started, suspended)"}
    assert [x["crc_ok"] for x in j["sections"]][:3] == [True, False, True]


def test_lenient_parse_of_a_truncated_file_shows_what_it_read():
    data = Builder().build()
    s = parse(data[:800], strict=False)        # in VCPU 0's payload
    assert s.config is not None and not s.vcpus and not s.complete
    assert "truncated" in s.problems[-1].message
    assert "config: vm alpha" in inspect_text(s)


# --- diff --------------------------------------------------------------------------------


def test_diff_identical(valid):
    d = diff(snapshot.verify(valid), snapshot.verify(valid))
    assert d["identical"] and d["memory"]["pages"] == 0
    assert diff_text(d) == "identical guest state"


def test_diff_reports_each_kind():
    a, b = Builder(), Builder()
    b.config["boot_count"] = 2
    b.config["bootargs"] = b"quiet"
    b.vcpus[1]["pc"] += 4
    b.vcpus[0]["gpr"][10] = 0xDEAD
    b.vcpus[0]["f"][3] = 0
    b.uart["scr"] = 0x11
    b.uart.update(rx_head=106, rx=bytes(100) + b"hello!" + bytes(150))
    b.plic["pending"] = 0
    b.runs = [(RAM_GPA, [page_of(1), page_of(99)]), (RAM_GPA + 2 * PAGE, [page_of(3)]),
              (RAM_GPA + 5 * PAGE, [page_of(7)])]          # last page now zero, one new page
    d = diff(snapshot.verify(a.build()), snapshot.verify(b.build()))
    assert not d["identical"]
    assert {x["field"] for x in d["config"]} == {"boot_count", "bootargs"}
    assert {(x["vcpu"], x["field"]) for x in d["vcpus"]} == {(1, "pc"), (0, "x10"), (0, "f3")}
    assert {(x["device"], x["field"]) for x in d["devices"]} == {
        (0, "scr"), (0, "rx_head"), (0, "rx_queue"), (1, "pending")}
    m = d["memory"]
    assert m["pages"] == 3 and (m["zero_in_a"], m["zero_in_b"]) == (1, 1)
    assert m["ranges"] == [{"gpa": RAM_GPA + PAGE, "pages": 1},
                           {"gpa": RAM_GPA + 5 * PAGE, "pages": 1},
                           {"gpa": RAM_GPA + 16 * MiB - PAGE, "pages": 1}]
    text = diff_text(d)
    assert "config boot_count: 1 | 2" in text
    assert 'config bootargs: "console=ttyS0 quiet" | "quiet"' in text
    assert "vcpu 0 x10/a0: 0xa | 0xdead" in text
    assert "vcpu 1 pc: 0xffffffff80001236 | 0xffffffff8000123a" in text
    assert "device 0 uart16550 scr: 0x5a | 0x11" in text
    assert "device 1 plic pending: 0x400 | 0" in text
    assert "memory: 3 page(s) differ" in text
    assert text.endswith("differ: 2 config field(s), 3 vCPU register(s), 4 device field(s), "
                         "3 memory page(s) (values: a | b)")


def test_diff_stored_zero_page_equals_elided():
    a = Builder(pages=[(RAM_GPA, [page_of(1)])])
    b = Builder(pages=[(RAM_GPA, [page_of(1), bytes(PAGE)])])
    assert diff(snapshot.verify(a.build()), snapshot.verify(b.build()))["identical"]


def test_diff_vcpu_count_and_live_flag():
    a, b = Builder(nr_vcpus=1), Builder(nr_vcpus=2)
    b.flags = 1
    d = diff(snapshot.verify(a.build()), snapshot.verify(b.build()))
    assert {"field": "live", "a": False, "b": True} in d["header"]
    assert {"vcpu": 1, "field": "present", "a": False, "b": True} in d["vcpus"]
    assert any(x["field"] == "nr_vcpus" for x in d["config"])


# --- the command line ---------------------------------------------------------------------


@pytest.fixture
def files(tmp_path, valid):
    a = tmp_path / "a.snap"
    a.write_bytes(valid)
    b = Builder()
    b.vcpus[0]["pc"] = 0x80200000
    bfile = tmp_path / "b.snap"
    bfile.write_bytes(b.build())
    bad = tmp_path / "bad.snap"
    bad.write_bytes(valid[:-1])
    return a, bfile, bad


def test_main_verify(files, capsys):
    a, _, bad = files
    assert snap_cli.main(["verify", str(a)]) == 0
    assert capsys.readouterr().out.startswith(f"{a}: valid snapshot of vm alpha: 2 vCPU(s), "
                                              "16M RAM, 4 page(s) in 3 run(s)")
    assert snap_cli.main(["verify", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"carapace-snap: {bad}: invalid: END, byte ")
    assert "truncated" in err
    assert snap_cli.main(["verify", str(a.parent / "nope")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_main_json(files, capsys):
    a, b, bad = files
    assert snap_cli.main(["--json", "verify", str(a)]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["valid"] and j["vm"] == "alpha" and j["pages"] == 4 and j["error"] is None
    assert snap_cli.main(["verify", "--json", str(bad)]) == 1
    j = json.loads(capsys.readouterr().out)
    assert not j["valid"] and j["error"]["section"] == "END"
    assert "truncated" in j["error"]["message"] and j["error"]["offset"] == bad.stat().st_size
    assert snap_cli.main(["inspect", "--json", str(bad)]) == 1
    j = json.loads(capsys.readouterr().out)
    assert not j["valid"] and j["config"]["name"] == "alpha"
    assert snap_cli.main(["--json", "diff", str(a), str(b)]) == 1
    j = json.loads(capsys.readouterr().out)
    assert j["vcpus"] == [{"vcpu": 0, "field": "pc", "a": 0xFFFFFFFF80001234, "b": 0x80200000}]


def test_main_inspect_and_diff_statuses(files, capsys):
    a, b, bad = files
    assert snap_cli.main(["inspect", str(a)]) == 0
    assert "config: vm alpha" in capsys.readouterr().out
    assert snap_cli.main(["inspect", str(bad)]) == 1
    assert "INVALID" in capsys.readouterr().out
    assert snap_cli.main(["diff", str(a), str(a)]) == 0
    assert snap_cli.main(["diff", str(a), str(b)]) == 1
    assert "vcpu 0 pc: 0xffffffff80001234 | 0x80200000" in capsys.readouterr().out
    assert snap_cli.main(["diff", str(a), str(bad)]) == 2
    assert f"carapace-snap: {bad}: invalid: END, byte" in capsys.readouterr().err
    assert snap_cli.main(["diff", str(a), "/nonexistent"]) == 2
    assert snap_cli.main([]) == 2
    assert snap_cli.main(["verify"]) == 2
    assert "usage" in capsys.readouterr().err


def test_runs_as_a_program(files):
    a, _, bad = files
    assert os.access(SNAP_TOOL, os.X_OK)
    assert SNAP_TOOL.read_text().startswith("#!/usr/bin/env python3\n# SPDX-License-Identifier: "
                                            "MIT\n")
    r = subprocess.run([str(SNAP_TOOL), "verify", str(a)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(SNAP_TOOL), "--json", "verify", str(bad)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and json.loads(r.stdout)["valid"] is False


def test_stdlib_only():
    """The tools and their package import the standard library and themselves only."""
    files = [*(ROOT / "tools").glob("carapace-*"), *(ROOT / "tools" / "carapace").rglob("*.py")]
    assert len(files) > 20
    for path in files:
        imports = set(re.findall(r"^(?:import|from) (\w+)", path.read_text(), re.MULTILINE))
        outside = imports - set(sys.stdlib_module_names) - {"carapace"}
        assert not outside, f"{path}: {outside}"


# --- carapace-ctl snapshot / restore against a fake hypervisor -------------------------------


HELLO = {"protocol": 1, "hypervisor": "carapace", "vm_max": 8, "harts": 2,
         "commands": list(COMMANDS)}


@pytest.fixture
def socks(tmp_path):
    return tmp_path / "ctl.sock", tmp_path / "stream.sock"


@pytest.fixture
def fake(socks):
    servers = []

    def start(handler, stream=True):
        servers.append(FakeHypervisor(socks[0], socks[1] if stream else None, handler))
        return servers[-1]
    yield start
    for server in servers:
        server.close()


def ctl_main(socks, *argv):
    return ctl_cli.main(["--socket", str(socks[0]), "--stream-socket", str(socks[1]), *argv])


def wait_stream(hyp, connections=1):
    """Until the fake has accepted the stream connection of this request, the
    @connections-th (the client connects it before sending the request; the
    accept runs in another thread, so on a busy machine hyp.stream may still
    be the previous request's, closed, connection)."""
    for _ in range(500):
        if hyp.stream and hyp.stream_connections >= connections:
            return
        time.sleep(0.01)


def snapshot_server(stream_data, reply_bytes=None, pieces=1, delay=0.0, reply_first=False,
                    code=None):
    """A handler that writes @stream_data on the stream and then replies."""
    served = [0]

    def handler(request, hyp):
        if request["cmd"] == "hello":
            return ok(request, **HELLO)
        assert request["cmd"] == "snapshot"
        if code:
            return err(request, code, f"{code} happened")
        served[0] += 1
        connections = served[0]

        def act(hyp):
            wait_stream(hyp, connections)
            answer = ok(request, vm=request["vm"], bytes=len(stream_data)
                        if reply_bytes is None else reply_bytes, pages=4, pause_us=1234,
                        live=request["live"])
            if reply_first:
                hyp.reply(answer)
            step = -(-len(stream_data) // pieces) if stream_data else 1
            for i in range(0, len(stream_data), step):
                hyp.stream.sendall(stream_data[i:i + step])
                time.sleep(delay)
            if not reply_first:
                hyp.reply(answer)
        return act
    return handler


def test_ctl_snapshot_writes_the_file(fake, socks, tmp_path, valid, capsys):
    server = fake(snapshot_server(valid, pieces=7))
    out = tmp_path / "alpha.snap"
    assert ctl_main(socks, "snapshot", "alpha", str(out)) == 0
    assert gzip.decompress(out.read_bytes()) == valid          # gzip by default
    assert not (tmp_path / "alpha.snap.tmp").exists()
    hello, request = server.requests
    assert hello["cmd"] == "hello"                    # a round trip after the stream connects
    assert request == {"v": 1, "id": request["id"], "cmd": "snapshot", "vm": "alpha",
                       "live": False}
    assert server.stream_connections == 1
    stdout = capsys.readouterr().out
    assert stdout == (f"vm alpha: snapshot written: {len(valid)} bytes "
                      f"({human_size(len(valid))}), 4 memory pages, paused 1.234 ms; "
                      f"saved to {out} (gzip, {human_size(out.stat().st_size)}, "
                      f"{100.0 * out.stat().st_size / len(valid):.1f} % of the stream)\n")
    checked = snapshot.verify(out)
    assert checked.valid and checked.compressed and checked.size == len(valid)


def test_ctl_snapshot_no_compress_writes_the_stream_itself(fake, socks, tmp_path, valid, capsys):
    fake(snapshot_server(valid, pieces=3))
    out = tmp_path / "alpha.snap"
    assert ctl_main(socks, "--json", "snapshot", "alpha", str(out), "--no-compress") == 0
    assert out.read_bytes() == valid
    reply = json.loads(capsys.readouterr().out)
    assert reply["compressed"] is False and reply["file_bytes"] == len(valid)


class _FailingFile:
    """A file whose writes fail once @after bytes are in (a full disk)."""

    def __init__(self, after):
        self.data, self.after = bytearray(), after

    def write(self, b):
        if len(self.data) + len(b) > self.after:
            raise OSError(28, "No space left on device")
        self.data += b
        return len(b)


@pytest.mark.parametrize("threaded", [False, True], ids=["raw", "gzip-thread"])
def test_stream_file_writer_keeps_order_and_reports_a_full_disk(tmp_path, threaded):
    from carapace.errors import FileError
    from carapace.streams import _FileWriter
    out = _FailingFile(after=1 << 30)
    chunks = [bytes([i]) * (1000 + i) for i in range(200)]
    with _FileWriter(out, tmp_path / "x.tmp", threaded) as w:
        for c in chunks:
            w.buffer[:len(c)] = c      # the receive buffer is reused for every chunk
            w.write(len(c))
        w.finish()
    assert bytes(out.data) == b"".join(chunks)
    out = _FailingFile(after=5000)
    with pytest.raises(FileError, match="cannot write .*x.tmp: No space left on device"):
        with _FileWriter(out, tmp_path / "x.tmp", threaded) as w:
            for c in chunks:
                w.buffer[:len(c)] = c
                w.write(len(c))
            w.finish()
    assert len(out.data) <= 5000


def test_ctl_snapshot_gzip_file_is_reproducible(fake, socks, tmp_path, valid, capsys):
    """No name or time in the gzip header: one stream, one file."""
    fake(snapshot_server(valid))
    files = [tmp_path / "a.snap", tmp_path / "b.snap"]
    for out in files:
        assert ctl_main(socks, "--json", "snapshot", "alpha", str(out)) == 0
        reply = json.loads(capsys.readouterr().out)
        assert reply["compressed"] is True and reply["file_bytes"] == out.stat().st_size
    assert files[0].read_bytes() == files[1].read_bytes()
    assert files[0].stat().st_size < len(valid)


def test_ctl_snapshot_live_json_and_reply_before_the_bytes(fake, socks, tmp_path, valid, capsys):
    """The reply may overtake the stream's last bytes: they are still awaited."""
    server = fake(snapshot_server(valid, pieces=5, delay=0.05, reply_first=True))
    out = tmp_path / "alpha.snap"
    assert ctl_main(socks, "--json", "snapshot", "alpha", str(out), "--live") == 0
    assert gzip.decompress(out.read_bytes()) == valid
    assert server.requests[1]["live"] is True
    reply = json.loads(capsys.readouterr().out)
    assert reply["bytes"] == len(valid) and reply["live"] is True


def test_ctl_snapshot_progress(fake, socks, tmp_path, valid, capsys):
    fake(snapshot_server(valid, pieces=3, delay=0.3))
    assert ctl_main(socks, "--progress", "snapshot", "alpha", str(tmp_path / "s")) == 0
    err = capsys.readouterr().err
    assert f"snapshot alpha: 0.0 MiB ({len(valid)} bytes)" in err and "MiB/s in " in err


@pytest.mark.parametrize("reply_bytes, words", [
    (lambda n: n + 10, "nothing on the stream or the control socket"),   # fewer came
    (lambda n: n - 10, "bytes came on the stream, but the reply says"),  # more came
])
def test_ctl_snapshot_wrong_length_removes_the_file(fake, socks, tmp_path, valid, capsys,
                                                    reply_bytes, words):
    fake(snapshot_server(valid, reply_bytes=reply_bytes(len(valid))))
    out = tmp_path / "alpha.snap"
    assert ctl_main(socks, "--timeout", "0.5", "snapshot", "alpha", str(out)) == 2
    assert words in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "alpha.snap.tmp").exists()


def test_ctl_snapshot_error_reply(fake, socks, tmp_path, capsys):
    fake(snapshot_server(b"", code="no-such-vm"))
    out = tmp_path / "zz.snap"
    out.write_bytes(b"older")                                   # an older file stays
    assert ctl_main(socks, "snapshot", "zz", str(out)) == 1
    assert "carapace-ctl: no-such-vm: no-such-vm happened" in capsys.readouterr().err
    assert out.read_bytes() == b"older" and not (tmp_path / "zz.snap.tmp").exists()


def test_ctl_snapshot_error_after_partial_stream(fake, socks, tmp_path, valid, capsys):
    def handler(request, hyp):
        if request["cmd"] == "hello":
            return ok(request, **HELLO)

        def act(hyp):
            wait_stream(hyp)
            hyp.stream.sendall(valid[:100])
            time.sleep(0.1)
            hyp.reply(err(request, "internal", "out of buffers"))
        return act
    fake(handler)
    assert ctl_main(socks, "snapshot", "alpha", str(tmp_path / "a.snap")) == 1
    assert not list(tmp_path.glob("a.snap*"))


def test_ctl_snapshot_stream_closed(fake, socks, tmp_path, valid, capsys):
    def handler(request, hyp):
        if request["cmd"] == "hello":
            return ok(request, **HELLO)

        def act(hyp):
            wait_stream(hyp)
            hyp.stream.sendall(valid[:100])
            hyp.stream.close()
        return act
    fake(handler)
    assert ctl_main(socks, "snapshot", "alpha", str(tmp_path / "a.snap")) == 2
    assert "stream connection closed after 100 bytes" in capsys.readouterr().err
    assert not list(tmp_path.glob("a.snap*"))


def test_ctl_snapshot_no_stream_socket(fake, socks, tmp_path, capsys):
    server = fake(snapshot_server(b""), stream=False)
    assert ctl_main(socks, "snapshot", "alpha", str(tmp_path / "a.snap")) == 2
    assert f"no stream socket at {socks[1]}" in capsys.readouterr().err
    assert server.requests == []                      # nothing was asked
    assert not list(tmp_path.glob("a.snap*"))


def test_ctl_snapshot_silence_times_out(fake, socks, tmp_path, capsys):
    fake(lambda request, hyp: ok(request, **HELLO) if request["cmd"] == "hello" else None)
    start = time.monotonic()
    assert ctl_main(socks, "--timeout", "0.4", "snapshot", "alpha", str(tmp_path / "a")) == 2
    assert time.monotonic() - start < 5
    assert "nothing on the stream or the control socket for 0.4 s" in capsys.readouterr().err


def test_ctl_snapshot_slow_stream_beyond_the_timeout(fake, socks, tmp_path, valid):
    """--timeout bounds silence: a transfer longer than it, bytes flowing, is fine."""
    fake(snapshot_server(valid, pieces=8, delay=0.15))
    out = tmp_path / "slow.snap"
    assert ctl_main(socks, "--timeout", "0.5", "snapshot", "alpha", str(out)) == 0
    assert gzip.decompress(out.read_bytes()) == valid


def restore_server(code=None, read_first=None):
    """A handler that reads the whole stream, then answers (or answers @code
    after reading @read_first bytes)."""
    def handler(request, hyp):
        if request["cmd"] == "hello":
            return ok(request, **HELLO)
        assert request["cmd"] == "restore"

        def act(hyp):
            wait_stream(hyp)
            if code:
                hyp.read_stream(read_first or 0)
                hyp.reply(err(request, code, f"{code}: CONFIG at byte 32"))
                return
            hyp.read_stream(request["bytes"])
            hyp.reply(ok(request, vm=request.get("name", "alpha"), index=3, pages=4))
        return act
    return handler


def test_ctl_restore_sends_the_file(fake, socks, tmp_path, valid, capsys):
    path = tmp_path / "a.snap"
    path.write_bytes(valid)
    server = fake(restore_server())
    assert ctl_main(socks, "restore", str(path), "--name", "alpha2") == 0
    hello, request = server.requests
    assert hello["cmd"] == "hello"
    assert request == {"v": 1, "id": request["id"], "cmd": "restore", "name": "alpha2",
                       "bytes": len(valid)}
    assert bytes(server.stream_bytes) == valid
    assert capsys.readouterr().out == \
        f"vm alpha2: restored, index 3, 4 memory pages (from {path})\n"


@pytest.mark.parametrize("verify", [True, False])
def test_ctl_restore_expands_a_gzip_file(fake, socks, tmp_path, valid, capsys, verify):
    """The hypervisor gets the stream, never gzip; its size is the stream's."""
    path = tmp_path / "a.snap"
    path.write_bytes(gzip.compress(valid))
    server = fake(restore_server())
    argv = ["restore", str(path)] + ([] if verify else ["--no-verify"])
    assert ctl_main(socks, *argv) == 0
    assert server.requests[1]["bytes"] == len(valid)
    assert bytes(server.stream_bytes) == valid


def test_ctl_restore_refuses_damaged_gzip_before_connecting(fake, socks, tmp_path, valid,
                                                            capsys):
    path = tmp_path / "a.snap"
    path.write_bytes(gzip.compress(valid)[:-9])         # cut inside the trailer
    server = fake(restore_server())
    assert ctl_main(socks, "restore", str(path)) == 3
    err = capsys.readouterr().err
    assert "gzip layer is damaged" in err and "not a valid snapshot" in err
    assert server.requests == []


def test_ctl_restore_without_name_and_json(fake, socks, tmp_path, valid, capsys):
    path = tmp_path / "a.snap"
    path.write_bytes(valid)
    server = fake(restore_server())
    assert ctl_main(socks, "--json", "restore", str(path)) == 0
    assert "name" not in server.requests[1]
    assert json.loads(capsys.readouterr().out)["vm"] == "alpha"


def test_ctl_restore_big_file_in_pieces(fake, socks, tmp_path, capsys):
    b = Builder(pages=[(RAM_GPA, [page_of(i) for i in range(512)]),
                       (RAM_GPA + 4 * MiB, [page_of(i) for i in range(300)])])
    data = b.build()
    path = tmp_path / "big.snap"
    path.write_bytes(data)
    server = fake(restore_server())
    assert ctl_main(socks, "restore", str(path)) == 0
    assert bytes(server.stream_bytes) == data


@pytest.mark.parametrize("code", ["bad-snapshot", "no-cfi", "exists", "no-memory", "no-stream"])
def test_ctl_restore_error_reply_stops_the_stream(fake, socks, tmp_path, valid, capsys, code):
    b = Builder(pages=[(RAM_GPA, [page_of(i) for i in range(512)])] * 1)
    data = b.build()
    path = tmp_path / "a.snap"
    path.write_bytes(data)
    server = fake(restore_server(code=code, read_first=100))
    assert ctl_main(socks, "restore", str(path)) == 1
    assert f"carapace-ctl: {code}: {code}: CONFIG at byte 32" in capsys.readouterr().err
    assert len(server.stream_bytes) == 100


def test_ctl_restore_refuses_a_bad_file_before_connecting(fake, socks, tmp_path, valid, capsys):
    path = tmp_path / "bad.snap"
    bad = bytearray(valid)
    bad[500] ^= 1
    path.write_bytes(bytes(bad))
    server = fake(restore_server())
    assert ctl_main(socks, "restore", str(path)) == 3
    message = capsys.readouterr().err
    assert message.startswith(f"carapace-ctl: {path}: not a valid snapshot: CONFIG, byte 48: "
                              "CRC32C mismatch")
    assert server.requests == [] and server.stream_connections == 0
    # --no-verify sends it anyway (to test the hypervisor's own checks).
    assert ctl_main(socks, "restore", str(path), "--no-verify") == 0
    assert bytes(server.stream_bytes) == bytes(bad)


def test_ctl_restore_missing_file_and_bad_name(fake, socks, tmp_path, valid, capsys):
    server = fake(restore_server())
    assert ctl_main(socks, "restore", str(tmp_path / "nope.snap")) == 3
    assert "cannot read" in capsys.readouterr().err
    path = tmp_path / "a.snap"
    path.write_bytes(valid)
    assert ctl_main(socks, "restore", str(path), "--name", "Bad") == 3
    assert "bad VM name 'Bad'" in capsys.readouterr().err
    assert ctl_main(socks, "snapshot", "Bad!", str(path)) == 3
    assert ctl_main(socks, "snapshot", "alpha", str(tmp_path)) == 3
    assert ctl_main(socks, "snapshot", "alpha", str(tmp_path / "no" / "dir" / "x")) == 3
    assert "cannot write" in capsys.readouterr().err
    assert server.requests == []


def test_ctl_restore_ok_before_the_stream_is_sent(fake, socks, tmp_path, valid, capsys):
    path = tmp_path / "a.snap"
    path.write_bytes(valid)
    fake(lambda request, hyp: ok(request, **HELLO) if request["cmd"] == "hello"
         else ok(request, vm="alpha", index=0, pages=4))
    big = Builder(pages=[(RAM_GPA, [page_of(i) for i in range(512)])] * 1).build()
    path.write_bytes(big)
    assert ctl_main(socks, "restore", str(path)) == 2
    assert "answered ok after" in capsys.readouterr().err


def test_ctl_restore_silence_times_out(fake, socks, tmp_path, valid, capsys):
    path = tmp_path / "a.snap"
    path.write_bytes(valid)
    fake(lambda request, hyp: ok(request, **HELLO) if request["cmd"] == "hello" else None)
    assert ctl_main(socks, "--timeout", "0.4", "restore", str(path)) == 2
    assert "no reply within 0.4 s" in capsys.readouterr().err


def test_default_stream_socket(monkeypatch, tmp_path):
    monkeypatch.delenv("CARAPACE_STREAM_SOCKET", raising=False)
    monkeypatch.delenv("CARAPACE_CTL_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/5")
    assert default_stream_socket() == Path(f"/run/user/5/carapace-{os.getuid()}/stream.sock")
    assert default_stream_socket(Path("/x/c.sock")) == Path("/x/c.stream.sock")
    assert default_stream_socket(Path("/x/ctl.sock")) == Path("/x/stream.sock")
    monkeypatch.setenv("CARAPACE_CTL_SOCKET", "/y/ctl.sock")
    assert default_stream_socket() == Path("/y/stream.sock")
    monkeypatch.setenv("CARAPACE_STREAM_SOCKET", "/z/s.sock")
    assert default_stream_socket(Path("/x/c.sock")) == Path("/z/s.sock")


def test_ctl_stream_socket_follows_socket_option(fake, socks, tmp_path, valid, monkeypatch):
    """Without --stream-socket: stream.sock beside --socket."""
    monkeypatch.delenv("CARAPACE_STREAM_SOCKET", raising=False)
    fake(snapshot_server(valid))
    out = tmp_path / "x.snap"
    assert ctl_cli.main(["--socket", str(socks[0]), "snapshot", "alpha", str(out)]) == 0
    assert gzip.decompress(out.read_bytes()) == valid


def test_ctl_help_mentions_snapshot_and_restore(capsys):
    with pytest.raises(SystemExit):
        ctl_cli.main(["--help"])
    out = capsys.readouterr().out
    for word in ("snapshot VM FILE [--live]", "restore FILE [--name NEW]", "--stream-socket",
                 "CARAPACE_STREAM_SOCKET", "docs/snapshot-format.md"):
        assert word in out


def test_progress_on_a_terminal_and_elsewhere(monkeypatch):
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    tty = Tty()
    p = Progress(tty, "snapshot alpha")
    clock[0] += 0.5
    p.update(2 * MiB)
    clock[0] += 0.5
    p.finish(4 * MiB)
    assert tty.getvalue() == (f"\rsnapshot alpha: 2.0 MiB ({2 * MiB} bytes), 4.0 MiB/s\033[K"
                              f"\rsnapshot alpha: 4.0 MiB ({4 * MiB} bytes), 4.0 MiB/s "
                              "in 1.00 s\033[K\n")
    plain = io.StringIO()
    p = Progress(plain, "restore a.snap", total=8 * MiB)
    clock[0] += 0.5
    p.update(MiB)                       # less than a second: nothing yet
    clock[0] += 1.0
    p.update(3 * MiB)
    p.finish(8 * MiB)
    assert plain.getvalue() == (f"restore a.snap: 3.0 MiB of 8.0 MiB ({3 * MiB} bytes), "
                                "2.0 MiB/s\n"
                                f"restore a.snap: 8.0 MiB of 8.0 MiB ({8 * MiB} bytes), "
                                "5.3 MiB/s in 1.50 s\n")


def test_management_doc_lists_every_error_code_and_command():
    text = (ROOT / "docs" / "management.md").read_text()
    table = text[text.index("### Error codes"):text.index("The checks run in this order")]
    assert set(re.findall(r"^\| `([a-z-]+)` \|", table, re.MULTILINE)) == set(ERROR_CODES)
    for command in COMMANDS:
        assert f"### {command}" in text, command


def test_every_error_code_the_hypervisor_answers_is_known():
    """Each code the hypervisor's sources answer with (a refusal, a request's
    error) is one the client knows and docs/management.md lists."""
    answered = set()
    for path in (ROOT / "hyp").rglob("*.c"):
        text = path.read_text()
        answered |= set(re.findall(r'\b(?:refuse\w*|reply_error|wait_error|abort\w*)\('
                                   r'(?:[^;"]*?,\s*)?"([a-z]+(?:-[a-z]+)*)"', text))
        answered |= set(re.findall(r'\bcode\s*=\s*"([a-z]+(?:-[a-z]+)*)"', text))
    assert {"bad-snapshot", "no-device", "busy"} <= answered     # the search finds them
    assert answered <= set(ERROR_CODES), answered - set(ERROR_CODES)


# --- the legal values: the same table, the same verdicts as the hypervisor ------------

CASES_H = ROOT / "tests" / "unit" / "snap_legal_cases.h"


def _c_defines(*paths):
    """{name: body} of the object-like #defines in @paths (read here, not with
    the tool's parser: the test does not trust the tool it checks)."""
    out = {}
    for path in paths:
        text = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S).replace("\\\n", " ")
        out.update(re.findall(r"^\s*#define\s+(\w+)\b(?!\()\s+(.*)$", text, flags=re.M))
    return out


def _c_eval(expr, defines):
    expr = re.sub(r"\b(0x[0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr)
    expr = re.sub(r"\b[A-Z_][A-Z0-9_]*\b",
                  lambda m: m.group(0) if m.group(0) in ("BIT", "_UL")
                  else f"({_c_eval(defines[m.group(0)], defines)})", expr)
    value = eval(expr, {"BIT": lambda n: 1 << n, "_UL": lambda x: x})   # noqa: S307 (our header)
    return value & ((1 << 64) - 1)


def _legal_cases():
    """The crafted records of tests/unit/snap_legal_cases.h, which the C test
    (tests/unit/test_snap_legal.c) restores through the hypervisor's loader:
    (section, field, value, features, refused) each."""
    defines = _c_defines(ROOT / "include/arch/riscv/encoding.h", HEADER_H, RECORDS_H, CASES_H)
    body = re.sub(r"/\*.*?\*/", " ", CASES_H.read_text(), flags=re.S).replace("\\\n", " ")
    table = body[body.index("#define SNAP_LEGAL_CASES(X)"):body.index("#define SNAP_DEVICE_CASES")]
    out = []
    for row in re.findall(r"X\((\w+),\s*(\w+),\s*(.+?),\s*(\w+),\s*([01])\)", table):
        section, field, value, features, refused = row
        out.append(pytest.param(section, field, _c_eval(value, defines),
                                _c_eval(features, defines), refused == "1",
                                id=f"{section}-{field}-{value}-{features}"))
    assert len(out) == table.count("X("), "a row this reader does not understand"
    return out


def _aia_stream(features, vcpu_over=None, dev_over=None):
    """A version 7 stream of one vCPU (tests/fuzz/make_seeds.py's writer): an
    AIA VM's (features with bit 5: its file of 255 identities, a zero plic) or
    a PLIC VM's (a zero aplic), with @vcpu_over / @dev_over applied."""
    ms = _seeds()
    aia = bool(features & snapfmt.FEAT_AIA)
    over = {"imsic_nr_ids": 255 if aia else 0}
    over.update(vcpu_over or {})
    devs = {"plic": {k: ([0] * len(v) if isinstance(v, list) else 0)
                     for k, v in PLIC.decode(bytes(PLIC.size)).items()}} if aia else {}
    devs.update(dev_over or {})
    return ms.stream(name="alpha", runs=(), features=features, vcpu_over=over, dev_over=devs)


@pytest.mark.parametrize("section, field, value, features, refused", _legal_cases())
def test_verify_gives_the_hypervisors_verdict(section, field, value, features, refused):
    """verify refuses exactly the crafted records a restore refuses, naming the
    field's byte (offsets from this file's own reading of the format)."""
    if section == "IMSIC":          # version 7's record: a version 7 stream
        array = field in ("imsic_eip", "imsic_eie")
        data = _aia_stream(features, {field: [value] + [0] * 31 if array else value})
        if not refused:
            assert snapshot.verify(data).valid
            return
        err = first_problem(data)
        payload = layout_offsets(data)[1][3]
        assert (err.section, err.offset) == ("VCPU 0", payload + IMSIC_OFF[field]), str(err)
        assert err.message.startswith((f"{field} is ", f"{field}[0] is ")), str(err)
        return
    if section == "DBTR":           # version 8's record: a version 8 stream
        array = field not in ("dbtr_shmem", "dbtr_shmem_on")
        count = 7 if field == "dbtr_reserved" else 8
        data = _seeds().stream(name="alpha", runs=(),
                               vcpu_over={field: [value] + [0] * (count - 1) if array else value})
        if not refused:
            assert snapshot.verify(data).valid
            return
        err = first_problem(data)
        payload = layout_offsets(data)[1][3]
        assert (err.section, err.offset) == ("VCPU 0", payload + DBTR_OFF[field]), str(err)
        assert err.message.startswith((f"{field} is ", f"{field}[0] is ")), str(err)
        return
    b = Builder(nr_vcpus=1)
    b.vcpus = [Builder.vcpu(1)]           # no CFI, STA or PMU state of its own
    b.config["features"] = features
    (b.config if section == "CONFIG" else b.vcpus[0])[field] = value
    data = b.build()
    if not refused:
        assert snapshot.verify(data).valid
        return
    err = first_problem(data)
    label = "CONFIG" if section == "CONFIG" else "VCPU 0"
    payload = layout_offsets(data)[0 if section == "CONFIG" else 1][3]
    off = (CONFIG_OFF if section == "CONFIG" else VCPU_OFF)[field]
    assert (err.section, err.offset) == (label, payload + off), str(err)
    assert err.message.startswith(f"{field} is "), str(err)


def _device_cases():
    """The crafted device states of tests/unit/snap_legal_cases.h, which the C
    test restores through the hypervisor's loader: (model, field, index,
    value, refused) each."""
    defines = _c_defines(ROOT / "include/arch/riscv/encoding.h", HEADER_H, CASES_H)
    body = re.sub(r"/\*.*?\*/", " ", CASES_H.read_text(), flags=re.S).replace("\\\n", " ")
    table = body[body.index("#define SNAP_DEVICE_CASES(X)"):]
    out = []
    for row in re.findall(r"X\((\w+),\s*(\w+),\s*(\d+),\s*(\w+),\s*([01])\)", table):
        model, field, index, value, refused = row
        out.append(pytest.param(model, field, int(index), _c_eval(value, defines),
                                refused == "1", id=f"{model}-{field}[{index}]-{value}"))
    assert len(out) == table.count("X(") > 0, "a row this reader does not understand"
    return out


# Offsets of the device states' fields (the document's tables).
DEVICE_OFF = {"uart16550": UART_OFF, "plic": PLIC_OFF, "vmgenid": VMGENID_OFF,
              "aplic": APLIC_OFF}


def _aplic_case(field, index, value, refused):
    """An aplic case: an AIA VM's version 7 stream, its APLIC all zero but
    element @index of @field."""
    state = {k: ([0] * len(v) if isinstance(v, list) else 0)
             for k, v in snapfmt.APLIC.decode(bytes(snapfmt.APLIC.size)).items()}
    if isinstance(state[field], list):
        state[field][index] = value
    else:
        state[field] = value
    data = _aia_stream(snapfmt.FEAT_ALL, dev_over={"aplic": state})
    if not refused:
        assert snapshot.verify(data).valid
        return
    err = first_problem(data)
    payload = layout_offsets(data)[2 + 3][3]
    at = payload + 24 + APLIC_OFF[field] + index * 4
    assert (err.section, err.offset) == ("DEVICE 3 (aplic)", at), str(err)
    name = f"{field}[{index}]" if field in ("sourcecfg", "target") else field
    assert err.message.startswith(f"{name} "), str(err)


@pytest.mark.parametrize("model, field, index, value, refused", _device_cases())
def test_verify_gives_the_hypervisors_verdict_on_device_states(model, field, index, value,
                                                               refused):
    """verify refuses exactly the crafted device states a restore refuses
    (tests/unit/test_snap_legal.c), naming the field's element at its byte."""
    if model == "aplic":
        _aplic_case(field, index, value, refused)
        return
    b = Builder(nr_vcpus=1)
    b.vcpus = [Builder.vcpu(1)]
    b.uart = {k: (bytes(len(v)) if isinstance(v, bytes) else 0) for k, v in b.uart.items()}
    b.plic = {k: ([0] * len(v) if isinstance(v, list) else 0) for k, v in b.plic.items()}
    b.genid = {"id": bytes(16), "level": 0, "pad": bytes(7)}
    state = {"uart16550": b.uart, "plic": b.plic, "vmgenid": b.genid}[model]
    if isinstance(state[field], bytes):
        raw = bytearray(state[field])
        raw[index] = value
        state[field] = bytes(raw)
    elif isinstance(state[field], list):
        state[field][index] = value
    else:
        assert index == 0
        state[field] = value
    data = b.build()
    if not refused:
        assert snapshot.verify(data).valid
        return
    err = first_problem(data)
    dev = [name for name, _ in DEVICES].index(model)
    payload = layout_offsets(data)[2 + dev][3]
    width = 1 if model != "plic" and field not in ("rx_head", "rx_tail") else 4
    at = payload + 24 + DEVICE_OFF[model][field] + index * width
    assert (err.section, err.offset) == (f"DEVICE {dev} ({model})", at), str(err)
    name = f"{field}[{index}]" if field in ("pad", "priority", "enable", "threshold") else field
    assert err.message.startswith(f"{name} "), str(err)


def test_the_cases_cover_the_issue_22_records():
    """FS Off, vsstatus bits 20, 21 and 34, senvcfg.LPE without Zicfilp: each
    is among the refused cases."""
    refused = {(p.values[1], p.values[2], p.values[3]) for p in _legal_cases() if p.values[4]}
    assert ("sstatus", 1 << 8, 0x1F) in refused
    for bit in (20, 21, 34):
        assert ("vsstatus", (2 << 32) | 1 << bit, 0x1F) in refused
    assert ("senvcfg", 1 << 2, 0x1E) in refused


def test_rules_come_from_the_c_header(tmp_path, monkeypatch):
    """The tool restates no rule: a table that allowed vsstatus bit 21 would
    make it accept the record (and the repository's table refuses it)."""
    for rel in LEGAL_HEADERS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    legal_h = tmp_path / RECORDS_H.relative_to(ROOT)
    text = legal_h.read_text()
    assert "SR_MXR | SR_UXL | SR_SD, SR_SPELP" in text
    legal_h.write_text(text.replace("SR_MXR | SR_UXL | SR_SD, SR_SPELP",
                                    "SR_MXR | SR_UXL | SR_SD | BIT(21), SR_SPELP"))
    assert load_legal_rules(str(ROOT)) == LEGAL
    b = Builder()
    b.vcpus[1]["vsstatus"] |= 1 << 21
    data = b.build()
    assert "vsstatus" in first_problem(data).message
    monkeypatch.setattr(snapshot_legal, "LEGAL", load_legal_rules(str(tmp_path)))
    assert snapshot.verify(data).valid


def test_device_tables_come_from_the_c_header(tmp_path, monkeypatch):
    """The tool restates no device layout or rule: a uart16550 table whose
    ier allowed bit 4 makes it accept such a state, and one that names a
    field otherwise gives the layout that name."""
    for rel in LEGAL_HEADERS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    devices_h = tmp_path / DEVICES_H.relative_to(ROOT)
    text = devices_h.read_text()
    assert "#define SNAP_UART_IER_BITS	0x0f" in text
    text = text.replace("#define SNAP_UART_IER_BITS	0x0f", "#define SNAP_UART_IER_BITS	0x1f")
    devices_h.write_text(text.replace("X(rx_tail,", "X(rx_read,"))
    b = Builder()
    b.uart["ier"] = 0x11
    data = b.build()
    assert first_problem(data).message.startswith("ier is 0x11")
    monkeypatch.setattr(snapshot_legal, "LEGAL", load_legal_rules(str(tmp_path)))
    assert snapshot.verify(data).valid
    theirs = {name: fields for _, _, name, fields in snapfmt.load_records(tmp_path)["devices"]}
    assert [f[0] for f in theirs["uart16550"]][10:12] == ["rx_head", "rx_read"]
    assert [f[0] for f in UART.fields][10:12] == ["rx_head", "rx_tail"]


def test_table_rows_name_fields_of_the_structs():
    """Every row is a field of its section's struct (the C build checks the
    same with offsetof), and the C constants evaluate as the C compiler does."""
    for section, layout in (("CONFIG", snapfmt.CONFIG), ("VCPU", snapfmt.VCPU)):
        for rule in LEGAL[section]["bits"] + LEGAL[section]["values"]:
            layout.offset(rule[0])
    vsstatus = next(r for r in LEGAL["VCPU"]["bits"] if r[0] == "vsstatus")
    assert vsstatus[1] == (1 << 1) | (1 << 5) | (1 << 8) | (3 << 13) | (1 << 18) | (1 << 19) | \
        (3 << 32) | (1 << 63)
    assert vsstatus[2] == 1 << 23


# --- VIRTIO sections (snapshot format 4) ---------------------------------------------


def _seeds():
    """tests/fuzz/make_seeds.py: the fuzz corpus' writer of format 4 streams with
    a disk and a NIC (its states are the ones tests/unit/test_snap_vio.c gives
    the hypervisor's loader)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_seeds",
                                                  ROOT / "tests" / "fuzz" / "make_seeds.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _vio_stream(ms, *devs):
    return ms.stream(name="alpha", runs=((0x400000, 1),), ring=True, vio=devs)


def test_virtio_sections_read_and_shown():
    ms = _seeds()
    data = _vio_stream(ms, ("virtio_blk", ms.vio_blk()), ("virtio_net", ms.vio_net()))
    s = snapshot.verify(data)
    assert [sec.label for sec in s.sections if sec.type == snapfmt.SEC_VIRTIO] == [
        "VIRTIO 0 (virtio_blk)", "VIRTIO 1 (virtio_net)"]
    blk, net = s.virtio
    assert blk["fields"]["capacity"] == ms.VIO_SECTORS and blk["fields"]["pci_dev"] == 2
    assert bytes(net["fields"]["mac"]) == bytes.fromhex("525400aabbcc")
    j = json.loads(json.dumps(snapshot_text.inspect_json(s)))
    assert j["virtio"][0]["queues"][0] == {"ready": True, "size": 16, "next_avail": 5,
                                           "next_used": 5, "fault": "none"}
    assert j["virtio"][1]["state"]["switch_name"] == "lan"
    # a version 3 stream has none; a version 4 stream without devices is valid too
    assert snapshot.verify(ms.stream(name="alpha", version=3, runs=())).virtio == []


@pytest.mark.parametrize("model,over,field,words", [
    ("virtio_blk", {"q_desc": [0x80000000 + (8 << 20), 0]}, "q_desc", "not inside the VM's RAM"),
    ("virtio_blk", {"q_used": [0x80010002, 0]}, "q_used", "4-byte aligned"),
    ("virtio_blk", {"q_size": [12, 0]}, "q_size", "power of two"),
    ("virtio_blk", {"q_size": [512, 0]}, "q_size", "power of two up to 256"),
    ("virtio_blk", {"q_next_used": [4, 0]}, "q_next_used", "chains in flight"),
    ("virtio_blk", {"q_next_avail": [0x10005, 0]}, "q_next_avail", "bits 0x10000"),
    ("virtio_blk", {"driver_features": (1 << 32) | (1 << 30)}, "driver_features", "subset"),
    ("virtio_blk", {"driver_features": 1 << 9}, "driver_features", "VERSION_1"),
    ("virtio_blk", {"device_features": 0x100000264}, "device_features", "offers"),
    ("virtio_blk", {"status": 0x07}, "status", "DRIVER_OK without FEATURES_OK"),
    ("virtio_blk", {"status": 0x1F}, "status", "bits 0x10"),
    ("virtio_blk", {"status": 0x03, "q_next_avail": [0, 0], "q_next_used": [0, 0]},
     "interrupt_status", "before DRIVER_OK"),
    ("virtio_blk", {"q_fault": [8, 0]}, "q_fault", "NEEDS_RESET"),
    ("virtio_blk", {"q_fault": [15, 0]}, "q_fault", "legal"),
    ("virtio_blk", {"q_size": [16, 1]}, "q_desc", "does not have"),
    ("virtio_blk", {"seg_max": 255}, "seg_max", "1..254"),
    ("virtio_blk", {"serial": b"alpha-vdz"}, "serial", "GET_ID"),
    ("virtio_blk", {"pci_dev": 0}, "pci_dev", "legal"),
    ("virtio_net", {"mac": [1, 2, 3, 4, 5, 6]}, "mac", "unicast"),
    ("virtio_net", {"switch_name": b"LAN"}, "switch_name", "switch_name"),
    ("virtio_net", {"link": 3}, "link", "bits 0x2"),
])
def test_virtio_illegal_field_refused_at_its_byte(model, over, field, words):
    """Each rule of docs/snapshot-format.md, "VIRTIO", refused at the field's
    byte (the hypervisor's loader refuses the same at the same byte:
    tests/unit/test_snap_vio.c)."""
    ms = _seeds()
    state = ms.vio_blk(**over) if model == "virtio_blk" else ms.vio_net(**over)
    data = _vio_stream(ms, (model, state))
    err = first_problem(data)
    off = ms.offset_of(data, snapfmt.SEC_VIRTIO, 0)
    layout = snapfmt.VIO_MODELS[model][1]
    index = 1 if over.get("q_size") == [16, 1] else 0
    want = off + snapfmt.SECTION.size + snapfmt.DEVICE.size + layout.offset(field, index)
    assert err.section == f"VIRTIO 0 ({model})" and err.offset == want, (str(err), want)
    assert words in err.message, err.message


def test_virtio_order_and_header_refusals():
    ms = _seeds()
    blk, net = ("virtio_blk", ms.vio_blk()), ("virtio_net", ms.vio_net())
    err = first_problem(_vio_stream(ms, net, blk))
    assert err.section == "VIRTIO 1 (virtio_blk)" and "a disk after a NIC" in err.message
    err = first_problem(_vio_stream(ms, blk, blk, blk))
    assert "more devices of this kind" in err.message, err
    err = first_problem(ms.stream(name="alpha", version=3, runs=(), vio=(net,)))
    assert "unknown section type 6" in err.message, err
    data = bytearray(_vio_stream(ms, blk))
    off = ms.offset_of(bytes(data), snapfmt.SEC_VIRTIO, 0)
    data[off + 4] = 1                                   # instance: slot 1 first
    err = first_problem(bytes(data))
    assert err.offset == off + 4 and "instance 1, expected 0" in err.message, err


# --- DISK sections (snapshot format 5) ----------------------------------------------
# Written here with this file's own reading of docs/snapshot-format.md, "DISK"
# (type 7, instance = the disk's slot, a 16-byte run header {u64 sector, u32
# sectors, u32 reserved} then the sectors), after a format 4 body from
# make_seeds: two disks (slot 0: 16384 sectors, slot 1: 1000, whose last
# block has 104 sectors) and a NIC (slot 2).

DISK_TYPE, END_TYPE = 7, 5
BLOCK = 128                                  # sectors a block
DISK1_SECTORS = 1000                         # 7 whole blocks and one of 104 sectors


def disk_data(seed, sectors=BLOCK):
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(64)) * (sectors * 512 // 64)


def disk_run(slot, sector, data, sectors=None, reserved=0, over=None):
    """[type, instance, payload, over] of a DISK section."""
    payload = struct.pack(DISK_RUN_FMT, sector, len(data) // 512 if sectors is None else sectors,
                          reserved) + data
    return [DISK_TYPE, slot, payload, over]


def disk_stream(runs, flag=True, version=5, vio=None, before_memory=(), end_counts=None):
    """A format @version stream of the VM above (@vio: its VIRTIO sections
    instead), header flag DISKS if @flag, then @runs (disk_run()) after its
    memory, and @before_memory (sections put before the MEMORY runs)."""
    ms = _seeds()
    if vio is None:
        vio = (("virtio_blk", ms.vio_blk()),
               ("virtio_blk", ms.vio_blk(capacity=DISK1_SECTORS, pci_dev=3, serial=b"alpha-vdb")),
               ("virtio_net", ms.vio_net()))
    base = ms.stream(name="alpha", runs=((0x400000, 1),), ring=True, vio=vio, version=version)
    data = bytearray(base)
    data[16] |= 2 if flag else 0                      # header flags: DISKS
    end = layout_offsets(base)[-1]
    assert end[1] == END_TYPE
    nsec, pages = struct.unpack_from("<QQ", base, end[3])
    body = bytes(data[:end[0]])
    if before_memory:
        first_mem = next(o for o, t, _, _, _ in layout_offsets(base) if t == MEMORY)
        body = body[:first_mem] + b"".join(write_section(*s) for s in before_memory) + \
            body[first_mem:]
    body += b"".join(write_section(*r) for r in runs)
    counts = end_counts or (nsec + len(runs) + len(before_memory), pages)
    return body + write_section(END_TYPE, 0, struct.pack("<QQ", *counts))


def disk_offsets(data):
    """(section offset, payload offset) of each DISK section, in order."""
    return [(o, p) for o, t, _, p, _ in layout_offsets(data) if t == DISK_TYPE]


VALID_RUNS = [disk_run(1, 896, disk_data(1, 104)),         # disk 1's last, partial block
              disk_run(0, 128, disk_data(2)),              # any order: a live snapshot's
              disk_run(0, 0, disk_data(3)),
              disk_run(1, 0, disk_data(4))]


def test_disk_sections_read_and_shown(tmp_path, capsys):
    data = disk_stream(VALID_RUNS)
    s = snapshot.verify(data)
    assert s.version == 5 and s.disks_included and not s.live
    assert [sec.label for sec in s.sections if sec.type == DISK_TYPE] == [
        "DISK 1 run 0", "DISK 0 run 0", "DISK 0 run 1", "DISK 1 run 1"]
    assert [(r["slot"], r["sector"], r["sectors"]) for r in s.disk_runs] == [
        (1, 896, 104), (0, 128, 128), (0, 0, 128), (1, 0, 128)]
    assert [d["capacity"] for d in s.disks] == [16384, DISK1_SECTORS]
    # the data offsets point at the sectors (what diff and a tool read back)
    (_, p0), _, _, _ = disk_offsets(data)
    assert s.disk_runs[0]["data_offset"] == p0 + 16
    assert data[p0 + 16:p0 + 16 + 104 * 512] == disk_data(1, 104)
    j = json.loads(json.dumps(inspect_json(s)))
    assert j["header"]["disks"] is True and j["header"]["flags"] == 2
    assert j["disks"]["included"] and j["disks"]["run_count"] == 4
    assert j["disks"]["bytes"] == (3 * 128 + 104) * 512
    assert j["disks"]["disks"][0] == {"slot": 0, "capacity": 16384, "read_only": False,
                                      "content_included": True, "runs": 2, "sectors": 256,
                                      "bytes": 256 * 512, "blocks": 128,
                                      "zero_blocks_elided": 126, "zero_runs_stored": 0,
                                      "identity": None}
    assert j["disks"]["disks"][1]["blocks"] == 8 and j["disks"]["disks"][1]["runs"] == 2
    text = inspect_text(s)
    assert "flags: disks" in text
    assert ("disks: content in the snapshot (flag DISKS): 2 disk(s), 4 run(s), 249856 bytes"
            in text)
    assert "  disk 0 (slot 0): 16384 sectors (8M): 2 run(s), 131072 bytes stored, " \
           "126 of 128 blocks zero (elided)" in text
    assert "    sectors 896..999  (104 sectors)" in text
    assert "(its content is in the snapshot: DISK sections)" in text
    path = tmp_path / "d.snap"
    path.write_bytes(gzip.compress(data))
    assert snap_cli.main(["verify", str(path)]) == 0
    assert "2 disk(s) with their content (4 run(s), 244K)" in capsys.readouterr().out
    assert snap_cli.main(["--json", "verify", str(path)]) == 0
    v = json.loads(capsys.readouterr().out)
    assert (v["disks"], v["disk_runs"], v["disk_bytes"]) == (True, 4, 249856)


def test_disk_flag_without_runs_and_streams_without_the_flag():
    """Disks of zeroes: the flag and no DISK section. Version 5 without the
    flag (snapshot --no-disks) and version 4 say the content is elsewhere."""
    s = snapshot.verify(disk_stream([]))
    assert s.disks_included and s.disk_runs == []
    assert "disk 0 (slot 0): 16384 sectors (8M): 0 run(s), 0 bytes stored, 128 of 128 " \
           "blocks zero (elided)" in inspect_text(s)
    s = snapshot.verify(disk_stream([], flag=False))
    assert not s.disks_included
    text = inspect_text(s)
    assert "disks: content not in the snapshot (taken without them: --no-disks)" in text
    assert "(its content is not in the snapshot)" in text and "flags: none" in text
    s = snapshot.verify(disk_stream([], flag=False, version=4))
    assert "disks: content not in the snapshot (version 4 has no disk content)" in inspect_text(s)
    assert inspect_json(s)["disks"]["included"] is False


def field_at(payload, name):
    return payload + {"sector": 0, "sectors": 8, "reserved": 12}[name]


@pytest.mark.parametrize("runs, nth, field, words", [
    # each rule of docs/snapshot-format.md, "DISK", at the field's byte
    ([disk_run(0, 5, disk_data(1))], 0, "sector", "sector 5 is not the start of a block"),
    ([disk_run(0, 130, disk_data(1))], 0, "sector", "not the start of a block"),
    ([disk_run(0, 16384, disk_data(1))], 0, "sector",
     "sector 16384 is past the disk's end (its capacity is 16384 sectors)"),
    ([disk_run(1, 1024, disk_data(1))], 0, "sector", "past the disk's end"),
    ([disk_run(0, 0, disk_data(1, 64))], 0, "sectors",
     "sectors 64: the block at sector 0 has 128 (a whole block, or the disk's last)"),
    ([disk_run(1, 896, disk_data(1))], 0, "sectors", "the block at sector 896 has 104"),
    ([disk_run(0, 0, disk_data(1), sectors=127)], 0, "sectors",
     "sectors 127 does not match the section length 65552"),
    ([disk_run(0, 0, disk_data(1), reserved=1)], 0, "reserved", "reserved is 0x1, must be 0"),
    ([disk_run(0, 128, disk_data(1)), disk_run(1, 128, disk_data(2)),
      disk_run(0, 128, disk_data(3))], 2, "sector",
     "sector 128: a block that came before (each block comes at most once)"),
])
def test_disk_rule_refused_at_its_byte(runs, nth, field, words):
    data = disk_stream(runs)
    err = first_problem(data)
    sec, payload = disk_offsets(data)[nth]
    slot = runs[nth][1]
    assert err.section == f"DISK {slot} run {sum(1 for r in runs[:nth] if r[1] == slot)}"
    assert err.offset == field_at(payload, field) and words in err.message, (str(err), words)
    assert err.type_name == "DISK" and err.instance == slot


def test_disk_instance_must_be_a_disks_slot():
    for slot in (2, 5):                                  # the NIC's, and none
        data = disk_stream([disk_run(slot, 0, disk_data(1))])
        err = first_problem(data)
        sec, _ = disk_offsets(data)[0]
        assert err.offset == sec + 4 and f"instance {slot} is not a disk's slot" in err.message
        assert "put disks in slot(s) 0, 1" in err.message, err
    ms = _seeds()
    data = disk_stream([disk_run(0, 0, disk_data(1))], vio=(("virtio_net", ms.vio_net()),))
    assert "disks in slot(s) none" in first_problem(data).message


def test_a_read_only_disk_has_no_disk_section():
    """A read-only disk's content is its image's (a restore refuses a DISK
    section for one): refused at the instance; inspect says so."""
    ms = _seeds()
    vio = (("virtio_blk", ms.vio_blk()),
           ("virtio_blk", ms.vio_blk(read_only=1, pci_dev=3, serial=b"alpha-vdb",
                                     device_features=snapfmt.VIO_OFFER["virtio_blk"] |
                                     snapfmt.VIO_BLK_F_RO)))
    data = disk_stream([disk_run(0, 0, disk_data(1)), disk_run(1, 0, disk_data(2))], vio=vio)
    err = first_problem(data)
    sec, _ = disk_offsets(data)[1]
    assert err.section == "DISK 1 run 0" and err.offset == sec + 4
    assert "instance 1 is a read-only disk: a DISK section for a read-only disk (its content " \
           "is its image's" in err.message, err
    s = snapshot.verify(disk_stream([disk_run(0, 0, disk_data(1))], vio=vio))
    text = inspect_text(s)
    assert "disk 1 (slot 1): 16384 sectors (8M), read-only: its content is its image's (not " \
           "in the snapshot)" in text
    assert inspect_json(s)["disks"]["disks"][1]["content_included"] is False


def test_disk_sections_need_the_flag_and_version_5():
    data = disk_stream([disk_run(0, 0, disk_data(1))], flag=False)
    err = first_problem(data)
    sec, _ = disk_offsets(data)[0]
    assert err.offset == sec and "a DISK section in a stream without the disks (header flag " \
                                  "DISKS is not set)" in err.message
    err = first_problem(disk_stream([disk_run(0, 0, disk_data(1))], flag=False, version=4))
    assert "unknown section type 7 (version 4 has 1 CONFIG, 2 VCPU, 3 DEVICE, 4 MEMORY, " \
           "5 END, 6 VIRTIO)" in err.message
    err = first_problem(disk_stream([], flag=True, version=4))
    assert err.section == "header" and err.offset == 16
    assert "unknown flag bits 0x2 in flags 0x2 (known in version 4: 0x1 live)" in err.message
    err = first_problem(patch(disk_stream([]), 16, "<Q", 4))
    assert "unknown flag bits 0x4 in flags 0x4 (known in version 5: 0x1 live, 0x2 disks)" \
        in err.message


@pytest.mark.parametrize("length", [16, 16 + 100, 16 + 129 * 512, 8])
def test_disk_length_bounded_before_the_payload(length):
    run = disk_run(0, 0, disk_data(1))
    run[3] = {"length": length}
    data = disk_stream([run])
    err = first_problem(data)
    sec, _ = disk_offsets(data)[0]
    assert err.offset == sec + 8
    assert f"length {length}, must be 16 + sectors * 512 with 1..128 sectors" in err.message


def test_disk_order_after_memory_and_virtio():
    # a DISK section before the memory: the MEMORY after it is out of order
    data = disk_stream([], before_memory=[disk_run(0, 0, disk_data(1))])
    err = first_problem(data)
    assert err.section == "MEMORY run 0" and "MEMORY section after a DISK section; expected " \
                                             "DISK or END" in err.message, err
    # a VIRTIO section after a DISK one (no memory at all)
    ms = _seeds()
    base = disk_stream([], vio=(("virtio_blk", ms.vio_blk()),
                                ("virtio_blk", ms.vio_blk(pci_dev=3, serial=b"alpha-vdb"))))
    secs = layout_offsets(base)
    vio1 = next(s for s in secs if s[1] == snapfmt.SEC_VIRTIO and s[2] == 1)
    body = bytearray()
    for off, t, inst, payload, length in secs[:-1]:
        if t == MEMORY or (off, t) == vio1[:2]:
            continue
        body += base[off:payload + length]
    body += write_section(DISK_TYPE, 0, struct.pack(DISK_RUN_FMT, 0, 128, 0) + disk_data(1))
    body += base[vio1[0]:vio1[3] + vio1[4]]
    n = len(layout_offsets(base[:32] + bytes(body)))
    data = base[:32] + bytes(body) + write_section(END_TYPE, 0, struct.pack("<QQ", n, 0))
    err = first_problem(data)
    assert err.section == "VIRTIO 1" and "VIRTIO section after a DISK section; expected DISK " \
                                         "or END" in err.message, err


def test_disk_sections_counted_by_end_and_checked_by_crc():
    runs = [disk_run(0, 0, disk_data(1)), disk_run(1, 0, disk_data(2))]
    good = disk_stream(runs)
    nsec = struct.unpack_from("<Q", good, layout_offsets(good)[-1][3])[0]
    err = first_problem(disk_stream(runs, end_counts=(nsec - 2, 6)))
    assert err.section == "END" and f"sections is {nsec - 2}, but {nsec} sections came before " \
                                    "END" in err.message
    bad = bytearray(good)
    sec, payload = disk_offsets(good)[1]
    bad[payload + 16 + 1000] ^= 0x40
    err = first_problem(bytes(bad))
    assert err.section == "DISK 1 run 0" and err.offset == sec + 16 and "CRC32C mismatch" \
        in err.message
    err = first_problem(good[:payload + 16 + 4096])
    assert err.section == "DISK 1 run 0" and "truncated" in err.message


def test_disk_lenient_parse_goes_on_past_a_bad_run():
    data = disk_stream([disk_run(0, 5, disk_data(1)), disk_run(0, 0, disk_data(2), reserved=3),
                        disk_run(1, 0, disk_data(3))])
    s = parse(data, strict=False)
    assert s.complete and [p.message.split(" ")[0:2] for p in s.problems] == [
        ["sector", "5"], ["reserved", "is"]]
    assert len(s.disk_runs) == 3
    assert "INVALID: 2 problem(s)" in inspect_text(s)


def test_diff_compares_the_disks_block_by_block():
    a = snapshot.verify(disk_stream(VALID_RUNS))
    same = snapshot.verify(disk_stream(VALID_RUNS + [disk_run(0, 256, bytes(BLOCK * 512))]))
    d = diff(a, same)              # a stored block of zeroes equals one left out
    assert d["identical"] and d["disks"] == {"compared": True, "sectors": 0, "ranges": [],
                                             "identity": []}
    assert "identical guest state (the disks' content too)" in diff_text(d)
    other = list(VALID_RUNS)
    other[2] = disk_run(0, 0, disk_data(9))
    d = diff(a, snapshot.verify(disk_stream(other + [disk_run(1, 128, disk_data(5))])))
    assert not d["identical"]
    assert d["disks"]["ranges"] == [{"slot": 0, "sector": 0, "sectors": 128},
                                    {"slot": 1, "sector": 128, "sectors": 128}]
    text = diff_text(d)
    assert "disks: 256 sector(s) differ:" in text and "  disk 0 sectors 0..127" in text
    assert "256 disk sector(s)" in text
    d = diff(a, snapshot.verify(disk_stream([], flag=False)))
    assert d["header"] == [{"field": "disks", "a": True, "b": False}] and not d["disks"]["compared"]


def test_every_section_type_is_known_to_each_tool():
    """The section types of include/abi/snapshot_format.h are the reader's,
    the relay's (it names the sections of a stream it carries) and the
    document's."""
    from carapace import relay
    enum = dict((int(v), n) for n, v in re.findall(r"SNAP_SEC_(\w+) = (\d+)",
                                                   HEADER_H.read_text()))
    assert enum == snapfmt.SECTION_TYPES
    assert {v: k for k, v in relay.SEC.items() if v < 16} == enum
    doc = (ROOT / "docs" / "snapshot-format.md").read_text()
    row = re.search(r"\| 0 \| 4 \| `type` \| u32 \| (.*) \|", doc).group(1)
    for value, name in enum.items():
        assert f"{value} {name}" in row, (value, name, row)


# --- carapace-ctl: snapshot --no-disks, restore of a file holding its disks' content --


def disk_snapshot_server(stream_data):
    """A snapshot handler that replies as the hypervisor does: "disks" as
    asked (default true), "disk_runs" the DISK sections it sent. The nth
    snapshot request writes on the nth stream connection (wait_stream())."""
    served = [0]

    def handler(request, hyp):
        if request["cmd"] == "hello":
            return ok(request, **HELLO)
        served[0] += 1
        connections = served[0]

        def act(hyp):
            wait_stream(hyp, connections)
            disks = request.get("disks", True)
            hyp.stream.sendall(stream_data)
            hyp.reply(ok(request, vm=request["vm"], bytes=len(stream_data), pages=6,
                         pause_us=900, live=False, disks=disks, disk_runs=4 if disks else 0))
        return act
    return handler


@pytest.mark.parametrize("argv, asked, words", [
    ([], None, "6 memory pages, the disks' content in 4 run(s), paused 0.900 ms"),
    (["--no-disks"], False, "6 memory pages, without the disks' content (--no-disks), paused"),
])
def test_ctl_snapshot_disks_or_not(fake, socks, tmp_path, capsys, argv, asked, words):
    """--no-disks asks for a snapshot without the disks' content ("disks":
    false); without it the request leaves "disks" to the hypervisor's default
    (true). The output says what the file holds."""
    data = disk_stream(VALID_RUNS) if asked is None else disk_stream([], flag=False)
    server = fake(disk_snapshot_server(data))
    out = tmp_path / "d.snap"
    assert ctl_main(socks, "snapshot", "alpha", str(out), *argv) == 0
    assert server.requests[1].get("disks", None) is asked
    assert ("disks" in server.requests[1]) == (asked is not None)
    assert words in capsys.readouterr().out
    assert snapshot.verify(out).disks_included == (asked is None)
    assert ctl_main(socks, "--json", "snapshot", "alpha", str(tmp_path / "e.snap"), *argv) == 0
    reply = json.loads(capsys.readouterr().out)
    assert (reply["disks"], reply["disk_runs"]) == ((True, 4) if asked is None else (False, 0))


def test_ctl_restore_of_a_file_with_the_disks_content_needs_every_disk(fake, socks, tmp_path,
                                                                       capsys):
    """Such a file writes each disk's content into the host disk its restore
    names; by default that would be the disk it was saved from (the original
    image), so one --disk per disk, checked before connecting."""
    path = tmp_path / "d.snap"
    path.write_bytes(gzip.compress(disk_stream(VALID_RUNS)))
    server = fake(restore_server())
    for disks in ([], ["--disk", "5"], ["--disk", "5", "--disk", "6", "--disk", "7"]):
        assert ctl_main(socks, "restore", str(path), *disks) == 3
        err = capsys.readouterr().err
        assert (f"{path} holds the content of its 2 disk(s) (disk 0: 16384 sectors (8388608 "
                f"bytes), disk 1: 1000 sectors (512000 bytes)), and {len(disks) // 2} --disk "
                "given: give --disk N for each") in err, err
        assert "--spare-disk PATH:size=SIZE" in err
    assert server.requests == [] and server.stream_connections == 0
    assert ctl_main(socks, "restore", str(path), "--disk", "5", "--disk", "6") == 0
    request = server.requests[1]
    assert (request["disk0"], request["disk1"]) == (5, 6)


def test_ctl_restore_of_a_file_without_the_disks_content_as_before(fake, socks, tmp_path,
                                                                     capsys):
    """Without the content (--no-disks) a disk goes where it was saved by
    default, as in format 4."""
    path = tmp_path / "d.snap"
    path.write_bytes(disk_stream([], flag=False))
    server = fake(restore_server())
    assert ctl_main(socks, "restore", str(path)) == 0
    assert "disk0" not in server.requests[1] and "disk1" not in server.requests[1]


# --- DISK_ID (format version 6): a disk's identity without its content ---------------

def _id_stream(ms, **kw):
    """A version 6 stream without DISKS of a VM with a disk and a NIC (and a
    read-only second disk with @ro): make_seeds gives each disk its DISK_ID."""
    ro = kw.pop("ro", False)
    devs = [("virtio_blk", ms.vio_blk())]
    if ro:
        devs.append(("virtio_blk", ms.vio_blk(read_only=1, pci_dev=ms.VIO_DISK_RO_PCI,
                                              device_features=snapfmt.VIO_OFFER["virtio_blk"]
                                              | snapfmt.VIO_BLK_F_RO)))
    devs.append(("virtio_net", ms.vio_net()))
    return ms.stream(name="alpha", runs=((0x400000, 1),), ring=True, vio=tuple(devs), **kw)


def test_disk_id_blocks_are_the_first_the_last_and_evenly_spaced():
    assert snapfmt.disk_id_blocks(16384) == [i * 127 // 15 for i in range(16)]
    assert snapfmt.disk_id_blocks(16384)[-1] == 127
    assert snapfmt.disk_id_blocks(1) == [0]
    assert snapfmt.disk_id_blocks(129) == [0, 1]            # a last block of one sector
    assert snapfmt.disk_id_blocks(16 * 128) == list(range(16))
    assert snapfmt.disk_id_blocks(17 * 128) == [i * 16 // 15 for i in range(16)]


def test_disk_id_sections_read_and_shown():
    ms = _seeds()
    s = snapshot.verify(_id_stream(ms, ro=True))
    assert s.version == VERSION and not s.disks_included
    assert [sec.label for sec in s.sections if sec.type == snapfmt.SEC_DISK_ID] == [
        "DISK_ID 0", "DISK_ID 1"]
    # right after the VIRTIO sections, before memory
    types = [sec.type for sec in s.sections]
    assert types.index(snapfmt.SEC_DISK_ID) == types.index(snapfmt.SEC_VIRTIO) + 3
    ident = s.disk_ids[0]
    assert ident["slot"] == 0 and ident["sectors"] == 16384 and len(ident["samples"]) == 16
    block = bytes([(42 * 7 + 1) & 0xFF]) * (128 * 512)           # the stub disk's block 42
    assert {"block": 42, "crc32c": crc32c(block)} in ident["samples"]
    j = json.loads(json.dumps(inspect_json(s)))
    assert j["disks"]["disks"][0]["identity"]["samples"][5] == {"block": 42,
                                                                "crc32c": crc32c(block)}
    assert j["disks"]["disks"][1]["identity"]["sectors"] == 16384
    text = inspect_text(s)
    assert "a restore checks each image against its identity (DISK_ID)" in text
    assert f"identity (DISK_ID): 16 sampled block(s) of 16384 sectors: 0:" in text
    # a version 5 stream has none and needs none
    s5 = snapshot.verify(_id_stream(ms, version=5))
    assert s5.disk_ids == [] and "no identity before version 6" in inspect_text(s5)


def _id_problem(data):
    s = parse(data, strict=False)
    assert s.problems, "no problem found"
    return s.problems[0]


def test_disk_id_refusals():
    ms = _seeds()
    good = ms.stub_disk_id(16384)
    # missing: memory came before the disk's identity
    err = _id_problem(_id_stream(ms, disk_ids=()))
    assert err.section == "MEMORY run 0" and "before disk 0's DISK_ID" in err.message
    err = _id_problem(_id_stream(ms, ro=True, disk_ids=((0, good),)))
    assert "before disk 1's DISK_ID" in err.message
    # not a disk's slot (the NIC's), or the disks out of order
    err = _id_problem(_id_stream(ms, disk_ids=((0, good), (1, good))))
    assert "instance 1 is not a disk's slot" in err.message
    err = _id_problem(_id_stream(ms, ro=True, disk_ids=((1, good), (0, good))))
    assert "instance 1, expected 0" in err.message
    # with the disks' content there is none
    err = _id_problem(_id_stream(ms, disks=(), disk_ids=((0, good),)))
    assert "a DISK_ID section in a stream with the disks' content" in err.message
    # a version 5 stream knows no such type
    with pytest.raises(SnapError, match="unknown section type 8"):
        snapshot.verify(_id_stream(ms, version=5, disk_ids=((0, good),)))
    # the fields, in the loader's order, naming their byte
    base = snapfmt.DISKID.offset("sample")
    for edit, words, field_at in (
            (lambda b: struct.pack_into("<I", b, 12, 1), "reserved is 0x1", 12),
            (lambda b: struct.pack_into("<Q", b, 0, 16383), "not the disk's capacity", 0),
            (lambda b: struct.pack_into("<I", b, 8, 15), "samples 15, must be 16", 8),
            (lambda b: struct.pack_into("<Q", b, base + 3 * 16, 7), "sample[3].block: block 7",
             base + 3 * 16),
            (lambda b: struct.pack_into("<I", b, base + 7 * 16 + 12, 1),
             "sample[7].reserved", base + 7 * 16 + 12)):
        payload = bytearray(good)
        edit(payload)
        data = _id_stream(ms, disk_ids=((0, bytes(payload)),))
        err = _id_problem(data)
        at = ms.offset_of(data, snapfmt.SEC_DISK_ID) + snapfmt.SECTION.size + field_at
        assert err.section == "DISK_ID 0" and err.offset == at and words in err.message, \
            (words, str(err))


def test_diff_compares_the_disks_identities():
    ms = _seeds()
    a = snapshot.verify(_id_stream(ms))
    d = diff(a, snapshot.verify(_id_stream(ms)))
    assert d["identical"] and d["disks"]["identity"] == []
    b = snapshot.verify(_id_stream(ms, disk_ids=((0, ms.stub_disk_id(16384, changed=42)),)))
    d = diff(a, b)
    block = bytes([(42 * 7 + 1) & 0xFF]) * (128 * 512)
    assert not d["identical"]
    assert d["disks"]["identity"] == [{"slot": 0, "block": 42, "a": crc32c(block),
                                       "b": crc32c(b"\xee" * (128 * 512))}]
    text = diff_text(d)
    assert "disk 0 identity (DISK_ID): block 42 crc32c" in text
    assert "1 sampled disk block(s)" in text


# --- version 7: AIA VMs --------------------------------------------------------------------


def test_version_6_reads_as_a_plic_vm():
    """A version 6 stream: 896-byte VCPU sections and three devices, its IMSIC
    records read as all zero (a PLIC VM's); AIA in its CONFIG is refused."""
    ms = _seeds()
    s = snapshot.verify(ms.stream(name="alpha", version=6, runs=()))
    assert s.version == 6 and [d["name"] for d in s.devices] == ["uart16550", "plic", "vmgenid"]
    v = s.vcpus[0]
    assert (v["imsic_rec_id"], v["imsic_rec_size"]) == (8, 536)
    assert v["imsic_nr_ids"] == 0 and v["imsic_eip"] == [0] * 32
    assert [sec.length for sec in s.sections if sec.type == snapfmt.SEC_VCPU] == [896]
    err = first_problem(ms.stream(name="alpha", version=6, runs=(), features=0x3F))
    assert err.section == "CONFIG" and "AIA (bit 5) is version 7's" in err.message


def test_aia_vm_read_and_shown():
    """An AIA VM's IMSIC file (pending identities masked by the threshold and
    eie) and APLIC are read and shown; its zero plic is accepted."""
    eip = [(1 << 9) | (1 << 40)] + [0] * 2 + [1 << 3] + [0] * 28
    aplic = {k: ([0] * len(v) if isinstance(v, list) else 0)
             for k, v in snapfmt.APLIC.decode(bytes(snapfmt.APLIC.size)).items()}
    aplic["sourcecfg"][10], aplic["target"][10] = 6, (0 << 18) | 33
    aplic.update(level=1 << 10, pending=1 << 10, enabled=1 << 10)
    data = _aia_stream(snapfmt.FEAT_ALL, {"imsic_eidelivery": 1, "imsic_eithreshold": 5,
                                          "imsic_eip": eip, "vsiselect": 0x72},
                       {"aplic": aplic})
    s = snapshot.verify(data)
    assert [d["name"] for d in s.devices][-1] == "aplic"
    text = inspect_text(s)
    assert ("IMSIC: 255 identities, delivery on, threshold 5, pending 9 40 195, enabled none; "
            "vsiselect 0x72") in text
    assert "source 10: mode 6, to hart 0 identity 33" in text
    j = json.loads(json.dumps(inspect_json(s)))
    assert j["vcpus"][0]["imsic"]["pending"] == [9, 40, 195]
    # the same IMSIC state in a PLIC VM: refused
    err = first_problem(_aia_stream(snapfmt.FEAT_ALL & ~snapfmt.FEAT_AIA,
                                    {"imsic_nr_ids": 255}))
    assert err.section == "VCPU 0" and err.message.startswith("imsic_nr_ids is 255")


def test_the_absent_interrupt_controller_is_zero():
    """An AIA VM's plic and a PLIC VM's aplic: all zero, named at their first
    byte that is not."""
    plic = {k: ([0] * len(v) if isinstance(v, list) else 0)
            for k, v in PLIC.decode(bytes(PLIC.size)).items()}
    plic["threshold"][2] = 3
    data = _aia_stream(snapfmt.FEAT_ALL, dev_over={"plic": plic})
    err = first_problem(data)
    payload = layout_offsets(data)[2 + 1][3]
    assert (err.section, err.offset) == ("DEVICE 1 (plic)", payload + 24 + PLIC_OFF["threshold"]
                                         + 8), str(err)
    assert "does not have this device" in err.message
    data = _aia_stream(snapfmt.FEAT_ALL & ~snapfmt.FEAT_AIA,
                       dev_over={"aplic": {"domaincfg": 0x100}})
    err = first_problem(data)
    assert err.section == "DEVICE 3 (aplic)" and "does not have this device" in err.message


def test_every_file_of_an_aia_vm_has_vcpu_0s_identity_count():
    ms = _seeds()
    plic0 = {k: ([0] * len(v) if isinstance(v, list) else 0)
             for k, v in PLIC.decode(bytes(PLIC.size)).items()}
    data = ms.stream(name="alpha", nr_vcpus=2, runs=(), features=snapfmt.FEAT_ALL,
                     vcpu_over={"imsic_nr_ids": 63}, dev_over={"plic": plic0})
    err = first_problem(data)          # VCPU 0's is 0 there: refused first
    assert err.section == "VCPU 0" and err.message.startswith("imsic_nr_ids is 0")


# --- version 8: FWFT MISALIGNED_EXC_DELEG's value ------------------------------------------


def test_misaligned_emulate_read_and_shown():
    """Version 8: a vCPU that set MISALIGNED_EXC_DELEG to 0 (and locked it)
    holds misaligned_emulate 1, shown as delegation off; 2 is refused, named."""
    ms = _seeds()
    s = snapshot.verify(ms.stream(name="alpha", runs=(), vcpu_over={"misaligned_emulate": 1}))
    assert s.version == 8
    v = s.vcpus[0]
    assert (v["misaligned_emulate"], v["misaligned_locked"]) == (1, 1)
    assert ("FWFT: misaligned exception delegation off (the hypervisor emulates misaligned "
            "accesses) (locked)") in inspect_text(s)
    j = json.loads(json.dumps(inspect_json(s)))
    assert j["vcpus"][0]["fwft"]["misaligned_deleg"] is False
    err = first_problem(ms.stream(name="alpha", runs=(), vcpu_over={"misaligned_emulate": 2}))
    assert err.section == "VCPU 0" and err.message.startswith("misaligned_emulate is 0x2"), \
        str(err)
    assert err.offset == layout_offsets(ms.stream(name="alpha", runs=()))[1][3] + \
        snapfmt.VCPU.offset("misaligned_emulate")


def test_version_7_misaligned_byte_is_reserved():
    """Before version 8 the byte is reserved: 0 reads as a delegated vCPU (its
    lock kept), anything else is refused naming it."""
    ms = _seeds()
    s = snapshot.verify(ms.stream(name="alpha", version=7, runs=()))
    assert s.version == 7 and s.vcpus[0]["misaligned_emulate"] == 0
    assert s.vcpus[0]["misaligned_locked"] == 1
    assert "FWFT: misaligned exception delegation on (locked)" in inspect_text(s)
    for version in (3, 7):
        err = first_problem(ms.stream(name="alpha", version=version, runs=(),
                                      vcpu_over={"misaligned_emulate": 1}))
        assert err.section == "VCPU 0" and "a reserved byte before version 8" in err.message, \
            str(err)


DBTR_EXEC = (6 << 60) | (1 << 2) | (1 << 3) | (1 << 4)     # mcontrol6, execute, U and S


def _dbtr_over(**more):
    over = {"dbtr_shmem": RAM_GPA + 0x2000, "dbtr_shmem_on": 1,
            "dbtr_state": [0b111, 0, 0b101] + [0] * 5,
            "dbtr_tdata1": [DBTR_EXEC, 0, (6 << 60) | 1] + [0] * 5,
            "dbtr_tdata2": [0x80201234, 0, 0x80300000] + [0] * 5}
    over.update(more)
    return over


def test_dbtr_record_read_and_shown():
    """Version 8: a vCPU's SBI DBTR shared memory and triggers are read and
    shown (text and JSON); a version 7 stream has none."""
    ms = _seeds()
    s = snapshot.verify(ms.stream(name="alpha", runs=(), vcpu_over=_dbtr_over()))
    v = s.vcpus[0]
    assert (v["dbtr_rec_id"], v["dbtr_rec_size"]) == (9, 216)
    assert v["dbtr_tdata1"][0] == DBTR_EXEC and v["dbtr_state"][2] == 0b101
    assert (f"DBTR: shared memory {RAM_GPA + 0x2000:#x}; triggers 0: tdata1={DBTR_EXEC:#x} "
            "tdata2=0x80201234, 2:") in inspect_text(s)
    j = json.loads(json.dumps(inspect_json(s)))
    assert j["vcpus"][0]["dbtr"]["shmem"] == RAM_GPA + 0x2000
    assert [t["index"] for t in j["vcpus"][0]["dbtr"]["triggers"]] == [0, 2]
    old = snapshot.verify(ms.stream(name="alpha", version=7, runs=()))
    assert old.vcpus[0]["dbtr_rec_id"] == 9 and old.vcpus[0]["dbtr_state"] == [0] * 8
    assert "DBTR:" not in inspect_text(old)


def test_dbtr_record_refusals_name_the_field():
    """What install_triggers and set_shmem would refuse is refused, naming the
    field and the trigger's element."""
    ms = _seeds()
    base = layout_offsets(ms.stream(name="alpha", runs=()))[1][3]
    cases = [
        ({"dbtr_shmem": RAM_GPA + 0x2004}, "dbtr_shmem", 0, "not 8-byte aligned"),
        ({"dbtr_shmem": RAM_GPA - 8}, "dbtr_shmem", 0, "not inside RAM"),
        ({"dbtr_shmem_on": 0}, "dbtr_shmem", 0, "must be 0 without dbtr_shmem_on"),
        ({"dbtr_shmem_on": 2}, "dbtr_shmem_on", 0, "dbtr_shmem_on"),
        ({"dbtr_reserved": [0, 0, 1, 0, 0, 0, 0]}, "dbtr_reserved", 2, "dbtr_reserved[2]"),
        ({"dbtr_state": [0b100, 0, 0b101] + [0] * 5}, "dbtr_state", 0, "dbtr_state[0]"),
        ({"dbtr_state": [0b100001, 0, 0b101] + [0] * 5}, "dbtr_state", 0, "dbtr_state[0]"),
        ({"dbtr_tdata1": [DBTR_EXEC, 4, (6 << 60) | 1] + [0] * 5}, "dbtr_tdata1", 1,
         "a free trigger"),
        ({"dbtr_tdata2": [0, 0, 0, 7] + [0] * 4}, "dbtr_tdata2", 3, "a free trigger"),
        ({"dbtr_tdata3": [1] + [0] * 7}, "dbtr_tdata3", 0, "dbtr_tdata3[0]"),
        ({"dbtr_tdata1": [DBTR_EXEC | (1 << 6), 0, (6 << 60) | 1] + [0] * 5}, "dbtr_tdata1", 0,
         "dmode, m or a reserved bit"),
        ({"dbtr_tdata1": [(2 << 60) | 4, 0, (6 << 60) | 1] + [0] * 5}, "dbtr_tdata1", 0,
         "not an mcontrol6"),
        ({"dbtr_tdata1": [DBTR_EXEC | (1 << 11), 0, (6 << 60) | 1] + [0] * 5}, "dbtr_tdata1", 0,
         "no chain"),
        ({"dbtr_tdata1": [DBTR_EXEC | (1 << 12), 0, (6 << 60) | 1] + [0] * 5}, "dbtr_tdata1", 0,
         "breakpoint action"),
    ]
    for over, field, index, words in cases:
        err = first_problem(ms.stream(name="alpha", runs=(), vcpu_over=_dbtr_over(**over)))
        assert err.section == "VCPU 0" and words in err.message, (over, str(err))
        assert err.offset == base + snapfmt.VCPU.offset(field, index), (over, str(err))
