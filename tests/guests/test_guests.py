# SPDX-License-Identifier: MIT
"""In-QEMU guest tests: each payload on bare QEMU + OpenSBI (the reference) and
under Carapace through tools/carapace-run, plus multi-VM scenarios.

A payload prints `PASS: t: what`, `FAIL: t: what (got X, want Y)`, `SKIP: ...`,
`INFO: ...` and finally `DONE: N passed, M failed`, then shuts down via SRST.
"""

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUESTS = ROOT / "build" / "guests"
HYP = ROOT / "build" / "carapace.bin"
LAUNCHER = ROOT / "tools" / "carapace-run"
CACHE = Path(os.environ.get("CARAPACE_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "carapace")
FIRMWARE = CACHE / "fw_dynamic.bin"
# The QEMU of the bare reference runs; tools/carapace-run honours the same variable.
QEMU = os.environ.get("CARAPACE_QEMU") or "qemu-system-riscv64"
DEFAULT_CPU = "rv64,h=true,zicfilp=true,zicfiss=true,zimop=true,zcmop=true,sstc=true,svadu=true,smstateen=true"

REF_TIMEOUT = 60        # seconds for one bare-QEMU run
HYP_TIMEOUT = 60        # the launcher's --timeout
EXIT_OK, EXIT_VM = 0, 1

# name -> bootargs for the single-VM runs (short variants of the knobs).
PAYLOADS = {
    "sbi_base": None,
    "sbi_dbcn": None,
    "sbi_fwft": None,
    "sbi_time": None,
    "sbi_ipi": None,
    "sbi_rfence": None,
    "sbi_hsm": None,
    "sbi_sta": None,
    "sbi_srst": None,
    "sbi_susp": None,
    "sbi_pmu": None,
    "fault_csr": None,
    "fault_oob": None,
    "demo": "count=3 delay_us=1000",
    "spin": "spin_ms=300",
    "sleeper": "ticks=5 period_ms=20",
}

# Lines a payload must print besides its PASS lines: (all modes, Carapace only).
MARKERS = {
    # both vCPUs reported their steal (alone: a hart each, near zero)
    "sbi_sta": ([], ["PASS: sta: vcpu 0: a hart of its own, steal stays near 0 (us)",
                     "PASS: sta: vcpu 1: a hart of its own, steal stays near 0 (us)"]),
    "sbi_dbcn": (["BYTE-LINE: dbcn write_byte ok"], []),
    # the CPU has Svadu: Carapace offers PTE_AD_HW_UPDATING, and it works
    "sbi_fwft": ([], ["PASS: fwft: set pte_ad_hw_updating 1",
                      "PASS: fwft: A/D updating on: the hardware set A",
                      "PASS: fwft: set misaligned_exc_deleg 0 is DENIED"]),
    # both suspends came back (bare OpenSBI has no SUSP: only the probe there)
    "sbi_susp": ([], ["PASS: susp: suspend to RAM: woke at the timer, not before",
                      "PASS: susp: type (1 << 32) | 0: woke at the timer, not before",
                      "PASS: susp: suspend while another hart is STARTED"]),
    # Carapace's firmware events are counted where it does the work
    "sbi_pmu": ([], ["PASS: pmu: fw illegal_insn counted 3 events",
                     "PASS: pmu: a released cycle counter does not advance",
                     "PASS: pmu: fw sfence_vma_sent counted 2 events",
                     "PASS: pmu: event_get_info with a reserved event_idx bit"]),
    # the last shutdown gives an SBI-implementation-specific reason (test_carapace)
    "sbi_srst": ([], ["PASS: srst: cold reboot came back with boot-count 1",
                      "PASS: srst: warm reboot came back with boot-count 2",
                      "INFO: srst: boot 2: shutdown with reason 0xe0000000"]),
}


def qemu_cpu():
    """The CPU model every run uses, from the platform makefile if it is there."""
    mk = ROOT / "platform" / "qemu-virt" / "platform.mk"
    if mk.is_file():
        m = re.search(r"^PLATFORM_QEMU_CPU\s*\??=\s*(\S+)", mk.read_text(), re.M)
        if m:
            return m.group(1)
    return DEFAULT_CPU


@dataclass
class Report:
    """The result lines of one guest (one VM, or the whole bare-QEMU console)."""
    lines: list = field(default_factory=list)

    def kind(self, prefix):
        return [l for l in self.lines if l.startswith(prefix)]

    def done(self):
        """(passed, failed) from the DONE line, or None."""
        for l in self.kind("DONE: "):
            m = re.match(r"DONE: (\d+) passed, (\d+) failed", l)
            if m:
                return int(m.group(1)), int(m.group(2))
        return None

    def last_boot(self):
        """Lines of the last boot (a rebooting payload prints its checks per boot)."""
        starts = [i for i, l in enumerate(self.lines) if l.startswith("INFO: init:")]
        return self.lines[starts[-1]:] if starts else self.lines


def check_report(rep, where, markers=()):
    """Fail on any FAIL line, a missing or bad DONE line, or a missing marker."""
    text = "\n".join(rep.lines)
    fails = rep.kind("FAIL: ")
    assert not fails, f"{where}: failed checks:\n" + "\n".join(fails) + f"\n--- log ---\n{text}"
    done = rep.done()
    assert done is not None, f"{where}: no DONE line\n--- log ---\n{text}"
    passes = [l for l in rep.last_boot() if l.startswith("PASS: ")]
    assert done == (len(passes), 0), \
        f"{where}: DONE says {done}, log has {len(passes)} PASS lines\n--- log ---\n{text}"
    assert passes, f"{where}: no PASS lines\n--- log ---\n{text}"
    for m in markers:
        assert m in rep.lines, f"{where}: missing line '{m}'\n--- log ---\n{text}"


@pytest.fixture(scope="session")
def guests_built():
    """Build the payloads once (cheap when they are up to date)."""
    r = subprocess.run(["make", "-s", "guests"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"make guests failed:\n{r.stdout}\n{r.stderr}"
    return GUESTS


# --- reference: bare QEMU + OpenSBI ---------------------------------------------------

def run_reference(name, bootargs=None, smp=2):
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


@pytest.mark.reference
@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_reference(guests_built, name):
    rc, rep, out = run_reference(name, PAYLOADS[name])
    assert rc == 0, f"{name}: QEMU exit status {rc}\n{out}"
    check_report(rep, f"{name} (bare)", MARKERS.get(name, ([], []))[0])
    if name == "fault_oob":
        assert "BEFORE-OOB" in rep.lines, out


# --- Carapace, through the launcher ------------------------------------------------------

@dataclass
class Run:
    code: int
    out: str
    guests: dict        # VM name -> Report
    order: list         # (VM name, text) in console order
    hyp: list           # "carapace: ..." lines


def vm_spec(name, payload, vcpus=2, bootargs=None):
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


def index_of(run, vm, pred):
    for i, (name, text) in enumerate(run.order):
        if name == vm and pred(text):
            return i
    raise AssertionError(f"vm {vm}: no matching line\n{run.out}")


def last_index_of(run, vm, pred):
    hits = [i for i, (name, text) in enumerate(run.order) if name == vm and pred(text)]
    assert hits, f"vm {vm}: no matching line\n{run.out}"
    return hits[-1]


def is_done(text):
    return text.startswith("DONE: ")


def is_hello(text):
    return text.startswith("hello from ")


def check_oob_stop(run, vm):
    """The VM printed BEFORE-OOB and nothing more, and the hypervisor's stop
    message names the VM, the vCPU, the store's pc and the cause."""
    rep = run.guests[vm]
    assert "BEFORE-OOB" in rep.lines, run.out
    after = rep.lines[rep.lines.index("BEFORE-OOB") + 1:]
    assert not after, f"vm {vm} ran on after the bad store: {after}\n{run.out}"
    m = next((re.search(r"store pc 0x([0-9a-f]+)", l) for l in rep.lines
              if l.startswith("INFO: fault_oob: store pc")), None)
    assert m, run.out
    pc = m.group(1).lstrip("0")
    stops = [l for l in run.hyp if l.startswith(f"carapace: vm {vm}: stopped:")]
    assert stops, f"no stop message for vm {vm}\n{run.out}"
    msg = stops[0].lower()
    assert "vcpu" in msg, f"stop message does not name the vCPU: {stops[0]}"
    assert re.search(rf"0x0*{pc}\b|\b0*{pc}\b", msg), \
        f"stop message does not name the pc 0x{pc}: {stops[0]}"
    assert re.search(r"cause|fault|store|access", msg), \
        f"stop message does not name the cause: {stops[0]}"


@pytest.mark.quick
@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_carapace(guests_built, name):
    run = run_carapace([vm_spec("t", name, 2, PAYLOADS[name])], names=["t"])
    rep = run.guests["t"]
    assert_carapace_mode(rep, name)
    if name == "fault_oob":
        assert_exit(run, EXIT_VM)
        check_oob_stop(run, "t")
        return
    assert_exit(run, EXIT_OK)
    common, carapace_only = MARKERS.get(name, ([], []))
    check_report(rep, f"{name} (carapace)", common + carapace_only)
    if name == "sbi_srst":
        # reason 0xE0000000 (SBI implementation specific) is taken as reason 0:
        # a plain shutdown, not "failed" (SYSFAIL) and not refused (the VM
        # would hang until the timeout)
        assert "carapace: vm t: shut down" in run.hyp, \
            f"sbi_srst: the VM did not end as a plain shutdown\n{run.out}"


@pytest.mark.quick
def test_two_vms_interleave(guests_built):
    """Two VMs printing at once: both finish and their lines interleave."""
    args = "count=10 delay_us=20000"
    run = run_carapace([vm_spec("a", "demo", 2, args), vm_spec("b", "demo", 1, args)],
                       names=["a", "b"])
    assert_exit(run, EXIT_OK)
    for vm in "ab":
        check_report(run.guests[vm], f"vm {vm}")
    first_a, last_a = index_of(run, "a", is_hello), last_index_of(run, "a", is_hello)
    first_b, last_b = index_of(run, "b", is_hello), last_index_of(run, "b", is_hello)
    assert first_a < last_b and first_b < last_a, \
        f"lines of a and b do not interleave\n{run.out}"


@pytest.mark.quick
def test_one_vm_shuts_down_other_runs_on(guests_built):
    """A VM that shuts down early does not take the other one with it."""
    run = run_carapace([vm_spec("short", "demo", 1, "count=2 delay_us=1000"),
                        vm_spec("long", "demo", 1, "count=20 delay_us=50000")],
                       names=["short", "long"])
    assert_exit(run, EXIT_OK)
    for vm in ("short", "long"):
        check_report(run.guests[vm], f"vm {vm}")
    short_done = index_of(run, "short", is_done)
    assert short_done < index_of(run, "long", is_done), run.out
    assert last_index_of(run, "long", is_hello) > short_done, \
        f"vm long printed nothing after vm short shut down\n{run.out}"


@pytest.mark.quick
def test_spinner_does_not_block(guests_built):
    """One host hart: a VM spinning with interrupts off for 3 s does not keep
    the other VM from running to its end first."""
    run = run_carapace([vm_spec("spin", "spin", 1, "spin_ms=3000"),
                        vm_spec("work", "demo", 1, "count=5 delay_us=10000")],
                       smp=1, names=["spin", "work"])
    assert_exit(run, EXIT_OK)
    for vm in ("spin", "work"):
        check_report(run.guests[vm], f"vm {vm}")
    assert index_of(run, "work", is_done) < index_of(run, "spin", is_done), \
        f"vm work finished only after the spinner\n{run.out}"


@pytest.mark.quick
def test_oob_vm_stopped_other_finishes(guests_built):
    """A VM storing outside its RAM is stopped; the other VM finishes."""
    run = run_carapace([vm_spec("bad", "fault_oob", 1),
                        vm_spec("good", "demo", 1, "count=5 delay_us=20000")],
                       expect=["bad=stopped"], names=["bad", "good"])
    assert_exit(run, EXIT_OK)
    check_oob_stop(run, "bad")
    check_report(run.guests["good"], "vm good")


@pytest.mark.quick
def test_wfi_gives_hart_away(guests_built):
    """One host hart: while a sleeper VM waits in WFI, a spinning VM gets the
    hart. If WFI held the hart until the timer, the spinner would lose about
    half of its time; it checks itself that it lost at most 25%. Under
    -icount, so a busy host machine cannot steal time from it."""
    run = run_carapace([vm_spec("sleep", "sleeper", 1, "ticks=20 period_ms=100"),
                        vm_spec("work", "spin", 1, "spin_ms=2000 max_stolen_pct=25")],
                       smp=1, names=["sleep", "work"], icount=True)
    assert_exit(run, EXIT_OK)
    for vm in ("sleep", "work"):
        check_report(run.guests[vm], f"vm {vm}")


@pytest.mark.quick
def test_wfi_check_detects_polling(guests_built):
    """Negative control for the test above: a sleeper that polls instead of
    WFI holds the hart, and the spinner must notice (FAIL, VM failed)."""
    run = run_carapace([vm_spec("sleep", "sleeper", 1, "ticks=20 period_ms=100 poll=1"),
                        vm_spec("work", "spin", 1, "spin_ms=2000 max_stolen_pct=25")],
                       smp=1, expect=["work=failed"], names=["sleep", "work"], icount=True)
    assert_exit(run, EXIT_OK)
    fails = run.guests["work"].kind("FAIL: spin: share of time taken away")
    assert fails, f"the spinner did not notice losing the hart\n{run.out}"


@pytest.mark.quick
def test_sta_steal_when_sharing_a_hart(guests_built):
    """SBI STA: one host hart for this VM's two spinning vCPUs and a spinning
    VM: each vCPU's record shows steal growing (>= 25% of the time, in fact
    about 2/3) in agreement with the time the guest saw taken away, and WFI is
    not counted. The single-VM run (PAYLOADS) is the other half: a hart per
    vCPU, steal stays near zero. Under -icount, so a busy host machine cannot
    take time that no hypervisor sees."""
    run = run_carapace([vm_spec("sta", "sbi_sta", 2, "shared=1"),
                        vm_spec("busy", "spin", 1, "spin_ms=4000")],
                       smp=1, names=["sta", "busy"], icount=True)
    assert_exit(run, EXIT_OK)
    check_report(run.guests["sta"], "vm sta", [
        "PASS: sta: vcpu 0: sharing a hart, steal grew by >= 25% (us)",
        "PASS: sta: vcpu 1: sharing a hart, steal grew by >= 25% (us)",
        "PASS: sta: WFI: steal grew by at most 10% of the sleep (us)",
        "PASS: sta: disabled: the record was not written"])
    check_report(run.guests["busy"], "vm busy")
    assert index_of(run, "sta", is_done) < index_of(run, "busy", is_done), \
        f"the busy VM stopped spinning before the STA checks ended\n{run.out}"
