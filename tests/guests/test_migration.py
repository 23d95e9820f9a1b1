# SPDX-License-Identifier: MIT
"""Live migration of bare-metal guests between two Carapace hosts (issue 10,
item 5): two QEMUs on the loopback address, the stream over TLS with a
certificate on each side (the tls_creds fixture), driven with
tools/carapace-ctl migrate / incoming and tools/carapace-run --incoming as a
user would; plain TCP (loopback only) where a test reads the stream itself
(the landing-pad test) and for one paused VM.  The transport's refusals are
test_migration_tls.py's.

- snap_cfi (marker protocol, tests/guests/snap_cfi.c) moved mid-wait to a
  fresh `carapace-run --incoming` host checks its CFI state there (ssp and
  shadow-stack contents, FWFT values and locks, senvcfg, a pending timer, a
  vCPU in WFI, guest time); the other VM on the source never stopped;
- mig_dirty (tests/guests/mig_dirty.c) moved while it writes pages, through
  several pre-copy rounds, finds every page as it last wrote it;
- a landing-pad check in flight (snap_elp, ELP expected in the VCPU section
  of the stop-and-copy, read off the stream by a proxy: plain TCP) fires on
  the destination as the guest's first act;
- a destination without Zicfilp/Zicfiss is refused before any memory moves;
- every fault phase before the destination can run the VM (negotiation,
  rounds 1 and 2, stop-and-copy), by cutting the relay and by killing the
  destination's QEMU: the source VM goes on unchanged and passes its checks
  there, the destination keeps nothing (the phases after it, where both
  copies stay: test_migration_end.py);
- ping-pong A -> B -> A -> B -> A, and a name clash on a running host.

Runtime: about 2.5 minutes on 2 cores (the fault phases are most of it)."""

import json
import re
import socket
import struct
import threading
import time

import pytest

from carapace.snapshot_format import VCPU

from harness.migration import (ADDR, OTHER, check_cut_migration, check_left_unconfirmed,
                               check_ok_migration, free_mem, life, marker_line)
from harness.paths import ROOT
from harness.ports import free_port
from harness.report import Report, check_report
from harness.runs import run_reference, vm_spec

pytestmark = pytest.mark.quick

NO_CFI_CPU = "rv64,h=true,sstc=true,svadu=true"
STOP_PAGES = int(re.search(r"#define MIG_STOP_PAGES\s+(\d+)",
                           (ROOT / "hyp" / "include" / "migrate.h").read_text()).group(1))


# --- the guest alone ------------------------------------------------------------------

@pytest.mark.reference
def test_mig_dirty_bare_qemu(guests_built):
    """mig_dirty on bare QEMU (no migration): every check passes."""
    rc, rep, out = run_reference("mig_dirty", "wait_ms=1500")
    assert rc == 0, out
    check_report(rep, "mig_dirty (bare)")
    assert any(l.startswith("MIGRATE-READY") for l in rep.lines), out
    assert any(l.startswith("MIGDIRTY checksum ") for l in rep.lines), out


@pytest.mark.reference
def test_mig_dirty_catches_a_lost_write(guests_built):
    """The checker can fail: one word changed behind the records' back."""
    rc, rep, out = run_reference("mig_dirty", "wait_ms=300 corrupt=1")
    fails = rep.kind("FAIL: ")
    assert any("pages not holding their recorded generation (got 1, want 0)" in l
               for l in fails), out
    assert any("memory checksum matches" in l for l in fails), out
    assert rep.done() is not None and rep.done()[1] == 2, out


# --- successful moves -----------------------------------------------------------------

