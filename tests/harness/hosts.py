# SPDX-License-Identifier: MIT
"""Carapace hosts that stay up while a test drives them: a carapace-run in
the background (batch mode, or interactive with a pipe for a terminal), its
console collected line by line, its control socket reached through
carapace-ctl --json as a user's script would, or raw. Host (control socket),
SnapHost (plus a stream socket: snapshot and restore), TypingHost (keyboard
input for the focused VM). The migration hosts are harness.migration's."""

import json
import socket
import subprocess
import threading
import time

import pytest

from harness.paths import CTL, HYP, LAUNCHER, ROOT


class Host:
    """One Carapace run in the background, its console collected line by line.
    kill() sends SIGTERM and waits @stop_grace seconds, then KILLs (and with
    @must_stop fails the test: the launcher must stop on SIGTERM)."""

    stop_grace, must_stop = 15, False

    def __init__(self, tmp_path, vms, extra=(), timeout=90):
        if not HYP.is_file():
            pytest.fail(f"{HYP} missing: run `make` (or `make cfi`)")
        self.sock = tmp_path / "ctl.sock"
        self.start(["--batch", "--timeout", str(timeout), "--smp", "2",
                    "--ctl-socket", str(self.sock), *extra], vms)
        self.wait_for(lambda l: "management channel" in l, 30)

    def start(self, args, vms, env=None, stdin=subprocess.DEVNULL):
        """Start carapace-run @args --vm each of @vms; a thread reads the console."""
        cmd = [str(LAUNCHER), *args]
        for v in vms:
            cmd += ["--vm", v]
        self.lines = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=stdin,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace", env=env)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

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
        pytest.fail("timed out waiting for a console line\n" + "\n".join(self.snapshot()))

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
                self.proc.wait(timeout=self.stop_grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                if self.must_stop:
                    pytest.fail(f"carapace-run still ran {self.stop_grace} s after SIGTERM")


class SnapHost(Host):
    """A Host with a stream socket (stream.sock): snapshot and restore."""

    def __init__(self, tmp_path, vms, extra=(), timeout=120):
        self.stream = tmp_path / "stream.sock"
        super().__init__(tmp_path, vms, ["--stream-socket", str(self.stream), *extra], timeout)

    def ctl(self, *args, check=True):
        r = subprocess.run([str(CTL), "--socket", str(self.sock), "--stream-socket",
                            str(self.stream), "--json", *args],
                           capture_output=True, text=True, timeout=120)
        if check:
            assert r.returncode == 0, (f"carapace-ctl {args}: {r.returncode}\n{r.stdout}"
                                       f"{r.stderr}\n--- console ---\n" +
                                       "\n".join(self.snapshot()[-60:]))
        out = r.stdout.strip().splitlines()
        return (json.loads(out[-1]) if out else None), r.returncode, r.stderr


class TypingHost(SnapHost):
    """An interactive carapace-run (no --batch) whose terminal is a pipe: what
    type() writes is keyboard input for the focused VM. Console lines as Host."""

    def __init__(self, tmp_path, vms, extra=()):
        self.stream = tmp_path / "stream.sock"
        self.sock = tmp_path / "ctl.sock"
        self.start(["--smp", "2", "--ctl-socket", str(self.sock),
                    "--stream-socket", str(self.stream), *extra], vms, stdin=subprocess.PIPE)
        self.wait_for(lambda l: "management channel" in l, 30)

    def type(self, data):
        self.proc.stdin.write(data.decode())
        self.proc.stdin.flush()

    def kill(self):
        Host.kill(self)
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass


def control(h, request, timeout=60, then=None):
    """One request to host @h (a SnapHost) on its own control connection; its
    reply (skipping the id-null line a fresh connection may get,
    docs/management.md). @then() runs after the request is sent."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(timeout)
        c.connect(str(h.sock))
        c.sendall(b"\n" + json.dumps(request).encode() + b"\n")
        if then:
            then()
        buf = b""
        while True:
            while b"\n" not in buf:
                try:
                    chunk = c.recv(65536)
                except TimeoutError:
                    state = h.ctl("list", check=False)
                    pytest.fail(f"no reply to {request} in {timeout} s; list now: {state}"
                                "\n--- console ---\n" + "\n".join(
                                    l for l in h.snapshot() if "DIRTY" not in l))
                assert chunk, f"control connection closed before the reply to {request}"
                buf += chunk
            line, _, buf = buf.partition(b"\n")
            reply = json.loads(line)
            if reply.get("id") == request["id"]:
                return reply


def wait_new_line(h, seen, prefix, timeout=30):
    """Until host @h's console has a line starting with @prefix after its
    first @seen lines."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(l.startswith(prefix) for l in h.snapshot()[seen:]):
            return
        time.sleep(0.1)
    pytest.fail(f"no new '{prefix}' line after line {seen}\n" + "\n".join(h.snapshot()[-30:]))


def started_hosts(start, tmp_path, **defaults):
    """A fixture body: make(...) starts a host, start(tmp_path, ...) (a host
    class, or a function such as harness.linux.mig_host()), with @defaults
    for the keywords the call leaves out; make.procs takes the clients a test
    runs in the background (harness.migration.CtlProc). At the end those are
    stopped, then every host (SIGTERM)."""
    made, procs = [], []

    def make(*args, **kw):
        made.append(start(tmp_path, *args, **{**defaults, **kw}))
        return made[-1]
    make.procs = procs
    yield make
    for p in procs:
        p.stop()
    for h in made:
        h.kill()
