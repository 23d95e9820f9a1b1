# SPDX-License-Identifier: MIT
# Coverage-guided fuzzing of the snapshot restore path (docs/fuzzing.md),
# on the host with clang's libFuzzer, ASan and UBSan (included by the top
# Makefile).
#   make fuzz-deps        install clang (with libFuzzer) if it is missing
#   make fuzz-snap        build $(B)/fuzz/fuzz_snap_load
#   make fuzz-snap-short  run it over the seed corpus, FUZZ_SHORT_RUNS inputs
#                         (part of the quick test tier); fails on any crash
#   make fuzz-snap-long   FUZZ_LONG_RUNS inputs (10 million), corpus and
#                         crash files under $(B)/fuzz/
#   make fuzz-snap-cov    line coverage (llvm-cov) of the corpus so far
# The real hyp/snap/snap_load.c, section_rx.c, snap_admit.c, snap_state.c, snap_record.c, state/cfi_state.c, crc32c.c and device
# models are compiled with -DHOST_TEST; tests/fuzz/fuzz_restore_host.c (shared
# with the migration target) stubs the rest. A crash leaves $(B)/fuzz/{short,long}/crash-* (or leak-*, timeout-*,
# oom-*): run
# $(B)/fuzz/fuzz_snap_load FILE to see it again (FUZZ_VERBOSE=1: the outcome).
FUZZ_CC ?= clang
FUZZ_B := $(B)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -std=gnu11 -DHOST_TEST -g -O1 -fno-omit-frame-pointer \
	-Wall -Wextra -Werror $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
	-include tests/fuzz/fuzz_host.h \
	-Iinclude -Ihyp/include -Iplatform/$(PLATFORM)/include -Itests/unit
FUZZ_LDFLAGS := $(FUZZ_SAN) -fsanitize=fuzzer

# an interrupt line a device model drives: to the VM's PLIC or APLIC (virq.c)
FUZZ_VIRQ_SRC := hyp/vdev/virq.c hyp/vdev/vaplic.c hyp/state/vimsic.c hyp/lib/aplic_model.c \
	hyp/lib/imsic_file.c hyp/drivers/imsic_host.c
FUZZ_SNAP_SRC := tests/fuzz/fuzz_snap_load.c tests/fuzz/fuzz_restore_host.c \
	tests/fuzz/fuzz_clock_log.c tests/unit/fake_csr.c \
	hyp/snap/snap_load.c hyp/snap/snap_disk_load.c hyp/snap/snap_disk_id.c hyp/snap/section_rx.c hyp/snap/snap_admit.c hyp/snap/snap_state.c \
	hyp/snap/snap_record.c hyp/state/cfi_state.c hyp/state/dbtr_record.c hyp/state/dbtr_word.c \
	hyp/lib/crc32c.c hyp/vdev/vuart.c hyp/vdev/vplic.c hyp/vdev/vmgenid.c hyp/vdev/devices.c \
	$(FUZZ_VIRQ_SRC) \
	hyp/state/pmu.c hyp/state/pmu_logic.c hyp/state/steal_time.c hyp/state/vcpu_reset.c hyp/state/fwft.c \
	hyp/vsbi/vsbi_hsm.c hyp/vsbi/vsbi_sta.c \
	hyp/snap/snap_vio.c hyp/vdev/vio_mmio.c hyp/vdev/vblk.c hyp/vdev/vnet.c hyp/vdev/virtq.c \
	hyp/vdev/vswitch.c
FUZZ_SNAP_OBJS := $(patsubst %.c,$(FUZZ_B)/obj/%.o,$(FUZZ_SNAP_SRC))
FUZZ_SNAP := $(FUZZ_B)/fuzz_snap_load
FUZZ_SNAP_CORPUS := tests/fuzz/corpus/snap_load
# Inputs up to 64 KiB: a whole 1-2 vCPU stream with a few memory pages.
FUZZ_SNAP_OPTS := -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
FUZZ_SHORT_RUNS ?= 200000
FUZZ_LONG_RUNS ?= 10000000
FUZZ_ENV := ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=64} \
	UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

.PHONY: fuzz-deps fuzz-snap fuzz-snap-short fuzz-snap-long

