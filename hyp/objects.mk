# SPDX-License-Identifier: MIT
# Hypervisor objects, one line per directory (alphabetical within each).
hyp-objs-y += arch/hart.o arch/head.o arch/insn.o arch/sbi_client.o arch/trap.o arch/trap_fault.o arch/vcpu_switch.o
hyp-objs-y += cfi/cfi.o
hyp-objs-y += core/console.o core/entropy.o core/exit.o core/main.o core/monitor.o core/sched.o core/vcpu.o core/vm.o
hyp-objs-y += drivers/uart8250.o
hyp-objs-y += fdt/fdt_guest.o fdt/fdt_host.o
hyp-objs-y += lib/printf.o lib/string.o
hyp-objs-y += mm/gstage.o mm/guest_mem.o mm/mm.o
hyp-objs-y += vsbi/vsbi.o vsbi/vsbi_base.o vsbi/vsbi_dbcn.o vsbi/vsbi_debug.o vsbi/vsbi_fwft.o vsbi/vsbi_hsm.o \
	      vsbi/vsbi_ipi.o vsbi/vsbi_rfence.o vsbi/vsbi_srst.o vsbi/vsbi_time.o
hyp-objs-y += vdev/vplic.o vdev/vuart.o
