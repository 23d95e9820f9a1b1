# SPDX-License-Identifier: MIT
"""SBI DBCN console_read with real input: tests/guests/sbi_dbcn.c with
bootargs typed=1 prints "DBCN-READY", the harness types TYPED on the
console, and the payload reads it back with console_read (a 4-byte read
takes at most 4 and writes nothing past its buffer, all bytes come back in
order, then a read returns 0; under Carapace also: exactly 4, then the other
11 in one read). The payload checks; the harness types and wants those PASS
lines, on bare QEMU + OpenSBI and under Carapace.

Typing: bare QEMU reads the serial port from a pipe (as test_third_party.py
does for U-Boot); under Carapace the host console's input goes to the
focused VM, the only one here, through an interactive carapace-run whose
terminal is a pipe (TypingHost, test_snapshot_uart.py)."""

import subprocess
import threading
import time

import pytest

from harness.hosts import TypingHost
from harness.paths import FIRMWARE, GUESTS, ROOT
from harness.report import Report, check_report
from harness.runs import reference_cmd, vm_spec

pytestmark = pytest.mark.quick

TYPED = b"DBCN-in 42 xyz!"      # the payload's TYPED
TIMEOUT = 90
COMMON = ["PASS: dbcn: typed: input arrives",
          "PASS: dbcn: typed: 4-byte read takes at most 4 bytes",
          "PASS: dbcn: typed: 4-byte read writes nothing past the buffer",
          "PASS: dbcn: typed: 4-byte read got the first bytes typed",
          "PASS: dbcn: typed: every byte typed was read",
          "PASS: dbcn: typed: the bytes read are the bytes typed, in order",
          "PASS: dbcn: typed: nothing written past the bytes read",
          "PASS: dbcn: typed: then a read returns 0 bytes"]
CARAPACE_ONLY = ["PASS: dbcn: typed: 4-byte read takes exactly 4 of the 15 queued",
                 "PASS: dbcn: typed: the next read takes the other 11"]


def wait_until(pred, what, text):
    end = time.monotonic() + TIMEOUT
    while not pred():
        assert time.monotonic() < end, f"timed out waiting for {what}\n{text()}"
        time.sleep(0.05)


def test_dbcn_read_typed_bare(guests_built):
    if not FIRMWARE.is_file():
        pytest.skip(f"OpenSBI firmware not found at {FIRMWARE}; run `make deps`")
    p = subprocess.Popen(reference_cmd(GUESTS / "sbi_dbcn.bin", append="typed=1",
                                       serial_only=True),
                         cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    out = []
    reader = threading.Thread(target=lambda: out.extend(iter(lambda: p.stdout.read(1), b"")),
                              daemon=True)
    reader.start()
    text = lambda: b"".join(out).decode(errors="replace")  # noqa: E731
    try:
        wait_until(lambda: "DBCN-READY" in text(), "DBCN-READY", text)
        p.stdin.write(TYPED)
        p.stdin.flush()
        wait_until(lambda: p.poll() is not None, "QEMU to end", text)
    finally:
        if p.poll() is None:
            p.terminate()
            p.wait(15)
    reader.join(5)
    assert p.returncode == 0, f"QEMU exit status {p.returncode}\n{text()}"
    rep = Report([l.rstrip("\r") for l in text().splitlines()])
    check_report(rep, "sbi_dbcn typed (bare)", COMMON)


def test_dbcn_read_typed_carapace(tmp_path, guests_built):
    h = TypingHost(tmp_path, [vm_spec("t", "sbi_dbcn", 2, "typed=1")], extra=["--persist"])
    try:
        h.wait_for(lambda l: l.startswith("[t] DBCN-READY"), TIMEOUT)
        h.type(TYPED)
        h.wait_for(lambda l: l.startswith("carapace: vm t: shut down"), TIMEOUT)
    finally:
        h.kill()
    rep = Report(h.guest("t"))
    check_report(rep, "sbi_dbcn typed (carapace)", COMMON + CARAPACE_ONLY)
    assert "carapace: vm t: shut down" in h.snapshot(), "\n".join(h.snapshot())
