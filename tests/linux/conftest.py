# SPDX-License-Identifier: MIT
"""Fixtures of the Linux tier (the helpers are harness.linux's): initramfs,
cfitest and its busybox initramfs, built once a session."""

import pytest

from harness.linux import build_initramfs


@pytest.fixture(scope="session")
def initramfs():
    """Build cfitest and the initramfs once per session (cheap when current)."""
    return build_initramfs()
