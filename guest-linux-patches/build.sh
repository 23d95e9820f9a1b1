#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds Carapace's guest kernel: Debian's linux-source-7.2 (fetched through
# the private apt configuration of scripts/deps.sh), the patch series of this
# directory, guest.config merged onto tinyconfig, compiled in a debootstrap'ed
# sid root under the cache (sid's gcc-riscv64-linux-gnu: bookworm's gcc 12
# cannot build RISCV_USER_CFI). Nothing is added to the system's apt sources.
#
#   build.sh check       the series applies (in order) and is checkpatch --strict clean
#   build.sh root        create the sid build root if missing
#   build.sh kernel      check, root, then build the Image unless it is cached
#   build.sh bisect      build the Image after each patch in turn (each patch
#                        builds on its own); caches nothing
#   build.sh selftests   the upstream riscv CFI kselftests, linked against the
#                        patched tree's nolibc with tests/guest_kernel/kselftest/
#   build.sh image-path | selftests-path   where those are (or would be)
# GUEST_PATCHES_DIR=DIR takes the series, patches and guest.config from DIR.
#
# Cache: $CARAPACE_CACHE/guest-kernel/<key>/{Image,config,System.map,build.log,
# build-seconds,compiler,source}, key = sha256 of the source package version,
# the series file, the patches and guest.config; guest-kernel/Image links to
# the last one built or found (make run boots it). The kselftests go to
# guest-kernel/kselftest-<key>/cfitests, keyed by the same plus the shim and
# compat sources, with a link guest-kernel/cfitests.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
# The series, its patches and guest.config (another directory: tests).
HERE=${GUEST_PATCHES_DIR:-$TOP/guest-linux-patches}
# shellcheck source=../scripts/deps.sh
. "$TOP/scripts/deps.sh"	# CACHE, SUDO, papt, fetch_deb (functions only)
say() { printf '[guest-kernel] %s\n' "$*" >&2; }
die() { printf '[guest-kernel] error: %s\n' "$*" >&2; exit 1; }

GK=$CACHE/guest-kernel
SRCPKG=linux-source-7.2
SRCDEB=$CACHE/linux-source
ROOTFS=$GK/sid-root
JOBS=${GUEST_KERNEL_JOBS:-2}
NICE=(nice -n 19 ionice -c3)
# The build root: a host compiler and make for the kernel's host tools, sid's
# riscv64 cross compiler (CFI-capable) and its libc for the kselftests.
ROOT_PKGS=gcc,libc6-dev,make,rsync,bc,bison,flex,perl,python3-minimal,libelf-dev,libssl-dev,cpio,xz-utils,kmod,gcc-riscv64-linux-gnu,libc6-dev-riscv64-cross

# patches: the series, in order (comments and blank lines skipped).
patches() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HERE/series"; }

# source_fetch: the linux-source .deb unpacked under $SRCDEB (cached).
source_fetch() {
	fetch_deb sid riscv64 "$SRCPKG" "$SRCDEB"
	TARBALL=$(ls "$SRCDEB"/usr/src/$SRCPKG.tar.* 2>/dev/null | sed -n 1p || true)
	[ -n "$TARBALL" ] || die "$SRCPKG tarball missing under $SRCDEB/usr/src"
	SRCVER=$(zcat "$SRCDEB/usr/share/doc/$SRCPKG/changelog.Debian.gz" |
		sed -n '1s/^linux (\([^)]*\)).*/\1/p')
	[ -n "$SRCVER" ] || die "cannot read the version of $SRCPKG"
}

# pristine: the unpatched tree, extracted once per source version.
pristine() {
	source_fetch
	PRISTINE=$GK/src/$SRCPKG-$SRCVER
	[ -f "$PRISTINE/.done" ] && return 0
	say "extracting $(basename "$TARBALL") ($SRCVER)"
	rm -rf "$PRISTINE"; mkdir -p "$PRISTINE"
	"${NICE[@]}" tar -xf "$TARBALL" -C "$PRISTINE" --strip-components=1
	[ -f "$PRISTINE/Makefile" ] && [ -f "$PRISTINE/scripts/checkpatch.pl" ] ||
		die "$TARBALL did not give a kernel tree"
	touch "$PRISTINE/.done"
}

