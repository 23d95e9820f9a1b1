# SPDX-License-Identifier: MIT
"""Our guest kernel (guest-linux-patches/build.sh: Debian's linux-source-7.2
plus our series) as a guest: the boot line that says whether user CFI is on
and why not, and the riscv_Thread_features lines of /proc/<pid>/status for
processes with CFI off, on and locked (tests/guest_kernel/cfistatus.c reads
them from outside the process); then the upstream riscv CFI kselftests
(built against nolibc by build.sh selftests). First on bare QEMU + OpenSBI,
then under Carapace. The kernel is built here if it is not cached (a cold build is a
few minutes on 2 cores); a failed build fails the tests."""

import re
import subprocess

import pytest

from harness.hosts import SnapHost
from harness.linux import (NO_CFI_CPU, OLD_OPENSBI, REQUIRED_FULL, check_cfi, check_moved,
                           mig_host, run_carapace, run_reference)
from harness.paths import CACHE, FIRMWARE, ROOT
from harness.ports import free_port

pytestmark = pytest.mark.linux

GK_INITRAMFS = ROOT / "build" / "guest-kernel" / "initramfs.cpio.gz"

BOOT_RE = re.compile(r"riscv: user CFI: shadow stack (.*?); landing pads (.*)$")
STATUS_RE = re.compile(r"cfistatus: (.+?): prctl (\S+) features=(\S+|\[.*?\]) locked=(\S+|\[.*?\])$")

# mode -> (prctl result, features, locked) on a kernel with user CFI on
STATUS_ON = {
    "off": ("ok", "[]", "[]"),
    "shstk": ("ok", "[shstk]", "[]"),
    "lpad": ("ok", "[lpad]", "[]"),
    "shstk+lpad": ("ok", "[shstk lpad]", "[]"),
    "shstk+lpad locked": ("ok", "[shstk lpad]", "[shstk lpad]"),
}
# ... and with user CFI off: every prctl fails with EINVAL, the lines stay
# there, empty
STATUS_OFF = {m: ("ok" if m == "off" else "failed(-22)", "[]", "[]") for m in STATUS_ON}

BOOT_ON = ("on", "on")
BOOT_NO_ISA = ("off, the ISA lacks Zicfiss", "off, the ISA lacks Zicfilp")


