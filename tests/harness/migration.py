# SPDX-License-Identifier: MIT
"""Live migration between Carapace hosts on the loopback address
(docs/migration.md): MigHost, a host of a migration test (a source, or a
fresh `carapace-run --incoming` destination); CtlProc, a carapace-ctl
migrate / incoming in the background; Mig, what one said (--json events and
reply); and the checks the bare-metal migration tests share. The Linux
tests' hosts are the same class with longer timeouts (harness.linux)."""

import json
import subprocess
import threading
import time
from dataclasses import dataclass, field

import pytest

from harness.hosts import Host
from harness.paths import CTL, HYP
from harness.runs import vm_spec

ADDR = "127.0.0.1"
MIG_TIMEOUT = 120       # one carapace-ctl (a migrate or incoming to its end)
# a VM that prints on and on beside the one that moves: it must never stop
OTHER = vm_spec("other", "demo", 1, "count=100000 delay_us=20000")


@dataclass
class Mig:
    """What one carapace-ctl migrate/incoming said: its exit status, its
    --json events and reply, its stderr."""
    rc: int
    events: list = field(default_factory=list)
    reply: dict | None = None
    err: str = ""

    @classmethod
    def parse(cls, rc, out, err):
        """From carapace-ctl --json's exit status @rc, stdout @out, stderr @err."""
        objs = []
        for line in out.splitlines():
            line = line.strip()
            if line.startswith("{"):
                objs.append(json.loads(line))
        events = [o for o in objs if "event" in o]
        replies = [o for o in objs if "event" not in o]
        return cls(rc, events, replies[-1] if replies else None, err)

    def of(self, kind):
        return [e for e in self.events if e.get("event") == kind]

    def text(self):
        return (f"exit {self.rc}\n" + "\n".join(json.dumps(e) for e in self.events)
                + f"\nreply {self.reply}\nstderr {self.err}")