def test_cfi_guest_moves_to_fresh_host(hosts):
    """(a) snap_cfi moved from A to a fresh `carapace-run --incoming` host B
    while it waits: its self-checks pass on B; the other VM on A never
    stopped; A no longer lists it; B's cfi report shows its state."""
    port = free_port()
    a = hosts("a", [vm_spec("c", "snap_cfi", 2, "wait_ms=7000"), OTHER])
    b = hosts("b", incoming=port)
    a.ready(), b.ready()
    line = marker_line(a, "c", "SNAPSHOT-READY")
    ssp = int(re.search(r"ssp=(0x[0-9a-f]+)", line).group(1), 16)
    cfi_a, _ = a.ctl("cfi", "c")
    hellos = a.count("other", "hello")
    m = a.migrate("c", port)
    check_ok_migration(m, "c", "a -> b")
    assert a.vms() == {"other": "running"}, a.console()
    assert b.vms() == {"c": "running"}, b.console()
    # both hosts authenticated: a saw b's certificate, b's relay a's
    t = m.of("transport")[0]
    assert (t["mode"], t["version"], t["subject"]) == ("tls", "TLSv1.3", "localhost"), t
    relay = [e["event"] for e in b.relay_events()]
    assert relay == ["listening", "accepted", "relaying", "caps", "config", "accept"] \
        + ["round"] * m.reply["rounds"] + ["stop-and-copy", "end", "running", "done",
                                           "arrived"], b.relay_events()
    assert b.relay_events()[1]["mode"] == "tls" and b.relay_events()[1]["version"] == "TLSv1.3"
    # b's view of its CFI state: what the guest set on a (ssp as it printed
    # it). (a's `cfi` is no reference: it reads the saved context, stale for
    # a vCPU that has stayed on its hart since it set ssp and senvcfg.)
    cfi_b, _ = b.ctl("cfi", "c")
    v0 = cfi_b["vcpus"][0]
    assert v0["ssp"] == ssp and v0["ss_enabled"] and v0["ss_locked"], cfi_b
    assert v0["lp_locked"] and not v0["lp_enabled"] and v0["senvcfg"] & 0xc == 0xc, cfi_b
    assert v0["elp"] == 0 and not v0["violations_lp"] and not v0["violations_ss"], cfi_b
    assert (cfi_b["landing_pads"], cfi_b["shadow_stacks"], cfi_b["policy"]) == \
        (cfi_a["landing_pads"], cfi_a["shadow_stacks"], cfi_a["policy"]) == (True, True, "trap")
    assert a.count("other", "hello") > hellos + 3, "the other VM stopped during the migration"
    b.wait_for(lambda l: l == "carapace: vm c: shut down", 60)
    rep = Report(life(a.guest("c"), b.guest("c"), "SNAPSHOT-READY"))
    check_report(rep, "vm c: on a, then on b")
    assert not rep.kind("SKIP: "), rep.lines
    assert any("shadow stack contents" in l for l in rep.kind("PASS: ")), rep.lines
    # only the copy on b checked itself; a's VM printed nothing after the marker
    assert a.guest("c")[-1].startswith("SNAPSHOT-READY"), a.console()
    assert a.vms() == {"other": "running"}
    assert a.count("other", "hello") > hellos + 20


def test_paused_vm_arrives_paused(hosts):
    """A VM its operator paused moves paused (SWITCHOVER's PAUSED flag): B
    lists it paused and it prints nothing there until it is resumed, then it
    goes on and passes its checks. It once ran on B at once. (The move is
    plain TCP on the loopback: carapace-run --incoming-plain, migrate --plain.)"""
    port = free_port()
    a = hosts("a", [vm_spec("c", "snap_cfi", 2, "wait_ms=3000")])
    b = hosts("b", incoming=port, plain=True)
    a.ready(), b.ready()
    marker_line(a, "c", "SNAPSHOT-READY")
    a.ctl("pause", "c")
    m = a.migrate("c", port, plain=True)
    assert m.of("transport")[0]["mode"] == "plain", m.text()
    assert b.relay_events()[1]["event"] == "accepted" and b.relay_events()[1]["mode"] == "plain"
    check_ok_migration(m, "c", "a -> b, paused")
    assert a.vms() == {}, a.console()
    assert b.vms() == {"c": "paused"}, b.console()
    time.sleep(4.0)         # past its wait_ms: a running copy would have ended
    assert not b.guest("c"), b.console()
    assert b.vms() == {"c": "paused"}, b.console()
    b.ctl("resume", "c")
    b.wait_for(lambda l: l == "carapace: vm c: shut down", 60)
    rep = Report(life(a.guest("c"), b.guest("c"), "SNAPSHOT-READY"))
    check_report(rep, "vm c: on a, then on b (paused across)")
    assert not rep.kind("SKIP: "), rep.lines


