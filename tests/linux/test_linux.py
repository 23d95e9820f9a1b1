# SPDX-License-Identifier: MIT
"""Linux-guest CFI tests: the Debian kernel + a busybox initramfs running
cfitest (tests/linux/cfitest.c), first on bare QEMU + OpenSBI (the reference:
it validates cfitest against the real kernel), then under Carapace.

cfitest prints `PASS|FAIL|SKIP: cfi: <check> (...)` and `DONE: N passed, M
failed`; the init script picks the mode from `carapace.test=` on the kernel
command line and powers off when it is done.
"""

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = pytest.mark.linux

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("CARAPACE_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "carapace")
FIRMWARE = CACHE / "fw_dynamic.bin"
KERNEL = CACHE / "linux" / "Image"
INITRAMFS = ROOT / "build" / "linux" / "initramfs.cpio.gz"
HYP = ROOT / "build" / "carapace.bin"
LAUNCHER = ROOT / "tools" / "carapace-run"

CFI_CPU = "rv64,h=true,zicfilp=true,zicfiss=true,zimop=true,zcmop=true,sstc=true,svadu=true"
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


def cpu_with_cfi():
    """The CPU model of the platform makefile (the one Carapace runs on)."""
    mk = ROOT / "platform" / "qemu-virt" / "platform.mk"
    if mk.is_file():
        m = re.search(r"^PLATFORM_QEMU_CPU\s*\??=\s*(\S+)", mk.read_text(), re.M)
        if m:
            return m.group(1)
    return CFI_CPU


@pytest.fixture(scope="session")
def initramfs():
    """Build cfitest and the initramfs once per session (cheap when current).
    The make fragment is used directly so this works whether or not the
    top-level Makefile includes it."""
    if not KERNEL.is_file():
        pytest.skip(f"guest kernel not found at {KERNEL}; run `make deps`")
    if not FIRMWARE.is_file():
        pytest.skip(f"OpenSBI firmware not found at {FIRMWARE}; run `make deps`")
    r = subprocess.run(["make", "-s", "-f", "tests/linux/linux.mk", "B=build",
                        f"CACHE={CACHE}", "linux-initramfs"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"building the initramfs failed:\n{r.stdout}\n{r.stderr}"
    return INITRAMFS


# --- reference: bare QEMU + OpenSBI ----------------------------------------------------

def run_reference(initrd, test, cpu):
    cmd = ["qemu-system-riscv64", "-machine", "virt", "-cpu", cpu, "-smp", "2",
           "-m", "512M", "-nographic", "-bios", str(FIRMWARE), "-kernel", str(KERNEL),
           "-initrd", str(initrd), "-append", f"console=ttyS0 carapace.test={test}"]
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=REF_TIMEOUT, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        pytest.fail(f"bare QEMU ({test}) timed out after {REF_TIMEOUT} s\n{out}")
    out = r.stdout.decode(errors="replace")
    assert r.returncode == 0, f"QEMU exit status {r.returncode}\n{out}"
    assert "init: started" in out, f"init never ran\n{out}"
    return CfiReport([l.rstrip("\r") for l in out.splitlines()]), out


def test_reference_cfi(initramfs):
    """(a) cfitest against the real kernel on a CFI-capable QEMU CPU."""
    rep, out = run_reference(initramfs, "cfi", cpu_with_cfi())
    check_cfi(rep, "bare QEMU, CFI", REQUIRED_FULL, out)


def test_reference_cfi_off(initramfs):
    """(d) the same kernel on a CPU without Zicfilp/Zicfiss: clean refusal."""
    rep, out = run_reference(initramfs, "cfi-off", NO_CFI_CPU)
    check_cfi(rep, "bare QEMU, no CFI", REQUIRED_OFF, out)


def test_reference_violate(initramfs):
    """The --violate mode the isolation tests rely on reports SEGV_CPERR."""
    rep, out = run_reference(initramfs, "violate", cpu_with_cfi())
    assert rep.has(VIOLATION_LINE), out


def test_reference_boot(initramfs):
    rep, out = run_reference(initramfs, "boot", cpu_with_cfi())
    assert rep.has("init: boot ok"), out


# --- Carapace, through the launcher ----------------------------------------------------

def vm_spec(name, test, cfi=None, mem="256M", vcpus=2):
    spec = f"name={name},kernel={KERNEL},initrd={INITRAMFS},mem={mem},vcpus={vcpus}"
    if cfi:
        spec += f",cfi={cfi}"
    return spec + f",bootargs=console=ttyS0 carapace.test={test}"   # bootargs= goes last


def run_carapace(vms, names, smp=2, extra=()):
    """Batch-run the launcher; returns (exit code, output, {name: CfiReport})."""
    if not HYP.is_file():
        pytest.skip("build/carapace.bin not built yet")
    if not LAUNCHER.is_file():
        pytest.skip("tools/carapace-run not there yet")
    cmd = [str(LAUNCHER), "--batch", "--timeout", str(HYP_TIMEOUT), "--smp", str(smp),
           "--ctl-socket", f"/tmp/carapace-linux-{os.getpid()}-{time.monotonic_ns()}.sock", *extra]
    for v in vms:
        cmd += ["--vm", v]
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=HYP_TIMEOUT + 60, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"launcher hung past its own timeout\n{e.stdout}")
    reps = {n: CfiReport() for n in names}
    # Only the live console: the summary after it repeats guest lines, indented.
    live = r.stdout.split("\n==== carapace-run summary ====")[0]
    for line in live.splitlines():
        m = re.match(r"^\[([a-z0-9_-]+)\] (.*)$", line.rstrip("\r"))
        if m and m.group(1) in reps:
            reps[m.group(1)].lines.append(m.group(2))
    return r.returncode, r.stdout + r.stderr, reps


def test_carapace_two_cfi_guests(initramfs):
    """(b) two Linux guests at once, both with CFI: all checks pass in both."""
    code, out, reps = run_carapace([vm_spec("a", "cfi"), vm_spec("b", "cfi")], ["a", "b"])
    for name in ("a", "b"):
        check_cfi(reps[name], f"vm {name}", REQUIRED_FULL, out)
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

OLD_OPENSBI = Path("/usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin")   # 1.5.1


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
