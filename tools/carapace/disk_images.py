# SPDX-License-Identifier: MIT
"""Disk images the tools make or measure (issue 25, a snapshot's disks'
content; docs/snapshot-format.md, "DISK").

A snapshot that holds its disks' content restores into a **new** image per
disk: a restore writes only the blocks the stream holds (a block it does not
hold is zero), so its target must start zeroed. The tools create it
themselves, exclusively (O_EXCL: never an existing file, so never the disk
of a running VM nor the one the snapshot was taken from), as a sparse raw
file of exactly the saved disk's size (no block is allocated until written),
mode 0600 like the snapshot file (it holds the guest's data). new_image_path()
is where one goes by default, check_new_path() says whether a path can be
one, create_image() makes it, image_bytes() is the size a guest sees of an
existing image (a restore without the disks' content checks it)."""

import os
import struct
from pathlib import Path

from .errors import LaunchError

QCOW2_MAGIC = b"QFI\xfb"
QCOW2_SIZE_AT = 24             # the header's virtual size: u64, big-endian


def new_image_path(snapshot, index):
    """The default new image of disk @index of the snapshot file @snapshot:
    beside it, FILE.disk0.raw, FILE.disk1.raw."""
    snapshot = Path(snapshot)
    return snapshot.with_name(f"{snapshot.name}.disk{index}.raw")


def check_new_path(path, what):
    """@path can become a new image: nothing is there (not even a dangling
    symbolic link) and its directory is writable. LaunchError otherwise."""
    path = Path(path)
    if os.path.lexists(path):
        raise LaunchError(f"{what}: {path} exists; the launcher creates this image itself, "
                          "new and zeroed (never over an existing file: a restore writes only "
                          "the blocks its snapshot holds): give a path that does not exist, "
                          "or remove that file")
    parent = path.parent
    if not parent.is_dir():
        raise LaunchError(f"{what}: no such directory {parent} for the new image {path.name}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise LaunchError(f"{what}: cannot create {path}: directory {parent} is not writable "
                          "(give disk=PATH elsewhere)")


def create_image(path, size):
    """Create @path exclusively, @size bytes of zeroes (sparse: ftruncate
    allocates nothing), mode 0600. OSError (FileExistsError if anything is
    there, a symbolic link too) is the caller's; nothing is left behind."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW,
                 0o600)
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)


def image_bytes(path):
    """The size a guest sees of the image @path: a qcow2 image's virtual
    size, else the file's (a block device's) length. OSError is the caller's."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        head = os.pread(fd, QCOW2_SIZE_AT + 8, 0)
        if head[:4] == QCOW2_MAGIC and len(head) == QCOW2_SIZE_AT + 8:
            return struct.unpack_from(">Q", head, QCOW2_SIZE_AT)[0]
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


class NewImages:
    """The images one run creates: create() makes them all (or none: a
    failure removes those it made), remove() takes some away again."""

    def __init__(self):
        self.created = []

    def create(self, disks):
        """Create each DiskSpec of @disks with a new_size (LaunchError if one
        cannot be)."""
        for disk in disks:
            try:
                create_image(disk.path, disk.new_size)
            except OSError as e:
                self.remove(list(self.created))
                raise LaunchError(f"{disk.owner}: cannot create the new image {disk.path}: "
                                  f"{e.strerror or e}") from None
            self.created.append(disk)

    def remove(self, disks):
        """Remove the images of @disks this run created; the paths removed."""
        gone = []
        for disk in disks:
            if any(d is disk for d in self.created):
                self.created = [d for d in self.created if d is not disk]
                try:
                    os.unlink(disk.path)
                    gone.append(disk.path)
                except FileNotFoundError:
                    pass
        return gone
