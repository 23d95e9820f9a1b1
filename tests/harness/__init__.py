# SPDX-License-Identifier: MIT
"""The test harness every test imports (tests/README.md): paths (where the
tree, its builds and the tools are), ports (free TCP ports), fakes (the one
fake hypervisor). tests/conftest.py puts tests/ and tools/ on sys.path."""
