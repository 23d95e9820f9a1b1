#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs or fetches everything Carapace needs, idempotently.
#   host   : QEMU 10 (bookworm-backports), cross compilers, dtc, cpio, pytest,
#            openssl (tools/carapace-tls init: migration credentials),
#            pip and venv (`pip install .` of the carapace package, and its test),
#            the Debian root file system's build and test (scripts/mkrootfs.sh):
#            debootstrap, qemu-utils (qemu-img), e2fsprogs (mke2fs -d, e2fsck),
#            openssh-client (ssh-keygen, ssh)
#   fetched: OpenSBI >= 1.6 (trixie .deb), libfdt source (linux-source-7.2),
#            guest kernel + busybox-static (sid riscv64 .debs),
#            U-Boot's S-mode build (trixie u-boot-qemu), a third-party guest
# Fetched .debs go through a private apt configuration under $CARAPACE_CACHE;
# the system's sources gain bookworm-backports and nothing else.
# Mirror: $CARAPACE_MIRROR, else the one the system's apt sources already use
# (see system_mirror below).
# Usage: scripts/deps.sh [host|firmware|libfdt|linux|bench|guests|all]...
set -euo pipefail

CACHE=${CARAPACE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/carapace}
MIRROR=${CARAPACE_MIRROR:-}
SYS_SOURCES=/etc/apt/sources.list.d/debian.sources
SYS_LIST=/etc/apt/sources.list
say() { printf '[deps] %s\n' "$*" >&2; }
die() { printf '[deps] error: %s\n' "$*" >&2; exit 1; }

# debian_codename: this system's release codename (bookworm if unknown).
debian_codename() {
	local c
	c=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null | tr -d "\"'" || true)
	echo "${c:-bookworm}"
}

