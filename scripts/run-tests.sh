#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the test tiers in order: host unit tests, a short fuzz run of the
# snapshot restore path (docs/fuzzing.md), then the pytest suites
# (quick tier: reference + guest tests under Carapace; then the Linux tier).
#   scripts/run-tests.sh          all tiers
#   scripts/run-tests.sh quick    unit + short fuzz + quick tier only
set -uo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
tier=${1:-all}
rc=0

echo "== unit tests (host, sanitizers) =="
make --no-print-directory test-unit || rc=1

# Never skipped (CI included): a missing clang is installed by the target,
# or the run fails.
echo "== fuzz: snapshot restore (libFuzzer, short run) =="
make --no-print-directory fuzz-snap-short || rc=1

marks="quick or reference"
[ "$tier" = all ] && marks="quick or reference or linux"
echo "== in-QEMU tests ($marks) =="
# pytest's summary line is the last line of the run. -rfEs lists failures,
# errors and skips with their reasons; under CI (CI=true) tests/conftest.py
# turns every skip into a failure.
$PY -m pytest -q -rfEs -m "$marks" tests
prc=$?
[ $prc -eq 0 ] || rc=1
exit $rc
