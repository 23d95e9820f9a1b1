#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The conformant platform tier (docs/cfi.md, "Conformant QEMU"): QEMU built
# from Debian's own `qemu` source package -- the version `make deps` installs
# (bookworm-backports) -- with our fixes of platform/qemu-virt/patches/
# applied, only riscv64-softmmu, cached by source version and patch set.
#
#   scripts/qemu-conformant.sh [build]   fetch, patch, build (or reuse the cache);
#                                        prints the binary's path on stdout
#   scripts/qemu-conformant.sh path      the binary's path for this patch set
#                                        (status 1 when it is not built yet)
#   scripts/qemu-conformant.sh key       the cache key
#
# The source comes through the private apt configuration of scripts/deps.sh
# (a deb-src line under $CARAPACE_CACHE/apt; the system's sources are not
# touched). A patch that no longer applies stops the build with its name.
# Build-deps (meson, python3-pycotap from backports; ninja, glib, pixman,
# libfdt, flex, bison, python3-venv for configure's ensurepip, from the release) are installed with apt if missing.
# CPU-heavy steps run under nice/ionice; QEMU_CONFORMANT_JOBS (default 2).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/deps.sh
source "$ROOT/scripts/deps.sh"
say() { printf '[qemu-conformant] %s\n' "$*" >&2; }
die() { printf '[qemu-conformant] error: %s\n' "$*" >&2; exit 1; }

PATCHES="$ROOT/platform/qemu-virt/patches"
BASE="$CACHE/qemu-conformant"
JOBS=${QEMU_CONFORMANT_JOBS:-2}
LOW=(nice -n 19 ionice -c3)
# Part of the cache key: a change here rebuilds.
CONFIGURE_ARGS=(--python=/usr/bin/python3 --target-list=riscv64-softmmu
	--without-default-features --enable-tcg --enable-fdt=system
	--disable-docs --disable-tools --disable-werror --disable-download
	--disable-install-blobs)
BUILD_DEPS_BPO=(meson python3-pycotap)
BUILD_DEPS=(ninja-build libglib2.0-dev libpixman-1-dev libfdt-dev pkg-config flex bison
	dpkg-dev git xz-utils python3-venv)
GIT=(git -c user.name=carapace -c user.email=carapace@localhost -c advice.detachedHead=false)

# The source version of the installed qemu-system-riscv (what `make deps` put there).
source_version() {
	local v
	v=$(dpkg-query -W -f='${source:Version}' qemu-system-riscv 2>/dev/null || true)
	if [ -z "$v" ]; then
		say "qemu-system-riscv is not installed: running scripts/deps.sh host"
		"$ROOT/scripts/deps.sh" host
		v=$(dpkg-query -W -f='${source:Version}' qemu-system-riscv 2>/dev/null || true)
	fi
	[ -n "$v" ] || die "cannot tell the installed qemu-system-riscv version"
	echo "$v"
}

