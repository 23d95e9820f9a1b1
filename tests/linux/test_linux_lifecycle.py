# SPDX-License-Identifier: MIT
"""Linux CFI guests through the VM lifecycle: two guests each run one
long-lived CFI process (cfitest --rounds: its own shadow stack on, a round of
balanced calls, a caught shadow-stack violation and the landing-pad checks
every ~100 ms); one is paused from tools/carapace-ctl in the middle and
resumed. The paused guest's process goes on from the round where it stopped,
with the same shadow stack, still catching violations; the other guest never
stops."""

import re
import time

import pytest

from harness.hosts import Host, SnapHost
from harness.linux import (INITRAMFS, KERNEL, REQUIRED_ROUNDS, CfiReport, check_cfi,
                           rounds_of, run_carapace, run_reference)

pytestmark = pytest.mark.linux

ROUNDS = 40


def spec(name, rounds=ROUNDS, quiet="quiet"):
    return (f"name={name},kernel={KERNEL},initrd={INITRAMFS},mem=256M,vcpus=2,"
            f"bootargs=console=ttyS0 {quiet} carapace.test=rounds carapace.rounds={rounds}")


def test_reference_rounds(initramfs):
    """The rounds mode itself, on bare QEMU + OpenSBI."""
    rep, out = run_reference(initramfs, "rounds carapace.rounds=3")
    check_cfi(rep, "bare QEMU, rounds", REQUIRED_ROUNDS, out)


def test_pause_resume_linux_cfi(initramfs, tmp_path):
    h = Host(tmp_path, [spec("alpha"), spec("beta")], timeout=400)
    try:
        h.wait_for(lambda l: l.startswith("[alpha] cfitest: round 5/"), 240)
        rep, _ = h.ctl("pause", "alpha")
        assert rep["state"] == "paused", rep
        cfi, _ = h.ctl("cfi", "alpha")
        # the Linux guest turned shadow stacks on (and locked them) through FWFT
        assert cfi["shadow_stacks"] and cfi["landing_pads"], cfi
        assert all(v["ss_enabled"] and v["ss_locked"] for v in cfi["vcpus"]
                   if v["hsm"] != "stopped"), cfi
        alpha_at = rounds_of(h.guest("alpha"))
        beta_at = rounds_of(h.guest("beta"))
        time.sleep(4)
        assert rounds_of(h.guest("alpha")) == alpha_at, "alpha ran while paused"
        beta_now = rounds_of(h.guest("beta"))
        assert len(beta_now) >= len(beta_at) + 3 or beta_now[-1:] == [ROUNDS], \
            f"beta stopped while alpha was paused: {beta_at} -> {beta_now}"
        listing, _ = h.ctl("list")
        assert {v["name"]: v["state"] for v in listing["vms"]}["alpha"] == "paused"
        rep, _ = h.ctl("resume", "alpha")
        assert rep["state"] == "running", rep
        code = h.finish(timeout=400)
    finally:
        h.kill()
    out = "\n".join(h.snapshot())
    assert code == 0, out
    for name in ("alpha", "beta"):
        lines = h.guest(name)
        check_cfi(CfiReport(lines), f"vm {name}", REQUIRED_ROUNDS, out)
        # one process, every round once and in order: it went on where it was
        assert rounds_of(lines) == list(range(1, ROUNDS + 1)), (name, rounds_of(lines))


# --- snapshot and restore -------------------------------------------------------------

def snap_host(tmp_path, vms, timeout=500):
    return SnapHost(tmp_path, vms, timeout=timeout)


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_snapshot_linux_into_fresh_qemu(initramfs, tmp_path, live):
    """Two CFI guests; alpha is snapshotted in the middle of its long-lived CFI
    process, beta never stops. A fresh QEMU restores alpha from the file: the
    same process goes on from its round, with the same shadow stack (the ssp
    of round 1), and still catches a corrupted return and landing-pad
    violations."""
    path = tmp_path / "alpha.snap"
    srcdir = tmp_path / "src"
    srcdir.mkdir()
    # loglevel 6: the guest's notice that it reseeded after the restore shows
    src = snap_host(srcdir, [spec("alpha", 30, "loglevel=6"), spec("beta", 30)])
    try:
        src.wait_for(lambda l: l.startswith("[alpha] cfitest: round 5/"), 240)
        rep, _, _ = src.ctl("snapshot", "alpha", str(path), *(["--live"] if live else []))
        assert rep["ok"] and rep["live"] == live, rep
        src.ctl("destroy", "alpha")
        src.wait_for(lambda l: l.startswith("[beta] DONE:"), 300)
        assert rounds_of(src.guest("beta")) == list(range(1, 31)), "beta lost rounds"
    finally:
        src.kill()
    before = src.guest("alpha")

    # a fresh QEMU with nothing but the file
    code, out, reps = run_carapace([], ["alpha"], timeout=400, extra=[
        "--stream-socket", str(tmp_path / "ds.sock"), "--restore", str(path),
        "--expect", "alpha=shutdown"])
    assert code == 0, out
    after = reps["alpha"].lines
    # one process across two QEMUs: it goes on from a round the source reached
    first = rounds_of(after)[0]
    assert 5 <= first <= max(rounds_of(before)) + 1, (rounds_of(before), rounds_of(after))
    assert rounds_of(after) == list(range(first, 31)), rounds_of(after)
    rep = CfiReport(after)
    assert not rep.results("FAIL"), out
    assert rep.done() and rep.done()[1] == 0, out
    passed = set(rep.results("PASS"))
    missing = [c for c in REQUIRED_ROUNDS if c not in passed and not c.startswith("rounds: shadow")]
    assert not missing, (missing, out)
    assert "init: cfitest exit 0" in after, out
    # a new VM generation ID: the restored kernel reseeded its RNG (vmgenid)
    assert any("crng reseeded due to virtual machine fork" in l for l in after), out


