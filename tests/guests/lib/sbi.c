/* SPDX-License-Identifier: MIT */
/* SBI ecall wrappers for the test guests. */
#include "guest.h"
#include "sbi.h"

struct sbiret sbi_ecall(unsigned long ext, unsigned long fid,
			unsigned long a0, unsigned long a1, unsigned long a2,
			unsigned long a3, unsigned long a4, unsigned long a5)
{
	register unsigned long r0 __asm__("a0") = a0;
	register unsigned long r1 __asm__("a1") = a1;
	register unsigned long r2 __asm__("a2") = a2;
	register unsigned long r3 __asm__("a3") = a3;
	register unsigned long r4 __asm__("a4") = a4;
	register unsigned long r5 __asm__("a5") = a5;
	register unsigned long r6 __asm__("a6") = fid;
	register unsigned long r7 __asm__("a7") = ext;
	struct sbiret ret;

	/* "memory": SBI may read (DBCN write) or write (DBCN read) our buffers. */
	__asm__ volatile("ecall"
			 : "+r"(r0), "+r"(r1)
			 : "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6), "r"(r7)
			 : "memory");
	ret.error = (long)r0;
	ret.value = (long)r1;
	return ret;
}

struct sbiret sbi_probe(unsigned long ext)
{
	return SBI_CALL1(SBI_EXT_BASE, SBI_BASE_PROBE_EXT, ext);
}

struct sbiret sbi_set_timer(unsigned long when)
{
	return SBI_CALL1(SBI_EXT_TIME, SBI_TIME_SET_TIMER, when);
}

struct sbiret sbi_send_ipi(unsigned long mask, unsigned long base)
{
	return SBI_CALL2(SBI_EXT_IPI, SBI_IPI_SEND_IPI, mask, base);
}

struct sbiret sbi_hart_start(unsigned long hartid, unsigned long addr,
			     unsigned long opaque)
{
	return SBI_CALL3(SBI_EXT_HSM, SBI_HSM_HART_START, hartid, addr, opaque);
}

struct sbiret sbi_hart_stop(void)
{
	return SBI_CALL0(SBI_EXT_HSM, SBI_HSM_HART_STOP);
}

struct sbiret sbi_hart_status(unsigned long hartid)
{
	return SBI_CALL1(SBI_EXT_HSM, SBI_HSM_HART_GET_STATUS, hartid);
}

struct sbiret sbi_hart_suspend(unsigned long type, unsigned long addr,
			       unsigned long opaque)
{
	return SBI_CALL3(SBI_EXT_HSM, SBI_HSM_HART_SUSPEND, type, addr, opaque);
}

struct sbiret sbi_system_reset(unsigned long type, unsigned long reason)
{
	return SBI_CALL2(SBI_EXT_SRST, SBI_SRST_SYSTEM_RESET, type, reason);
}

struct sbiret sbi_dbcn_write(unsigned long len, unsigned long lo,
			     unsigned long hi)
{
	return SBI_CALL3(SBI_EXT_DBCN, SBI_DBCN_WRITE, len, lo, hi);
}

struct sbiret sbi_dbcn_read(unsigned long len, unsigned long lo,
			    unsigned long hi)
{
	return SBI_CALL3(SBI_EXT_DBCN, SBI_DBCN_READ, len, lo, hi);
}

struct sbiret sbi_dbcn_write_byte(unsigned char c)
{
	return SBI_CALL1(SBI_EXT_DBCN, SBI_DBCN_WRITE_BYTE, c);
}
