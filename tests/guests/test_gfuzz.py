# SPDX-License-Identifier: MIT
"""The guest-side fuzzer (issue 14, item 2): tests/guests/gfuzz.c, a seeded
stream of random SBI calls, CSR accesses, MMIO, instruction words and page
table changes from VS and VU, runs beside a victim VM
(tests/guests/gfuzz_victim.c: its own memory under a checksum, its timer
under watch). For each seed:

- the host never faults: no `carapace: PANIC` / hypervisor trap line, and
  carapace-run's exit status says every VM ended as expected;
- the victim stays clean: no FAIL line, and it goes on checking ("VICTIM:
  ok" lines) after the fuzzer has ended; then it is destroyed;
- the fuzzer either completed (its "GFUZZ: done" line and a clean
  shutdown) or was stopped by Carapace with a reason (the outcome line
  names it).

The quick tier runs a few short seeds (marker quick, about a minute in
all: 5 seeds of 60 000 operations). `make soak` runs test_gfuzz_soak (marker soak, never in `make test`):
seeds one after the other until GFUZZ_SOAK_OPS operations (default 10
million) ran, then writes the figures to build/soak/gfuzz.json and the
figures block of docs/soak.md."""

import json
import os
import re
import time

import pytest

from harness.hosts import Host
from harness.paths import ROOT

QUICK_SEEDS = [1, 2, 3, 4, 5]
QUICK_OPS = 60_000
FAULT_RE = re.compile(r"^carapace: (PANIC|.*hypervisor trap)")
DONE_RE = re.compile(r"GFUZZ: done seed=(\d+) ops=(\d+) sbi=(\d+) csr=(\d+) mmio=(\d+) "
                     r"insn=(\d+) pte=(\d+) filtered=(\d+) vs_runs=(\d+) vu_runs=(\d+) "
                     r"watchdogs=(\d+) ms=(\d+)")
END_RE = re.compile(r"^carapace: vm fuzz: (shut down|stopped|failed)")
PROGRESS_RE = re.compile(r"GFUZZ: progress ops=(\d+)")
SET_RE = re.compile(r"GFUZZ: (exceptions|interrupts|sbi errors \(negated\)): (.*)$")


