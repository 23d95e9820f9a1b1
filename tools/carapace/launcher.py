# SPDX-License-Identifier: MIT
"""The QEMU machine that carapace-run starts: its command line (qemu_command:
QEMU virt booting the hypervisor with the VMs' images and its management
device), and the UNIX sockets of that device's two ports, the control port
"org.carapace.control" (docs/management.md) and the stream port
"org.carapace.stream" (docs/snapshot-format.md), made ready for QEMU to
listen on (never TCP, never semihosting)."""

import dataclasses
import os
import socket
import stat
from pathlib import Path

from .errors import LaunchError
from .paths import default_ctl_socket, default_stream_socket
from .units import MiB

# CARAPACE_QEMU: another QEMU binary, e.g. the conformant tier's (make qemu-conformant).
QEMU = os.environ.get("CARAPACE_QEMU") or "qemu-system-riscv64"
DEFAULT_CPU = "rv64,h=true,zicfilp=true,zicfiss=true,zimop=true,zcmop=true,sstc=true,svadu=true,smstateen=true"
DEFAULT_SMP = 2
AIA_GUESTS_MAX = 7             # QEMU virt's aia-guests limit: guest interrupt files per hart
# CARAPACE_AIA_GUESTS=N: carapace-run's machine is the AIA one (N guest files)
# unless --plic says otherwise (docs/user-guide.md).
AIA_GUESTS_ENV = "CARAPACE_AIA_GUESTS"
PLIC_MACHINE = "virt,aclint=on"     # the default machine (bench's bare runs use it too)

# The management channel (docs/management.md).
CTL_PORT_NAME = "org.carapace.control"
STREAM_PORT_NAME = "org.carapace.stream"
# The management device's ports: ids 0..4, all the hypervisor drives
# (VCON_MAX_PORTS, hyp/include/virtio_console.h).  QEMU's default is 31, and
# it gives each port's two queues an eventfd its main loop polls at every
# turn, the turn that moves each 4 KiB of a stream: 70 descriptors a poll
# instead of 18 (docs/performance.md, "Stream throughput").
MGMT_MAX_PORTS = 5
SUN_PATH_MAX = 107             # sockaddr_un.sun_path holds 108 bytes, NUL included


def qemu_opt(path):
    """A file name inside a QEMU option list: commas are doubled."""
    return str(path).replace(",", ",,")


@dataclasses.dataclass
class HostConfig:
    hyp: Path
    bios: Path
    mem: int
    smp: int = DEFAULT_SMP
    cpu: str = DEFAULT_CPU
    timeslice_us: int | None = None
    wfi_traps: bool = False  # /chosen carapace,wfi-traps: no guest WFI sleeps natively
    icount: bool = False
    batch: bool = False
    extra: list = dataclasses.field(default_factory=list)
    persist: bool = False
    ctl_socket: Path | None = None     # None: default_ctl_socket()
    vmid_bits: int | None = None
    stream_socket: Path | None = None  # None: default_stream_socket(ctl_socket)
    stream_stall_ms: int | None = None
    incoming: object = None  # --incoming: an incoming.IncomingSpec (address, transport)
    selftest_pci_irq: bool = False  # /chosen carapace,selftest-pci-irq (tests only)
    selftest_hostio: bool = False  # --selftest-hostio (tests: writes the host disks)
    selftest_wx: str | None = None  # /chosen carapace,selftest-wx: "store" or "exec" (tests only)
    selftest_cfi: str | None = None  # --selftest-cfi ret|call (a debug build's hook)
    # --aia / --aia-guests: QEMU virt with an APLIC and IMSICs instead of the
    # PLIC (None: the PLIC machine), and this many guest interrupt files per hart
    aia_guests: int | None = None
    # the PLIC machine's CLINT as ACLINT devices (QEMU aclint=on): its SSWI
    # lets the hypervisor send host IPIs without the firmware (--no-aclint)
    aclint: bool = True

    def machine(self):
        """QEMU's -machine value: virt, with the AIA's controllers if asked,
        else with the ACLINT unless told not to."""
        if self.aia_guests is None:
            return PLIC_MACHINE if self.aclint else "virt"
        guests = f",aia-guests={self.aia_guests}" if self.aia_guests else ""
        return f"virt,aia=aplic-imsic{guests}"

    def machine_args(self):
        """What shapes the device tree: shared by the dump and the real run."""
        return ["-cpu", self.cpu, "-smp", str(self.smp), "-m", f"{self.mem // MiB}M",
                "-bios", str(self.bios)]


