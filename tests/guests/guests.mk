# SPDX-License-Identifier: MIT
# Test guests: each tests/guests/<name>.c + lib/ -> build/guests/<name>.{elf,bin}.
# Included by the top Makefile; paths are relative to the repo root.
CROSS ?= riscv64-unknown-elf-
GUEST_CC := $(CROSS)gcc
GUEST_OBJCOPY := $(CROSS)objcopy
GUEST_OUT := build/guests
GUEST_OBJ := $(GUEST_OUT)/obj
GUEST_LD := tests/guests/lib/guest.ld
# no-tree-loop-distribute-patterns: keep GCC from turning memset() into a call to itself.
GUEST_CFLAGS := -march=rv64gc -mabi=lp64d -mcmodel=medany -ffreestanding -nostdlib \
	-O2 -Wall -Wextra -Werror -I include -I tests/guests/lib \
	-std=gnu11 -g -fno-tree-loop-distribute-patterns
GUEST_LDFLAGS := -T $(GUEST_LD) -static -Wl,--no-warn-rwx-segments -Wl,--build-id=none

GUEST_NAMES := $(basename $(notdir $(wildcard tests/guests/*.c)))
GUEST_LIB_SRCS := $(wildcard tests/guests/lib/*.c tests/guests/lib/*.S)
GUEST_LIB_OBJS := $(patsubst tests/guests/%,$(GUEST_OBJ)/%.o,$(GUEST_LIB_SRCS))
GUEST_ELFS := $(GUEST_NAMES:%=$(GUEST_OUT)/%.elf)
GUEST_BINS := $(GUEST_NAMES:%=$(GUEST_OUT)/%.bin)

.PHONY: guests
guests: $(GUEST_BINS) $(GUEST_ELFS)
# Objects are only named in pattern rules; keep make from deleting them.
.SECONDARY: $(GUEST_LIB_OBJS) $(GUEST_NAMES:%=$(GUEST_OBJ)/%.c.o) $(GUEST_ELFS)

# GUEST_CFLAGS_<name> (e.g. GUEST_CFLAGS_demo := -DDEMO_COUNT=20) adds per-payload flags.
$(GUEST_OBJ)/%.c.o: tests/guests/%.c
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) $(GUEST_CFLAGS_$*) -MMD -MP -c -o $@ $<

$(GUEST_OBJ)/%.S.o: tests/guests/%.S
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -D__ASSEMBLER__ -MMD -MP -c -o $@ $<

$(GUEST_OUT)/%.elf: $(GUEST_OBJ)/%.c.o $(GUEST_LIB_OBJS) $(GUEST_LD)
	$(GUEST_CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $< $(GUEST_LIB_OBJS) -lgcc

$(GUEST_OUT)/%.bin: $(GUEST_OUT)/%.elf
	$(GUEST_OBJCOPY) -O binary $< $@

-include $(GUEST_LIB_OBJS:.o=.d) $(GUEST_NAMES:%=$(GUEST_OBJ)/%.c.d)
bench-payloads: $(GUEST_OUT)/dirtier.bin $(GUEST_OUT)/disk_gen.bin	# scripts/bench.py live_snapshot(), disk_move()
