# SPDX-License-Identifier: MIT
"""Linux guests (the Linux tier, tests/linux and tests/guest_kernel): the
Debian kernel with a busybox initramfs running cfitest (tests/linux/cfitest.c),
whose `PASS|FAIL|SKIP: cfi: <check> (...)` lines CfiReport reads; runs on
bare QEMU + OpenSBI and under carapace-run --batch to their end; cfitest
--rounds (one long-lived CFI process); and the migration hosts for Linux
guests (harness.migration's MigHost with the Linux timeouts)."""

import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.migration import MigHost
from harness.paths import CACHE, FIRMWARE, ROOT
from harness.runs import live_console, reference_cmd, run_batch, run_to_end

KERNEL = CACHE / "linux" / "Image"
INITRAMFS = ROOT / "build" / "linux" / "initramfs.cpio.gz"
GK_BUILD = ROOT / "guest-linux-patches" / "build.sh"     # our guest kernel
GK_BUILD_TIMEOUT = 3600     # a cold build: sid root + kernel, on 2 cores
OLD_OPENSBI = Path("/usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin")   # 1.5.1

NO_CFI_CPU = "rv64,h=true,sstc=true"    # no Zicfilp/Zicfiss (and no Zimop)
REF_TIMEOUT = 120       # seconds for one bare-QEMU boot
HYP_TIMEOUT = 300       # the launcher's --timeout for Linux guests

# Checks that must PASS in each mode: a check that silently stops being run
# (or is renamed) should fail the test, not shrink the PASS count unnoticed.
REQUIRED_FULL = [
    "detect: /proc/cpuinfo isa has zicfilp and zicfiss",
    "detect: riscv_hwprobe reports ZICFILP and ZICFISS",
    "shadow stack: ssrdp reads 0 before enable",
    "shadow stack: PR_SET_SHADOW_STACK_STATUS(ENABLE) succeeds",
    "shadow stack: PR_GET_SHADOW_STACK_STATUS reports ENABLE",
    "shadow stack: ssrdp non-zero after enable",
    "shadow stack: 64 nested balanced calls",
    "shadow stack: 20000 nested balanced calls across shadow-stack pages",
    "shadow stack: corrupted return address -> SIGSEGV/SEGV_CPERR",
    "shadow stack: plain store to shadow-stack page -> SIGSEGV/SEGV_ACCERR",
    "shadow stack: ssamoswap to shadow-stack page works",
    "landing pads: PR_SET_CFI(BRANCH_LANDING_PADS, ENABLE) succeeds",
    "landing pads: PR_GET_CFI reports ENABLE",
    "landing pads: indirect call to an lpad target works",
    "landing pads: indirect call to a non-lpad target -> SIGSEGV/SEGV_CPERR",
    "landing pads: lpad label mismatch -> SIGSEGV/SEGV_CPERR",
    "fork with shadow stack: child inherits it, balanced calls work",
    "fork with shadow stack: parent balanced calls work after fork",
    "signal with shadow stack: handler runs, balanced calls inside work",
    "signal with shadow stack: ssp restored by sigreturn",
    "signal with shadow stack: balanced calls after handler returns",
]
REQUIRED_OFF = [
    "off: /proc/cpuinfo isa lacks zicfilp and zicfiss",
    "off: riscv_hwprobe does not report ZICFILP and ZICFISS",
    "off: PR_GET_SHADOW_STACK_STATUS fails",
    "off: PR_SET_SHADOW_STACK_STATUS(ENABLE) fails",
    "off: PR_GET_CFI(BRANCH_LANDING_PADS) fails",
    "off: PR_SET_CFI(BRANCH_LANDING_PADS, ENABLE) fails",
    "off: map_shadow_stack fails",
    "off: ssrdp is inert",
]
VIOLATION_LINE = "CFI-VIOLATION-DONE signal=11 code=10"   # SIGSEGV / SEGV_CPERR

