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
asleep, and wakes on one typed byte. A second suspend with ttyS0 no longer a
wake-up source ignores typed input and ends with the host's
`carapace-ctl wake` (as QEMU's system_wakeup)."""

import re
import time

import pytest

from harness.hosts import TypingHost
from harness.linux import INITRAMFS, KERNEL, run_reference

pytestmark = pytest.mark.linux

SPEC = (f"name=s,kernel={KERNEL},initrd={INITRAMFS},mem=256M,vcpus=2,"
        "bootargs=console=ttyS0 carapace.test=suspend")


# A kernel log line ("[    5.05] PM: ...") can land inside a line init
# prints (the tty and the kernel's console write the UART independently).
KLOG_RE = re.compile(r"\[ *\d+\.\d+\] [^\n]*\n?")


def said(h, text):
    """Has the guest printed @text, once kernel log lines are taken out?"""
    return text in KLOG_RE.sub("", "\n".join(h.guest("s")))


def wait_said(h, text, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if said(h, text):
            return
        time.sleep(0.1)
    pytest.fail(f"the guest never printed {text!r}\n" + "\n".join(h.snapshot()))


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


def asleep(h, text, seconds):
    """The VM stays suspended for @seconds and takes no exit meanwhile (no
    vCPU is scheduled)."""
    before = exits(h)
    time.sleep(seconds)
    assert exits(h) == before, "the suspended VM ran\n" + text()
    assert state(h) == "suspended", text()


def test_reference_no_suspend_to_ram(initramfs):
    """Bare QEMU virt: OpenSBI 1.6 has no system-suspend device there, so no
    SUSP, and Linux's `mem` is only s2idle (no `deep`); init does not sleep."""
    _, out = run_reference(initramfs, "suspend")
    assert "Platform Suspend Device     : ---" in out, out
    assert "suspend: SBI SUSP extension detected" not in out, out
    said = KLOG_RE.sub("", out.replace("\r", ""))
    assert "init: mem_sleep: [s2idle]" in said, out
    assert "init: no deep sleep state" in said, out


def test_linux_suspend_to_ram(initramfs, tmp_path):
    h = TypingHost(tmp_path, [SPEC], extra=["--persist"])   # up after init's poweroff
    try:
        text = lambda: "\n".join(h.snapshot())  # noqa: E731
        done = lambda r: said(h, f"init: round {r}: suspend exit")  # noqa: E731
        # round 1: woken by console input (ttyS0 a wake-up source)
        wait_said(h, "init: round 1: ttyS0 wakeup: enabled", 240)
        assert wait_state(h, "suspended", 60), text()
        out = text()
        assert "suspend: SBI SUSP extension detected" in out, out
        assert said(h, "init: power states: freeze mem"), out
        assert said(h, "init: mem_sleep: s2idle [deep]"), out
        asleep(h, text, 2)
        assert not done(1), text()

        # a host pause of a guest-suspended VM keeps it suspended
        rep, _, _ = h.ctl("pause", "s")
        assert rep["state"] == "paused", rep
        rep, _, _ = h.ctl("resume", "s")
        assert rep["state"] == "suspended", rep
        asleep(h, text, 1)
        assert not done(1), text()

        h.type(b"\r")
        wait_said(h, "init: round 1: suspend exit 0", 60)
        out = text()
        assert "PM: suspend exit" in out, out
        # the kernel's log, held back while its console was suspended
        assert "CPU1: off" in out, out       # the other vCPU was stopped first (HSM)
        assert "CPU1 is up" in out, out

        # round 2: ttyS0 is no wake-up source: input does not wake it, the host does
        wait_said(h, "init: round 2: ttyS0 wakeup: disabled", 60)
        assert wait_state(h, "suspended", 60), text()
        h.type(b"\r")
        asleep(h, text, 2)
        assert not done(2), text()
        rep, _, _ = h.ctl("wake", "s")
        assert rep["state"] == "running", rep
        wait_said(h, "init: round 2: suspend exit 0", 60)
        wait_said(h, "init: resumed", 30)
        assert state(h) in ("running", "down"), text()   # init powers off after
    finally:
        h.kill()
