/* SPDX-License-Identifier: MIT */
/* A device register loaded into each callee-saved register (gp, s0-s11),
 * as Linux does with virtio-mmio's InterruptStatus and the PLIC's claim:
 * Carapace serves these loads on its fast exit path and writes the register
 * from the trap vector (hyp/run/vcpu_switch.S), where C cannot. Each load
 * must land in its register alone: the other twelve keep their values, and
 * the register the load names gets the device's value.
 *
 * The device is the PLIC's priority registers (sources 1..13), at the same
 * address on bare QEMU virt and under Carapace, each set to a value first. */
#include "libguest.h"

#define T "mmio_sregs"
#define PLIC_PRIORITY(s)	(0x0c000000UL + 4 * (s))
#define NREGS			13	/* gp, s0..s11 */
#define SENTINEL(i)		(0x5e000000UL + (i))

static const char *const names[NREGS] = { "gp", "s0", "s1", "s2", "s3", "s4", "s5",
					  "s6", "s7", "s8", "s9", "s10", "s11" };

/* Every callee-saved register set to its sentinel, one lw into REG, all
 * thirteen stored to out[] (gp, s0..s11), then put back. */
#define LOAD_INTO(reg)							\
static void load_into_##reg(unsigned long addr, unsigned long *out)	\
{									\
	__asm__ volatile(						\
		"mv t0, %0\n\t"						\
		"mv t1, %1\n\t"						\
		"addi sp, sp, -112\n\t"					\
		"sd gp, 0(sp)\n\tsd s0, 8(sp)\n\tsd s1, 16(sp)\n\t"	\
		"sd s2, 24(sp)\n\tsd s3, 32(sp)\n\tsd s4, 40(sp)\n\t"	\
		"sd s5, 48(sp)\n\tsd s6, 56(sp)\n\tsd s7, 64(sp)\n\t"	\
		"sd s8, 72(sp)\n\tsd s9, 80(sp)\n\tsd s10, 88(sp)\n\t"	\
		"sd s11, 96(sp)\n\t"					\
		"li gp, 0x5e000000\n\tli s0, 0x5e000001\n\t"		\
		"li s1, 0x5e000002\n\tli s2, 0x5e000003\n\t"		\
		"li s3, 0x5e000004\n\tli s4, 0x5e000005\n\t"		\
		"li s5, 0x5e000006\n\tli s6, 0x5e000007\n\t"		\
		"li s7, 0x5e000008\n\tli s8, 0x5e000009\n\t"		\
		"li s9, 0x5e00000a\n\tli s10, 0x5e00000b\n\t"		\
		"li s11, 0x5e00000c\n\t"				\
		"lw " #reg ", 0(t0)\n\t"				\
		"sd gp, 0(t1)\n\tsd s0, 8(t1)\n\tsd s1, 16(t1)\n\t"	\
		"sd s2, 24(t1)\n\tsd s3, 32(t1)\n\tsd s4, 40(t1)\n\t"	\
		"sd s5, 48(t1)\n\tsd s6, 56(t1)\n\tsd s7, 64(t1)\n\t"	\
		"sd s8, 72(t1)\n\tsd s9, 80(t1)\n\tsd s10, 88(t1)\n\t"	\
		"sd s11, 96(t1)\n\t"					\
		"ld gp, 0(sp)\n\tld s0, 8(sp)\n\tld s1, 16(sp)\n\t"	\
		"ld s2, 24(sp)\n\tld s3, 32(sp)\n\tld s4, 40(sp)\n\t"	\
		"ld s5, 48(sp)\n\tld s6, 56(sp)\n\tld s7, 64(sp)\n\t"	\
		"ld s8, 72(sp)\n\tld s9, 80(sp)\n\tld s10, 88(sp)\n\t"	\
		"ld s11, 96(sp)\n\t"					\
		"addi sp, sp, 112"					\
		:: "r"(addr), "r"(out) : "t0", "t1", "memory");		\
}

LOAD_INTO(gp) LOAD_INTO(s0) LOAD_INTO(s1) LOAD_INTO(s2) LOAD_INTO(s3) LOAD_INTO(s4)
LOAD_INTO(s5) LOAD_INTO(s6) LOAD_INTO(s7) LOAD_INTO(s8) LOAD_INTO(s9) LOAD_INTO(s10)
LOAD_INTO(s11)

static void (*const loads[NREGS])(unsigned long, unsigned long *) = {
	load_into_gp, load_into_s0, load_into_s1, load_into_s2, load_into_s3, load_into_s4,
	load_into_s5, load_into_s6, load_into_s7, load_into_s8, load_into_s9, load_into_s10,
	load_into_s11,
};

static uint32_t priority_of(unsigned int i)
{
	return i % 7 + 1;	/* 1..7: what both PLICs hold */
}

void test_main(unsigned long hartid)
{
	(void)hartid;
	for (unsigned int i = 0; i < NREGS; i++)
		*(volatile uint32_t *)PLIC_PRIORITY(i + 1) = priority_of(i);
	for (unsigned int i = 0; i < NREGS; i++) {
		unsigned long out[NREGS];
		bool ok = true;

		loads[i](PLIC_PRIORITY(i + 1), out);
		for (unsigned int j = 0; j < NREGS; j++) {
			unsigned long want = j == i ? priority_of(i) : SENTINEL(j);

			if (out[j] != want) {
				report_fail(T, "lw into %s: %s is 0x%lx, want 0x%lx", names[i],
					    names[j], out[j], want);
				ok = false;
			}
		}
		if (ok)
			report_pass(T, "lw into %s: it holds priority %u, the others unchanged",
				    names[i], priority_of(i));
	}
	report_done();
}
