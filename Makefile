# SPDX-License-Identifier: MIT
# Carapace: one non-recursive Makefile.
#   make          build the hypervisor (build/carapace.bin)
#   make cfi      the CFI build: landing pads and shadow stacks in HS-mode, with
#                 the debug test hooks (build/cfi/carapace.bin; sid's gcc >= 15 in
#                 the cached build root, scripts/cfi-build.sh); cfi-release without
#                 the hooks (build/cfi-release/)
#   make run      boot Carapace (its CFI build) with two guests on QEMU (installs what it needs)
#   make test     unit tests, guest tests, Linux tests, conformant tier on the CFI build,
#                 a tier on the plain build (installs what it needs)
#   make test-conformant  the CFI tests on QEMU built with platform/qemu-virt/patches
#   make deps     install/fetch dependencies only
#   make rootfs   the Debian root file system's base image (docs/user-guide.md)
PLATFORM ?= qemu-virt
include platform/$(PLATFORM)/platform.mk

CACHE ?= $(or $(CARAPACE_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/carapace)
export CARAPACE_CACHE := $(CACHE)
CROSS ?= riscv64-unknown-elf-
CC := $(CROSS)gcc
OBJCOPY := $(CROSS)objcopy
PYTHON ?= /usr/bin/python3
B := build
LIBFDT_SRC := $(CACHE)/libfdt

# CFI=1 (scripts/cfi-build.sh runs it with sid's gcc >= 15): landing pads
# (lpad) at every indirect-branch target and sspush/sspopchk in every non-leaf
# function, for the hypervisor's own control flow (docs/security.md). The
# may-be-operations they use need Zimop on the CPU. DEBUG_HOOKS=1 adds the
# test hooks (hyp/cfi/hyp_cfi_selftest.c), refused unless a boot option asks.
CFI ?= 0
DEBUG_HOOKS ?= 0
HYP_MARCH := $(PLATFORM_MARCH)$(if $(filter 1,$(CFI)),_zimop_zicfilp_zicfiss)
# (-D_LIBC_LIMITS_H_: a linux-gnu gcc's <limits.h> would pull in glibc's;
# its own freestanding values are the ones the newlib build gets)
CFI_CFLAGS := $(if $(filter 1,$(CFI)),-fcf-protection=full -fno-pie -D_LIBC_LIMITS_H_)
CFI_DEFINES := $(if $(filter 1,$(CFI)),-DCARAPACE_CFI_BUILD=1) \
	$(if $(filter 1,$(DEBUG_HOOKS)),-DCARAPACE_DEBUG_HOOKS=1)
CFI_LDFLAGS := $(if $(filter 1,$(CFI)),-no-pie -static -Xlinker --build-id=none)

# No frame pointers: measured, they cost 6 instructions per SBI call and 24 per
# MMIO exit (docs/performance.md); backtraces are not used in HS-mode.
COMMON_CFLAGS := -std=gnu11 -ffreestanding -nostdlib -fno-strict-aliasing \
	-fomit-frame-pointer -fno-common -mcmodel=medany -mno-relax \
	-march=$(HYP_MARCH) -mabi=$(PLATFORM_MABI) -O2 -g $(CFI_CFLAGS)
HYP_CFLAGS := $(COMMON_CFLAGS) $(CFI_DEFINES) -Wall -Wextra -Werror -Wshadow -Wvla \
	-Wmissing-prototypes -Wstrict-prototypes -Wimplicit-fallthrough \
	-Iinclude -Ihyp/include -Ihyp/include/libc -Iplatform/$(PLATFORM)/include \
	-I$(LIBFDT_SRC) -I$(B)/include
LIBFDT_CFLAGS := $(COMMON_CFLAGS) -Ihyp/include/libc -I$(LIBFDT_SRC) -w
# Link-time optimization lets the exit path inline across files (vcpu -> exit
# -> vsbi): measured in docs/performance.md.
HYP_LTO := -flto

include hyp/objects.mk
HYP_OBJS := $(addprefix $(B)/hyp/,$(hyp-objs-y))
LIBFDT_NAMES := fdt fdt_ro fdt_rw fdt_sw fdt_wip fdt_strerror fdt_addresses fdt_empty_tree
LIBFDT_OBJS := $(addprefix $(B)/libfdt/,$(addsuffix .o,$(LIBFDT_NAMES)))

.PHONY: all cfi cfi-root cfi-release deps deps-host depcheck run run-initramfs run-demo rootfs rootfs-overlays test test-quick test-conformant qemu-conformant bench clean
all: $(B)/carapace.bin

# The CFI builds, in the cached sid root (scripts/cfi-build.sh: rebuilt only
# when a source, the compiler or the variant changed). `make run` and
# `make test` boot the CFI build (CARAPACE_HYP): they build the guest
# kernel, whose build root has the compiler; `make test` runs a tier on the
# plain build too (scripts/run-tests.sh).
HYP_CFI := $(B)/cfi/carapace.bin
cfi-root:
	@guest-linux-patches/build.sh root
cfi: $(LIBFDT_SRC)/.done cfi-root
	@scripts/cfi-build.sh cfi
cfi-release: $(LIBFDT_SRC)/.done
	@scripts/cfi-build.sh cfi-release

# --- dependencies -----------------------------------------------------------
deps:
	@scripts/deps.sh all

$(LIBFDT_SRC)/.done:
	@scripts/deps.sh libfdt

# --- hypervisor ---------------------------------------------------------------
$(B)/include/generated/asm-offsets.h: hyp/arch/asm-offsets.c hyp/include/*.h | $(LIBFDT_SRC)/.done
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@$(CC) $(HYP_CFLAGS) -S -o $(B)/asm-offsets.s $<
	@{ echo "/* generated from hyp/arch/asm-offsets.c: do not edit */"; \
	   sed -n 's/.*->\([A-Z_0-9]*\) \([0-9-]*\).*/#define \1 \2/p' $(B)/asm-offsets.s; } > $@

$(B)/hyp/%.o: hyp/%.c $(B)/include/generated/asm-offsets.h | $(LIBFDT_SRC)/.done
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(HYP_CFLAGS) $(HYP_LTO) -MMD -MP -c -o $@ $<

$(B)/hyp/%.o: hyp/%.S $(B)/include/generated/asm-offsets.h
	@mkdir -p $(dir $@)
	@echo "  AS      $<"
	@$(CC) $(HYP_CFLAGS) -D__ASSEMBLER__ -MMD -MP -c -o $@ $<

# libfdt comes from Debian's linux-source-7.2 at build time (never vendored).
$(B)/libfdt/%.o: $(LIBFDT_SRC)/.done
	@mkdir -p $(dir $@)
	@echo "  CC      libfdt/$*.c"
	@$(CC) $(LIBFDT_CFLAGS) -c -o $@ $(LIBFDT_SRC)/$*.c

$(B)/carapace.elf: $(HYP_OBJS) $(LIBFDT_OBJS) hyp/hyp.ld
	@echo "  LD      $@"
	@$(CC) $(COMMON_CFLAGS) $(HYP_LTO) $(CFI_LDFLAGS) -T hyp/hyp.ld -Wl,--gc-sections -o $@ $(HYP_OBJS) $(LIBFDT_OBJS) -Wl,--no-warn-rwx-segments
	@$(CROSS)size $@ | tail -1 | awk '{printf "carapace.elf: text %d, data %d, bss %d bytes\n", $$1, $$2, $$3}'

$(B)/carapace.bin: $(B)/carapace.elf
	@echo "  OBJCOPY $@"
	@$(OBJCOPY) -O binary $< $@

-include $(HYP_OBJS:.o=.d)

# --- guests, tests, run ----------------------------------------------------------
-include tests/guests/guests.mk
-include tests/unit/unit.mk
-include tests/bench/bench.mk
-include tests/linux/linux.mk
-include tests/fuzz/fuzz.mk
-include tests/guest_kernel/guest_kernel.mk

# Our guest kernel (make guest-kernel) when it has been built, Debian's otherwise.
LINUX_IMAGE := $(or $(wildcard $(CACHE)/guest-kernel/Image),$(CACHE)/linux/Image)
INITRAMFS := $(B)/linux/initramfs.cpio.gz
RUN_VMS_INITRAMFS ?= --vm name=alpha,kernel=$(LINUX_IMAGE),initrd=$(INITRAMFS),mem=256M,vcpus=2,bootargs="console=ttyS0 quiet" \
	   --vm name=beta,kernel=$(LINUX_IMAGE),initrd=$(INITRAMFS),mem=256M,vcpus=2,bootargs="console=ttyS0 quiet"
# make run: each guest on its own disk (a qcow2 overlay over the Debian base
# image), both on switch lan with an uplink; ssh -p 2222 / 2223 root@localhost
# with the key `scripts/mkrootfs.sh ssh-key` prints.
RUN_SSH_PORTS ?= 2222 2223
RUN_VMS ?= --switch name=lan,uplink=user,fwd=alpha:$(word 1,$(RUN_SSH_PORTS)),fwd=beta:$(word 2,$(RUN_SSH_PORTS)) \
	   --vm name=alpha,kernel=$(GUEST_KERNEL),mem=256M,vcpus=2,disk=$(B)/run/alpha.qcow2,net=lan,bootargs="root=/dev/vda rw console=ttyS0 quiet" \
	   --vm name=beta,kernel=$(GUEST_KERNEL),mem=256M,vcpus=2,disk=$(B)/run/beta.qcow2,net=lan,bootargs="root=/dev/vda rw console=ttyS0 quiet"

# Two Linux guests with user CFI on Debian disks, a switch, ssh; interactive
# (Ctrl-] monitor, Ctrl-A X quits).
run: deps all rootfs-overlays cfi
	@echo "ssh key: $$(scripts/mkrootfs.sh ssh-key)"
	CARAPACE_HYP=$(HYP_CFI) $(PYTHON) tools/carapace-run --smp 2 $(RUN_VMS)

# The same two guests on the initramfs (no disk, no network).
run-initramfs: deps all linux-initramfs cfi
	CARAPACE_HYP=$(HYP_CFI) $(PYTHON) tools/carapace-run --smp 2 $(RUN_VMS_INITRAMFS)

# The Debian root file system's base image (scripts/mkrootfs.sh; cached by its
# inputs, docs/user-guide.md) and a qcow2 overlay over it per VM of `make run`.
ROOTFS_VMS := alpha beta
rootfs: guest-kernel linux-cfitest $(B)/guest-kernel/cfistatus guest-kselftests
	@KERNEL="$$(guest-linux-patches/build.sh image-path)" CFITEST=$(B)/linux/cfitest \
		CFISTATUS=$(B)/guest-kernel/cfistatus KSELFTEST=$(GK_KSELFTEST) scripts/mkrootfs.sh build

rootfs-overlays: rootfs
	@for vm in $(ROOTFS_VMS); do scripts/mkrootfs.sh overlay $(B)/run/$$vm.qcow2 || exit; done

# The same, with the bare-metal demo guests (no Linux download needed).
run-demo: deps-host all guests
	$(PYTHON) tools/carapace-run --vm name=alpha,kernel=$(B)/guests/demo.bin,vcpus=2,bootargs="count=10 delay_us=200000" \
		--vm name=beta,kernel=$(B)/guests/demo.bin,bootargs="count=10 delay_us=300000"

test: deps all guests linux-initramfs cfi cfi-release
	@scripts/run-tests.sh

test-quick: deps all guests cfi cfi-release
	@scripts/run-tests.sh quick

# QEMU from Debian's qemu source with platform/qemu-virt/patches (docs/cfi.md,
# "Conformant QEMU"), cached by version and patch set; the CFI tests on it.
qemu-conformant:
	@scripts/qemu-conformant.sh build >/dev/null

test-conformant: deps all guests qemu-conformant cfi cfi-release
	@scripts/run-tests.sh conformant

# rootfs: the guest-I/O steps boot our guest kernel (built with it), and
# disk_boot the Debian root file system
bench: deps all guests bench-payloads linux-initramfs rootfs cfi
	@scripts/deps.sh bench
	@$(PYTHON) scripts/bench.py

# Soaks (docs/soak.md), never part of `make test` or CI: the guest-side fuzzer
# beside a victim VM until GFUZZ_SOAK_OPS operations (default 10 million),
# then Linux CFI guests on two hosts for LINUX_SOAK_MINUTES (default 30) with
# pause/resume, live snapshots and live migrations. The Linux soak runs on the
# conformant QEMU: on QEMU 10.0.2 a guest interrupt between a jump and its
# target can lose the landing-pad check (Q5, docs/cfi.md §7), about once in
# 40 000 violations, which no hypervisor can prevent there;
# LINUX_SOAK_QEMU=stock runs it on the installed QEMU anyway.
LINUX_SOAK_QEMU ?= conformant
.PHONY: soak soak-gfuzz soak-linux soak-hold soak-restore
soak: soak-hold soak-restore soak-gfuzz soak-linux
# field-mutated snapshots restored into a running host beside a victim
# (tests/guests/test_restore_fuzz.py); RESTORE_FUZZ_COUNT, default 100 000;
# the run (mutations.log, console.log, the mutants alive) stays in build/soak-restore
RESTORE_FUZZ_COUNT ?= 100000
soak-restore: deps all guests
	RESTORE_FUZZ_COUNT=$(RESTORE_FUZZ_COUNT) RESTORE_FUZZ_TIMEOUT=36000 \
		$(PYTHON) -m pytest -q -rfEs -s --basetemp=$(B)/soak-restore tests/guests/test_restore_fuzz.py
# every hart-holding path for a minute a policy, beside a victim (docs/security.md)
soak-hold: deps all guests
	HOLD_SECONDS=60 $(PYTHON) -m pytest -q -rfEs -s tests/guests/test_hold.py
soak-gfuzz: deps all guests
	$(PYTHON) -m pytest -q -rfEs -s -m soak tests/guests/test_gfuzz.py
soak-linux: deps all guests linux-initramfs $(if $(filter conformant,$(LINUX_SOAK_QEMU)),qemu-conformant)
	$(if $(filter conformant,$(LINUX_SOAK_QEMU)),CARAPACE_QEMU=$$(scripts/qemu-conformant.sh path) \
		CARAPACE_CONFORMANT=1) $(PYTHON) -m pytest -q -rfEs -s -m soak tests/linux/test_linux_soak.py

# Every file of the hypervisor is in a layer (its folder, hyp/layers.txt) and
# uses none of a higher layer, and no file depends on one that depends back
# on it (docs/architecture.md, "Layers"); the graph comes from the objects.
depcheck: $(HYP_OBJS) hyp/layers.txt
	@$(PYTHON) scripts/depgraph.py --nm $(CROSS)gcc-nm --layers hyp/layers.txt $(HYP_OBJS)

deps-host:
	@scripts/deps.sh host firmware libfdt

clean:
	rm -rf $(B)
