# SPDX-License-Identifier: MIT
"""A running VM and its disks moved to another Carapace host by snapshot
(issue 25): paused, snapshotted with its disks' content (snapshot format 5,
"DISK"), destroyed where it was, the file restored there: into a fresh QEMU
(move_to_fresh_host(): carapace-run --restore FILE,disk=NEW..., new images
the launcher creates and the restore fills) or into a host that runs already
(move_to_host(): carapace-ctl restore --disk N..., onto a host disk no VM
uses there, zeroed first by zero_disks(): a restore writes only the blocks
the stream holds); or snapshotted, destroyed and restored where it was,
beside the VMs it talks to (restore_in_place())."""

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.hosts import wait_new_line
from harness.paths import SNAP


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


def zero_disks(targets):
    """Make each image of @targets (a host disk of a running QEMU that no VM
    uses now) all zeroes, in place, the file QEMU has open: the fresh
    zeroed host disk a restore of the disks' content needs."""
    chunk = bytes(1 << 20)
    for dst in targets:
        size = Path(dst).stat().st_size
        with open(dst, "r+b") as g:
            for off in range(0, size, len(chunk)):
                g.write(chunk[:min(len(chunk), size - off)])
    return list(targets)


def saved_disk_pci(snap):
    """The host PCI device numbers the disks of the snapshot file @snap were
    bound to where it was taken (their VIRTIO states' pci_dev)."""
    r = subprocess.run([str(SNAP), "inspect", "--json", str(snap)], capture_output=True,
                       text=True, timeout=120, check=True)
    return [v["state"]["pci_dev"] for v in json.loads(r.stdout)["virtio"]
            if v["name"] == "virtio_blk"]


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
    host: stop_and_save(), destroyed on @src, restored by start_host(@tag,
    [], extra=launcher options), @extra among them, its disks into new
    images (same names, in a directory beside the file) that the launcher
    creates and the restore fills. A Moved; the VM runs there."""
    t0 = time.monotonic()
    snap = src.sock.parent / f"{vm}-to-{tag}.snap"
    pause_us = stop_and_save(src, vm, snap)
    where = snap.parent / f"disks-to-{tag}"
    where.mkdir()
    new = [where / Path(d).name for d in disks]
    src.ctl("destroy", vm)
    restore = ",".join([str(snap), *(f"disk={d}" for d in new)])
    dst = start_host(tag, [], extra=["--restore", restore, *extra])
    dst.wait_for(lambda l: l.startswith(f"carapace-run: restored vm {vm} "), 120)
    return Moved(dst, snap, new, 0, time.monotonic() - t0, pause_us)


def move_to_host(src, vm, disks, dst, dst_disks, pci=()):
    """Move VM @vm, running on @src with the disk images @disks, to the
    running host @dst (a SnapHost), whose host disks @dst_disks (image files
    of its QEMU, free: no VM of @dst uses them) take them: stop_and_save(),
    those images zeroed, destroyed on @src, restored on @dst (carapace-ctl
    restore, --disk N for each of @pci: the host disks' PCI device numbers
    there, default the ones the VM was saved on). A Moved."""
    t0 = time.monotonic()
    snap = src.sock.parent / f"{vm}-to-{dst.sock.parent.name}-{time.monotonic_ns()}.snap"
    assert len(dst_disks) == len(disks), (disks, dst_disks)
    pause_us = stop_and_save(src, vm, snap)
    carried = zero_disks(dst_disks)
    pci = list(pci) or saved_disk_pci(snap)
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