# Idempotent: nothing happens when clang links a libFuzzer program already.
# Debian bookworm's clang (14) brings libFuzzer and the sanitizer runtimes
# (libclang-rt-14-dev).
fuzz-deps:
	@probe() { printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)%s\n' \
		'{ (void)d; (void)n; return 0; }' | \
		$(FUZZ_CC) -x c -fsanitize=fuzzer,address,undefined -o /dev/null - 2>/dev/null; }; \
	if command -v $(FUZZ_CC) >/dev/null 2>&1 && probe; then \
		echo "[fuzz] $(FUZZ_CC) with libFuzzer present ($$($(FUZZ_CC) --version | head -1))"; \
		exit 0; \
	fi; \
	SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	if [ -n "$$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then \
		echo "[fuzz] error: clang with libFuzzer is missing; as root run:" >&2; \
		echo "[fuzz]   apt-get install -y --no-install-recommends clang libclang-rt-14-dev" >&2; \
		exit 1; \
	fi; \
	echo "[fuzz] installing clang and libclang-rt-14-dev (libFuzzer, sanitizers) from Debian"; \
	$$SUDO apt-get update -q >/dev/null && \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends \
		clang libclang-rt-14-dev >/dev/null || \
		{ echo "[fuzz] error: apt-get install clang libclang-rt-14-dev failed" >&2; exit 1; }; \
	probe || { echo "[fuzz] error: $(FUZZ_CC) still cannot build a libFuzzer program" >&2; exit 1; }; \
	echo "[fuzz] clang installed ($$($(FUZZ_CC) --version | head -1))"

$(FUZZ_SNAP_OBJS): $(FUZZ_B)/obj/%.o: %.c tests/fuzz/fuzz_host.h tests/fuzz/fuzz.mk | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_SNAP): $(FUZZ_SNAP_OBJS)
	@echo "  FUZZLD  $@"
	@$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^

-include $(FUZZ_SNAP_OBJS:.o=.d)

fuzz-snap: $(FUZZ_SNAP)

# The corpus is read, never written (new inputs go to a scratch directory);
# a crash, leak, timeout or sanitizer report makes libFuzzer exit non-zero.
fuzz-snap-short: $(FUZZ_SNAP)
	@rm -rf $(FUZZ_B)/short && mkdir -p $(FUZZ_B)/short/corpus
	@echo "-- fuzz: snap_load, $(FUZZ_SHORT_RUNS) runs over $(FUZZ_SNAP_CORPUS)"
	@$(FUZZ_ENV) $(FUZZ_SNAP) $(FUZZ_SNAP_OPTS) -runs=$(FUZZ_SHORT_RUNS) -seed=1 \
		-artifact_prefix=$(FUZZ_B)/short/ $(FUZZ_B)/short/corpus $(FUZZ_SNAP_CORPUS) \
		> $(FUZZ_B)/short/log 2>&1; rc=$$?; \
	grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|Done )' \
		$(FUZZ_B)/short/log; \
	if [ $$rc -ne 0 ]; then \
		tail -n 60 $(FUZZ_B)/short/log; \
		echo "FAIL: fuzz: snap_load (exit status $$rc; reproducer: $$(ls $(FUZZ_B)/short/crash-* \
			$(FUZZ_B)/short/leak-* $(FUZZ_B)/short/timeout-* $(FUZZ_B)/short/oom-* 2>/dev/null))"; \
		exit 1; \
	fi; \
	echo "PASS: fuzz: snap_load"

# A long run in one process (no -jobs: libFuzzer would fork and log to
# ./fuzz-0.log), the corpus it grows kept in $(B)/fuzz/long/corpus.
fuzz-snap-long: $(FUZZ_SNAP)
	@mkdir -p $(FUZZ_B)/long/corpus
	@echo "-- fuzz: snap_load, $(FUZZ_LONG_RUNS) runs (log: $(FUZZ_B)/long/log)"
	@$(FUZZ_ENV) $(FUZZ_SNAP) $(FUZZ_SNAP_OPTS) -runs=$(FUZZ_LONG_RUNS) \
		-artifact_prefix=$(FUZZ_B)/long/ $(FUZZ_B)/long/corpus $(FUZZ_SNAP_CORPUS) \
		> $(FUZZ_B)/long/log 2>&1; rc=$$?; \
	grep -E '^(#[0-9]+[[:space:]]+DONE|stat::|Done )' $(FUZZ_B)/long/log; \
	if [ $$rc -ne 0 ]; then \
		tail -n 60 $(FUZZ_B)/long/log; \
		echo "FAIL: fuzz: snap_load long run (exit status $$rc)"; exit 1; \
	fi; \
	echo "PASS: fuzz: snap_load long run"

