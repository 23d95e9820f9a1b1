# SPDX-License-Identifier: MIT
"""carapace: the host tools of the Carapace hypervisor as a Python library
(standard library only; docs/python-api.md).

    from carapace import Host
    h = Host(ctl_socket="/tmp/c1.sock")     # stream socket: beside it
    for vm in h.list():
        print(vm["name"], vm["state"])
    h.snapshot("alpha", "alpha.snap")
    h.restore("alpha.snap", name="beta")
    h.migrate("beta", "hostb:4444", tls_dir="/etc/carapace/tls")

Modules, one concern each: host (Host), client (the management protocol),
checks (argument checks), metrics (the Prometheus text of the counters),
streams (snapshot and restore streams), relay and
migration (live migration), tls (its transport), snapshot, snapshot_format,
snapshot_legal, snapshot_text, snapshot_diff, crc32c (the snapshot format),
c_header (the C tables it reads),
launcher, vmspec, devicetree, console, restorer, incoming (carapace-run),
paths (default locations), limits and units (shared constants), errors, and
cli (the four commands' main functions)."""

from .errors import FileError, LaunchError, RemoteError, TransportError, UsageError
from .host import Host

__version__ = "1.0"
__all__ = ["Host", "FileError", "LaunchError", "RemoteError", "TransportError", "UsageError"]
