/* SPDX-License-Identifier: MIT */
/* CSR accessors. Host unit tests (HOST_TEST) route them to a fake CSR file. */
#ifndef ARCH_RISCV_CSR_H
#define ARCH_RISCV_CSR_H

#include <arch/riscv/encoding.h>

#define __csr_str(x) #x
#define __stringify(x) __csr_str(x)

#ifndef HOST_TEST
#define csr_read(csr)                                                         \
	({                                                                    \
		unsigned long __v;                                            \
		asm volatile("csrr %0, " __stringify(csr) : "=r"(__v)::"memory"); \
		__v;                                                          \
	})
#define csr_write(csr, val)                                                   \
	({                                                                    \
		unsigned long __w = (unsigned long)(val);                     \
		asm volatile("csrw " __stringify(csr) ", %0" ::"rK"(__w) : "memory"); \
	})
#define csr_swap(csr, val)                                                    \
	({                                                                    \
		unsigned long __x = (unsigned long)(val);                     \
		asm volatile("csrrw %0, " __stringify(csr) ", %1"             \
			     : "=r"(__x) : "rK"(__x) : "memory");             \
		__x;                                                          \
	})
#define csr_set(csr, val)                                                     \
	({                                                                    \
		unsigned long __s = (unsigned long)(val);                     \
		asm volatile("csrs " __stringify(csr) ", %0" ::"rK"(__s) : "memory"); \
	})
#define csr_clear(csr, val)                                                   \
	({                                                                    \
		unsigned long __c = (unsigned long)(val);                     \
		asm volatile("csrc " __stringify(csr) ", %0" ::"rK"(__c) : "memory"); \
	})
#else
unsigned long fake_csr_read(unsigned int csr);
void fake_csr_write(unsigned int csr, unsigned long val);
/* a device register store (an IMSIC page): to the test's hook, if any */
extern void (*fake_mmio_store32)(unsigned long long pa, unsigned int val);
#define csr_read(csr) fake_csr_read(csr)
#define csr_write(csr, val) fake_csr_write(csr, (unsigned long)(val))
#define csr_swap(csr, val)                                                    \
	({                                                                    \
		unsigned long __o = fake_csr_read(csr);                       \
		fake_csr_write(csr, (unsigned long)(val));                    \
		__o;                                                          \
	})
#define csr_set(csr, val) fake_csr_write(csr, fake_csr_read(csr) | (unsigned long)(val))
#define csr_clear(csr, val) fake_csr_write(csr, fake_csr_read(csr) & ~(unsigned long)(val))
#endif

#endif