# Line coverage of the code under test over the seed corpus and whatever the
# runs above grew (no fuzzing: each input once), by llvm-cov.
FUZZ_COV_B := $(FUZZ_B)/cov
FUZZ_COV_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=all,$(FUZZ_CFLAGS)) \
	-fprofile-instr-generate -fcoverage-mapping
FUZZ_COV_OBJS := $(patsubst %.c,$(FUZZ_COV_B)/obj/%.o,$(FUZZ_SNAP_SRC))
FUZZ_COV_SHOW := hyp/snap/snap_load.c hyp/snap/snap_disk_load.c hyp/snap/snap_disk_id.c hyp/snap/section_rx.c hyp/snap/snap_admit.c hyp/snap/snap_state.c hyp/snap/snap_record.c hyp/vdev/vuart.c hyp/vdev/vplic.c \
	hyp/vdev/vmgenid.c hyp/lib/crc32c.c hyp/snap/snap_vio.c hyp/vdev/vio_mmio.c hyp/vdev/vblk.c hyp/vdev/vnet.c
LLVM_PROFDATA ?= llvm-profdata-14
LLVM_COV ?= llvm-cov-14

$(FUZZ_COV_OBJS): $(FUZZ_COV_B)/obj/%.o: %.c tests/fuzz/fuzz_host.h tests/fuzz/fuzz.mk | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  COVCC   $<"
	@$(FUZZ_CC) $(FUZZ_COV_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_COV_B)/fuzz_snap_load: $(FUZZ_COV_OBJS)
	@echo "  COVLD   $@"
	@$(FUZZ_CC) -fprofile-instr-generate -fsanitize=fuzzer -o $@ $^

-include $(FUZZ_COV_OBJS:.o=.d)

