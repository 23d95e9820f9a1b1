# SPDX-License-Identifier: MIT
"""A process whose console a test reads while it runs: a Linux guest on bare
QEMU, or a carapace-run with Linux guests. A thread gathers the output as
text in chunks, not lines (a login prompt ends in no newline); the test
waits for patterns in it and reaches the guests with ssh through a port
forward."""

import os
import subprocess
import threading
import time

import pytest

from harness.paths import ROOT

SSH_TIMEOUT = 120           # one ssh command (cfitest included)


class ConsoleProcess:
    """@cmd started in the repository with stdout and stderr gathered.
    kill() sends SIGTERM first (a launcher then takes its QEMU down with it),
    then KILL after @stop_grace seconds."""

    stop_grace = 30

    def __init__(self, cmd):
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, cwd=ROOT)
        self.out = ""
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for chunk in iter(lambda: os.read(self.proc.stdout.fileno(), 4096), b""):
            with self.lock:
                self.out += chunk.decode(errors="replace").replace("\r", "")

    def console(self):
        with self.lock:
            return self.out

    def wait_count(self, pattern, count, timeout, what):
        """Wait until compiled regex @pattern matches @count times in the
        console; the seconds since the start. Fails the test, naming @what,
        if the process ends or @timeout seconds pass first."""
        deadline = time.monotonic() + timeout
        while len(pattern.findall(self.console())) < count:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"no {what} #{count} (exit {self.proc.poll()})\n"
                            f"{self.console()[-8000:]}")
            time.sleep(0.2)
        return time.monotonic() - self.started

    def ssh(self, port, key, command, check=True):
        """@command as root on the guest whose sshd 127.0.0.1:@port forwards
        to, with private key @key; with @check, exit 0 or the test fails."""
        cmd = ["ssh", "-p", str(port), "-i", key, "-o", "BatchMode=yes",
               "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
               "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=30", "root@127.0.0.1", command]
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=SSH_TIMEOUT)
        assert r.returncode == 0 or not check, \
            f"ssh -p {port} {command!r}: exit {r.returncode}\n{r.stdout}{r.stderr}\n" \
            f"{self.console()[-4000:]}"
        return r

    def kill(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(self.stop_grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
