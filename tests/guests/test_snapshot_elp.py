# SPDX-License-Identifier: MIT
"""Snapshot and restore of a landing-pad check in flight (marker protocol,
tests/guests/snap_elp.c): a guest with landing pads on jumps again and again
to a target that is not an lpad; the harness snapshots it until a file holds
the vCPU stopped between a jump and its target (ELP expected), restores that
file beside the original and into a fresh QEMU (carapace-run --restore), and
each restored copy must take the landing-pad fault at the target as its
first act: every jump faults, the target never runs."""

import re
import subprocess
import time

import pytest

from harness.paths import CTL
from harness.report import Report, check_report
from harness.snapshots import inspect

pytestmark = pytest.mark.quick

SPELP = 1 << 23
# 16M: a small VM makes the many snapshots cheap; delegate: the faults stay in
# the guest, so a pause finds the loop in the guest and often at the target
# (on a CPU where delegate cannot be exact, QEMU 10.0.2, it runs as trap)
SPEC = "name=orig,kernel=build/guests/snap_elp.bin,vcpus=1,mem=16M,cfi=delegate"
# A quiet machine catches it within a few snapshots; a loaded one (other QEMUs
# on its 2 cores) once needed more than 30. Each try is ~0.1 s; the loop ends
# at the first catch.
TRIES = 100


def elp_pending(vcpu):
    """ELP expected in a saved vCPU: the trapped context's SPELP (the format's
    'elp'). The hypervisor writes it there whatever its CPU does with SPELP
    (QEMU 10.0.2 leaves the ELP of an exit in vsstatus.SPELP, docs/cfi.md §7)."""
    return vcpu["cfi"]["elp"]


def check_restored(lines, where):
    rep = Report(lines)
    check_report(rep, where)
    assert not rep.kind("SKIP: "), rep.lines
    passes = rep.kind("PASS: ")
    assert any("the target never ran" in l for l in passes), rep.lines
    assert any("every jump to the non-lpad target took a landing-pad fault" in l
               for l in passes), rep.lines
    return rep


def catch_pending_elp(h, tmp_path, live):
    """Snapshot the VM 'orig' of @h until a file holds its vCPU stopped between
    a jump and its non-lpad target (ELP expected); return that file."""
    line = h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    rep = h.ctl("cfi", "orig")[0]
    policy = rep["policy"]
    assert rep["policy_requested"] == "delegate" and policy in ("delegate", "trap"), rep
    # the human form says when the policy is not the one asked for
    human = subprocess.run([str(CTL), "--socket", str(h.sock), "cfi", "orig"],
                           capture_output=True, text=True, timeout=60).stdout
    assert (f"policy {policy} (asked for delegate" in human) == (policy != "delegate"), human
    target = int(re.search(r"target=(0x[0-9a-f]+)", line).group(1), 16)

    # snapshot until one catches the vCPU at the target with ELP expected
    path, seen = None, []
    for i in range(TRIES):
        p = tmp_path / f"try{i}.snap"
        rep, _, _ = h.ctl("snapshot", "orig", str(p), *(["--live"] if live else []))
        assert rep["ok"] and rep["live"] == live, rep
        info = inspect(p)
        v = info["vcpus"][0]
        seen.append((hex(v["pc"]), v["cfi"]["elp"], bool(v["vsstatus"] & SPELP)))
        assert v["cfi"]["landing_pads"] and not v["cfi"]["lp_locked"], v["cfi"]
        assert info["config"]["cfi"] == policy and info["header"]["live"] == live, info
        if elp_pending(v):
            # only a jump to the target leaves ELP expected
            assert v["pc"] == target, (hex(v["pc"]), hex(target), seen)
            path = p
            print(f"caught after {i + 1} snapshot(s): {seen}")
            break
        p.unlink()
    assert path, f"no snapshot in {TRIES} caught ELP expected: (pc, elp, vsstatus.SPELP) {seen}"
    assert not [l for l in h.guest("orig") if l.startswith(("PASS", "FAIL", "DONE"))], \
        "the original left its loop:\n" + "\n".join(h.snapshot())
    return path


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_snapshot_pending_landing_pad_fires_after_restore(snap_host, tmp_path, live):
    # --persist: the host stays up between the original's end and the copy
    h = snap_host([SPEC], extra=["--persist"])
    path = catch_pending_elp(h, tmp_path, live)

    # restore beside the original's host: the original goes, the copy checks itself
    h.ctl("destroy", "orig")
    rep, _, _ = h.ctl("restore", str(path), "--name", "copy")
    assert rep["ok"] and rep["vm"] == "copy", rep
    h.wait_for(lambda l: l == "carapace: vm copy: shut down", 60)
    check_restored(h.guest("copy"), "vm copy (restored in the same host)")
    h.kill()    # SIGTERM: the launcher stops QEMU

    # restore into a fresh QEMU
    t0 = time.monotonic()
    h2 = snap_host([], extra=["--restore", str(path)])
    h2.wait_for(lambda l: l == "carapace: vm orig: shut down", 60)
    rep = check_restored(h2.guest("orig"), "vm orig (restored in a fresh QEMU)")
    assert not rep.kind("SNAPSHOT-READY"), rep.lines   # it did not start over
    assert time.monotonic() - t0 < 90

