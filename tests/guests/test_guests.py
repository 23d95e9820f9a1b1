# SPDX-License-Identifier: MIT
"""In-QEMU guest tests: each payload on bare QEMU + OpenSBI (the reference) and
under Carapace through tools/carapace-run, plus multi-VM scenarios.

A payload prints `PASS: t: what`, `FAIL: t: what (got X, want Y)`, `SKIP: ...`,
`INFO: ...` and finally `DONE: N passed, M failed`, then shuts down via SRST.
"""

import re

import pytest

from harness.report import check_report
from harness.runs import (EXIT_OK, EXIT_VM, assert_carapace_mode, assert_exit, run_carapace,
                          run_hyp, run_reference, stats, vm_spec)

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
    "mmio_sregs": None,
    "demo": "count=3 delay_us=1000",
    "spin": "spin_ms=300",
    "sleeper": "ticks=5 period_ms=20",
    "fp_isolation": "iters=2000",
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
                      "PASS: fwft: set misaligned_exc_deleg 0 succeeds"]),
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


# --- reference: bare QEMU + OpenSBI ---------------------------------------------------

@pytest.mark.reference
@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_reference(guests_built, name):
    rc, rep, out = run_reference(name, PAYLOADS[name])
    assert rc == 0, f"{name}: QEMU exit status {rc}\n{out}"
    check_report(rep, f"{name} (bare)", MARKERS.get(name, ([], []))[0])
    if name == "fault_oob":
        assert "BEFORE-OOB" in rep.lines, out


# --- Carapace, through the launcher ------------------------------------------------------

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
def test_fp_isolation(guests_built):
    """Three VMs on one hart, 100 us slices, each filling f0-f31 and fcsr
    with values of its own and reading them back after a spin: nobody sees
    another VM's FP state, and each loop is preempted many times."""
    markers = ("0x2a0f0000", "0x4b0f0000", "0x8c0f0000")
    vms = [vm_spec(n, "fp_isolation", 1, f"marker={m} iters=100000 min_gaps=50")
           for n, m in zip("abc", markers)]
    run = run_hyp(vms, list("abc"), smp=1, timeslice_us=100, timeout=120)
    assert_exit(run, EXIT_OK)
    for vm in "abc":
        assert_carapace_mode(run.guests[vm], f"vm {vm}")
        check_report(run.guests[vm], f"vm {vm}")


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


IPI_ROUNDS = 200


@pytest.mark.quick
@pytest.mark.parametrize("machine", ["aclint", "no-aclint", "aia"])
def test_ipis_to_a_vcpu_waiting_in_place(guests_built, machine):
    """sbi_ipi with rounds=: one vCPU sends IPI_ROUNDS IPIs to the other,
    asleep in WFI between them, with a hart each and nothing else to run.
    Each is delivered once, and each ends a wait that kept the sleeper
    loaded on its hart (the VM's `wfi ... in place` count: docs/
    architecture.md, "Waiting in place"). On the three host IPI paths: the
    SSWI store of the default machine, SBI through the firmware without it
    (--no-aclint), and the store to the target's S-level IMSIC file on the
    AIA machine (its external interrupt doing what the SSWI's SSIP does);
    the boot log says which ran. With --wfi-traps: without it the sleeper,
    with a hart to itself, sleeps in its own WFI (the test below)."""
    extra = {"aclint": ("--plic",), "no-aclint": ("--plic", "--no-aclint"),
             "aia": ("--aia",)}[machine]
    run = run_carapace([vm_spec("t", "sbi_ipi", 2, f"rounds={IPI_ROUNDS}")], names=["t"],
                       extra=extra + ("--wfi-traps",))
    assert_exit(run, EXIT_OK)
    check_report(run.guests["t"], "sbi_ipi rounds",
                 ["PASS: ipi: IPIs to a vCPU waiting in WFI, each delivered"])
    path = {"aclint": "host IPIs: ACLINT SSWI at 0x2f00000",
            "no-aclint": "host IPIs: SBI (no ACLINT SSWI or S-level IMSIC file for every hart",
            "aia": "host IPIs: IMSIC, identity 1 of each hart's S file (hart 0's at "
                   "0x28000000)"}[machine]
    assert any(path in line for line in run.hyp), run.out
    counts = stats(run, "t")
    assert counts["wfi_in_place"] >= IPI_ROUNDS, counts
    assert counts["wfi"] >= counts["wfi_in_place"], counts


@pytest.mark.quick
@pytest.mark.parametrize("machine", ["aclint", "aia"])
def test_ipis_to_a_vcpu_sleeping_in_its_own_wfi(guests_built, machine):
    """The same IPIs without --wfi-traps: two vCPUs on two harts fit, so
    after its first wait in place the sleeper's WFI no longer exits
    (hstatus.VTW=0): each IPI still delivered once, and the VM's WFI exits
    are a few, not one a round (sched_wfi_mode())."""
    extra = {"aclint": ("--plic",), "aia": ("--aia",)}[machine]
    run = run_carapace([vm_spec("t", "sbi_ipi", 2, f"rounds={IPI_ROUNDS}")], names=["t"],
                       extra=extra)
    assert_exit(run, EXIT_OK)
    check_report(run.guests["t"], "sbi_ipi rounds",
                 ["PASS: ipi: IPIs to a vCPU waiting in WFI, each delivered"])
    counts = stats(run, "t")
    assert counts["wfi"] < IPI_ROUNDS // 4, counts


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