KSELFTEST_SRC=$TOP/tests/guest_kernel/kselftest

cache_key() {
	source_fetch
	KEY=$( { echo "$SRCPKG $SRCVER"; cat "$HERE/series"
		 patches | while read -r p; do cat "$HERE/$p"; done
		 cat "$HERE/guest.config"; } | sha256sum | cut -c1-16)
	OUT=$GK/$KEY
	KSKEY=$( { echo "$KEY"; find "$KSELFTEST_SRC" -type f | LC_ALL=C sort |
		   xargs cat; } | sha256sum | cut -c1-16)
	KSOUT=$GK/kselftest-$KSKEY
}

# files_of PATCH: the files a patch touches.
files_of() { sed -n 's|^diff --git a/\([^ ]*\) b/.*|\1|p' "$1"; }

# apply_series DIR [STEP]: apply the series to the tree DIR (each patch once,
# in order); STEP, if given, is called with the patch name after each one.
apply_series() {
	local dir=$1 step=${2:-} p
	for p in $(patches); do
		[ -f "$HERE/$p" ] || die "series names $p, which is not in $HERE"
		( cd "$dir" && patch -p1 --forward --batch --no-backup-if-mismatch \
			-r - --quiet <"$HERE/$p" >/dev/null ) ||
			die "$p does not apply to $SRCPKG $SRCVER: the series needs a rebase"
		say "applied $p"
		[ -z "$step" ] || "$step" "$p"
	done
}

# host_tools PKG...: install the system's own packages of that name when
# they are not installed (patch and perl for the check). The package, not the
# command: a minimal Debian has /usr/bin/perl from perl-base, without the
# modules checkpatch.pl uses (Term::ANSIColor is in perl-modules).
host_tools() {
	local p missing=
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing="$missing $p"
	done
	[ -n "$missing" ] || return 0
	say "installing$missing (from the system's own release)"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		$missing >/dev/null || die "cannot install$missing"
}

do_check() {
	host_tools patch perl
	pristine
	local p listed
	# series and directory agree
	for p in "$HERE"/0[0-9][0-9][0-9]-*.patch; do
		p=$(basename "$p")
		[ "$p" = 0000-cover-letter.patch ] && continue
		patches | grep -xF "$p" >/dev/null || die "$p is not listed in series"
	done
	[ -f "$HERE/0000-cover-letter.patch" ] || die "no cover letter (0000-cover-letter.patch)"
	# applies in order, to a copy of just the files the series touches
	CHECK_TMP=$(mktemp -d); trap 'rm -rf "$CHECK_TMP"' EXIT
	local tmp=$CHECK_TMP
	for p in $(patches); do
		[ -f "$HERE/$p" ] || die "series names $p, which is not in $HERE"
		files_of "$HERE/$p"
	done | sort -u | while read -r f; do
		mkdir -p "$tmp/$(dirname "$f")"
		[ ! -f "$PRISTINE/$f" ] || cp "$PRISTINE/$f" "$tmp/$f"
	done
	apply_series "$tmp"
	# kernel coding style
	for p in $(patches); do
		( cd "$PRISTINE" && perl scripts/checkpatch.pl --strict --quiet --no-summary \
			"$HERE/$p" ) || die "checkpatch --strict complains about $p"
	done
	listed=$(patches | wc -l)
	say "check: $listed patches apply to $SRCPKG $SRCVER and are checkpatch --strict clean"
}

in_root() {
	$SUDO "${NICE[@]}" chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM=dumb "$@"
}

