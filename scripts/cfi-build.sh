#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CFI build of the hypervisor (docs/security.md, "The hypervisor's own
# CFI"): the Makefile with CFI=1, run by sid's riscv64-linux-gnu-gcc (>= 15:
# the first with -fcf-protection for RISC-V) in the build root the guest
# kernel already uses ($CARAPACE_CACHE/guest-kernel/sid-root, made by
# guest-linux-patches/build.sh root). The sources (hyp/, include/, platform/,
# the Makefile, libfdt) are copied into the root, built there, and the ELF and
# binary copied back.
#
#   cfi-build.sh cfi           build/cfi/carapace.{elf,bin}, with the debug
#                              test hooks (CARAPACE_DEBUG_HOOKS)
#   cfi-build.sh cfi-release   build/cfi-release/carapace.{elf,bin}, without
#   cfi-build.sh check         the root and its compiler are usable (status 0)
#
# Keyed: a variant is rebuilt only when a source, the compiler or the
# variant's flags changed (build/<variant>/key).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CARAPACE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/carapace}
ROOTFS=$CACHE/guest-kernel/sid-root
LIBFDT=$CACHE/libfdt
CROSS=riscv64-linux-gnu-
GCC_MIN=15
JOBS=${CFI_BUILD_JOBS:-2}
NICE=(nice -n 19 ionice -c3)
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
say() { printf '[cfi-build] %s\n' "$*" >&2; }
die() { printf '[cfi-build] error: %s\n' "$*" >&2; exit 1; }

in_root() {
	$SUDO "${NICE[@]}" chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM=dumb "$@"
}

# check_toolchain: the root is there and its gcc is new enough; sets GCC_VERSION.
check_toolchain() {
	local major
	[ -x "$ROOTFS/usr/bin/${CROSS}gcc" ] ||
		die "no CFI-capable compiler: $ROOTFS/usr/bin/${CROSS}gcc is missing. The CFI build" \
		    "needs the sid build root of the guest kernel: run" \
		    "'guest-linux-patches/build.sh root' (or 'make guest-kernel') first." \
		    "The plain build (make) does not need it."
	GCC_VERSION=$(in_root ${CROSS}gcc -dumpfullversion 2>/dev/null) ||
		die "${CROSS}gcc does not run in $ROOTFS (chroot as root: run as root or with sudo)"
	major=${GCC_VERSION%%.*}
	[ "$major" -ge "$GCC_MIN" ] 2>/dev/null ||
		die "${CROSS}gcc $GCC_VERSION in $ROOTFS is too old: -fcf-protection for RISC-V" \
		    "needs gcc >= $GCC_MIN"
}

# The files the build reads, relative to TOP (libfdt apart).
SOURCES=(Makefile hyp include platform)

cache_key() {
	local variant=$1
	{
		echo "variant $variant gcc $GCC_VERSION"
		sha256sum "$TOP/scripts/cfi-build.sh" | cut -d' ' -f1
		in_root ${CROSS}as --version | sed -n 1p
		(cd "$TOP" && find "${SOURCES[@]}" -type f | LC_ALL=C sort | xargs sha256sum)
		(cd "$LIBFDT" && find . -maxdepth 1 -name '*.[ch]' | LC_ALL=C sort | xargs sha256sum)
	} | sha256sum | cut -c1-16
}

build() {
	local variant=$1 hooks out key work w
	case $variant in
	cfi) hooks=1 ;;
	cfi-release) hooks=0 ;;
	*) die "unknown variant '$variant' (cfi|cfi-release)" ;;
	esac
	check_toolchain
	[ -f "$LIBFDT/.done" ] || die "libfdt sources missing in $LIBFDT: run 'scripts/deps.sh libfdt'"
	out=$TOP/build/$variant
	key=$(cache_key "$variant")
	if [ -f "$out/carapace.bin" ] && [ "$(cat "$out/key" 2>/dev/null)" = "$key" ]; then
		say "$variant: up to date ($out/carapace.bin, key $key)"
		return 0
	fi
	# one work directory per source tree and variant: its build/ is kept, so
	# make rebuilds only what changed (cp -a keeps the sources' times)
	w=/work/carapace-$(printf '%s' "$TOP" | sha256sum | cut -c1-8)-$variant
	work=$ROOTFS$w
	say "$variant: building with ${CROSS}gcc $GCC_VERSION in $ROOTFS (key $key)"
	$SUDO mkdir -p "$work"
	(cd "$work" && $SUDO rm -rf "${SOURCES[@]}" libfdt)
	(cd "$TOP" && $SUDO cp -a "${SOURCES[@]}" "$work/")
	$SUDO cp -a "$LIBFDT" "$work/libfdt"
	in_root make -C "$w" -j"$JOBS" B="$w/build" CROSS=$CROSS CFI=1 DEBUG_HOOKS=$hooks \
		LIBFDT_SRC="$w/libfdt" CACHE="$w/cache" "$w/build/carapace.bin" ||
		die "$variant: the build failed (output above; work directory $work)"
	mkdir -p "$out"
	cp "$work/build/carapace.elf" "$work/build/carapace.bin" "$out/"
	echo "$key" >"$out/key"
	echo "$GCC_VERSION" >"$out/compiler"
	say "$variant: built $out/carapace.bin ($(stat -c %s "$out/carapace.bin") bytes)"
}

[ $# -gt 0 ] || set -- cfi
case $1 in
check) check_toolchain; say "usable: ${CROSS}gcc $GCC_VERSION in $ROOTFS" ;;
cfi|cfi-release) build "$1" ;;
*) die "unknown command '$1' (cfi|cfi-release|check)" ;;
esac
