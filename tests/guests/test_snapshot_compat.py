# SPDX-License-Identifier: MIT
"""Old streams still restore: tests/fixtures/snap_cfi-v2.snap, a snapshot
file written by the last version 2 writer (tests/fixtures/README.md), is
restored by this Carapace, which reads its VCPU records into the version 3
records (docs/snapshot-format.md, "Versions 1 and 2"); the guest, snap_cfi,
then checks its own CFI state (shadow stack, landing pads, ssp) and the rest
of its vCPUs' state and prints DONE. carapace-snap reads the same file as
the same guest state."""

import json
import shutil
import subprocess

import pytest

from harness.paths import ROOT, SNAP
from harness.report import Report

pytestmark = pytest.mark.quick

FIXTURE = ROOT / "tests" / "fixtures" / "snap_cfi-v2.snap"
SSP = 0x80203FD8               # the marker line of the original: SNAPSHOT-READY ssp=...


def test_version_2_snapshot_file_restores_and_the_guest_checks_itself(snap_host, tmp_path):
    path = tmp_path / "old.snap"
    shutil.copy(FIXTURE, path)
    path.chmod(0o600)
    r = subprocess.run([str(SNAP), "inspect", "--json", str(path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    info = json.loads(r.stdout)
    assert info["header"]["version"] == 2
    assert info["vcpus"][0]["record_version"] == 2 and info["vcpus"][0]["cfi"]["ssp"] == SSP
    h = snap_host([], extra=["--restore", str(path)])
    h.wait_for(lambda l: l == "carapace: vm orig: shut down", 60)
    rep = Report(h.guest("orig"))
    # the checks before the marker ran in the original: the copy's DONE
    # counts them too, so here: no failure, and the copy's own checks passed
    assert not rep.kind("FAIL: ") and rep.done() is not None and rep.done()[1] == 0, rep.lines
    passed = "\n".join(rep.kind("PASS: "))
    for check in ("ssp as before the snapshot", "every sspopchk matched",
                  "FWFT shadow_stack still locked", "senvcfg LPE and SSE still set",
                  "the deadline that passed fires at once", "vCPU 1 asleep in WFI wakes"):
        assert check in passed, rep.lines
    h.kill()
