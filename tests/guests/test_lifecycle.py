# SPDX-License-Identifier: MIT
"""VM lifecycle and the management channel, with bare-metal guests: pause and
resume (the other VM never stops; a timer deadline still fires), destroy
(memory and VMID come back), create at run time from loaded images, every
malformed or impossible request answered with an error, and the TLB upkeep
scenarios (vCPUs moving between harts, fewer VMIDs than VMs).

The hypervisor runs in batch mode with a control socket; the tests drive it
with tools/carapace-ctl --json, exactly as a user's script would."""

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from test_guests import (EXIT_OK, HYP, LAUNCHER, ROOT, Report, check_report,  # noqa: F401
                         guests_built, run_carapace, vm_spec)

pytestmark = pytest.mark.quick

CTL = ROOT / "tools" / "carapace-ctl"


class Host:
    """One Carapace run in the background, its console collected line by line."""

    def __init__(self, tmp_path, vms, extra=(), timeout=90):
        if not HYP.is_file():
            pytest.fail("build/carapace.bin missing: run `make`")
        self.sock = tmp_path / "ctl.sock"
        cmd = [str(LAUNCHER), "--batch", "--timeout", str(timeout), "--smp", "2",
               "--ctl-socket", str(self.sock), *extra]
        for v in vms:
            cmd += ["--vm", v]
        self.lines = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.wait_for(lambda l: "management channel" in l, 30)

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\r\n"))

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def wait_for(self, pred, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for line in self.snapshot():
                if pred(line):
                    return line
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.05)
        pytest.fail(f"timed out waiting for a console line\n" + "\n".join(self.snapshot()))

    def guest(self, name):
        return [l[len(name) + 3:] for l in self.snapshot() if l.startswith(f"[{name}] ")]

    def ctl(self, *args, check=True):
        r = subprocess.run([str(CTL), "--socket", str(self.sock), "--json", *args],
                           capture_output=True, text=True, timeout=60)
        if check:
            assert r.returncode == 0, f"carapace-ctl {args}: {r.returncode}\n{r.stdout}{r.stderr}"
        return json.loads(r.stdout) if r.stdout.strip() else None, r.returncode

    def raw(self, line, timeout=10):
        """Send bytes on the control socket ourselves; the reply line as a dict."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(self.sock))
            s.sendall(line if isinstance(line, bytes) else line.encode())
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        return json.loads(buf)

    def raw_all(self, data, want_id, timeout=10):
        """Send @data; every reply line up to the one with id @want_id."""
        replies = []
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(self.sock))
            s.sendall(data.encode())
            buf = b""
            while not replies or replies[-1].get("id") != want_id:
                while b"\n" not in buf:
                    chunk = s.recv(65536)
                    assert chunk, f"connection closed; replies so far {replies}"
                    buf += chunk
                line, _, buf = buf.partition(b"\n")
                replies.append(json.loads(line))
        return replies

    def finish(self, timeout=120):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("the run did not end\n" + "\n".join(self.snapshot()))
        self.reader.join(5)
        return self.proc.returncode

    def kill(self):
        """SIGTERM first: the launcher then takes QEMU down with it (a KILL
        would leave QEMU running in its own session)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def host_factory(tmp_path, guests_built):
    hosts = []

    def make(*args, **kw):
        h = Host(tmp_path, *args, **kw)
        hosts.append(h)
        return h
    yield make
    for h in hosts:
        h.kill()


def hellos(lines):
    return [l for l in lines if l.startswith("hello from ")]