class CtlProc:
    """A carapace-ctl migrate/incoming in the background, its --json lines
    collected as they come; finish() waits at most @timeout seconds."""

    def __init__(self, cmd, timeout=MIG_TIMEOUT):
        self.timeout = timeout
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines, self.lock = [], threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line)

    def wait_event(self, kind, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                for line in self.lines:
                    if line.startswith("{") and json.loads(line).get("event") == kind:
                        return json.loads(line)
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.02)
        pytest.fail(f"carapace-ctl gave no {kind} event\n" + "".join(self.lines)
                    + (self.proc.stderr.read() if self.proc.poll() is not None else ""))

    def finish(self, timeout=None):
        try:
            self.proc.wait(timeout or self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait()
            pytest.fail("carapace-ctl did not end\n" + "".join(self.lines))
        self.reader.join(5)
        return Mig.parse(self.proc.returncode, "".join(self.lines), self.proc.stderr.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()


class MigHost(Host):
    """One host (a carapace-run) of a migration test, in its own directory,
    with its stream socket: --persist, or with @incoming a fresh host waiting
    for one VM, whose relay listens on 127.0.0.1:@incoming with TLS (@creds,
    a credentials directory) or, with @plain, plain TCP (--incoming-plain);
    the relay's events go to events.jsonl (unless @env is given).
    Construction starts it; ready() waits for its management channel (so
    that two hosts boot side by side).

    @ctl_timeout bounds each carapace-ctl it runs (a migrate or incoming to
    its end, any other command); @reply_timeout, if given, is every
    command's carapace-ctl --timeout (migrate and incoming always have 60);
    @stop_grace and @must_stop are Host's (kill())."""

    def __init__(self, tmp_path, tag, vms=(), incoming=None, extra=(), timeout=300,
                 creds=None, plain=False, env=None, ctl_timeout=MIG_TIMEOUT,
                 reply_timeout=None, stop_grace=Host.stop_grace, must_stop=Host.must_stop):
        if not HYP.is_file():
            pytest.fail(f"{HYP} missing: run `make` (or `make cfi`)")
        d = tmp_path / tag
        d.mkdir()
        self.tag, self.port, self.creds = tag, incoming, creds
        self.ctl_timeout, self.reply_timeout = ctl_timeout, reply_timeout
        self.stop_grace, self.must_stop = stop_grace, must_stop
        self.sock = d / "ctl.sock"
        self.stream = d / "stream.sock"
        self.events_path = d / "events.jsonl"
        # an --incoming host's stream socket is the default one: stream.sock
        # beside ctl.sock
        args = []
        if incoming is None:
            args += ["--persist", "--stream-socket", str(self.stream)]
        elif plain:
            args += ["--incoming-plain", str(incoming)]
        else:
            args += ["--incoming", str(incoming)]
            args += ["--tls-dir", str(creds)] if creds else []
        if incoming is not None and env is None:
            args += ["--incoming-events", str(self.events_path)]
        self.start(["--batch", "--timeout", str(timeout), "--smp", "2",
                    "--ctl-socket", str(self.sock), *args, *extra], vms, env=env)

    def ready(self, timeout=60):
        self.wait_for(lambda l: "management channel" in l, timeout)
        return self

    def console(self, n=100):
        return f"--- host {self.tag} console ---\n" + "\n".join(self.snapshot()[-n:])

    def relay_events(self):
        """The --incoming relay's events so far (carapace-run --incoming-events)."""
        if not self.events_path.exists():
            return []
        return [json.loads(l) for l in self.events_path.read_text().splitlines() if l]

    def _ctl_cmd(self, *args):
        return [str(CTL), "--socket", str(self.sock), "--stream-socket", str(self.stream),
                "--json", *args]

    def ctl(self, *args, check=True):
        """carapace-ctl --json @args: (its reply, its exit status)."""
        timeout = ["--timeout", str(self.reply_timeout)] if self.reply_timeout else []
        r = subprocess.run(self._ctl_cmd(*timeout, *args), capture_output=True, text=True,
                           timeout=self.ctl_timeout)
        m = Mig.parse(r.returncode, r.stdout, r.stderr)
        if check:
            assert r.returncode == 0, f"carapace-ctl {args}: {m.text()}\n{self.console()}"
        return m.reply, r.returncode

    def vms(self):
        listing, _ = self.ctl("list")
        return {v["name"]: v["state"] for v in listing["vms"]}

    def wait_vms(self, want, timeout=15):
        """The host's VM list reaches @want ({name: state}) within @timeout."""
        end = time.monotonic() + timeout
        while True:
            got = self.vms()
            if got == want or time.monotonic() > end:
                break
            time.sleep(0.2)
        assert got == want, f"host {self.tag}: VMs {got}, want {want}\n{self.console()}"

    def count(self, vm, prefix):
        return len([l for l in self.guest(vm) if l.startswith(prefix)])

    # -- the two ends of a migration, through carapace-ctl --
    def transport(self, plain):
        if plain:
            return ["--plain"]
        assert self.creds, f"host {self.tag}: no credentials"
        return ["--tls-dir", str(self.creds)]

    def migrate(self, vm, port, *opts, background=False, plain=False):
        """carapace-ctl migrate @vm 127.0.0.1:@port on this host (the source):
        its Mig, or with @background its CtlProc."""
        p = CtlProc(self._ctl_cmd("--timeout", "60", "migrate", vm, f"{ADDR}:{port}",
                                  *self.transport(plain), *opts), self.ctl_timeout)
        return p if background else p.finish()

    def incoming(self, port, name=None, plain=False, opts=()):
        """carapace-ctl incoming @port on this (running) host, with @opts (e.g.
        ["--copy-disks", "--disk", "5"]), in the background, once it listens;
        finish() gives its result."""
        cmd = self._ctl_cmd("--timeout", "60", "incoming", str(port), *self.transport(plain),
                            *opts)
        if name:
            cmd += ["--name", name]
        p = CtlProc(cmd, self.ctl_timeout)
        p.wait_event("listening", 30)
        return p


def free_mem(h):
    """Host @h's free memory (bytes), from its stats."""
    stats, _ = h.ctl("stats")
    return stats["host"]["free_mem"]


def marker_line(h, vm, marker, timeout=60):
    return h.wait_for(lambda l: l.startswith(f"[{vm}] {marker}"), timeout)


def life(src_lines, dst_lines, marker):
    """One guest's life: its lines on the source up to its marker, then its
    lines on the destination."""
    i = next(i for i, l in enumerate(src_lines) if l.startswith(marker))
    return src_lines[:i + 1] + dst_lines


def check_ok_migration(m, vm, where):
    """@m (a Mig) moved @vm and reported every phase."""
    assert m.rc == 0 and m.reply and m.reply["ok"] and m.reply["vm"] == vm, \
        f"{where}: {m.text()}"
    kinds = [e["event"] for e in m.events]
    for k in ("caps", "config", "accept", "round", "stop-and-copy", "running", "done"):
        assert k in kinds, f"{where}: no {k} event: {m.text()}"
    assert not m.of("abort"), m.text()
    assert m.reply["rounds"] >= 1 and m.reply["pages"] > 0 and m.reply["bytes"] > 0, m.reply


def check_cut_migration(m, phase, where):
    """@m (a Mig) ended without a move at its hook @phase (a --cut-at, or the
    destination lost there): the hook reported that phase, the reply failed
    (code stream, no-stream or unconfirmed, named in the error), no done."""
    print(f"{where}: {m.reply and m.reply.get('code')}: {m.reply and m.reply.get('error')}")
    hook = m.of("hook")
    assert hook and hook[0]["phase"] == phase, f"{where}: {m.text()}"
    assert m.rc == 1 and m.reply and not m.reply["ok"], f"{where}: {m.text()}"
    assert m.reply["code"] in ("stream", "no-stream", "unconfirmed"), f"{where}: {m.text()}"
    assert m.reply["code"] in m.err and m.reply["error"], f"{where}: {m.text()}"
    assert not m.of("done"), f"{where}: {m.text()}"


def check_left_unconfirmed(h, vm, where):
    """@vm stayed on the source host @h paused, marked left-unconfirmed (its
    stream's END was out when the move was cut)."""
    listing, _ = h.ctl("list")
    state = next(v for v in listing["vms"] if v["name"] == vm)
    assert state["state"] == "paused" and state["migration"] == "left-unconfirmed", (where, state)
