# SPDX-License-Identifier: MIT
"""Crafted snapshots restored into a running host beside a victim VM (issue 22):
a VCPU record whose trapped-context sstatus.FS is Off (the hypervisor's FP save
used to fault in HS: every VM gone), whose vsstatus holds bit 20 or 21 (QEMU
swaps vsstatus into mstatus: TVM/TW for the firmware, a hart lost) or bit 34
(SXL: QEMU aborts), and a VM without Zicfilp whose senvcfg has user landing
pads on. Each is refused (bad-snapshot, naming VCPU 0 and the field's byte,
as carapace-snap verify does), the host and the victim go on, and a good
restore still works afterwards."""

import struct
import subprocess

import pytest

from harness.paths import SNAP
from harness.runs import EXIT_OK, vm_spec
from harness.snapshots import crc32c

pytestmark = pytest.mark.quick

SECTION = struct.Struct("<IIQII")
CONFIG_FEATURES = 40                   # payload offsets (docs/snapshot-format.md)
VCPU_SSTATUS, VCPU_VSSTATUS, VCPU_SENVCFG = 8 + 264, 8 + 272, 8 + 360   # CORE at 8
VCPU_LP = 656 + 8                       # CFI at 656 (ssp, then lp_value, lp_locked)
SR_FS, SR_SPELP = 3 << 13, 1 << 23
ENVCFG_LPE = 1 << 2


def payloads(stream):
    """{(type, instance): payload offset} of each section."""
    out, pos = {}, 32
    while pos < len(stream):
        stype, inst, length, _, _ = SECTION.unpack_from(stream, pos)
        out[(stype, inst)] = pos + SECTION.size
        pos += SECTION.size + length
    return out


def craft(good, edits):
    """@good with @edits: (section key, payload offset, fmt, function of the old
    value), every touched section's CRC made right again."""
    data = bytearray(good)
    at = payloads(good)
    for key, off, fmt, change in edits:
        pos = at[key] + off
        (old,) = struct.unpack_from(fmt, data, pos)
        struct.pack_into(fmt, data, pos, change(old))
    for key in {e[0] for e in edits}:
        head = at[key] - SECTION.size
        stype, inst, length, _, res = SECTION.unpack_from(data, head)
        SECTION.pack_into(data, head, stype, inst, length,
                          crc32c(data[at[key]:at[key] + length]), res)
    return bytes(data)


CONFIG, VCPU0 = (1, 0), (2, 0)
CASES = [
    ("fs-off", [(VCPU0, VCPU_SSTATUS, "<Q", lambda v: v & ~SR_FS)], VCPU_SSTATUS),
    ("vsstatus-tvm", [(VCPU0, VCPU_VSSTATUS, "<Q", lambda v: v | 1 << 20)], VCPU_VSSTATUS),
    ("vsstatus-tw", [(VCPU0, VCPU_VSSTATUS, "<Q", lambda v: v | 1 << 21)], VCPU_VSSTATUS),
    ("vsstatus-sxl", [(VCPU0, VCPU_VSSTATUS, "<Q", lambda v: v | 1 << 34)], VCPU_VSSTATUS),
    # the guest was never given Zicfilp (no landing-pad state) but its senvcfg has LPE
    ("senvcfg-lpe", [(CONFIG, CONFIG_FEATURES, "<I", lambda v: v & ~1),
                     (VCPU0, VCPU_SSTATUS, "<Q", lambda v: v & ~SR_SPELP),
                     (VCPU0, VCPU_VSSTATUS, "<Q", lambda v: v & ~SR_SPELP),
                     (VCPU0, VCPU_LP, "<H", lambda v: 0),
                     (VCPU0, VCPU_SENVCFG, "<Q", lambda v: v | ENVCFG_LPE)], VCPU_SENVCFG),
]


def test_crafted_records_are_refused_and_the_host_goes_on(snap_host, tmp_path):
    h = snap_host([vm_spec("orig", "snap_cfi", 1, "wait_ms=600000"),
                   vm_spec("victim", "demo", 1, "count=100000 delay_us=20000")],
                  extra=["--expect", "orig=destroyed", "--expect", "victim=destroyed"])
    h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    good_path = tmp_path / "good.snap"
    h.ctl("snapshot", "orig", str(good_path), "--no-compress")
    good = good_path.read_bytes()
    at = payloads(good)
    for name, edits, field in CASES:
        path = tmp_path / f"{name}.snap"
        path.write_bytes(craft(good, edits))
        byte = at[VCPU0] + field
        # carapace-snap verify refuses it at that byte
        r = subprocess.run([str(SNAP), "verify", str(path)], capture_output=True, text=True)
        assert r.returncode == 1 and f"VCPU 0, byte {byte}:" in r.stdout + r.stderr, \
            (name, r.stdout, r.stderr)
        # so does the hypervisor, sent it anyway
        hellos = len(h.guest("victim"))
        rep, code, err = h.ctl("restore", str(path), "--name", "bad", "--no-verify",
                               check=False)
        assert code == 1 and rep and rep["code"] == "bad-snapshot", (name, rep, err)
        assert "VCPU 0" in rep["error"] and f"byte {byte}:" in rep["error"], (name, rep)
        # the host answers and the victim keeps printing
        listing, _, _ = h.ctl("list")
        assert sorted(v["name"] for v in listing["vms"]) == ["orig", "victim"], (name, listing)
        h.wait_for(lambda l, n=hellos: len(h.guest("victim")) > n + 3, 30)
    assert not [l for l in h.snapshot() if "hypervisor trap" in l], "\n".join(h.snapshot())
    # a good restore still works beside them
    rep, _, _ = h.ctl("restore", str(good_path), "--name", "copy")
    assert rep["ok"], rep
    for vm in ("copy", "orig", "victim"):
        h.ctl("destroy", vm)
    assert h.finish() == EXIT_OK
