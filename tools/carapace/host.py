# SPDX-License-Identifier: MIT
"""Host: one running Carapace, driven from a Python script the way
carapace-ctl drives it from a shell (docs/python-api.md).  Every method
checks its arguments first (UsageError: nothing sent), opens the control
socket for its request, as carapace-ctl does (the channel serves one client
at a time), and returns the reply object (a dict, docs/management.md);
RemoteError is the hypervisor's refusal, TransportError a lost or silent
channel, FileError a local file problem."""

import time
from pathlib import Path

from . import checks
from .checks import vm_name
from .client import DEFAULT_TIMEOUT, Client
from .errors import FileError, UsageError
from .limits import DEFAULT_CFI, DEFAULT_MEM, DEFAULT_VCPUS
from .metrics import collect, exposition
from .migration import (MigReporter, connect_destination, incoming_args, incoming_vm,
                        migrate_vm, parse_target)
from .paths import default_ctl_socket, default_stream_socket
from .relay import MIG_DOWNTIME_LIMIT_MAX, MIG_MAX_ROUNDS
from .streams import restore_vm, snapshot_vm, verify_snapshot


class Host:
    """A Carapace host reached through its control socket @ctl_socket and its
    stream socket @stream_socket (defaults: where carapace-run puts them,
    paths.default_ctl_socket() and the stream socket beside it).  @timeout
    bounds each wait for a reply (a stream's silence, not its length)."""

    def __init__(self, ctl_socket=None, stream_socket=None, timeout=DEFAULT_TIMEOUT):
        self.ctl_socket = Path(ctl_socket) if ctl_socket else default_ctl_socket()
        self.stream_socket = (Path(stream_socket) if stream_socket
                              else default_stream_socket(self.ctl_socket))
        self.timeout = timeout

    def client(self):
        """A Client on the control socket, for several requests in a row (close
        it, or use it in a with block: the channel serves one client at a time)."""
        return Client(self.ctl_socket, self.timeout)

    def request(self, cmd, **args):
        """Send @cmd with @args (None values left out) unchecked; the reply."""
        with self.client() as c:
            return c.request(cmd, args)

    # --- queries and state changes ------------------------------------------------

    def hello(self):
        return self.request("hello")

    def list(self):
        """The VMs: a list of {"name", "index", "state", "vcpus", "mem", ...}."""
        return self.request("list")["vms"]

    def images(self):
        """The host images a create can name: a list of {"name", "size", ...}."""
        return self.request("images")["images"]

    def stats(self, vm=None):
        return self.request("stats", vm=vm_name(vm) if vm is not None else None)

    def cfi(self, vm):
        return self.request("cfi", vm=vm_name(vm))

    def metrics(self):
        """Every counter: {"host": {...}, "vms": [{...}, ...]}, the replies of
        the metrics command (the host's, then one per VM, on one connection)."""
        with self.client() as c:
            return collect(c)

    def metrics_text(self):
        """metrics() in the Prometheus text exposition format (0.0.4)."""
        return exposition(self.metrics())

    def pause(self, vm):
        return self.request("pause", vm=vm_name(vm))

    def resume(self, vm):
        return self.request("resume", vm=vm_name(vm))

    def wake(self, vm):
        return self.request("wake", vm=vm_name(vm))

    def destroy(self, vm):
        return self.request("destroy", vm=vm_name(vm))

    def create(self, name, kernel, initrd=None, mem=DEFAULT_MEM, vcpus=DEFAULT_VCPUS,
               cfi=DEFAULT_CFI, bootargs=None):
        """Create and start VM @name from the host images @kernel (and @initrd);
        @mem in bytes or as "64M"; @bootargs the kernel command line."""
        return self.request("create", name=vm_name(name),
                            kernel=checks.image_name(kernel, "kernel"),
                            initrd=checks.image_name(initrd, "initrd") if initrd else None,
                            mem=checks.vm_mem(str(mem)), vcpus=checks.vcpu_count(str(vcpus)),
                            cfi=checks.cfi_policy(cfi), bootargs=checks.bootargs(bootargs))

    # --- snapshots ----------------------------------------------------------------

    def snapshot(self, vm, path, live=False, compress=True, progress=None):
        """Save VM @vm into the file @path (gzip unless @compress is false;
        @live: the VM keeps running).  @progress: a file for progress lines."""
        vm = vm_name(vm)
        if Path(path).is_dir():
            raise UsageError(f"snapshot: {path} is a directory; give a file name")
        with self.client() as c:
            return snapshot_vm(c, self.stream_socket, vm, path, live, progress,
                               compress=compress)

    def restore(self, path, name=None, verify=True, progress=None, disks=None):
        """Restore the snapshot file @path as a new VM (named @name, else the
        name it had; its disks on the host PCI devices @disks, else where they
        were saved).  The file is checked first unless @verify is false."""
        name = vm_name(name) if name is not None else None
        stream_bytes = verify_snapshot(path).size if verify else None
        with self.client() as c:
            return restore_vm(c, self.stream_socket, path, name, verify=False,
                              progress=progress, stream_bytes=stream_bytes, disks=disks)

    # --- live migration -------------------------------------------------------------

    def migrate(self, vm, target, tls_dir=None, plain=False, max_rounds=None, tls_name=None,
                report=None, downtime_limit_ms=None, auto_converge=None):
        """Move VM @vm to the destination relay at @target ("HOST:PORT"): TLS
        with the credentials of @tls_dir (or $CARAPACE_TLS_DIR), or with @plain
        plain TCP on the loopback.  @report: a file for progress lines.  The
        destination chooses how the disks move (the reply's "disk_mode":
        "copy", their blocks in the stream; "shared", the same images; "none").
        @downtime_limit_ms (1..60000), @auto_converge: see migrate_vm()."""
        vm = vm_name(vm)
        host, port = parse_target(target)
        if max_rounds is not None and not 1 <= int(max_rounds) <= MIG_MAX_ROUNDS:
            raise UsageError(f"max_rounds {max_rounds}: must be 1..{MIG_MAX_ROUNDS}")
        if downtime_limit_ms is not None and \
                not 1 <= int(downtime_limit_ms) <= MIG_DOWNTIME_LIMIT_MAX:
            raise UsageError(f"downtime_limit_ms {downtime_limit_ms}: must be "
                             f"1..{MIG_DOWNTIME_LIMIT_MAX}")
        transport = self._transport(host, plain, tls_dir, "source", tls_name=tls_name)
        reporter = MigReporter(report, role="source")
        start = time.monotonic()
        remote = connect_destination(host, port, transport, self.timeout, reporter)
        try:
            with self.client() as c:
                return migrate_vm(c, self.stream_socket, vm, host, port, max_rounds, reporter,
                                  None, remote, start, downtime_limit_ms=downtime_limit_ms,
                                  auto_converge=auto_converge)
        finally:
            remote.close()

    def incoming(self, port, addr="127.0.0.1", name=None, tls_dir=None, plain=False,
                 wait=None, report=None, disks=None, copy_disks=False):
        """Receive one VM on this running host: listen on @addr:@port for a
        source that authenticates (TLS with @tls_dir's credentials, or @plain
        on the loopback), then relay its stream (@name: the VM's new name;
        @disks: the host PCI devices its disks go to). @copy_disks: the disks'
        blocks come with the stream, into the @disks (one a disk, each free,
        zeroed, of the source disk's size); else they are shared (the host
        disks are the images the source uses)."""
        name = vm_name(name) if name is not None else None
        incoming_args(name, disks, copy_disks)    # checked before anything
        transport = self._transport(addr, plain, tls_dir, "destination")
        reporter = MigReporter(report, role="destination")
        self.hello()                              # fail now, not after a source came
        return incoming_vm(self.client, self.stream_socket, addr, int(port), name, reporter,
                           wait, transport, disks, copy_disks)

    @staticmethod
    def _transport(host, plain, tls_dir, side, tls_name=None):
        from . import tls      # imported when needed: carapace-ctl starts faster
        try:
            if plain:
                return tls.plain_transport(host, f"{side} plain {host}")
            if side == "source":
                return tls.source_transport(tls_dir, name=tls_name)
            return tls.destination_transport(tls_dir)
        except tls.ConfigError as e:
            raise FileError(str(e)) from None

