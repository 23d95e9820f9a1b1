# SPDX-License-Identifier: MIT
# Benchmark payloads: tests/bench/<name>.c + the test-guest library -> build/bench/<name>.bin.
# Included by the top Makefile after tests/guests/guests.mk (reuses its flags and library).
BENCH_OUT := build/bench
BENCH_NAMES := $(basename $(notdir $(wildcard tests/bench/*.c)))
BENCH_BINS := $(BENCH_NAMES:%=$(BENCH_OUT)/%.bin)

.PHONY: bench-payloads
bench-payloads: $(BENCH_BINS)
.SECONDARY: $(BENCH_NAMES:%=$(BENCH_OUT)/obj/%.c.o) $(BENCH_NAMES:%=$(BENCH_OUT)/%.elf)

$(BENCH_OUT)/obj/%.c.o: tests/bench/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(GUEST_CC) $(GUEST_CFLAGS) -MMD -MP -c -o $@ $<

$(BENCH_OUT)/%.elf: $(BENCH_OUT)/obj/%.c.o $(GUEST_LIB_OBJS) $(GUEST_LD)
	@$(GUEST_CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $< $(GUEST_LIB_OBJS) -lgcc

$(BENCH_OUT)/%.bin: $(BENCH_OUT)/%.elf
	@$(GUEST_OBJCOPY) -O binary $< $@

-include $(BENCH_NAMES:%=$(BENCH_OUT)/obj/%.c.d)

# The guest-I/O benchmark (scripts/bench.py disk_io, net_io): a static Linux
# program that is the whole initramfs, its /init (tests/bench/linux/iobench.c).
IOBENCH := $(BENCH_OUT)/iobench
IOBENCH_INITRAMFS := $(BENCH_OUT)/iobench.cpio.gz
bench-payloads: $(IOBENCH_INITRAMFS)

$(IOBENCH): tests/bench/linux/iobench.c tests/bench/bench.mk
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(LINUX_CC) $(LINUX_CFLAGS) -o $@ $<

# /init and the mount points it uses; same inputs, same bytes (as mkinitramfs.sh)
$(IOBENCH_INITRAMFS): $(IOBENCH)
	@echo "  CPIO    $@"
	@rm -rf $@.d && mkdir -p $@.d/dev $@.d/proc $@.d/sys
	@install -m 0755 $< $@.d/init
	@find $@.d -exec touch -h -d @0 {} +
	@(cd $@.d && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort | \
		cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -9 -n >$@.tmp
	@rm -rf $@.d && mv $@.tmp $@

# The instruction profiler (tests/bench/profile/tbprof.c, a QEMU TCG plugin;
# docs/performance.md, "How it is measured"): built against the plugin API
# header of the QEMU source the conformant tier fetches (`make
# qemu-conformant`), the same QEMU version as the system's.
TBPROF := $(BENCH_OUT)/tbprof.so
.PHONY: bench-profiler
bench-profiler: $(TBPROF)
$(TBPROF): tests/bench/profile/tbprof.c tests/bench/bench.mk
	@hdr=$$(ls -d $(CACHE)/qemu-conformant/src/*/include/qemu 2>/dev/null | head -1); \
	if [ -z "$$hdr" ]; then \
		echo "bench-profiler: no qemu-plugin.h: run 'make qemu-conformant' first (it fetches QEMU's source)" >&2; \
		exit 1; \
	fi; \
	mkdir -p $(dir $@); echo "  CC      $@"; \
	gcc -O2 -shared -fPIC -Wall -Wextra -Werror $$(pkg-config --cflags glib-2.0) -I"$$hdr" -o $@ $<
