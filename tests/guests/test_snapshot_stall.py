# SPDX-License-Identifier: MIT
"""A stream client that goes silent is dropped (docs/management.md, "Snapshot
streams"): a snapshot whose client stops reading resumes the VM it paused
and answers `stream`; a restore whose client stops sending answers
`no-stream` and creates no VM. Either way the stream is free again for the
next client. The hosts run with --stream-stall-ms 1500 (default 30 s)."""

import gzip
import socket
import time

import pytest

from harness.hosts import control, wait_new_line
from harness.runs import vm_spec
from harness.snapshots import inspect

pytestmark = pytest.mark.quick

STALL_MS = 1500


def vm_names(h):
    listing, _, _ = h.ctl("list")
    return {v["name"]: v["state"] for v in listing["vms"]}


def silent_stream(h):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(h.stream))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # the hypervisor learns of the connection from a port event: a round trip
    assert control(h, {"v": 1, "id": 1, "cmd": "hello"})["ok"]
    return s


def test_snapshot_client_that_stops_reading_is_dropped_and_the_vm_resumes(snap_host,
                                                                          tmp_path):
    h = snap_host([vm_spec("busy", "dirtier", 1, "mib=8 win_us=200000 windows=100000")],
                  extra=["--persist", "--stream-stall-ms", str(STALL_MS)], timeout=300)
    h.wait_for(lambda l: l.startswith("[busy] DIRTY "), 60)
    s = silent_stream(h)
    try:
        start = time.monotonic()
        reply = control(h, {"v": 1, "id": 2, "cmd": "snapshot", "vm": "busy", "live": False})
        waited = time.monotonic() - start
        assert not reply["ok"] and reply["code"] == "stream", reply
        assert "stopped reading" in reply["error"], reply
        assert waited >= STALL_MS / 1000, waited
        # the paused VM runs again, and on: new work windows after the reply
        assert vm_names(h) == {"busy": "running"}
        wait_new_line(h, len(h.snapshot()), "[busy] DIRTY ")
    finally:
        s.close()
    # the stream is free: the next client gets a whole, valid snapshot
    path = tmp_path / "after.snap"
    rep, _, _ = h.ctl("snapshot", "busy", str(path))
    assert rep["ok"] and gzip.decompress(path.read_bytes())[:8] == b"CARASNAP", rep
    # 8 MiB of written pages, in runs of at most 64 pages (a run's CRC is
    # computed on hart 0 in one go: 2 MiB runs held it for 15-20 ms)
    runs = inspect(path)["memory"]["runs"]
    assert sum(r["pages"] for r in runs) >= 2048 and max(r["pages"] for r in runs) == 64, runs
    h.ctl("destroy", "busy")


def test_restore_client_that_stops_sending_is_dropped_and_no_vm_is_made(snap_host, tmp_path):
    h = snap_host([vm_spec("orig", "snap_cfi", 1, "wait_ms=600000")],
                  extra=["--persist", "--stream-stall-ms", str(STALL_MS)])
    h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    good = tmp_path / "good.snap"
    h.ctl("snapshot", "orig", str(good))
    stream = gzip.decompress(good.read_bytes())
    s = silent_stream(h)
    try:
        start = time.monotonic()
        # the header, CONFIG and a part of the first VCPU section, then nothing
        reply = control(h, {"v": 1, "id": 3, "cmd": "restore", "name": "half",
                            "bytes": len(stream)}, then=lambda: s.sendall(stream[:1000]))
        waited = time.monotonic() - start
        assert not reply["ok"] and reply["code"] == "no-stream", reply
        assert "no stream byte" in reply["error"], reply
        assert waited >= STALL_MS / 1000, waited
        assert "offset 1000 of" in reply["error"], reply
        assert vm_names(h) == {"orig": "running"}
    finally:
        s.close()
    # the slot is free again: a whole restore works
    rep, _, _ = h.ctl("restore", str(good), "--name", "copy")
    assert rep["ok"] and rep["vm"] == "copy", rep
    assert set(vm_names(h)) == {"orig", "copy"}
    for vm in ("orig", "copy"):
        h.ctl("destroy", vm)
