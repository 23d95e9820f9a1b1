# SPDX-License-Identifier: MIT
"""Shared pytest setup: the markers the test suites use, registered so that
`-m quick` and friends select them without "unknown marker" warnings."""

MARKERS = {
    "quick": "runs Carapace on QEMU with small guests (minutes)",
    "reference": "runs a guest directly on QEMU + OpenSBI (no Carapace)",
    "linux": "boots Linux guests under Carapace",
    "slow": "long-running runs",
}


def pytest_configure(config):
    for name, help_text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")
