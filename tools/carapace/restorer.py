# SPDX-License-Identifier: MIT
"""carapace-run --restore: the snapshot files checked before QEMU starts
(parse_restores; FILE,disk=PATH,...: the host disks its VM's disks go to),
then restored one by one through the management client once the hypervisor
answers "hello" (Restorer, a thread beside QEMU).

A snapshot that holds its disks' content (header flag DISKS) restores each
disk into a new image the launcher creates (carapace.disk_images: never an
existing file), disk=NEWPATH or FILE.diskN.raw beside the snapshot; the
images of a restore that did not complete are removed (the launcher's
cleanup). Without the flag, disk=PATH is the user's image of the saved
disk's size, its content theirs to match."""

import dataclasses
import os
import signal
import sys
import threading
import time
from pathlib import Path

from .client import Client, DEFAULT_TIMEOUT
from .crc32c import crc32c
from .disk_images import check_new_path, image_bytes, new_image_path
from .disks import MAX_DISKS, DiskSpec, parse_disk
from .errors import LaunchError, RemoteError, TransportError, UsageError
from .limits import MAX_VMS
from .ratelimits import split_options
from .snapshot_format import DISK_BLOCK_SECTORS
from .streams import restore_vm, verify_snapshot

SECTOR = 512                   # a disk's capacity is in sectors (DISK_SECTOR)

HELLO_TIMEOUT = 120.0          # --restore: how long the hypervisor may take to answer


@dataclasses.dataclass
class RestoreSpec:
    """A --restore FILE, checked: the VM it holds."""
    path: Path
    name: str
    vcpus: int
    mem: int
    size: int          # bytes of the stream (a gzip file expanded)
    pages: int         # memory pages in it
    disks: list = dataclasses.field(default_factory=list)   # disks.DiskSpec: its VM's disks
    disks_included: bool = False   # the file holds the disks' content: new images
    restored: bool = False         # the hypervisor said it runs (Restorer)


def parse_restores(items, vms):
    """Check each --restore FILE[,disk=PATH[:ro]]... as the hypervisor will
    (carapace-snap's checks, through carapace-ctl) before anything starts; the
    VMs' names must differ from each other and from the --vm names. Each
    disk=PATH is a host disk (a virtio-blk-pci device, as a --vm's) for the
    saved VM's disks, in order: the restore puts them there. A file with its
    disks' content gets a new image per disk (new_disks())."""
    restores, names = [], {vm.name: "--vm" for vm in vms}
    for item in items:
        text, *opts = item.split(",")
        if any(not o.startswith("disk=") for o in opts) or len(opts) > MAX_DISKS:
            raise LaunchError(f"--restore {item}: want FILE or FILE,disk=PATH[:ro] (at most "
                              f"{MAX_DISKS} disks)")
        path = Path(text).expanduser().absolute()
        try:
            snap = verify_snapshot(path)
        except UsageError as e:
            raise LaunchError(f"--restore {item}: {e}") from None
        name = snap.config["name"].split(b"\0", 1)[0].decode()
        if name in names:
            raise LaunchError(f"--restore {item}: it holds vm {name}, and a {names[name]} "
                              "has that name already (names must be unique)")
        names[name] = f"--restore {item}"
        values = [o[len("disk="):] for o in opts]
        if snap.disks_included:
            disks = new_disks(f"--restore {item}", path, snap.disks, values, name)
        else:
            disks = [parse_disk(v, name, i) for i, v in enumerate(values)]
            check_sizes(f"--restore {item}", snap.disks, disks)
            check_identities(f"--restore {item}", snap.disks, snap.disk_ids, disks)
        restores.append(RestoreSpec(path, name, snap.config["nr_vcpus"],
                                    snap.config["ram_size"], snap.size, snap.memory_pages,
                                    disks, snap.disks_included))
    if len(vms) + len(restores) > MAX_VMS:
        raise LaunchError(f"{len(vms)} VMs and {len(restores)} --restore: the hypervisor runs "
                          f"at most {MAX_VMS}")
    return restores


