# SPDX-License-Identifier: MIT
"""The malicious-guest suite (issue 14 item 1): tests/guests/attack.c attacks
the hypervisor while tests/guests/victim.c, a VM beside it, keeps checking
itself; under each CFI policy (trap, delegate, strict).

Each case is one entry of attack.c's table; CASES below says what a correct
hypervisor does with it: "returns" (the guest gets SBI error codes or faults
it checks itself, then runs on) or the hypervisor's "stopped:" reason for the
VM (the case ends its VM). Returning cases share one attacker VM (2 vCPUs);
each stopping case gets a VM of its own, beside the others in the same run.

Afterwards the harness checks the hypervisor: it still answers carapace-ctl
(list, stats, cfi, polled throughout the run), the victim's CFI state and
counters as the victim set them, every attacker VM finished or was stopped
with the expected reason, no PANIC, the launcher's outcome. The summary
`N attacks, 0 hypervisor faults, 0 effects on the victim` is printed per
policy and written to build/attacks-summary.txt.

Rerun: /usr/bin/python3 -m pytest tests/guests/test_attacks.py -v -s
(one to two minutes on 2 cores: marked quick).
"""

import re
import time

import pytest

from harness.hosts import Host
from harness.paths import ROOT

pytestmark = pytest.mark.quick

# attack.c's table, in order: name -> what a correct hypervisor does.
STOP = r"vcpu (\d+): access outside guest RAM that no device emulates \(cause {}: [A-Za-z/ -]+\)"
CASES = {
    "sbi_base_garbage": "returns",
    "sbi_eids": "returns",
    "sbi_time_garbage": "returns",
    "sbi_ipi_masks": "returns",
    "sbi_ipi_storm": "returns",
    "sbi_rfence_args": "returns",
    "sbi_rfence_storm": "returns",
    "sbi_hsm_args": "returns",
    "sbi_hsm_start_race": "returns",
    "sbi_hsm_suspend_race": "returns",
    "sbi_srst_garbage": "returns",
    "sbi_dbcn_ranges": "returns",
    "sbi_dbcn_flood": "returns",
    "uart_flood": "returns",
    "sbi_fwft_garbage": "returns",
    "sbi_fwft_lock_bypass": "returns",
    "sbi_pmu_garbage": "returns",
    "sbi_susp_garbage": "returns",
    "sbi_sta_garbage": "returns",
    "mmio_uart_sweep": "returns",
    "mmio_plic_sweep": "returns",
    "mmio_vmgenid_sweep": "returns",
    "mmio_misaligned": "returns",
    "mmio_amo_fp_h": "returns",
    "mmio_shadow_stack": "returns",
    "fetch_devices": "returns",
    "csr_hyp_from_vs": "returns",
    "csr_from_vu": "returns",
    "vu_ebreak_ecall_wfi": "returns",
    "semihosting_vs": "returns",
    "semihosting_vu": "returns",
    "ssp_senvcfg_vs": "returns",
    "pt_walk_through_device": "returns",
    "timer_wfi_storm": "returns",
    "sbi_dbcn_read_flood": "returns",
    "pt_race_fetch": "returns",
    # these end their VM: the stop reason the hypervisor must print
    "stop_load_hole": STOP.format(21),
    "stop_store_top_gpa": STOP.format(23),
    "stop_amo_hole": STOP.format(23),
    "stop_ssamoswap_hole": STOP.format(23),
    "stop_sspush_hole": STOP.format(23),
    "stop_fetch_hole": STOP.format(20),
    "stop_gap_after_uart": STOP.format(21),
    "stop_gap_after_vmgenid": STOP.format(23),
    "stop_pt_leaf_outside_ram": STOP.format(21),
    "stop_pt_table_outside_ram": STOP.format(21),
    "stop_hart1_fetch_hole": STOP.format(20),
}
NAMES = list(CASES)
RETURNING = [i for i, n in enumerate(NAMES) if CASES[n] == "returns"]
STOPPING = [i for i, n in enumerate(NAMES) if CASES[n] != "returns"]
assert RETURNING == list(range(len(RETURNING))), "returning cases first: one VM runs from= to="
VM_MAX = 8          # hyp/include/fdt_host.h HOST_MAX_VMS
POLICIES = ["trap", "delegate", "strict"]
SUMMARY = ROOT / "build" / "attacks-summary.txt"
SUMMARY_RE = r"(\d+) attacks, (\d+) hypervisor faults, (\d+) effects on the victim"


def spec(name, payload, vcpus, policy, mem, bootargs):
    return (f"name={name},kernel=build/guests/{payload}.bin,vcpus={vcpus},mem={mem},"
            f"cfi={policy},bootargs={bootargs}")


