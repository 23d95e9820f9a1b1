# SPDX-License-Identifier: MIT
"""A running VM and its disks moved to another Carapace host by snapshot
(issue 25): paused, snapshotted with its disks' content (snapshot format 5,
"DISK"), destroyed where it was, the file restored there: into a fresh QEMU
(move_to_fresh_host(): carapace-run --restore FILE,disk=NEW..., new images
the launcher creates and the restore fills) or into a host that runs already
(move_to_host(): carapace-ctl restore --disk N..., onto a host disk no VM
uses there, zeroed first by zero_disks(): a restore writes only the blocks
the stream holds); or snapshotted, destroyed and restored where it was,
beside the VMs it talks to (restore_in_place()). Or moved by live
migration, the VM running on through the pre-copy, its disks shared or
copied as the destination chooses (docs/migration.md, "Disks: shared or
copied"): to a fresh `carapace-run --incoming` host
(migrate_to_fresh_host(): --incoming-disk, the image the source uses or a
new one the blocks are copied into) or to a running one
(migrate_to_host(): carapace-ctl incoming --disk N [--copy-disks])."""

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.hosts import wait_new_line
from harness.migration import check_ok_migration
from harness.paths import SNAP
from harness.ports import free_port


def vm_lines(h, vm, start=0, until=None):
    """@vm's console lines on host @h, between the host's console lines
    @start and @until (the prefix "[vm] " taken off)."""
    prefix = f"[{vm}] "
    return [l[len(prefix):] for l in h.snapshot()[start:until] if l.startswith(prefix)]


class Arrival:
    """A VM come to a host (@host), whose console had @mark lines before it."""

    def lines(self, vm, until=None):
        """@vm's console lines on the destination since it arrived (up to
        the host's console line @until: where it left again)."""
        return vm_lines(self.host, vm, self.mark, until)


@dataclass
class Moved(Arrival):
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


# --- by live migration ----------------------------------------------------------------

@dataclass
class Migrated(Arrival):
    """A live migration: the destination host (a harness.migration.MigHost),
    the images the VM runs on there, the destination's console lines before
    the VM came, the disk mode ("copy" or "shared"), the source's migrate
    reply, the disk blocks each pre-copy round sent and, onto a running
    host, the destination's incoming reply."""
    host: object
    disks: list
    mark: int
    mode: str
    reply: dict
    disk_rounds: list
    arrived: dict | None = None

    @property
    def final_blocks(self):
        """The disk blocks sent in the stop-and-copy (the VM paused)."""
        return self.reply["disk_blocks"] - sum(self.disk_rounds)

    def summary(self):
        r = self.reply
        return (f"{self.mode}: {r['rounds']} rounds, {r['pages']} pages, disk "
                f"{r['disk_blocks']} blocks ({r['disk_bytes']} bytes: {self.disk_rounds} in the "
                f"rounds, {self.final_blocks} paused), downtime {r['downtime_us']} + "
                f"{r.get('dest_downtime_us')} us, {r['total_us'] / 1e6:.1f} s")


def check_disks_migrated(m, got, vm, mode, where):
    """@m (the source's Mig) moved @vm with its disks in @mode, as the
    destination chose (@got: its incoming's Mig, if any): copy, round 1
    carried blocks and the reply counts at least the rounds' (the
    destination's the same); shared, not one block moved. The blocks of
    each round."""
    check_ok_migration(m, vm, where)
    r = m.reply
    assert r["disk_mode"] == mode and m.of("accept")[0]["disk_mode"] == mode, \
        f"{where}: {m.text()}"
    rounds = [e.get("disk_blocks", 0) for e in m.of("round")]
    if mode == "copy":
        assert rounds[0] > 0 and r["disk_blocks"] >= sum(rounds) and r["disk_bytes"] > 0, \
            f"{where}: {m.text()}"
    else:
        assert r["disk_blocks"] == r["disk_bytes"] == 0 and not any(rounds), \
            f"{where}: {m.text()}"
    if got is not None:
        assert got.rc == 0 and got.reply and got.reply["ok"] and got.reply["vm"] == vm, \
            f"{where}: {got.text()}"
        assert (got.reply["disk_mode"], got.reply["disk_blocks"], got.reply["disk_bytes"]) == \
            (mode, r["disk_blocks"], r["disk_bytes"]), f"{where}: {got.text()}\n{m.text()}"
    return rounds