.PHONY: fuzz-snap-cov
fuzz-snap-cov: $(FUZZ_COV_B)/fuzz_snap_load
	@rm -f $(FUZZ_COV_B)/*.profraw
	@LLVM_PROFILE_FILE=$(FUZZ_COV_B)/%p.profraw $< -runs=0 $(FUZZ_SNAP_CORPUS) \
		$(wildcard $(FUZZ_B)/short/corpus $(FUZZ_B)/long/corpus) > $(FUZZ_COV_B)/log 2>&1
	@$(LLVM_PROFDATA) merge -sparse -o $(FUZZ_COV_B)/snap.profdata $(FUZZ_COV_B)/*.profraw
	@$(LLVM_COV) report $< -instr-profile=$(FUZZ_COV_B)/snap.profdata $(FUZZ_COV_SHOW)
	@$(LLVM_COV) show $< -instr-profile=$(FUZZ_COV_B)/snap.profdata -format=text \
		-show-line-counts-or-regions $(FUZZ_COV_SHOW) > $(FUZZ_COV_B)/coverage.txt
	@echo "line by line: $(FUZZ_COV_B)/coverage.txt"

# ---- more targets: the other code that reads untrusted bytes ----------------
# (docs/fuzzing.md, "More targets"). Each NAME has tests/fuzz/fuzz_NAME.c,
# the hyp/ files fuzz-src-NAME, a seed corpus tests/fuzz/corpus/NAME/ and
#   make fuzz-NAME        build $(B)/fuzz/fuzz_NAME
#   make fuzz-NAME-short  fuzz-short-NAME runs, seed 1 (the quick test tier)
#   make fuzz-NAME-long   FUZZ_LONG_RUNS runs (10 million)
#   make fuzz-more-short  all of their short runs
# hyp/ files are compiled with the renamed hyp printf (hyp_snprintf, linked
# from hyp/lib/printf.c where needed) and libfdt's headers; libfdt itself is
# compiled from $(LIBFDT_SRC) (as the unit tests do: never copied here).
FUZZ_MORE := insn mgmt mig_recv fdt_host fdt_guest virtq hostio vblk vnet vswitch
FUZZ_T_B := $(FUZZ_B)/t
FUZZ_T_CFLAGS := $(FUZZ_CFLAGS) -I$(LIBFDT_SRC)
FUZZ_T_HYP_CFLAGS := -Dsnprintf=hyp_snprintf -Dvsnprintf=hyp_vsnprintf
FUZZ_T_LIBFDT_CFLAGS := $(filter-out -Wall -Wextra -Werror,$(FUZZ_T_CFLAGS)) -w \
	-fno-sanitize=nonnull-attribute
FUZZ_T_LIBFDT_NAMES := fdt fdt_ro fdt_rw fdt_sw fdt_wip fdt_strerror fdt_addresses
FUZZ_T_LIBFDT := $(addprefix $(FUZZ_T_B)/libfdt/,$(addsuffix .o,$(FUZZ_T_LIBFDT_NAMES)))
# A target that only writes through libfdt (the guest DT builder) links a
# copy without coverage: libfdt's own branches steer nothing there, and its
# string de-duplication (a memcmp at every byte of the strings block, for each
# property) spent about half the time in libFuzzer's comparison hooks. The
# copy keeps ASan and UBSan; its memcmp is tests/fuzz/fuzz_libfdt_memcmp.c,
# a byte loop ASan checks.
FUZZ_T_LIBFDT_PLAIN_CFLAGS := $(filter-out -fsanitize=fuzzer-no-link,$(FUZZ_T_LIBFDT_CFLAGS)) \
	-Dmemcmp=fuzz_libfdt_memcmp
FUZZ_T_LIBFDT_PLAIN := $(addprefix $(FUZZ_T_B)/libfdt-plain/,$(addsuffix .o,$(FUZZ_T_LIBFDT_NAMES))) \
	$(FUZZ_T_B)/libfdt-plain/fuzz_libfdt_memcmp.o

fuzz-src-insn := tests/fuzz/fuzz_insn.c hyp/arch/insn.c
fuzz-opts-insn := -max_len=64
fuzz-short-insn := 300000
fuzz-src-mgmt := tests/fuzz/fuzz_mgmt.c tests/fuzz/fuzz_clock_log.c hyp/host/mgmt.c hyp/lib/json.c hyp/lib/printf.c
fuzz-opts-mgmt := -max_len=4608
fuzz-short-mgmt := 50000
fuzz-src-mig_recv := tests/fuzz/fuzz_mig_recv.c tests/fuzz/fuzz_restore_host.c tests/fuzz/fuzz_clock_log.c \
	tests/unit/fake_csr.c hyp/migrate/mig_recv.c \
	hyp/migrate/mig_wire.c hyp/snap/section_rx.c hyp/snap/section_tx.c hyp/snap/snap_load.c hyp/snap/snap_disk_load.c hyp/snap/snap_disk_id.c \
	hyp/snap/snap_admit.c hyp/snap/snap_state.c hyp/snap/snap_record.c \
	hyp/state/cfi_state.c hyp/state/dbtr_record.c hyp/state/dbtr_word.c \
	hyp/lib/crc32c.c hyp/lib/printf.c hyp/vdev/vuart.c hyp/vdev/vplic.c hyp/vdev/vmgenid.c \
	$(FUZZ_VIRQ_SRC) \
	hyp/vdev/devices.c hyp/state/pmu.c hyp/state/pmu_logic.c hyp/state/steal_time.c \
	hyp/state/vcpu_reset.c hyp/state/fwft.c hyp/vsbi/vsbi_hsm.c hyp/vsbi/vsbi_sta.c \
	hyp/snap/snap_vio.c hyp/vdev/vio_mmio.c hyp/vdev/vblk.c hyp/vdev/vnet.c hyp/vdev/virtq.c \
	hyp/vdev/vswitch.c
fuzz-opts-mig_recv := -max_len=65536
fuzz-short-mig_recv := 100000
fuzz-src-fdt_host := tests/fuzz/fuzz_fdt_host.c hyp/fdt/fdt_host.c
fuzz-libfdt-fdt_host := y
fuzz-opts-fdt_host := -max_len=16384
fuzz-short-fdt_host := 100000
fuzz-src-fdt_guest := tests/fuzz/fuzz_fdt_guest.c tests/unit/fake_csr.c hyp/fdt/fdt_guest.c \
	hyp/state/cfi_state.c hyp/lib/printf.c
fuzz-libfdt-fdt_guest := plain
fuzz-extra-fdt_guest = $(FUZZ_T_FDT_CHECK)
fuzz-opts-fdt_guest := -max_len=2048
fuzz-short-fdt_guest := 100000

# the guest's virtqueues: 32-byte header, up to 64 six-byte operations,
# 16 KiB of guest RAM
fuzz-src-virtq := tests/fuzz/fuzz_virtq.c hyp/vdev/virtq.c
fuzz-opts-virtq := -max_len=16800
fuzz-short-virtq := 200000

# the host disk driver against a device that breaks the rules: 16-byte
# header, up to 128 eight-byte operations
fuzz-src-hostio := tests/fuzz/fuzz_hostio.c tests/unit/fake_vpci.c hyp/drivers/hostblk.c \
	hyp/drivers/virtio_pci.c hyp/drivers/split_ring.c hyp/lib/printf.c
fuzz-opts-hostio := -max_len=1040
fuzz-short-hostio := 200000
# a guest's virtio-blk device through its MMIO registers: 16-byte header,
# up to 128 six-byte operations, 16 KiB of guest RAM
fuzz-src-vblk := tests/fuzz/fuzz_vblk.c tests/fuzz/fuzz_vio_guest.c hyp/vdev/vblk.c \
	hyp/vdev/vio_mmio.c hyp/vdev/virtq.c hyp/vdev/mmio.c
fuzz-opts-vblk := -max_len=17168
fuzz-short-vblk := 100000
# the virtual switches: a script of attach, detach and send (frames up to
# 1553 bytes from the input)
fuzz-src-vswitch := tests/fuzz/fuzz_vswitch.c hyp/vdev/vswitch.c
fuzz-opts-vswitch := -max_len=8192
fuzz-short-vswitch := 200000

# a guest's virtio-net device: its registers, frames from the switch and to
# it; 8-byte header, up to 128 six-byte operations, 16 KiB of guest RAM
fuzz-src-vnet := tests/fuzz/fuzz_vnet.c tests/fuzz/fuzz_vio_guest.c hyp/vdev/vnet.c \
	hyp/vdev/vio_mmio.c hyp/vdev/virtq.c hyp/vdev/mmio.c
fuzz-opts-vnet := -max_len=17160
fuzz-short-vnet := 30000

fuzz_t_obj = $(patsubst %.c,$(FUZZ_T_B)/obj/%.o,$(1))
FUZZ_T_OBJS := $(sort $(foreach t,$(FUZZ_MORE),$(call fuzz_t_obj,$(fuzz-src-$(t)))))
$(filter $(FUZZ_T_B)/obj/hyp/%,$(FUZZ_T_OBJS)): FUZZ_T_EXTRA := $(FUZZ_T_HYP_CFLAGS)

$(FUZZ_T_OBJS): $(FUZZ_T_B)/obj/%.o: %.c tests/fuzz/fuzz_host.h tests/fuzz/fuzz.mk \
		| fuzz-deps $(LIBFDT_SRC)/.done
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	@$(FUZZ_CC) $(FUZZ_T_CFLAGS) $(FUZZ_T_EXTRA) -MMD -MP -c -o $@ $<

$(FUZZ_T_LIBFDT): $(FUZZ_T_B)/libfdt/%.o: $(LIBFDT_SRC)/.done tests/fuzz/fuzz.mk | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  libfdt/$*.c"
	@$(FUZZ_CC) $(FUZZ_T_LIBFDT_CFLAGS) -c -o $@ $(LIBFDT_SRC)/$*.c

$(filter $(FUZZ_T_B)/libfdt-plain/fdt%,$(FUZZ_T_LIBFDT_PLAIN)): $(FUZZ_T_B)/libfdt-plain/%.o: \
		$(LIBFDT_SRC)/.done tests/fuzz/fuzz.mk | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  libfdt/$*.c (no coverage)"
	@$(FUZZ_CC) $(FUZZ_T_LIBFDT_PLAIN_CFLAGS) -c -o $@ $(LIBFDT_SRC)/$*.c

$(FUZZ_T_B)/libfdt-plain/fuzz_libfdt_memcmp.o: tests/fuzz/fuzz_libfdt_memcmp.c tests/fuzz/fuzz.mk \
		| fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	@$(FUZZ_CC) $(filter-out -fsanitize=fuzzer-no-link,$(FUZZ_CFLAGS)) -c -o $@ $<

-include $(FUZZ_T_OBJS:.o=.d)

# fdt_check_full() (fdt_check.c) is not in the kernel's copy of libfdt: the
# guest DT target takes that one object from Debian's libfdt-dev (bookworm,
# installed here if missing, as fuzz-deps installs clang). Not instrumented;
# what it calls resolves to the target's own libfdt above.
FUZZ_T_FDT_CHECK := $(FUZZ_T_B)/libfdt/fdt_check.o
$(FUZZ_T_FDT_CHECK): | fuzz-deps
	@a=$$(gcc -print-file-name=libfdt.a); \
	if [ ! -f "$$a" ]; then \
		SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		echo "[fuzz] installing libfdt-dev (fdt_check_full) from Debian"; \
		$$SUDO apt-get update -q >/dev/null && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q \
			--no-install-recommends libfdt-dev >/dev/null || \
			{ echo "[fuzz] error: apt-get install libfdt-dev failed" >&2; exit 1; }; \
		a=$$(gcc -print-file-name=libfdt.a); \
	fi; \
	mkdir -p $(dir $@) && cd $(dir $@) && ar x "$$a" fdt_check.o

# $(1): the target's name
define fuzz_more_rules
$(FUZZ_B)/fuzz_$(1): $(call fuzz_t_obj,$(fuzz-src-$(1))) \
		$(if $(filter plain,$(fuzz-libfdt-$(1))),$(FUZZ_T_LIBFDT_PLAIN),$(if $(fuzz-libfdt-$(1)),$(FUZZ_T_LIBFDT))) \
		$(fuzz-extra-$(1))
	@echo "  FUZZLD  $$@"
	@$$(FUZZ_CC) $$(FUZZ_LDFLAGS) -o $$@ $$^

.PHONY: fuzz-$(1) fuzz-$(1)-short fuzz-$(1)-long
fuzz-$(1): $(FUZZ_B)/fuzz_$(1)

fuzz-$(1)-short: $(FUZZ_B)/fuzz_$(1)
	@rm -rf $(FUZZ_B)/short-$(1) && mkdir -p $(FUZZ_B)/short-$(1)/corpus
	@echo "-- fuzz: $(1), $(fuzz-short-$(1)) runs over tests/fuzz/corpus/$(1)"
	@$$(FUZZ_ENV) $(FUZZ_B)/fuzz_$(1) $(fuzz-opts-$(1)) -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -runs=$(fuzz-short-$(1)) -seed=1 \
		-artifact_prefix=$(FUZZ_B)/short-$(1)/ $(FUZZ_B)/short-$(1)/corpus \
		tests/fuzz/corpus/$(1) > $(FUZZ_B)/short-$(1)/log 2>&1; rc=$$$$?; \
	grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|Done )' \
		$(FUZZ_B)/short-$(1)/log; \
	if [ $$$$rc -ne 0 ]; then \
		tail -n 60 $(FUZZ_B)/short-$(1)/log; \
		echo "FAIL: fuzz: $(1) (exit status $$$$rc; reproducer: $$$$(ls $(FUZZ_B)/short-$(1)/crash-* \
			$(FUZZ_B)/short-$(1)/leak-* $(FUZZ_B)/short-$(1)/timeout-* \
			$(FUZZ_B)/short-$(1)/oom-* 2>/dev/null))"; \
		exit 1; \
	fi; \
	echo "PASS: fuzz: $(1)"

fuzz-$(1)-long: $(FUZZ_B)/fuzz_$(1)
	@mkdir -p $(FUZZ_B)/long-$(1)/corpus
	@echo "-- fuzz: $(1), $$(FUZZ_LONG_RUNS) runs (log: $(FUZZ_B)/long-$(1)/log)"
	@$$(FUZZ_ENV) $(FUZZ_B)/fuzz_$(1) $(fuzz-opts-$(1)) -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -runs=$$(FUZZ_LONG_RUNS) \
		-artifact_prefix=$(FUZZ_B)/long-$(1)/ $(FUZZ_B)/long-$(1)/corpus \
		tests/fuzz/corpus/$(1) > $(FUZZ_B)/long-$(1)/log 2>&1; rc=$$$$?; \
	grep -E '^(#[0-9]+[[:space:]]+DONE|stat::|Done )' $(FUZZ_B)/long-$(1)/log; \
	if [ $$$$rc -ne 0 ]; then \
		tail -n 60 $(FUZZ_B)/long-$(1)/log; \
		echo "FAIL: fuzz: $(1) long run (exit status $$$$rc)"; exit 1; \
	fi; \
	echo "PASS: fuzz: $(1) long run"
endef
$(foreach t,$(FUZZ_MORE),$(eval $(call fuzz_more_rules,$(t))))

# every short run, even after a failure; fails if one failed
.PHONY: fuzz-more-short
fuzz-more-short:
	@rc=0; for t in $(FUZZ_MORE); do \
		$(MAKE) --no-print-directory fuzz-$$t-short || rc=1; \
	done; exit $$rc