do_root() {
	if [ "$(cat "$ROOTFS/.done" 2>/dev/null)" = "$ROOT_PKGS" ]; then return 0; fi
	command -v debootstrap >/dev/null || {
		say "installing debootstrap (from the system's own release)"
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
			debootstrap >/dev/null || die "cannot install debootstrap"
	}
	need_mirror
	local t0=$SECONDS
	say "creating the sid build root in $ROOTFS (debootstrap, ~1-2 min)"
	$SUDO rm -rf "$ROOTFS.tmp"
	$SUDO "${NICE[@]}" debootstrap --variant=minbase --arch=amd64 --include="$ROOT_PKGS" \
		sid "$ROOTFS.tmp" "$MIRROR" >"$GK/debootstrap.log" 2>&1 ||
		die "debootstrap failed (see $GK/debootstrap.log)"
	# apt inside the root, if ever used: sid's Release may be past Valid-Until
	echo 'Acquire::Check-Valid-Until "false";' |
		$SUDO tee "$ROOTFS.tmp/etc/apt/apt.conf.d/99carapace" >/dev/null
	$SUDO rm -rf "$ROOTFS"; $SUDO mv "$ROOTFS.tmp" "$ROOTFS"
	echo "$ROOT_PKGS" | $SUDO tee "$ROOTFS/.done" >/dev/null
	say "sid root ready in $((SECONDS - t0)) s: $(in_root riscv64-linux-gnu-gcc --version | sed -n 1p)"
}

KMAKE="make ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu- -j$JOBS"

# make_image W WHAT: build the Image of the tree in /work/W (in the root).
make_image() {
	say "building Image ($2)"
	in_root sh -c "cd /work/$1/linux && $KMAKE O=/work/$1/obj Image" \
		>>"$LOG" 2>&1 || die "the Image does not build with $2 (see $LOG)"
}

# configure W: tinyconfig + guest.config in /work/W/obj, every line kept.
configure() {
	local w=/work/$1 line bad=
	cp "$HERE/guest.config" "$ROOTFS$w/guest.config"
	in_root sh -c "cd $w/linux && $KMAKE O=$w/obj tinyconfig &&
		scripts/kconfig/merge_config.sh -m -O $w/obj $w/obj/.config $w/guest.config &&
		$KMAKE O=$w/obj olddefconfig" >>"$LOG" 2>&1 ||
		die "configuring failed (see $LOG)"
	# a dependency missing would silently drop, say, RISCV_USER_CFI
	while read -r line; do
		case $line in CONFIG_*=*) ;; *) continue ;; esac
		grep -qxF "$line" "$ROOTFS$w/obj/.config" || bad="$bad $line"
	done <"$HERE/guest.config"
	[ -z "$bad" ] || die "not in the final .config:$bad"
}

# worktree W: a copy of the pristine tree at $ROOTFS/work/W/linux.
worktree() {
	local w=$ROOTFS/work/$1 f p
	$SUDO rm -rf "$w"; mkdir -p "$w"
	say "copying $SRCPKG $SRCVER into the root"
	cp -al "$PRISTINE" "$w/linux"	# hard links: cheap; patched files are unlinked first
	for p in $(patches); do files_of "$HERE/$p"; done | sort -u | while read -r f; do
		[ ! -e "$w/linux/$f" ] || cp --remove-destination "$PRISTINE/$f" "$w/linux/$f"
	done
}

do_kernel() {
	do_check
	cache_key
	if [ -f "$OUT/Image" ]; then
		ln -sfn "$KEY/Image" "$GK/Image"
		say "cached: $OUT/Image (key $KEY)"
		return 0
	fi
	do_root
	local t0=$SECONDS w=$ROOTFS/work/$KEY
	rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"; LOG=$OUT.tmp/build.log
	worktree "$KEY"
	apply_series "$w/linux"
	configure "$KEY"
	make_image "$KEY" "the whole series"
	cp "$w/obj/arch/riscv/boot/Image" "$w/obj/System.map" "$OUT.tmp/"
	cp "$w/obj/.config" "$OUT.tmp/config"
	echo $((SECONDS - t0)) >"$OUT.tmp/build-seconds"
	in_root riscv64-linux-gnu-gcc --version | sed -n 1p >"$OUT.tmp/compiler"
	echo "$SRCPKG $SRCVER" >"$OUT.tmp/source"
	rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
	$SUDO rm -rf "$w"
	ln -sfn "$KEY/Image" "$GK/Image"	# what `make run` boots
	say "built $OUT/Image ($(stat -c %s "$OUT/Image") bytes) in $(cat "$OUT/build-seconds") s with $JOBS jobs"
}

