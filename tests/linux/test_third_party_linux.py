# SPDX-License-Identifier: MIT
"""An unmodified third-party Linux (issue 13): Debian trixie's 6.12 kernel
(fetched by `scripts/deps.sh guests`), another series than our 7.2 guest
and without user CFI, with the same test initramfs. On bare QEMU + OpenSBI
and under Carapace (policy trap, on a host with Zicfilp/Zicfiss) it must
behave the same: no CFI for its processes, every request refused cleanly;
and Carapace's `cfi` report must say honestly that the guest kernel never
turned shadow stacks or landing pads on."""

import re

import pytest

from harness.hosts import Host
from harness.linux import (INITRAMFS, REF_TIMEOUT, REQUIRED_OFF, CfiReport, check_cfi,
                           reference_linux, run_carapace)
from harness.paths import CACHE
from harness.runs import run_to_end

pytestmark = pytest.mark.linux

TRIXIE = CACHE / "linux-trixie.Image"


@pytest.fixture
def trixie():
    assert TRIXIE.is_file(), f"{TRIXIE} missing: run `scripts/deps.sh guests` (make deps)"
    return TRIXIE


def spec(name, test, kernel):
    return (f"name={name},kernel={kernel},initrd={INITRAMFS},mem=256M,vcpus=2,"
            f"bootargs=console=ttyS0 carapace.test={test}")


def test_reference_trixie_kernel(initramfs, trixie):
    code, out = run_to_end(reference_linux(initramfs, "cfi-off", kernel=trixie), "trixie",
                           REF_TIMEOUT)
    assert code == 0, out
    assert re.search(r"Linux version 6\.12\.", out), f"not trixie's 6.12 kernel\n{out}"
    check_cfi(CfiReport([l.rstrip("\r") for l in out.splitlines()]), "bare QEMU, trixie 6.12",
              REQUIRED_OFF, out)


def test_carapace_trixie_kernel(initramfs, trixie):
    code, out, reps = run_carapace([spec("old", "cfi-off", trixie)], ["old"])
    assert any(re.search(r"Linux version 6\.12\.", l) for l in reps["old"].lines), out
    check_cfi(reps["old"], "vm old (trixie 6.12)", REQUIRED_OFF, out)
    assert code == 0, f"launcher exit {code}\n{out}"
    assert re.search(r"carapace: vm old: .*cfi violations: landing pad 0, shadow stack 0", out), out


def test_carapace_cfi_report_is_honest_for_a_kernel_without_user_cfi(initramfs, trixie, tmp_path):
    """The VM may use Zicfilp/Zicfiss (policy trap, a CFI host), but its 6.12
    kernel never asks for them through FWFT: the report says so per vCPU."""
    h = Host(tmp_path, [spec("old", "idle", trixie)], timeout=300)
    try:
        h.wait_for(lambda l: l == "[old] init: idle", 240)
        cfi, _ = h.ctl("cfi", "old")
    finally:
        h.kill()
    assert cfi["policy"] == "trap" and cfi["landing_pads"] and cfi["shadow_stacks"], cfi
    started = [v for v in cfi["vcpus"] if v["hsm"] == "started"]
    assert len(started) == 2, cfi
    for v in started:
        assert not (v["ss_enabled"] or v["lp_enabled"] or v["ss_locked"] or v["lp_locked"]), v
        assert v["senvcfg"] & 0xc == 0 and v["ssp"] == 0, v     # LPE, SSE clear
