# SPDX-License-Identifier: MIT
"""Linux soak (issue 14, item 5): N Linux CFI guests (default 4) on two
Carapace hosts for a while (default 30 minutes), each running the
initramfs's CFI tests in a loop (cfitest --rounds with dirty memory: every
round its own shadow stack, 1000 balanced calls, a corrupted return caught
as SIGSEGV/SEGV_CPERR, the landing-pad checks, its dirty pages and guest
time checked), while the harness pauses and resumes them, takes live
snapshots (checked with carapace-snap verify) and live-migrates them between
the two hosts, round-robin, one operation every LINUX_SOAK_INTERVAL_S.

It checks: 0 failures (no FAIL line anywhere, every operation answered ok,
every guest goes on with its rounds after each operation), 0 lost guests
(each listed running on exactly one host at the end, its rounds gap-free
and without repeats across its moves), the counters consistent (on each
guest's last host, the CFI violations `carapace-ctl cfi` counted since it
arrived are the ones its rounds caused there: one shadow-stack and two
landing-pad violations a round, no others; `stats` sw_check exits at least
those), and no hypervisor fault line on either host.

Never in `make test` (marker soak only): `make soak` or `make soak-linux`.
Parameters (environment): LINUX_SOAK_MINUTES (default 30), LINUX_SOAK_GUESTS
(default 4), LINUX_SOAK_INTERVAL_S (default 20). The figures go to
build/soak/linux.json."""

import json
import os
import random
import re
import subprocess
import time

import pytest

from harness.linux import DIRTY_CHECK, CfiReport, mig_host, rounds_of, rounds_spec, wait_round
from harness.paths import ROOT, SNAP
from harness.ports import free_port

pytestmark = pytest.mark.soak

MINUTES = float(os.environ.get("LINUX_SOAK_MINUTES", 30))
GUESTS = int(os.environ.get("LINUX_SOAK_GUESTS", 4))
INTERVAL_S = float(os.environ.get("LINUX_SOAK_INTERVAL_S", 20))
ROUNDS = 1_000_000          # more than any soak reaches: the loop never ends by itself
FAULT_RE = re.compile(r"^carapace: (PANIC|.*hypervisor trap)")
OUT = ROOT / "build" / "soak" / "linux.json"


def names():
    return [f"g{i}" for i in range(GUESTS)]


def stay_lines(h, vm):
    """@vm's console lines on host @h since it last arrived there (or since
    it was created there)."""
    lines = h.snapshot()
    start = 0
    for i, l in enumerate(lines):
        if l.startswith(f"carapace: vm {vm}: incoming migration: "):
            start = i
    return [l[len(vm) + 3:] for l in lines[start:] if l.startswith(f"[{vm}] ")]


def latest_round(hosts, vm):
    return max([r for h in hosts for r in rounds_of(h.guest(vm))], default=0)