# --- two restores of one snapshot side by side ------------------------------------------

# not anchored: a kernel message can share the console line
RANDOM_RE = re.compile(r"cfitest: random (\d+)/\d+ ([0-9a-f]{32})")
RESEED = "crng reseeded due to virtual machine fork"
TWIN_SNAP_AT = 10
TWIN_ROUNDS = 60


def randoms_of(lines):
    """{round: the 16 getrandom bytes (hex) cfitest --random printed after it}."""
    return {int(m.group(1)): m.group(2) for l in lines if (m := RANDOM_RE.search(l))}


def two_restores(tmp_path, extra_bootargs=""):
    """A CFI guest running cfitest --rounds --random is snapshotted (plain) at
    round TWIN_SNAP_AT and goes on; then a fresh, empty host (--persist)
    restores the file twice, as r1 and r2, which run side by side to the end
    of the rounds. r1 runs a few rounds, then waits paused while r2 is being
    restored (a restore takes from seconds to most of a minute on a busy
    machine), so the two surely overlap. Returns the source's console, the
    last round it had printed when the snapshot reply came, the listing taken
    with both restores up, the host's console, r1's and r2's consoles and
    the restores' durations."""
    path = tmp_path / "alpha.snap"
    srcdir, dstdir = tmp_path / "src", tmp_path / "dst"
    srcdir.mkdir()
    dstdir.mkdir()
    # loglevel 6: the guest's notice that it reseeded after a restore shows
    src = SnapHost(srcdir, [spec("alpha", TWIN_ROUNDS,
                                 f"loglevel=6 carapace.random=1 {extra_bootargs}".strip())],
                   timeout=400)
    try:
        src.wait_for(lambda l: l.startswith(f"[alpha] cfitest: round {TWIN_SNAP_AT}/"), 300)
        rep, _, _ = src.ctl("snapshot", "alpha", str(path))
        assert rep["ok"] and not rep["live"], rep
        at_reply = max(rounds_of(src.guest("alpha")))
        # the source goes on (a plain snapshot resumes it): a few of its own
        # samples after the snapshot, to compare with the restores'
        src.wait_for(lambda l: l.startswith(f"[alpha] cfitest: random {at_reply + 4}/"), 120)
    finally:
        src.kill()
    source = src.guest("alpha")

    # a fresh QEMU with no VM at all; room for two restores of a 256M guest
    restore_s = {}
    dst = SnapHost(dstdir, [], ["--persist", "--spare-mem", "640M"], timeout=400)
    try:
        for name in ("r1", "r2"):
            t0 = time.monotonic()
            rep, _, _ = dst.ctl("restore", str(path), "--name", name)
            assert rep["ok"] and rep["vm"] == name, rep
            restore_s[name] = round(time.monotonic() - t0, 1)
            if name == "r1":
                line = dst.wait_for(lambda l: l.startswith("[r1] cfitest: round "), 60)
                first = rounds_of([line])[0]
                dst.wait_for(lambda l: l.startswith(f"[r1] cfitest: random {first + 3}/"), 60)
                rep, _, _ = dst.ctl("pause", "r1")
                assert rep["ok"], rep
        rep, _, _ = dst.ctl("resume", "r1")
        assert rep["ok"], rep
        listing, _, _ = dst.ctl("list")
        for name in ("r1", "r2"):
            dst.wait_for(lambda l: l.startswith(f"[{name}] init: cfitest exit"), 300)
        dst.wait_for(lambda l: l.startswith("carapace: vm r1: shut down"), 60)
        dst.wait_for(lambda l: l.startswith("carapace: vm r2: shut down"), 60)
    finally:
        dst.kill()
    return source, at_reply, listing, dst.snapshot(), dst.guest("r1"), dst.guest("r2"), restore_s


