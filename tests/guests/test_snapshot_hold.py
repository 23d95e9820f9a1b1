# SPDX-License-Identifier: MIT
"""What a snapshot holds its VM to, and for how long (docs/management.md,
"snapshot"; issue 22):

- a plain snapshot keeps the VM paused until its last byte: a management
  client that asks to resume it (or destroy it) meanwhile is refused with a
  clear `busy`, even once the snapshot's own client has gone; the VM runs
  again when the stream ends;
- a live snapshot on a host with too little memory to keep a copy of every
  chunk the guest writes pauses the VM until the stream is out, then the VM
  runs again (it once stayed `pausing` for ever) and the reply says how long.

The hosts run with --stream-stall-ms (a silent stream client is dropped
sooner than the default 30 s)."""

import json
import socket
import subprocess
import time

import pytest

from harness.hosts import control, wait_new_line
from harness.paths import ROOT

pytestmark = pytest.mark.quick

SNAP = ROOT / "tools" / "carapace-snap"
MiB = 1 << 20
STALL_MS = 15000


def dirtier(name, mem, mib, vcpus=1):
    return (f"name={name},kernel=build/guests/dirtier.bin,vcpus={vcpus},mem={mem}M,"
            f"bootargs=mib={mib} win_us=200000 windows=100000")


def states(h):
    listing, _, _ = h.ctl("list")
    return {v["name"]: v for v in listing["vms"]}


def send_only(h, request):
    """Send @request on a control connection of its own and leave without
    waiting for the reply (a client that gives up)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.connect(str(h.sock))
        c.sendall(b"\n" + json.dumps(request).encode() + b"\n")
        time.sleep(0.5)     # the hypervisor has read it before the client leaves


def test_plain_snapshot_holds_its_vm_paused_to_the_end(snap_host):
    h = snap_host([dirtier("busy", 32, 8)],
                  extra=["--persist", "--stream-stall-ms", str(STALL_MS)], timeout=300)
    h.wait_for(lambda l: l.startswith("[busy] DIRTY "), 60)
    # a stream client that takes the header, then reads nothing more
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(str(h.stream))
    try:
        assert control(h, {"v": 1, "id": 1, "cmd": "hello"})["ok"]
        send_only(h, {"v": 1, "id": 2, "cmd": "snapshot", "vm": "busy", "live": False})
        s.settimeout(30)
        assert s.recv(8) == b"CARASNAP"          # the snapshot streams
        assert states(h)["busy"]["state"] == "paused"
        # another client (the snapshot's has gone) may not resume it...
        rep = control(h, {"v": 1, "id": 3, "cmd": "resume", "vm": "busy"})
        assert not rep["ok"] and rep["code"] == "busy", rep
        assert "snapshot" in rep["error"] and "paused until the stream is out" in rep["error"]
        # ... nor destroy it: its memory is being read
        rep = control(h, {"v": 1, "id": 4, "cmd": "destroy", "vm": "busy"})
        assert not rep["ok"] and rep["code"] == "busy" and "snapshot" in rep["error"], rep
        seen = len(h.snapshot())
        time.sleep(1.0)
        assert states(h)["busy"]["state"] == "paused", "\n".join(h.snapshot()[-30:])
        assert not [l for l in h.snapshot()[seen:] if l.startswith("[busy] DIRTY ")], \
            "the VM ran while its plain snapshot streamed"
        # the stream ends (its client stops reading: dropped after the stall
        # time): the snapshot resumes the VM it paused
        h.wait_for(lambda l: "vm busy: resumed after the snapshot" in l, STALL_MS / 1000 + 30)
    finally:
        s.close()
    assert states(h)["busy"]["state"] == "running"
    wait_new_line(h, len(h.snapshot()), "[busy] DIRTY ")
    h.ctl("destroy", "busy")


def hog_memory(h, leave):
    """Create a VM that takes the host's free memory but about @leave bytes
    (it boots the dirtier image, writing 1 MiB); its name."""
    stats, _, _ = h.ctl("stats")
    mem = (stats["host"]["free_mem"] - leave) // (2 * MiB) * (2 * MiB)
    while mem >= 8 * MiB:
        req = {"v": 1, "id": 10, "cmd": "create", "name": "hog", "kernel": "busy.kernel",
               "mem": mem, "vcpus": 1, "bootargs": "mib=1 win_us=1000000 windows=100000"}
        rep = control(h, req)
        if rep["ok"]:
            return "hog"
        assert rep["code"] == "no-memory", rep
        mem -= 2 * MiB          # the free memory is in more than one range
    pytest.fail("could not create a VM to take the host's memory")


def test_live_snapshot_short_of_memory_pauses_then_runs_again(snap_host, tmp_path):
    region = 32
    h = snap_host([dirtier("busy", 64, region)],
                  extra=["--persist", "--spare-mem", "64M", "--stream-stall-ms",
                         str(STALL_MS)], timeout=300)
    h.wait_for(lambda l: l.startswith("[busy] DIRTY "), 60)
    hog_memory(h, 8 * MiB)
    stats, _, _ = h.ctl("stats")
    free = stats["host"]["free_mem"]
    # the guest writes its whole region faster than the stream sends it: a
    # copy of every chunk would need more than the host has
    assert free < region * MiB, f"{free} bytes free: no memory pressure"
    path = tmp_path / "live.snap"
    rep, _, _ = h.ctl("snapshot", "busy", str(path), "--live", "--no-compress")
    assert rep["ok"] and rep["live"], rep
    # the VM runs again once the stream is out (it stayed "pausing" for ever)
    vm = states(h)["busy"]
    assert vm["state"] == "running", vm
    assert rep["memory_pause_us"] > 0, rep
    h.wait_for(lambda l: "vm busy: runs again: the live snapshot kept it paused" in l, 10)
    wait_new_line(h, len(h.snapshot()), "[busy] DIRTY ")
    r = subprocess.run([str(SNAP), "verify", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # a later live snapshot with memory enough runs without a pause
    h.ctl("destroy", "hog")
    path2 = tmp_path / "live2.snap"
    rep, _, _ = h.ctl("snapshot", "busy", str(path2), "--live", "--no-compress")
    assert rep["ok"] and rep["memory_pause_us"] == 0, rep
    assert states(h)["busy"]["state"] == "running"
    h.ctl("destroy", "busy")
