# SPDX-License-Identifier: MIT
"""carapace-run --spare-disk PATH:size=SIZE: a host disk that no VM has at
start, for a restore into the running host (`carapace-ctl restore FILE
--disk N`, `incoming --disk N`). The launcher creates it as a new image
(carapace.disk_images: zeroed, sparse, never over an existing file), so a
snapshot holding its disks' content can be restored onto it: the restore
writes only the blocks the stream holds. It is a virtio-blk-pci device of
QEMU's like any disk, numbered after every other (carapace.iodevices), and
stays after the run: it may hold a restored VM's disk."""

from pathlib import Path

from .disk_images import check_new_path
from .disks import DiskSpec
from .errors import LaunchError
from .ratelimits import split_options
from .vmspec import parse_size

SPARE_SYNTAX = "PATH:size=SIZE"
SECTOR = 512


def parse_spare_disks(items):
    """Each --spare-disk PATH:size=SIZE, checked: a DiskSpec of no VM (vm "")
    to create, of SIZE bytes (a multiple of 512: a disk's capacity is in
    sectors)."""
    out = []
    for k, item in enumerate(items):
        what = f"--spare-disk {item}"
        text, _, opts = split_options(item, (), ("size",), what)
        if not text or "size" not in opts:
            raise LaunchError(f"{what}: want {SPARE_SYNTAX}")
        size = new_disk_size(opts["size"], what,
                             "a restore needs the saved disk's capacity in sectors, times "
                             f"{SECTOR}: carapace-snap inspect says it")
        path = Path(text).expanduser().absolute()
        check_new_path(path, what)
        out.append(DiskSpec(path, False, "raw", "", k, new_size=size))
    return out


def new_disk_size(text, what, why):
    """The SIZE of a PATH:size=SIZE new image, checked: a non-zero multiple of
    512 bytes (a disk's capacity is in sectors); @why says what it must
    match, for the error."""
    size = parse_size(text, what)
    if not size or size % SECTOR:
        raise LaunchError(f"{what}: the size must be a non-zero multiple of {SECTOR} bytes "
                          f"({why})")
    return size
