# SPDX-License-Identifier: MIT
# QEMU virt: CPU model, firmware, and the flags every Carapace run uses.
PLATFORM_QEMU_CPU ?= rv64,h=true,zicfilp=true,zicfiss=true,zimop=true,zcmop=true,sstc=true,svadu=true,smstateen=true
PLATFORM_LOAD_ADDR := 0x80200000
# The hypervisor never touches FP itself; guests' FP state is switched in vcpu_switch.S.
PLATFORM_MARCH := rv64imac_zicsr_zifencei
PLATFORM_MABI := lp64
