# SPDX-License-Identifier: MIT
# Host unit tests of the hypervisor's pure logic (included by the top Makefile).
#   make test-unit                     build build/unit/test_* and run them all
#   build/unit/test_mm [SUBSTR...]     run one binary (or some of its tests)
# Uses B and LIBFDT_SRC from the top Makefile. Code under test is compiled for
# the host with -DHOST_TEST (CSRs go to tests/unit/fake_csr.c) and sanitizers;
# libfdt is compiled from $(LIBFDT_SRC), never copied into the repository.
HOSTCC ?= gcc
UNIT_B := $(B)/unit
UNIT_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
UNIT_CFLAGS := -std=gnu11 -DHOST_TEST $(UNIT_SAN) -g -O1 -Wall -Wextra -Werror \
	-Iinclude -Ihyp/include -Iplatform/$(PLATFORM)/include -I$(LIBFDT_SRC)
UNIT_LIBFDT_CFLAGS := -std=gnu11 $(UNIT_SAN) -g -O1 -w -I$(LIBFDT_SRC)
# fdt_property(fdt, name, NULL, 0) (an empty property, as hyp/fdt/fdt_guest.c
# writes "interrupt-controller") makes libfdt call memcpy(p, NULL, 0): not
# reported inside libfdt, which is third-party code built with -w anyway.
UNIT_LIBFDT_CFLAGS += -fno-sanitize=nonnull-attribute
UNIT_LDFLAGS := $(UNIT_SAN)

UNIT_TESTS := test_mm test_gstage test_fdt_host test_vsbi test_printf
UNIT_TESTS += test_insn test_fdt_guest test_json test_tlb test_snap test_susp
UNIT_COMMON := tests/unit/main.c tests/unit/fake_csr.c

# hyp sources each binary tests (and libfdt where it needs it)
unit-src-test_mm := hyp/mm/mm.c hyp/mm/mm_ranges.c
unit-src-test_gstage := hyp/mm/gstage.c
unit-src-test_fdt_host := hyp/fdt/fdt_host.c hyp/drivers/pci_host.c
unit-src-test_vsbi := hyp/vsbi/vsbi.c hyp/lib/hartmask.c hyp/vsbi/vsbi_fwft.c hyp/state/fwft.c hyp/state/cfi_state.c \
	hyp/cfi/lp_redeliver.c hyp/cfi/violation.c \
	hyp/cfi/swcheck.c hyp/drivers/host_ipi.c hyp/drivers/imsic_host.c hyp/lib/imsic_file.c \
	tests/unit/fake_imsic.c
unit-src-test_susp := hyp/vsbi/vsbi_susp.c hyp/vsbi/vsbi_hsm.c
unit-src-test_printf := hyp/lib/printf.c
unit-src-test_json := hyp/lib/json.c
unit-src-test_tlb := hyp/mm/tlb.c hyp/mm/vmid.c
unit-src-test_snap := hyp/snap/snap_state.c hyp/snap/snap_record.c hyp/state/dbtr_record.c hyp/state/dbtr_word.c hyp/state/cfi_state.c hyp/state/fwft.c hyp/lib/crc32c.c hyp/state/pmu_logic.c hyp/state/pmu.c \
	hyp/state/vimsic.c hyp/lib/imsic_file.c hyp/drivers/imsic_host.c \
	hyp/vsbi/vsbi_hsm.c hyp/vsbi/vsbi_sta.c
