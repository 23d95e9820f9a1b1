# SPDX-License-Identifier: MIT
"""Live migration of a running Linux CFI guest between two Carapace hosts
(issue 10, item 5, the Linux part): two QEMUs on the loopback address, the
stream over TLS with a certificate on each side (the tls_creds fixture),
driven with tools/carapace-ctl migrate / incoming and tools/carapace-run
--incoming as a user would.

The guest runs one long-lived CFI process, cfitest --rounds --dirty: its own
shadow stack on, and every round a check that all of its dirty memory (a few
MiB it rewrites every round) still holds the previous round's pattern, 1000
balanced calls at the ssp of round 1, PR_GET_SHADOW_STACK_STATUS, a corrupted
return in a child caught as SIGSEGV/SEGV_CPERR, and the landing-pad checks.
A page the migration lost or left stale, a shadow stack that moved wrong, or
CFI that stopped trapping on the new host is a FAIL line there.

- (a) alpha moves mid-test to a fresh `carapace-run --incoming` host and
  goes on from its round with every check passing; beta, on the source,
  never stops; the source lists alpha no more;
- (b) ping-pong A -> B -> A -> B (`carapace-ctl incoming` on whichever host
  receives): the rounds go on across the hosts without a gap or a repeat;
- (c) a destination without Zicfilp/Zicfiss is refused before any memory
  moves (no-cfi, naming the protection the guest would lose); alpha runs on
  at the source and finishes;
- (d) moves cut by the relay in a pre-copy round and in the stop-and-copy:
  alpha runs on at the source each time (after a stop-and-copy cut that
  came once the source's END was out, the source keeps it paused,
  left-unconfirmed, and the test resumes it there, as an operator would:
  the destination never ran it), the destination discards its copy; then a
  move that goes through.
The other fault cases (every phase, by cut and by killing the destination's
QEMU) are tests/guests/test_migration.py's, with bare-metal guests; the
cuts after the destination ran the VM (both copies kept, marked) are
tests/guests/test_migration_end.py's."""

import re
import time

import pytest

from harness.linux import (DIRTY_CHECK, REQUIRED_ROUNDS, RUN_TIMEOUT, CfiReport, check_moved,
                           mig_host, rounds_of, rounds_spec, run_reference,
                           wait_round)
from harness.hosts import started_hosts
from harness.migration import check_cut_migration, check_left_unconfirmed
from harness.ports import free_port

pytestmark = pytest.mark.linux

NO_CFI_CPU = "rv64,h=true,sstc=true,svadu=true"     # no Zicfilp/Zicfiss
DIRTY_MIB = 8
TIME_CHECK = "rounds: guest time went on from the previous round"
TIME_STEP_RE = re.compile(r"PASS: cfi: rounds: guest time went on from the previous round "
                          r"\(round (\d+): \+(\d+) us monotonic")
MAX_TIME_STEP_S = 30    # between two rounds, a move's downtime included
# what must PASS on the destination, in rounds it ran there (the shadow
# stack was turned on before the rounds, on the first host)
REQUIRED_AFTER = [c for c in REQUIRED_ROUNDS if not c.startswith("rounds: shadow stack on")] \
    + [DIRTY_CHECK, TIME_CHECK]


def dirty_spec(name, rounds):
    return rounds_spec(name, rounds, f"carapace.dirty={DIRTY_MIB}")


@pytest.fixture
def hosts(tmp_path, initramfs, tls_creds):
    """Linux migration hosts (mig_host(), up once started): make(tag, vms,
    incoming=PORT, extra=...), TLS credentials: tls_creds' main set."""
    yield from started_hosts(mig_host, tmp_path, creds=tls_creds.main)


def check_cfi_on(h, where):
    """The hypervisor's view on host @h: alpha's CFI as the guest set it
    (shadow stacks and landing pads given, each running vCPU's shadow stack
    on and locked through FWFT)."""
    cfi, _ = h.ctl("cfi", "alpha")
    assert cfi["shadow_stacks"] and cfi["landing_pads"] and cfi["policy"] == "trap", \
        (where, cfi)
    assert all(v["ss_enabled"] and v["ss_locked"] for v in cfi["vcpus"]
               if v["hsm"] != "stopped"), (where, cfi)