# Not anchored: firmware or kernel messages can share a console line.
RESULT_RE = re.compile(r"(PASS|FAIL|SKIP): cfi: (.*?)(?: \((.*)\))?$")
DONE_RE = re.compile(r"DONE: (\d+) passed, (\d+) failed")


@dataclass
class CfiReport:
    """cfitest's output as seen on one guest's console."""
    lines: list = field(default_factory=list)

    def results(self, verdict):
        out = []
        for line in self.lines:
            m = RESULT_RE.search(line)
            if m and m.group(1) == verdict:
                out.append(m.group(2))
        return out

    def done(self):
        for line in self.lines:
            m = DONE_RE.search(line)
            if m:
                return int(m.group(1)), int(m.group(2))
        return None

    def has(self, text):
        return any(text in line for line in self.lines)


def check_cfi(rep, where, required, log):
    """No FAIL, a DONE line that agrees with the PASS lines, every required
    check passed."""
    fails = rep.results("FAIL")
    assert not fails, f"{where}: failed checks:\n  " + "\n  ".join(fails) + f"\n--- log ---\n{log}"
    done = rep.done()
    assert done is not None, f"{where}: no DONE line\n--- log ---\n{log}"
    passes = rep.results("PASS")
    assert done == (len(passes), 0), \
        f"{where}: DONE says {done}, log has {len(passes)} PASS lines\n--- log ---\n{log}"
    missing = [c for c in required if c not in passes]
    assert not missing, f"{where}: required checks did not pass:\n  " + \
        "\n  ".join(missing) + f"\n--- log ---\n{log}"


