#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mkrootfs.sh: the Debian riscv64 root file system the Linux guests boot from
# (docs/user-guide.md, "The Debian root file system"), one base image shared
# by every VM through a qcow2 overlay each.
#
#   mkrootfs.sh build          build CACHE/rootfs/<key>/base.qcow2 unless cached
#   mkrootfs.sh overlay OUT    a qcow2 overlay over the base at OUT (kept while
#                              it is over the current base; FRESH=1 renews it)
#   mkrootfs.sh path | key-path | ssh-key
#                              the base image, the key's directory, the private
#                              ssh key of root@guest (no build)
#
# How: debootstrap --foreign unpacks trixie's riscv64 packages on the host (no
# binfmt, no qemu-user); our boot files and the CFI test programs are added;
# mke2fs -d makes an ext4 image of the tree; a bare QEMU boots it once with our
# guest kernel, init=/carapace/firstboot, which runs debootstrap's second stage
# (the package scripts) and powers off; the result, fsck-clean, is converted to
# qcow2 and frozen (read-only). debootstrap downloads from the mirror of
# scripts/deps.sh (CARAPACE_MIRROR or the system's); the system's apt sources
# are not touched.
#
# Cache: CACHE/rootfs/<key>/{base.qcow2,build.log,firstboot.log,build-seconds,
# packages}, key = sha256 of the suite and its snapshot (the Date of the
# InRelease in the private apt lists of scripts/deps.sh, refreshed daily), the
# package list, the image size, debootstrap's version, this script, the files
# of scripts/rootfs/, the test programs and the ssh public key. The kernel
# only runs the first boot: not in the key. CACHE/rootfs/base.qcow2 links to
# the last base built or found. The ssh key pair: CACHE/rootfs/ssh/id_ed25519
# (made once). The downloaded .debs: CACHE/rootfs/debs.
#
# Inputs (environment, with defaults):
#   KERNEL      our guest kernel  (guest-linux-patches/build.sh image-path)
#   CFITEST     build/linux/cfitest
#   CFISTATUS   build/guest-kernel/cfistatus
#   KSELFTEST   build/guest-kernel/cfi_kselftest
#   ROOTFS_SIZE the ext4 file system's size (2G)
#   QEMU_IMG    qemu-img;  CARAPACE_QEMU: qemu-system-riscv64
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=deps.sh
. "$TOP/scripts/deps.sh"	# CACHE, MIRROR, need_mirror, papt_update (functions only)
say() { printf '[rootfs] %s\n' "$*" >&2; }
die() { printf '[rootfs] error: %s\n' "$*" >&2; exit 1; }

SUITE=trixie
ARCH=riscv64
# minbase (Priority: required) plus: an init (sysvinit: light, boots in
# seconds under TCG), sshd, ip(8) for carapace-net, fsck for the guest's own use,
# and fake-hwclock: a Carapace guest has no RTC, so its clock began at the
# epoch, and a file deleted in the first seconds of a boot got dtime 4, which
# e2fsck takes for a link of a corrupted orphan list (test_disk_guests.py's
# fsck failed so); the clock now starts at the last one saved.
PACKAGES=sysvinit-core,openssh-server,iproute2,netbase,procps,e2fsprogs,fake-hwclock
SIZE=${ROOTFS_SIZE:-2G}
RD=$CACHE/rootfs
FILES=$TOP/scripts/rootfs
SSH_KEY=$RD/ssh/id_ed25519
KERNEL=${KERNEL:-}
CFITEST=${CFITEST:-$TOP/build/linux/cfitest}
CFISTATUS=${CFISTATUS:-$TOP/build/guest-kernel/cfistatus}
KSELFTEST=${KSELFTEST:-$TOP/build/guest-kernel/cfi_kselftest}
QEMU=${CARAPACE_QEMU:-qemu-system-riscv64}
QEMU_IMG=${QEMU_IMG:-qemu-img}
FIRSTBOOT_TIMEOUT=${FIRSTBOOT_TIMEOUT:-3600}	# seconds; ~10 min on 2 cores
NICE=(nice -n 19)

