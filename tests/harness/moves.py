# SPDX-License-Identifier: MIT
"""A running VM and its disks moved to a fresh Carapace host by snapshot
(issue 25): pause, snapshot, the disks carried over, the original destroyed,
the file restored into a fresh QEMU (carapace-run --restore FILE,disk=...).
Today a snapshot holds no disk content (docs/snapshot-format.md, "After a
restore or a move": the user's business), so carry_disks() copies each image
while the VM is paused; once the content travels in the stream, that one
step changes and every test that moves a VM through move_to_fresh_host()
follows."""

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Moved:
    """A move: the destination host, the snapshot file, the images the VM
    runs on there, how long the VM was stopped (host time, pause to the
    restore's reply) and the snapshot's own pause (pause_us)."""
    host: object
    snapshot: Path
    disks: list = field(default_factory=list)
    stopped_s: float = 0.0
    snapshot_pause_us: int = 0


def carry_disks(disks, where):
    """The disk images @disks as the paused VM left them, for the
    destination: a copy of each in the directory @where (a VM's pause drains
    its disks first: every request the guest saw complete is in the image)."""
    out = []
    for d in disks:
        copy = Path(where) / f"{Path(d).stem}.moved{Path(d).suffix}"
        shutil.copyfile(d, copy)
        out.append(copy)
    return out


def move_to_fresh_host(src, vm, disks, start_host, tag, extra=()):
    """Move VM @vm, running on @src (a harness.hosts.SnapHost) with the disk
    images @disks, to a fresh host: paused, snapshotted (plain), its disks
    carried (carry_disks()), destroyed on @src, restored by
    start_host(@tag, [], launcher options) with @extra among them. Returns
    a Moved; the VM runs there once the host's restore replied."""
    t0 = time.monotonic()
    rep, _, _ = src.ctl("pause", vm)
    assert rep["ok"] and rep["state"] == "paused", rep
    snap = src.sock.parent / f"{vm}-to-{tag}.snap"
    rep, _, _ = src.ctl("snapshot", vm, str(snap))
    assert rep["ok"] and not rep["live"], rep
    pause_us = rep["pause_us"]
    where = snap.parent / f"disks-to-{tag}"
    where.mkdir()
    carried = carry_disks(disks, where)
    src.ctl("destroy", vm)
    restore = ",".join([str(snap), *(f"disk={d}" for d in carried)])
    dst = start_host(tag, [], extra=["--restore", restore, *extra])
    dst.wait_for(lambda l: l.startswith(f"carapace-run: restored vm {vm} "), 120)
    return Moved(dst, snap, carried, time.monotonic() - t0, pause_us)