def batches():
    """Runs of at most VM_MAX VMs: the victim, the returning cases' VM, one VM
    per stopping case."""
    first = [("a", RETURNING)] + [(f"s{i}", [i]) for i in STOPPING[:VM_MAX - 2]]
    rest = STOPPING[VM_MAX - 2:]
    runs = [first]
    while rest:
        runs.append([(f"s{i}", [i]) for i in rest[:VM_MAX - 1]])
        rest = rest[VM_MAX - 1:]
    return runs


class Tally:
    def __init__(self):
        self.cases = 0
        self.hyp = []       # hypervisor faults, one line each
        self.victim = []    # effects on the victim

    def line(self):
        return (f"{self.cases} attacks, {len(self.hyp)} hypervisor faults, "
                f"{len(self.victim)} effects on the victim")


def attacker_lines(lines, idx):
    """The lines of case @idx (between its BEGIN and END) and whether it ended."""
    out, inside, ended = [], False, False
    for l in lines:
        if l.startswith(f"ATTACK-BEGIN: {idx} "):
            inside = True
            continue
        if l.startswith(f"ATTACK-END: {idx} "):
            ended = True
            break
        if inside:
            out.append(l)
    return out, inside, ended


def run_batch(tmp_path, guests, policy, vms, tally, log, victim_args=""):
    victim = spec("victim", "victim", 1, policy, "64M",
                  "period_ms=10 round_ms=200 late_ms=500" + victim_args)
    specs = [victim]
    for name, idxs in vms:
        bootargs = f"from={idxs[0]} to={idxs[-1]}"
        mem = "64M" if name == "a" else "16M"
        specs.append(spec(name, "attack", 2, policy, mem, bootargs))
    expect = ["--expect", "victim=destroyed"]
    for name, idxs in vms:
        expect += ["--expect", f"{name}={'shutdown' if name == 'a' else 'stopped'}"]
    sub = tmp_path / f"{policy}-{vms[0][0]}"
    sub.mkdir()
    h = Host(sub, specs, extra=expect, timeout=400)
    try:
        ready = h.wait_for(lambda l: l.startswith("[victim] VICTIM-READY:"), 60)
        m = re.search(r"ssp=(0x[0-9a-f]+) senvcfg=(0x[0-9a-f]+) ss=(\d)", ready)
        want_ssp, want_senvcfg, want_ss = int(m.group(1), 16), int(m.group(2), 16), m.group(3) == "1"
        names = [n for n, _ in vms]
        polls = 0
        end = time.monotonic() + 300
        stats0 = None
        while time.monotonic() < end:
            listing, rc = h.ctl("list", check=False)
            st, rc2 = h.ctl("stats", "victim", check=False)
            cfi, rc3 = h.ctl("cfi", "victim", check=False)
            polls += 1
            if rc or rc2 or rc3 or not (listing and listing.get("ok")):
                tally.hyp.append(f"{policy}: carapace-ctl did not answer (list {rc}, stats {rc2}, cfi {rc3})")
                break
            if stats0 is None:
                stats0 = st["vms"][0]
            states = {v["name"]: v for v in listing["vms"]}
            if all(states[n]["state"] == "down" for n in names):
                break
            time.sleep(0.5)
        else:
            tally.hyp.append(f"{policy}: attacker VMs still running after 300 s: "
                             + ", ".join(f"{n}={states[n]['state']}" for n in names))
        # the victim must have run on after the last attack: two more rounds
        n_rounds = len([l for l in h.guest("victim") if l.startswith("VICTIM: round")])
        h.wait_for(lambda l: l.startswith("[victim] VICTIM: round ")
                   and int(l.split()[3]) >= n_rounds + 2, 30)
        listing, _ = h.ctl("list")
        states = {v["name"]: v for v in listing["vms"]}
        for name, idxs in vms:
            v = states[name]
            failed_want = name != "a"
            if v["state"] != "down" or v["failed"] != failed_want:
                tally.hyp.append(f"{policy}: vm {name}: {v['state']} failed={v['failed']}, "
                                 f"want down failed={failed_want}")
        cfi, _ = h.ctl("cfi", "victim")
        v0 = cfi["vcpus"][0]
        got = (v0["ss_enabled"], v0["ss_locked"], v0["ssp"], v0["senvcfg"], v0["lp_enabled"],
               cfi["violations_lp_total"], cfi["violations_ss_total"])
        want = (want_ss, want_ss, want_ssp, want_senvcfg, False, 0, 0)
        if got != want:
            tally.victim.append(f"{policy}: victim cfi state {got}, want {want}")
        st, _ = h.ctl("stats", "victim")
        s1 = st["vms"][0]
        if not (s1["exits"] > stats0["exits"] and s1["sw_check"] == 0):
            tally.victim.append(f"{policy}: victim stats {s1} (first {stats0})")
        log.append(f"{policy}: {polls} management polls answered during the attacks")
        h.ctl("destroy", "victim")
        code = h.finish(timeout=120)
    finally:
        h.kill()
    out = h.snapshot()
    text = "\n".join(out)
    why = next((re.match(r"==== exit \d+: (.*) ====", l).group(1) for l in out
                if re.match(r"==== exit \d+: ", l)), "")
    if code != 0:
        tally.hyp.append(f"{policy}: launcher exit {code}: {why}")
    for l in out:
        if "PANIC" in l or "SEMIHOST-LEAK" in l:
            tally.hyp.append(f"{policy}: {l}")
    # the victim: every round clean, no FAIL
    rounds = [l for l in h.guest("victim") if l.startswith("VICTIM: round")]
    last = rounds[-1] if rounds else ""
    m = re.search(r"mem_bad (\d+) cfi_bad (\d+) timer_bad (\d+)", last)
    if not m or m.groups() != ("0", "0", "0"):
        tally.victim.append(f"{policy}: victim's last round: {last!r}")
    for l in h.guest("victim"):
        if l.startswith("FAIL"):
            tally.victim.append(f"{policy}: victim: {l}")
    # each attacker VM, each case
    for name, idxs in vms:
        lines = h.guest(name)
        stops = [l for l in out if l.startswith(f"carapace: vm {name}: stopped:")]
        for i in idxs:
            tally.cases += 1
            case, began, ended = attacker_lines(lines, i)
            begin = [l for l in lines if l.startswith(f"ATTACK-BEGIN: {i} ")]
            if not began or begin[0].split()[2] != NAMES[i]:
                tally.hyp.append(f"{policy}: case {i} {NAMES[i]}: not run (table out of step?) {begin}")
                continue
            fails = [l for l in case if l.startswith("FAIL")]
            for f in fails:
                tally.hyp.append(f"{policy}: {NAMES[i]}: {f}")
            want = CASES[NAMES[i]]
            if want == "returns":
                if not ended:
                    tally.hyp.append(f"{policy}: {NAMES[i]}: did not return (stops: {stops})")
            else:
                if ended or not stops or not re.search(want, stops[0]):
                    tally.hyp.append(f"{policy}: {NAMES[i]}: want stopped /{want}/, "
                                     f"got ended={ended} {stops}")
        if name == "a":
            done = [l for l in lines if l.startswith("DONE:")]
            if not done or not done[0].endswith(" 0 failed"):
                tally.hyp.append(f"{policy}: vm a: {done}")
    return text


