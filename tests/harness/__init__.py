# SPDX-License-Identifier: MIT
"""The test harness every test imports (tests/README.md): paths (where the
tree, its builds and the tools are), report (the payloads' result lines),
runs (a payload's run to its end, on bare QEMU or under Carapace), hosts
(Carapace hosts a test drives while they run), migration (hosts and
clients of a live migration), snapshots (reading snapshot files), linux
(the Linux tier's guests, runs and hosts), ports (free TCP ports), fakes
(the one fake hypervisor). tests/conftest.py puts tests/ and tools/ on
sys.path; the fixtures are in the conftest.py files."""
