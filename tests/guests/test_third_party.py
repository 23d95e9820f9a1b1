# SPDX-License-Identifier: MIT
"""Unmodified third-party S-mode guests (issue 13), each on bare QEMU + OpenSBI
and under Carapace, driven the same way and compared.

U-Boot's S-mode build for QEMU virt (Debian trixie's u-boot-qemu, fetched by
`scripts/deps.sh guests`): a key stops its autoboot, then at its prompt
`sbi` (the SBI implementation and extensions it finds), `fdt` (the hart's
ISA as the device tree gives it, both the deprecated riscv,isa string and
riscv,isa-extensions) and `poweroff` (SBI SRST: the machine, or under
Carapace the VM, goes down)."""

import re
import subprocess
import threading
import time

import pytest

from harness.hosts import TypingHost
from harness.paths import CACHE
from harness.runs import reference_cmd

pytestmark = pytest.mark.quick

UBOOT = CACHE / "u-boot-smode.bin"
PROMPT = "=> "
COMMANDS = ["sbi", "fdt addr $fdtcontroladdr", "fdt print /cpus/cpu@0 riscv,isa",
            "fdt print /cpus/cpu@0 riscv,isa-extensions", "poweroff"]


@pytest.fixture
def uboot():
    assert UBOOT.is_file(), f"{UBOOT} missing: run `scripts/deps.sh guests` (make deps)"
    return UBOOT


def drive(write, text, done, timeout=120):
    """Stop the autoboot, then run COMMANDS one after the other; @text() is
    the console so far. Returns the console.

    Each command is followed by `echo DONE-<n>`, and the next waits for that
    line: under Carapace the console comes in whole lines, so the prompt that
    ends a command (no newline after it) is not seen until something is typed."""
    end = time.monotonic() + timeout
    # a key stops the autoboot; one typed too late (the countdown line shows
    # only when it ends, on a busy machine) lands at the prompt as an empty
    # command: keep pressing Enter until a prompt is there
    while PROMPT not in text():
        assert time.monotonic() < end, "no prompt:\n" + text()
        if "U-Boot" in text():
            write("\n")
        time.sleep(0.5)
    for n, cmd in enumerate(COMMANDS):
        if cmd == "poweroff":
            write(cmd + "\n")
            break
        write(cmd + "\n")
        # typed ahead: it waits in the UART's FIFO (16 bytes on QEMU's 16550)
        write(f"echo DONE-{n}\n")
        marker = re.compile(rf"^(\[u\] )?DONE-{n}\r?$", re.M)
        while not marker.search(text()):
            assert time.monotonic() < end, f"{cmd!r} did not finish:\n" + text()
            time.sleep(0.05)
    while not done():
        assert time.monotonic() < end, "poweroff did not end it:\n" + text()
        time.sleep(0.05)
    return text()


def run_bare(uboot):
    p = subprocess.Popen(reference_cmd(uboot, smp=1, serial_only=True),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace")
    out = []
    reader = threading.Thread(target=lambda: out.extend(iter(lambda: p.stdout.read(1), "")),
                              daemon=True)
    reader.start()

    def write(s):
        p.stdin.write(s)
        p.stdin.flush()
    try:
        return drive(write, lambda: "".join(out), lambda: p.poll() is not None)
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()


def check_uboot(console, where, sbi_version):
    """What both runs must show; returns (riscv,isa, extensions)."""
    assert "U-Boot 2" in console, f"{where}: no U-Boot banner\n{console}"
    m = re.search(r"SBI (\d+\.\d+)", console)
    assert m and m.group(1) == sbi_version, f"{where}: SBI version, want {sbi_version}\n{console}"
    isa = re.search(r'riscv,isa = "([^"]+)"', console)
    assert isa, f"{where}: no riscv,isa in the guest's DT\n{console}"
    ext = re.search(r"riscv,isa-extensions = (.+)$", console, re.M)
    assert ext, f"{where}: no riscv,isa-extensions\n{console}"
    return isa.group(1), re.findall(r'"([^"]+)"', ext.group(1))


def test_uboot_smode_bare(uboot):
    console = run_bare(uboot)
    isa, exts = check_uboot(console, "bare QEMU", "2.0")   # OpenSBI 1.6
    assert isa.startswith("rv64imafdc"), isa


def test_uboot_smode_under_carapace(uboot, tmp_path):
    """The same session under Carapace: the prompt, SBI 3.0 with Carapace's
    extensions, a riscv,isa string naming exactly the extensions of
    riscv,isa-extensions, and poweroff ends the VM (not the host)."""
    h = TypingHost(tmp_path, [f"name=u,kernel={uboot},mem=128M"], extra=["--persist"])
    try:
        text = lambda: "\n".join(h.snapshot())  # noqa: E731
        console = drive(lambda s: h.type(s.encode()), text,
                        lambda: any(l == "carapace: vm u: shut down" for l in h.snapshot()))
    finally:
        h.kill()
    isa, exts = check_uboot(console, "Carapace", "3.0")
    for name in ("SBI Base Functionality", "Timer Extension", "IPI Extension",
                 "RFENCE Extension", "Hart State Management Extension", "System Reset Extension",
                 "Debug Console Extension", "Firmware Features Extension",
                 "Performance Monitoring Unit Extension", "System Suspend Extension",
                 "Steal-time Accounting Extension"):
        assert name in console, f"sbi lists no {name}\n{console}"
    single, _, multi = isa.partition("_")
    assert single == "rv64" + "".join(e for e in exts if len(e) == 1), (isa, exts)
    assert sorted(multi.split("_")) == sorted(e for e in exts if len(e) > 1), (isa, exts)
