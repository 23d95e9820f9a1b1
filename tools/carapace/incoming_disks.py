# SPDX-License-Identifier: MIT
"""carapace-run --incoming-disk: the host disks a fresh --incoming host gives
the VM it waits for, and with them the disk mode it chooses (issue 25;
docs/migration.md, "Disks and NICs"). The hypervisor learns both from
/chosen (carapace.devicetree): carapace,incoming-disks lists the disks' host
PCI device numbers (the arriving VM's disk k goes to the k-th), and
carapace,incoming-copy-disks is there in copy mode.

One mode for all the VM's disks:

  --incoming-disk PATH            shared: PATH is the image the source's QEMU
                                  has open (shared storage, or the same
                                  machine). QEMU opens it here too, without
                                  its image lock (file.locking=off: the
                                  source's QEMU holds the lock). The disk's
                                  blocks do not move.
  --incoming-disk PATH:size=SIZE  copy: the launcher creates PATH, a new
                                  zeroed sparse image of SIZE bytes, the
                                  source disk's size (exclusively, never over
                                  an existing file: carapace.disk_images),
                                  and the disk's blocks come in the stream.
                                  If no VM has arrived when carapace-run
                                  ends, the images go; once one has, they
                                  stay (they are its disks).

Like --spare-disk's, each is a virtio-blk-pci device of QEMU's, numbered
after the VMs' disks (carapace.iodevices)."""

import dataclasses
from pathlib import Path

from .disk_images import check_new_path
from .disks import MAX_DISKS, DiskSpec, existing_image
from .errors import LaunchError
from .ratelimits import split_options
from .spare_disks import new_disk_size

OPTION = "--incoming-disk"
SYNTAX = "PATH (shared: the image the source uses) or PATH:size=SIZE (copy: a new image)"


@dataclasses.dataclass
class IncomingDisks:
    """The --incoming-disk disks of a run, all of one @mode."""
    mode: str                  # "shared" | "copy"
    disks: list                # DiskSpec: the arriving VM's disk 0, disk 1

    @property
    def copy(self):
        return self.mode == "copy"

    @property
    def new(self):
        """The images the launcher creates (copy mode), to remove if no VM came."""
        return [d for d in self.disks if d.new_size is not None]

    @property
    def pci_devs(self):
        """Their host PCI device numbers, in order (after plan_devices)."""
        return [d.pci_dev for d in self.disks]


def split_incoming_disk(item):
    """--incoming-disk @item -> (mode, PATH text, SIZE text or None)."""
    what = f"{OPTION} {item}"
    text, _, opts = split_options(item, (), ("size",), what)
    if not text:
        raise LaunchError(f"{what}: want {SYNTAX}")
    return ("copy" if "size" in opts else "shared"), text, opts.get("size")


def incoming_disk(item, index, text, size_text):
    """The DiskSpec (of no VM) of one --incoming-disk, its files checked."""
    what = f"{OPTION} {item}"
    if size_text is not None:
        size = new_disk_size(size_text, what, "the size of the source's disk: `carapace-ctl "
                                              "devices VM` there gives it in sectors")
        path = Path(text).expanduser().absolute()
        check_new_path(path, what)
        return DiskSpec(path, False, "raw", "", index, new_size=size, option=OPTION)
    path, fmt = existing_image(
        text, what, writable_hint=" (the arriving VM writes its disk)",
        missing_hint=f" (shared mode opens the image the source uses; for a new image the "
                     f"disk's blocks are copied into, give {text}:size=SIZE)")
    return DiskSpec(path, False, fmt, "", index, option=OPTION, locking=False)


def parse_incoming_disks(items):
    """Every --incoming-disk of a run, checked: at most MAX_DISKS, all of one
    mode. None without any."""
    if not items:
        return None
    if len(items) > MAX_DISKS:
        raise LaunchError(f"{OPTION}: {len(items)} given, but a VM has at most {MAX_DISKS} "
                          "disks")
    split = [split_incoming_disk(item) for item in items]
    modes = [mode for mode, _, _ in split]
    if len(set(modes)) > 1:
        shared, copy = items[modes.index("shared")], items[modes.index("copy")]
        raise LaunchError(f"{OPTION} {shared} (shared: an existing image) and {OPTION} {copy} "
                          "(copy: a new image of SIZE bytes): one mode for all the VM's "
                          f"disks; give every {OPTION} as PATH, or every one as PATH:size=SIZE")
    disks = [incoming_disk(item, k, text, size)
             for k, (item, (_, text, size)) in enumerate(zip(items, split))]
    return IncomingDisks(modes[0], disks)


def incoming_disk_lines(disks, new_note=""):
    """Where each --incoming-disk is, and what it is for (@new_note: said of a
    new image after "zeroed")."""
    if disks is None:
        return []
    lines = []
    for d in disks.disks:
        where = f"at host PCI device {d.pci_dev} (00:{d.pci_dev:02x}.0)"
        if d.new_size is not None:
            lines.append(f"incoming disk {d.index}: new image {d.path} ({d.new_size} bytes, "
                         f"zeroed{new_note}) {where}, copy mode: the arriving VM's disk {d.index} is "
                         "copied into it (removed if no VM arrives)")
        else:
            lines.append(f"incoming disk {d.index}: {d.path} ({d.fmt}) {where}, shared mode: "
                         f"the arriving VM's disk {d.index}, the image the source uses "
                         "(QEMU's image lock off)")
    return lines
