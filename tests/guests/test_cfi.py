# SPDX-License-Identifier: MIT
"""CFI payloads (tests/guests/cfi_*.c): each on bare QEMU + OpenSBI (the reference)
and under Carapace with the CFI policies where they make sense, checking that
the hypervisor's per-VM violation counters match what the guests observed.

Each payload prints `INFO: observed lp=N ss=M` (software-check faults its own
handler saw). The hypervisor prints, when a VM goes down:
`carapace: vm NAME: exits N, sbi calls N, wfi N (N in place), injected traps N, cfi violations: landing pad N, shadow stack N`.
Policy trap and strict (for U-mode faults): the counters equal the guest's
numbers. Policy delegate: the hardware delivers cause 18 to the guest, so the
counters stay 0 while the guest still sees every fault.
"""

import os
import re

import pytest

from harness.report import check_report, observed
from harness.runs import (EXIT_OK, assert_carapace_mode, assert_exit, run_hyp, run_reference,
                          stats, vm_spec)

# The conformant tier (docs/cfi.md §7.1): cfi_ss expects the spec's access
# fault where QEMU 10.0.2 lets SS instructions through (Q7).
CONFORMANT = os.environ.get("CARAPACE_CONFORMANT") == "1"
CFI_SS_ARGS = "q7=0" if CONFORMANT else None

ELP_N = 20000                   # jumps per loop in cfi_elp_preempt
ELP_SLICE_US = 20               # host time slice for the preemption runs
# Faults per pass whose handler may see SPELP=0: none on the conformant QEMU;
# on QEMU 10.0.2 an exit that lands in the handler before it reads sstatus
# (the host descheduled QEMU past the hypervisor's guard) clears it: seen at
# 1 in 20 000 on a loaded 2-core machine (docs/cfi.md §7.3)
ELP_SPELP_SLACK = 0 if CONFORMANT else ELP_N // 1000
ISO_SLICE_US = 100

# name -> (bootargs, harts) for the reference runs.
REFERENCE = {
    "cfi_fwft": (None, 2),
    "cfi_ss": (CFI_SS_ARGS, 1),
    "cfi_lp": (None, 1),
    "cfi_vu": (None, 1),
    "cfi_elp_preempt": (f"n={ELP_N}", 1),
    "cfi_elp_fetch": (None, 1),
    "cfi_isolation_a": ("role=1", 1),
    "cfi_isolation_b": ("role=2", 1),
}


def payload_of(name):
    return "cfi_isolation" if name.startswith("cfi_isolation") else name


@pytest.mark.reference
@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_cfi_reference(guests_built, name):
    bootargs, smp = REFERENCE[name]
    rc, rep, out = run_reference(payload_of(name), bootargs, smp=smp)
    assert rc == 0, f"{name}: QEMU exit status {rc}\n{out}"
    check_report(rep, f"{name} (bare)")
    observed(rep, name)


# --- Carapace ------------------------------------------------------------------------------

def cfi_spec(name, payload, vcpus=1, cfi=None, bootargs=None):
    spec = vm_spec(name, payload, vcpus)
    if cfi:
        spec += f",cfi={cfi}"
    return spec + (f",bootargs={bootargs}" if bootargs else "")


SELFTEST_RE = re.compile(r"carapace: CFI self-test: the guest's sstatus.SPELP "
                         r"(?P<exit>is overwritten by|survives) an exit and "
                         r"(?P<sret>is cleared by|survives) the sret back")


def delegate_exact(run):
    """What the hypervisor's boot self-test found: can delegate be exact here?"""
    hits = [SELFTEST_RE.match(l) for l in run.hyp]
    hits = [m for m in hits if m]
    assert hits, f"no CFI self-test line\n{run.out}"
    return hits[0].group("exit") == "survives" and hits[0].group("sret") == "survives"


def effective_policy(run, vm, policy):
    """The policy @vm runs under: delegate becomes trap, with a message, where
    the self-test found that an exit loses the guest's SPELP (issue 12 item 3)."""
    if policy != "delegate":
        return policy
    downgraded = any(l.startswith(f"carapace: vm {vm}: policy delegate would lose "
                                  "landing-pad checks") and "running under trap" in l
                     for l in run.hyp)
    assert downgraded == (not delegate_exact(run)), \
        f"vm {vm}: delegate downgraded={downgraded}, self-test exact={delegate_exact(run)}\n{run.out}"
    return "trap" if downgraded else "delegate"


