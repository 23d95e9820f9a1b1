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
    "landing pads: indirect call to a non-lpad target -> SIGSEGV/SEGV_CPERR",
    "landing pads: lpad label mismatch -> SIGSEGV/SEGV_CPERR",
]
ROUND_RE = re.compile(r"cfitest: round (\d+)/(\d+)")


def spec(name, rounds=ROUNDS):
    return (f"name={name},kernel={KERNEL},initrd={INITRAMFS},mem=256M,vcpus=2,"
            f"bootargs=console=ttyS0 quiet carapace.test=rounds carapace.rounds={rounds}")


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
