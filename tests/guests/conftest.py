# SPDX-License-Identifier: MIT
"""Fixtures of the bare-metal guest tests (the classes are tests/harness'):
guests_built (the payloads, built once a session), snap_host (SnapHosts,
stopped at the end), host_factory (plain Hosts, the same) and hosts (the
hosts of a migration test); harness.hosts.started_hosts() is each one's body."""

import pytest

from harness.hosts import Host, SnapHost, started_hosts
from harness.migration import MigHost
from harness.runs import build_guests


@pytest.fixture(scope="session")
def guests_built():
    """Build the payloads once (cheap when they are up to date)."""
    return build_guests()


@pytest.fixture
def host_factory(tmp_path, guests_built):
    """Plain Hosts: make(vms, extra=..., timeout=...)."""
    yield from started_hosts(Host, tmp_path)


@pytest.fixture
def snap_host(tmp_path, guests_built):
    """SnapHosts, with a stream socket: make(vms, extra=..., timeout=...)."""
    yield from started_hosts(SnapHost, tmp_path)


@pytest.fixture
def hosts(tmp_path, guests_built, tls_creds):
    """MigHosts: make(tag, vms, incoming=PORT, extra=...) starts one (TLS
    credentials: tls_creds' main set unless creds= says otherwise); they boot
    side by side (call .ready())."""
    yield from started_hosts(MigHost, tmp_path, creds=tls_creds.main)