bisect_step() { make_image bisect "the series up to $1"; }

do_bisect() {
	do_check
	do_root
	local t0=$SECONDS
	mkdir -p "$GK"; LOG=$GK/bisect.log; : >"$LOG"
	worktree bisect
	configure bisect
	apply_series "$ROOTFS/work/bisect/linux" bisect_step
	$SUDO rm -rf "$ROOTFS/work/bisect"
	say "bisect: the Image builds after each of the $(patches | wc -l) patches ($((SECONDS - t0)) s)"
}

# The upstream tests, unchanged, against the patched tree's nolibc and uapi
# headers: our compat header (-include) supplies what nolibc lacks, our shim
# (built without CFI instrumentation) turns shadow stack and landing pads on
# before main().
do_selftests() {
	do_check
	cache_key
	if [ -f "$KSOUT/cfitests" ]; then
		ln -sfn "kselftest-$KSKEY/cfitests" "$GK/cfitests"
		say "cached: $KSOUT/cfitests"
		return 0
	fi
	do_root
	local w=$ROOTFS/work/ks-$KSKEY r=/work/ks-$KSKEY
	rm -rf "$KSOUT.tmp"; mkdir -p "$KSOUT.tmp"; LOG=$KSOUT.tmp/build.log
	worktree "ks-$KSKEY"
	apply_series "$w/linux"
	cp -r "$KSELFTEST_SRC" "$w/carapace"
	local cc="riscv64-linux-gnu-gcc -static -nostdlib -nostdinc -isystem $r/sysroot/include"
	cc="$cc -I$r/carapace/include -O2 -Wall"
	in_root sh -c "cd $r/linux &&
		make -s ARCH=riscv O=$r/obj headers_install INSTALL_HDR_PATH=$r/sysroot &&
		make -s -C tools/include/nolibc ARCH=riscv OUTPUT=$r/ headers &&
		$cc -march=rv64gc -c -o $r/cfi_shim.o $r/carapace/cfi_shim.c &&
		cd tools/testing/selftests/riscv/cfi &&
		$cc -include carapace_nolibc_compat.h -march=rv64gc_zicfilp_zicfiss \
			-fcf-protection=full -o $r/cfitests cfitests.c shadowstack.c \
			$r/cfi_shim.o -lgcc" >>"$LOG" 2>&1 ||
		die "building the CFI kselftests failed (see $LOG)"
	cp "$w/cfitests" "$KSOUT.tmp/"
	rm -rf "$KSOUT"; mv "$KSOUT.tmp" "$KSOUT"
	$SUDO rm -rf "$w"
	ln -sfn "kselftest-$KSKEY/cfitests" "$GK/cfitests"
	say "built $KSOUT/cfitests"
}

[ $# -gt 0 ] || set -- kernel
# debootstrap and chroot need root: the building commands run under sudo
# when not started as root (the cache then belongs to root).
case $1 in
root|kernel|bisect|selftests)
	[ "$(id -u)" -eq 0 ] ||
		exec sudo CARAPACE_CACHE="$CACHE" CARAPACE_MIRROR="$MIRROR" \
			GUEST_KERNEL_JOBS="$JOBS" GUEST_PATCHES_DIR="$HERE" "$0" "$@" ;;
esac
case $1 in
check) do_check ;;
root) do_root ;;
kernel) do_kernel ;;
bisect) do_bisect ;;
selftests) do_selftests ;;
image-path) cache_key; echo "$OUT/Image" ;;
selftests-path) cache_key; echo "$KSOUT/cfitests" ;;
*) die "unknown command '$1' (check|root|kernel|bisect|selftests|image-path|selftests-path)" ;;
esac
