#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mkinitramfs.sh: packs the Linux-guest test initramfs (busybox, /init,
# /bin/cfitest, and any other programs given) into a reproducible newc cpio.gz.
#   scripts/mkinitramfs.sh OUT.cpio.gz
# Inputs (environment, with defaults):
#   BUSYBOX  static riscv64 busybox ($CACHE/busybox/usr/bin/busybox)
#   CFITEST  the test program       (build/linux/cfitest)
#   INIT     the init script        (tests/linux/init)
#   PROGRAMS more programs for /bin, space-separated (default none;
#            tests/linux gives build/linux/records and numstream)
set -euo pipefail

die() { echo "mkinitramfs: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 OUT.cpio.gz"
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CARAPACE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/carapace}
busybox=${BUSYBOX:-$cache/busybox/usr/bin/busybox}
cfitest=${CFITEST:-$root/build/linux/cfitest}
init=${INIT:-$root/tests/linux/init}
programs=${PROGRAMS:-}

[ -f "$busybox" ] || die "busybox not found at $busybox (run: scripts/deps.sh all)"
[ -f "$cfitest" ] || die "test program not found at $cfitest (run: make linux-cfitest)"
[ -f "$init" ] || die "init script not found at $init"
for p in $programs; do
	[ -f "$p" ] || die "program not found at $p"
	case "$(basename "$p")" in
	busybox|cfitest) die "$p: /bin/$(basename "$p") is the initramfs's own" ;;
	esac
done
for tool in cpio gzip find sort touch; do
	command -v "$tool" >/dev/null || die "host tool '$tool' is missing"
done

# Applets the init script uses before it runs "busybox --install"; linking
# them at build time keeps the test paths free of that step.
applets="sh cat echo mount poweroff setsid cttyhack sleep sync"

stage=$(mktemp -d "${TMPDIR:-/tmp}/initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT

mkdir -p "$stage"/{bin,dev,proc,sys,tmp}
install -m 0755 "$busybox" "$stage/bin/busybox"
install -m 0755 "$cfitest" "$stage/bin/cfitest"
install -m 0755 "$init" "$stage/init"
for p in $programs; do
	install -m 0755 "$p" "$stage/bin/$(basename "$p")"
done
for a in $applets; do
	ln -s busybox "$stage/bin/$a"
done
chmod 0755 "$stage"/{bin,dev,proc,sys}
chmod 1777 "$stage/tmp"

# Same inputs, same bytes: fixed mtimes, sorted names, root ownership, and
# no name/timestamp in the gzip header.
find "$stage" -exec touch -h -d @0 {} +
mkdir -p "$(dirname "$out")"
tmp_out="$out.tmp.$$"
# --reproducible (GNU cpio >= 2.12) also drops host inode/device numbers.
repro=
cpio --help 2>/dev/null | grep -q -- --reproducible && repro=--reproducible
(cd "$stage" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0 $repro) | gzip -9 -n > "$tmp_out"
mv "$tmp_out" "$out"
echo "mkinitramfs: wrote $out ($(stat -c %s "$out") bytes)"