def new_disks(what, path, saved, values, name):
    """The new images a snapshot holding its disks' content (@saved: its
    disks, carapace.snapshot's Snapshot.disks) restores into: @values
    (disk=NEWPATH) for the first ones, FILE.diskN.raw beside the file @path
    for the others. Each must not exist: the launcher creates it, zeroed, of
    the saved disk's size. A read-only disk's content is its image's, never
    in the stream: it takes its image, disk=PATH[:ro], as without the flag."""
    if len(values) > len(saved):
        raise LaunchError(f"{what}: it holds {len(saved)} disk(s) with their content, "
                          f"{len(values)} disk= given")
    out = []
    for i, disk in enumerate(saved):
        if disk["read_only"]:
            if i >= len(values):
                raise LaunchError(f"{what}: its disk {i} is read-only, so its content is not "
                                  "in the snapshot (it is its image's): give disk=PATH[:ro], "
                                  "that image")
            image = parse_disk(values[i], name, i)
            check_sizes(what, [disk], [image])
            out.append(image)
            continue
        if i < len(values):
            text, flags, _ = split_options(values[i], ("ro",), (), f"{what}: disk={values[i]}")
            if flags:
                raise LaunchError(f"{what}: disk={values[i]}: the restore writes the saved "
                                  "disk's content into this new image, so it cannot be :ro "
                                  "(the guest sees the disk read-only if it was saved so)")
            if not text:
                raise LaunchError(f"{what}: disk= needs a path")
            target = Path(text).expanduser().absolute()
        else:
            target = new_image_path(path, i)
        check_new_path(target, what)
        out.append(DiskSpec(target, False, "raw", name, i,
                            new_size=disk["capacity"] * SECTOR))
    return out


def check_sizes(what, saved, disks):
    """A restore without the disks' content: each disk=PATH given for a saved
    disk is an image of its size (the hypervisor refuses another; said here
    before anything starts)."""
    for disk, want in zip(disks, saved):
        try:
            size = image_bytes(disk.path)
        except OSError as e:
            raise LaunchError(f"{what}: cannot read {disk.path}: {e.strerror or e}") from None
        if want["capacity"] is not None and size // SECTOR != want["capacity"]:
            raise LaunchError(f"{what}: disk={disk.path} is {size} bytes, the saved disk "
                              f"{disk.index} {want['capacity'] * SECTOR} ({want['capacity']} "
                              "sectors): a restore needs a disk of its size (this snapshot "
                              "does not hold the disks' content: the image is yours to match)")


def check_identities(what, saved, disk_ids, disks):
    """A restore without the disks' content (format 6 and later): each raw
    image given holds, in the blocks the snapshot's DISK_ID sampled, what
    the saved disk held (the hypervisor refuses another with no-device; said
    here before anything starts). A qcow2 image is left to the hypervisor:
    its blocks are not where a read of the file finds them."""
    ids = {d["slot"]: d for d in disk_ids}
    for disk, want in zip(disks, saved):
        ident = ids.get(want["slot"])
        if ident is None or disk.fmt != "raw":
            continue
        try:
            with open(disk.path, "rb") as f:
                for sample in ident["samples"]:
                    block = sample["block"]
                    sectors = min(DISK_BLOCK_SECTORS,
                                  ident["sectors"] - block * DISK_BLOCK_SECTORS)
                    f.seek(block * DISK_BLOCK_SECTORS * SECTOR)
                    if crc32c(f.read(sectors * SECTOR)) != sample["crc32c"]:
                        raise LaunchError(
                            f"{what}: disk={disk.path} is not the saved disk {disk.index} "
                            f"(block {block}, sectors {block * DISK_BLOCK_SECTORS}-"
                            f"{block * DISK_BLOCK_SECTORS + sectors - 1}, differs from the "
                            "snapshot's): give the image as it was at the snapshot (this "
                            "snapshot does not hold the disks' content)")
        except OSError as e:
            raise LaunchError(f"{what}: cannot read {disk.path}: {e.strerror or e}") from None


