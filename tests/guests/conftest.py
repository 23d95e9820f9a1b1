# SPDX-License-Identifier: MIT
"""Fixtures of the bare-metal guest tests (the classes are tests/harness'):
guests_built (the payloads, built once a session), snap_host (SnapHosts,
stopped at the end), host_factory (plain Hosts, the same) and hosts (the hosts of a migration test)."""

import pytest

from harness.hosts import Host, SnapHost
from harness.migration import MigHost
from harness.runs import build_guests


@pytest.fixture(scope="session")
def guests_built():
    """Build the payloads once (cheap when they are up to date)."""
    return build_guests()


def started_hosts(cls, tmp_path):
    """A fixture body: make(vms, extra=..., timeout=...) starts a @cls in
    tmp_path; every one is stopped (SIGTERM) at the end."""
    made = []

    def make(*args, **kw):
        made.append(cls(tmp_path, *args, **kw))
        return made[-1]
    yield make
    for h in made:
        h.kill()


@pytest.fixture
def host_factory(tmp_path, guests_built):
    """Plain Hosts (see started_hosts)."""
    yield from started_hosts(Host, tmp_path)


@pytest.fixture
def snap_host(tmp_path, guests_built):
    """SnapHosts, with a stream socket (see started_hosts)."""
    yield from started_hosts(SnapHost, tmp_path)


@pytest.fixture
def hosts(tmp_path, guests_built, tls_creds):
    """make(tag, vms, incoming=PORT, extra=...) starts a host (TLS credentials:
    the fixture's main set); they boot side by side (call .ready()); all are
    stopped (SIGTERM) at the end."""
    made, procs = [], []

    def make(tag, vms=(), **kw):
        kw.setdefault("creds", tls_creds.main)
        h = MigHost(tmp_path, tag, vms, **kw)
        made.append(h)
        return h
    make.procs = procs
    make.creds = tls_creds
    yield make
    for p in procs:
        p.stop()
    for h in made:
        h.kill()