def test_two_restores_of_one_linux_snapshot(initramfs, tmp_path):
    """One snapshot of a CFI Linux guest in the middle of its long-lived CFI
    process, restored twice into one fresh host, under two names, running at
    once. Each restore goes on with the same process from the snapshot's
    round, still catches a corrupted return and landing-pad violations, and
    is a new generation: its kernel reseeded (vmgenid), so the two restores'
    getrandom bytes differ from each other and from the source's after the
    snapshot. Without that reseed, r1 and r2 (and often the source) draw the
    same bytes in the first rounds after the snapshot (the samples come from
    CPU 0's crng, whose state is in the snapshot) until the kernel's own
    timed reseed sets them apart (1 to 9 rounds in four runs with the guest's
    vmgenid driver disabled by initcall_blacklist=vmgenid_plaform_driver_init,
    each of which this test failed); so every round from the first restored
    one is compared."""
    source, at_reply, listing, console, r1, r2, _ = two_restores(tmp_path)
    out = "\n".join(console)

    # both up at once, under their own names
    vms = {v["name"]: v for v in listing["vms"]}
    assert sorted(vms) == ["r1", "r2"], listing
    assert all(v["state"] == "running" for v in vms.values()), (listing["vms"], out)
    assert len({v["index"] for v in vms.values()}) == 2, listing
    # ... and both ran rounds while the other did
    idx = {n: [i for i, l in enumerate(console) if l.startswith(f"[{n}] cfitest: round ")]
           for n in ("r1", "r2")}
    assert idx["r1"] and idx["r2"], out
    assert len([i for i in idx["r1"] if idx["r2"][0] < i < idx["r2"][-1]]) >= 5, out

    # one process, continued: both from the same round, which the source
    # reached, and on to the end without a restart
    src_rounds = rounds_of(source)
    firsts = {}
    for name, lines in (("r1", r1), ("r2", r2)):
        got = rounds_of(lines)
        assert got, (name, out)
        firsts[name] = got[0]
        assert TWIN_SNAP_AT <= got[0] <= at_reply + 1, (name, at_reply, got)
        assert got == list(range(got[0], TWIN_ROUNDS + 1)), (name, got)
        assert not any("cfitest: mode=" in l for l in lines), (name, "cfitest restarted")
        rep = CfiReport(lines)
        assert not rep.results("FAIL"), (name, out)
        assert rep.done() and rep.done()[1] == 0, (name, out)
        passed = set(rep.results("PASS"))
        missing = [c for c in REQUIRED_ROUNDS
                   if c not in passed and not c.startswith("rounds: shadow")]
        assert not missing, (name, missing, out)
        assert "init: cfitest exit 0" in lines, (name, out)
    assert firsts["r1"] == firsts["r2"], firsts
    assert src_rounds[:firsts["r1"] - 1] == list(range(1, firsts["r1"])), src_rounds

    # randomness: a sample every round, none shared by r1, r2 and the source
    # from the first restored round on (unless that one's bytes were drawn
    # before the snapshot: then all three printed the same)
    first = firsts["r1"]
    rnd = {"source": randoms_of(source), "r1": randoms_of(r1), "r2": randoms_of(r2)}
    assert not [l for l in source + r1 + r2 if re.search(r"cfitest: random.*: \w+: ", l)], \
        "a getrandom or affinity error"
    # (a sample line a kernel message broke up is not one)
    after = [r for r in range(first, TWIN_ROUNDS + 1) if r in rnd["r1"] and r in rnd["r2"]]
    assert len(after) >= TWIN_ROUNDS - first - 1, (first, rnd["r1"], rnd["r2"])
    if first in after and rnd["source"].get(first) == rnd["r1"][first] == rnd["r2"][first]:
        after.remove(first)
    common = [r for r in after if r in rnd["source"]]
    assert common, (first, rnd["source"])   # the source went on past the snapshot
    same = [(r, a, b) for a, b in (("r1", "r2"), ("r1", "source"), ("r2", "source"))
            for r in after if r in rnd[b] and rnd[a][r] == rnd[b][r]]
    assert not same, f"restores share their RNG output: {same}"
    r1_after = {rnd["r1"][r] for r in after}
    r2_after = {rnd["r2"][r] for r in after}
    assert not r1_after & r2_after, "r1 and r2 drew the same bytes"
    assert not (r1_after | r2_after) & set(rnd["source"].values()), "a restore repeats the source"
    # ... because each restored kernel reseeded on its new VM generation ID
    for name, lines in (("r1", r1), ("r2", r2)):
        assert any(RESEED in l for l in lines), (name, out)
    assert not any(RESEED in l for l in source), "the source reseeded"