unit-libfdt-test_fdt_host := y
# counts the host DT parser's phandle lookups (each walks the whole tree)
unit-ldflags-test_fdt_host := -Wl,--wrap=fdt_node_offset_by_phandle
unit-src-test_insn := hyp/arch/insn.c
# the hypervisor's own page tables, built into a buffer and walked
UNIT_TESTS += test_hyp_map
unit-src-test_hyp_map := hyp/mm/hyp_map.c
UNIT_TESTS += test_misaligned
unit-src-test_misaligned := hyp/arch/ldst_decode.c hyp/dispatch/misaligned.c
UNIT_TESTS += test_dbtr
unit-src-test_dbtr := hyp/state/dbtr_word.c
UNIT_TESTS += test_sta
unit-src-test_sta := hyp/vsbi/vsbi_sta.c hyp/state/steal_time.c
UNIT_TESTS += test_pmu
unit-src-test_pmu := hyp/state/pmu_logic.c hyp/state/pmu.c hyp/vsbi/vsbi_pmu.c
# The restore of crafted records runs the real loader on the fuzz targets'
# stub host (tests/fuzz/fuzz_restore_host.c), the same stubs both fuzzers use.
# an interrupt line a device model drives: to the VM's PLIC or APLIC (virq.c)
UNIT_VIRQ_SRC := hyp/vdev/virq.c hyp/vdev/vaplic.c hyp/state/vimsic.c hyp/lib/aplic_model.c \
	hyp/lib/imsic_file.c hyp/drivers/imsic_host.c
UNIT_TESTS += test_snap_legal
unit-src-test_snap_legal := tests/fuzz/fuzz_restore_host.c tests/fuzz/fuzz_clock_log.c \
	hyp/snap/snap_load.c hyp/snap/snap_disk_load.c hyp/snap/snap_disk_id.c hyp/snap/section_rx.c hyp/snap/snap_admit.c hyp/snap/snap_state.c hyp/snap/snap_record.c hyp/state/cfi_state.c \
	hyp/state/dbtr_record.c hyp/state/dbtr_word.c \
	hyp/lib/crc32c.c hyp/vdev/vuart.c hyp/vdev/vplic.c hyp/vdev/vmgenid.c hyp/vdev/devices.c $(UNIT_VIRQ_SRC) \
	hyp/state/pmu.c hyp/state/pmu_logic.c hyp/state/steal_time.c hyp/state/vcpu_reset.c hyp/state/fwft.c \
	hyp/vsbi/vsbi_hsm.c hyp/vsbi/vsbi_sta.c \
	hyp/snap/snap_vio.c hyp/vdev/vio_mmio.c hyp/vdev/vblk.c hyp/vdev/vnet.c hyp/vdev/virtq.c \
	hyp/vdev/vswitch.c
# VIRTIO sections through the same loader and stub host, with the real
# device models behind them
UNIT_TESTS += test_snap_vio
unit-src-test_snap_vio := $(unit-src-test_snap_legal)
# the operator's pause and resume over stubbed VM lifecycle and devices
UNIT_TESTS += test_vmops
unit-src-test_vmops := hyp/host/vmops.c
UNIT_TESTS += test_guest_time
unit-src-test_guest_time := hyp/state/vcpu_wake.c
UNIT_TESTS += test_vm_events
unit-src-test_vm_events := hyp/state/vm_events.c
UNIT_TESTS += test_console
unit-src-test_console := hyp/host/console.c hyp/lib/console_filter.c
UNIT_TESTS += test_entropy
unit-src-test_entropy := hyp/lib/entropy.c
UNIT_TESTS += test_vcpu_request
unit-src-test_vcpu_request := hyp/state/vcpu_request.c
UNIT_TESTS += test_string
unit-src-test_string := hyp/lib/string.c
UNIT_TESTS += test_crc32c
unit-src-test_crc32c := hyp/lib/crc32c.c
UNIT_TESTS += test_token_bucket
unit-src-test_token_bucket := hyp/lib/token_bucket.c
UNIT_TESTS += test_dirty_limit
unit-src-test_dirty_limit := hyp/state/dirty_limit.c
UNIT_TESTS += test_pci_host
unit-src-test_pci_host := hyp/drivers/pci_host.c
UNIT_TESTS += test_plic_host
unit-src-test_plic_host := hyp/drivers/plic_host.c hyp/drivers/host_irq.c
UNIT_TESTS += test_fdt_host_aia
unit-src-test_fdt_host_aia := hyp/fdt/fdt_host.c hyp/drivers/pci_host.c
unit-libfdt-test_fdt_host_aia := y
UNIT_TESTS += test_fdt_host_aclint
unit-src-test_fdt_host_aclint := hyp/fdt/fdt_host.c hyp/drivers/pci_host.c
unit-libfdt-test_fdt_host_aclint := y
UNIT_TESTS += test_aplic_host
unit-src-test_aplic_host := hyp/drivers/aplic_host.c hyp/drivers/imsic_host.c \
	hyp/drivers/host_irq.c tests/unit/fake_imsic.c hyp/lib/imsic_file.c
