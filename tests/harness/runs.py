# SPDX-License-Identifier: MIT
"""Runs of a bare-metal payload to their end: on bare QEMU + OpenSBI (the
reference) and under Carapace through carapace-run --batch, each parsed into
Reports (harness.report). The guests_built fixture (tests/guests/conftest.py)
builds the payloads with build_guests()."""

import os
import re
import subprocess
from dataclasses import dataclass

import pytest

from harness.paths import FIRMWARE, GUESTS, HYP, LAUNCHER, QEMU, ROOT
from harness.report import Report

DEFAULT_CPU = "rv64,h=true,zicfilp=true,zicfiss=true,zimop=true,zcmop=true,sstc=true,svadu=true,smstateen=true"

REF_TIMEOUT = 60        # seconds for one bare-QEMU run
HYP_TIMEOUT = 60        # the launcher's --timeout
EXIT_OK, EXIT_VM = 0, 1     # carapace-run's exit status: every VM as expected, a VM not


def qemu_cpu():
    """The CPU model every run uses, from the platform makefile if it is there."""
    mk = ROOT / "platform" / "qemu-virt" / "platform.mk"
    if mk.is_file():
        m = re.search(r"^PLATFORM_QEMU_CPU\s*\??=\s*(\S+)", mk.read_text(), re.M)
        if m:
            return m.group(1)
    return DEFAULT_CPU


def build_guests():
    """Build the payloads (cheap when they are up to date); their directory."""
    r = subprocess.run(["make", "-s", "guests"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"make guests failed:\n{r.stdout}\n{r.stderr}"
    return GUESTS


# --- reference: bare QEMU + OpenSBI ---------------------------------------------------

def run_reference(name, bootargs=None, smp=2):
    """Payload @name on bare QEMU + OpenSBI: (exit status, Report, output)."""
    if not FIRMWARE.is_file():
        pytest.skip(f"OpenSBI firmware not found at {FIRMWARE}; run `make deps`")
    cmd = [QEMU, "-machine", "virt", "-cpu", qemu_cpu(),
           "-smp", str(smp), "-m", "256M", "-nographic", "-bios", str(FIRMWARE),
           "-kernel", str(GUESTS / f"{name}.bin")]
    if bootargs:
        cmd += ["-append", bootargs]
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=REF_TIMEOUT, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        pytest.fail(f"{name}: bare QEMU timed out after {REF_TIMEOUT} s\n{out}")
    out = r.stdout.decode(errors="replace")
    rep = Report([l.rstrip("\r") for l in out.splitlines()])
    return r.returncode, rep, out


# --- Carapace, through the launcher ------------------------------------------------------

# the hypervisor's counters of a VM, printed when it goes down
STATS_RE = re.compile(r"carapace: vm (?P<vm>[a-z0-9_-]+): exits (?P<exits>\d+), "
                      r"sbi calls (?P<sbi>\d+), wfi (?P<wfi>\d+), injected traps (?P<inj>\d+), "
                      r"cfi violations: landing pad (?P<lp>\d+), shadow stack (?P<ss>\d+)")


@dataclass
class Run:
    code: int
    out: str
    guests: dict        # VM name -> Report
    order: list         # (VM name, text) in console order
    hyp: list           # "carapace: ..." lines


def vm_spec(name, payload, vcpus=2, bootargs=None):
    """A --vm spec for payload @payload (build/guests/PAYLOAD.bin)."""
    spec = f"name={name},kernel=build/guests/{payload}.bin,vcpus={vcpus}"
    return spec + (f",bootargs={bootargs}" if bootargs else "")   # bootargs= goes last


def private_socket():
    """A control socket of this run alone: runs never collide with each other
    or with an interactive `make run` (which uses the default path)."""
    private_socket.count = getattr(private_socket, "count", 0) + 1
    return f"/tmp/carapace-test-{os.getpid()}-{private_socket.count}.sock"


def run_carapace(vms, smp=2, expect=(), names=None, icount=False, extra=(),
                 timeout=HYP_TIMEOUT):
    """Run the launcher in batch mode; @vms are --vm specs, @names their VM names.
    @icount: guest time counts instructions, so timing checks do not depend on
    how busy the host machine is. @extra: more launcher options."""
    if not HYP.is_file():
        pytest.skip("build/carapace.bin not built yet")
    if not LAUNCHER.is_file():
        pytest.skip("tools/carapace-run not there yet")
    cmd = [str(LAUNCHER), "--batch", "--timeout", str(timeout), "--smp", str(smp),
           "--ctl-socket", private_socket(), *extra]
    if icount:
        cmd.append("--icount")
    for e in expect:
        cmd += ["--expect", e]
    for v in vms:
        cmd += ["--vm", v]
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=timeout + 60, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"launcher hung past its own timeout\n{e.stdout}")
    guests = {n: Report() for n in names}
    order, hyp = [], []
    # Only the live console: the summary after it repeats guest lines, indented.
    live = r.stdout.split("\n==== carapace-run summary ====")[0]
    for line in live.splitlines():
        line = line.rstrip("\r")
        m = re.match(r"^\[([a-z0-9_-]+)\] (.*)$", line)
        if m and m.group(1) in guests:
            guests[m.group(1)].lines.append(m.group(2))
            order.append((m.group(1), m.group(2)))
        elif line.startswith("carapace: "):
            hyp.append(line)
    return Run(r.returncode, r.stdout + r.stderr, guests, order, hyp)


def assert_exit(run, want):
    assert run.code == want, f"launcher exit {run.code}, want {want}\n{run.out}"


def assert_carapace_mode(rep, where):
    """The payload must have seen /chosen carapace,boot-count (mode detection)."""
    inits = rep.kind("INFO: init:")
    assert inits and all(", carapace," in l for l in inits), \
        f"{where}: guest did not detect Carapace\n" + "\n".join(rep.lines)


def run_hyp(vms, names, smp=2, expect=(), timeslice_us=None, timeout=HYP_TIMEOUT):
    """run_carapace() plus a host time slice (--timeslice-us); a Run."""
    extra = ("--timeslice-us", str(timeslice_us)) if timeslice_us else ()
    return run_carapace(vms, smp=smp, expect=expect, names=names, extra=extra,
                        timeout=timeout)


def stats(run, vm):
    """The hypervisor's counters for @vm in @run (STATS_RE), as ints."""
    for line in run.hyp:
        m = STATS_RE.match(line)
        if m and m.group("vm") == vm:
            return {k: int(v) for k, v in m.groupdict().items() if k != "vm"}
    raise AssertionError(f"no counter line for vm {vm}\n{run.out}")
