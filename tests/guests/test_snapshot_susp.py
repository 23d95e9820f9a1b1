# SPDX-License-Identifier: MIT
"""Snapshot and restore of a guest-suspended VM (SBI SUSP): tests/guests/
sbi_susp.c with sleep_ms=N runs its error checks, stops its other hart,
prints SUSPENDING and suspends to RAM with a timer N ms away. While it sleeps
the harness snapshots it (the host's pause leaves it suspended), destroys it
and restores the file as a new VM: the copy is listed "suspended" too, takes
no exits until its timer, then resumes at resume_addr with the same a0/a1 and
finishes its checks (and a second suspend) as the original would have.
And the host's wake-up (carapace-ctl wake, as QEMU's system_wakeup): with
sleep_ms=0 the guest suspends with no interrupt enabled, sleeps until the
host wakes it, and resumes at resume_addr; wake is refused for a VM that is
not guest-suspended (paused by the host, or down). The monitor's `w` key
does the same."""

import time

import pytest

from harness.hosts import TypingHost
from harness.report import Report, check_report
from harness.runs import vm_spec
from harness.snapshots import inspect

pytestmark = pytest.mark.quick

SLEEP_MS = 6000


def states(h):
    listing, _, _ = h.ctl("list")
    return {v["name"]: v["state"] for v in listing["vms"]}


def exits(h, name):
    stats, _, _ = h.ctl("stats", name)
    return stats["vms"][0]["exits"]


def wait_state(h, name, want, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if states(h).get(name) == want:
            return True
        time.sleep(0.05)
    return False


def test_snapshot_of_a_suspended_vm(snap_host, tmp_path):
    h = snap_host([vm_spec("orig", "sbi_susp", 2, f"sleep_ms={SLEEP_MS}")],
                  extra=["--expect", "orig=destroyed", "--expect", "copy=shutdown", "--persist"])
    h.wait_for(lambda l: l == "[orig] SUSPENDING", 60)
    assert wait_state(h, "orig", "suspended", 5), h.snapshot()
    started = time.monotonic()
    path = tmp_path / "susp.snap"
    rep, _, _ = h.ctl("snapshot", "orig", str(path))
    assert rep["ok"], rep
    # the snapshot's pause ended with the VM asleep again, not woken
    assert states(h)["orig"] == "suspended", states(h)
    info = inspect(path)
    v0, v1 = info["vcpus"][0], info["vcpus"][1]
    assert v0["hsm"] == "suspended" and v0["system_suspend"] and v0["resume_nonret"], v0
    assert v1["hsm"] == "stopped" and not v1["system_suspend"], v1
    h.ctl("destroy", "orig")

    rep, _, _ = h.ctl("restore", str(path), "--name", "copy")
    assert rep["ok"] and rep["vm"] == "copy", rep
    assert states(h)["copy"] == "suspended", states(h)
    before = exits(h, "copy")
    time.sleep(1)
    if time.monotonic() - started < SLEEP_MS / 1000 - 1:   # its timer is still ahead
        assert exits(h, "copy") == before, "the restored VM ran while suspended"
        assert not h.guest("copy"), h.guest("copy")
    h.wait_for(lambda l: l.startswith("[copy] DONE:"), 60)

    orig = h.guest("orig")
    orig = orig[:orig.index("SUSPENDING")]
    assert not [l for l in h.guest("orig") if "resumed at resume_addr" in l], h.snapshot()
    rep = Report(orig + h.guest("copy"))
    check_report(rep, "vm orig, then copy (restored while suspended)",
                 ["PASS: susp: suspend to RAM: resumed at resume_addr",
                  "PASS: susp: suspend to RAM: a1 is the opaque value",
                  "PASS: susp: suspend to RAM: woke at the timer, not before",
                  "PASS: susp: type (1 << 32) | 0: woke at the timer, not before"])
    h.wait_for(lambda l: l == "carapace: vm copy: shut down", 30)


def test_host_wakes_a_suspended_vm(snap_host):
    h = snap_host([vm_spec("w", "sbi_susp", 2, "sleep_ms=0")], extra=["--persist"])
    h.wait_for(lambda l: l == "[w] SUSPENDING", 60)
    assert wait_state(h, "w", "suspended", 5), h.snapshot()
    before = exits(h, "w")
    time.sleep(1.5)
    # nothing can wake it but the host
    assert exits(h, "w") == before and states(h)["w"] == "suspended", h.snapshot()
    assert not [l for l in h.guest("w") if "resumed at resume_addr" in l], h.snapshot()
    # paused by the host: no wake-up until resumed, and then still asleep
    h.ctl("pause", "w")
    rep, code, _ = h.ctl("wake", "w", check=False)
    assert code == 1 and rep["code"] == "bad-state", rep
    rep, _, _ = h.ctl("resume", "w")
    assert rep["state"] == "suspended", rep
    rep, _, _ = h.ctl("wake", "w")
    assert rep["state"] == "running", rep
    h.wait_for(lambda l: l.startswith("[w] DONE:"), 30)
    check_report(Report(h.guest("w")), "vm w (woken by the host)",
                 ["PASS: susp: suspend to RAM: resumed at resume_addr",
                  "PASS: susp: suspend to RAM: a1 is the opaque value",
                  "INFO: susp: suspend to RAM: woken with no interrupt enabled: by the host",
                  "PASS: susp: type (1 << 32) | 0: woke at the timer, not before"])
    h.wait_for(lambda l: l == "carapace: vm w: shut down", 30)
    rep, code, _ = h.ctl("wake", "w", check=False)
    assert code == 1 and rep["code"] == "bad-state", rep      # down: not suspended


def test_monitor_key_wakes_a_suspended_vm(tmp_path, guests_built):
    h = TypingHost(tmp_path, [vm_spec("m", "sbi_susp", 2, "sleep_ms=0")])
    try:
        h.wait_for(lambda l: l == "[m] SUSPENDING", 60)
        assert wait_state(h, "m", "suspended", 5), h.snapshot()
        h.type(b"\x1dw")      # Ctrl-] opens the monitor, w wakes the focused VM
        h.wait_for(lambda l: l.endswith("vm m: woken"), 10)
        h.wait_for(lambda l: l.startswith("[m] DONE:"), 30)
        check_report(Report(h.guest("m")), "vm m (woken from the monitor)",
                     ["PASS: susp: suspend to RAM: resumed at resume_addr"])
    finally:
        h.kill()