def build_initramfs(kernel=KERNEL):
    """Build cfitest and the initramfs (cheap when current); its path. The
    test boots it with @kernel (the Debian one unless given), which must be
    there. The make fragment is used directly so this works whether or not
    the top-level Makefile includes it."""
    if not Path(kernel).is_file():
        pytest.skip(f"guest kernel not found at {kernel}; run `make deps`")
    if not FIRMWARE.is_file():
        pytest.skip(f"OpenSBI firmware not found at {FIRMWARE}; run `make deps`")
    r = subprocess.run(["make", "-s", "-f", "tests/linux/linux.mk", "B=build",
                        f"CACHE={CACHE}", "linux-initramfs"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"building the initramfs failed:\n{r.stdout}\n{r.stderr}"
    return INITRAMFS


def build_guest_kernel():
    """Build (or find cached) our guest kernel's Image (guest-linux-patches);
    its path. The build failing is a failure."""
    try:
        r = subprocess.run([str(GK_BUILD), "kernel"], cwd=ROOT, capture_output=True, text=True,
                           timeout=GK_BUILD_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"guest kernel build took over {GK_BUILD_TIMEOUT} s\n{e.stderr}")
    assert r.returncode == 0, f"guest-linux-patches/build.sh kernel failed:\n{r.stderr[-6000:]}"
    image = Path(subprocess.run([str(GK_BUILD), "image-path"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip())
    assert image.is_file(), f"no Image at {image}\n{r.stderr}"
    return image


# --- reference: bare QEMU + OpenSBI ----------------------------------------------------

def reference_linux(initrd, test, kernel=KERNEL, mem="512M", **qemu):
    """The bare QEMU + OpenSBI command line of a Linux guest whose init runs
    @test (carapace.test=); @qemu: more of reference_cmd()'s parameters."""
    return reference_cmd(kernel, mem=mem, initrd=initrd,
                         append=f"console=ttyS0 carapace.test={test}", **qemu)


def run_reference(initrd, test, cpu=None, **qemu):
    """A Linux guest on bare QEMU + OpenSBI to its end; its init must have run:
    (CfiReport, output). @qemu: more of reference_linux()'s parameters."""
    code, out = run_to_end(reference_linux(initrd, test, cpu=cpu, **qemu), test, REF_TIMEOUT)
    assert code == 0, f"QEMU exit status {code}\n{out}"
    assert "init: started" in out, f"init never ran\n{out}"
    return CfiReport([l.rstrip("\r") for l in out.splitlines()]), out


# --- Carapace, through the launcher ----------------------------------------------------

def vm_spec(name, test, cfi=None, mem="256M", vcpus=2):
    spec = f"name={name},kernel={KERNEL},initrd={INITRAMFS},mem={mem},vcpus={vcpus}"
    if cfi:
        spec += f",cfi={cfi}"
    return spec + f",bootargs=console=ttyS0 carapace.test={test}"   # bootargs= goes last


def run_carapace(vms, names, smp=2, extra=(), timeout=HYP_TIMEOUT):
    """Batch-run the launcher (harness.runs.run_batch()); returns (exit code,
    output, {name: CfiReport}). @extra: more launcher options (--restore ...)."""
    r = run_batch(vms, smp, timeout, extra)
    reps = {n: CfiReport() for n in names}
    for name, line in live_console(r.stdout, names)[0]:
        reps[name].lines.append(line)
    return r.returncode, r.stdout + r.stderr, reps


# --- cfitest --rounds: one long-lived CFI process -------------------------------------

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

DIRTY_CHECK = "rounds: every dirty page holds the previous round's pattern"


def rounds_spec(name, rounds, extra=""):
    """A Linux CFI guest running cfitest --rounds (with @extra boot args)."""
    return (f"name={name},kernel={KERNEL},initrd={INITRAMFS},mem=256M,vcpus=2,"
            f"bootargs=console=ttyS0 quiet carapace.test=rounds carapace.rounds={rounds}"
            + (f" {extra}" if extra else ""))


def rounds_of(lines):
    """The round numbers cfitest --rounds printed in @lines."""
    return [int(m.group(1)) for l in lines if (m := ROUND_RE.search(l))]


def wait_round(h, vm, n, timeout):
    """Until @vm has printed its round @n (or a later one) on host @h."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if [r for r in rounds_of(h.guest(vm)) if r >= n]:
            return
        if h.proc.poll() is not None and not h.reader.is_alive():
            break
        time.sleep(0.1)
    pytest.fail(f"{vm} did not reach round {n}\n{h.console()}")


# --- live migration of Linux guests ---------------------------------------------------

RUN_TIMEOUT = 400       # each host's carapace-run --timeout
MIG_TIMEOUT = 180       # one carapace-ctl migrate / incoming, or any other command


def mig_host(tmp_path, tag, vms=(), timeout=RUN_TIMEOUT, **kw):
    """A MigHost for Linux guests, once its management channel is up: every
    carapace-ctl with --timeout 60 and at most MIG_TIMEOUT seconds; SIGTERM
    must stop it within 90 s (a host still running then is KILLed and the
    test fails)."""
    h = MigHost(tmp_path, tag, vms, timeout=timeout, ctl_timeout=MIG_TIMEOUT,
                reply_timeout=60, stop_grace=90, must_stop=True, **kw)
    return h.ready(30)


def check_moved(m, where):
    """A migration that went through, every phase reported."""
    assert m.rc == 0 and m.reply and m.reply["ok"] and m.reply["vm"] == "alpha", \
        f"{where}: {m.text()}"
    kinds = [e["event"] for e in m.events]
    for k in ("caps", "accept", "round", "stop-and-copy", "running", "done"):
        assert k in kinds, f"{where}: no {k} event: {m.text()}"
    assert not m.of("abort"), f"{where}: {m.text()}"
    assert m.reply["rounds"] >= 1 and m.reply["pages"] > 0, m.reply
    print(f"{where}: {m.reply['rounds']} pre-copy rounds, {m.reply['pages']} pages, "
          f"{m.reply['bytes']} bytes, {m.reply['total_us'] / 1e6:.1f} s, downtime "
          f"{m.reply['downtime_us']} + {m.reply.get('dest_downtime_us')} us")