@pytest.mark.parametrize("writer", ["busy", "busy-unpaced", "throttled"])
def test_dirtying_guest_precopy_rounds(hosts, writer):
    """(b) mig_dirty moved while both its vCPUs write pages, through several
    pre-copy rounds; on B every page holds what the guest last wrote (its
    checks and checksum PASS). busy: it writes faster than the stream
    carries and its whole region is dirty after round 1; auto-converge paces
    its page writes (ROUND's dirty_limit, the reply's holds), the rounds
    shrink, and what the last leaves fits the downtime limit's estimate.
    busy-unpaced (--no-auto-converge): every round leaves the whole region
    dirty, so the pre-copy gives up (not converging, from round 3) and the
    rest goes in the pause; throttled (400 writes/s per vCPU): round 1 leaves more than the stop
    threshold dirty on any machine (at 50 writes/s, a round 1 of 0.34 s left
    32 pages, the threshold: one round, a CI failure), each later round
    carries fewer pages and so sees fewer written, until they fit the pause."""
    port = free_port()
    args = "wait_ms=9000" + (" delay_us=2500" if writer == "throttled" else "")
    a = hosts("a", [vm_spec("m", "mig_dirty", 2, args), OTHER])
    b = hosts("b", incoming=port)
    a.ready(), b.ready()
    marker_line(a, "m", "MIGRATE-READY")
    time.sleep(0.5)
    m = a.migrate("m", port, "--max-rounds", "10",
                  *(["--no-auto-converge"] if writer == "busy-unpaced" else []))
    check_ok_migration(m, "m", "a -> b")
    rounds = m.of("round")
    n = m.reply["rounds"]
    assert n >= 2 and [r["round"] for r in rounds] == list(range(1, n + 1)), m.text()
    assert m.of("stop-and-copy")[0]["rounds"] == n, m.text()
    # round 1 is the whole region (2 pages in 3 non-zero: >= 1365 of 2048)
    assert rounds[0]["pages"] >= 1365 and all(r["pages"] > 0 for r in rounds), rounds
    # the guest wrote during every round
    assert all(r["dirty"] > STOP_PAGES for r in rounds[:-1]), rounds
    if writer == "busy-unpaced":
        assert 3 <= n < 10 and all(r["dirty"] >= 2048 for r in rounds), rounds
        assert all(r["dirty_limit"] == 0 for r in rounds) and m.reply["dirty_holds"] == 0
        assert rounds[-1]["expected_downtime_us"] > 20000, rounds
    elif writer == "busy":
        assert rounds[0]["dirty"] >= 2048 and n < 10, rounds
        paced = [r for r in rounds if r["dirty_limit"]]
        assert paced and m.reply["dirty_limit"] and m.reply["dirty_holds"] > 0, (rounds, m.reply)
        last = rounds[-1]
        assert last["dirty"] <= STOP_PAGES or last["expected_downtime_us"] <= 20000, rounds
        assert last["dirty"] * 8 < rounds[0]["dirty"], rounds
    else:
        assert n < 10 and rounds[-1]["dirty"] <= STOP_PAGES, rounds
        assert m.reply["dirty_holds"] == 0, m.reply
    assert "downtime_us" in m.reply and "dest_downtime_us" in m.reply, m.reply
    print(f"{writer}: {n} rounds, {m.reply['pages']} pages, {m.reply['bytes']} bytes, "
          f"downtime {m.reply['downtime_us']} + {m.reply['dest_downtime_us']} us")
    assert a.vms() == {"other": "running"} and b.vms() == {"m": "running"}
    b.wait_for(lambda l: l == "carapace: vm m: shut down", 60)
    rep = Report(life(a.guest("m"), b.guest("m"), "MIGRATE-READY"))
    check_report(rep, "vm m: on a, then on b")
    passes = rep.kind("PASS: ")
    assert any("memory checksum matches" in l for l in passes), rep.lines
    assert len([l for l in passes if "pages not holding their recorded generation" in l]) == 2
    assert [l for l in b.guest("m") if l.startswith("MIGDIRTY checksum ")], b.console()


# --- refusal ---------------------------------------------------------------------------

