#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the test tiers in order: host unit tests, short fuzz runs (the
# snapshot restore path and the other parsers, docs/fuzzing.md), then the pytest suites
# (quick tier: reference + guest tests under Carapace; then the Linux tier),
# then the conformant tier: the CFI guest tests again, on the QEMU that
# scripts/qemu-conformant.sh builds with platform/qemu-virt/patches (cached by
# source version and patch set; a failed build fails the run).
#   scripts/run-tests.sh             all tiers
#   scripts/run-tests.sh quick       unit + short fuzz + quick tier only
#   scripts/run-tests.sh conformant  the conformant tier only
set -uo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
# The tools' "#!/usr/bin/env python3" finds the system's Python, the one the
# tests run under: a pyenv shim earlier in PATH costs about 1 s a call (2 s
# and more on a loaded host), which timed tests that call carapace-ctl a few
# times in a row (a migration, then list on both hosts) could not afford.
export PATH="/usr/bin:$PATH"
tier=${1:-all}
rc=0

# The tiers boot the CFI build (docs/security.md, "The hypervisor's own CFI"),
# which `make test` builds; the plain build (riscv64-unknown-elf-gcc) gets a
# tier of its own below. CARAPACE_HYP set by the caller wins.
if [ -z "${CARAPACE_HYP:-}" ]; then
	if [ ! -f build/cfi/carapace.bin ]; then
		echo "build/cfi/carapace.bin is missing: run the tests through \`make test\` (it builds it)"
		exit 1
	fi
	export CARAPACE_HYP=$PWD/build/cfi/carapace.bin
fi
echo "== hypervisor under test: $CARAPACE_HYP =="

# The plain build: the core guest tests, the CFI tests and the attacks.
plain() {
	echo "== plain build (build/carapace.bin): core, CFI and attack tests =="
	CARAPACE_HYP=$PWD/build/carapace.bin $PY -m pytest -q -rfEs -m quick \
		tests/guests/test_guests.py tests/guests/test_cfi.py tests/guests/test_attacks.py \
		tests/guests/test_hyp_wx.py
}

conformant() {
	echo "== conformant tier: CFI tests on QEMU + platform/qemu-virt/patches =="
	local q
	if ! q=$(scripts/qemu-conformant.sh build); then
		echo "conformant QEMU: build failed"
		return 1
	fi
	# CARAPACE_CONFORMANT: tests/conftest.py's list of known differences applies
	CARAPACE_QEMU=$q CARAPACE_CONFORMANT=1 $PY -m pytest -q -rfEsxX -m "conformant or cfi" tests/guests
}

if [ "$tier" = conformant ]; then
	conformant || rc=1
	exit $rc
fi

echo "== unit tests (host, sanitizers) =="
make --no-print-directory test-unit || rc=1

# Never skipped (CI included): a missing clang is installed by the target,
# or the run fails.
echo "== fuzz: snapshot restore (libFuzzer, short run) =="
make --no-print-directory fuzz-snap-short || rc=1
echo "== fuzz: decoder, host/guest DT, management, migration stream, virtqueues, host disk driver (short runs) =="
make --no-print-directory fuzz-more-short || rc=1

marks="quick or reference"
[ "$tier" = all ] && marks="quick or reference or linux"
echo "== in-QEMU tests ($marks) =="
# pytest's summary line is the last line of the run. -rfEs lists failures,
# errors and skips with their reasons; under CI (CI=true) tests/conftest.py
# turns every skip into a failure.
$PY -m pytest -q -rfEs -m "$marks" tests
prc=$?
[ $prc -eq 0 ] || rc=1
plain || rc=1
if [ "$tier" = all ]; then
	conformant || rc=1
fi
exit $rc