# programs: the CFI test programs put in /usr/local/bin (name source).
programs() {
	printf '%s %s\n' cfitest "$CFITEST" cfistatus "$CFISTATUS" cfi_kselftest "$KSELFTEST"
}

need_inputs() {
	local name src
	while read -r name src; do
		[ -f "$src" ] || die "$name not found at $src (make rootfs builds it)"
	done < <(programs)
	[ -f "$FILES/firstboot" ] || die "$FILES/firstboot missing"
}

# ssh_key: the key pair root@guest accepts, made once.
ssh_key() {
	[ -s "$SSH_KEY" ] && [ -s "$SSH_KEY.pub" ] && return 0
	command -v ssh-keygen >/dev/null || die "ssh-keygen missing (package openssh-client; scripts/deps.sh host)"
	mkdir -p "$(dirname "$SSH_KEY")"; chmod 700 "$(dirname "$SSH_KEY")"
	rm -f "$SSH_KEY" "$SSH_KEY.pub"
	ssh-keygen -q -t ed25519 -N '' -C "carapace-rootfs" -f "$SSH_KEY" || die "ssh-keygen failed"
	say "made the guests' ssh key $SSH_KEY"
}

# snapshot: which state of the suite we build from (the Date of its InRelease).
snapshot() {
	papt_update "$SUITE" "$ARCH"
	local rel
	rel=$(ls "$CACHE/apt/$SUITE-$ARCH/lists/"*_dists_"${SUITE}"_*Release 2>/dev/null | sed -n 1p || true)
	[ -n "$rel" ] || die "no Release file in $CACHE/apt/$SUITE-$ARCH/lists"
	sed -n 's/^Date: //p' "$rel" | sed -n 1p
}

cache_key() {
	need_inputs
	ssh_key
	local snap name src
	snap=$(snapshot)
	[ -n "$snap" ] || die "cannot read the Date of $SUITE's Release"
	KEY=$( { echo "$SUITE $ARCH $snap"; echo "$PACKAGES $SIZE"
		 debootstrap --version 2>/dev/null || echo "no debootstrap"
		 cat "$TOP/scripts/mkrootfs.sh"
		 find "$FILES" -type f | LC_ALL=C sort | while read -r f; do
			 echo "${f#"$FILES"/}"; cat "$f"; done
		 while read -r name src; do echo "$name"; sha256sum <"$src"; done < <(programs)
		 cat "$SSH_KEY.pub"; } | sha256sum | cut -c1-16)
	OUT=$RD/$KEY
}

# host_tools: what the build runs on the host, or how to get it.
host_tools() {
	local c missing=
	for c in debootstrap mke2fs e2fsck ssh-keygen "$QEMU_IMG" "$QEMU"; do
		command -v "$c" >/dev/null || missing="$missing $c"
	done
	[ -z "$missing" ] || die "missing on the host:$missing (scripts/deps.sh host installs them)"
	[ -f "$FIRMWARE" ] || die "OpenSBI firmware not found at $FIRMWARE (scripts/deps.sh firmware)"
}