def test_refused_without_cfi(hosts):
    """(d) B has no Zicfilp/Zicfiss: the source refuses before any memory
    moves (no-cfi, naming what the guest would lose), B says so too; A's VM
    runs on unchanged and passes its checks there."""
    port = free_port()
    a = hosts("a", [vm_spec("c", "snap_cfi", 2, "wait_ms=4000"), OTHER])
    b = hosts("b", incoming=port, extra=["--cpu", NO_CFI_CPU])
    a.ready(), b.ready()
    marker_line(a, "c", "SNAPSHOT-READY")
    m = a.migrate("c", port)
    assert m.rc == 1, m.text()
    assert m.reply and not m.reply["ok"] and m.reply["code"] == "no-cfi", m.text()
    assert "no-cfi" in m.err and re.search(r"shadow stack|landing pad", m.err, re.I), m.text()
    assert m.of("caps") and not m.of("accept") and not m.of("round"), m.text()
    # the source decided on B's CAPS: ABORT instead of CONFIG
    assert not m.of("config"), m.text()
    assert [(e["side"], e["code"]) for e in m.of("abort")] == [("source", "no-cfi")], m.text()
    assert not m.of("stop-and-copy") and not m.of("running"), m.text()
    # the caps B sent: no Zicfilp/Zicfiss
    caps = m.of("caps")[0]
    assert caps["fwft"] == 0 or "Zicfiss" not in json.dumps(caps), caps
    # B printed the refusal it got, and has no VM
    b.wait_for(lambda l: l.startswith("carapace: incoming migration failed")
               and re.search(r"shadow stacks|landing pads", l), 15)
    assert b.vms() == {}, b.console()
    assert not [l for l in b.snapshot() if "incoming round" in l], b.console()
    assert a.vms() == {"c": "running", "other": "running"}
    a.wait_for(lambda l: l == "carapace: vm c: shut down", 60)
    rep = Report(a.guest("c"))
    check_report(rep, "vm c, refused, on a")
    assert not rep.kind("SKIP: "), rep.lines


def test_name_clash_on_running_host(hosts):
    """(g) B already runs a VM named c: `incoming` there refuses the guest
    (exists) before any memory moves, both sides say so, nothing changes;
    with --name c2 it comes in."""
    port = free_port()
    a = hosts("a", [vm_spec("c", "snap_cfi", 2, "wait_ms=12000")])
    b = hosts("b", [vm_spec("c", "demo", 1, "count=100000 delay_us=20000")])
    a.ready(), b.ready()
    marker_line(a, "c", "SNAPSHOT-READY")
    inc = b.incoming(port)
    m = a.migrate("c", port)
    d = inc.finish()
    assert m.rc == 1 and m.reply["code"] == "exists", m.text()
    assert not m.of("accept") and not m.of("round"), m.text()
    assert d.rc == 1 and "exists" in d.err, d.text()
    assert a.vms() == {"c": "running"} and b.vms() == {"c": "running"}
    hellos = b.count("c", "hello")
    port2 = free_port()
    inc = b.incoming(port2, "c2")
    m = a.migrate("c", port2)
    d = inc.finish()
    check_ok_migration(m, "c", "a -> b as c2")
    assert d.rc == 0 and d.reply["vm"] == "c2", d.text()
    assert a.vms() == {} and b.vms() == {"c": "running", "c2": "running"}
    b.wait_for(lambda l: l == "carapace: vm c2: shut down", 60)
    check_report(Report(life(a.guest("c"), b.guest("c2"), "SNAPSHOT-READY")), "vm c -> c2")
    assert b.count("c", "hello") > hellos, "b's own VM c stopped"


# --- ping-pong -------------------------------------------------------------------------

def test_ping_pong(hosts):
    """(f) snap_cfi A -> B (B a fresh --incoming host) -> A (carapace-ctl
    incoming on A) -> B -> A while it waits: its checks pass at the end, on A."""
    port = free_port()
    a = hosts("a", [vm_spec("c", "snap_cfi", 2, "wait_ms=20000"), OTHER])
    b = hosts("b", incoming=port)
    a.ready(), b.ready()
    marker_line(a, "c", "SNAPSHOT-READY")
    m = a.migrate("c", port)
    check_ok_migration(m, "c", "hop 1: a -> b")
    for hop, (src, dst) in enumerate([(b, a), (a, b), (b, a)], start=2):
        p = free_port()
        inc = dst.incoming(p)
        m = src.migrate("c", p)
        d = inc.finish()
        check_ok_migration(m, "c", f"hop {hop}: {src.tag} -> {dst.tag}")
        assert d.rc == 0 and d.reply["vm"] == "c", d.text()
        assert "c" not in src.vms() and dst.vms()["c"] == "running"
    a.wait_for(lambda l: l == "carapace: vm c: shut down", 60)
    # its lines: a (to the marker), nothing on b (it only waited there), a
    lines = a.guest("c")
    assert lines.count(next(l for l in lines if l.startswith("SNAPSHOT-READY"))) == 1
    rep = Report(lines)
    check_report(rep, "vm c after a -> b -> a -> b -> a")
    assert not rep.kind("SKIP: "), rep.lines
    assert a.count("other", "hello") > 50