def check_segment(lines, where, log):
    """alpha's lines on a host it came to: rounds there, every check of
    those rounds PASSed, none FAILed, and it did not start over."""
    rep = CfiReport(lines)
    assert not rep.results("FAIL"), f"{where}: FAIL lines\n{log}"
    assert not any("cfitest: mode=" in l or "init: started" in l for l in lines), \
        f"{where}: the guest started over\n{log}"
    assert rounds_of(lines), f"{where}: no rounds\n{log}"
    passed = set(rep.results("PASS"))
    missing = [c for c in REQUIRED_AFTER if c not in passed]
    assert not missing, f"{where}: did not PASS there: {missing}\n{log}"


def check_finished(lines, rounds, where, log, hops=1):
    """cfitest's end on the last host: DONE with nothing failed, exit 0,
    one dirty-memory check PASSed per round in all (@lines: every host's).
    A move can cut the console line being printed in two: the source shows
    the part it had when the guest paused (console_vm_flush()), the
    destination the rest. So at most one PASS line a hop may not be read
    whole; DONE's own count (nothing failed) covers the check itself."""
    rep = CfiReport(lines)
    assert not rep.results("FAIL"), f"{where}: FAIL lines\n{log}"
    done = rep.done()
    assert done and done[1] == 0, f"{where}: DONE {done}\n{log}"
    assert "init: cfitest exit 0" in lines, f"{where}\n{log}"
    dirty = rep.results("PASS").count(DIRTY_CHECK)
    assert rounds - hops <= dirty <= rounds, f"{where}: {dirty} dirty checks read\n{log}"
    # guest time never went back (that is a FAIL), nor jumped far ahead
    steps = {int(m.group(1)): int(m.group(2)) for l in lines if (m := TIME_STEP_RE.search(l))}
    assert sorted(steps) == list(range(1, rounds + 1)), f"{where}: {steps}\n{log}"
    assert max(steps.values()) < MAX_TIME_STEP_S * 10**6, f"{where}: {steps}\n{log}"
    return steps


VIOLATIONS_RE = re.compile(r"carapace: vm alpha: exits .*cfi violations: landing pad (\d+), "
                           r"shadow stack (\d+)")


def check_trapped_here(h, lines, where, log):
    """Host @h's own count of alpha's CFI violations (its line when alpha
    shut down there; counted from its arrival): the corrupted return and the
    two landing-pad violations of each round it ran there trapped into this
    hypervisor (policy trap) before the guest kernel saw them."""
    counts = [(int(m.group(1)), int(m.group(2))) for l in h.snapshot()
              if (m := VIOLATIONS_RE.match(l))]
    assert counts, f"{where}: no violation counts\n{log}"
    lp, ss = counts[-1]
    n = len(rounds_of(lines)) - 1     # the first may have begun before the move
    assert ss >= n and lp >= 2 * n, f"{where}: {lp} lp, {ss} ss for {n + 1} rounds\n{log}"


def stays(h):
    """alpha's stays on host @h, in order: for each, its console lines there,
    and the unfinished line the host printed when it let alpha go (its
    console keeps the line a guest is writing until its newline; a line the
    guest was in the middle of at the stop-and-copy comes out in two: its
    start here when the VM is destroyed, after "carapace: vm alpha:
    migrated (", and its rest as a line of its own on the destination)."""
    out, cur, present = [], None, False
    for line in h.snapshot():
        if line.startswith("carapace: vm alpha: incoming migration: "):
            cur, present = {"lines": [], "torn": []}, True
            out.append(cur)
        elif line.startswith("carapace: vm alpha: migrated ("):
            present = False
        elif line.startswith("[alpha] "):
            if cur is None:             # alpha was created here
                cur, present = {"lines": [], "torn": []}, True
                out.append(cur)
            cur["lines" if present else "torn"].append(line[len("[alpha] "):])
    return out


def life(*hosts_in_order):
    """alpha's life across hosts (each host once per stay, in the order it
    had alpha): [(host tag, lines of that stay)], a line torn by a move
    put back together (at the start of the stay it ended in)."""
    todo = {id(h): stays(h) for h in hosts_in_order}
    segs, torn = [], []
    for h in hosts_in_order:
        assert todo[id(h)], f"host {h.tag}: fewer stays of alpha than expected\n{h.console()}"
        st = todo[id(h)].pop(0)
        lines = list(st["lines"])
        assert len(torn) <= 1, torn
        if torn and lines:
            lines[0] = torn[0] + lines[0]
        segs.append((h.tag, lines))
        torn = st["torn"]
    assert not torn and not any(todo.values()), (torn, todo)
    return segs


# --- the dirtying rounds themselves, on bare QEMU ----------------------------------------