# system_mirror DEB822_FILE LIST_FILE [CODENAME]: print the Debian archive URI
# the system's apt sources use, without a trailing slash; status 1 if none.
# Candidates, in order: every URI of the deb822 file's `Types: deb` stanzas
# (Enabled: no skipped), then every `deb` line of the one-line file (deb-src
# and [options] skipped). The first candidate whose suites include CODENAME
# wins; else the first with a suite that is not a security one (*-security,
# */updates), since the security archive does not carry the other suites.
# URIs without :// (cdrom:) are ignored. Missing files are fine.
system_mirror() {
	local sources=$1 list=$2 codename=${3:-$(debian_codename)}
	{
		[ ! -r "$sources" ] || awk '
		function flush(   n, i, u) {
			if (types ~ /(^|[ \t])deb([ \t]|$)/ && tolower(enabled) != "no") {
				n = split(uris, u)
				for (i = 1; i <= n; i++) print u[i] "\t" suites
			}
			types = uris = suites = enabled = field = ""
		}
		/^[ \t]*#/ { next }
		/^[ \t]*$/ { flush(); next }
		/^[ \t]/ {	# continuation of the previous field
			if (field == "types") types = types " " $0
			else if (field == "uris") uris = uris " " $0
			else if (field == "suites") suites = suites " " $0
			next
		}
		{
			i = index($0, ":"); if (!i) { field = ""; next }
			field = tolower(substr($0, 1, i - 1)); gsub(/[ \t]/, "", field)
			val = substr($0, i + 1)
			if (field == "types") types = val
			else if (field == "uris") uris = val
			else if (field == "suites") suites = val
			else if (field == "enabled") { enabled = val; gsub(/[ \t]/, "", enabled) }
		}
		END { flush() }' "$sources"
		[ ! -r "$list" ] || awk '
		{ sub(/#.*/, "") }
		$1 != "deb" { next }
		{
			line = $0; sub(/^[ \t]*deb[ \t]+/, "", line)
			if (substr(line, 1, 1) == "[") {
				i = index(line, "]"); if (!i) next
				line = substr(line, i + 1)
			}
			if (split(line, f) >= 2) print f[1] "\t" f[2]
		}' "$list"
	} | awk -F '\t' -v c="$codename" '
	function security(s) { return s ~ /-security$/ || s ~ /\/updates$/ }
	{
		uri = $1; sub(/\/+$/, "", uri)
		if (uri !~ /:\/\//) next
		n = split($2, s, " ")
		for (i = 1; i <= n; i++) {
			if (s[i] == c && best == "") best = uri
			if (!security(s[i]) && any == "") any = uri
		}
	}
	END { if (best != "") print best; else if (any != "") print any; else exit 1 }'
}

# need_mirror: set MIRROR (CARAPACE_MIRROR, else the system's) or fail.
need_mirror() {
	[ -z "$MIRROR" ] || return 0
	MIRROR=$(system_mirror "$SYS_SOURCES" "$SYS_LIST") ||
		die "cannot find a Debian mirror in $SYS_SOURCES (URIs:) or $SYS_LIST (deb lines); set CARAPACE_MIRROR to a Debian archive URL"
	say "mirror: $MIRROR (from the system's apt sources; CARAPACE_MIRROR overrides)"
}

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# have_sbin CMD: CMD is installed, also in /usr/sbin, which a user's PATH lacks.
have_sbin() { PATH=$PATH:/usr/sbin:/sbin command -v "$1" >/dev/null; }

host_ok() {
	command -v gcc >/dev/null && command -v make >/dev/null &&
	command -v qemu-system-riscv64 >/dev/null &&
	qemu-system-riscv64 --version | grep -q 'version 10\.' &&
	command -v riscv64-unknown-elf-gcc >/dev/null &&
	command -v riscv64-linux-gnu-gcc >/dev/null &&
	[ -f /usr/riscv64-linux-gnu/lib/libc.a ] &&
	command -v dtc >/dev/null && command -v cpio >/dev/null &&
	command -v openssl >/dev/null &&
	have_sbin debootstrap && command -v qemu-img >/dev/null && have_sbin mke2fs &&
	command -v ssh-keygen >/dev/null && command -v ssh >/dev/null &&
	/usr/bin/python3 -c 'import pytest, ssl, pip, ensurepip' 2>/dev/null
}

deps_host() {
	if host_ok; then say "host tools present (QEMU $(qemu-system-riscv64 --version | head -1 | awk '{print $4}'))"; return; fi
	local list=/etc/apt/sources.list.d/bookworm-backports.list
	if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		need_mirror
		say "adding bookworm-backports to $list (the only system source we add)"
		echo "deb $MIRROR bookworm-backports main" | $SUDO tee "$list" >/dev/null
	fi
	say "apt-get update"
	$SUDO apt-get update -q >/dev/null || die "apt-get update failed"
	say "installing QEMU 10 (bookworm-backports), cross compilers, dtc, pytest, openssl, pip, debootstrap, ssh"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		qemu-system-riscv/bookworm-backports qemu-system-common/bookworm-backports \
		qemu-system-data/bookworm-backports opensbi/bookworm-backports \
		qemu-utils/bookworm-backports debootstrap e2fsprogs openssh-client \
		gcc-riscv64-linux-gnu libc6-dev-riscv64-cross gcc-riscv64-unknown-elf \
		device-tree-compiler cpio \
		xz-utils gzip python3 python3-pytest python3-pip python3-venv ca-certificates openssl \
		gcc make libc6-dev \
		>/dev/null ||
		die "apt-get install failed"
	host_ok || die "host tools still missing after install"
	say "host tools installed"
}

# papt SUITE ARCH apt-get|apt-cache ARGS...: apt with a private configuration.
# ARCH "source" gives a deb-src line (apt-get source) and no binary packages.
papt() {
	local suite=$1 arch=$2 tool=$3; shift 3
	local d="$CACHE/apt/$suite-$arch"
	need_mirror
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/etc"
	if [ "$arch" = source ]; then
		echo "deb-src $MIRROR $suite main" >"$d/etc/sources.list"
		arch=$(dpkg --print-architecture)
	else
		echo "deb [arch=$arch] $MIRROR $suite main" >"$d/etc/sources.list"
	fi
	: >"$d/status"
	"$tool" -q -o Dir::Etc::sourcelist="$d/etc/sources.list" -o Dir::Etc::sourceparts=- \
		-o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" \
		-o Dir::State::status="$d/status" -o APT::Architecture="$arch" \
		-o APT::Architectures="$arch" -o Acquire::Check-Valid-Until=false \
		-o Acquire::Languages=none -o APT::Sandbox::User=root "$@"
}

papt_update() {
	local suite=$1 arch=$2 stamp="$CACHE/apt/$1-$2/updated"
	# Refresh lists at most daily: sid moves, and a stale list 404s.
	if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440)" ]; then
		need_mirror
		say "private apt: updating $suite ($arch) lists"
		papt "$suite" "$arch" apt-get update >/dev/null || die "private apt update for $suite failed"
		touch "$stamp"
	fi
}

# fetch_deb SUITE ARCH PKG OUTDIR: download PKG's .deb and unpack it to OUTDIR.
fetch_deb() {
	local suite=$1 arch=$2 pkg=$3 out=$4
	[ "$(cat "$out/.done" 2>/dev/null)" = "$pkg" ] && return 0
	papt_update "$suite" "$arch"
	local dl="$CACHE/debs"; mkdir -p "$dl"
	say "downloading $pkg ($suite, $arch)"
	(cd "$dl" && papt "$suite" "$arch" apt-get download "$pkg" >/dev/null) ||
		die "cannot download $pkg from $suite"
	local deb; deb=$(ls -t "$dl/${pkg}"_*.deb | head -1)
	rm -rf "$out"; mkdir -p "$out"
	dpkg-deb -x "$deb" "$out"
	echo "$pkg" >"$out/.done"
}

deps_bench() {
	if command -v gnuplot >/dev/null; then return; fi
	say "installing gnuplot-nox (benchmark chart)"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		gnuplot-nox >/dev/null || die "cannot install gnuplot-nox"
}

deps_firmware() {
	local fw="$CACHE/opensbi/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin"
	fetch_deb trixie amd64 opensbi "$CACHE/opensbi"
	[ -f "$fw" ] || fw=$(find "$CACHE/opensbi" -path '*generic/fw_dynamic.bin' | head -1)
	[ -f "$fw" ] || die "fw_dynamic.bin not found in trixie's opensbi package"
	ln -sf "$fw" "$CACHE/fw_dynamic.bin"
	say "OpenSBI firmware: $CACHE/fw_dynamic.bin"
}

deps_libfdt() {
	local dst="$CACHE/libfdt"
	if [ -f "$dst/.done" ]; then say "libfdt source present"; return; fi
	fetch_deb sid riscv64 linux-source-7.2 "$CACHE/linux-source"
	local tarball; tarball=$(ls "$CACHE"/linux-source/usr/src/linux-source-7.2*.tar.* 2>/dev/null | head -1 || true)
	[ -n "$tarball" ] || die "linux-source-7.2 tarball missing"
	say "extracting scripts/dtc/libfdt from $(basename "$tarball")"
	rm -rf "$dst"; mkdir -p "$dst"
	tar -xf "$tarball" -C "$dst" --strip-components=4 --wildcards '*/scripts/dtc/libfdt/*'
	[ -f "$dst/fdt.c" ] || die "libfdt not found in $tarball"
	touch "$dst/.done"
}

deps_linux() {
	papt_update sid riscv64
	if [ ! -f "$CACHE/linux/.done" ]; then
		need_mirror	# here, not in the apt-cache subshells below
		# Resolve the real kernel package behind the metapackage.
		local img bin
		img=$(papt sid riscv64 apt-cache depends linux-image-riscv64 |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}')
		[ -n "$img" ] || die "cannot resolve linux-image-riscv64"
		bin=$(papt sid riscv64 apt-cache depends "$img" |
			awk '$1 == "Depends:" && $2 ~ /^linux-binary-/ {print $2; exit}')
		[ -n "$bin" ] || die "cannot resolve the linux-binary package of $img"
		say "guest kernel: $img -> $bin"
		fetch_deb sid riscv64 "$bin" "$CACHE/linux-deb"
		local v; v=$(ls "$CACHE"/linux-deb/usr/lib/modules/*/vmlinuz 2>/dev/null | head -1 || true)
		[ -n "$v" ] || die "no usr/lib/modules/*/vmlinuz in $bin"
		mkdir -p "$CACHE/linux"; cp "$v" "$CACHE/linux/Image"; echo "$bin" >"$CACHE/linux/package"
		touch "$CACHE/linux/.done"
	fi
	fetch_deb sid riscv64 busybox-static "$CACHE/busybox"
	say "guest kernel: $CACHE/linux/Image ($(cat "$CACHE/linux/package")), busybox: $CACHE/busybox/usr/bin/busybox"
}

# Unmodified third-party S-mode guests (issue 13): U-Boot's S-mode build for
# QEMU virt, from Debian's u-boot-qemu (Architecture: all), and trixie's Linux
# 6.12 kernel (another series, without user CFI).
deps_guests() {
	local ub="$CACHE/u-boot/usr/lib/u-boot/qemu-riscv64_smode/u-boot.bin" img k
	fetch_deb trixie amd64 u-boot-qemu "$CACHE/u-boot"
	[ -f "$ub" ] || die "qemu-riscv64_smode/u-boot.bin not found in trixie's u-boot-qemu"
	ln -sf "$ub" "$CACHE/u-boot-smode.bin"
	say "third-party guest: U-Boot (S-mode) $CACHE/u-boot-smode.bin"
	papt_update trixie riscv64
	if [ ! -f "$CACHE/linux-trixie/.done" ]; then
		need_mirror
		img=$(papt trixie riscv64 apt-cache depends linux-image-riscv64 |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}')
		[ -n "$img" ] || die "cannot resolve trixie's linux-image-riscv64"
		fetch_deb trixie riscv64 "$img" "$CACHE/linux-trixie"
	fi
	k=$(ls "$CACHE"/linux-trixie/boot/vmlinux-* 2>/dev/null | head -1 || true)
	[ -n "$k" ] || die "no boot/vmlinux-* in trixie's kernel package"
	ln -sf "$k" "$CACHE/linux-trixie.Image"
	say "third-party guest: trixie's Linux $CACHE/linux-trixie.Image"
}

# Sourced (tests): define the functions only.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

[ $# -gt 0 ] || set -- all
for what in "$@"; do
	case $what in
	host) deps_host ;;
	firmware) deps_firmware ;;
	libfdt) deps_libfdt ;;
	linux) deps_linux ;;
	bench) deps_bench ;;
	guests) deps_guests ;;
	all) deps_host; deps_firmware; deps_libfdt; deps_linux; deps_guests ;;
	*) die "unknown target '$what' (host|firmware|libfdt|linux|bench|guests|all)" ;;
	esac
done