# --- a landing-pad check in flight --------------------------------------------------------

SPELP = 1 << 23
SEC_VCPU = 2


class TapProxy:
    """A TCP proxy between carapace-ctl migrate and the destination that
    reads the source's stream as it goes by and keeps its VCPU sections
    (decoded with carapace-snap's layout): the vCPU state of the stop-and-copy."""

    def __init__(self, dest_port):
        self.listener = socket.create_server((ADDR, 0))
        self.port = self.listener.getsockname()[1]
        self.dest_port = dest_port
        self.vcpus = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        src, _ = self.listener.accept()
        self.listener.close()
        dst = socket.create_connection((ADDR, self.dest_port))
        back = threading.Thread(target=self._pump, args=(dst, src, None), daemon=True)
        back.start()
        self._pump(src, dst, bytearray())
        back.join(30)

    def _pump(self, a, b, keep):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                if keep is not None:
                    keep += data
                    self._parse(keep)
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _parse(self, buf):
        """Consume whole sections from @buf (the header first)."""
        if not getattr(self, "header_seen", False):
            if len(buf) < 32:
                return
            del buf[:32]
            self.header_seen = True
        while len(buf) >= 24:
            stype, _inst, length = struct.unpack_from("<IIQ", buf)
            if len(buf) < 24 + length:
                return
            if stype == SEC_VCPU:
                self.vcpus.append(VCPU.decode(bytes(buf[24:24 + length])))
            del buf[:24 + length]

    def finish(self):
        self.thread.join(30)
        return self.vcpus


def test_pending_landing_pad_moves(hosts):
    """(c) snap_elp (landing pads on, jumping again and again to a target
    that is no lpad, cfi=delegate) moved while it jumps: each copy on B must
    fault at the target and never run it, until its run_ms deadline ends the
    loop (a move keeps the VM generation ID: an ID change would end it early,
    a FAIL); the VMs are moved one after the other until the
    stop-and-copy caught one between a jump and its target (ELP expected in
    the VCPU section the proxy read off the stream), whose first act on B
    is then that fault."""
    n = 5
    # each VM's loop ends at its own deadline, after its turn to move
    spec = "name=e{},kernel=build/guests/snap_elp.bin,vcpus=1,mem=16M,cfi=delegate,bootargs=run_ms={}"
    a = hosts("a", [spec.format(i, 10000 + 6000 * i) for i in range(n)])
    b = hosts("b")
    a.ready(), b.ready()
    targets = {}
    for i in range(n):
        line = marker_line(a, f"e{i}", "SNAPSHOT-READY")
        targets[f"e{i}"] = int(re.search(r"target=(0x[0-9a-f]+)", line).group(1), 16)
    caught, seen = None, []
    for i in range(n):
        vm = f"e{i}"
        port = free_port()
        inc = b.incoming(port, plain=True)        # the tap reads the stream
        tap = TapProxy(port)
        m = a.migrate(vm, tap.port, plain=True)
        d = inc.finish()
        check_ok_migration(m, vm, f"{vm}: a -> b")
        assert d.rc == 0, d.text()
        vcpus = tap.finish()
        assert len(vcpus) == 1, vcpus
        v = vcpus[0]
        elp = bool(v["sstatus"] & SPELP or v["vsstatus"] & SPELP)
        seen.append((vm, hex(v["pc"]), elp))
        assert v["lp_value"] == 1 and v["lp_locked"] == 0, v
        if elp:
            # only a jump to the target leaves ELP expected
            assert v["pc"] == targets[vm], (hex(v["pc"]), hex(targets[vm]))
            caught = caught or vm
        b.wait_for(lambda l: l == f"carapace: vm {vm}: shut down", 60)
        rep = Report(life(a.guest(vm), b.guest(vm), "SNAPSHOT-READY"))
        check_report(rep, f"vm {vm}: on a, then on b")
        assert not rep.kind("SKIP: "), rep.lines
        passes = rep.kind("PASS: ")
        assert any("the target never ran" in l for l in passes), rep.lines
        assert any("every jump to the non-lpad target took a landing-pad fault" in l
                   for l in passes), rep.lines
        if caught:
            break
    print(f"(vm, pc, ELP expected) at the switchover: {seen}")
    assert caught, f"no stop-and-copy of {n} caught ELP expected: {seen}"


# --- faults ------------------------------------------------------------------------------

