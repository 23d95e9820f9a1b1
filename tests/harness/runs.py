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

def reference_cmd(kernel, *, cpu=None, smp=2, mem="256M", bios=FIRMWARE, initrd=None,
                  append=None, serial_only=False, extra=()):
    """The command line of a bare QEMU + OpenSBI run of @kernel (the reference,
    no hypervisor), for every reference run of the tests. @cpu: the platform's
    CPU model unless given. @serial_only: the serial port alone on stdio, no
    monitor multiplexed in (a test that types into the guest). @extra: more
    QEMU options."""
    cmd = [QEMU, "-machine", "virt", "-cpu", cpu or qemu_cpu(), "-smp", str(smp), "-m", mem]
    cmd += (["-display", "none", "-serial", "stdio", "-monitor", "none"] if serial_only
            else ["-nographic"])
    cmd += ["-bios", str(bios), "-kernel", str(kernel)]
    if initrd:
        cmd += ["-initrd", str(initrd)]
    cmd += extra
    if append:
        cmd += ["-append", append]
    return cmd


def run_to_end(cmd, what, timeout=REF_TIMEOUT):
    """Run @cmd (a reference_cmd()) to its end: (exit status, output). Past
    @timeout seconds the test fails, with what @what printed so far."""
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        pytest.fail(f"{what}: bare QEMU timed out after {timeout} s\n{out}")
    return r.returncode, r.stdout.decode(errors="replace")


def run_reference(name, bootargs=None, smp=2):
    """Payload @name on bare QEMU + OpenSBI: (exit status, Report, output)."""
    if not FIRMWARE.is_file():
        pytest.skip(f"OpenSBI firmware not found at {FIRMWARE}; run `make deps`")
    code, out = run_to_end(reference_cmd(GUESTS / f"{name}.bin", smp=smp, append=bootargs), name)
    return code, Report([l.rstrip("\r") for l in out.splitlines()]), out


# --- Carapace, through the launcher ------------------------------------------------------

# the hypervisor's counters of a VM, printed when it goes down
STATS_RE = re.compile(r"carapace: vm (?P<vm>[a-z0-9_-]+): exits (?P<exits>\d+), "
                      r"sbi calls (?P<sbi>\d+), wfi (?P<wfi>\d+) \((?P<wfi_in_place>\d+) in place\), "
                      r"injected traps (?P<inj>\d+), "
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


def run_batch(vms, smp=2, timeout=HYP_TIMEOUT, extra=()):
    """carapace-run --batch to its end, with its own control socket: the
    completed process (text). @vms: --vm specs; @extra: more launcher options."""
    if not HYP.is_file():
        pytest.skip(f"{HYP} not built yet")
    if not LAUNCHER.is_file():
        pytest.skip("tools/carapace-run not there yet")
    cmd = [str(LAUNCHER), "--batch", "--timeout", str(timeout), "--smp", str(smp),
           "--ctl-socket", private_socket(), *extra]
    for v in vms:
        cmd += ["--vm", v]
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=timeout + 60, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"launcher hung past its own timeout\n{e.stdout}")


def live_console(out, names):
    """The live console of a batch run's output @out: [(VM name, line)] of the
    VMs @names in console order, and the hypervisor's "carapace: " lines.
    The summary after it is left out: it repeats guest lines, indented."""
    order, hyp = [], []
    for line in out.split("\n==== carapace-run summary ====")[0].splitlines():
        line = line.rstrip("\r")
        m = re.match(r"^\[([a-z0-9_-]+)\] (.*)$", line)
        if m and m.group(1) in names:
            order.append((m.group(1), m.group(2)))
        elif line.startswith("carapace: "):
            hyp.append(line)
    return order, hyp


def run_carapace(vms, smp=2, expect=(), names=None, icount=False, extra=(),
                 timeout=HYP_TIMEOUT):
    """Run the launcher in batch mode; @vms are --vm specs, @names their VM names.
    @icount: guest time counts instructions, so timing checks do not depend on
    how busy the host machine is. @extra: more launcher options."""
    extra = [*extra, *(["--icount"] if icount else []), *(a for e in expect for a in ("--expect", e))]
    r = run_batch(vms, smp, timeout, extra)
    order, hyp = live_console(r.stdout, names)
    guests = {n: Report() for n in names}
    for name, line in order:
        guests[name].lines.append(line)
    return Run(r.returncode, r.stdout + r.stderr, guests, order, hyp)


def assert_exit(run, want):
    assert run.code == want, f"launcher exit {run.code}, want {want}\n{run.out}"


def assert_carapace_mode(rep, where):
    """The payload must have seen /chosen carapace,boot-count (mode detection)."""
    inits = rep.kind("INFO: init:")
    assert inits and all(", carapace," in l for l in inits), \
        f"{where}: guest did not detect Carapace\n" + "\n".join(rep.lines)


def run_hyp(vms, names, smp=2, expect=(), timeslice_us=None, timeout=HYP_TIMEOUT,
            icount=False):
    """run_carapace() plus a host time slice (--timeslice-us); a Run."""
    extra = ("--timeslice-us", str(timeslice_us)) if timeslice_us else ()
    return run_carapace(vms, smp=smp, expect=expect, names=names, extra=extra,
                        timeout=timeout, icount=icount)


def stats(run, vm):
    """The hypervisor's counters for @vm in @run (STATS_RE), as ints."""
    for line in run.hyp:
        m = STATS_RE.match(line)
        if m and m.group("vm") == vm:
            return {k: int(v) for k, v in m.groupdict().items() if k != "vm"}
    raise AssertionError(f"no counter line for vm {vm}\n{run.out}")