UNIT_TESTS += test_host_ipi
unit-src-test_host_ipi := hyp/drivers/host_ipi.c hyp/drivers/imsic_host.c hyp/lib/imsic_file.c \
	tests/unit/fake_imsic.c
UNIT_TESTS += test_imsic_host
unit-src-test_imsic_host := hyp/drivers/imsic_host.c hyp/lib/imsic_file.c tests/unit/fake_imsic.c
UNIT_TESTS += test_imsic_file
unit-src-test_imsic_file := hyp/lib/imsic_file.c
UNIT_TESTS += test_aplic_model
unit-src-test_aplic_model := hyp/lib/aplic_model.c
UNIT_TESTS += test_vcon
unit-src-test_vcon := hyp/drivers/virtio_console.c hyp/drivers/split_ring.c
unit-libfdt-test_vcon := y
UNIT_TESTS += test_hostio
unit-src-test_hostio := tests/unit/fake_vpci.c hyp/drivers/virtio_pci.c hyp/drivers/split_ring.c \
	hyp/drivers/hostblk.c hyp/drivers/hostnet.c
UNIT_TESTS += test_mgmt
unit-src-test_mgmt := hyp/host/mgmt.c hyp/lib/json.c
UNIT_TESTS += test_section_stream
unit-src-test_section_stream := hyp/snap/section_tx.c hyp/snap/section_rx.c hyp/migrate/mig_wire.c \
	hyp/lib/crc32c.c
UNIT_TESTS += test_guest_mem
unit-src-test_guest_mem := tests/unit/host_memory.c hyp/mm/guest_mem.c hyp/mm/dirty_log.c hyp/mm/gstage.c
# the test looks at the G-stage tables around every call guest_mem.c and
# dirty_log.c make into gstage.c
unit-ldflags-test_guest_mem := -Wl,--wrap=gstage_map,--wrap=gstage_map_2m_split \
	-Wl,--wrap=gstage_split_2m,--wrap=gstage_merge_2m
UNIT_TESTS += test_virtq
unit-src-test_virtq := tests/unit/host_memory.c hyp/vdev/virtq.c hyp/mm/guest_mem.c hyp/mm/dirty_log.c hyp/mm/gstage.c
# a guest rewriting a descriptor right after the walker copied it: the test
# acts when the walker checks that descriptor's buffer
unit-ldflags-test_virtq := -Wl,--wrap=vm_gpa_range_is_ram
UNIT_TESTS += test_vio
unit-src-test_vio := tests/unit/host_memory.c hyp/vdev/vio_mmio.c hyp/vdev/vblk.c hyp/vdev/vnet.c \
	hyp/vdev/virtq.c hyp/vdev/mmio.c hyp/mm/guest_mem.c hyp/mm/dirty_log.c hyp/mm/gstage.c
UNIT_TESTS += test_vimsic
unit-src-test_vimsic := hyp/lib/csr_insn.c hyp/lib/imsic_file.c hyp/lib/aplic_model.c \
	hyp/state/vimsic.c hyp/vdev/vimsic_csr.c hyp/vdev/vimsic_mmio.c hyp/vdev/vaplic.c \
	hyp/vdev/virq.c hyp/vdev/mmio.c hyp/drivers/imsic_host.c tests/unit/fake_imsic.c
UNIT_TESTS += test_vplic
unit-src-test_vplic := tests/unit/host_memory.c hyp/vdev/vplic.c hyp/vdev/mmio.c hyp/mm/guest_mem.c \
	hyp/mm/dirty_log.c hyp/mm/gstage.c
UNIT_TESTS += test_snap_save
unit-src-test_snap_save := tests/unit/fake_snap_host.c tests/unit/host_memory.c hyp/snap/snap_save.c hyp/snap/snap_disk_save.c hyp/snap/snap_disk_id.c hyp/snap/section_tx.c hyp/snap/snap_emit.c hyp/mm/guest_mem.c hyp/mm/dirty_log.c \
	hyp/mm/gstage.c hyp/state/vm_state.c hyp/state/vm_events.c hyp/lib/crc32c.c
