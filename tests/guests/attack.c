/* SPDX-License-Identifier: MIT */
/* Malicious guest (issue 14): attacks on the hypervisor, one case per table
 * entry, run beside a victim VM (victim.c) by tests/guests/test_attacks.py.
 *
 * Bootargs from=N to=M run cases N..M in table order. Each case prints
 * "ATTACK-BEGIN: N name", its PASS/FAIL checks, then "ATTACK-END: N name".
 * Every case states what a correct hypervisor does (.expect) and checks it:
 * an SBI call's error code, the fault delivered to this guest (scause,
 * stval, sepc), or, for .stops cases, that the VM is stopped with a reason
 * (the harness checks the hypervisor's "stopped:" line; if the attack
 * returns, that is a FAIL here). A .stops case must be the last one a VM
 * runs. Cases that need a second vCPU use hart 1 (vcpus=2).
 *
 * Device windows (platform/qemu-virt/include/guest_map.h, the guest DT):
 * UART 0x10000000+0x100, PLIC 0x0c000000+0x4000000, vmgenid 0x10100000+0x1000.
 * GPA 0x40000000 is a hole: no RAM, no device.
 *
 * The payload never runs on bare QEMU (the harness runs it under Carapace).
 */
#include "libguest.h"
#include "cfi.h"
#include <abi/sbi_sta.h>

#define T "attack"

#define UART_BASE	0x10000000UL
#define UART_SIZE	0x100UL
#define PLIC_BASE	0x0c000000UL
#define PLIC_SIZE	0x4000000UL
#define VMGENID_BASE	0x10100000UL
#define VMGENID_SIZE	0x1000UL
#define HOLE		0x40000000UL
#define SATP_SV39	(8UL << 60)

struct attack {
	const char *name;
	void (*fn)(void);
	bool stops;		/* the hypervisor must stop this VM */
	const char *expect;	/* what a correct hypervisor does */
};

static struct cfi_rec recs[MAX_HARTS];
static volatile unsigned long flag, flag2, race_stop;

/* ---- helpers ------------------------------------------------------------- */

static void check_codes(const char *what, long got, const long *ok, int n)
{
	char buf[160];
	int i, len = 0;

	for (i = 0; i < n; i++)
		if (got == ok[i]) {
			report_pass(T, "%s", what);
			return;
		}
	for (i = 0; i < n && len < 120; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%ld", i ? "|" : "", ok[i]);
	report_fail(T, "%s (got %ld, want %s)", what, got, buf);
}
#define CHECK_IN(what, got, ...) do {					\
	const long __ok[] = { __VA_ARGS__ };				\
	check_codes(what, (long)(got), __ok, ARRAY_SIZE(__ok));	\
} while (0)

static struct sbiret ecall(unsigned long e, unsigned long f, unsigned long a0,
			   unsigned long a1, unsigned long a2, unsigned long a3,
			   unsigned long a4, unsigned long a5)
{
	return sbi_ecall(e, f, a0, a1, a2, a3, a4, a5);
}

static unsigned long ram_end(void)
{
	return env.ram_base + env.ram_size;
}

/* Run @fn on hart 1 and wait until it stopped again (true if it did). */
static bool on_other(hart_fn fn, unsigned long opaque, unsigned long us)
{
	unsigned long h = other_hartid();

	if (h == -1UL) {
		report_fail(T, "a second vCPU (got 1, want vcpus=2)");
		return false;
	}
	if (!hart_wait_state(h, SBI_HSM_STATE_STOPPED, 2000000)) {
		report_fail(T, "other hart stopped before start (got not stopped, want STOPPED)");
		return false;
	}
	check_eq(T, "hart_start(other) for the attack", hart_start(h, fn, opaque), SBI_SUCCESS);
	return hart_wait_state(h, SBI_HSM_STATE_STOPPED, us);
}

/* One access at a known pc; the library vector skips it if it traps. */
#define TRYA(name, insn)						\
static unsigned long name(unsigned long addr, unsigned long *pc)	\
{									\
	unsigned long v = 0x5a5a5a5aUL;					\
	__asm__ volatile(".option push\n\t"				\
			 ".option norvc\n\t"				\
			 ".option arch, +a, +h\n"			\
			 "1:\t" insn "\n\t"				\
			 ".option pop\n\t"				\
			 "lla %0, 1b"					\
			 : "=&r"(*pc), "+&r"(v) : "r"(addr) : "memory", "ft0"); \
	return v;							\
}

TRYA(ld_b, "lb %1, 0(%2)")
TRYA(ld_h, "lh %1, 0(%2)")
TRYA(ld_w, "lw %1, 0(%2)")
TRYA(ld_d, "ld %1, 0(%2)")
TRYA(st_b, "sb %1, 0(%2)")
TRYA(st_h, "sh %1, 0(%2)")
TRYA(st_w, "sw %1, 0(%2)")
TRYA(st_d, "sd %1, 0(%2)")
TRYA(amo_swap_w, "amoswap.w %1, %1, (%2)")
TRYA(amo_add_d, "amoadd.d %1, %1, (%2)")
TRYA(amo_lr_w, "lr.w %1, (%2)")
TRYA(amo_sc_w, "sc.w %1, %1, (%2)")
TRYA(fp_ld, "fld ft0, 0(%2)")
TRYA(fp_st, "fsd ft0, 0(%2)")
TRYA(ss_swap, ".insn r 0x2f, 3, 0x24, %1, %2, %1")	/* ssamoswap.d */
TRYA(hlv_w, "hlv.w %1, (%2)")
TRYA(hsv_w, "hsv.w %1, (%2)")

typedef unsigned long (*try_fn)(unsigned long, unsigned long *);

static const struct { const char *name; try_fn fn; unsigned w; bool store; } loads[] = {
	{ "lb", ld_b, 1, false }, { "lh", ld_h, 2, false },
	{ "lw", ld_w, 4, false }, { "ld", ld_d, 8, false },
}, stores[] = {
	{ "sb", st_b, 1, true }, { "sh", st_h, 2, true },
	{ "sw", st_w, 4, true }, { "sd", st_d, 8, true },
};

/* An access the guest may see fault: only an access fault (or a misaligned
 * one) at that very pc, never anything else. Returns true if it trapped. */
static unsigned long sweep_bad;
static bool access_ok(const char *what, try_fn fn, unsigned long addr, bool store)
{
	struct trap_record tr;
	unsigned long pc, n;

	trap_arm();
	fn(addr, &pc);
	n = trap_disarm(&tr);
	if (!n)
		return false;
	if (n != 1 || tr.sepc != pc ||
	    (store ? (tr.scause != EXC_STORE_ACCESS && tr.scause != EXC_STORE_MISALIGNED)
		   : (tr.scause != EXC_LOAD_ACCESS && tr.scause != EXC_LOAD_MISALIGNED))) {
		if (sweep_bad++ < 8)
			report_fail(T, "%s at 0x%lx (got %lu traps, scause %lu, sepc 0x%lx, want an access fault at 0x%lx)",
				    what, addr, n, tr.scause, tr.sepc, pc);
	}
	return true;
}

/* Expect exactly one trap with @cause at the access's pc (stval @tval unless -1). */
static void expect_trap(const char *what, try_fn fn, unsigned long addr,
			unsigned long cause, unsigned long tval)
{
	struct trap_record tr;
	unsigned long pc, n;
	char buf[120];

	trap_arm();
	fn(addr, &pc);
	n = trap_disarm(&tr);
	snprintf(buf, sizeof(buf), "%s 0x%lx: one trap", what, addr);
	if (!check_eq(T, buf, n, 1))
		return;
	snprintf(buf, sizeof(buf), "%s 0x%lx: scause", what, addr);
	check_eq(T, buf, tr.scause, cause);
	snprintf(buf, sizeof(buf), "%s 0x%lx: sepc is the access", what, addr);
	check_eqx(T, buf, tr.sepc, pc);
	if (tval != -1UL) {
		snprintf(buf, sizeof(buf), "%s 0x%lx: stval", what, addr);
		check_eqx(T, buf, tr.stval, tval);
	}
}

/* ---- SBI: every extension with garbage ---------------------------------- */

static void a_base(void)
{
	static const unsigned long fids[] = { 7, 8, 0xffff, 0x7fffffff, -1UL };
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(fids); i++)
		CHECK_IN("BASE unknown fid", ecall(SBI_EXT_BASE, fids[i], -1UL, -1UL, -1UL, -1UL, -1UL, -1UL).error,
			 SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "probe(-1) is 0", sbi_probe(-1UL).value, 0);
	check_eq(T, "probe(1 << 63) is 0", sbi_probe(1UL << 63).value, 0);
	check_eq(T, "probe(carapace debug) without debug=1 is 0",
		 sbi_probe(SBI_EXT_CARAPACE_DEBUG).value, 0);
	CHECK_IN("carapace debug write_protect without debug=1",
		 SBI_CALL0(SBI_EXT_CARAPACE_DEBUG, SBI_CARAPACE_WRITE_PROTECT).error,
		 SBI_ERR_NOT_SUPPORTED);
}

static void a_eids(void)
{
	/* legacy v0.1 (0..8, 8 = legacy shutdown), experimental, vendor,
	 * firmware-specific and out-of-range EIDs */
	static const unsigned long eids[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0x0f,
		0x08000000, 0x08FFFFFF, 0x09000000, 0x09FFFFFF, 0x0A000000,
		0x0AFFFFFF, 0x0B000000, 0x0C000000, 0xFFFFFFFF, 1UL << 32,
		(1UL << 32) | SBI_EXT_SRST, -1UL };
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(eids); i++) {
		char w[64];

		snprintf(w, sizeof(w), "eid 0x%lx is NOT_SUPPORTED", eids[i]);
		CHECK_IN(w, ecall(eids[i], 0, 0, 0, 0, 0, 0, 0).error, SBI_ERR_NOT_SUPPORTED);
	}
}