@pytest.mark.parametrize("policy", POLICIES)
def test_attacks(guests_built, tmp_path, capsys, policy):
    tally, log, texts = Tally(), [], []
    for vms in batches():
        texts.append(run_batch(tmp_path, guests_built, policy, vms, tally, log))
    line = tally.line()
    with capsys.disabled():     # shown even when pytest captures output
        print(f"\n{policy}: {line}")
        for l in log:
            print(l)
    SUMMARY.parent.mkdir(exist_ok=True)
    old = SUMMARY.read_text().splitlines() if SUMMARY.is_file() else []
    keep = [l for l in old if not l.startswith(f"{policy}: ")]
    SUMMARY.write_text("\n".join(sorted(keep + [f"{policy}: {line}"])) + "\n")
    detail = "\n".join(tally.hyp + tally.victim)
    assert tally.cases == len(CASES), f"{tally.cases} of {len(CASES)} cases ran\n{detail}"
    assert line == f"{len(CASES)} attacks, 0 hypervisor faults, 0 effects on the victim", \
        f"{policy}: {line}\n{detail}\n--- consoles ---\n" + "\n\n".join(t[-20000:] for t in texts)


def test_victim_check_detects_corruption(guests_built, tmp_path):
    """Negative control: a victim whose buffer changes (it flips a bit itself
    in round 1) is counted as an effect on the victim, with one short case
    beside it, and the summary line then is not the clean one. Round 1: the
    harness waits for two rounds after the attackers are down, which a case
    this short may leave before the victim's round 1 ends (with round 3 the
    control missed the flip in about 1 run of 4)."""
    tally, log = Tally(), []
    run_batch(tmp_path, guests_built, "trap", [("a", [NAMES.index("sbi_base_garbage")])],
              tally, log, victim_args=" corrupt_round=1")
    assert tally.cases == 1 and not tally.hyp, tally.hyp
    assert tally.victim, "the harness did not notice the victim's changed memory"
    assert any("buffer checksum" in v for v in tally.victim), tally.victim
    assert tally.line().endswith(f"{len(tally.victim)} effects on the victim")