# the migration's source driven as the host services drive it, the test
# playing the destination on the stream port (the host: fake_snap_host.c)
UNIT_TESTS += test_mig_send
unit-src-test_mig_send := tests/unit/fake_snap_host.c tests/unit/host_memory.c hyp/migrate/mig_send.c hyp/state/dirty_limit.c \
	hyp/migrate/mig_wire.c hyp/snap/snap_disk_save.c hyp/snap/section_tx.c hyp/snap/section_rx.c \
	hyp/snap/snap_emit.c hyp/mm/guest_mem.c hyp/mm/dirty_log.c hyp/mm/gstage.c hyp/lib/crc32c.c \
	hyp/lib/printf.c
UNIT_TESTS += test_vswitch
unit-src-test_vswitch := hyp/vdev/vswitch.c
unit-ldflags-test_vswitch := -pthread
# the rng-seed comes from the caller: hyp/lib/entropy.c is not linked; the test
# defines hart_caps and timebase_hz itself.
unit-src-test_fdt_guest := hyp/fdt/fdt_guest.c hyp/state/cfi_state.c hyp/lib/printf.c
unit-libfdt-test_fdt_guest := y

UNIT_LIBFDT_NAMES := fdt fdt_ro fdt_rw fdt_sw fdt_wip fdt_strerror fdt_addresses fdt_empty_tree
UNIT_LIBFDT_OBJS := $(addprefix $(UNIT_B)/libfdt/,$(addsuffix .o,$(UNIT_LIBFDT_NAMES)))
unit_obj = $(patsubst %.c,$(UNIT_B)/obj/%.o,$(1))

# hyp/lib/printf.c defines snprintf/vsnprintf: rename them so the host libc's
# (used by the test runner and the sanitizers) stay untouched.
$(call unit_obj,hyp/lib/printf.c tests/unit/test_printf.c): \
	UNIT_EXTRA_CFLAGS := -Dsnprintf=hyp_snprintf -Dvsnprintf=hyp_vsnprintf
$(call unit_obj,hyp/fdt/fdt_guest.c): \
	UNIT_EXTRA_CFLAGS := -Dsnprintf=hyp_snprintf -Dvsnprintf=hyp_vsnprintf
# mig_send.c truncates the peer's ABORT message on purpose: the hypervisor's
# snprintf, which the host compiler does not warn about
$(call unit_obj,hyp/migrate/mig_send.c): \
	UNIT_EXTRA_CFLAGS := -Dsnprintf=hyp_snprintf -Dvsnprintf=hyp_vsnprintf
# hyp/lib/string.c defines what the host libc does: renamed beside it, and no
# loop turned into a call of the libc's memcpy or memset.
$(call unit_obj,hyp/lib/string.c): UNIT_EXTRA_CFLAGS := -fno-builtin \
	-fno-tree-loop-distribute-patterns $(foreach f,memcpy memmove memset memcmp memchr \
	strlen strnlen strcmp strncmp strchr strrchr strtoul,-D$(f)=hyp_$(f))
# test_fdt_host_aia's fixture, compiled by dtc and linked in with .incbin
$(UNIT_B)/aia_host.dtb: tests/unit/aia_host.dts
	@mkdir -p $(dir $@)
	@echo "  DTC     $<"
	@dtc -q -I dts -O dtb -o $@ $<
$(call unit_obj,tests/unit/test_fdt_host_aia.c): $(UNIT_B)/aia_host.dtb
$(call unit_obj,tests/unit/test_fdt_host_aia.c): \
	UNIT_EXTRA_CFLAGS := -DAIA_HOST_DTB='"$(UNIT_B)/aia_host.dtb"'
# test_fdt_host_aclint's fixture, the same way
$(UNIT_B)/aclint_host.dtb: tests/unit/aclint_host.dts
	@mkdir -p $(dir $@)
	@echo "  DTC     $<"
	@dtc -q -I dts -O dtb -o $@ $<
