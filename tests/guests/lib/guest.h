/* SPDX-License-Identifier: MIT */
/* Test-guest basics: layout shared with crt0.S, CSR helpers, entry points. */
#ifndef GUEST_H
#define GUEST_H

#define MAX_HARTS	8	/* hart ids >= this park in crt0 */
#define STACK_SIZE	16384

/* Trap frame: x0..x31 (x0 slot unused), then the trap CSRs. */
#define TF_SEPC		(32 * 8)
#define TF_SSTATUS	(33 * 8)
#define TF_SCAUSE	(34 * 8)
#define TF_STVAL	(35 * 8)
#define TF_SIZE		(36 * 8)

#ifndef __ASSEMBLER__
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trap_frame {
	unsigned long regs[32];
	unsigned long sepc;
	unsigned long sstatus;
	unsigned long scause;
	unsigned long stval;
};

#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

#define __stringify_1(x)	#x
#define __stringify(x)		__stringify_1(x)

/* @csr may be a name (sstatus) or a number macro (CSR_STIMECMP). */
#define csr_read(csr) ({						\
	unsigned long __v;						\
	__asm__ volatile("csrr %0, " __stringify(csr) : "=r"(__v) :: "memory");	\
	__v; })
#define csr_write(csr, val)						\
	__asm__ volatile("csrw " __stringify(csr) ", %0" :: "rK"(val) : "memory")
#define csr_set(csr, val)						\
	__asm__ volatile("csrs " __stringify(csr) ", %0" :: "rK"(val) : "memory")
#define csr_clear(csr, val)						\
	__asm__ volatile("csrc " __stringify(csr) ", %0" :: "rK"(val) : "memory")

static inline unsigned long current_hartid(void)
{
	unsigned long tp;

	__asm__ volatile("mv %0, tp" : "=r"(tp));
	return tp;
}

/* A 64-bit mixing function: every input bit changes about half of the
 * output's (the payloads' patterns and busy work). */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	x ^= x >> 33;
	return x;
}

/* @len (a multiple of 8) bytes at @p, 8-byte aligned: the pattern of
 * @seed, and whether they still hold it (disk data the payloads verify). */
static inline void pattern_fill(uint8_t *p, uint32_t len, uint64_t seed)
{
	for (uint32_t i = 0; i < len; i += 8)
		*(uint64_t *)(p + i) = mix64(seed + i);
}

static inline bool pattern_same(const uint8_t *p, uint32_t len, uint64_t seed)
{
	for (uint32_t i = 0; i < len; i += 8)
		if (*(const uint64_t *)(p + i) != mix64(seed + i))
			return false;
	return true;
}

static inline void cpu_relax(void)
{
	__asm__ volatile("nop" ::: "memory");
}

static inline void wfi(void)
{
	__asm__ volatile("wfi" ::: "memory");
}

/*
 * Sleep until @cond holds, made true by interrupt handlers; sstatus.SIE is
 * on before and after. The check and the wfi run with SIE off (a pending,
 * enabled interrupt still ends the wfi), and the handler runs in the
 * moment SIE is on between two checks: checked with SIE on, an interrupt
 * that came between the check and the wfi would run its handler first and
 * leave the wfi waiting for the next one (a one-shot timer: for ever).
 */
#define wfi_until(cond)							\
	do {								\
		csr_clear(sstatus, SR_SIE);				\
		while (!(cond)) {					\
			wfi();						\
			csr_set(sstatus, SR_SIE);			\
			csr_clear(sstatus, SR_SIE);			\
		}							\
		csr_set(sstatus, SR_SIE);				\
	} while (0)

/* Entry points in crt0.S (physical addresses, satp is Bare). */
void _start(void);
void _hart_entry(void);

/* Provided by each payload: runs on the boot hart after library init. */
void test_main(unsigned long hartid);

/* Library init and secondary-hart dispatch (start.c). */
void guest_main(unsigned long hartid, const void *fdt) __attribute__((noreturn));
void hart_entry_c(unsigned long hartid, unsigned long opaque) __attribute__((noreturn));
void trap_handler(struct trap_frame *tf);

/* string.c: the compiler may emit calls to these even when freestanding. */
void *memset(void *s, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);

#endif
#endif
