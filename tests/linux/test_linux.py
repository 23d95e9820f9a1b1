# SPDX-License-Identifier: MIT
"""Linux-guest CFI tests: the Debian kernel + a busybox initramfs running
cfitest (tests/linux/cfitest.c), first on bare QEMU + OpenSBI (the reference:
it validates cfitest against the real kernel), then under Carapace.

cfitest prints `PASS|FAIL|SKIP: cfi: <check> (...)` and `DONE: N passed, M
failed`; the init script picks the mode from `carapace.test=` on the kernel
command line and powers off when it is done.
"""

import re

import pytest

from harness.linux import (NO_CFI_CPU, OLD_OPENSBI, REQUIRED_FULL, REQUIRED_OFF, VIOLATION_LINE,
                           check_cfi, run_carapace, run_reference, vm_spec)

pytestmark = pytest.mark.linux


# --- reference: bare QEMU + OpenSBI ----------------------------------------------------

def test_reference_cfi(initramfs):
    """(a) cfitest against the real kernel on a CFI-capable QEMU CPU."""
    rep, out = run_reference(initramfs, "cfi")
    check_cfi(rep, "bare QEMU, CFI", REQUIRED_FULL, out)


def test_reference_cfi_off(initramfs):
    """(d) the same kernel on a CPU without Zicfilp/Zicfiss: clean refusal."""
    rep, out = run_reference(initramfs, "cfi-off", NO_CFI_CPU)
    check_cfi(rep, "bare QEMU, no CFI", REQUIRED_OFF, out)


def test_reference_violate(initramfs):
    """The --violate mode the isolation tests rely on reports SEGV_CPERR."""
    rep, out = run_reference(initramfs, "violate")
    assert rep.has(VIOLATION_LINE), out


def test_reference_boot(initramfs):
    rep, out = run_reference(initramfs, "boot")
    assert rep.has("init: boot ok"), out
    assert not rep.has(CPU_MAP_UNRESOLVED), out


# Linux's arch_topology when a cpu-map core names no CPU node it can read
CPU_MAP_UNRESOLVED = "Can't get CPU for leaf core"


# --- Carapace, through the launcher ----------------------------------------------------

def test_carapace_two_cfi_guests(initramfs):
    """(b) two Linux guests at once, both with CFI: all checks pass in both."""
    code, out, reps = run_carapace([vm_spec("a", "cfi"), vm_spec("b", "cfi")], ["a", "b"])
    for name in ("a", "b"):
        check_cfi(reps[name], f"vm {name}", REQUIRED_FULL, out)
        # the guest DT's cpu-map resolves for the kernel (issue 28)
        assert not reps[name].has(CPU_MAP_UNRESOLVED), f"vm {name}\n{out}"
    assert code == 0, f"launcher exit {code}\n{out}"


def test_carapace_cfi_off_guest(initramfs):
    """(c) a VM whose CFI policy is off: the guest sees no CFI at all."""
    code, out, reps = run_carapace([vm_spec("off", "cfi-off", cfi="off")], ["off"])
    check_cfi(reps["off"], "vm off", REQUIRED_OFF, out)
    assert code == 0, f"launcher exit {code}\n{out}"


def test_carapace_mixed_policies(initramfs):
    """CFI on in one VM and off in the other, at the same time on the same
    harts: the per-VM state must be switched with the VM."""
    code, out, reps = run_carapace([vm_spec("on", "cfi"), vm_spec("off", "cfi-off", cfi="off")],
                                   ["on", "off"])
    check_cfi(reps["on"], "vm on", REQUIRED_FULL, out)
    check_cfi(reps["off"], "vm off", REQUIRED_OFF, out)
    assert code == 0, f"launcher exit {code}\n{out}"


def test_carapace_violation_is_contained(initramfs):
    """A CFI violation in one guest's process is that guest's business: it
    gets SIGSEGV/SEGV_CPERR, and the other guest's checks all pass."""
    code, out, reps = run_carapace([vm_spec("bad", "violate"), vm_spec("good", "cfi")],
                                   ["bad", "good"])
    assert reps["bad"].has(VIOLATION_LINE), out
    check_cfi(reps["good"], "vm good", REQUIRED_FULL, out)
    assert code == 0, f"launcher exit {code}\n{out}"


# --- CFI machinery seen from the host --------------------------------------------------

def hyp_violations(out, name):
    """The hypervisor's per-VM counters, printed when the VM goes down."""
    m = re.search(rf"carapace: vm {name}: exits .*cfi violations: landing pad (\d+), "
                  rf"shadow stack (\d+)", out)
    assert m, f"no counters printed for vm {name}\n{out}"
    return int(m.group(1)), int(m.group(2))


def guest_violations(rep):
    """Violations the guest saw: each passing SEGV_CPERR check is exactly one."""
    lp = ss = 0
    for line in rep.lines:
        if line.startswith("PASS: ") and "SEGV_CPERR" in line:
            if "landing pad" in line:
                lp += 1
            else:
                ss += 1
        elif line.startswith("CFI-VIOLATION-DONE") and "code=10" in line:
            ss += 1     # --violate does one shadow-stack violation
    return lp, ss


def test_carapace_counts_match_guests_under_hard_preemption(initramfs):
    """Two CFI guests preempted every 200 us on 2 harts: every check still passes,
    and the violations Carapace counted per VM are exactly those the guests saw."""
    code, out, reps = run_carapace([vm_spec("a", "cfi"), vm_spec("b", "violate")], ["a", "b"],
                                   extra=("--timeslice-us", "200"))
    check_cfi(reps["a"], "vm a", REQUIRED_FULL, out)
    assert reps["b"].has(VIOLATION_LINE), out
    for name in ("a", "b"):
        seen = guest_violations(reps[name])
        assert sum(seen) > 0, f"vm {name} saw no violation\n{out}"
        assert hyp_violations(out, name) == seen, f"vm {name}: hypervisor vs guest\n{out}"
    assert code == 0, f"launcher exit {code}\n{out}"


def test_carapace_cpu_without_cfi(initramfs):
    """A host CPU without Zicfilp/Zicfiss: Carapace advertises neither, FWFT says
    NOT_SUPPORTED, and the guest boots with CFI off; its prctl calls fail cleanly."""
    # Zimop stays: Debian sid's userspace is built with shadow-stack MOPs, which
    # are illegal instructions without it (busybox's poweroff would die).
    code, out, reps = run_carapace([vm_spec("nocfi", "cfi-off")], ["nocfi"],
                                   extra=("--cpu", "rv64,h=true,sstc=true,zimop=true,zcmop=true"))
    assert "shadow stacks (Zicfiss) NOT available" in out, out
    check_cfi(reps["nocfi"], "vm nocfi", REQUIRED_OFF, out)
    assert code == 0, f"launcher exit {code}\n{out}"


def test_carapace_old_firmware(initramfs):
    """OpenSBI 1.5.1 (QEMU's default) has no FWFT CFI features: Carapace offers
    no CFI, and the Linux guest boots with it off."""
    if not OLD_OPENSBI.is_file():
        pytest.skip(f"{OLD_OPENSBI} not installed")
    code, out, reps = run_carapace([vm_spec("old", "cfi-off")], ["old"],
                                   extra=("--bios", str(OLD_OPENSBI)))
    assert "no CFI for guests" in out, out
    check_cfi(reps["old"], "vm old", REQUIRED_OFF, out)
    assert code == 0, f"launcher exit {code}\n{out}"