def check_counters(run, vm, policy):
    """Counters vs. guest: equal under trap/strict, zero under delegate/off."""
    lp, ss = observed(run.guests[vm], f"vm {vm}")
    st = stats(run, vm)
    if effective_policy(run, vm, policy) in ("delegate", "off"):
        want = (0, 0)
    else:
        want = (lp, ss)
    assert (st["lp"], st["ss"]) == want, \
        f"vm {vm} ({policy}): hypervisor counted lp={st['lp']} ss={st['ss']}, " \
        f"guest observed lp={lp} ss={ss}, want counters {want}\n{run.out}"
    return lp, ss, st


def run_ok(payload, policy, bootargs=None, vcpus=1, smp=2, timeslice_us=None, icount=False):
    """One VM that must run to DONE with no FAIL; returns (run, lp, ss, stats)."""
    run = run_hyp([cfi_spec("t", payload, vcpus, policy, bootargs)], ["t"], smp=smp,
                  timeslice_us=timeslice_us, icount=icount)
    rep = run.guests["t"]
    assert_carapace_mode(rep, payload)
    assert_exit(run, EXIT_OK)
    check_report(rep, f"{payload} (carapace, cfi={policy})")
    lp, ss, st = check_counters(run, "t", policy)
    return run, lp, ss, st


@pytest.mark.quick
def test_cfi_selftest_measures_the_platform(guests_built):
    """Issue 12 item 3: the boot self-test runs a VS-mode probe and finds
    what the CPU does with a guest's SPELP. QEMU 10.0.2 loses it at an exit
    (Q4) and at the sret back (Q4/Q5), so a VM created with delegate runs
    under trap, and says so; the conformant QEMU (docs/cfi.md §7.1) keeps it
    both ways, and delegate stays delegate."""
    run = run_hyp([cfi_spec("t", "cfi_fwft", 2, "delegate")], ["t"])
    assert_exit(run, EXIT_OK)
    m = [SELFTEST_RE.match(l) for l in run.hyp]
    m = [x for x in m if x]
    assert m, f"no CFI self-test line\n{run.out}"
    want = ("survives", "survives") if CONFORMANT else ("is overwritten by", "is cleared by")
    assert (m[0].group("exit"), m[0].group("sret")) == want, f"{m[0].group(0)}\n{run.out}"
    assert effective_policy(run, "t", "delegate") == ("delegate" if CONFORMANT else "trap")


@pytest.mark.quick
@pytest.mark.parametrize("policy", ["trap", "delegate"])
def test_cfi_fwft(guests_built, policy):
    _, lp, ss, _ = run_ok("cfi_fwft", policy, vcpus=2)
    assert (lp, ss) == (0, 0)


@pytest.mark.quick
def test_cfi_fwft_cfi_off(guests_built):
    """A VM with cfi=off: both features NOT_SUPPORTED (-2)."""
    run_ok("cfi_fwft", "off", bootargs="cfi_off=1", vcpus=2)


@pytest.mark.quick
@pytest.mark.parametrize("policy", ["trap", "delegate"])
def test_cfi_ss(guests_built, policy):
    _, lp, ss, _ = run_ok("cfi_ss", policy, CFI_SS_ARGS)
    assert (lp, ss) == (0, 2), f"cfi_ss makes exactly two sspopchk mismatches, saw {lp}/{ss}"


@pytest.mark.quick
@pytest.mark.parametrize("policy", ["trap", "delegate"])
def test_cfi_lp(guests_built, policy):
    """VS landing-pad faults reach the handler with SPELP=1 (the payload checks
    it) under trap as on bare hardware (issue 12 item 2)."""
    run, lp, ss, _ = run_ok("cfi_lp", policy)
    # 5 faulting cases per suite run; a run whose SPELP an exit overwrote
    # (QEMU Q4) is repeated, up to 3 runs
    assert ss == 0 and lp in (5, 10, 15), f"cfi_lp: observed lp={lp} ss={ss}"
    reruns = sum("again" in l for l in run.guests["t"].lines)
    assert lp == 5 * (reruns + 1), f"cfi_lp: {lp} faults for {reruns} re-run(s)\n{run.out}"


@pytest.mark.quick
@pytest.mark.parametrize("policy", ["trap", "delegate", "strict"])
def test_cfi_elp_across_a_fetch_fault(guests_built, policy):
    """Issue 12 item 1: a jump to a target on the guest's own shadow-stack
    page (an instruction access fault) reaches the guest's handler with the
    jump's ELP in sstatus.SPELP, as on bare QEMU + OpenSBI, under every
    policy; it arrived with 0 when Carapace took the fault and re-injected it
    (access faults are now delegated, hedeleg)."""
    _, lp, ss, _ = run_ok("cfi_elp_fetch", policy)
    assert (lp, ss) == (0, 0), f"cfi_elp_fetch: observed lp={lp} ss={ss}"