static void a_time(void)
{
	check_eq(T, "set_timer(-1)", sbi_set_timer(-1UL).error, SBI_SUCCESS);
	check_eq(T, "set_timer(0): already due (interrupts masked)", sbi_set_timer(0).error, SBI_SUCCESS);
	check_eq(T, "set_timer(1 << 63)", sbi_set_timer(1UL << 63).error, SBI_SUCCESS);
	CHECK_IN("TIME fid 1", SBI_CALL1(SBI_EXT_TIME, 1, 0).error, SBI_ERR_NOT_SUPPORTED);
	CHECK_IN("TIME fid -1", SBI_CALL1(SBI_EXT_TIME, -1UL, 0).error, SBI_ERR_NOT_SUPPORTED);
	sbi_set_timer(-1UL);
	csr_clear(CSR_SIP, MIP_STIP);
}

static void a_ipi_masks(void)
{
	unsigned long abs = absent_hartid();

	CHECK_IN("send_ipi(1, absent hart)", sbi_send_ipi(1, abs).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("send_ipi(~0, 0): bits name absent harts", sbi_send_ipi(~0UL, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("send_ipi(1, -2)", sbi_send_ipi(1, -2UL).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("send_ipi(3, -2): base + 1 wraps to -1", sbi_send_ipi(3, -2UL).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("send_ipi(1 << 63, 1): base + 63 past the harts", sbi_send_ipi(1UL << 63, 1).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("send_ipi(1 << 63, -63): wraps to hart 0", sbi_send_ipi(1UL << 63, -63UL).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("send_ipi(0, 0): empty mask", sbi_send_ipi(0, 0).error, SBI_SUCCESS);
	CHECK_IN("send_ipi(~0, -1): every hart", sbi_send_ipi(~0UL, -1UL).error, SBI_SUCCESS);
	CHECK_IN("IPI fid 1", SBI_CALL2(SBI_EXT_IPI, 1, 1, 0).error, SBI_ERR_NOT_SUPPORTED);
	csr_clear(CSR_SIP, MIP_SSIP);
}

#define STORM_DEFAULT	1000
static unsigned long STORM = STORM_DEFAULT;
static void storm_fn(unsigned long hartid, unsigned long what)
{
	unsigned long i, bad = 0;

	(void)hartid;
	for (i = 0; i < STORM / 2; i++) {
		if (what == 0)
			bad += sbi_send_ipi(0, -1UL).error != 0;
		else
			bad += SBI_CALL3(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA, 0, -1UL, 0).error != 0 ||
			       SBI_CALL2(SBI_EXT_RFENCE, SBI_RFENCE_FENCE_I, 0, -1UL).error != 0;
	}
	csr_clear(CSR_SIP, MIP_SSIP);
	WRITE_ONCE(flag, bad);
}

static void storm(unsigned long what, const char *name)
{
	unsigned long i, bad = 0;
	char w[80];

	flag = -1UL;
	hart_wait_state(other_hartid(), SBI_HSM_STATE_STOPPED, 5000000);
	if (hart_start(other_hartid(), storm_fn, what) != SBI_SUCCESS)
		report_fail(T, "%s: start hart 1 (got error, want 0)", name);
	for (i = 0; i < STORM; i++) {
		if (what == 0)
			bad += sbi_send_ipi(~0UL, -1UL).error != 0;
		else
			bad += sbi_ecall(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA_ASID, 0, -1UL,
					 0, -1UL, i & 0xffff, 0).error != 0;
		csr_clear(CSR_SIP, MIP_SSIP);
	}
	snprintf(w, sizeof(w), "%s: %lu calls from hart 0 all succeed", name, STORM);
	check_eq(T, w, bad, 0);
	wait_for(READ_ONCE(flag) != -1UL, 20000000);
	snprintf(w, sizeof(w), "%s: calls from hart 1 all succeed", name);
	check_eq(T, w, READ_ONCE(flag), 0);
	check_eq(T, "hart 1 stops after the storm",
		 hart_wait_state(other_hartid(), SBI_HSM_STATE_STOPPED, 5000000), 1);
}

static void a_ipi_storm(void)
{
	storm(0, "IPI storm to all harts");
}

static void a_rfence_args(void)
{
	unsigned long abs = absent_hartid();
	unsigned long f;

	CHECK_IN("fence_i(1, absent)", SBI_CALL2(SBI_EXT_RFENCE, SBI_RFENCE_FENCE_I, 1, abs).error,
		 SBI_ERR_INVALID_PARAM);
	CHECK_IN("sfence_vma(~0, 0)", sbi_ecall(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA, ~0UL, 0, 0, 4096, 0, 0).error,
		 SBI_ERR_INVALID_PARAM);
	CHECK_IN("sfence_vma(all, start -4096, size 8192): wrapping range",
		 sbi_ecall(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA, 0, -1UL, -4096UL, 8192, 0, 0).error,
		 SBI_SUCCESS, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("sfence_vma(all, start 1, size -2)",
		 sbi_ecall(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA, 0, -1UL, 1, -2UL, 0, 0).error,
		 SBI_SUCCESS, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("sfence_vma_asid(all, asid -1)",
		 sbi_ecall(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA_ASID, 0, -1UL, 0, -1UL, -1UL, 0).error,
		 SBI_SUCCESS, SBI_ERR_INVALID_PARAM);
	/* the guest has no H extension: the hfence functions do not exist for it */
	for (f = SBI_RFENCE_HFENCE_GVMA_VMID; f <= SBI_RFENCE_HFENCE_VVMA; f++)
		CHECK_IN("RFENCE hfence_* from a guest", sbi_ecall(SBI_EXT_RFENCE, f, 0, -1UL, 0, -1UL, 0, 0).error,
			 SBI_ERR_NOT_SUPPORTED);
	CHECK_IN("RFENCE fid 7", SBI_CALL2(SBI_EXT_RFENCE, 7, 0, -1UL).error, SBI_ERR_NOT_SUPPORTED);
	CHECK_IN("RFENCE fid -1", SBI_CALL2(SBI_EXT_RFENCE, -1UL, 0, -1UL).error, SBI_ERR_NOT_SUPPORTED);
}

static void a_rfence_storm(void)
{
	storm(1, "RFENCE storm to all harts");
}

static void a_hsm_args(void)
{
	unsigned long abs = absent_hartid(), o = other_hartid();

	CHECK_IN("hart_start(absent)", sbi_hart_start(abs, env.ram_base + 0x200000, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("hart_start(-1)", sbi_hart_start(-1UL, env.ram_base + 0x200000, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("hart_start(self)", sbi_hart_start(current_hartid(), (unsigned long)_hart_entry, 0).error,
		 SBI_ERR_ALREADY_AVAILABLE);
	CHECK_IN("hart_start(other, hole)", sbi_hart_start(o, HOLE, 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("hart_start(other, -1)", sbi_hart_start(o, -1UL, 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("hart_start(other, end of RAM)", sbi_hart_start(o, ram_end(), 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("hart_start(other, UART)", sbi_hart_start(o, UART_BASE, 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("hart_get_status(absent)", sbi_hart_status(abs).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("hart_get_status(-1)", sbi_hart_status(-1UL).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("hart_suspend(0x7fffffff)", sbi_hart_suspend(0x7fffffff, 0, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("hart_suspend(non-retentive, hole)", sbi_hart_suspend(SBI_HSM_SUSPEND_NON_RET_DEFAULT, HOLE, 0).error,
		 SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("hart_suspend(non-retentive, -1)", sbi_hart_suspend(SBI_HSM_SUSPEND_NON_RET_DEFAULT, -1UL, 0).error,
		 SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("HSM fid 4", SBI_CALL0(SBI_EXT_HSM, 4).error, SBI_ERR_NOT_SUPPORTED);
	CHECK_IN("HSM fid -1", SBI_CALL0(SBI_EXT_HSM, -1UL).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "other hart still STOPPED", sbi_hart_status(o).value, SBI_HSM_STATE_STOPPED);
}

static void stop_at_once(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
}

static void a_hsm_race(void)
{
	unsigned long o = other_hartid(), i, ok = 0, busy = 0, bad = 0, badst = 0;

	hart_wait_state(o, SBI_HSM_STATE_STOPPED, 5000000);
	for (i = 0; i < 400; i++) {
		long e;

		if (i % 16 == 0)	/* now and then a start that must succeed */
			hart_wait_state(o, SBI_HSM_STATE_STOPPED, 5000000);
		e = hart_start(o, stop_at_once, i);
		struct sbiret s = sbi_hart_status(o);

		if (e == SBI_SUCCESS)
			ok++;
		else if (e == SBI_ERR_ALREADY_AVAILABLE)
			busy++;
		else
			bad++;
		if (s.error || s.value > SBI_HSM_STATE_STOP_PENDING)
			badst++;
	}
	report_info(T, "hsm race: %lu starts, %lu ALREADY_AVAILABLE", ok, busy);
	check_eq(T, "hsm race: start answers only SUCCESS or ALREADY_AVAILABLE", bad, 0);
	check_eq(T, "hsm race: status only STARTED/STOPPED/START_PENDING/STOP_PENDING", badst, 0);
	check_ge(T, "hsm race: every start after a STOPPED read succeeded", ok, 25);
	check_eq(T, "hsm race: other hart ends STOPPED",
		 hart_wait_state(o, SBI_HSM_STATE_STOPPED, 5000000), 1);
}

static void ssip_ack(unsigned long irq)
{
	(void)irq;
	csr_clear(CSR_SIP, MIP_SSIP);
}

static void suspender(unsigned long hartid, unsigned long n)
{
	unsigned long i;

	(void)hartid;
	csr_set(CSR_SIE, MIP_SSIP);
	for (i = 0; i < n; i++) {
		WRITE_ONCE(flag2, i + 1);
		/* retentive: an IPI (SSIP enabled in sie, SIE off) wakes it */
		if (sbi_hart_suspend(SBI_HSM_SUSPEND_RET_DEFAULT, 0, 0).error)
			WRITE_ONCE(flag, READ_ONCE(flag) + 1);
		csr_clear(CSR_SIP, MIP_SSIP);
	}
	csr_clear(CSR_SIE, MIP_SSIP);
	WRITE_ONCE(flag2, -1UL);
	while (!READ_ONCE(race_stop))
		cpu_relax();	/* STARTED until hart 0 stops starting it */
}

static void a_hsm_suspend_race(void)
{
	unsigned long o = other_hartid(), i, bad = 0;
	const unsigned long n = 200;

	trap_set_irq(IRQ_S_SOFT, ssip_ack);
	flag = 0;
	flag2 = 0;
	race_stop = 0;
	hart_wait_state(o, SBI_HSM_STATE_STOPPED, 5000000);
	check_eq(T, "suspend race: start hart 1", hart_start(o, suspender, n), SBI_SUCCESS);
	for (i = 0; i < 200000 && READ_ONCE(flag2) != -1UL; i++) {
		long e = sbi_send_ipi(1UL << o, 0).error;
		long s = sbi_hart_start(o, (unsigned long)_hart_entry, 0).error;

		bad += e != SBI_SUCCESS || s != SBI_ERR_ALREADY_AVAILABLE;
	}
	WRITE_ONCE(race_stop, 1);
	check_eq(T, "suspend race: IPIs succeed, hart_start says ALREADY_AVAILABLE", bad, 0);
	check_eq(T, "suspend race: every suspend returned SUCCESS", READ_ONCE(flag), 0);
	check_eqx(T, "suspend race: hart 1 went through all its suspends", READ_ONCE(flag2), -1UL);
	check_eq(T, "suspend race: hart 1 ends STOPPED",
		 hart_wait_state(o, SBI_HSM_STATE_STOPPED, 5000000), 1);
}

static void a_srst(void)
{
	CHECK_IN("system_reset(type 3)", sbi_system_reset(3, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("system_reset(type 0xEFFFFFFF)", sbi_system_reset(0xEFFFFFFF, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("system_reset(vendor type 0xF0000000)", sbi_system_reset(0xF0000000, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("system_reset(shutdown, reserved reason 2)", sbi_system_reset(0, 2).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("system_reset(shutdown, platform reason 0xF0000000)", sbi_system_reset(0, 0xF0000000).error,
		 SBI_ERR_INVALID_PARAM);
	CHECK_IN("SRST fid 1", SBI_CALL2(SBI_EXT_SRST, 1, 0, 0).error, SBI_ERR_NOT_SUPPORTED);
}

static void a_dbcn_ranges(void)
{
	unsigned long re = ram_end();

	CHECK_IN("dbcn write(16, hole)", sbi_dbcn_write(16, HOLE, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("dbcn write(16, UART)", sbi_dbcn_write(16, UART_BASE, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("dbcn write(16, RAM, hi 1)", sbi_dbcn_write(16, env.ram_base, 1).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("dbcn write(0x2000, -0x1000): wraps", sbi_dbcn_write(0x2000, -0x1000UL, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("dbcn write(16, RAM end - 8): straddles", sbi_dbcn_write(16, re - 8, 0).error, SBI_ERR_INVALID_PARAM);
	{
		struct sbiret r = sbi_dbcn_write(-1UL, re - 4096, 0);

		CHECK_IN("dbcn write(-1, RAM end - 4096)", r.error, SBI_ERR_INVALID_PARAM, SBI_SUCCESS);
		if (!r.error)
			check_le(T, "dbcn write(-1, ...) wrote at most the RAM left", r.value, 4096);
		printf("\n");
	}
	CHECK_IN("dbcn read(16, hole)", sbi_dbcn_read(16, HOLE, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("dbcn read(16, vmgenid)", sbi_dbcn_read(16, VMGENID_BASE, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("dbcn read(-1, RAM base)", sbi_dbcn_read(-1UL, env.ram_base, 0).error,
		 SBI_ERR_INVALID_PARAM, SBI_SUCCESS);
	CHECK_IN("dbcn read(16, RAM, hi -1)", sbi_dbcn_read(16, env.ram_base, -1UL).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("dbcn write_byte(0x10a): only the low byte", sbi_dbcn_write_byte(0x0a).error, SBI_SUCCESS);
	CHECK_IN("DBCN fid 3", SBI_CALL0(SBI_EXT_DBCN, 3).error, SBI_ERR_NOT_SUPPORTED);
}

static void a_dbcn_flood(void)
{
	static char line[201];
	unsigned long i, bad = 0;

	memset(line, 'F', sizeof(line) - 1);
	memcpy(line, "FLOOD-DBCN ", 11);
	line[199] = '\n';
	for (i = 0; i < 500; i++) {
		struct sbiret r = sbi_dbcn_write(200, (unsigned long)line, 0);

		bad += r.error || r.value < 1 || r.value > 200;
	}
	for (i = 0; i < 4000; i++)
		bad += sbi_dbcn_write_byte(i % 80 == 79 ? '\n' : 'B').error != 0;
	printf("\n");
	check_eq(T, "dbcn flood: 500 writes of 200 bytes, 4000 write_byte, all succeed", bad, 0);
}

static void a_uart_flood(void)
{
	volatile uint8_t *u = (volatile uint8_t *)UART_BASE;
	unsigned long i;

	for (i = 0; i < 20000; i++)
		u[0] = i % 100 == 99 ? '\n' : 'U';
	/* and garbage into every register */
	for (i = 1; i < 8; i++)
		u[i] = 0xff;
	u[3] = 0x03;	/* LCR back to 8N1, DLAB off */
	u[1] = 0;	/* IER */
	printf("\n");
	report_pass(T, "uart flood: 20000 bytes and 0xff into every register, still running");
}

static void a_fwft_args(void)
{
	CHECK_IN("fwft set(-1)", fwft_set(-1UL, 1, 0).error, SBI_ERR_DENIED, SBI_ERR_NOT_SUPPORTED, SBI_ERR_INVALID_PARAM);
	CHECK_IN("fwft set(reserved 6)", fwft_set(6, 1, 0).error, SBI_ERR_DENIED);
	CHECK_IN("fwft set(0x80000000, LOCK)", fwft_set(0x80000000UL, 1, 1).error, SBI_ERR_DENIED);
	CHECK_IN("fwft set(shadow_stack, 2)", fwft_set(SBI_FWFT_SHADOW_STACK, 2, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("fwft set(shadow_stack, -1)", fwft_set(SBI_FWFT_SHADOW_STACK, -1UL, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("fwft set(shadow_stack, 1, flags 2)", fwft_set(SBI_FWFT_SHADOW_STACK, 1, 2).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("fwft set(shadow_stack, 1, flags -1)", fwft_set(SBI_FWFT_SHADOW_STACK, 1, -1UL).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("fwft set(landing_pad, 1 << 32)", fwft_set(SBI_FWFT_LANDING_PAD, 1UL << 32, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("fwft get(-1)", fwft_get(-1UL).error, SBI_ERR_DENIED, SBI_ERR_NOT_SUPPORTED, SBI_ERR_INVALID_PARAM);
	CHECK_IN("fwft get(0x7fffffff)", fwft_get(0x7fffffff).error, SBI_ERR_DENIED);
	CHECK_IN("FWFT fid 2", SBI_CALL0(SBI_EXT_FWFT, 2).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "shadow_stack still 0 after the garbage", fwft_get(SBI_FWFT_SHADOW_STACK).value, 0);
}

/* Hart 1 locks its own shadow_stack = 1; hart 0's calls and a hart_start
 * while it runs cannot undo that. A stop + start resets it (docs/sbi.md). */
static volatile long fw_res[4];
static void fwft_other(unsigned long hartid, unsigned long phase)
{
	(void)hartid;
	if (phase == 0) {
		fw_res[0] = fwft_get(SBI_FWFT_SHADOW_STACK).value;	/* 0: fresh */
		fw_res[1] = fwft_set(SBI_FWFT_SHADOW_STACK, 1, SBI_FWFT_SET_FLAG_LOCK).error;
		WRITE_ONCE(flag, 1);
		while (READ_ONCE(flag2) == 0)
			cpu_relax();	/* hart 0 tries its tricks meanwhile */
		fw_res[2] = fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0).error;
		fw_res[3] = fwft_get(SBI_FWFT_SHADOW_STACK).value;
	} else {
		fw_res[0] = fwft_get(SBI_FWFT_SHADOW_STACK).value;
		fw_res[1] = fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0).error;
	}
	WRITE_ONCE(flag, 2);
}

static void a_fwft_lock(void)
{
	unsigned long o = other_hartid();

	flag = 0;
	flag2 = 0;
	hart_wait_state(o, SBI_HSM_STATE_STOPPED, 5000000);
	check_eq(T, "fwft: start hart 1", hart_start(o, fwft_other, 0), SBI_SUCCESS);
	wait_for(READ_ONCE(flag) == 1, 5000000);
	check_eq(T, "fwft: hart 1 starts with shadow_stack 0", fw_res[0], 0);
	check_eq(T, "fwft: hart 1 locks shadow_stack 1", fw_res[1], SBI_SUCCESS);
	/* tricks from hart 0 while hart 1 holds its lock */
	CHECK_IN("fwft: hart_start(hart 1) while it runs (would reset its lock)",
		 sbi_hart_start(o, (unsigned long)_hart_entry, 1).error, SBI_ERR_ALREADY_AVAILABLE);
	check_eq(T, "fwft: hart 0's own shadow_stack is still 0 and unlocked",
		 fwft_get(SBI_FWFT_SHADOW_STACK).value, 0);
	check_eq(T, "fwft: hart 0 sets its own shadow_stack 0",
		 fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0).error, SBI_SUCCESS);
	CHECK_IN("fwft: hart 0 set(shadow_stack, 0, LOCK | garbage)",
		 fwft_set(SBI_FWFT_SHADOW_STACK, 0, 3).error, SBI_ERR_INVALID_PARAM);
	WRITE_ONCE(flag2, 1);
	wait_for(READ_ONCE(flag) == 2, 5000000);
	check_eq(T, "fwft: hart 1's lock held: set 0 is DENIED_LOCKED", fw_res[2], SBI_ERR_DENIED_LOCKED);
	check_eq(T, "fwft: hart 1 still reads shadow_stack 1", fw_res[3], 1);
	hart_wait_state(o, SBI_HSM_STATE_STOPPED, 5000000);
	/* documented: a hart_start resets a stopped vCPU's FWFT state */
	flag = 0;
	on_other(fwft_other, 1, 5000000);
	check_eq(T, "fwft: after stop + start hart 1 reads 0 (reset, docs/sbi.md)", fw_res[0], 0);
	check_eq(T, "fwft: after stop + start hart 1 is unlocked", fw_res[1], SBI_SUCCESS);
}

#define PMU_CALL(f, a, b, c, d, e) sbi_ecall(SBI_EXT_PMU, f, a, b, c, d, e, 0).error
static void a_pmu(void)
{
	if (!sbi_probe(SBI_EXT_PMU).value) {
		report_fail(T, "pmu probe (got 0, want available)");
		return;
	}
	CHECK_IN("pmu counter_get_info(-1)", PMU_CALL(SBI_PMU_COUNTER_GET_INFO, -1UL, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu counter_get_info(1 << 40)", PMU_CALL(SBI_PMU_COUNTER_GET_INFO, 1UL << 40, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu cfg_match(base -1, mask ~0)", PMU_CALL(SBI_PMU_COUNTER_CONFIG_MATCHING, -1UL, ~0UL, 0, 1, 0),
		 SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED);
	CHECK_IN("pmu cfg_match(0, ~0, event -1)", PMU_CALL(SBI_PMU_COUNTER_CONFIG_MATCHING, 0, ~0UL, 0, -1UL, -1UL),
		 SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED);
	CHECK_IN("pmu counter_start(-1, ~0)", PMU_CALL(SBI_PMU_COUNTER_START, -1UL, ~0UL, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu counter_start(0, 1 << 63)", PMU_CALL(SBI_PMU_COUNTER_START, 0, 1UL << 63, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu counter_stop(-64, ~0)", PMU_CALL(SBI_PMU_COUNTER_STOP, -64UL, ~0UL, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu fw_read(-1)", PMU_CALL(SBI_PMU_COUNTER_FW_READ, -1UL, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu fw_read_hi(-1)", PMU_CALL(SBI_PMU_COUNTER_FW_READ_HI, -1UL, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu snapshot_set_shmem(hole)", PMU_CALL(SBI_PMU_SNAPSHOT_SET_SHMEM, HOLE, 0, 0, 0, 0),
		 SBI_ERR_INVALID_ADDRESS, SBI_ERR_NOT_SUPPORTED, SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu event_get_info(hole, 1)", PMU_CALL(SBI_PMU_EVENT_GET_INFO, HOLE, 0, 1, 0, 0),
		 SBI_ERR_INVALID_ADDRESS, SBI_ERR_NOT_SUPPORTED);
	CHECK_IN("pmu event_get_info(RAM end - 16, 64): straddles", PMU_CALL(SBI_PMU_EVENT_GET_INFO, ram_end() - 16, 0, 64, 0, 0),
		 SBI_ERR_INVALID_ADDRESS, SBI_ERR_NOT_SUPPORTED, SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu event_get_info(RAM, num -1)", PMU_CALL(SBI_PMU_EVENT_GET_INFO, env.ram_base, 0, -1UL, 0, 0),
		 SBI_ERR_INVALID_ADDRESS, SBI_ERR_NOT_SUPPORTED, SBI_ERR_INVALID_PARAM);
	CHECK_IN("pmu event_get_info(RAM, hi 1)", PMU_CALL(SBI_PMU_EVENT_GET_INFO, env.ram_base, 1, 1, 0, 0),
		 SBI_ERR_INVALID_ADDRESS, SBI_ERR_NOT_SUPPORTED, SBI_ERR_INVALID_PARAM);
	CHECK_IN("PMU fid 9", PMU_CALL(9, 0, 0, 0, 0, 0), SBI_ERR_NOT_SUPPORTED);
}

static void spin_until_flag(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	WRITE_ONCE(flag2, 1);
	while (!READ_ONCE(flag))
		cpu_relax();
}

static void a_susp(void)
{
	unsigned long good = (unsigned long)_start;

	CHECK_IN("system_suspend(type 1)", SBI_CALL3(SBI_EXT_SUSP, 0, 1, good, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("system_suspend(type 0x80000000)", SBI_CALL3(SBI_EXT_SUSP, 0, 0x80000000UL, good, 0).error,
		 SBI_ERR_INVALID_PARAM);
	CHECK_IN("system_suspend(0, hole)", SBI_CALL3(SBI_EXT_SUSP, 0, 0, HOLE, 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("system_suspend(0, -1)", SBI_CALL3(SBI_EXT_SUSP, 0, 0, -1UL, 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("system_suspend(0, end of RAM)", SBI_CALL3(SBI_EXT_SUSP, 0, 0, ram_end(), 0).error,
		 SBI_ERR_INVALID_ADDRESS);
	flag = 0;
	flag2 = 0;
	hart_wait_state(other_hartid(), SBI_HSM_STATE_STOPPED, 5000000);
	hart_start(other_hartid(), spin_until_flag, 0);
	wait_for(READ_ONCE(flag2), 5000000);
	CHECK_IN("system_suspend while hart 1 runs", SBI_CALL3(SBI_EXT_SUSP, 0, 0, good, 0).error, SBI_ERR_DENIED);
	WRITE_ONCE(flag, 1);
	hart_wait_state(other_hartid(), SBI_HSM_STATE_STOPPED, 5000000);
	CHECK_IN("SUSP fid 1", SBI_CALL0(SBI_EXT_SUSP, 1).error, SBI_ERR_NOT_SUPPORTED);
}

static void a_sta(void)
{
	unsigned long b = env.ram_base + 0x100000;

	CHECK_IN("sta set_shmem(hole)", SBI_CALL3(SBI_EXT_STA, 0, HOLE, 0, 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("sta set_shmem(RAM + 1): misaligned", SBI_CALL3(SBI_EXT_STA, 0, b + 1, 0, 0).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("sta set_shmem(RAM, flags 1)", SBI_CALL3(SBI_EXT_STA, 0, b, 0, 1).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("sta set_shmem(RAM, flags -1)", SBI_CALL3(SBI_EXT_STA, 0, b, 0, -1UL).error, SBI_ERR_INVALID_PARAM);
	CHECK_IN("sta set_shmem(RAM, hi 1)", SBI_CALL3(SBI_EXT_STA, 0, b, 1, 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("sta set_shmem(RAM end - 32): straddles", SBI_CALL3(SBI_EXT_STA, 0, ram_end() - 32, 0, 0).error,
		 SBI_ERR_INVALID_ADDRESS, SBI_ERR_INVALID_PARAM);
	CHECK_IN("sta set_shmem(-64)", SBI_CALL3(SBI_EXT_STA, 0, -64UL, 0, 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("sta set_shmem(vmgenid)", SBI_CALL3(SBI_EXT_STA, 0, VMGENID_BASE, 0, 0).error, SBI_ERR_INVALID_ADDRESS);
	CHECK_IN("sta set_shmem(-1, -1): disable", SBI_CALL3(SBI_EXT_STA, 0, -1UL, -1UL, 0).error, SBI_SUCCESS);
	CHECK_IN("STA fid 1", SBI_CALL0(SBI_EXT_STA, 1).error, SBI_ERR_NOT_SUPPORTED);
}

/* ---- device windows ------------------------------------------------------ */

static void sweep(const char *dev, unsigned long base, unsigned long size,
		  unsigned long step, bool do_stores)
{
	unsigned long off, k, faults = 0, accesses = 0;
	char w[96];

	sweep_bad = 0;
	for (off = 0; off < size; off += step) {
		for (k = 0; k < ARRAY_SIZE(loads); k++) {
			unsigned long a = base + off;

			/* every width at the aligned offset and one byte in */
			faults += access_ok(loads[k].name, loads[k].fn, a, false);
			accesses++;
			if (off + 1 < size) {
				faults += access_ok(loads[k].name, loads[k].fn, a + 1, false);
				accesses++;
			}
			if (do_stores) {
				faults += access_ok(stores[k].name, stores[k].fn, a, true);
				accesses++;
			}
		}
	}
	/* the last bytes of the window, every width */
	for (k = 0; k < ARRAY_SIZE(loads); k++) {
		faults += access_ok(loads[k].name, loads[k].fn, base + size - loads[k].w, false);
		accesses++;
	}
	snprintf(w, sizeof(w), "%s sweep: %lu accesses, %lu faulted, all as access faults at the pc",
		 dev, accesses, faults);
	check_eq(T, w, sweep_bad, 0);
	snprintf(w, sizeof(w), "%s sweep: an aligned register read is still emulated", dev);
	{
		unsigned long pc;
		struct trap_record tr;

		trap_arm();
		if (base == UART_BASE)
			ld_b(base + 5, &pc);
		else
			ld_w(base + 4, &pc);
		check_eq(T, w, trap_disarm(&tr), 0);
	}
}

static void a_mmio_uart(void)
{
	/* stores only above the 8 registers (0x8..0xff: no effect), then every reg read */
	unsigned long off, k;

	sweep("uart", UART_BASE, UART_SIZE, 1, false);
	sweep_bad = 0;
	for (off = 8; off < UART_SIZE; off++)
		for (k = 0; k < ARRAY_SIZE(stores); k++)
			access_ok(stores[k].name, stores[k].fn, UART_BASE + off, true);
	check_eq(T, "uart: stores past the registers are ignored or fault as access faults", sweep_bad, 0);
}

static void a_mmio_plic(void)
{
	sweep("plic", PLIC_BASE, PLIC_SIZE, 0x1000, false);
	/* priorities, pending, the enables and contexts of every context index:
	 * garbage stores, the guest's own PLIC only */
	sweep("plic priorities", PLIC_BASE, 0x2000, 4, true);
	sweep("plic enables", PLIC_BASE + 0x2000, 0x200, 4, true);
	sweep("plic contexts", PLIC_BASE + 0x200000, 0x10000, 0x800, true);
	sweep("plic top", PLIC_BASE + PLIC_SIZE - 0x1000, 0x1000, 8, true);
}

static void a_mmio_vmgenid(void)
{
	sweep("vmgenid", VMGENID_BASE, VMGENID_SIZE, 1, true);
}

static void a_mmio_misaligned(void)
{
	static const unsigned long bases[] = { UART_BASE, PLIC_BASE, VMGENID_BASE };
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(bases); i++) {
		unsigned long a = bases[i];
		struct trap_record tr;
		unsigned long pc, n;

		trap_arm();
		ld_w(a + 2, &pc);
		n = trap_disarm(&tr);
		check_eq(T, "misaligned lw to a device: one trap", n, 1);
		CHECK_IN("misaligned lw to a device: load access or misaligned fault", tr.scause,
			 EXC_LOAD_ACCESS, EXC_LOAD_MISALIGNED);
		trap_arm();
		st_d(a + 4, &pc);
		n = trap_disarm(&tr);
		check_eq(T, "misaligned sd to a device: one trap", n, 1);
		CHECK_IN("misaligned sd to a device: store access or misaligned fault", tr.scause,
			 EXC_STORE_ACCESS, EXC_STORE_MISALIGNED);
		/* a 4-byte load straddling the window's end */
		trap_arm();
		ld_d(a + (i == 0 ? UART_SIZE : i == 1 ? PLIC_SIZE : VMGENID_SIZE) - 4, &pc);
		n = trap_disarm(&tr);
		CHECK_IN("straddling ld at a window's end: one fault", n, 1);
	}
}

static void a_mmio_amo(void)
{
	static const unsigned long bases[] = { UART_BASE + 7, PLIC_BASE + 4, VMGENID_BASE };
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(bases); i++) {
		unsigned long a = bases[i] & ~7UL;

		expect_trap("amoswap.w to a device", amo_swap_w, a, EXC_STORE_ACCESS, a);
		expect_trap("amoadd.d to a device", amo_add_d, a, EXC_STORE_ACCESS, a);
		expect_trap("lr.w from a device", amo_lr_w, a, EXC_LOAD_ACCESS, a);
		/* sc.w without a reservation may fail without any access (rd != 0) */
		{
			struct trap_record tr;
			unsigned long pc, n, rd;

			trap_arm();
			rd = amo_sc_w(a, &pc);
			n = trap_disarm(&tr);
			check_eq(T, "sc.w to a device: fails (rd != 0) or a store access fault at the pc",
				 n ? (n == 1 && tr.scause == EXC_STORE_ACCESS && tr.sepc == pc) : rd != 0, 1);
		}
		expect_trap("fld from a device", fp_ld, a, EXC_LOAD_ACCESS, a);
		expect_trap("fsd to a device", fp_st, a, EXC_STORE_ACCESS, a);
		expect_trap("hlv.w (hypervisor insn)", hlv_w, a, EXC_ILLEGAL_INST, -1UL);
		expect_trap("hsv.w (hypervisor insn)", hsv_w, a, EXC_ILLEGAL_INST, -1UL);
	}
}

static void a_mmio_ss(void)
{
	static const unsigned long bases[] = { UART_BASE, PLIC_BASE, VMGENID_BASE };
	unsigned long i;

	/* with SSE off: ssamoswap is an illegal instruction */
	expect_trap("ssamoswap.d, shadow stacks off", ss_swap, UART_BASE, EXC_ILLEGAL_INST, -1UL);
	if (fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0).error) {
		report_fail(T, "fwft set shadow_stack 1 (got error, want 0)");
		return;
	}
	for (i = 0; i < ARRAY_SIZE(bases); i++)
		expect_trap("ssamoswap.d to a device", ss_swap, bases[i], EXC_STORE_ACCESS, bases[i]);
	/* sspush / sspopchk with ssp in a device window */
	{
		struct trap_record tr;
		unsigned long n, old = csr_read(CSR_SSP);

		csr_write(CSR_SSP, VMGENID_BASE + 0x100);
		trap_arm();
		__asm__ volatile(".option push\n\t.option norvc\n\t" SSPUSH_RA ".option pop" ::: "memory");
		n = trap_disarm(&tr);
		check_eq(T, "sspush with ssp in vmgenid: one trap", n, 1);
		check_eq(T, "sspush with ssp in vmgenid: store access fault", tr.scause, EXC_STORE_ACCESS);
		csr_write(CSR_SSP, UART_BASE + 0x10);
		trap_arm();
		__asm__ volatile(".option push\n\t.option norvc\n\tli t0, 0\n\t" SSPOPCHK_T0 ".option pop"
				 ::: "memory", "t0");
		n = trap_disarm(&tr);
		check_eq(T, "sspopchk with ssp in the UART: one trap", n, 1);
		check_eq(T, "sspopchk with ssp in the UART: store access fault (docs/cfi.md 9.10)",
			 tr.scause, EXC_STORE_ACCESS);
		csr_write(CSR_SSP, old);
	}
	fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0);
}

/* Fetch from @target; the cfi vector resumes at the label after the jump. */
static void fetch_try(unsigned long target)
{
	struct cfi_rec *rec = &recs[current_hartid()];
	unsigned long old = csr_read(CSR_STVEC);
	char w[80];

	cfi_trap_install(rec);
	__asm__ volatile("lla t0, 1f\n\t"
			 "sd t0, %1(%0)\n\t"
			 "jalr zero, 0(%2)\n"
			 "1:\n"
			 :: "r"(rec), "i"(CR_FIXUP), "r"(target) : "t0", "memory");
	cfi_trap_remove(old);
	snprintf(w, sizeof(w), "fetch from 0x%lx: one trap", target);
	if (!check_eq(T, w, rec->count, 1))
		return;
	snprintf(w, sizeof(w), "fetch from 0x%lx: instruction access fault", target);
	check_eq(T, w, rec->scause, EXC_INST_ACCESS);
	snprintf(w, sizeof(w), "fetch from 0x%lx: stval", target);
	check_eqx(T, w, rec->stval, target);
}

static void a_fetch_devices(void)
{
	fetch_try(UART_BASE);
	fetch_try(UART_BASE + 0x80);
	fetch_try(PLIC_BASE);
	fetch_try(PLIC_BASE + 0x200000);
	fetch_try(VMGENID_BASE);
	fetch_try(VMGENID_BASE + 0xffc);
}

/* ---- CSRs and instructions ----------------------------------------------- */

#define TRYC(name, insn)						\
static void name(unsigned long *pc)					\
{									\
	unsigned long v = 0;						\
	__asm__ volatile(".option push\n\t.option norvc\n\t.option arch, +h\n" \
			 "1:\t" insn "\n\t.option pop\n\tlla %0, 1b"	\
			 : "=&r"(*pc), "+&r"(v) :: "memory");		\
}

TRYC(w_hstatus, "csrw hstatus, %1")
TRYC(w_hgatp, "csrw hgatp, %1")
TRYC(w_hedeleg, "csrw hedeleg, %1")
TRYC(w_hideleg, "csrw hideleg, %1")
TRYC(w_hvip, "csrw hvip, %1")
TRYC(r_htval, "csrr %1, htval")
TRYC(r_htinst, "csrr %1, htinst")
TRYC(w_henvcfg, "csrw henvcfg, %1")
TRYC(w_hcounteren, "csrw hcounteren, %1")
TRYC(w_vsatp, "csrw vsatp, %1")
TRYC(r_vsstatus, "csrr %1, vsstatus")
TRYC(w_vstvec, "csrw vstvec, %1")
TRYC(w_mstatus, "csrw mstatus, %1")
TRYC(w_medeleg, "csrw medeleg, %1")
TRYC(r_mseccfg, "csrr %1, 0x747")
TRYC(r_ssp, "csrr %1, 0x011")
TRYC(i_hfence_vvma, "hfence.vvma zero, zero")
TRYC(i_mret, "mret")

static const struct { const char *name; void (*fn)(unsigned long *); } vs_illegal[] = {
	{ "csrw hstatus", w_hstatus }, { "csrw hgatp", w_hgatp },
	{ "csrw hedeleg", w_hedeleg }, { "csrw hideleg", w_hideleg },
	{ "csrw hvip", w_hvip }, { "csrr htval", r_htval }, { "csrr htinst", r_htinst },
	{ "csrw henvcfg", w_henvcfg }, { "csrw hcounteren", w_hcounteren },
	{ "csrw vsatp", w_vsatp }, { "csrr vsstatus", r_vsstatus },
	{ "csrw vstvec", w_vstvec }, { "csrw mstatus", w_mstatus },
	{ "csrw medeleg", w_medeleg }, { "csrr mseccfg", r_mseccfg },
	{ "csrr ssp (shadow stacks off)", r_ssp },
	{ "hfence.vvma", i_hfence_vvma }, { "mret", i_mret },
};

static void a_csr_vs(void)
{
	unsigned long i;

	fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0);
	for (i = 0; i < ARRAY_SIZE(vs_illegal); i++) {
		struct trap_record tr;
		unsigned long pc, n;
		char w[80];

		trap_arm();
		vs_illegal[i].fn(&pc);
		n = trap_disarm(&tr);
		snprintf(w, sizeof(w), "VS %s: one illegal-instruction trap at the pc", vs_illegal[i].name);
		check_eq(T, w, n == 1 && tr.scause == EXC_ILLEGAL_INST && tr.sepc == pc, 1);
	}
	/* senvcfg.SSE stays 0 while FWFT shadow_stack is 0 */
	csr_set(CSR_SENVCFG, ENVCFG_SSE);
	check_eq(T, "VS senvcfg.SSE reads 0 while shadow_stack is off",
		 !!(csr_read(CSR_SENVCFG) & ENVCFG_SSE), 0);
	csr_clear(CSR_SENVCFG, ENVCFG_SSE | ENVCFG_LPE);
	check_eq(T, "satp still Bare after the hypervisor CSR writes", csr_read(CSR_SATP), 0);
}

/* U-mode snippets: one instruction, then ecall back (a0 = 0x55). */
#define UFN(name, insn)							\
	void name(void);						\
	__asm__(".pushsection .text\n.option push\n.option norvc\n"	\
		".option arch, +h\n.balign 4\n.globl " #name "\n" #name ":\n\t" \
		insn "\n\tli a0, 0x55\n\tecall\n.option pop\n.popsection");

UFN(u_sstatus, "csrr t0, sstatus")
UFN(u_satp, "csrw satp, zero")
UFN(u_hstatus, "csrr t0, hstatus")
UFN(u_hgatp, "csrw hgatp, zero")
UFN(u_vsatp, "csrw vsatp, zero")
UFN(u_ssp, "csrr t0, 0x011")
UFN(u_ssp_w, "csrw 0x011, zero")
UFN(u_senvcfg, "csrw senvcfg, zero")
UFN(u_stimecmp, "csrw 0x14d, zero")
UFN(u_sret, "sret")
UFN(u_wfi, "wfi")
UFN(u_sfence, "sfence.vma")
UFN(u_hlv, "hlv.d t0, (sp)")
UFN(u_ebreak, "ebreak")
UFN(u_semi_write, "li a0, 4\n\tla a1, semi_msg\n\tslli x0, x0, 0x1f\n\tebreak\n\tsrai x0, x0, 7")
UFN(u_semi_exit, "li a0, 0x18\n\tli a1, 0x20026\n\tslli x0, x0, 0x1f\n\tebreak\n\tsrai x0, x0, 7")

const char semi_msg[] = "SEMIHOST-LEAK from a guest\n";
static unsigned long ustack[512] __attribute__((aligned(16)));

static const struct { const char *name; void (*fn)(void); unsigned long cause; } vu_cases[] = {
	{ "csrr sstatus", u_sstatus, EXC_ILLEGAL_INST },
	{ "csrw satp", u_satp, EXC_ILLEGAL_INST },
	{ "csrr hstatus", u_hstatus, EXC_ILLEGAL_INST },
	{ "csrw hgatp", u_hgatp, EXC_ILLEGAL_INST },
	{ "csrw vsatp", u_vsatp, EXC_ILLEGAL_INST },
	{ "csrr ssp", u_ssp, EXC_ILLEGAL_INST },
	{ "csrw ssp", u_ssp_w, EXC_ILLEGAL_INST },
	{ "csrw senvcfg", u_senvcfg, EXC_ILLEGAL_INST },
	{ "csrw stimecmp", u_stimecmp, EXC_ILLEGAL_INST },
	{ "sret", u_sret, EXC_ILLEGAL_INST },
	{ "wfi", u_wfi, EXC_ILLEGAL_INST },
	{ "sfence.vma", u_sfence, EXC_ILLEGAL_INST },
	{ "hlv.d", u_hlv, EXC_ILLEGAL_INST },
	{ "ebreak", u_ebreak, EXC_BREAKPOINT },
	{ "semihosting SYS_WRITE0", u_semi_write, EXC_BREAKPOINT },
	{ "semihosting SYS_EXIT", u_semi_exit, EXC_BREAKPOINT },
};

static void vu_run(unsigned long i)
{
	struct cfi_rec *rec = &recs[current_hartid()];
	unsigned long old = csr_read(CSR_STVEC), ret;
	char w[96];

	cfi_trap_install(rec);
	ret = cfi_enter_user((unsigned long)vu_cases[i].fn, (unsigned long)&ustack[512], 0, 0, 0);
	cfi_trap_remove(old);
	snprintf(w, sizeof(w), "VU %s: one trap to the guest kernel", vu_cases[i].name);
	check_eq(T, w, rec->count, 1);
	snprintf(w, sizeof(w), "VU %s: scause", vu_cases[i].name);
	check_eq(T, w, rec->scause, vu_cases[i].cause);
	snprintf(w, sizeof(w), "VU %s: from U (SPP 0)", vu_cases[i].name);
	check_eq(T, w, !!(rec->sstatus & SR_SPP), 0);
	snprintf(w, sizeof(w), "VU %s: U code ran on to its ecall", vu_cases[i].name);
	check_eqx(T, w, ret, 0x55);
}

static void a_csr_vu(void)
{
	unsigned long i;

	for (i = 0; i < 13; i++)
		vu_run(i);
}

static void a_vu_ebreak_ecall_wfi(void)
{
	vu_run(10);	/* wfi */
	vu_run(13);	/* ebreak */
	/* ecall from VU reaches the guest kernel (cause 8), not the hypervisor:
	 * cfi_enter_user returns with its a0 */
	check_eq(T, "VU ecall reaches the guest kernel", recs[current_hartid()].ua0, 0x55);
}

static void a_semihost_vu(void)
{
	vu_run(14);
	vu_run(15);
}

/* VS semihosting: the library vector skips the ebreak (4 bytes). */
static void semi_vs(unsigned long op, unsigned long arg, const char *name)
{
	struct trap_record tr;
	unsigned long pc, n;
	char w[96];

	trap_arm();
	__asm__ volatile(".option push\n\t.option norvc\n\t"
			 "mv a0, %1\n\tmv a1, %2\n\t"
			 "slli x0, x0, 0x1f\n"
			 "1:\tebreak\n\t"
			 "srai x0, x0, 7\n\t"
			 ".option pop\n\t"
			 "lla %0, 1b"
			 : "=&r"(pc) : "r"(op), "r"(arg) : "a0", "a1", "memory");
	n = trap_disarm(&tr);
	snprintf(w, sizeof(w), "VS semihosting %s: one breakpoint at the ebreak", name);
	check_eq(T, w, n == 1 && tr.scause == EXC_BREAKPOINT && tr.sepc == pc, 1);
}

static void a_semihost_vs(void)
{
	static const unsigned long exit_block[2] = { 0x20026, 0 };

	semi_vs(0x04, (unsigned long)semi_msg, "SYS_WRITE0");
	semi_vs(0x03, (unsigned long)semi_msg, "SYS_WRITEC");
	semi_vs(0x18, 0x20026, "SYS_EXIT");
	semi_vs(0x20, (unsigned long)exit_block, "SYS_EXIT_EXTENDED");
	semi_vs(0x01, (unsigned long)semi_msg, "SYS_OPEN");
}

static void a_ssp_vs(void)
{
	struct trap_record tr;
	unsigned long pc;

	if (fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0).error) {
		report_fail(T, "fwft set shadow_stack 1 (got error, want 0)");
		return;
	}
	csr_write(CSR_SSP, 0x12345678UL & ~7UL);
	check_eqx(T, "VS ssp is the guest's own", csr_read(CSR_SSP), 0x12345678UL & ~7UL);
	csr_set(CSR_SENVCFG, ENVCFG_SSE);
	check_eq(T, "VS senvcfg.SSE sticks while shadow_stack is on",
		 !!(csr_read(CSR_SENVCFG) & ENVCFG_SSE), 1);
	check_eq(T, "fwft set shadow_stack 0", fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0).error, 0);
	check_eq(T, "senvcfg.SSE cleared with shadow_stack", !!(csr_read(CSR_SENVCFG) & ENVCFG_SSE), 0);
	trap_arm();
	r_ssp(&pc);
	check_eq(T, "VS csrr ssp traps again once shadow_stack is off", trap_disarm(&tr), 1);
}

/* ---- VS-stage page tables -------------------------------------------------- */

typedef unsigned long pte_t;
static pte_t pt_root[512] __attribute__((aligned(4096)));
static pte_t pt_l1[512] __attribute__((aligned(4096)));
static pte_t pt_l0[512] __attribute__((aligned(4096)));
static uint32_t race_alt[1024] __attribute__((aligned(4096)));
#define RACE_SB		0x00b501a3U	/* sb a1, 3(a0): UART scratch */
#define RACE_ILLEGAL	0x00b50000U	/* c.unimp (0x0000), then RACE_SB's upper half */
#define LEAF	(PTE_V | PTE_A | PTE_D | PTE_R | PTE_W | PTE_X)
#define PTE(pa, f)	((((unsigned long)(pa)) >> 12) << 10 | (f))

/* race_page: its own 4 KiB page; an AMO (no usable htinst: the hypervisor
 * fetches the instruction itself), then ret. */
void race_amo(void);
__asm__(".pushsection .text.race, \"ax\"\n.option push\n.option norvc\n"
	".balign 4096\n.globl race_amo\nrace_amo:\n\t"
	"amoswap.w a1, a1, (a0)\n\tret\n"
	".balign 4096\n.option pop\n.popsection");

static void pt_build(void)
{
	unsigned long i, race = (unsigned long)race_amo;

	memset(pt_root, 0, sizeof(pt_root));
	pt_root[0] = PTE(0, LEAF);			/* devices, identity */
	pt_root[2] = PTE(pt_l1, PTE_V);
	for (i = 0; i < 512; i++)
		pt_l1[i] = PTE(0x80000000UL + (i << 21), LEAF);
	pt_l1[(race >> 21) & 511] = PTE(pt_l0, PTE_V);
	for (i = 0; i < 512; i++)
		pt_l0[i] = PTE((race & ~0x1fffffUL) + (i << 12), LEAF);
}

static void pt_on(void)
{
	csr_write(CSR_SATP, SATP_SV39 | ((unsigned long)pt_root >> 12));
	__asm__ volatile("sfence.vma" ::: "memory");
}

static void pt_off(void)
{
	csr_write(CSR_SATP, 0);
	__asm__ volatile("sfence.vma" ::: "memory");
}

/* A walk through a device window (or the hole) is an implicit access: an
 * access fault for the guest, never an emulated device access. */
static void a_pt_walk_device(void)
{
	static const unsigned long devs[] = { VMGENID_BASE, UART_BASE, PLIC_BASE };
	unsigned long i;

	pt_build();
	pt_on();
	/* a device reached through a normal leaf works (root[0] is identity) */
	{
		struct trap_record tr;
		unsigned long pc;

		trap_arm();
		ld_b(UART_BASE + 5, &pc);
		check_eq(T, "paged: UART LSR through a leaf is emulated", trap_disarm(&tr), 0);
	}
	for (i = 0; i < ARRAY_SIZE(devs); i++) {
		struct trap_record tr;
		unsigned long pc, n, v;
		char w[96];

		pt_root[1] = PTE(devs[i], PTE_V);	/* level-1 table in a device */
		__asm__ volatile("sfence.vma" ::: "memory");
		trap_arm();
		v = ld_d(HOLE + 0x1000, &pc);
		n = trap_disarm(&tr);
		snprintf(w, sizeof(w), "walk through 0x%lx: ld gets one trap", devs[i]);
		check_eq(T, w, n, 1);
		snprintf(w, sizeof(w), "walk through 0x%lx: ld gets a load access fault", devs[i]);
		check_eq(T, w, tr.scause, EXC_LOAD_ACCESS);
		snprintf(w, sizeof(w), "walk through 0x%lx: stval is the virtual address", devs[i]);
		check_eqx(T, w, tr.stval, HOLE + 0x1000);
		snprintf(w, sizeof(w), "walk through 0x%lx: the load's register is untouched", devs[i]);
		check_eqx(T, w, v, 0x5a5a5a5aUL);
		trap_arm();
		st_w(HOLE + 0x2000, &pc);
		n = trap_disarm(&tr);
		snprintf(w, sizeof(w), "walk through 0x%lx: sw gets one access fault", devs[i]);
		check_eq(T, w, n == 1 && (tr.scause == EXC_STORE_ACCESS || tr.scause == EXC_LOAD_ACCESS), 1);
		fetch_try(HOLE + 0x3000);	/* a fetch walking through it */
	}
	pt_root[1] = 0;
	pt_off();
}


static void race_flipper(unsigned long hartid, unsigned long opaque)
{
	unsigned long race = (unsigned long)race_amo;
	pte_t *p = &pt_l0[(race >> 12) & 511], orig = *p, i = 0;

	(void)hartid;
	(void)opaque;
	WRITE_ONCE(flag2, 1);
	while (!READ_ONCE(race_stop)) {
		switch (i++ % 4) {
		case 0: WRITE_ONCE(*p, PTE(race_alt, LEAF)); break;	/* other code */
		case 1: WRITE_ONCE(*p, 0); break;			/* unmapped */
		case 2: WRITE_ONCE(*p, PTE(race, PTE_V | PTE_A | PTE_R)); break; /* not executable */
		default: WRITE_ONCE(*p, orig);
		}
		/* and rewrite the other page's instruction too, between two
		 * words with the same upper half: an executing hart may read a
		 * 32-bit instruction as two 16-bit parcels (QEMU's translator
		 * and the hypervisor's own fetch do), so a mix of the two must
		 * be one of them. 0xffffffff there gave 0xffff01a3, sb t6,
		 * -29(t5): a guest store to GPA 0x17, rightly a VM stop. */
		WRITE_ONCE(race_alt[0], i & 1 ? RACE_SB : RACE_ILLEGAL);
	}
	WRITE_ONCE(*p, orig);
}

static void a_pt_race_fetch(void)
{
	struct cfi_rec *rec = &recs[current_hartid()];
	unsigned long old, i, n[4] = { 0 }, bad = 0, last_bad = 0;
	const unsigned long iters = 20000;

	pt_build();
	race_alt[0] = RACE_SB;
	race_alt[1] = 0x00008067U;		/* ret */
	race_stop = 0;
	flag2 = 0;
	pt_on();
	/* hart 1 runs bare: it rewrites our PTE and the other page behind us */
	hart_wait_state(other_hartid(), SBI_HSM_STATE_STOPPED, 5000000);
	check_eq(T, "race: start the flipper", hart_start(other_hartid(), race_flipper, 0), SBI_SUCCESS);
	wait_for(READ_ONCE(flag2), 5000000);
	old = csr_read(CSR_STVEC);
	cfi_trap_install(rec);
	for (i = 0; i < iters; i++) {
		rec->count = 0;
		rec->scause = 0;
		__asm__ volatile("sfence.vma\n\tfence.i\n\t"
				 "lla t0, 1f\n\t"
				 "sd t0, %1(%0)\n\t"
				 "mv a0, %2\n\tli a1, 0x41\n\t"
				 "jalr ra, 0(%3)\n"
				 "1:\n"
				 :: "r"(rec), "i"(CR_FIXUP), "r"(UART_BASE + 4), "r"(race_amo)
				 : "t0", "a0", "a1", "ra", "memory");
		if (!rec->count)
			n[0]++;		/* the sb of the other page ran, or was emulated */
		else if (rec->scause == EXC_STORE_ACCESS)
			n[1]++;		/* the AMO: a store access fault (or a raced fetch) */
		else if (rec->scause == EXC_INST_PAGE_FAULT || rec->scause == EXC_INST_ACCESS)
			n[2]++;
		else if (rec->scause == EXC_ILLEGAL_INST)
			n[3]++;		/* RACE_ILLEGAL fetched from the other page */
		else {
			bad++;
			last_bad = rec->scause;
		}
	}
	cfi_trap_remove(old);
	WRITE_ONCE(race_stop, 1);
	hart_wait_state(other_hartid(), SBI_HSM_STATE_STOPPED, 5000000);
	pt_off();
	report_info(T, "race: %lu iterations: %lu no fault, %lu access faults, %lu fetch faults, %lu illegal",
		    iters, n[0], n[1], n[2], n[3]);
	check_eq(T, "race: only no-fault, store access, fetch or illegal-instruction outcomes", bad, 0);
	if (bad)
		report_info(T, "race: last unexpected scause %lu", last_bad);
	check_ge(T, "race: the AMO faulted as a store access fault some of the time", n[1], 1);
}

/* ---- interrupt and console storms ------------------------------------------ */

static volatile unsigned long storm_irqs;

static void timer_again(unsigned long irq)
{
	(void)irq;
	storm_irqs++;
	if (storm_irqs < 5000)
		sbi_set_timer(0);		/* due at once: another interrupt */
	else
		sbi_set_timer(-1UL);
}

static void a_timer_storm(void)
{
	unsigned long i, woke = 0;

	/* 5000 timer interrupts back to back, each re-armed in the past */
	storm_irqs = 0;
	trap_set_irq(IRQ_S_TIMER, timer_again);
	csr_set(CSR_SIE, MIP_STIP);
	sbi_set_timer(0);
	csr_set(CSR_SSTATUS, SR_SIE);
	wait_for(READ_ONCE(storm_irqs) >= 5000, 30000000);
	csr_clear(CSR_SSTATUS, SR_SIE);
	check_eq(T, "timer storm: 5000 interrupts taken", READ_ONCE(storm_irqs), 5000);
	/* 5000 WFIs with a due timer enabled in sie, SIE off: each returns */
	for (i = 0; i < 5000; i++) {
		sbi_set_timer(0);
		wfi();
		woke += !!(csr_read(CSR_SIP) & MIP_STIP);
	}
	sbi_set_timer(-1UL);
	csr_clear(CSR_SIE, MIP_STIP);
	check_eq(T, "wfi storm: 5000 WFIs with a due timer all returned, STIP pending", woke, 5000);
}

static void a_dbcn_read_flood(void)
{
	static char in[64];
	unsigned long i, bad = 0;

	/* nobody types: every read takes 0 bytes and writes nothing */
	memset(in, 0x77, sizeof(in));
	for (i = 0; i < 5000; i++) {
		struct sbiret r = sbi_dbcn_read(sizeof(in), (unsigned long)in, 0);

		bad += r.error != SBI_SUCCESS || r.value != 0;
	}
	for (i = 0; i < sizeof(in); i++)
		bad += in[i] != 0x77;
	check_eq(T, "dbcn read flood: 5000 reads of no input, 0 bytes each, buffer untouched", bad, 0);
}

/* ---- attacks the hypervisor must answer by stopping this VM ------------------ */

static void stop_expected(void)
{
	report_fail(T, "the attack returned (got the guest running on, want the VM stopped)");
}

static void f_load_hole(void)
{
	unsigned long pc;

	ld_d(HOLE, &pc);
	stop_expected();
}

static void f_store_top(void)
{
	unsigned long pc;

	st_d((1UL << 41) - 8, &pc);	/* the top of the Sv39x4 guest physical space */
	stop_expected();
}

static void f_amo_hole(void)
{
	unsigned long pc;

	amo_swap_w(HOLE + 0x100, &pc);
	stop_expected();
}

static void f_ss_hole(void)
{
	unsigned long pc;

	fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0);
	ss_swap(HOLE + 0x200, &pc);
	stop_expected();
}

static void f_sspush_hole(void)
{
	fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0);
	csr_write(CSR_SSP, HOLE + 0x300);
	__asm__ volatile(".option push\n\t.option norvc\n\t" SSPUSH_RA ".option pop" ::: "memory");
	stop_expected();
}

static void f_fetch_hole(void)
{
	__asm__ volatile("jalr ra, 0(%0)" :: "r"(HOLE + 0x400) : "ra", "memory");
	stop_expected();
}

static void f_gap_after_uart(void)
{
	unsigned long pc;

	ld_b(UART_BASE + UART_SIZE, &pc);
	stop_expected();
}

static void f_gap_after_vmgenid(void)
{
	unsigned long pc;

	st_w(VMGENID_BASE + VMGENID_SIZE, &pc);
	stop_expected();
}

static void f_pt_leaf_outside_ram(void)
{
	unsigned long pc;

	pt_build();
	pt_root[1] = PTE(HOLE, LEAF);		/* VA 1 GiB -> the hole */
	pt_on();
	ld_d(HOLE + 0x800, &pc);
	stop_expected();
}

static void f_pt_table_outside_ram(void)
{
	unsigned long pc;

	pt_build();
	pt_root[1] = PTE(0x50000000UL, PTE_V);	/* next level in the hole */
	pt_on();
	ld_d(HOLE + 0x800, &pc);
	stop_expected();
}

static void jump_hole(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	__asm__ volatile("jalr ra, 0(%0)" :: "r"(HOLE + 0x500) : "ra", "memory");
}

static void f_hart_start_other_oob(void)
{
	/* vCPU 1 started in RAM jumps to the hole: the VM stops for hart 1 */
	hart_start(other_hartid(), jump_hole, 0);
	udelay(2000000);
	stop_expected();
}

static const struct attack attacks[] = {
	{ "sbi_base_garbage", a_base, false, "unknown BASE fids NOT_SUPPORTED, probe 0" },
	{ "sbi_eids", a_eids, false, "legacy, vendor, experimental, 64-bit EIDs NOT_SUPPORTED" },
	{ "sbi_time_garbage", a_time, false, "any stime_value accepted, unknown fids NOT_SUPPORTED" },
	{ "sbi_ipi_masks", a_ipi_masks, false, "absent or wrapping harts INVALID_PARAM, base -1 all" },
	{ "sbi_ipi_storm", a_ipi_storm, false, "1500 IPIs to all harts from 2 vCPUs, all SUCCESS" },
	{ "sbi_rfence_args", a_rfence_args, false, "absent harts INVALID_PARAM, hfence_* NOT_SUPPORTED" },
	{ "sbi_rfence_storm", a_rfence_storm, false, "2000 remote fences to all harts, all SUCCESS" },
	{ "sbi_hsm_args", a_hsm_args, false, "INVALID_PARAM / INVALID_ADDRESS / ALREADY_AVAILABLE" },
	{ "sbi_hsm_start_race", a_hsm_race, false, "start while stopping: SUCCESS or ALREADY_AVAILABLE only" },
	{ "sbi_hsm_suspend_race", a_hsm_suspend_race, false, "IPIs and starts at a suspending vCPU" },
	{ "sbi_srst_garbage", a_srst, false, "reserved types and reasons INVALID_PARAM, VM runs on" },
	{ "sbi_dbcn_ranges", a_dbcn_ranges, false, "buffers outside RAM or wrapping INVALID_PARAM" },
	{ "sbi_dbcn_flood", a_dbcn_flood, false, "100 KB through DBCN, every call succeeds" },
	{ "uart_flood", a_uart_flood, false, "20000 bytes and garbage registers, guest's own UART" },
	{ "sbi_fwft_garbage", a_fwft_args, false, "bad features DENIED, bad values INVALID_PARAM" },
	{ "sbi_fwft_lock_bypass", a_fwft_lock, false, "a lock holds against the other vCPU and hart_start" },
	{ "sbi_pmu_garbage", a_pmu, false, "bad counters INVALID_PARAM, bad shmem INVALID_ADDRESS" },
	{ "sbi_susp_garbage", a_susp, false, "bad types INVALID_PARAM, bad address INVALID_ADDRESS, DENIED" },
	{ "sbi_sta_garbage", a_sta, false, "misaligned/flags INVALID_PARAM, outside RAM INVALID_ADDRESS" },
	{ "mmio_uart_sweep", a_mmio_uart, false, "every offset and width: emulated or access fault" },
	{ "mmio_plic_sweep", a_mmio_plic, false, "sampled offsets, every width: emulated or access fault" },
	{ "mmio_vmgenid_sweep", a_mmio_vmgenid, false, "every offset and width: emulated or access fault" },
	{ "mmio_misaligned", a_mmio_misaligned, false, "misaligned/straddling: access or misaligned fault" },
	{ "mmio_amo_fp_h", a_mmio_amo, false, "AMO, LR/SC, FP to devices: access fault; hlv/hsv: illegal" },
	{ "mmio_shadow_stack", a_mmio_ss, false, "ssamoswap/sspush/sspopchk on devices: store access fault" },
	{ "fetch_devices", a_fetch_devices, false, "fetch from a device: instruction access fault" },
	{ "csr_hyp_from_vs", a_csr_vs, false, "hypervisor/M CSRs and insns from VS: illegal instruction" },
	{ "csr_from_vu", a_csr_vu, false, "S/H CSRs, ssp, senvcfg, sret... from VU: illegal instruction" },
	{ "vu_ebreak_ecall_wfi", a_vu_ebreak_ecall_wfi, false, "VU wfi illegal, ebreak breakpoint, ecall to VS" },
	{ "semihosting_vs", a_semihost_vs, false, "semihosting sequence from VS: a breakpoint, nothing else" },
	{ "semihosting_vu", a_semihost_vu, false, "semihosting sequence from VU: a breakpoint, nothing else" },
	{ "ssp_senvcfg_vs", a_ssp_vs, false, "ssp/senvcfg.SSE only while FWFT shadow_stack is on" },
	{ "pt_walk_through_device", a_pt_walk_device, false, "VS-stage walk through a device: access fault" },
	{ "timer_wfi_storm", a_timer_storm, false, "5000 back-to-back timer interrupts, 5000 WFIs" },
	{ "sbi_dbcn_read_flood", a_dbcn_read_flood, false, "5000 reads with no input: 0 bytes each" },
	/* its own VM: a rare stop under load is tolerated (test_attacks.py EITHER) */
	{ "pt_race_fetch", a_pt_race_fetch, false, "PTE/instruction rewritten during MMIO exits: no stop" },
	/* each of these ends the VM: one per VM, last */
	{ "stop_load_hole", f_load_hole, true, "VM stopped: load guest-page fault outside RAM" },
	{ "stop_store_top_gpa", f_store_top, true, "VM stopped: store guest-page fault outside RAM" },
	{ "stop_amo_hole", f_amo_hole, true, "VM stopped: AMO outside RAM" },
	{ "stop_ssamoswap_hole", f_ss_hole, true, "VM stopped: shadow-stack access outside RAM" },
	{ "stop_sspush_hole", f_sspush_hole, true, "VM stopped: sspush with ssp outside RAM" },
	{ "stop_fetch_hole", f_fetch_hole, true, "VM stopped: instruction guest-page fault" },
	{ "stop_gap_after_uart", f_gap_after_uart, true, "VM stopped: load past the UART window" },
	{ "stop_gap_after_vmgenid", f_gap_after_vmgenid, true, "VM stopped: store past vmgenid" },
	{ "stop_pt_leaf_outside_ram", f_pt_leaf_outside_ram, true, "VM stopped: VS leaf to outside RAM" },
	{ "stop_pt_table_outside_ram", f_pt_table_outside_ram, true, "VM stopped: VS table outside RAM" },
	{ "stop_hart1_fetch_hole", f_hart_start_other_oob, true, "VM stopped: vCPU 1 fetches the hole" },
};

void test_main(unsigned long hartid)
{
	unsigned long from = bootarg_ulong("from", 0), to = bootarg_ulong("to", ARRAY_SIZE(attacks) - 1), i;

	(void)hartid;
	STORM = bootarg_ulong("storm", STORM_DEFAULT);
	if (bootarg_ulong("list", 0)) {
		for (i = 0; i < ARRAY_SIZE(attacks); i++)
			printf("ATTACK-CASE: %lu %s %s: %s\n", i, attacks[i].name,
			       attacks[i].stops ? "stops" : "returns", attacks[i].expect);
		return;
	}
	if (to >= ARRAY_SIZE(attacks))
		to = ARRAY_SIZE(attacks) - 1;
	for (i = from; i <= to; i++) {
		printf("ATTACK-BEGIN: %lu %s\n", i, attacks[i].name);
		attacks[i].fn();
		printf("ATTACK-END: %lu %s\n", i, attacks[i].name);
	}
}
