# SPDX-License-Identifier: MIT
"""Linux CFI guests through the VM lifecycle: two guests each run one
long-lived CFI process (cfitest --rounds: its own shadow stack on, a round of
balanced calls, a caught shadow-stack violation and the landing-pad checks
every ~100 ms); one is paused from tools/carapace-ctl in the middle and
resumed. The paused guest's process goes on from the round where it stopped,
with the same shadow stack, still catching violations; the other guest never
stops."""

import re
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "guests"))
from test_lifecycle import Host  # noqa: E402
from test_linux import (INITRAMFS, KERNEL, CfiReport, check_cfi,  # noqa: E402,F401
                        cpu_with_cfi, initramfs, run_reference)

pytestmark = pytest.mark.linux

ROUNDS = 40
REQUIRED_ROUNDS = [
    "rounds: shadow stack on in the long-running process",
    "rounds: 1000 balanced calls at the ssp of round 1",
    "rounds: corrupted return in a child -> SIGSEGV/SEGV_CPERR",
    "rounds: PR_GET_SHADOW_STACK_STATUS still reports ENABLE",
    "landing pads: PR_GET_CFI reports ENABLE",
    "landing pads: indirect call to a non-lpad target -> SIGSEGV/SEGV_CPERR",
    "landing pads: lpad label mismatch -> SIGSEGV/SEGV_CPERR",
]
ROUND_RE = re.compile(r"cfitest: round (\d+)/(\d+)")


def spec(name, rounds=ROUNDS, quiet="quiet"):
    return (f"name={name},kernel={KERNEL},initrd={INITRAMFS},mem=256M,vcpus=2,"
            f"bootargs=console=ttyS0 {quiet} carapace.test=rounds carapace.rounds={rounds}")


def rounds_of(lines):
    return [int(m.group(1)) for l in lines if (m := ROUND_RE.search(l))]


def test_reference_rounds(initramfs):
    """The rounds mode itself, on bare QEMU + OpenSBI."""
    rep, out = run_reference(initramfs, "rounds carapace.rounds=3", cpu_with_cfi())
    check_cfi(rep, "bare QEMU, rounds", REQUIRED_ROUNDS, out)


def test_pause_resume_linux_cfi(initramfs, tmp_path):
    h = Host(tmp_path, [spec("alpha"), spec("beta")], timeout=400)
    try:
        h.wait_for(lambda l: l.startswith("[alpha] cfitest: round 5/"), 240)
        rep, _ = h.ctl("pause", "alpha")
        assert rep["state"] == "paused", rep
        cfi, _ = h.ctl("cfi", "alpha")
        # the Linux guest turned shadow stacks on (and locked them) through FWFT
        assert cfi["shadow_stacks"] and cfi["landing_pads"], cfi
        assert all(v["ss_enabled"] and v["ss_locked"] for v in cfi["vcpus"]
                   if v["hsm"] != "stopped"), cfi
        alpha_at = rounds_of(h.guest("alpha"))
        beta_at = rounds_of(h.guest("beta"))
        time.sleep(4)
        assert rounds_of(h.guest("alpha")) == alpha_at, "alpha ran while paused"
        beta_now = rounds_of(h.guest("beta"))
        assert len(beta_now) >= len(beta_at) + 3 or beta_now[-1:] == [ROUNDS], \
            f"beta stopped while alpha was paused: {beta_at} -> {beta_now}"
        listing, _ = h.ctl("list")
        assert {v["name"]: v["state"] for v in listing["vms"]}["alpha"] == "paused"
        rep, _ = h.ctl("resume", "alpha")
        assert rep["state"] == "running", rep
        code = h.finish(timeout=400)
    finally:
        h.kill()
    out = "\n".join(h.snapshot())
    assert code == 0, out
    for name in ("alpha", "beta"):
        lines = h.guest(name)
        check_cfi(CfiReport(lines), f"vm {name}", REQUIRED_ROUNDS, out)
        # one process, every round once and in order: it went on where it was
        assert rounds_of(lines) == list(range(1, ROUNDS + 1)), (name, rounds_of(lines))


# --- snapshot and restore -------------------------------------------------------------

def snap_host(tmp_path, vms, timeout=500):
    from test_snapshot import SnapHost
    return SnapHost(tmp_path, vms, timeout=timeout)


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_snapshot_linux_into_fresh_qemu(initramfs, tmp_path, live):
    """Two CFI guests; alpha is snapshotted in the middle of its long-lived CFI
    process, beta never stops. A fresh QEMU restores alpha from the file: the
    same process goes on from its round, with the same shadow stack (the ssp
    of round 1), and still catches a corrupted return and landing-pad
    violations."""
    import subprocess
    from test_lifecycle import LAUNCHER, ROOT

    path = tmp_path / "alpha.snap"
    srcdir = tmp_path / "src"
    srcdir.mkdir()
    # loglevel 6: the guest's notice that it reseeded after the restore shows
    src = snap_host(srcdir, [spec("alpha", 30, "loglevel=6"), spec("beta", 30)])
    try:
        src.wait_for(lambda l: l.startswith("[alpha] cfitest: round 5/"), 240)
        rep, _, _ = src.ctl("snapshot", "alpha", str(path), *(["--live"] if live else []))
        assert rep["ok"] and rep["live"] == live, rep
        src.ctl("destroy", "alpha")
        src.wait_for(lambda l: l.startswith("[beta] DONE:"), 300)
        assert rounds_of(src.guest("beta")) == list(range(1, 31)), "beta lost rounds"
    finally:
        src.kill()
    before = src.guest("alpha")

    # a fresh QEMU with nothing but the file
    r = subprocess.run([str(LAUNCHER), "--batch", "--timeout", "400", "--smp", "2",
                        "--ctl-socket", str(tmp_path / "d.sock"), "--stream-socket",
                        str(tmp_path / "ds.sock"), "--restore", str(path),
                        "--expect", "alpha=shutdown"],
                       cwd=ROOT, capture_output=True, text=True, errors="replace", timeout=500)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    after = [l[len("[alpha] "):] for l in r.stdout.split("\n==== carapace-run summary")[0]
             .splitlines() if l.startswith("[alpha] ")]
    # one process across two QEMUs: it goes on from a round the source reached
    first = rounds_of(after)[0]
    assert 5 <= first <= max(rounds_of(before)) + 1, (rounds_of(before), rounds_of(after))
    assert rounds_of(after) == list(range(first, 31)), rounds_of(after)
    rep = CfiReport(after)
    assert not rep.results("FAIL"), out
    assert rep.done() and rep.done()[1] == 0, out
    passed = set(rep.results("PASS"))
    missing = [c for c in REQUIRED_ROUNDS if c not in passed and not c.startswith("rounds: shadow")]
    assert not missing, (missing, out)
    assert "init: cfitest exit 0" in after, out
    # a new VM generation ID: the restored kernel reseeded its RNG (vmgenid)
    assert any("crng reseeded due to virtual machine fork" in l for l in after), out