def wait_progress(hosts, vm, after, timeout=240):
    """@vm prints a round later than @after (on whichever host it is)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if latest_round(hosts, vm) > after:
            return
        time.sleep(0.5)
    pytest.fail(f"{vm} made no progress past round {after} in {timeout} s\n"
                + "\n".join(h.console() for h in hosts))


def test_linux_soak(initramfs, tmp_path, tls_creds):
    vms = names()
    # room on each host for every guest (they may all end up on one)
    spare = f"{256 * GUESTS}M"
    timeout = int(MINUTES * 60 + 1200)
    a = mig_host(tmp_path, "a", [rounds_spec(v, ROUNDS, "carapace.dirty=4") for v in vms],
                 extra=["--spare-mem", spare], timeout=timeout, creds=tls_creds.main)
    b = mig_host(tmp_path, "b", [], extra=["--spare-mem", spare], timeout=timeout,
                 creds=tls_creds.main)
    hosts = [a, b]
    where = {v: a for v in vms}
    ops = {"pause": 0, "snapshot": 0, "migrate": 0}
    log = []
    rng = random.Random(14)
    try:
        t_boot = time.monotonic()
        for v in vms:
            wait_round(a, v, 2, 900)
        boot_s = time.monotonic() - t_boot
        t0 = time.monotonic()
        end = t0 + MINUTES * 60
        kinds = ["migrate", "pause", "snapshot"]
        i = 0
        while time.monotonic() < end:
            time.sleep(min(INTERVAL_S, max(0, end - time.monotonic())))
            if time.monotonic() >= end:
                break
            vm = rng.choice(vms)
            kind = kinds[i % len(kinds)]
            i += 1
            h = where[vm]
            before = latest_round(hosts, vm)
            t = time.monotonic()
            if kind == "pause":
                r = h.ctl("pause", vm)[0]
                assert r["ok"] and r["state"] == "paused", r
                # lines the guest wrote before the pause may still be on their
                # way through the host console and the launcher's pipe
                time.sleep(0.5)
                at = rounds_of(h.guest(vm))
                time.sleep(2)
                assert rounds_of(h.guest(vm)) == at, f"{vm} ran while paused"
                r = h.ctl("resume", vm)[0]
                assert r["ok"] and r["state"] == "running", r
            elif kind == "snapshot":
                path = tmp_path / f"{vm}-{i}.snap"
                r = h.ctl("snapshot", vm, str(path), "--live")[0]
                assert r["ok"] and r["live"], r
                v = subprocess.run([str(SNAP), "verify", str(path)], capture_output=True,
                                   text=True, timeout=300)
                assert v.returncode == 0, f"carapace-snap verify {path}: {v.stdout}{v.stderr}"
                path.unlink()
            else:
                dst = b if h is a else a
                port = free_port()
                inc = dst.incoming(port)
                m = h.migrate(vm, port, "--max-rounds", "6")
                d = inc.finish()
                assert m.rc == 0 and m.reply and m.reply["ok"], f"{vm} {h.tag}->{dst.tag}: {m.text()}"
                assert d.rc == 0 and d.reply and d.reply["vm"] == vm, d.text()
                where[vm] = dst
            ops[kind] += 1
            took = time.monotonic() - t
            wait_progress(hosts, vm, before)
            log.append({"t": round(time.monotonic() - t0), "op": kind, "vm": vm,
                        "host": where[vm].tag, "s": round(took, 1)})
            print(f"{log[-1]}", flush=True)
        soak_s = time.monotonic() - t0

        # --- the end: every guest where we think it is, still going -------------------
        listings = {h.tag: h.vms() for h in hosts}
        for v in vms:
            on = [tag for tag, lst in listings.items() if v in lst]
            assert on == [where[v].tag], f"{v}: listed on {on}, want {where[v].tag}: {listings}"
            assert listings[where[v].tag][v] == "running", listings
        results = {}
        for v in vms:
            h = where[v]
            last = latest_round(hosts, v)
            wait_progress(hosts, v, last)
            cfi = h.ctl("cfi", v)[0]
            stats = {s["name"]: s for s in h.ctl("stats", v)[0]["vms"]}[v]
            here = stay_lines(h, v)
            results[v] = {"host": h.tag, "cfi": cfi, "stats": stats, "here": here}
        # stop: the guests are destroyed, the hosts (persist) are ended
        for v in vms:
            where[v].ctl("destroy", v)
    finally:
        for h in hosts:
            h.kill()
        OUT.parent.mkdir(parents=True, exist_ok=True)
        for h in hosts:     # the whole consoles, for a look after a failure
            (OUT.parent / f"linux-host-{h.tag}.log").write_text("\n".join(h.snapshot()) + "\n")
        (OUT.parent / "linux-ops.json").write_text(json.dumps(log, indent=1) + "\n")

    text = "\n".join(l for h in hosts for l in h.snapshot())
    faults = [l for h in hosts for l in h.snapshot() if FAULT_RE.match(l)]
    assert not faults, faults
    summary = {"minutes": MINUTES, "soak_s": round(soak_s), "boot_s": round(boot_s),
               "guests": GUESTS, "ops": ops, "per_guest": {}}
    for v in vms:
        lines = a.guest(v) + b.guest(v)
        rep = CfiReport(lines)
        fails = rep.results("FAIL")
        assert not fails, f"{v}: FAIL lines: {fails}\n" + "\n".join(
            l for l in lines if l.startswith("FAIL") or "cfitest: round" in l)[-3000:]
        got = sorted(r for h in hosts for r in rounds_of(h.guest(v)))
        assert len(got) == len(set(got)), f"{v}: a round ran twice: {got}"
        migrations = len([e for e in log if e["vm"] == v and e["op"] == "migrate"])
        missing = sorted(set(range(1, got[-1] + 1)) - set(got))
        # a line torn by a move (printed half on each host) can hide one round
        assert len(missing) <= migrations, f"{v}: rounds missing {missing}"
        assert rep.results("PASS").count(DIRTY_CHECK) >= len(got) - migrations, v
        res = results[v]
        cfi, st = res["cfi"], res["stats"]
        assert cfi["shadow_stacks"] and cfi["landing_pads"] and cfi["policy"] == "trap", cfi
        assert all(x["ss_enabled"] and x["ss_locked"] for x in cfi["vcpus"]
                   if x["hsm"] != "stopped"), cfi
        n = len(rounds_of(res["here"]))
        ss, lp = cfi["violations_ss_total"], cfi["violations_lp_total"]
        # each round: one corrupted return, two landing-pad violations; the
        # round in flight at the arrival and at the reading may be half-counted
        assert n - 2 <= ss <= n + 2, f"{v} on {res['host']}: {ss} ss violations, {n} rounds"
        assert 2 * (n - 2) <= lp <= 2 * (n + 2), f"{v} on {res['host']}: {lp} lp, {n} rounds"
        assert st["sw_check"] >= ss, (st, cfi)
        summary["per_guest"][v] = {"rounds": got[-1], "host": res["host"], "migrations": migrations,
                                   "rounds_here": n, "violations_ss": ss, "violations_lp": lp,
                                   "sw_check_exits": st["sw_check"], "exits": st["exits"],
                                   "missing_rounds": missing}
    summary["failures"] = 0
    summary["lost_guests"] = 0
    summary["hypervisor_faults"] = 0
    summary["log"] = log
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "log"}, indent=1))
    assert ops["migrate"] and ops["pause"] and ops["snapshot"] or MINUTES < 1, ops
    del text
