/* SPDX-License-Identifier: MIT */
/* SBI calls from the test guests: one raw ecall plus thin named wrappers. */
#ifndef GUEST_SBI_H
#define GUEST_SBI_H

#include <abi/sbi_defs.h>

struct sbiret {
	long error;
	long value;
};

struct sbiret sbi_ecall(unsigned long ext, unsigned long fid,
			unsigned long a0, unsigned long a1, unsigned long a2,
			unsigned long a3, unsigned long a4, unsigned long a5);

#define SBI_CALL0(e, f)			sbi_ecall(e, f, 0, 0, 0, 0, 0, 0)
#define SBI_CALL1(e, f, a)		sbi_ecall(e, f, a, 0, 0, 0, 0, 0)
#define SBI_CALL2(e, f, a, b)		sbi_ecall(e, f, a, b, 0, 0, 0, 0)
#define SBI_CALL3(e, f, a, b, c)	sbi_ecall(e, f, a, b, c, 0, 0, 0)

struct sbiret sbi_probe(unsigned long ext);
struct sbiret sbi_set_timer(unsigned long when);
struct sbiret sbi_send_ipi(unsigned long mask, unsigned long base);
struct sbiret sbi_hart_start(unsigned long hartid, unsigned long addr,
			     unsigned long opaque);
struct sbiret sbi_hart_stop(void);
struct sbiret sbi_hart_status(unsigned long hartid);
struct sbiret sbi_hart_suspend(unsigned long type, unsigned long addr,
			       unsigned long opaque);
struct sbiret sbi_system_reset(unsigned long type, unsigned long reason);
struct sbiret sbi_dbcn_write(unsigned long len, unsigned long lo,
			     unsigned long hi);
struct sbiret sbi_dbcn_read(unsigned long len, unsigned long lo,
			    unsigned long hi);
struct sbiret sbi_dbcn_write_byte(unsigned char c);

#endif
