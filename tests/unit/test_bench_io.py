# SPDX-License-Identifier: MIT
"""scripts/bench.py's guest-I/O steps (disk_io, net_io): what the guest
printed is turned into figures only when every figure is there and every
count is positive (a guest that never printed its BENCH line fails the
bench, no zero is recorded), per-MiB and per-request figures and ratios are
what the counts say, and the host's TCP sink counts and answers."""

import importlib.util
import socket
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def console(prefix="", phases=("disk_write",), **override):
    """What iobench prints for @phases, with some figures replaced or
    (value None) left out."""
    lines = [f"{prefix}IOBENCH start disk"]
    for ph in phases:
        figs = {"insns": 17300000, "ticks": 19000000, "requests": 256, "irqs": 250,
                "drift_ppm": 48}
        for key in list(figs):
            if f"{ph}_{key}" in override:
                figs[key] = override[f"{ph}_{key}"]
        lines += [f"{prefix}BENCH {ph}_{k} {v}" for k, v in figs.items() if v is not None]
    return "\n".join(lines + [f"{prefix}IOBENCH done"])


def test_complete_console_gives_every_figure():
    figs = bench.io_figures(console("[d] ", bench.DISK_PHASES), bench.DISK_PHASES, "[d]")
    assert set(figs) == set(bench.DISK_PHASES)
    assert figs["disk_rand"] == {"insns": 17300000, "ticks": 19000000, "requests": 256,
                                 "irqs": 250, "drift_ppm": 48}


def test_guest_that_never_printed_its_line_fails():
    with pytest.raises(RuntimeError, match="disk_read_insns not printed"):
        bench.io_figures(console(phases=("disk_write",)), ("disk_write", "disk_read"))


def test_missing_single_figure_fails():
    with pytest.raises(RuntimeError, match="disk_write_requests not printed"):
        bench.io_figures(console(disk_write_requests=None), ("disk_write",))


@pytest.mark.parametrize("key", bench.IO_POSITIVE)
def test_zero_count_is_never_recorded(key):
    with pytest.raises(RuntimeError, match=f"disk_write_{key} 0.0, not a count"):
        bench.io_figures(console(**{f"disk_write_{key}": 0}), ("disk_write",))


def test_negative_figure_fails():
    # a spinner calibration gone wrong could print a negative loss
    with pytest.raises(RuntimeError, match="disk_write_insns"):
        bench.io_figures(console(disk_write_insns=-5), ("disk_write",))


def test_zero_drift_and_zero_interrupts_are_figures():
    figs = bench.io_figures(console(disk_write_drift_ppm=0, disk_write_irqs=0), ("disk_write",))
    assert figs["disk_write"]["drift_ppm"] == 0 and figs["disk_write"]["irqs"] == 0


def test_guest_failure_is_named():
    text = console(phases=()) + "\nIOBENCH FAIL open /dev/vda (errno 2)"
    with pytest.raises(RuntimeError, match="IOBENCH FAIL open /dev/vda"):
        bench.io_figures(text, ("disk_write",))


def test_other_vm_lines_do_not_count():
    # the receiver VM's lines are not the sender's figures
    text = console("[r] ", ("net_tx",))
    with pytest.raises(RuntimeError, match=r"\[t\]net_tx_insns not printed"):
        bench.io_figures(text, ("net_tx",), "[t]")


def test_result_per_mib_per_request_and_ratio():
    b = {"insns": 10_000_000, "ticks": 500_000, "requests": 128, "irqs": 64, "drift_ppm": 100}
    c = {"insns": 17_000_000, "ticks": 19_000_000, "requests": 256, "irqs": 250, "drift_ppm": 0}
    exits = {"exits": 2560, "mmio": 1792, "host_irq": 256, "guest_page_faults": 1800}
    r = bench.io_result("seq", "disk", b, c, exits, mib=64)
    assert (r["carapace"], r["bare"]) == (265625, 156250)
    assert r["ratio"] == 1.7 and r["goal"] == 1.3 and r["goal_met"] is False
    assert r["insns_per_request"] == {"carapace": 66406, "bare": 78125}
    assert r["irqs_per_request"] == {"carapace": 0.977, "bare": 0.5}
    assert r["carapace_per_request"]["exits"] == 10.0
    assert r["guest_ms"] == {"carapace": 1900.0, "bare": 50.0}
    # bare: 40 M instructions of spinner, +-50 ppm of them, against 10 M
    assert r["uncertainty_pct"] == {"carapace": 0.0, "bare": 0.02}
    rand = bench.io_result("rand", "disk", b, c)
    assert (rand["carapace"], rand["bare"]) == (66406, 78125)
    assert "carapace_per_request" not in rand


def test_exits_need_both_reads():
    start = {"exits": 10, "mmio": 5, "host_irq": 2, "guest_page_faults": 5}
    end = {"exits": 30, "mmio": 12, "host_irq": 4, "guest_page_faults": 13}
    assert bench.io_exits({"x-start": start, "x-end": end}, "x") == \
        {"exits": 20, "mmio": 7, "host_irq": 2, "guest_page_faults": 8}
    assert bench.io_exits({"x-start": start}, "x") is None


def test_sink_counts_and_answers():
    sink = bench.Sink()
    with socket.create_connection(("127.0.0.1", sink.port)) as s:
        s.sendall(b"x" * (1 << 20) + b"y" * 5)
        s.shutdown(socket.SHUT_WR)
        answer = s.recv(8)
    assert int.from_bytes(answer, "little") == (1 << 20) + 5
    sink.check((1 << 20) + 5)


def test_sink_short_transfer_fails():
    sink = bench.Sink()
    with socket.create_connection(("127.0.0.1", sink.port)) as s:
        s.sendall(b"z" * 1000)
        s.shutdown(socket.SHUT_WR)
        s.recv(8)
    with pytest.raises(RuntimeError, match="counted 1000 bytes, not 2000"):
        sink.check(2000)


def test_median_run_kept_with_every_run():
    runs = [{"p": {"insns": v, "requests": 10 + i}} for i, v in enumerate((300, 100, 200))]
    m = bench.io_median(runs, ("p",))["p"]
    assert m == {"insns": 200, "requests": 12, "runs": [(100, 11), (200, 12), (300, 10)]}
    b = {**m, "ticks": 10_000, "irqs": 1, "drift_ppm": 0}
    c = {"insns": 400, "ticks": 10_000, "requests": 12, "irqs": 1, "drift_ppm": 0}
    # per request, each run by its own requests
    assert bench.io_result("x", "disk", b, c)["bare_runs"] == [9, 17, 30]
    assert bench.io_result("x", "disk", b, c, mib=2)["bare_runs"] == [50, 100, 150]
