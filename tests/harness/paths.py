# SPDX-License-Identifier: MIT
"""Where the tree and its tools are, for every test: one definition."""

import os
import sys
from pathlib import Path

from carapace.paths import cache_dir, default_hyp

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
BUILD = ROOT / "build"
# The hypervisor every run boots: $CARAPACE_HYP if set (the launcher honours
# it too), e.g. build/cfi/carapace.bin to run the suite on the CFI build.
HYP = default_hyp()
PLAIN_HYP = BUILD / "carapace.bin"
CFI_HYP = BUILD / "cfi" / "carapace.bin"
GUESTS = BUILD / "guests"
CACHE = cache_dir()
FIRMWARE = CACHE / "fw_dynamic.bin"
PYTHON = sys.executable
LAUNCHER = TOOLS / "carapace-run"
CTL = TOOLS / "carapace-ctl"
SNAP = TOOLS / "carapace-snap"
TLS = TOOLS / "carapace-tls"
# The QEMU of the bare reference runs; tools/carapace-run honours the same variable.
QEMU = os.environ.get("CARAPACE_QEMU") or "qemu-system-riscv64"
