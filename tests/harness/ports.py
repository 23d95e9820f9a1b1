# SPDX-License-Identifier: MIT
"""Free TCP ports on the loopback, for migration relays."""

import socket


def free_port():
    """A TCP port nothing listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
