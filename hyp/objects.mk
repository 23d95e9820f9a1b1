# SPDX-License-Identifier: MIT
# Hypervisor objects, one line per directory (alphabetical within each).
# Layers, lowest first (scripts/depgraph.py checks that no file depends on a
# file that depends back on it): lib, drivers, arch -> mm -> vmm state (vcpu,
# vm_state, sched, trap_inject) -> cfi, vdev, vsbi, fdt -> vmm dispatch (exit),
# lifecycle (vm) -> run loop (vcpu_run) -> host services -> boot.
hyp-objs-y += arch/hart.o arch/head.o arch/insn.o arch/sbi_client.o arch/spelp_probe.o arch/trap.o \
	      arch/trap_fault.o arch/vcpu_enter.o arch/vcpu_switch.o
hyp-objs-y += boot/main.o
hyp-objs-y += cfi/cfi.o cfi/lp_redeliver.o cfi/spelp_selftest.o cfi/swcheck.o cfi/violation.o
hyp-objs-y += drivers/uart8250.o drivers/virtio_console.o
hyp-objs-y += fdt/fdt_guest.o fdt/fdt_host.o
hyp-objs-y += host/console.o host/mgmt.o host/monitor.o host/services.o host/vmops.o
hyp-objs-y += lib/console_filter.o lib/crc32c.o lib/entropy.o lib/json.o lib/log.o lib/printf.o lib/string.o
hyp-objs-y += migrate/mig_recv.o migrate/mig_send.o migrate/mig_wire.o
hyp-objs-y += mm/dirty_log.o mm/gstage.o mm/guest_mem.o mm/mm.o mm/mm_ranges.o mm/tlb.o mm/vmid.o
hyp-objs-y += snap/snap_admit.o snap/snap_record.o snap/snap_load.o snap/snap_port.o snap/snap_save.o snap/snap_state.o
hyp-objs-y += vdev/devices.o vdev/mmio.o vdev/vmgenid.o vdev/vplic.o vdev/vuart.o
hyp-objs-y += vmm/exit.o vmm/sched.o vmm/trap_inject.o vmm/vcpu.o vmm/vcpu_request.o \
	      vmm/vcpu_reset.o vmm/vcpu_run.o vmm/vcpu_wake.o vmm/vm.o vmm/vm_events.o vmm/vm_state.o \
	      vmm/vm_table.o
hyp-objs-y += vsbi/hartmask.o vsbi/vsbi.o vsbi/vsbi_dbcn.o vsbi/vsbi_debug.o vsbi/vsbi_fwft.o \
	      vsbi/vsbi_hsm.o vsbi/vsbi_ipi.o vsbi/vsbi_rfence.o vsbi/vsbi_srst.o vsbi/vsbi_susp.o \
	      vsbi/vsbi_time.o
hyp-objs-y += vmm/pmu.o vmm/pmu_logic.o vsbi/vsbi_pmu.o	# guest PMU (three layers: pure, live, SBI)
hyp-objs-y += vmm/steal_time.o vsbi/vsbi_sta.o	# SBI STA: steal-time accounting, its SBI call