def socket_answers(path):
    """True if something accepts connections on the UNIX socket @path."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
        return True
    except (ConnectionRefusedError, FileNotFoundError):
        return False                       # stale: its server is gone
    except (BlockingIOError, TimeoutError):
        return True                        # a listener with a full backlog
    except OSError as e:
        raise LaunchError(f"cannot check the control socket {path}: {e.strerror}") from None
    finally:
        probe.close()


def private_dir(directory, option="--ctl-socket"):
    """Create @directory mode 0700 if missing; if it is there, it must be ours and
    a real directory (in /tmp anyone could have made it first)."""
    try:
        directory.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    st = directory.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise LaunchError(f"{directory} is not a directory; use {option}")
    if st.st_uid != os.getuid():
        raise LaunchError(f"{directory} belongs to another user; use {option}")
    if st.st_mode & 0o077:
        directory.chmod(0o700)


def socket_path(path, what, option):
    path = Path(path).expanduser().absolute()
    if len(os.fsencode(path)) > SUN_PATH_MAX:
        raise LaunchError(f"{what} path too long for a UNIX socket "
                          f"({len(os.fsencode(path))} > {SUN_PATH_MAX} bytes): {path}; "
                          f"use a shorter {option}")
    return path


def ctl_socket_path(arg):
    """The control socket's absolute path: --ctl-socket, else the default."""
    return socket_path(arg or default_ctl_socket(), "control socket", "--ctl-socket")


def stream_socket_path(arg, ctl_socket):
    """The stream socket's absolute path: --stream-socket, else the default
    (beside @ctl_socket).  It must not be the control socket."""
    path = socket_path(arg or default_stream_socket(ctl_socket), "stream socket",
                       "--stream-socket")
    if path == Path(ctl_socket).absolute():
        raise LaunchError(f"the stream socket and the control socket are both {path}; "
                          "use --stream-socket")
    return path


def prepare_ctl_socket(path, private=False, option="--ctl-socket"):
    """Make @path ready for QEMU to listen on: its directory exists (mode 0700
    when created; checked to be ours when @private), no one else uses it, a
    stale socket is removed.  @option names the option to change in errors."""
    path = Path(path)
    if private:
        private_dir(path.parent, option)
    elif not path.parent.is_dir():
        path.parent.mkdir(mode=0o700, parents=True)
    try:
        st = path.lstat()
    except FileNotFoundError:
        return path
    if not stat.S_ISSOCK(st.st_mode):
        raise LaunchError(f"{path} exists and is not a socket; use {option}")
    if socket_answers(path):
        raise LaunchError(f"another Carapace is using {path}; use {option}")
    path.unlink(missing_ok=True)
    return path


def remove_ctl_socket(path):
    """Remove the control socket once QEMU is gone (QEMU may have done so)."""
    try:
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()
    except FileNotFoundError:
        pass


def ctl_device_args(socket_path):
    """QEMU arguments for the hypervisor's management device: a virtio-serial
    device on a virtio-mmio transport (modern, not legacy), whose port
    "org.carapace.control" is the UNIX socket @socket_path, QEMU listening.
    QEMU virt puts the first virtio-mmio device on the last transport
    (0x10008000, IRQ 8).  No guest sees the device: the hypervisor owns it."""
    return ["-global", "virtio-mmio.force-legacy=false",
            "-device", f"virtio-serial-device,id=carapace-vser,max_ports={MGMT_MAX_PORTS}",
            "-chardev", f"socket,id=carapace-ctl,path={qemu_opt(socket_path)},"
                        "server=on,wait=off",
            "-device", "virtserialport,bus=carapace-vser.0,chardev=carapace-ctl,"
                       f"name={CTL_PORT_NAME},nr=1"]


def stream_device_args(socket_path):
    """QEMU arguments for the snapshot stream port: "org.carapace.stream", port
    2 of the management device (ctl_device_args() adds the device), the UNIX
    socket @socket_path, QEMU listening.  Never TCP: whatever reaches the
    stream port reaches the hypervisor, so only the host's own tools may (an
    --incoming host's relay among them, once it has authenticated a source)."""
    chardev = f"socket,id=carapace-stream,path={qemu_opt(socket_path)},server=on,wait=off"
    return ["-chardev", chardev,
            "-device", "virtserialport,bus=carapace-vser.0,chardev=carapace-stream,"
                       f"name={STREAM_PORT_NAME},nr=2"]


def qemu_command(host, dtb, images, batch, devices=()):
    """The QEMU command line that boots the hypervisor with the VMs' images,
    their host I/O devices (@devices: iodevices.device_args()) and its
    management device.  (Never semihosting: it would let the software in the
    machine read and write the host's files.)"""
    cmd = [QEMU, "-machine", host.machine(), *host.machine_args(),
           "-kernel", str(host.hyp), "-dtb", str(dtb)]
    for image in images:
        cmd += ["-device", f"loader,file={qemu_opt(image.path)},addr={image.addr:#x},"
                           "force-raw=on"]
    cmd += list(devices)
    ctl_socket = host.ctl_socket or default_ctl_socket()
    cmd += ctl_device_args(ctl_socket)
    cmd += stream_device_args(host.stream_socket or default_stream_socket(ctl_socket))
    if host.icount:
        cmd += ["-icount", "shift=0,align=off"]
    if batch:
        # No monitor and no terminal: the console is a plain pipe, stdin is unused.
        cmd += ["-display", "none", "-serial", "stdio", "-monitor", "none"]
    else:
        cmd += ["-nographic"]
    return cmd + host.extra