@pytest.mark.quick
@pytest.mark.parametrize("policy", ["trap", "delegate", "strict"])
def test_cfi_vu(guests_built, policy):
    """VU faults: strict does not stop the VM for them (only VS violations);
    the handler of a VU landing-pad fault finds SPELP=1 under every policy."""
    _, lp, ss, _ = run_ok("cfi_vu", policy)
    assert ss == 1 and lp >= 1, f"cfi_vu: observed lp={lp} ss={ss}"


def check_strict_stop(run, vm, kind):
    """The VM stopped at the guest's first violation, and the stop message
    names the violation kind and the pc the guest printed beforehand."""
    rep = run.guests[vm]
    first = [re.search(r"first violation pc 0x([0-9a-f]+)", l) for l in rep.lines]
    first = [m for m in first if m]
    assert first, f"vm {vm}: no 'first violation pc' line\n{run.out}"
    pc = int(first[0].group(1), 16)
    assert not rep.kind("DONE: "), f"vm {vm} ran to the end under strict\n{run.out}"
    assert not rep.kind("FAIL: "), f"vm {vm}: failed checks before the stop\n{run.out}"
    stops = [l for l in run.hyp if l.startswith(f"carapace: vm {vm}: stopped:")]
    assert stops, f"no stop message for vm {vm}\n{run.out}"
    msg = stops[0]
    assert kind in msg, f"stop message does not name the {kind} violation: {msg}"
    assert "strict" in msg, f"stop message does not name the policy: {msg}"
    m = re.search(r"pc 0x([0-9a-f]+)", msg)
    assert m and int(m.group(1), 16) == pc, \
        f"stop message pc is not the violation at 0x{pc:x}: {msg}"
    st = stats(run, vm)
    want = (1, 0) if kind == "landing pad" else (0, 1)
    assert (st["lp"], st["ss"]) == want, f"counters {st}, want lp/ss {want}\n{run.out}"


@pytest.mark.quick
@pytest.mark.parametrize("payload,kind", [("cfi_lp", "landing pad"),
                                          ("cfi_ss", "shadow stack")])
def test_cfi_strict_stops_vm(guests_built, payload, kind):
    """Policy strict: a CFI violation in VS stops the VM (the launcher expects
    'stopped'); the hypervisor's message names the violation and its pc."""
    run = run_hyp([cfi_spec("t", payload, 1, "strict")], ["t"], expect=["t=stopped"])
    assert_carapace_mode(run.guests["t"], payload)
    assert_exit(run, EXIT_OK)
    check_strict_stop(run, "t", kind)


@pytest.mark.quick
@pytest.mark.parametrize("policy,passes", [("trap", 7), ("delegate", 7), ("strict", 5)])
def test_cfi_elp_preempt(guests_built, policy, passes):
    """N faulting indirect jumps per pass with the host preempting every
    20 us: none lost, none extra, each handler sees SPELP=1 (the payload
    checks it). Strict runs the U passes only (a VS fault would stop the VM).
    Pass T lets the guest's own timer in between jumps and targets. Under
    -icount: in host time, a QEMU descheduled by a loaded machine lands
    slice ends inside the re-delivery guard (QEMU 10.0.2's Q5, docs/cfi.md
    §7.3) as often as the load says (28-43 targets ran where the slack is
    20, on this machine beside other runs, at the commit before issue 26
    as well); in instruction time the preemption is the same on any
    machine."""
    run, lp, ss, st = run_ok("cfi_elp_preempt", policy,
                             f"n={ELP_N} pass={passes} spelp_slack={ELP_SPELP_SLACK}",
                             smp=1, timeslice_us=ELP_SLICE_US, icount=True)
    npass = bin(passes).count("1")
    # pass T may lose a few to QEMU 10.0.2's Q5 (the payload checks each ran
    # instead); the counters equal the guest's either way (run_ok)
    lost = npass * ELP_N - lp
    assert ss == 0 and 0 <= lost <= (ELP_SPELP_SLACK if passes & 4 else 0), \
        f"observed lp={lp} ss={ss}\n{run.out}"
    # exits that were neither SBI calls nor traps handed to the guest (every
    # counted violation here was injected): host timer interrupts, plus a
    # few first-touch RAM faults
    other = st["exits"] - st["sbi"] - st["inj"]
    print(f"cfi_elp_preempt ({policy}): {other} host exits besides SBI and injected traps")
    assert other >= 100, f"the loop was hardly preempted ({other} exits)\n{run.out}"
    if passes & 4:
        check_timer_between_jump_and_target(run, policy, st)