def test_reference_dirty_rounds_catch_a_stale_page(initramfs):
    """cfitest --rounds --dirty on bare QEMU + OpenSBI, told to put one page
    back to the previous round's pattern after round 2 (--dirty-stale 2):
    rounds 1, 2 and 4 find every page as written, round 3 FAILs naming the
    page; every other check of every round passes."""
    rep, out = run_reference(initramfs, "rounds carapace.rounds=4 carapace.dirty=2 "
                             "carapace.dirty_stale=2")
    assert "cfitest: mode=rounds 4 dirty 2 MiB" in out, out
    assert rounds_of(rep.lines) == [1, 2, 3, 4], out
    assert rep.results("FAIL") == [DIRTY_CHECK], out
    assert re.search(r"FAIL: cfi: rounds: every dirty page .*\(round 3: 1 of 512 pages bad, "
                     r"first page 256 word 0: ", out), out
    assert rep.results("PASS").count(DIRTY_CHECK) == 3, out
    missing = [c for c in REQUIRED_ROUNDS + ["rounds: dirty memory mapped", TIME_CHECK]
               if c not in rep.results("PASS")]
    assert not missing, (missing, out)
    assert rep.done() == (len(rep.results("PASS")), 1), out
    assert "init: cfitest exit 1" in rep.lines, out


# --- (a) to a fresh host ------------------------------------------------------------------

A_ROUNDS = 30
A_MIGRATE_AT = 5
B_ROUNDS = 40       # beta's: it should outlast alpha's move


def test_linux_cfi_guest_moves_to_fresh_host(hosts):
    """Two CFI guests on A; alpha (dirtying 8 MiB) moves at its round 5 to a
    fresh `carapace-run --incoming` host B, which runs until alpha shuts
    down there. alpha goes on from its round with every check passing (its
    dirty memory, its shadow stack at the ssp of round 1, a corrupted
    return and landing-pad violations still SIGSEGV/SEGV_CPERR, its guest
    time never went back); beta never stops; A lists alpha no more."""
    port = free_port()
    a = hosts("a", [dirty_spec("alpha", A_ROUNDS), rounds_spec("beta", B_ROUNDS)])
    wait_round(a, "alpha", A_MIGRATE_AT, 300)
    # B starts now: its clock is behind A's by A's run so far, so a move
    # that did not carry the guest's time over would set it back
    b = hosts("b", incoming=port, extra=["--expect", "alpha=shutdown"])
    check_cfi_on(a, "a")
    beta_before = rounds_of(a.guest("beta"))
    m = a.migrate("alpha", port)
    check_moved(m, "a -> b")
    listing = a.vms()
    beta_during = rounds_of(a.guest("beta"))
    assert "alpha" not in listing, a.console()
    assert listing == {"beta": "running"} or beta_during[-1:] == [B_ROUNDS], a.console()
    assert b.vms() == {"alpha": "running"}, b.console()
    check_cfi_on(b, "b")
    # beta ran on while alpha moved (rounds take well under a second; a
    # migration several)
    assert len(beta_during) >= len(beta_before) + 2 or beta_during[-1:] == [B_ROUNDS], \
        (beta_before, beta_during, m.text())

    code_b = b.finish(RUN_TIMEOUT)
    a.wait_for(lambda l: l == "carapace: vm beta: shut down", 120)
    log = a.console(300) + "\n" + b.console(300)
    assert code_b == 0, log      # alpha shut down there

    (_, before), (_, after) = life(a, b)
    # one process on two hosts: the rounds go on without a gap or a repeat
    assert rounds_of(before) + rounds_of(after) == list(range(1, A_ROUNDS + 1)), \
        (rounds_of(before), rounds_of(after))
    assert rounds_of(before)[-1] >= A_MIGRATE_AT, rounds_of(before)
    assert len(rounds_of(after)) >= 5, rounds_of(after)
    print(f"alpha's rounds: a 1..{rounds_of(before)[-1]}, b {rounds_of(after)[0]}..")
    assert not CfiReport(before).results("FAIL"), log
    check_segment(after, "alpha on b", log)
    check_trapped_here(b, after, "alpha on b", log)
    steps = check_finished(before + after, A_ROUNDS, "alpha", log)
    moved = rounds_of(after)[0]
    print(f"guest time: {steps[moved] / 1e6:.3f} s from round {moved - 1} to {moved} (the "
          f"move), at most {max(v for r, v in steps.items() if r != moved) / 1e6:.3f} s else")
    # beta, left behind: every round, in order, all passed
    beta = a.guest("beta")
    assert rounds_of(beta) == list(range(1, B_ROUNDS + 1)), rounds_of(beta)
    rep = CfiReport(beta)
    assert not rep.results("FAIL") and rep.done() and rep.done()[1] == 0, log
    assert "init: cfitest exit 0" in beta, log


