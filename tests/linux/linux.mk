# SPDX-License-Identifier: MIT
# linux.mk: builds the Linux-guest CFI test program, the records writer and
# checker (tests/linux/records.c), the numbered TCP stream's ends
# (tests/linux/numstream.c) and the initramfs that runs them (included from
# the top-level Makefile, which defines B and CACHE).

LINUX_CC := riscv64-linux-gnu-gcc
# -fno-optimize-sibling-calls: a tail call becomes an indirect "jr t1" that
# sets ELP, which must not happen in code that runs with landing pads on.
LINUX_CFLAGS := -static -O2 -Wall -Wextra -Werror -march=rv64gc -mabi=lp64d \
	-fno-optimize-sibling-calls -fno-stack-protector
LINUX_TEST_SRCS := $(addprefix tests/linux/,cfitest.c cfi_report.c cfi_detect.c \
	cfi_ss.c cfi_ss_proc.c cfi_lp.c cfi_off.c cfi_asm.S pmu_count.c)
LINUX_TEST_HDRS := $(wildcard tests/linux/*.h)
LINUX_BUSYBOX := $(CACHE)/busybox/usr/bin/busybox

.PHONY: linux-initramfs linux-cfitest linux-records linux-numstream
linux-initramfs: $(B)/linux/initramfs.cpio.gz
linux-cfitest: $(B)/linux/cfitest
linux-records: $(B)/linux/records
linux-numstream: $(B)/linux/numstream

# -s: the symbol table would name the assembler's temporary object
# (ccXXXXXX.o), so two builds of the same sources would differ, and with them
# the rootfs cache key (scripts/mkrootfs.sh) that hashes this binary.
$(B)/linux/cfitest: $(LINUX_TEST_SRCS) $(LINUX_TEST_HDRS) tests/linux/linux.mk
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(LINUX_CC) $(LINUX_CFLAGS) -s -o $@ $(LINUX_TEST_SRCS)

$(B)/linux/records $(B)/linux/numstream: $(B)/linux/%: tests/linux/%.c tests/linux/wire.h tests/linux/linux.mk
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(LINUX_CC) $(LINUX_CFLAGS) -s -o $@ $<

LINUX_PROGRAMS := $(B)/linux/records $(B)/linux/numstream

$(B)/linux/initramfs.cpio.gz: $(B)/linux/cfitest $(LINUX_PROGRAMS) tests/linux/init \
		scripts/mkinitramfs.sh
	@echo "  CPIO    $@"
	@BUSYBOX=$(LINUX_BUSYBOX) CFITEST=$(B)/linux/cfitest PROGRAMS="$(LINUX_PROGRAMS)" \
		INIT=tests/linux/init scripts/mkinitramfs.sh $@