# Pass T's count of guest timer interrupts taken between a jump and its target.
DETOURS_RE = re.compile(r"pass T .*: the timer came between a jump and its target "
                        r"(\d+) times")


def check_timer_between_jump_and_target(run, policy, st):
    """Where the hypervisor hands each landing-pad fault over (trap, strict,
    and delegate on a CPU whose exits lose SPELP), the guest timer must come
    between some jump and its target: that is the path pass T exists for.
    Under delegate on a CPU that keeps SPELP the hardware delivers the fault
    and the count is luck of timing, as on bare QEMU: the faults must then
    not have gone through the hypervisor."""
    m = DETOURS_RE.search(run.out)
    assert m, f"pass T did not report its count\n{run.out}"
    via_hypervisor = not (policy == "delegate" and CONFORMANT)
    if via_hypervisor:
        assert int(m.group(1)) > 0, \
            f"{policy}: the timer never came between a jump and its target\n{run.out}"
    else:
        assert st["inj"] < ELP_N, \
            f"delegate: {st['inj']} traps injected, the faults went through the hypervisor"


@pytest.mark.quick
def test_cfi_isolation(guests_built):
    """Four VMs on one hart, 100 us slices: a and d with shadow stacks, each
    with its own ssp values and senvcfg (d: SSE without LPE); b with cfi=off;
    c with shadow stacks off. Nobody sees anybody else's ssp or senvcfg, and
    each loop is preempted many times."""
    vms = [cfi_spec("a", "cfi_isolation", 1, "trap", "role=1 iters=200000 min_gaps=50"),
           cfi_spec("b", "cfi_isolation", 1, "off", "role=2 cfi_off=1 iters=20000 min_gaps=50"),
           cfi_spec("c", "cfi_isolation", 1, "trap", "role=2 iters=20000 min_gaps=50"),
           cfi_spec("d", "cfi_isolation", 1, "trap",
                    "role=1 marker=0xd00d0000 lpe=0 iters=200000 min_gaps=50")]
    run = run_hyp(vms, ["a", "b", "c", "d"], smp=1, timeslice_us=ISO_SLICE_US, timeout=120)
    assert_exit(run, EXIT_OK)
    for vm in "abcd":
        assert_carapace_mode(run.guests[vm], f"vm {vm}")
        check_report(run.guests[vm], f"vm {vm}")
        assert observed(run.guests[vm], f"vm {vm}") == (0, 0)
        check_counters(run, vm, "trap")


@pytest.mark.quick
@pytest.mark.parametrize("policy", ["trap", "strict"])
def test_cfi_violation_inside_redelivery_window(guests_built, policy):
    """The guest kernel's landing-pad handler, entered through the hypervisor's
    re-delivery window, breaks its shadow stack and takes another trap before
    it returns (tests/guests/cfi_window_ss.c). The shadow-stack violation is
    still seen: counted under trap (lp 1, ss 1), the VM stopped under strict
    (a violation in VS). Only where the window exists (SPELP lost at sret)."""
    if policy == "trap":
        run, lp, ss, st = run_ok("cfi_window_ss", policy)
        assert (lp, ss) == (1, 1), run.out
        return
    run = run_hyp([cfi_spec("t", "cfi_window_ss", 1, policy)], ["t"], expect=["t=stopped"])
    assert_exit(run, EXIT_OK)
    rep = run.guests["t"]
    assert not rep.kind("DONE: "), f"the VM ran to the end under strict\n{run.out}"
    pc = int(re.search(r"first violation pc 0x([0-9a-f]+)", "\n".join(rep.lines)).group(1), 16)
    stops = [l for l in run.hyp if l.startswith("carapace: vm t: stopped:")]
    assert stops and "shadow stack" in stops[0] and "strict" in stops[0], run.out
    m = re.search(r"pc 0x([0-9a-f]+)", stops[0])
    assert m and int(m.group(1), 16) == pc, f"stop names pc {m and m.group(1)}, want 0x{pc:x}"
    st = stats(run, "t")
    assert (st["lp"], st["ss"]) == (1, 1), st
