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
