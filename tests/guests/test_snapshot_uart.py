# SPDX-License-Identifier: MIT
"""Snapshot and restore of UART input and PLIC pending state (marker protocol,
tests/guests/snap_uart.c): bytes typed on the host console wait in the
guest's 16550 receive FIFO, with PLIC source 10 pending but masked; the
snapshot holds both, and a copy restored beside the original and one
restored into a fresh QEMU (carapace-run --restore) each take the interrupt,
claim source 10 and read exactly the bytes typed, in order.

Typing: the host console's input goes to the focused VM (the first one at
boot, hyp/host/monitor.c). A batch run gives QEMU no input (stdin is
/dev/null), so the original runs under carapace-run without --batch, with a
pipe as its terminal: QEMU (-nographic) reads the bytes from it."""

import pytest

from harness.hosts import TypingHost
from harness.report import Report, check_report
from harness.snapshots import inspect

pytestmark = pytest.mark.quick

SPEC = "name=orig,kernel=build/guests/snap_uart.bin,vcpus=1,mem=16M"
TYPED = b"snap-UART 0123 xyz!"
SRC = 10


@pytest.fixture
def typing_host(tmp_path, guests_built):
    hosts = []

    def make(*args, **kw):
        h = TypingHost(tmp_path, *args, **kw)
        hosts.append(h)
        return h
    yield make
    for h in hosts:
        h.kill()


def check_restored(before, lines, where):
    """@before: the original's lines up to the marker (its first checks count
    in the DONE line the copy prints); @lines: the restored copy's."""
    rep = Report(before + lines)
    check_report(rep, where)
    assert not rep.kind("SKIP: "), rep.lines
    read = [l for l in rep.lines if l.startswith("INFO: snap_uart: read ")]
    assert read == [f"INFO: snap_uart: read {len(TYPED)} bytes: {TYPED.hex()}"], \
        f"{where}: want the bytes typed, {TYPED!r}\n" + "\n".join(rep.lines)
    assert any("claim: source 10" in l for l in rep.kind("PASS: ")), rep.lines
    assert not Report(lines).kind("SNAPSHOT-READY"), lines   # it did not start over


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_snapshot_uart_input_and_plic_pending(typing_host, snap_host, tmp_path, live):
    # --persist: the host stays up between the original's end and the copy
    h = typing_host([SPEC], extra=["--persist"])
    h.wait_for(lambda l: l == "[orig] UART-READY", 60)
    h.type(TYPED)
    h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    orig = h.guest("orig")
    before = orig[:next(i for i, l in enumerate(orig) if l.startswith("SNAPSHOT-READY"))]
    assert not [l for l in before if l.startswith("FAIL")], "\n".join(h.snapshot())

    path = tmp_path / ("live.snap" if live else "plain.snap")
    rep, _, _ = h.ctl("snapshot", "orig", str(path), *(["--live"] if live else []))
    assert rep["ok"] and rep["live"] == live, rep
    info = inspect(path)
    devs = {d["name"]: d for d in info["devices"]}
    uart, plic = devs["uart16550"], devs["plic"]
    assert uart["rx_queued"] == len(TYPED), uart
    assert bytes.fromhex(uart["state"]["rx_queue"]) == TYPED, uart
    assert uart["state"]["ier"] & 1 and uart["state"]["irq_level"] == 1, uart
    assert SRC in plic["pending_sources"], plic
    assert SRC in plic["enabled_sources"][0] and plic["state"][f"priority[{SRC}]"] > 0, plic
    assert SRC not in plic["claimed_sources"], plic
    assert plic["state"]["threshold[0]"] < plic["state"][f"priority[{SRC}]"], plic
    assert info["header"]["live"] == live, info

    # restore beside the original: the original goes, the copy reads the input
    h.ctl("destroy", "orig")
    # the original printed nothing after the marker: it never saw a restore
    assert h.guest("orig")[-1].startswith("SNAPSHOT-READY"), h.guest("orig")
    rep, _, _ = h.ctl("restore", str(path), "--name", "copy")
    assert rep["ok"] and rep["vm"] == "copy", rep
    h.wait_for(lambda l: l == "carapace: vm copy: shut down", 60)
    check_restored(before, h.guest("copy"), "vm copy (restored in the same host)")
    h.kill()    # SIGTERM: the launcher stops QEMU

    # restore into a fresh QEMU (batch: nobody types there)
    h2 = snap_host([], extra=["--restore", str(path)])
    h2.wait_for(lambda l: l == "carapace: vm orig: shut down", 60)
    check_restored(before, h2.guest("orig"), "vm orig (restored in a fresh QEMU)")