# stage DIR: the first stage (packages unpacked) plus our files, at DIR.
stage() {
	local s=$1 name src
	need_mirror
	mkdir -p "$RD/debs"
	say "debootstrap --foreign $SUITE $ARCH (+ $PACKAGES); log: $OUT.tmp/build.log"
	"${NICE[@]}" debootstrap --foreign --arch="$ARCH" --variant=minbase \
		--include="$PACKAGES" --cache-dir="$RD/debs" "$SUITE" "$s" "$MIRROR" \
		>>"$LOG" 2>&1 || die "debootstrap --foreign failed (see $LOG)"
	# The second stage parses the suite's whole Packages index (about 54 MB)
	# with perl for each pre-dependency: under TCG, most of the first boot.
	# It needs the stanzas of the packages it installs, nothing else.
	local want f
	want=$(cat "$s/debootstrap/required" "$s/debootstrap/base")
	for f in "$s"/var/lib/apt/lists/*_Packages; do
		awk -v want="$want" 'BEGIN { RS = ""; ORS = "\n\n"; n = split(want, w)
			for (i = 1; i <= n; i++) keep[w[i]] = 1 }
		match($0, /^Package: [^\n]+/) && (substr($0, 10, RLENGTH - 9) in keep)' \
			"$f" >"$f.part" && mv "$f.part" "$f" || die "cannot trim $f"
	done
	# debootstrap links proc to the host's /proc for the second stage in a
	# chroot; the guest mounts its own there
	if [ -L "$s/proc" ]; then rm -f "$s/proc"; install -d -m 0555 "$s/proc"; fi
	install -d -m 0755 "$s/carapace" "$s/etc/init.d" "$s/etc/ssh/sshd_config.d" "$s/usr/local/bin"
	install -m 0755 "$FILES/firstboot" "$s/carapace/firstboot"
	install -m 0755 "$FILES/carapace-net" "$FILES/carapace-hostkeys" "$s/etc/init.d/"
	install -m 0644 "$FILES/inittab" "$s/etc/inittab"
	install -m 0644 "$FILES/fstab" "$s/etc/fstab"
	install -m 0644 "$FILES/sshd.conf" "$s/etc/ssh/sshd_config.d/carapace.conf"
	# no service starts while the package scripts run (firstboot removes it)
	printf '#!/bin/sh\nexit 101\n' >"$s/usr/sbin/policy-rc.d"; chmod 0755 "$s/usr/sbin/policy-rc.d"
	echo carapace >"$s/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\tcarapace\n' >"$s/etc/hosts"
	install -d -m 0700 "$s/root/.ssh"
	install -m 0600 "$SSH_KEY.pub" "$s/root/.ssh/authorized_keys"
	while read -r name src; do
		install -m 0755 "$src" "$s/usr/local/bin/$name"
	done < <(programs)
}

# first_boot RAW: boot RAW once in a bare QEMU to run firstboot.
first_boot() {
	local raw=$1 log=$OUT.tmp/firstboot.log t0=$SECONDS
	[ -n "$KERNEL" ] && [ -f "$KERNEL" ] || die "guest kernel not found at '$KERNEL' (KERNEL=; make guest-kernel)"
	say "first boot in QEMU: the package scripts run in the guest (~10 min under TCG); log: $log"
	"${NICE[@]}" timeout "$FIRSTBOOT_TIMEOUT" "$QEMU" -machine virt -cpu rv64 -smp 2 -m 1G \
		-display none -monitor none -serial "file:$log" -no-reboot \
		-bios "$FIRMWARE" -kernel "$KERNEL" \
		-append "root=/dev/vda rw console=ttyS0 init=/carapace/firstboot panic=-1" \
		-drive "file=$raw,format=raw,if=none,id=root" -device virtio-blk-device,drive=root \
		</dev/null >>"$LOG" 2>&1 || die "QEMU failed or took over $FIRSTBOOT_TIMEOUT s (see $log)"
	grep -q '^carapace-firstboot: OK' "$log" ||
		die "the first boot did not finish: $(grep -a 'carapace-firstboot:' "$log" | tail -1) (see $log)"
	say "first boot done in $((SECONDS - t0)) s: $(grep -a 'packages configured' "$log" | tr -d '\r')"
}

do_build() {
	host_tools
	cache_key
	if [ -f "$OUT/base.qcow2" ]; then
		ln -sfn "$KEY/base.qcow2" "$RD/base.qcow2"
		say "cached: $OUT/base.qcow2 (key $KEY)"
		return 0
	fi
	local t0=$SECONDS raw
	rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"; LOG=$OUT.tmp/build.log; : >"$LOG"
	stage "$OUT.tmp/tree"
	raw=$OUT.tmp/root.raw
	say "mke2fs -d: a $SIZE ext4 image of the tree"
	"${NICE[@]}" mke2fs -q -t ext4 -L carapace-root -d "$OUT.tmp/tree" "$raw" "$SIZE" >>"$LOG" 2>&1 ||
		die "mke2fs failed (see $LOG)"
	rm -rf "$OUT.tmp/tree"
	first_boot "$raw"
	e2fsck -fn "$raw" >>"$LOG" 2>&1 || die "the image is not fsck-clean after its first boot (see $LOG)"
	debugfs -R 'cat /var/lib/dpkg/status' "$raw" 2>/dev/null |
		sed -n 's/^Package: //p' | LC_ALL=C sort >"$OUT.tmp/packages"
	"${NICE[@]}" "$QEMU_IMG" convert -O qcow2 "$raw" "$OUT.tmp/base.qcow2" >>"$LOG" 2>&1 ||
		die "qemu-img convert failed (see $LOG)"
	rm -f "$raw"
	chmod 0444 "$OUT.tmp/base.qcow2"	# the overlays' backing file: never written
	echo $((SECONDS - t0)) >"$OUT.tmp/build-seconds"
	rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
	ln -sfn "$KEY/base.qcow2" "$RD/base.qcow2"
	say "built $OUT/base.qcow2 ($(du -h "$OUT/base.qcow2" | cut -f1), $(wc -l <"$OUT/packages") packages) in $(cat "$OUT/build-seconds") s"
}

# overlay OUT: a qcow2 file over the current base at OUT; an overlay already
# there over that base is kept (the VM's disk persists across runs).
do_overlay() {
	local out=${1:-} base backing
	[ -n "$out" ] || die "usage: $0 overlay OUT.qcow2"
	command -v "$QEMU_IMG" >/dev/null || die "qemu-img missing (package qemu-utils; scripts/deps.sh host)"
	base=$(readlink -f "$RD/base.qcow2" 2>/dev/null || true)
	[ -n "$base" ] && [ -f "$base" ] || die "no base image at $RD/base.qcow2 (make rootfs)"
	if [ -f "$out" ] && [ -z "${FRESH:-}" ]; then
		backing=$("$QEMU_IMG" info --output=json -U "$out" 2>/dev/null |
			sed -n 's/^ *"backing-filename": "\(.*\)",*$/\1/p' | sed -n 1p)
		if [ "$backing" = "$base" ]; then
			say "kept $out (over $base)"
			return 0
		fi
		say "$out is over ${backing:-no base}, not the current base: made anew"
	fi
	mkdir -p "$(dirname "$out")"
	"$QEMU_IMG" create -q -f qcow2 -F qcow2 -b "$base" "$out" || die "qemu-img create $out failed"
	say "made $out (over $base)"
}

FIRMWARE=$CACHE/fw_dynamic.bin
[ $# -gt 0 ] || set -- build
case $1 in
build)
	ssh_key	# as the user who runs ssh with it: root's file would be unreadable
	# debootstrap (mknod, chown) and mke2fs -d of root-owned files need root
	[ "$(id -u)" -eq 0 ] ||
		exec sudo CARAPACE_CACHE="$CACHE" CARAPACE_MIRROR="$MIRROR" KERNEL="$KERNEL" \
			CFITEST="$CFITEST" CFISTATUS="$CFISTATUS" KSELFTEST="$KSELFTEST" \
			ROOTFS_SIZE="$SIZE" QEMU_IMG="$QEMU_IMG" CARAPACE_QEMU="$QEMU" "$0" "$@"
	do_build ;;
overlay) shift; do_overlay "$@" ;;
path) echo "$RD/base.qcow2" ;;
key-path) cache_key; echo "$OUT" ;;
ssh-key) ssh_key; echo "$SSH_KEY" ;;
*) die "unknown command '$1' (build|overlay|path|key-path|ssh-key)" ;;
esac