HOLD = 3                    # seconds the relay holds while B is killed
PHASES = ["negotiation", "round:1", "round:2", "stop-and-copy"]
# pre-copy runs its 3 rounds unless a round leaves at most 32 pages: no
# downtime estimate fits 1 ms, and no pace makes the rounds shrink sooner
# (with the defaults a round 2 whose rest fits 20 ms is the last, and a hold
# at round:2 found the source's END in the relay already)
PRECOPY_3 = ("--max-rounds", "3", "--downtime-limit", "1", "--no-auto-converge")


@pytest.mark.parametrize("how", ["cut", "kill"])
def test_fault_phases(hosts, how):
    """(e) A migration broken at every phase before B can run the VM, by
    cutting the relay (one B, started with --incoming, goes back to waiting
    after each) or by killing B's QEMU while the relay holds there (a fresh B
    each time): the source says why and its VM runs on unchanged; a B that
    lives keeps no VM. At stop-and-copy the source may have written its END
    whole before the cut (into the relay's buffers): it cannot know B never
    got it, so its VM waits paused, left-unconfirmed, and the operator (the
    test) resumes it, B having nothing. The guest, mig_dirty writing all the
    while, passes its checks on A."""
    a = hosts("a", [vm_spec("m", "mig_dirty", 2, "mib=4 wait_ms=%d" % (
        36000 if how == "cut" else 40000)), OTHER])
    port = free_port()
    b = hosts("b0", incoming=port)
    a.ready(), b.ready()
    marker_line(a, "m", "MIGRATE-READY")
    a_free, b_free = free_mem(a), free_mem(b)
    t0 = time.monotonic()
    for i, phase in enumerate(PHASES):
        assert not a.count("m", "DONE:"), f"the guest ended before {phase}: raise its wait_ms"
        if how == "cut":
            m = a.migrate("m", port, *PRECOPY_3, "--cut-at", phase)
        else:
            b.ready()
            p = a.migrate("m", port, *PRECOPY_3, "--hold-at", phase,
                          "--hold-seconds", str(HOLD), background=True)
            p.wait_event("hook", 60)
            t_hook = time.monotonic()
            b.kill()        # SIGTERM to carapace-run, which takes its QEMU down
            killed = time.monotonic() - t_hook
            # B was gone before the relay went on (else B might have finished)
            assert killed < HOLD - 0.5, f"B took {killed:.1f} s to go: raise HOLD"
            assert b.proc.returncode is not None
            if i + 1 < len(PHASES):     # the next B boots while this one ends
                port = free_port()
                b = hosts(f"b{i + 1}", incoming=port)
            m = p.finish()
        where = f"{how} at {phase}"
        check_cut_migration(m, phase, where)
        if m.reply["code"] == "unconfirmed":
            assert phase == "stop-and-copy" and m.of("end"), f"{where}: {m.text()}"
            check_left_unconfirmed(a, "m", where)
            if how == "cut":
                b.wait_vms({})          # B never got END: it never ran the VM
            a.ctl("resume", "m")
        if phase == "negotiation":
            assert not m.of("accept"), m.text()
        if phase.startswith("round:"):
            assert [r["round"] for r in m.of("round")] == list(range(1, int(phase[6:]) + 1))
        if phase in ("stop-and-copy", "confirmation"):
            assert m.of("stop-and-copy"), m.text()
        assert a.vms() == {"m": "running", "other": "running"}, f"{where}\n{a.console()}"
        if how == "cut":
            b.wait_vms({})
    print(f"{how}: all phases in {time.monotonic() - t0:.1f} s")
    # nothing leaked: dirty logging's bitmaps and split tables on a, the
    # discarded VMs on b
    assert free_mem(a) == a_free, (free_mem(a), a_free)
    if how == "cut":
        assert free_mem(b) == b_free, (free_mem(b), b_free)
        assert len([l for l in b.snapshot() if l.startswith(
            "carapace: incoming migration failed:") and "waiting for another" in l]) == \
            len(PHASES), \
            b.console()
        # its relay went back to waiting after each, as its hypervisor did
        assert [e["event"] for e in b.relay_events()].count("ended") == len(PHASES), \
            b.relay_events()
    a.wait_for(lambda l: l == "carapace: vm m: shut down", 90)
    rep = Report(a.guest("m"))
    check_report(rep, f"vm m on a after a failed migration at every phase ({how})")
    assert a.vms() == {"m": "down", "other": "running"}
    if how == "cut":
        assert b.vms() == {}, b.console()