def qemu_pids_serving(sock):
    """PIDs of the QEMU processes whose control socket is @sock."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"qemu-system-riscv64") and \
                any(str(sock).encode() in a for a in cmd):
            pids.append(int(d.name))
    return pids


def test_sigterm_takes_qemu_down(host_factory):
    """SIGTERM to the launcher stops its QEMU (it runs in a session of its own,
    so nothing else would): the thin carapace-run script once imported the
    launcher without installing its SIGTERM handler, and every test host left
    a QEMU running."""
    h = host_factory([vm_spec("a", "demo", 1, "count=1000000 delay_us=50000")])
    h.wait_for(lambda l: l.startswith("[a] hello from"), 30)
    pids = qemu_pids_serving(h.sock)
    assert len(pids) == 1, pids
    h.kill()
    deadline = time.monotonic() + 10
    while qemu_pids_serving(h.sock) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = qemu_pids_serving(h.sock)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"QEMU {left} still runs after carapace-run got SIGTERM"


def test_pause_resume_other_vm_goes_on(host_factory):
    """Pausing one VM stops all its vCPUs; the other VM keeps printing; after
    resume the paused one continues where it was and both finish."""
    h = host_factory([vm_spec("a", "demo", 2, "count=60 delay_us=40000"),
                      vm_spec("b", "demo", 1, "count=100000 delay_us=40000")],
                     extra=["--expect", "b=destroyed"])
    h.wait_for(lambda l: l.startswith("[a] hello from 0 (5/"), 30)
    rep, _ = h.ctl("pause", "a")
    assert rep["ok"] and rep["state"] == "paused", rep
    listing, _ = h.ctl("list")
    states = {v["name"]: v["state"] for v in listing["vms"]}
    assert states == {"a": "paused", "b": "running"}, listing
    a_before, b_before = len(hellos(h.guest("a"))), len(hellos(h.guest("b")))
    time.sleep(1.5)
    assert len(hellos(h.guest("a"))) == a_before, "a paused VM printed"
    assert len(hellos(h.guest("b"))) >= b_before + 5, "the other VM stopped too"
    cfi, _ = h.ctl("cfi", "a")
    assert [v["id"] for v in cfi["vcpus"]] == [0, 1]
    assert h.ctl("pause", "a", check=False)[1] == 1     # already paused: bad-state
    rep, _ = h.ctl("resume", "a")
    assert rep["state"] == "running", rep
    h.wait_for(lambda l: l == "carapace: vm a: shut down", 60)
    h.ctl("destroy", "b")
    assert h.finish() == EXIT_OK
    check_report(_report(h, "a"), "vm a")
    # it continued where it stopped: every line once, in order
    nums = [int(m.group(1)) for l in hellos(h.guest("a"))
            if (m := re.match(r"hello from 0 \((\d+)/", l))]
    assert nums == list(range(1, 61)), nums


def _report(h, name):
    return Report(h.guest(name))


def test_paused_timer_deadline_fires_after_resume(host_factory):
    """A sleeper programs its timer, is paused past the deadline, and wakes
    once resumed: guest time kept running, and the deadline was not lost."""
    h = host_factory([vm_spec("s", "sleeper", 1, "ticks=6 period_ms=300 max_late_ms=5000"),
                      vm_spec("d", "demo", 1, "count=80 delay_us=50000")])
    h.wait_for(lambda l: l.startswith("[s] INFO: sleeper: tick 1/"), 30)
    h.ctl("pause", "s")
    time.sleep(1.0)
    h.ctl("resume", "s")
    assert h.finish() == EXIT_OK
    check_report(_report(h, "s"), "vm s")
    late = [int(m.group(1)) for l in h.guest("s")
            if (m := re.search(r"tick \d+/6, (\d+) us late", l))]
    assert len(late) == 6, late
    # the deadline that passed during the pause fired after resume
    assert max(late) >= 400_000, late


def test_destroy_returns_memory_and_create_reuses_it(host_factory):
    """destroy gives back the VM's memory and VMID; create boots a new VM from
    a loaded image into the freed slot; host memory comes back to the figure
    it had before."""
    h = host_factory([vm_spec("keep", "demo", 1, "count=2000 delay_us=40000"),
                      vm_spec("gone", "demo", 2, "count=400 delay_us=40000")],
                     extra=["--spare-mem", "64M", "--expect", "gone=destroyed",
                            "--expect", "keep=destroyed"])
    h.wait_for(lambda l: l.startswith("[gone] hello"), 30)
    before, _ = h.ctl("stats")
    free0 = before["host"]["free_mem"]
    rep, _ = h.ctl("destroy", "gone")
    assert rep["freed"] >= 64 << 20, rep
    after, _ = h.ctl("stats")
    assert after["host"]["free_mem"] >= free0 + (64 << 20), (before, after)
    listing, _ = h.ctl("list")
    assert [v["name"] for v in listing["vms"]] == ["keep"]
    images, _ = h.ctl("images")
    assert {"gone.kernel", "keep.kernel"} <= {i["name"] for i in images["images"]}
    rep, _ = h.ctl("create", "fresh", "--kernel", "gone.kernel", "--mem", "64M",
                   "--vcpus", "2", "--bootargs", "count=3 delay_us=1000")
    assert rep["ok"] and rep["vm"] == "fresh", rep
    h.wait_for(lambda l: l.startswith("[fresh] DONE:"), 30)
    h.wait_for(lambda l: l == "carapace: vm fresh: shut down", 30)
    check_report(_report(h, "fresh"), "vm fresh")
    assert any("vm fresh:" in l and "VMID" in l for l in h.snapshot())
    h.ctl("destroy", "fresh")
    final, _ = h.ctl("stats")
    assert final["host"]["free_mem"] == after["host"]["free_mem"], (after, final)
    assert h.ctl("list")[0]["vms"][0]["name"] == "keep"
    h.ctl("destroy", "keep")
    assert h.finish() == EXIT_OK


BAD_REQUESTS = [
    ("not json", "bad-request"),
    ('{"v":1,"cmd":"list"', "bad-request"),
    ('{"v":2,"cmd":"list"}', "version"),
    ('{"cmd":"list"}', "bad-request"),
    ('{"v":1}', "bad-request"),
    ('{"v":1,"cmd":"frobnicate"}', "unknown-command"),
    ('{"v":1,"cmd":"list","extra":1}', "bad-request"),
    ('{"v":1,"cmd":"pause"}', "bad-request"),
    ('{"v":1,"cmd":"pause","vm":"nosuch"}', "no-such-vm"),
    ('{"v":1,"cmd":"pause","vm":7}', "bad-request"),
    ('{"v":1,"cmd":"resume","vm":"a"}', "bad-state"),
    ('{"v":1,"cmd":"create","name":"a","kernel":"a.kernel"}', "exists"),
    ('{"v":1,"cmd":"create","name":"x","kernel":"nope"}', "invalid"),
    ('{"v":1,"cmd":"create","name":"x","kernel":"a.kernel","vcpus":9}', "invalid"),
    ('{"v":1,"cmd":"create","name":"x","kernel":"a.kernel","mem":12345}', "invalid"),
    ('{"v":1,"cmd":"create","name":"Bad Name","kernel":"a.kernel"}', "invalid"),
    ('{"v":1,"cmd":"create","name":"x","kernel":"a.kernel","cfi":"loose"}', "invalid"),
    ('{"v":1,"cmd":"create","name":"x","kernel":"a.kernel","mem":1099511627776}', "no-memory"),
    ('{"v":1,"id":-1,"cmd":"list"}', "bad-request"),
    ('{"v":1,"cmd":"list","cmd":"list"}', "bad-request"),
]


def test_channel_refuses_bad_input(host_factory):
    """Every malformed or impossible request gets an error reply with the
    right code; nothing hangs, and the hypervisor answers normally after."""
    h = host_factory([vm_spec("a", "demo", 1, "count=400 delay_us=40000")],
                     extra=["--expect", "a=destroyed"])
    h.wait_for(lambda l: l.startswith("[a] hello"), 30)
    for line, code in BAD_REQUESTS:
        rep = h.raw(line + "\n")
        assert rep["ok"] is False and rep["code"] == code, (line, rep)
        assert rep["v"] == 1 and rep["error"], rep
    rep = h.raw('{"v":1,"id":42,"cmd":"hello"}\n')
    assert rep["ok"] and rep["id"] == 42 and rep["protocol"] == 1, rep
    # a line over 4096 bytes: refused as a whole, and the next line works
    rep = h.raw(b'{"v":1,"cmd":"list","x":"' + b"y" * 5000 + b'"}\n')
    assert rep["code"] == "bad-request" and "too long" in rep["error"], rep
    rep = h.raw('{"v":1,"id":7,"cmd":"list"}\n')
    assert rep["ok"] and rep["id"] == 7, rep
    # a client that leaves half a line behind does not poison the next one
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(h.sock))
        s.sendall(b'{"v":1,"cmd":"pau')
    time.sleep(0.3)
    rep = h.raw('{"v":1,"id":8,"cmd":"list"}\n')
    assert rep["ok"] and rep["id"] == 8, rep
    # ... nor one that reconnects at once, if it starts with a newline as
    # docs/management.md says clients should (carapace-ctl does): the
    # fragment gets its own error reply (id null), then the request its answer
    for i in range(5):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(h.sock))
            s.sendall(b'{"v":1,"id":99,"cmd":"li')
        replies = h.raw_all(f'\n{{"v":1,"id":{20 + i},"cmd":"list"}}\n', 20 + i)
        assert replies[-1]["ok"] and replies[-1]["id"] == 20 + i, replies
        assert all(r["id"] is None and r["code"] == "bad-request" for r in replies[:-1]), replies
        listing, _ = h.ctl("list")  # carapace-ctl itself, right after a fragment
        assert listing["ok"]
    listing, _ = h.ctl("list")
    assert listing["vms"][0]["state"] == "running"
    h.ctl("destroy", "a")
    assert h.finish() == EXIT_OK


def test_vcpus_move_between_harts(guests_built):
    """Three vCPUs and a second VM on two harts: a page made read-only by one
    vCPU faults for every other one, wherever it runs now; writes after a
    write-protect from every vCPU are seen as dirty."""
    run = run_carapace([vm_spec("m", "tlb_move", 3, "rounds=8") + "",
                        vm_spec("d", "demo", 1, "count=30 delay_us=20000")],
                       names=["m", "d"], extra=["--timeslice-us", "500"])
    assert run.code == EXIT_OK, run.out
    check_report(run.guests["m"], "vm m")
    check_report(run.guests["d"], "vm d")


def test_vcpus_move_dirty_tracking(guests_built):
    run = run_carapace(["name=m,kernel=build/guests/tlb_move.bin,vcpus=3,debug=1,"
                        "bootargs=rounds=3"], names=["m"], extra=["--timeslice-us", "500"])
    assert run.code == EXIT_OK, run.out
    rep = run.guests["m"]
    check_report(rep, "vm m")
    assert not rep.kind("SKIP: "), rep.lines
    assert any("counted dirty" in l for l in rep.kind("PASS: ")), rep.lines


def test_more_vms_than_vmids(guests_built):
    """A boot option narrows the VMID width to one bit (one VMID): three VMs
    share the fallback VMID, are flushed on every switch, and all pass."""
    run = run_carapace([vm_spec("v1", "tlb_move", 2, "rounds=4"),
                        vm_spec("v2", "tlb_move", 2, "rounds=4"),
                        vm_spec("v3", "demo", 1, "count=20 delay_us=10000")],
                       names=["v1", "v2", "v3"], extra=["--vmid-bits", "1",
                                                          "--timeslice-us", "500"])
    assert run.code == EXIT_OK, run.out
    for n in ("v1", "v2", "v3"):
        check_report(run.guests[n], f"vm {n}")
    vmids = dict(re.findall(r"carapace: vm (\w+): overhead .* VMID (\d+)", run.out))
    assert vmids == {"v1": "1", "v2": "0", "v3": "0"}, vmids
    assert "vmid bits 1" in run.out


def test_vcpus_made_runnable_together_wake_as_many_idle_harts(guests_built):
    """Issue 22 (review): a kick woke one idle hart, the lowest idle one, even
    when a kick a moment earlier had picked it and it had not woken yet; so
    of several vCPUs made runnable at once (an IPI to several, a resume, a VM
    start) one ran and the others waited for a time slice to end while other
    harts slept. Four vCPUs on four harts, 1 s slices: vCPU 0 wakes the other
    three with one IPI call and keeps its hart busy; each must run at once.
    Measured before the fix: 16 to 23 of 48 wake-ups took 1 to 2 s; after it,
    at most 0.14 s on a loaded 2-core machine."""
    run = run_carapace([vm_spec("f", "wake_fanout", 4, "rounds=12 spin_ms=30")],
                       smp=4, names=["f"], extra=["--timeslice-us", "1000000"])
    assert run.code == EXIT_OK, run.out
    check_report(run.guests["f"], "vm f")
    lat = [int(m.group(1)) for l in run.guests["f"].lines
           if (m := re.match(r"FANOUT round \d+ hart \d+ us (\d+)$", l))]
    assert len(lat) == 36, run.guests["f"].lines
    assert max(lat) < 500000, sorted(lat)


def test_delayed_reply_reaches_a_client_that_connected_right_after_another(host_factory):
    """A client may connect the moment the previous one left, and be heard
    before the hypervisor has seen its connect event (vcon gives its bytes to
    the pending connection). A reply that comes later (pause waits for the
    vCPUs to leave their harts; a snapshot for its stream) must still reach
    it: it once was dropped as if meant for the client that had left."""
    h = host_factory([vm_spec("a", "spin", 1, "spin_ms=600000")],
                     extra=["--expect", "a=destroyed"], timeout=240)
    h.wait_for(lambda l: l.startswith("[a] "), 30)
    for i in range(40):
        rep = h.raw(f'{{"v":1,"id":{1000 + i},"cmd":"hello"}}\n')     # connect, ask, leave
        assert rep["ok"], rep
        cmd = "pause" if i % 2 == 0 else "resume"
        replies = h.raw_all(f'\n{{"v":1,"id":{i},"cmd":"{cmd}","vm":"a"}}\n', i, timeout=20)
        assert replies[-1]["ok"] and replies[-1]["id"] == i, (i, replies)
    listing, _ = h.ctl("list")
    assert listing["vms"][0]["state"] == "running", listing
    h.ctl("destroy", "a")
    assert h.finish() == EXIT_OK


def test_idle_harts_sleep_after_a_vm_shut_down(host_factory):
    """Once a VM that used its timer has shut down in a host that stays up,
    both harts sleep in wfi until the next event. A deadline left in
    vstimecmp once kept VSTIP pending, so wfi returned at once and QEMU spun
    at full speed on every hart (millions of wake-ups a second)."""
    h = host_factory([vm_spec("s", "sleeper", 2, "ticks=3 period_ms=50 max_late_ms=5000")],
                     extra=["--persist"])
    h.wait_for(lambda l: l == "carapace: vm s: shut down", 60)
    time.sleep(0.5)
    first, _ = h.ctl("stats")
    time.sleep(2.0)
    second, _ = h.ctl("stats")
    a, b = first["host"]["idle_wakeups"], second["host"]["idle_wakeups"]
    assert len(a) == len(b) == 2, (first, second)
    grown = [y - x for x, y in zip(a, b)]
    # an idle hart wakes for its idle deadline and the channel's requests:
    # tens to hundreds a second, never hundreds of thousands
    assert all(0 <= g < 5000 for g in grown), grown
    assert second["host"]["events_dropped"] == 0, second   # issue 22: drops are reported
    assert h.ctl("list")[0]["vms"][0]["state"] != "running"


def test_cfi_report_reads_a_running_vcpus_live_state(host_factory):
    """`cfi` on a VM whose vCPUs never left their harts (one VM, one vCPU per
    hart) shows the ssp and senvcfg the guest set since it was loaded: they
    live in the hart's CSRs until the vCPU is put, and the report once showed
    the stale saved values (ssp 0, senvcfg 0)."""
    h = host_factory([vm_spec("c", "snap_cfi", 2, "wait_ms=20000")],
                     extra=["--expect", "c=destroyed"])
    line = h.wait_for(lambda l: l.startswith("[c] SNAPSHOT-READY"), 60)
    ssp = int(re.search(r"ssp=(0x[0-9a-f]+)", line).group(1), 16)
    for _ in range(3):
        rep, _ = h.ctl("cfi", "c")
        v0 = rep["vcpus"][0]
        assert v0["ss_enabled"] and v0["ss_locked"], v0
        assert v0["ssp"] == ssp, (hex(v0["ssp"]), hex(ssp))
        assert v0["senvcfg"] & 0xc, v0      # LPE (bit 2) and SSE (bit 3) set for VU
        time.sleep(0.2)
    h.ctl("destroy", "c")
    assert h.finish() == EXIT_OK


def test_reboot_resets_cfi_state_and_this_boots_counters(host_factory):
    """Issue 12 item 5: a guest reboot (SBI SRST) resets its CFI state (FWFT
    values and locks, senvcfg: tests/guests/cfi_reboot.c checks them itself
    in its second boot), and each vCPU's violation counters restart while
    the VM's lifetime totals go on: the `cfi` report during boot 1 shows 0
    for the vCPU and 2 in all; the outcome line counts both boots."""
    h = host_factory([vm_spec("r", "cfi_reboot", 1, "wait_ms=3000")])
    h.wait_for(lambda l: l == "[r] CFI-REBOOT boot 0: 2 violations", 30)
    h.wait_for(lambda l: l == "[r] CFI-REBOOT boot 1 ready", 30)
    rep, _ = h.ctl("cfi", "r")
    v0 = rep["vcpus"][0]
    assert (v0["violations_lp"], v0["violations_ss"]) == (0, 0), rep
    assert (rep["violations_lp_total"], rep["violations_ss_total"]) == (2, 0), rep
    assert not v0["ss_enabled"] and not v0["ss_locked"] and not v0["lp_locked"], rep
    assert h.finish() == EXIT_OK
    check_report(_report(h, "r"), "vm r (two boots)")
    counts = [l for l in h.snapshot() if l.startswith("carapace: vm r: exits")]
    assert counts and "cfi violations: landing pad 2, shadow stack 0" in counts[-1], counts


def test_rng_seed_fresh_for_every_boot_and_every_tenant_of_a_slot(host_factory):
    """Issue 22 (review): /chosen/rng-seed was derived from the VM's slot and
    boot count, so the VM created in a slot after a destroy booted with its
    predecessor's seed (a tenant could predict the next tenant's early
    randomness). Every boot of every VM must get a seed never seen before:
    three boots of one VM (it reboots itself), then two more VMs created in
    its slot."""
    h = host_factory([vm_spec("a", "rng_seed", 1, "reboots=2")], extra=["--persist"])
    seeds = {}

    def seed_of(vm, boot):
        line = h.wait_for(lambda l: l.startswith(f"[{vm}] RNG-SEED boot {boot} "), 30)
        seeds[(vm, boot)] = line.split()[-1]

    for boot in range(3):
        seed_of("a", boot)
    h.wait_for(lambda l: l == "carapace: vm a: shut down", 30)
    h.ctl("destroy", "a")
    for vm in ("b", "c"):      # each created into the slot "a" had (the only one)
        rep, _ = h.ctl("create", vm, "--kernel", "a.kernel", "--mem", "64M", "--vcpus", "1")
        assert rep["ok"], rep
        seed_of(vm, 0)
        h.wait_for(lambda l: l == f"carapace: vm {vm}: shut down", 30)
        h.ctl("destroy", vm)
    assert len(seeds) == 5 and all(len(s) == 64 for s in seeds.values()), seeds
    assert len(set(seeds.values())) == 5, seeds