def incoming_disks(disks, mode, where):
    """carapace-run's --incoming-disk options for a VM's images @disks in
    @mode, and the images the VM will run on: shared, those same images;
    copy, new ones of their sizes in the directory @where (made here)."""
    if mode == "shared":
        return [o for d in disks for o in ("--incoming-disk", str(d))], list(disks)
    assert mode == "copy", mode
    where.mkdir()
    new = [where / Path(d).name for d in disks]
    return [o for d, n in zip(disks, new)
            for o in ("--incoming-disk", f"{n}:size={Path(d).stat().st_size}")], new


def migrate_to_fresh_host(src, vm, disks, start_host, tag, mode, extra=(), opts=()):
    """Live-migrate VM @vm, running on @src (a MigHost) with the disk images
    @disks, to a fresh host start_host(@tag, [], incoming=PORT,
    extra=launcher options), @extra among them, its disks in @mode:
    "shared" (--incoming-disk each image: the destination's QEMU opens it
    too) or "copy" (into new images, same names, in a directory beside
    @src's, that the launcher creates); @opts: carapace-ctl migrate's
    (--max-rounds N). A Migrated; the VM runs there."""
    port = free_port()
    disk_opts, images = incoming_disks(disks, mode, src.sock.parent / f"disks-to-{tag}")
    dst = start_host(tag, [], incoming=port, extra=[*disk_opts, *extra])
    m = src.migrate(vm, port, *opts)
    rounds = check_disks_migrated(m, None, vm, mode, f"{vm}: {src.tag} -> {tag}, {mode}")
    return Migrated(dst, images, 0, mode, m.reply, rounds)


def migrate_to_host(src, vm, dst, pci, mode, images, opts=()):
    """Live-migrate VM @vm, running on @src, to the running host @dst (both
    MigHosts: carapace-ctl incoming there), its disks onto @dst's host disks
    at the PCI device numbers @pci, whose images are @images: in "shared"
    mode the ones @vm runs on at @src; in "copy" mode free ones of their
    sizes, zeroed first here (zero_disks()). @opts: carapace-ctl
    migrate's. A Migrated."""
    assert len(pci) == len(images), (pci, images)
    if mode == "copy":
        zero_disks(images)
    port = free_port()
    mark = len(dst.snapshot())
    inc = dst.incoming(port, opts=[*(a for n in pci for a in ("--disk", str(n))),
                                   *(["--copy-disks"] if mode == "copy" else [])])
    try:
        m = src.migrate(vm, port, *opts)
        got = inc.finish()
    finally:
        inc.stop()
    rounds = check_disks_migrated(m, got, vm, mode, f"{vm}: {src.tag} -> {dst.tag}, {mode}")
    return Migrated(dst, list(images), mark, mode, m.reply, rounds, got.reply)


def vm_disk_pci(h, vm):
    """The host PCI device numbers of VM @vm's disks on host @h (a MigHost),
    from `devices` ("host": "00:NN.0")."""
    rep, _ = h.ctl("devices", vm)
    return [int(d["host"].split(":")[1].split(".")[0], 16) for d in rep["devices"]
            if d["kind"] == "blk"]


def spare_disk_pci(h, image):
    """The host PCI device number carapace-run gave its --spare-disk @image,
    as its start said."""
    said = f"carapace-run: spare disk {image} ("
    line = h.wait_for(lambda l: l.startswith(said), 30)
    return int(line.split(" at host PCI device ")[1].split()[0])