@pytest.fixture(scope="session")
def gk_initramfs():
    busybox = CACHE / "busybox" / "usr" / "bin" / "busybox"
    if not busybox.is_file():
        pytest.skip(f"busybox not found at {busybox}; run `make deps`")
    if not FIRMWARE.is_file():
        pytest.skip(f"OpenSBI firmware not found at {FIRMWARE}; run `make deps`")
    r = subprocess.run(["make", "-s", "-f", "tests/linux/linux.mk", "-f",
                        "tests/guest_kernel/guest_kernel.mk", "B=build", f"CACHE={CACHE}",
                        "guest-kernel-initramfs"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"building the initramfs failed:\n{r.stdout}\n{r.stderr}"
    return GK_INITRAMFS


def run_qemu(kernel, initrd, test, cpu=None, bios=FIRMWARE):
    """@kernel on bare QEMU + OpenSBI (harness.linux.run_reference()): its
    console lines and output."""
    rep, out = run_reference(initrd, test, cpu, kernel=kernel, bios=bios)
    return rep.lines, out


def boot_line(lines, out):
    found = [m.groups() for l in lines if (m := BOOT_RE.search(l))]
    assert len(found) == 1, f"expected one 'riscv: user CFI:' boot line, got {found}\n{out}"
    return found[0]


def statuses(lines, out):
    got = {m.group(1): m.group(2, 3, 4) for l in lines if (m := STATUS_RE.search(l))}
    assert any("cfistatus: done" in l for l in lines), f"cfistatus did not finish\n{out}"
    return got


def check_ours(lines, out):
    assert any(re.search(r"init: kernel \S+-carapace", l) for l in lines), \
        f"not our kernel (no -carapace release)\n{out}"


# --- the build ---------------------------------------------------------------------------

def test_guest_kernel_build(guest_kernel):
    d = guest_kernel.parent
    config = (d / "config").read_text()
    for opt in ("CONFIG_RISCV_USER_CFI=y", "CONFIG_SERIAL_8250_CONSOLE=y", "CONFIG_SIFIVE_PLIC=y",
                "CONFIG_BLK_DEV_INITRD=y", "CONFIG_VMGENID=y"):
        assert opt in config.splitlines(), f"{opt} missing from {d / 'config'}"
    head = guest_kernel.read_bytes()[:64]
    assert head[56:60] == b"RSC\x05", "not a RISC-V Linux Image"
    print(f"guest kernel {guest_kernel}: {guest_kernel.stat().st_size} bytes, built in "
          f"{(d / 'build-seconds').read_text().strip()} s with {(d / 'compiler').read_text().strip()}")


# --- bare QEMU + OpenSBI ---------------------------------------------------------------

def test_reference_status_cfi(guest_kernel, gk_initramfs):
    lines, out = run_qemu(guest_kernel, gk_initramfs, "status")
    check_ours(lines, out)
    assert boot_line(lines, out) == BOOT_ON, out
    assert statuses(lines, out) == STATUS_ON, out


def test_reference_status_debian_kernel(gk_initramfs):
    """The same checks on Debian's unpatched kernel see no status lines and no
    boot line: what the tests above look for comes from our patches."""
    debian = CACHE / "linux" / "Image"
    if not debian.is_file():
        pytest.skip(f"Debian's kernel not found at {debian}; run `make deps`")
    lines, out = run_qemu(debian, gk_initramfs, "status")
    assert not any(BOOT_RE.search(l) for l in lines), out
    got = statuses(lines, out)
    assert set(got) == set(STATUS_ON), out
    for mode, (res, feat, locked) in got.items():
        assert (res, feat, locked) == ("ok", "missing", "missing"), (mode, out)


def test_reference_status_no_cfi(guest_kernel, gk_initramfs):
    lines, out = run_qemu(guest_kernel, gk_initramfs, "status", NO_CFI_CPU)
    assert boot_line(lines, out) == BOOT_NO_ISA, out
    assert statuses(lines, out) == STATUS_OFF, out


def test_reference_nousercfi(guest_kernel, gk_initramfs):
    """riscv_nousercfi=bcfi on a CFI CPU: the boot line names the command line
    as the reason, and only the shadow stack is refused."""
    lines, out = run_qemu(guest_kernel, gk_initramfs, "status riscv_nousercfi=bcfi")
    assert boot_line(lines, out) == ("off, riscv_nousercfi=", "on"), out
    got = statuses(lines, out)
    assert got["shstk"] == ("failed(-22)", "[]", "[]"), out
    assert got["lpad"] == STATUS_ON["lpad"], out


def test_reference_fwft_refused(guest_kernel, gk_initramfs):
    """A CPU with Zicfiss under OpenSBI 1.5.1, which does not grant FWFT
    SHADOW_STACK: the kernel says the firmware refused it (a warning), and
    landing pads, which need no firmware help, stay on."""
    if not OLD_OPENSBI.is_file():
        pytest.skip(f"{OLD_OPENSBI} not installed")
    lines, out = run_qemu(guest_kernel, gk_initramfs, "status", bios=OLD_OPENSBI)
    ss, lp = boot_line(lines, out)
    assert re.fullmatch(r"off, (SBI FWFT refused SHADOW_STACK \(error -\d+\)|"
                        r"the SBI implementation lacks FWFT)", ss), out
    assert lp == "on", out
    got = statuses(lines, out)
    assert got["shstk"] == ("failed(-22)", "[]", "[]"), out
    assert got["lpad"] == STATUS_ON["lpad"], out


# --- under Carapace ----------------------------------------------------------------------

def spec(name, kernel, initrd, test, cfi=None):
    s = f"name={name},kernel={kernel},initrd={initrd},mem=256M,vcpus=2"
    if cfi:
        s += f",cfi={cfi}"
    return s + f",bootargs=console=ttyS0 carapace.test={test}"


def test_carapace_status(guest_kernel, gk_initramfs):
    """Two guests of our kernel at once, CFI policy trap and off: each says so
    at boot, and /proc/<pid>/status shows each process's CFI state."""
    code, out, reps = run_carapace([spec("on", guest_kernel, gk_initramfs, "status"),
                                    spec("off", guest_kernel, gk_initramfs, "status", "off")],
                                   ["on", "off"])
    on, off = reps["on"].lines, reps["off"].lines
    check_ours(on, out)
    assert boot_line(on, out) == BOOT_ON, out
    assert statuses(on, out) == STATUS_ON, out
    assert boot_line(off, out) == BOOT_NO_ISA, out
    assert statuses(off, out) == STATUS_OFF, out
    assert code == 0, f"launcher exit {code}\n{out}"


def test_carapace_cfitest(guest_kernel, gk_initramfs):
    """tests/linux's cfitest passes on our kernel as on Debian's."""
    code, out, reps = run_carapace([spec("cfi", guest_kernel, gk_initramfs, "cfi")], ["cfi"])
    check_cfi(reps["cfi"], "vm cfi (our kernel)", REQUIRED_FULL, out)
    assert code == 0, f"launcher exit {code}\n{out}"


# --- the upstream riscv CFI kselftests ---------------------------------------------------

NO_CFI_MOP_CPU = "rv64,h=true,sstc=true,zimop=true,zcmop=true"
KSELFTEST_ARGS = "proc_mem.force_override=always"   # the shadow-stack gup test writes /proc/self/mem
KSELFTEST_TESTS = ["shstk fork test", "map shadow stack syscall", "shadow stack gup tests",
                   "shadow stack signal tests", "memory protections of shadow stack memory"]


def kselftest(lines):
    """(bail-out message or None, ok names, not-ok names, exit code or None)"""
    bail = next((l[l.index("Bail out!"):] for l in lines if "Bail out!" in l), None)
    oks = [m.group(1) for l in lines if (m := re.match(r"ok \d+ (.*)$", l))]
    bad = [m.group(1) for l in lines if (m := re.match(r"not ok \d+ (.*)$", l))]
    code = next((int(m.group(1)) for l in lines
                 if (m := re.search(r"init: kselftest exit (\d+)", l))), None)
    return bail, oks, bad, code


def check_kselftest_pass(lines, where, out):
    bail, oks, bad, code = kselftest(lines)
    assert bail is None, f"{where}: {bail}\n{out}"
    assert any("Landing pad and shadow stack are enabled for binary" in l for l in lines), out
    assert any("cfi_ptrace_test, ptrace test succeeded" in l for l in lines), out
    assert not bad, f"{where}: failed: {bad}\n{out}"
    assert oks == KSELFTEST_TESTS, f"{where}: passed {oks}\n{out}"
    assert any("# Totals: pass:5 fail:0" in l for l in lines), out
    assert code == 0, f"{where}: exit {code}\n{out}"


def check_kselftest_no_cfi(lines, where, out):
    """CFI off: the shim's prctls fail, and the binary stops at its first check."""
    assert any("cfi_shim: PR_SET_SHADOW_STACK_STATUS(ENABLE) failed" in l for l in lines), out
    assert any("cfi_shim: PR_SET_CFI(BRANCH_LANDING_PADS, ENABLE) failed" in l for l in lines), out
    bail, oks, _, code = kselftest(lines)
    assert bail and "Get landing pad status failed" in bail, f"{where}: {bail}\n{out}"
    assert not oks and code not in (None, 0), f"{where}\n{out}"


def test_reference_kselftests(guest_kernel, gk_initramfs):
    """Bare QEMU + OpenSBI with Zicfilp/Zicfiss: every kselftest passes."""
    lines, out = run_qemu(guest_kernel, gk_initramfs, f"kselftest {KSELFTEST_ARGS}")
    check_kselftest_pass(lines, "bare QEMU", out)


def test_reference_kselftests_no_cfi(guest_kernel, gk_initramfs):
    """A CPU without Zicfilp/Zicfiss (with Zimop, which the CFI-built binary's
    shadow-stack instructions need to be harmless): the binary stops at once."""
    lines, out = run_qemu(guest_kernel, gk_initramfs, f"kselftest {KSELFTEST_ARGS}",
                          NO_CFI_MOP_CPU)
    check_kselftest_no_cfi(lines, "bare QEMU, no CFI", out)


def test_carapace_kselftests_delegate_off(guest_kernel, gk_initramfs):
    """Two guests at once, cfi=delegate and cfi=off. Delegate: every kselftest
    passes, as on bare QEMU. Off: no CFI, the binary stops at once."""
    test = f"kselftest {KSELFTEST_ARGS}"
    code, out, reps = run_carapace(
        [spec("deleg", guest_kernel, gk_initramfs, test, "delegate"),
         spec("off", guest_kernel, gk_initramfs, test, "off")], ["deleg", "off"])
    check_kselftest_pass(reps["deleg"].lines, "cfi=delegate", out)
    check_kselftest_no_cfi(reps["off"].lines, "cfi=off", out)
    assert code == 0, f"launcher exit {code}\n{out}"


def test_carapace_kselftests_trap_strict(guest_kernel, gk_initramfs):
    """Two guests at once, cfi=trap (the default) and cfi=strict, which both
    take landing-pad faults in the hypervisor: every kselftest passes, the
    ptrace check of the expected-landing-pad state after a user landing-pad
    fault included (issue 12 item 2: it bailed out there while the hypervisor
    injected the fault with SPELP=0; on QEMU 10.0.2 the hardware now delivers
    it, hyp/cfi/lp_redeliver.c)."""
    test = f"kselftest {KSELFTEST_ARGS}"
    code, out, reps = run_carapace(
        [spec("trap", guest_kernel, gk_initramfs, test, "trap"),
         spec("strict", guest_kernel, gk_initramfs, test, "strict")], ["trap", "strict"])
    assert code == 0, f"launcher exit {code}\n{out}"
    for name in ("trap", "strict"):
        check_kselftest_pass(reps[name].lines, f"cfi={name}", out)


# --- across a snapshot and a restore ---------------------------------------------------------

HOLD_RE = re.compile(r"cfistatus: round (\d+)/\d+ (.+?): pid (\d+) features=(\S+|\[.*?\]) "
                     r"locked=(\S+|\[.*?\])$")
HOLD_ROUNDS = 60


def hold_rounds(lines):
    """{round: {mode: (pid, features, locked)}}"""
    out = {}
    for l in lines:
        if m := HOLD_RE.search(l):
            out.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3, 4, 5)
    return out


def hold_spec(kernel, initrd, rounds):
    return (f"name=alpha,kernel={kernel},initrd={initrd},mem=256M,vcpus=2,"
            f"bootargs=console=ttyS0 carapace.test=status-hold carapace.rounds={rounds}")


def check_hold(before, after, rounds, out):
    """The rounds go on after the move from where they were, by the same
    processes (pids), each with its CFI state's lines."""
    assert before and after, out
    first = min(after)
    assert 5 <= first <= max(before) + 1, (sorted(before), sorted(after))
    assert sorted(after) == list(range(first, rounds + 1)), sorted(after)
    # the move can fall between two lines of one round: merge the halves
    merged = {r: dict(before.get(r, {})) for r in set(before) | set(after)}
    for r, modes in after.items():
        merged[r].update(modes)
    pids = {mode: v[0] for mode, v in merged[min(merged)].items()}
    for rnd, modes in sorted(merged.items()):
        assert set(modes) == set(STATUS_ON), (rnd, modes)
        for mode, (pid, feat, locked) in modes.items():
            assert pid == pids[mode], f"round {rnd} {mode}: pid {pid}, was {pids[mode]}\n{out}"
            assert (feat, locked) == STATUS_ON[mode][1:], f"round {rnd} {mode}\n{out}"


def test_snapshot_restore_keeps_status(guest_kernel, gk_initramfs, tmp_path):
    """A guest of our kernel holds one process per CFI state (off, shadow
    stack, landing pads, both, both locked); it is snapshotted in the middle
    and restored into a fresh QEMU: the same processes go on, and their
    /proc/<pid>/status lines are what they were; the kernel reseeds its RNG
    (vmgenid, as the cover letter says)."""
    class TermSnapHost(SnapHost):
        def kill(self):
            """SIGTERM only (the launcher takes QEMU down with it)."""
            if self.proc.poll() is None:
                self.proc.terminate()
                self.proc.wait(timeout=90)

    path = tmp_path / "alpha.snap"
    srcdir = tmp_path / "src"
    srcdir.mkdir()
    src = TermSnapHost(srcdir, [hold_spec(guest_kernel, gk_initramfs, HOLD_ROUNDS)],
                       timeout=300)
    try:
        src.wait_for(lambda l: l.startswith("[alpha] cfistatus: round 5/"), 120)
        rep, _, _ = src.ctl("snapshot", "alpha", str(path))
        assert rep["ok"], rep
        src.ctl("destroy", "alpha")
    finally:
        src.kill()
    before = hold_rounds(src.guest("alpha"))
    assert before, "\n".join(src.snapshot())

    code, out, reps = run_carapace([], ["alpha"], extra=[
        "--stream-socket", str(tmp_path / "ds.sock"), "--restore", str(path),
        "--expect", "alpha=shutdown"])
    assert code == 0, out
    after_lines = reps["alpha"].lines
    after = hold_rounds(after_lines)
    assert after, out
    check_hold(before, after, HOLD_ROUNDS, out)
    assert "init: cfistatus exit 0" in after_lines, out
    # nothing of ours needed for the restore itself: the stock vmgenid driver
    # saw the new VM generation ID and reseeded the RNG
    assert any("crng reseeded due to virtual machine fork" in l for l in after_lines), out


MIG_HOLD_ROUNDS = 150   # 30 s: a move of a 256 MiB guest fits in it


def test_migration_keeps_status(guest_kernel, gk_initramfs, tmp_path, tls_creds):
    """The same processes moved live to a fresh host (carapace-ctl migrate
    to a `carapace-run --incoming` host, over TLS): on the destination they
    go on with the same /proc/<pid>/status CFI lines."""
    port = free_port()
    a = b = None
    try:
        a = mig_host(tmp_path, "a", [hold_spec(guest_kernel, gk_initramfs, MIG_HOLD_ROUNDS)],
                     creds=tls_creds.main)
        a.wait_for(lambda l: l.startswith("[alpha] cfistatus: round 5/"), 120)
        b = mig_host(tmp_path, "b", incoming=port, extra=["--expect", "alpha=shutdown"],
                     creds=tls_creds.main)
        m = a.migrate("alpha", port)
        check_moved(m, "a -> b")
        b.wait_for(lambda l: l.startswith("[alpha] init: cfistatus exit"), 120)
        code = b.finish(timeout=120)
    finally:
        for h in (b, a):
            if h:
                h.kill()
    out = "\n".join(a.snapshot() + ["--- b ---"] + b.snapshot())
    assert code == 0, out
    check_hold(hold_rounds(a.guest("alpha")), hold_rounds(b.guest("alpha")),
               MIG_HOLD_ROUNDS, out)
    assert "init: cfistatus exit 0" in b.guest("alpha"), out