# --- (b) ping-pong ------------------------------------------------------------------------

P_ROUNDS = 50
P_FIRST_AT = 4
P_BETWEEN = 2       # rounds alpha runs on a host before it moves on


def test_linux_cfi_guest_ping_pong(hosts):
    """alpha moves A -> B (a fresh --incoming host) -> A (`carapace-ctl
    incoming` on A, which still runs beta) -> B (`carapace-ctl incoming` on
    B: its launcher's relay stopped once alpha had arrived), a few rounds on
    each host: its rounds go on across the hosts without a gap or a repeat, every check
    passes on every host it came to, and it ends on B; beta on A never
    stops."""
    port = free_port()
    a = hosts("a", [dirty_spec("alpha", P_ROUNDS), rounds_spec("beta", P_ROUNDS)])
    wait_round(a, "alpha", P_FIRST_AT, 300)
    b = hosts("b", incoming=port, extra=["--expect", "alpha=shutdown"])   # clock behind A's
    m = a.migrate("alpha", port, "--max-rounds", "6")
    check_moved(m, "hop 1: a -> b")
    assert b.vms() == {"alpha": "running"} and "alpha" not in a.vms()
    for hop, (src, dst) in enumerate([(b, a), (a, b)], start=2):
        last = max(rounds_of(a.guest("alpha")) + rounds_of(b.guest("alpha")))
        wait_round(src, "alpha", last + P_BETWEEN, 60)
        check_cfi_on(src, f"before hop {hop}, on {src.tag}")
        p = free_port()
        inc = dst.incoming(p)
        hosts.procs.append(inc)
        m = src.migrate("alpha", p, "--max-rounds", "6")
        d = inc.finish()
        check_moved(m, f"hop {hop}: {src.tag} -> {dst.tag}")
        assert d.rc == 0 and d.reply and d.reply["vm"] == "alpha", d.text()
        assert "alpha" not in src.vms() and dst.vms().get("alpha") == "running", \
            src.console() + dst.console()
    assert a.vms() == {"beta": "running"} or rounds_of(a.guest("beta"))[-1:] == [P_ROUNDS]

    code_b = b.finish(RUN_TIMEOUT)
    a.wait_for(lambda l: l == "carapace: vm beta: shut down", 120)
    log = a.console(300) + "\n" + b.console(300)
    assert code_b == 0, log
    # alpha's life, host by host: a, b, a, b
    segments = life(a, b, a, b)
    got = [r for _, seg in segments for r in rounds_of(seg)]
    print("alpha's rounds:", ", ".join(f"{tag} {rounds_of(seg)[0]}..{rounds_of(seg)[-1]}"
                                       for tag, seg in segments if rounds_of(seg)))
    assert got == list(range(1, P_ROUNDS + 1)), \
        [(tag, rounds_of(seg)) for tag, seg in segments]
    for i, (tag, seg) in enumerate(segments[1:], start=1):
        check_segment(seg, f"alpha on {tag} after hop {i}", log)
    check_finished([l for _, seg in segments for l in seg], P_ROUNDS, "alpha", log, hops=3)
    check_trapped_here(b, segments[-1][1], "alpha on b at the end", log)
    beta = a.guest("beta")
    assert rounds_of(beta) == list(range(1, P_ROUNDS + 1)), rounds_of(beta)
    rep = CfiReport(beta)
    assert not rep.results("FAIL") and rep.done() and rep.done()[1] == 0, log


# --- (c) refused: no CFI on the destination -------------------------------------------

R_ROUNDS = 12


def test_linux_cfi_guest_refused_without_cfi(hosts):
    """B's CPU has no Zicfilp/Zicfiss: migrating alpha there is refused
    before any memory moves (exit 1, no-cfi, the message names the
    protection the guest would lose), B says so and keeps no VM; alpha runs
    on at A and finishes all its rounds, every check passing."""
    port = free_port()
    a = hosts("a", [dirty_spec("alpha", R_ROUNDS)],
              extra=["--expect", "alpha=shutdown"])
    b = hosts("b", incoming=port, extra=["--cpu", NO_CFI_CPU])
    wait_round(a, "alpha", 3, 300)
    m = a.migrate("alpha", port)
    assert m.rc == 1, m.text()
    assert m.reply and not m.reply["ok"] and m.reply["code"] == "no-cfi", m.text()
    assert "no-cfi" in m.err and re.search(r"shadow stack|landing pad", m.err, re.I), m.text()
    # refused at negotiation: B's caps came, nothing else
    assert m.of("caps") and not m.of("accept") and not m.of("round"), m.text()
    assert not m.of("stop-and-copy") and not m.of("running"), m.text()
    b.wait_for(lambda l: l.startswith("carapace: incoming migration failed")
               and re.search(r"shadow stacks|landing pads", l), 30)
    assert b.vms() == {}, b.console()
    assert not [l for l in b.snapshot() if "incoming round" in l], b.console()
    assert a.vms() == {"alpha": "running"}, a.console()
    code = a.finish(RUN_TIMEOUT)
    log = a.console(300)
    assert code == 0, log
    lines = a.guest("alpha")
    assert rounds_of(lines) == list(range(1, R_ROUNDS + 1)), rounds_of(lines)
    check_finished(lines, R_ROUNDS, "alpha, refused, on a", log)