class Pair(Host):
    """A carapace-run with the fuzzer (fuzz) and the victim (victim)."""

    def __init__(self, tmp_path, seed, ops, timeout):
        d = tmp_path / f"seed{seed}"
        d.mkdir(parents=True, exist_ok=True)
        vms = [f"name=fuzz,kernel=build/guests/gfuzz.bin,vcpus=2,mem=64M,"
               f"bootargs=seed={seed} ops={ops} progress=20000",
               "name=victim,kernel=build/guests/gfuzz_victim.bin,vcpus=1,mem=64M,"
               "bootargs=run_ms=0 mib=4 report_ms=500"]
        super().__init__(d, vms, ["--expect", "victim=destroyed"], timeout)

    def kill(self):
        """SIGTERM only (the launcher takes QEMU down with it); never KILL."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=90)


def vm_lines(h, vm):
    """@vm's console lines. QEMU writes a diagnostic for some CSR encodings
    to stderr, which shares the console pipe: a guest line may follow one on
    the same line, so the tag is looked for anywhere."""
    tag = f"[{vm}] "
    return [l[l.index(tag) + len(tag):] for l in h.snapshot() if tag in l]


def victim_ok(h):
    return len([l for l in vm_lines(h, "victim") if l.startswith("VICTIM: ok")])


def parse_set(text):
    return sorted(int(x) for x in text.split(",")) if text.strip() not in ("", "-") else []


def run_seed(tmp_path, seed, ops, timeout=600):
    """One seed with the victim beside it; returns what it found, after
    asserting the host and the victim came through."""
    h = Pair(tmp_path, seed, ops, timeout)
    try:
        end_line = h.wait_for(lambda l: END_RE.match(l), timeout)
        stats, _ = h.ctl("stats")
        by_vm = {v["name"]: v for v in stats["vms"]}
        # the victim goes on checking after the fuzzer is gone
        n, t_end = victim_ok(h), time.monotonic() + 60
        while victim_ok(h) < n + 2:
            assert time.monotonic() < t_end and h.proc.poll() is None, \
                f"seed {seed}: the victim stopped reporting\n" + "\n".join(h.snapshot()[-50:])
            time.sleep(0.2)
        h.ctl("destroy", "victim")
        code = h.finish(120)
    finally:
        h.kill()
    log = "\n".join(h.snapshot())
    faults = [l for l in h.snapshot() if FAULT_RE.match(l)]
    assert not faults, f"seed {seed}: the hypervisor faulted: {faults}\n{log[-6000:]}"
    victim = vm_lines(h, "victim")
    assert not [l for l in victim if l.startswith("FAIL")], f"seed {seed}: victim\n{log[-6000:]}"
    assert any(l.startswith("VICTIM: ok") for l in victim), log[-6000:]
    fuzz = vm_lines(h, "fuzz")
    done = next((m for l in fuzz if (m := DONE_RE.search(l))), None)
    stopped = end_line.startswith("carapace: vm fuzz: stopped")
    if done:
        assert end_line == "carapace: vm fuzz: shut down", f"seed {seed}: {end_line}\n{log[-6000:]}"
        assert code == 0, f"seed {seed}: exit {code}\n{log[-6000:]}"
        assert not [l for l in fuzz if l.startswith("FAIL")], log[-6000:]
        ran = int(done.group(2))
        assert ran == ops, done.group(0)
    else:
        # Carapace stopped it, saying why (a legitimate end: e.g. an access
        # outside its RAM and devices); nothing else may have gone wrong
        assert stopped and re.search(r"stopped: .*(cause|fault|vcpu)", end_line), \
            f"seed {seed}: the fuzzer neither finished nor was stopped with a reason: " \
            f"{end_line}\n{log[-6000:]}"
        assert code == 1, f"seed {seed}: exit {code}\n{log[-6000:]}"
        prog = [int(m.group(1)) for l in fuzz if (m := PROGRESS_RE.search(l))]
        ran = max(prog, default=0)
    sets = {m.group(1): parse_set(m.group(2)) for l in fuzz if (m := SET_RE.search(l))}
    fz = by_vm["fuzz"]
    return {
        "seed": seed, "ops": ran, "completed": bool(done), "end": end_line,
        "counts": dict(zip(("sbi", "csr", "mmio", "insn", "pte", "filtered", "vs_runs",
                            "vu_runs", "watchdogs", "ms"),
                           map(int, done.groups()[2:]))) if done else {},
        "guest_exceptions": sets.get("exceptions", []),
        "guest_interrupts": sets.get("interrupts", []),
        "sbi_errors": sorted(-e for e in sets.get("sbi errors (negated)", [])),
        "by_cause": {k: int(v) for k, v in fz.get("by_cause", {}).items()},
        "exits": fz["exits"], "host_faults": len(faults),
        "victim_ok_lines": len([l for l in victim if l.startswith("VICTIM: ok")]),
    }


@pytest.mark.quick
@pytest.mark.parametrize("seed", QUICK_SEEDS)
def test_gfuzz_quick(guests_built, tmp_path, seed):
    r = run_seed(tmp_path, seed, QUICK_OPS, timeout=240)
    print(json.dumps(r))
    if r["completed"]:
        # it reached the hypervisor in several ways
        assert len(r["by_cause"]) >= 3, r
        assert r["sbi_errors"], r


# --- make soak ---------------------------------------------------------------------------

SOAK_OPS = int(os.environ.get("GFUZZ_SOAK_OPS", 10_000_000))
SOAK_PER_SEED = int(os.environ.get("GFUZZ_SOAK_PER_SEED", 500_000))
SOAK_FIRST_SEED = int(os.environ.get("GFUZZ_SOAK_FIRST_SEED", 1000))
SOAK_MAX_S = float(os.environ.get("GFUZZ_SOAK_MAX_S", 0)) or None   # 0: no limit
SOAK_JSON = ROOT / "build" / "soak" / "gfuzz.json"
SOAK_DOC = ROOT / "docs" / "soak.md"
BEGIN, END = "<!-- gfuzz-figures-begin -->", "<!-- gfuzz-figures-end -->"


def summarize(runs, elapsed):
    causes, sbi, gexc = {}, set(), set()
    for r in runs:
        for k, v in r["by_cause"].items():
            causes[k] = causes.get(k, 0) + v
        sbi.update(r["sbi_errors"])
        gexc.update(r["guest_exceptions"])
    return {
        "seeds": len(runs), "first_seed": runs[0]["seed"], "last_seed": runs[-1]["seed"],
        "ops": sum(r["ops"] for r in runs),
        "completed": sum(r["completed"] for r in runs),
        "stopped": [(r["seed"], r["end"]) for r in runs if not r["completed"]],
        "exit_causes": dict(sorted(causes.items(), key=lambda kv: int(kv[0]))),
        "distinct_exit_causes": len(causes),
        "guest_trap_causes": sorted(gexc),
        "sbi_errors": sorted(sbi), "distinct_sbi_errors": len(sbi),
        "hypervisor_faults": sum(r["host_faults"] for r in runs),
        "victim_clean": all(r["victim_ok_lines"] for r in runs),
        "elapsed_s": round(elapsed), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def write_figures(s):
    SOAK_JSON.parent.mkdir(parents=True, exist_ok=True)
    SOAK_JSON.write_text(json.dumps(s, indent=1) + "\n")
    if not SOAK_DOC.is_file():
        return
    text = SOAK_DOC.read_text()
    if BEGIN not in text or END not in text:
        return
    causes = ", ".join(f"{k}: {v}" for k, v in s["exit_causes"].items())
    body = "\n".join([
        BEGIN,
        f"Last `make soak` guest-fuzzer run ({s['date']}, {s['elapsed_s']} s):",
        "",
        "| figure | value |",
        "|---|---|",
        f"| operations | {s['ops']:,} over {s['seeds']} seeds ({s['first_seed']}..{s['last_seed']}) |",
        f"| seeds that completed / stopped by Carapace | {s['completed']} / {len(s['stopped'])} |",
        f"| distinct exit causes (stats `by_cause`) | {s['distinct_exit_causes']}: {causes} |",
        f"| trap causes the fuzzer's own handler saw | {', '.join(map(str, s['guest_trap_causes']))} |",
        f"| distinct SBI errors (besides success) | {len([e for e in s['sbi_errors'] if e])}: "
        f"{', '.join(str(e) for e in s['sbi_errors'] if e)} |",
        f"| hypervisor faults | {s['hypervisor_faults']} |",
        f"| victim clean in every seed | {'yes' if s['victim_clean'] else 'NO'} |",
        END])
    text = text[:text.index(BEGIN)] + body + text[text.index(END) + len(END):]
    SOAK_DOC.write_text(text)


@pytest.mark.soak
def test_gfuzz_soak(guests_built, tmp_path):
    runs, t0, seed = [], time.monotonic(), SOAK_FIRST_SEED
    while sum(r["ops"] for r in runs) < SOAK_OPS:
        if SOAK_MAX_S and time.monotonic() - t0 > SOAK_MAX_S:
            break
        r = run_seed(tmp_path, seed, SOAK_PER_SEED, timeout=3600)
        runs.append(r)
        print(f"seed {seed}: {r['ops']} ops, {'done' if r['completed'] else r['end']}, "
              f"total {sum(x['ops'] for x in runs)}", flush=True)
        s = summarize(runs, time.monotonic() - t0)
        write_figures(s)        # after every seed: a cut-short soak still leaves its figures
        seed += 1
    s = summarize(runs, time.monotonic() - t0)
    write_figures(s)
    print(json.dumps(s, indent=1))
    assert s["hypervisor_faults"] == 0 and s["victim_clean"], s
