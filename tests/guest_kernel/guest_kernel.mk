# SPDX-License-Identifier: MIT
# guest_kernel.mk: our guest kernel (guest-linux-patches/build.sh) and the
# initramfs its tests boot (included from the top-level Makefile, which
# defines B, CACHE and the tests/linux variables).
#   make guest-kernel          build (or find cached) $(GUEST_KERNEL)
#   make guest-kernel-check    the series applies and is checkpatch clean
#   make guest-kselftests      the upstream riscv CFI kselftests (nolibc build)

# The last Image build.sh built (a link it updates); `make run` boots it
# when present, Debian's kernel otherwise.
GUEST_KERNEL := $(CACHE)/guest-kernel/Image
GK_INITRAMFS := $(B)/guest-kernel/initramfs.cpio.gz
GK_KSELFTEST := $(B)/guest-kernel/cfi_kselftest

.PHONY: guest-kernel guest-kernel-check guest-kernel-initramfs guest-kselftests
guest-kernel:
	@guest-linux-patches/build.sh kernel

# build.sh finds it cached when nothing changed (a few seconds)
guest-kselftests:
	@guest-linux-patches/build.sh selftests
	@mkdir -p $(dir $(GK_KSELFTEST))
	@cp "$$(guest-linux-patches/build.sh selftests-path)" $(GK_KSELFTEST)

guest-kernel-check:
	@guest-linux-patches/build.sh check

guest-kernel-initramfs: $(GK_INITRAMFS)

$(B)/guest-kernel/cfistatus: tests/guest_kernel/cfistatus.c $(LINUX_TEST_HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(LINUX_CC) $(LINUX_CFLAGS) -Itests/linux -o $@ $<

# tests/linux's initramfs with our /init, plus a second cpio (the kernel
# unpacks them in turn) holding cfistatus and the CFI kselftests.
$(GK_INITRAMFS): guest-kselftests $(B)/linux/cfitest $(B)/guest-kernel/cfistatus \
		tests/guest_kernel/init scripts/mkinitramfs.sh tests/guest_kernel/guest_kernel.mk
	@echo "  CPIO    $@"
	@BUSYBOX=$(LINUX_BUSYBOX) CFITEST=$(B)/linux/cfitest INIT=tests/guest_kernel/init \
		scripts/mkinitramfs.sh $@.base >/dev/null
	@rm -rf $(B)/guest-kernel/extra && mkdir -p $(B)/guest-kernel/extra/bin
	@install -m 0755 $(B)/guest-kernel/cfistatus $(GK_KSELFTEST) $(B)/guest-kernel/extra/bin/
	@find $(B)/guest-kernel/extra -exec touch -h -d @0 {} +
	@(cd $(B)/guest-kernel/extra && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort | \
		cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -9 -n >$@.extra
	@cat $@.base $@.extra >$@.tmp && rm -f $@.base $@.extra && mv $@.tmp $@