patch_list() {
	ls "$PATCHES"/*.patch 2>/dev/null | LC_ALL=C sort || true
}

# cache_key VERSION: VERSION (file-name safe) and a hash of the patches,
# their order and the configure line.
cache_key() {
	local ver=$1 h
	h=$({
		printf '%s\n' "${CONFIGURE_ARGS[@]}" unpack_edk2_blobs=false
		patch_list | while read -r p; do
			printf '%s\n' "$(basename "$p")"
			cat "$p"
		done
	} | sha256sum | cut -c1-12)
	printf '%s-%s\n' "$(printf '%s' "$ver" | tr -c 'A-Za-z0-9.+_-' '_')" "$h"
}

binary_of() { echo "$BASE/$1/qemu-system-riscv64"; }

install_build_deps() {
	local missing=() p bpo="$(debian_codename)-backports"
	for p in "${BUILD_DEPS_BPO[@]}" "${BUILD_DEPS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	local args=()
	for p in "${missing[@]}"; do
		case " ${BUILD_DEPS_BPO[*]} " in
		*" $p "*) args+=("$p/$bpo") ;;
		*) args+=("$p") ;;
		esac
	done
	say "installing build-deps: ${args[*]}"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		"${args[@]}" >/dev/null || die "apt-get install of the build-deps failed"
}

# fetch_source VERSION SRCDIR: Debian's source package, unpacked into SRCDIR
# as a git tree whose tag `pristine` is the unpatched source.
fetch_source() {
	local ver=$1 src=$2 suite dl upver
	if [ -d "$src/.git" ] && "${GIT[@]}" -C "$src" rev-parse -q --verify pristine >/dev/null; then
		return 0
	fi
	suite="$(debian_codename)-backports"
	case $ver in *bpo*) ;; *) suite=$(debian_codename) ;; esac
	dl="$BASE/dl"; mkdir -p "$dl"
	papt_update "$suite" source
	say "fetching Debian's qemu $ver source ($suite, private deb-src)"
	# A mirror may lack the .dsc and the debian tarball (seen: 404 for both,
	# the orig tarball served); the orig tarball is then built as it is.
	(cd "$dl" && papt "$suite" source apt-get source --download-only "qemu=$ver" \
		>"$dl/apt-source.log" 2>&1) ||
		say "apt-get source did not fetch every file: $(grep -c '^E: Failed to fetch' "$dl/apt-source.log") missing ($dl/apt-source.log)"
	upver=${ver#*:}; upver=${upver%-*}
	local orig; orig=$(ls "$dl"/qemu_"$upver".orig.tar.* 2>/dev/null | head -1 || true)
	[ -n "$orig" ] || die "no qemu_$upver.orig tarball fetched"
	local dsc="$dl/qemu_${ver#*:}.dsc" kind
	rm -rf "$src" "$src.tmp"; mkdir -p "$(dirname "$src")"
	if [ -f "$dsc" ]; then
		say "unpacking $(basename "$dsc") (Debian's patches applied)"
		"${LOW[@]}" dpkg-source --no-check -x "$dsc" "$src.tmp" >/dev/null ||
			die "dpkg-source -x $(basename "$dsc") failed"
		kind="Debian source package $ver"
	else
		say "WARNING: the mirror has no $(basename "$dsc"): building the orig tarball without Debian's patches"
		mkdir -p "$src.tmp"
		"${LOW[@]}" tar -xf "$orig" -C "$src.tmp" --strip-components=1 --no-same-owner
		kind="orig tarball $(basename "$orig") (no Debian patches: the .dsc is missing on the mirror)"
	fi
	# The +ds tarball has no edk2 blobs: do not unpack them.
	grep -q '^    unpack_edk2_blobs = bzip2.found()' "$src.tmp/meson.build" ||
		die "meson.build no longer has the edk2 unpack line this script turns off"
	sed -i 's/^\(    unpack_edk2_blobs = \)bzip2.found()/\1false/' "$src.tmp/meson.build"
	"${GIT[@]}" -C "$src.tmp" init -q
	"${GIT[@]}" -C "$src.tmp" add -f -A	# -f: the tarball ships files QEMU's .gitignore names
	"${GIT[@]}" -C "$src.tmp" commit -q -m "qemu $ver: $kind, edk2 blob unpacking off"
	"${GIT[@]}" -C "$src.tmp" tag pristine
	mv "$src.tmp" "$src"
}

# apply_patches SRCDIR: back to `pristine`, then every patch in order. Only
# files that differ are rewritten, so a rebuild recompiles what changed.
apply_patches() {
	local src=$1 p n=0
	"${GIT[@]}" -C "$src" am --abort >/dev/null 2>&1 || true
	"${GIT[@]}" -C "$src" reset -q --hard pristine
	"${GIT[@]}" -C "$src" clean -q -fdx
	while read -r p; do
		if ! "${GIT[@]}" -C "$src" am -q "$p" >&2; then
			"${GIT[@]}" -C "$src" am --abort >/dev/null 2>&1 || true
			die "patch $(basename "$p") no longer applies to qemu $(basename "$src"): rebase it on the new source"
		fi
		say "applied $(basename "$p")"
		n=$((n + 1))
	done < <(patch_list)
	say "$n patches applied"
}

build() {
	local ver key out src bld t0
	ver=$(source_version)
	key=$(cache_key "$ver")
	out=$(binary_of "$key")
	if [ -x "$out" ] && "$out" --version >/dev/null 2>&1; then
		say "cached: $out"
		echo "$out"
		return 0
	fi
	[ -n "$(patch_list)" ] || die "no patches in $PATCHES"
	mkdir -p "$BASE"
	exec 9>"$BASE/lock"
	flock 9	# one build at a time (make and a test run may both ask)
	if [ -x "$out" ] && "$out" --version >/dev/null 2>&1; then
		say "built meanwhile: $out"
		echo "$out"
		return 0
	fi
	t0=$(date +%s)
	install_build_deps
	src="$BASE/src/$(printf '%s' "$ver" | tr -c 'A-Za-z0-9.+_-' '_')"
	bld="$BASE/build/$(basename "$src")"
	fetch_source "$ver" "$src"
	apply_patches "$src"
	if [ ! -f "$bld/build.ninja" ]; then
		say "configure (riscv64-softmmu only)"
		rm -rf "$bld"; mkdir -p "$bld"
		(cd "$bld" && "${LOW[@]}" "$src/configure" "${CONFIGURE_ARGS[@]}" >"$bld/configure.log" 2>&1) ||
			die "configure failed: $bld/configure.log"
	fi
	say "ninja -j$JOBS qemu-system-riscv64 (a fresh build takes minutes; progress every 100 steps)"
	if ! (cd "$bld" && "${LOW[@]}" ninja -j"$JOBS" qemu-system-riscv64 2>&1 |
		tee "$bld/ninja.log" | awk '/^\[[0-9]+\/[0-9]+\]/ { n++; if (n % 100 == 1) { print "[qemu-conformant]   " $1; fflush() } }' >&2); then
		die "build failed: $bld/ninja.log"
	fi
	grep -q '^FAILED' "$bld/ninja.log" && die "build failed: $bld/ninja.log"
	mkdir -p "$BASE/$key"
	cp "$bld/qemu-system-riscv64" "$out.tmp"
	mv "$out.tmp" "$out"
	{
		echo "source: qemu $ver ($("${GIT[@]}" -C "$src" log -1 --format=%s pristine))"
		echo "configure: ${CONFIGURE_ARGS[*]}"
		echo "patches:"
		patch_list | while read -r p; do echo "  $(basename "$p")"; done
	} >"$BASE/$key/BUILDINFO"
	"$out" --version | head -1 | sed 's/^/[qemu-conformant] built: /' >&2
	# binaries of earlier patch sets of this version: no longer wanted
	local old
	for old in "$BASE/${key%-*}"-*; do
		[ "$old" = "$BASE/$key" ] || [ ! -f "$old/BUILDINFO" ] || rm -rf "$old"
	done
	say "$out ($(($(date +%s) - t0)) s)"
	echo "$out"
}

case ${1:-build} in
build) build ;;
path)
	out=$(binary_of "$(cache_key "$(source_version)")")
	echo "$out"
	[ -x "$out" ] || { say "not built yet: run make qemu-conformant"; exit 1; }
	;;
key) cache_key "$(source_version)" ;;
*) die "unknown command '$1' (build|path|key)" ;;
esac
