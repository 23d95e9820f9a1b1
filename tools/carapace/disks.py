# SPDX-License-Identifier: MIT
"""The VMs' disks (issue 24): the disk=PATH[:ro][:iops=N][:bw=SIZE] values of
--vm (parse_disk; the rate limits: carapace.ratelimits),
the image format QEMU is told (detect_format: qcow2 by its header, else raw),
the checks across VMs (check_disks: one writable image belongs to one VM)
and the QEMU arguments of each disk's virtio-blk-pci device (disk_args).

Each disk is a QEMU virtio-blk-pci device on the host's PCIe bus 0 at a device
number the launcher chooses (carapace.pcislots); the hypervisor drives it for
that VM alone and shows the VM a virtio-blk device of its own."""

import dataclasses
import os
from pathlib import Path

from .errors import LaunchError
from .launcher import qemu_opt
from .ratelimits import parse_bandwidth, parse_rate, split_options

MAX_DISKS = 2                  # VM_MAX_DISKS (hyp/include/vm_lifecycle.h)
QCOW2_MAGIC = b"QFI\xfb"
DISK_SYNTAX = "disk=PATH[:ro][:iops=N][:bw=SIZE]"


@dataclasses.dataclass
class DiskSpec:
    path: Path
    read_only: bool = False
    fmt: str = "raw"           # what QEMU's block layer is told: "qcow2" or "raw"
    vm: str = ""               # the VM it belongs to
    index: int = 0             # 0: the guest's vda, 1: vdb
    pci_dev: int | None = None   # device number on bus 0 (assign_pci_slots)
    iops: int | None = None      # requests a second; None: the default, 0: no limit
    bandwidth: int | None = None   # data bytes a second; the same
    # a new image the launcher creates (carapace.disk_images), zeroed, of
    # this many bytes, when QEMU is about to start; None: an existing file
    new_size: int | None = None
    option: str = "--spare-disk"     # a disk of no VM: the option that gave it
    # False: QEMU takes no lock on the image (an --incoming-disk the source's
    # QEMU has open, and locked, on shared storage)
    locking: bool = True

    @property
    def drive_id(self):
        if self.option == "--incoming-disk" and not self.vm:
            return f"incoming-disk-{self.index}"
        return f"disk-{self.vm}-{self.index}"      # a spare's: disk--N (no VM name is empty)

    @property
    def owner(self):
        """Whose disk it is, in words."""
        return f"vm {self.vm}" if self.vm else f"{self.option} {self.path}"


def detect_format(path):
    """"qcow2" if @path starts with the qcow2 magic, else "raw".  Never left to
    QEMU's probing: a raw image whose guest wrote a qcow2 header would
    otherwise be opened as qcow2 next time (with a backing file the guest
    chose)."""
    with open(path, "rb") as f:
        head = f.read(4)
    return "qcow2" if head == QCOW2_MAGIC else "raw"


def parse_disk(value, vm, index):
    """disk=PATH[:ro][:iops=N][:bw=SIZE] of --vm @vm, its @index-th disk (the
    options in any order): the file must exist, be a regular file (or a
    block device), and be writable unless read-only."""
    what = f"vm {vm}: disk={value}"
    text, flags, opts = split_options(value, ("ro",), ("iops", "bw"), what)
    read_only = "ro" in flags
    if not text:
        raise LaunchError(f"{what}: want {DISK_SYNTAX}")
    iops = parse_rate(opts["iops"], what, "requests") if "iops" in opts else None
    bandwidth = parse_bandwidth(opts["bw"], what) if "bw" in opts else None
    path, fmt = existing_image(text, what, read_only,
                               f" (give disk={text}:ro for a read-only disk)")
    return DiskSpec(path, read_only, fmt, vm, index, iops=iops, bandwidth=bandwidth)


def existing_image(text, what, read_only=False, writable_hint="", missing_hint=""):
    """The image file @text a disk opens, checked: it exists, is a regular
    file (or a block device), readable, writable unless @read_only. Returns
    (its absolute path, its format); LaunchError naming @what otherwise."""
    path = Path(text).expanduser().absolute()
    if not path.exists():
        raise LaunchError(f"{what}: no such file: {text}{missing_hint}")
    if not (path.is_file() or path.is_block_device()):
        raise LaunchError(f"{what}: not a file: {text}")
    if not os.access(path, os.R_OK):
        raise LaunchError(f"{what}: not readable: {text}")
    if not read_only and not os.access(path, os.W_OK):
        raise LaunchError(f"{what}: not writable: {text}{writable_hint}")
    try:
        fmt = detect_format(path)
    except OSError as e:
        raise LaunchError(f"{what}: cannot read {text}: {e.strerror}") from None
    return path, fmt


def check_disks(vms):
    """An image file written by two VMs (or twice by one) would be corrupted:
    one file is on one writable disk, or on any number of read-only ones."""
    seen, new = {}, {}
    for vm in vms:
        for disk in vm.disks:
            if disk.new_size is not None:       # not there yet: only its path can clash
                other = new.setdefault(os.path.normpath(disk.path), disk)
                if other is not disk:
                    raise LaunchError(f"{disk.owner}: the new image {disk.path} is also "
                                      f"{other.owner}'s (give each its own)")
                continue
            key = os.stat(disk.path)
            key = (key.st_dev, key.st_ino)
            for other in seen.get(key, ()):
                if not (disk.read_only and other.read_only):
                    raise LaunchError(f"{disk.owner}: disk {disk.path} is also "
                                      f"{other.owner}'s disk {other.index}; a writable disk "
                                      "belongs to one VM (give each its own file, e.g. a "
                                      "qcow2 overlay, or make both :ro)")
            seen.setdefault(key, []).append(disk)


def disk_args(disk):
    """-drive and -device for one disk at its device number on pcie.0."""
    drive = (f"file={qemu_opt(disk.path)},if=none,id={disk.drive_id},format={disk.fmt}"
             + (",readonly=on" if disk.read_only else "")
             + ("" if disk.locking else ",file.locking=off"))
    return ["-drive", drive,
            "-device", f"virtio-blk-pci,drive={disk.drive_id},bus=pcie.0,"
                       f"addr={disk.pci_dev:#x}"]
