# SPDX-License-Identifier: MIT
"""Where the tree and its tools are, for every test: one definition."""

import sys
from pathlib import Path

from carapace.paths import cache_dir

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
BUILD = ROOT / "build"
HYP = BUILD / "carapace.bin"
GUESTS = BUILD / "guests"
CACHE = cache_dir()
FIRMWARE = CACHE / "fw_dynamic.bin"
PYTHON = sys.executable
LAUNCHER = TOOLS / "carapace-run"
CTL = TOOLS / "carapace-ctl"
SNAP = TOOLS / "carapace-snap"
TLS = TOOLS / "carapace-tls"