$(call unit_obj,tests/unit/test_fdt_host_aclint.c): $(UNIT_B)/aclint_host.dtb
$(call unit_obj,tests/unit/test_fdt_host_aclint.c): \
	UNIT_EXTRA_CFLAGS := -DACLINT_HOST_DTB='"$(UNIT_B)/aclint_host.dtb"'
# char is unsigned on RISC-V: test the console code as the target compiles it
# (a signed char hid raw bytes 0x80-0xff from a `c < 0x20` test on x86).
$(call unit_obj,hyp/host/console.c hyp/lib/console_filter.c tests/unit/test_console.c): \
	UNIT_EXTRA_CFLAGS := -funsigned-char

UNIT_OBJS := $(sort $(call unit_obj,$(UNIT_COMMON) \
	$(foreach t,$(UNIT_TESTS),tests/unit/$(t).c $(unit-src-$(t)))))

# static pattern rules: they apply to these objects only, never to .d files
$(UNIT_OBJS): $(UNIT_B)/obj/%.o: %.c | $(LIBFDT_SRC)/.done
	@mkdir -p $(dir $@)
	@echo "  HOSTCC  $<"
	@$(HOSTCC) $(UNIT_CFLAGS) $(UNIT_EXTRA_CFLAGS) -MMD -MP -c -o $@ $<

$(UNIT_LIBFDT_OBJS): $(UNIT_B)/libfdt/%.o: $(LIBFDT_SRC)/%.c | $(LIBFDT_SRC)/.done
	@mkdir -p $(dir $@)
	@echo "  HOSTCC  libfdt/$*.c"
	@$(HOSTCC) $(UNIT_LIBFDT_CFLAGS) -MMD -MP -c -o $@ $<
# rebuilt when UNIT_LIBFDT_CFLAGS changes
$(UNIT_LIBFDT_OBJS): tests/unit/unit.mk

# the libfdt sources come with the fetched tree
$(addprefix $(LIBFDT_SRC)/,$(addsuffix .c,$(UNIT_LIBFDT_NAMES))): | $(LIBFDT_SRC)/.done ;

define unit_bin_rule
$(UNIT_B)/$(1): $(call unit_obj,tests/unit/$(1).c $(UNIT_COMMON) $(unit-src-$(1))) \
		$(if $(unit-libfdt-$(1)),$(UNIT_LIBFDT_OBJS))
	@echo "  HOSTLD  $$@"
	@$$(HOSTCC) $$(UNIT_LDFLAGS) $$(unit-ldflags-$(1)) -o $$@ $$^
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call unit_bin_rule,$(t))))

-include $(patsubst %.o,%.d,$(UNIT_OBJS) $(UNIT_LIBFDT_OBJS))

# Each binary prints PASS/FAIL lines and "N passed, M failed"; a binary that
# dies without its summary line (or exits non-zero despite it) counts one failure.
.PHONY: test-unit
test-unit: $(addprefix $(UNIT_B)/,$(UNIT_TESTS))
	@pass=0; fail=0; \
	for t in $(UNIT_TESTS); do \
		echo "-- unit: $$t"; \
		ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1} \
		UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1} \
			$(UNIT_B)/$$t > $(UNIT_B)/$$t.log 2>&1; rc=$$?; \
		cat $(UNIT_B)/$$t.log; \
		sum=$$(grep -E '^[0-9]+ passed, [0-9]+ failed$$' $(UNIT_B)/$$t.log | tail -n 1); \
		if [ -z "$$sum" ]; then \
			echo "FAIL: unit: $$t (exit status $$rc, no summary)"; fail=$$((fail + 1)); \
			continue; \
		fi; \
		p=$${sum%% passed*}; f=$${sum#*, }; f=$${f%% failed}; \
		if [ $$rc -ne 0 ] && [ $$f -eq 0 ]; then \
			echo "FAIL: unit: $$t (exit status $$rc)"; f=1; \
		fi; \
		pass=$$((pass + p)); fail=$$((fail + f)); \
	done; \
	echo "unit: $$pass passed, $$fail failed"; \
	[ $$fail -eq 0 ]
