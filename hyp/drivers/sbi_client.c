/* SPDX-License-Identifier: MIT */
/* Firmware (OpenSBI) calls used by the hypervisor. */
#include <types.h>
#include <sbi_client.h>

struct sbiret sbi_ecall(unsigned long ext, unsigned long fid, unsigned long a0,
			unsigned long a1, unsigned long a2, unsigned long a3)
{
	register unsigned long r0 asm("a0") = a0;
	register unsigned long r1 asm("a1") = a1;
	register unsigned long r2 asm("a2") = a2;
	register unsigned long r3 asm("a3") = a3;
	register unsigned long r6 asm("a6") = fid;
	register unsigned long r7 asm("a7") = ext;

	asm volatile("ecall"
		     : "+r"(r0), "+r"(r1)
		     : "r"(r2), "r"(r3), "r"(r6), "r"(r7)
		     : "memory");
	return (struct sbiret){ (long)r0, (long)r1 };
}

long sbi_probe_extension(unsigned long ext)
{
	struct sbiret r = sbi_ecall(SBI_EXT_BASE, SBI_BASE_PROBE_EXT, ext, 0, 0, 0);

	return r.error ? 0 : r.value;
}

long sbi_hart_start(unsigned long hartid, unsigned long addr, unsigned long opaque)
{
	return sbi_ecall(SBI_EXT_HSM, SBI_HSM_HART_START, hartid, addr, opaque, 0).error;
}

long sbi_send_ipi(unsigned long hart_mask, unsigned long hart_mask_base)
{
	return sbi_ecall(SBI_EXT_IPI, SBI_IPI_SEND_IPI, hart_mask, hart_mask_base, 0, 0).error;
}

long sbi_set_timer(unsigned long stime)
{
	return sbi_ecall(SBI_EXT_TIME, SBI_TIME_SET_TIMER, stime, 0, 0, 0).error;
}

void sbi_system_shutdown(bool failure)
{
	sbi_ecall(SBI_EXT_SRST, SBI_SRST_SYSTEM_RESET, SBI_SRST_TYPE_SHUTDOWN,
		  failure ? SBI_SRST_REASON_SYSFAIL : SBI_SRST_REASON_NONE, 0, 0);
	for (;;)
		asm volatile("wfi");
}

long sbi_fwft_set(unsigned long feature, unsigned long value, unsigned long flags)
{
	return sbi_ecall(SBI_EXT_FWFT, SBI_FWFT_SET, feature, value, flags, 0).error;
}