def hello_client(ctl_socket, timeout, gone):
    """A carapace-ctl Client once the hypervisor answers hello on @ctl_socket,
    or None if @gone() says QEMU ended first; TransportError after @timeout
    seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if gone():
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            raise TransportError(f"the hypervisor did not answer hello on "
                                     f"{ctl_socket} within {timeout:g} s")
        try:
            client = Client(ctl_socket, timeout=min(left, 1.0))
        except TransportError:
            time.sleep(0.1)                # QEMU has not made the socket yet
            continue
        client.timeout = max(left, 0.1)
        try:
            client.request("hello")
        except BaseException:
            client.close()
            raise
        client.timeout = DEFAULT_TIMEOUT
        return client


def images_text(spec):
    """The new images of a restore with its disks' content, in words."""
    if not spec.disks_included:
        return ""
    return ("; its disks' content into the new image(s) " +
            ", ".join(str(d.path) for d in spec.disks))


class Restorer:
    """Restores the --restore files once the hypervisor answers, in a thread,
    while the console runs as usual.  On a failure it stops QEMU and keeps the
    message in .error (carapace-run then exits with 3)."""

    def __init__(self, restores, ctl_socket, stream_socket, hello_timeout=HELLO_TIMEOUT,
                 out=None, crlf=False, group=False):
        self.restores, self.ctl_socket, self.stream_socket = restores, ctl_socket, stream_socket
        self.group = group                   # batch: QEMU leads its own process group
        self.hello_timeout = hello_timeout
        self.out = out or sys.stderr
        self.eol = "\r\n" if crlf else "\n"   # the terminal is raw while QEMU owns it
        self.error = None
        self.proc = None
        self.thread = None
        self.results = []

    def say(self, text):
        self.out.write(f"carapace-run: {text}{self.eol}")
        self.out.flush()

    def start(self, proc):
        self.proc = proc
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def join(self, timeout=None):
        if self.thread:
            self.thread.join(timeout)

    def qemu_gone(self):
        return self.proc is not None and self.proc.poll() is not None

    def connect(self):
        """A client once the hypervisor answers hello, or None if QEMU ended."""
        return hello_client(self.ctl_socket, self.hello_timeout, self.qemu_gone)

    def run(self):
        current = None
        try:
            client = self.connect()
            if client is None:
                return
            with client:
                for spec in self.restores:
                    current = spec
                    self.say(f"restoring vm {spec.name} from {spec.path} ({spec.size} bytes, "
                             f"{spec.pages} memory pages{images_text(spec)})")
                    reply = restore_vm(client, self.stream_socket, spec.path, verify=False,
                                       stream_bytes=spec.size,
                                       disks=[d.pci_dev for d in spec.disks])
                    spec.restored = True
                    self.results.append(reply)
                    runs = (f", {reply.get('disk_runs')} disk runs written"
                            if spec.disks_included else "")
                    self.say(f"restored vm {reply.get('vm')} from {spec.path}: index "
                             f"{reply.get('index')}, {reply.get('pages')} memory pages{runs}")
        except RemoteError as e:
            self.fail(current, f"{e.code}: {e.message}")
        except (TransportError, UsageError) as e:
            self.fail(current, str(e))
        except Exception as e:                 # keep the launcher's promise: QEMU stops
            self.fail(current, f"{type(e).__name__}: {e}")

    def fail(self, spec, message):
        what = f"restore {spec.path}" if spec else "restore"
        self.error = f"{what}: {message}"
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                if self.group:
                    os.killpg(proc.pid, signal.SIGTERM)
                else:
                    proc.terminate()
            except ProcessLookupError:
                pass


