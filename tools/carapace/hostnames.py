# SPDX-License-Identifier: MIT
"""Host names the tools take for the migration transport."""


def host_address(host):
    """@host, or 127.0.0.1 for a localhost name: RFC 6761 (6.3) reserves them
    for the loopback whatever a resolver says, and a minimal Debian (no
    /etc/hosts) resolves none of them."""
    name = (host or "").lower().rstrip(".")
    return "127.0.0.1" if name == "localhost" or name.endswith(".localhost") else host
