# SPDX-License-Identifier: MIT
# Hypervisor objects, one line per directory (alphabetical within each). The
# directory a file is in is its layer: hyp/layers.txt lists them in order, and
# `make depcheck` (scripts/depgraph.py) fails on a file of no layer, on a file
# using one of a higher layer, and on any cycle.
hyp-objs-y += arch/hart.o arch/guest_fetch.o arch/hyp_cfi.o arch/insn.o arch/ldst_decode.o arch/fp_reg.o \
	      arch/cbo_zero.o arch/spelp_probe.o arch/trap.o arch/trap_fault.o \
	      arch/vcpu_enter.o
hyp-objs-y += boot/head.o boot/hostio_selftest.o boot/hyp_cfi_selftest.o boot/main.o \
	      boot/wx_selftest.o
hyp-objs-y += cfi/lp_redeliver.o cfi/spelp_selftest.o cfi/swcheck.o cfi/violation.o
hyp-objs-y += dispatch/exit.o dispatch/misaligned.o
hyp-objs-y += drivers/aplic_host.o drivers/host_irq.o drivers/hostblk.o drivers/hostnet.o \
	      drivers/host_ipi.o drivers/imsic_host.o drivers/pci_host.o drivers/plic_host.o drivers/sbi_client.o \
	      drivers/split_ring.o drivers/uart8250.o drivers/virtio_console.o drivers/virtio_pci.o
hyp-objs-y += fdt/fdt_guest.o fdt/fdt_host.o
hyp-objs-y += host/console.o host/host_io.o host/mgmt.o host/monitor.o host/services.o host/vmops.o
hyp-objs-y += lib/aplic_model.o lib/console_filter.o lib/crc32c.o lib/csr_insn.o lib/entropy.o lib/hartmask.o lib/imsic_file.o lib/json.o lib/log.o \
	      lib/printf.o lib/string.o lib/token_bucket.o
hyp-objs-y += lifecycle/vm_io.o lifecycle/vm_lifecycle.o
hyp-objs-y += migrate/mig_recv.o migrate/mig_send.o migrate/mig_wire.o
hyp-objs-y += mm/dirty_log.o mm/gstage.o mm/guest_mem.o mm/hyp_map.o mm/mm.o mm/mm_ranges.o mm/mm_zero.o mm/tlb.o mm/vmid.o
hyp-objs-y += run/vcpu_run.o run/vcpu_switch.o
hyp-objs-y += snap/section_rx.o snap/section_tx.o snap/snap_admit.o snap/snap_emit.o snap/snap_load.o snap/snap_port.o \
	      snap/snap_disk_id.o snap/snap_disk_load.o snap/snap_disk_save.o snap/snap_record.o snap/snap_save.o snap/snap_state.o snap/snap_vio.o
hyp-objs-y += state/cfi_state.o state/dirty_limit.o state/fwft.o state/sched.o state/trap_inject.o state/vcpu.o state/vcpu_request.o \
	      state/hart_service.o state/imsic_files.o state/vcpu_reset.o state/vcpu_wake.o state/vimsic.o state/vm_events.o state/vm_state.o state/vm_table.o
hyp-objs-y += vdev/devices.o vdev/mmio.o vdev/vblk.o vdev/vio_mmio.o vdev/virtq.o vdev/vmgenid.o \
	vdev/vaplic.o vdev/vimsic_csr.o vdev/vimsic_mmio.o \
	vdev/virq.o vdev/vnet.o vdev/vplic.o vdev/vswitch.o vdev/vuart.o
hyp-objs-y += vsbi/vsbi.o vsbi/vsbi_dbcn.o vsbi/vsbi_debug.o vsbi/vsbi_fwft.o vsbi/vsbi_hsm.o \
	      vsbi/vsbi_ipi.o vsbi/vsbi_rfence.o vsbi/vsbi_srst.o vsbi/vsbi_susp.o vsbi/vsbi_time.o
hyp-objs-y += state/pmu.o state/pmu_logic.o vsbi/vsbi_pmu.o	# guest PMU (three layers: pure, live, SBI)
hyp-objs-y += state/steal_time.o vsbi/vsbi_sta.o	# SBI STA: steal-time accounting, its SBI call
hyp-objs-y += state/dbtr_word.o state/dbtr_record.o state/dbtr.o vsbi/vsbi_dbtr.o	# SBI DBTR: words and snapshot record (pure), the hart, its SBI calls
