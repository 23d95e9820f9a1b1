# SPDX-License-Identifier: MIT
"""A running VM and its disks moved to another Carapace host by snapshot
(issue 25): paused, snapshotted, its disks carried over, destroyed where it
was, the file restored there: into a fresh QEMU (move_to_fresh_host():
carapace-run --restore FILE,disk=...) or into a host that runs already
(move_to_host(): carapace-ctl restore, onto a host disk no VM uses there);
or snapshotted, destroyed and restored where it was, beside the VMs it
talks to (restore_in_place()).
Today a snapshot holds no disk content (docs/snapshot-format.md, "After a
restore or a move": the user's business), so carry_disks() copies each image
while the VM is paused; once the content travels in the stream, that one
step changes and every test that moves a VM through these follows."""

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.hosts import wait_new_line


@dataclass
class Moved:
    """A move: the destination host, the snapshot file, the images the VM
    runs on there, the destination's console lines before the VM came (its
    own start after them), how long the VM was stopped (host time, pause to
    the restore's reply) and the snapshot's own pause (pause_us); the
    snapshot's and the restore's replies."""
    host: object
    snapshot: Path
    disks: list = field(default_factory=list)
    mark: int = 0
    stopped_s: float = 0.0
    snapshot_pause_us: int = 0
    saved: dict = field(default_factory=dict)
    restored: dict = field(default_factory=dict)

    def lines(self, vm, until=None):
        """@vm's console lines on the destination since it arrived (up to
        the host's console line @until: where it left again)."""
        prefix = f"[{vm}] "
        return [l[len(prefix):] for l in self.host.snapshot()[self.mark:until]
                if l.startswith(prefix)]


def carry_disks(sources, targets):
    """The paused VM's disk images @sources, as it left them, into @targets
    (a VM's pause drains its disks first: every request the guest saw
    complete is in its image). A target that exists (a host disk of a
    running QEMU) is overwritten in place, the file QEMU has open; else it is
    made."""
    for src, dst in zip(sources, targets, strict=True):
        if Path(dst).exists():
            assert Path(dst).stat().st_size == Path(src).stat().st_size, (src, dst)
            with open(src, "rb") as f, open(dst, "r+b") as g:
                shutil.copyfileobj(f, g, 1 << 20)
        else:
            shutil.copyfile(src, dst)
    return list(targets)


def stop_and_save(src, vm, snap):
    """Pause @vm on @src (a harness.hosts.SnapHost) and save it to @snap (a
    plain snapshot of a paused VM: it stays paused); the snapshot's pause_us."""
    rep, _, _ = src.ctl("pause", vm)
    assert rep["ok"] and rep["state"] == "paused", rep
    rep, _, _ = src.ctl("snapshot", vm, str(snap))
    assert rep["ok"] and not rep["live"], rep
    return rep["pause_us"]


def move_to_fresh_host(src, vm, disks, start_host, tag, extra=()):
    """Move VM @vm, running on @src with the disk images @disks, to a fresh
    host: stop_and_save(), its disks carried to new images beside the file,
    destroyed on @src, restored by start_host(@tag, [], extra=launcher
    options), @extra among them. A Moved; the VM runs there."""
    t0 = time.monotonic()
    snap = src.sock.parent / f"{vm}-to-{tag}.snap"
    pause_us = stop_and_save(src, vm, snap)
    where = snap.parent / f"disks-to-{tag}"
    where.mkdir()
    carried = carry_disks(disks, [where / Path(d).name for d in disks])
    src.ctl("destroy", vm)
    restore = ",".join([str(snap), *(f"disk={d}" for d in carried)])
    dst = start_host(tag, [], extra=["--restore", restore, *extra])
    dst.wait_for(lambda l: l.startswith(f"carapace-run: restored vm {vm} "), 120)
    return Moved(dst, snap, carried, 0, time.monotonic() - t0, pause_us)


def move_to_host(src, vm, disks, dst, dst_disks, pci=()):
    """Move VM @vm, running on @src with the disk images @disks, to the
    running host @dst (a SnapHost), whose host disks @dst_disks (image files
    of its QEMU, free: no VM of @dst uses them) take them: stop_and_save(),
    the disks carried into those images, destroyed on @src, restored on @dst
    (carapace-ctl restore, --disk N for each of @pci: the host disks' PCI
    device numbers there, default the ones the VM was saved on). A Moved."""
    t0 = time.monotonic()
    snap = src.sock.parent / f"{vm}-to-{dst.sock.parent.name}-{time.monotonic_ns()}.snap"
    pause_us = stop_and_save(src, vm, snap)
    carried = carry_disks(disks, dst_disks)
    src.ctl("destroy", vm)
    mark = len(dst.snapshot())
    rep, _, _ = dst.ctl("restore", str(snap), *(a for n in pci for a in ("--disk", str(n))))
    assert rep["ok"] and rep["vm"] == vm, rep
    return Moved(dst, snap, carried, mark, time.monotonic() - t0, pause_us)


def restore_in_place(h, vm, live=True):
    """Snapshot VM @vm on host @h (a SnapHost; live unless @live is False:
    the VM runs on while its memory is sent), destroy it, and restore the
    file on @h: the VM comes back beside the ones it talks to, at the
    snapshot's instant, with its NICs' MACs (its original is gone). For a
    VM without disks: restored in place, a disk would have its image as the
    original left it, not as it was at the snapshot. A Moved on @h whose
    mark is where the restored VM's console starts; stopped_s: from the
    snapshot's reply to the restore's (the original ran on until the
    destroy)."""
    snap = h.sock.parent / f"{vm}-{time.monotonic_ns()}.snap"
    saved, _, _ = h.ctl("snapshot", vm, str(snap), *(["--live"] if live else []))
    assert saved["ok"] and saved["live"] == live, saved
    t0 = time.monotonic()
    seen = len(h.snapshot())
    h.ctl("destroy", vm)
    wait_new_line(h, seen, f"carapace: vm {vm}: destroyed", 30)
    mark = len(h.snapshot())
    restored, _, _ = h.ctl("restore", str(snap))
    assert restored["ok"] and restored["vm"] == vm, restored
    return Moved(h, snap, [], mark, time.monotonic() - t0, saved["pause_us"], saved, restored)