# --- (d) broken moves, then one that goes through --------------------------------------

F_ROUNDS = 50
F_PHASES = ["round:2", "stop-and-copy"]


def wait_no_vms(h, timeout=30):
    end = time.monotonic() + timeout
    while (got := h.vms()) and time.monotonic() < end:
        time.sleep(0.2)
    assert got == {}, f"host {h.tag} still has {got}\n{h.console()}"


def test_linux_cfi_guest_survives_broken_moves(hosts):
    """alpha's moves to B are cut by the relay (carapace-ctl --cut-at) in a
    pre-copy round and in the stop-and-copy (alpha paused on A): each time A
    answers an error and alpha runs on at A (resumed by the test if A had
    already sent END whole: it cannot know B never got it), B discards its
    copy and waits again. Then alpha moves to B for real and finishes
    there: one process through it all, every round's checks passing (its
    dirty memory after dirty logging was turned on and off three times, its
    shadow stack, landing pads and guest time)."""
    port = free_port()
    a = hosts("a", [dirty_spec("alpha", F_ROUNDS)])
    wait_round(a, "alpha", 3, 300)
    b = hosts("b", incoming=port, extra=["--expect", "alpha=shutdown"])
    for phase in F_PHASES:
        last = max(rounds_of(a.guest("alpha")))
        wait_round(a, "alpha", last + 1, 60)
        # no downtime estimate fits 1 ms: round 2 is never the last (with
        # the defaults the rest of a round 2 that fits 20 ms goes at once)
        m = a.migrate("alpha", port, "--max-rounds", "4", "--downtime-limit", "1",
                      "--no-auto-converge", "--cut-at", phase)
        where = f"cut at {phase}"
        check_cut_migration(m, phase, where)
        if m.reply["code"] == "unconfirmed":
            assert phase == "stop-and-copy", f"{where}: {m.text()}"
            check_left_unconfirmed(a, "alpha", where)
            wait_no_vms(b)      # B never got END: it never ran alpha
            a.ctl("resume", "alpha")
        if phase != "round:2":
            assert m.of("stop-and-copy"), f"{where}: {m.text()}"
        assert a.vms() == {"alpha": "running"}, f"{where}\n{a.console()}"
        wait_no_vms(b)
        assert not [l for l in a.snapshot() if l.startswith("carapace: vm alpha: migrated (")]
    assert len([l for l in b.snapshot() if l.startswith("carapace: incoming migration failed:")
                and "waiting for another" in l]) == len(F_PHASES), b.console()
    at = max(rounds_of(a.guest("alpha")))
    assert at < F_ROUNDS - 5, f"alpha is at round {at} of {F_ROUNDS}: give it more"
    m = a.migrate("alpha", port, "--max-rounds", "4")
    check_moved(m, "a -> b after the cuts")
    code_b = b.finish(RUN_TIMEOUT)
    log = a.console(300) + "\n" + b.console(300)
    assert code_b == 0, log
    (before,) = stays(a)
    after = stays(b)[-1]            # before it: the copies b discarded
    assert len(before["torn"]) <= 1, before
    lines = list(after["lines"])
    if before["torn"] and lines:
        lines[0] = before["torn"][0] + lines[0]
    assert rounds_of(before["lines"]) + rounds_of(lines) == list(range(1, F_ROUNDS + 1)), \
        (rounds_of(before["lines"]), rounds_of(lines))
    assert not CfiReport(before["lines"]).results("FAIL"), log
    check_segment(lines, "alpha on b", log)
    check_finished(before["lines"] + lines, F_ROUNDS, "alpha", log)
    print(f"alpha's rounds: a 1..{rounds_of(before['lines'])[-1]}, b {rounds_of(lines)[0]}..")
