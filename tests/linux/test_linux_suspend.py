# SPDX-License-Identifier: MIT
"""Linux suspend to RAM through SBI SUSP (hyp/vsbi/vsbi_susp.c).

Debian's kernel (CONFIG_SUSPEND, CPU hotplug) sees SUSP and offers `mem`
(deep) in /sys/power/state; our own guest kernel is built without
CONFIG_SUSPEND, so this uses Debian's. The init script (carapace.test=suspend)
arms ttyS0 as a wake-up source and writes `mem` to /sys/power/state: Linux
stops its second CPU through HSM and calls system_suspend. What can wake the
VM is an interrupt Linux left enabled: its timer is stopped before the call
and the VM has no RTC, so the wake-up is console input (the 16550's receive
interrupt through the PLIC). While asleep the VM reads "suspended" in the
management list, exits nothing, survives a host pause and resume still
asleep, and wakes on one typed byte."""

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "guests"))
from test_snapshot_uart import TypingHost  # noqa: E402
from test_linux import INITRAMFS, KERNEL, initramfs  # noqa: E402,F401

pytestmark = pytest.mark.linux

SPEC = (f"name=s,kernel={KERNEL},initrd={INITRAMFS},mem=256M,vcpus=2,"
        "bootargs=console=ttyS0 carapace.test=suspend")


def state(h):
    listing, _, _ = h.ctl("list")
    return {v["name"]: v["state"] for v in listing["vms"]}["s"]


def exits(h):
    stats, _, _ = h.ctl("stats", "s")
    return stats["vms"][0]["exits"]


def wait_state(h, want, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if state(h) == want:
            return True
        time.sleep(0.2)
    return False


def test_linux_suspend_to_ram_woken_by_console_input(initramfs, tmp_path):
    h = TypingHost(tmp_path, [SPEC], extra=["--persist"])   # up after init's poweroff
    try:
        text = lambda: "\n".join(h.snapshot())  # noqa: E731
        resumed = lambda: any("init: resumed" in l for l in h.snapshot())  # noqa: E731
        # (init's own lines can be cut by the kernel's "PM: suspend entry")
        h.wait_for(lambda l: "init: ttyS0 wakeup: enabled" in l, 240)
        assert wait_state(h, "suspended", 60), text()
        out = text()
        assert "suspend: SBI SUSP extension detected" in out, out
        assert "init: power states: freeze mem" in out, out

        # asleep: the VM takes no exits (no vCPU is scheduled), and stays asleep
        before = exits(h)
        time.sleep(2)
        assert exits(h) == before, "the suspended VM ran"
        assert state(h) == "suspended" and not resumed(), text()

        # a host pause of a guest-suspended VM keeps it suspended
        rep, _, _ = h.ctl("pause", "s")
        assert rep["state"] == "paused", rep
        rep, _, _ = h.ctl("resume", "s")
        assert rep["state"] == "suspended", rep
        time.sleep(1)
        assert state(h) == "suspended" and not resumed(), text()

        # one byte of console input wakes it (ttyS0 is its wake-up source)
        h.type(b"\r")
        h.wait_for(lambda l: "init: resumed" in l, 60)
        out = text()
        assert "init: suspend exit 0" in out, out
        assert "PM: suspend exit" in out, out
        # the kernel's log, held back while its console was suspended
        assert "CPU1: off" in out, out       # the other vCPU was stopped first (HSM)
        assert "CPU1 is up" in out, out
        assert state(h) in ("running", "down"), text()   # init powers off after
    finally:
        h.kill()
