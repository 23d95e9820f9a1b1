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
# The real hyp/snap/snap_load.c, snap_state.c, cfi.c, crc32c.c and device
# models are compiled with -DHOST_TEST; tests/fuzz/fuzz_snap_load.c stubs the
# rest. A crash leaves $(B)/fuzz/{short,long}/crash-* (or leak-*, timeout-*,
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

FUZZ_SNAP_SRC := tests/fuzz/fuzz_snap_load.c tests/unit/fake_csr.c \
	hyp/snap/snap_load.c hyp/snap/snap_state.c hyp/cfi/cfi.c hyp/lib/crc32c.c \
	hyp/vdev/vuart.c hyp/vdev/vplic.c hyp/vdev/vmgenid.c hyp/vdev/devices.c \
	hyp/vmm/pmu.c hyp/vmm/pmu_logic.c hyp/vmm/steal_time.c
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
FUZZ_COV_SHOW := hyp/snap/snap_load.c hyp/snap/snap_state.c hyp/vdev/vuart.c hyp/vdev/vplic.c \
	hyp/vdev/vmgenid.c hyp/lib/crc32c.c
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
