/* SPDX-License-Identifier: MIT */
/* SBI DBTR (debug triggers): probe, num_triggers, set_shmem's errors, an
 * execute trigger on a function of this guest and a load/store watchpoint
 * taken as breakpoint exceptions in S-mode, read back, disable/enable,
 * uninstall, and triggers asking for modes a guest may not have.
 *
 * The same checks run on bare QEMU + OpenSBI 1.6 and under Carapace, and
 * print the same PASS lines (tests/guests/test_dbtr.py compares them), except
 * where OpenSBI 1.6 departs from the v3.0 text: those lines end in
 * "(Carapace)" and run only there (OpenSBI 1.6 answers FAILED where the text
 * says INVALID_PARAM, ignores flags, takes a pre-3.0 update call, and accepts
 * a shared-memory address outside RAM that it then faults on, halting).
 * OpenSBI 1.6 also lays the shared memory out as a pre-3.0 draft did: 5
 * words an entry, trig_idx written back in the last; under Carapace it is
 * the v3.0 layout (4 words, trig_idx in the first). The payload uses each
 * one's layout (ent(), idx_of()), so the checks are the same.
 *
 * Attack (Carapace only; bootargs hyp_text=ADDR hyp_data=ADDR, addresses of
 * the hypervisor the harness reads from its ELF): triggers on those
 * addresses for every mode a guest can name; the host must run on, and
 * its exits through that code must not stop it.
 *
 * Snapshot mode (Carapace only; bootarg snapshot=1, tests/guests/
 * test_dbtr_snapshot.py): an execute trigger on dbtr_target and a disabled
 * load watchpoint, checked, then "SNAPSHOT-READY" and a wait until the VM
 * generation ID changes (a restore gives a new one), or with wait_ms=N for
 * N ms of guest time (a migration moves the VM, its ID kept); the copy
 * checks that the trigger still fires, the disabled one still does not,
 * and read_triggers returns the very words it read before.
 */
#include <abi/sbi_dbtr.h>
#include "libguest.h"
#include "trap.h"

#define T "dbtr"
#define OUTSIDE_RAM	0x40000000UL	/* no RAM and no emulated device */
#define MAX_ENTRIES	16

static uint64_t shm_words[MAX_ENTRIES * 5] __attribute__((aligned(64)));
static unsigned int stride, idx_word;	/* words an entry; trig_idx's word */
static volatile uint64_t watched, unwatched;
static unsigned long nr_trig;

/* Two functions to put execute triggers on: their first instruction is a
 * nop, so that the trap handler skipping it (the trigger fires before it
 * runs) leaves them whole. */
__asm__(".pushsection .text\n"
	".option push\n.option norvc\n"
	".globl dbtr_target\ndbtr_target:\n nop\n li a0, 42\n ret\n"
	".globl dbtr_target2\ndbtr_target2:\n nop\n li a0, 43\n ret\n"
	".option pop\n.popsection\n");
long dbtr_target(void);
long dbtr_target2(void);

static struct sbiret dbtr(unsigned long fid, unsigned long a0, unsigned long a1, unsigned long a2)
{
	return SBI_CALL3(SBI_EXT_DBTR, fid, a0, a1, a2);
}

static unsigned long mc6(unsigned long bits)
{
	return MC6_TYPE | bits;
}

/* Entry @i: word 0 is trig_state (read) or trig_idx (v3.0 install/update). */
static uint64_t *ent(unsigned int i)
{
	return &shm_words[i * stride];
}

static void entry(unsigned int i, unsigned long tdata1, unsigned long tdata2, unsigned long tdata3)
{
	uint64_t *w = ent(i);

	for (unsigned int k = 0; k < stride; k++)
		w[k] = 0;
	w[1] = tdata1;
	w[2] = tdata2;
	w[3] = tdata3;
}

/* trig_idx an install wrote back for entry @i */
static uint64_t idx_of(unsigned int i)
{
	return ent(i)[idx_word];
}

/* Call @fn armed: the number of exceptions it raised, @r the last. */
static unsigned long hits_calling(long (*fn)(void), struct trap_record *r)
{
	trap_arm();
	(void)fn();
	return trap_disarm(r);
}

static unsigned long hits_loading(volatile uint64_t *p, struct trap_record *r)
{
	trap_arm();
	(void)*p;
	return trap_disarm(r);
}

static unsigned long hits_storing(volatile uint64_t *p, struct trap_record *r)
{
	trap_arm();
	*p = 7;
	return trap_disarm(r);
}

static void expect_breakpoint(const char *what, unsigned long n, const struct trap_record *r,
			      unsigned long sepc)
{
	char buf[112];

	snprintf(buf, sizeof(buf), "%s: one exception", what);
	check_eq(T, buf, n, 1);
	snprintf(buf, sizeof(buf), "%s: scause is breakpoint (3)", what);
	check_eq(T, buf, r->scause, 3);
	if (sepc) {
		snprintf(buf, sizeof(buf), "%s: sepc is the trigger's address", what);
		check_eqx(T, buf, r->sepc, sepc);
	}
}

static void test_counts(void)
{
	nr_trig = dbtr(SBI_DBTR_NUM_TRIGGERS, 0, 0, 0).value;
	report_info(T, "num_triggers(0) = %lu", nr_trig);
	check_ge(T, "num_triggers(0) >= 2", nr_trig, 2);
	check_ge(T, "num_triggers(mcontrol6) >= 2",
		 dbtr(SBI_DBTR_NUM_TRIGGERS, mc6(0), 0, 0).value, 2);
	if (nr_trig > MAX_ENTRIES)
		nr_trig = MAX_ENTRIES;
	if (env.carapace)
		check_eq(T, "num_triggers(mcontrol, type 2) is 0: it cannot be kept out of HS (Carapace)",
			 dbtr(SBI_DBTR_NUM_TRIGGERS, TDATA1_TYPE_MCONTROL << TDATA1_TYPE_SHIFT, 0, 0).value,
			 0);
	check_eq(T, "unknown DBTR function 8", dbtr(8, 0, 0, 0).error, SBI_ERR_NOT_SUPPORTED);
}

static void test_shmem(void)
{
	unsigned long ok = (unsigned long)shm_words;
	unsigned long ram_end = env.ram_base + env.ram_size;

	check_eq(T, "read_triggers without shared memory is NO_SHMEM",
		 dbtr(SBI_DBTR_READ_TRIGGERS, 0, 1, 0).error, SBI_ERR_NO_SHMEM);
	check_eq(T, "install_triggers without shared memory is NO_SHMEM",
		 dbtr(SBI_DBTR_INSTALL_TRIGGERS, 1, 0, 0).error, SBI_ERR_NO_SHMEM);
	check_eq(T, "set_shmem lo 4 bytes past an 8-byte boundary is INVALID_PARAM",
		 dbtr(SBI_DBTR_SET_SHMEM, ok + 4, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "set_shmem hi 1 is INVALID_ADDRESS",
		 dbtr(SBI_DBTR_SET_SHMEM, ok, 1, 0).error, SBI_ERR_INVALID_ADDRESS);
	if (env.carapace) {
		check_eq(T, "set_shmem flags 1 is INVALID_PARAM (Carapace)",
			 dbtr(SBI_DBTR_SET_SHMEM, ok, 0, 1).error, SBI_ERR_INVALID_PARAM);
		check_eq(T, "set_shmem outside RAM is INVALID_ADDRESS (Carapace)",
			 dbtr(SBI_DBTR_SET_SHMEM, OUTSIDE_RAM, 0, 0).error, SBI_ERR_INVALID_ADDRESS);
		check_eq(T, "set_shmem straddling the end of RAM is INVALID_ADDRESS (Carapace)",
			 dbtr(SBI_DBTR_SET_SHMEM, ram_end - 8, 0, 0).error, SBI_ERR_INVALID_ADDRESS);
		check_eq(T, "set_shmem below RAM is INVALID_ADDRESS (Carapace)",
			 dbtr(SBI_DBTR_SET_SHMEM, env.ram_base - 4096, 0, 0).error,
			 SBI_ERR_INVALID_ADDRESS);
		check_eq(T, "set_shmem lo -8 (would wrap) is INVALID_ADDRESS (Carapace)",
			 dbtr(SBI_DBTR_SET_SHMEM, -8UL, 0, 0).error, SBI_ERR_INVALID_ADDRESS);
	}
	check_eq(T, "set_shmem disable", dbtr(SBI_DBTR_SET_SHMEM, -1UL, -1UL, 0).error,
		 SBI_SUCCESS);
	check_eq(T, "set_shmem in RAM", dbtr(SBI_DBTR_SET_SHMEM, ok, 0, 0).error, SBI_SUCCESS);
	if (env.carapace)	/* OpenSBI 1.6: ALREADY_AVAILABLE, not in the v3.0 text */
		check_eq(T, "set_shmem again while set (Carapace)",
			 dbtr(SBI_DBTR_SET_SHMEM, ok, 0, 0).error, SBI_SUCCESS);
	if (env.carapace) {
		check_eq(T, "read_triggers from trig_max is BAD_RANGE (Carapace)",
			 dbtr(SBI_DBTR_READ_TRIGGERS, nr_trig, 1, 0).error, SBI_ERR_BAD_RANGE);
		check_eq(T, "install_triggers of trig_max + 1 is BAD_RANGE (Carapace)",
			 dbtr(SBI_DBTR_INSTALL_TRIGGERS, nr_trig + 1, 0, 0).error, SBI_ERR_BAD_RANGE);
	}
}

/* Install one trigger: its index, or -1UL after a FAIL line. */
static unsigned long install_one(const char *what, unsigned long tdata1, unsigned long tdata2)
{
	struct sbiret r;

	entry(0, tdata1, tdata2, 0);
	ent(0)[idx_word] = -1UL;
	r = dbtr(SBI_DBTR_INSTALL_TRIGGERS, 1, 0, 0);
	if (!check_eq(T, what, r.error, SBI_SUCCESS))
		return -1UL;
	check_le(T, "its trig_idx is below trig_max", idx_of(0), nr_trig - 1);
	return idx_of(0) < nr_trig ? idx_of(0) : -1UL;
}

static void read_one(unsigned long idx)
{
	for (unsigned int k = 0; k < stride; k++)
		ent(0)[k] = 0x5a5a;
	check_eq(T, "read_triggers of it", dbtr(SBI_DBTR_READ_TRIGGERS, idx, 1, 0).error,
		 SBI_SUCCESS);
}

static void test_execute(void)
{
	unsigned long tdata1 = mc6(MC6_EXECUTE | MC6_S), idx;
	struct trap_record r;

	idx = install_one("install an execute trigger on a function (S-mode)", tdata1,
			  (unsigned long)dbtr_target);
	if (idx == -1UL)
		return;
	read_one(idx);
	check_eqx(T, "read: trig_state has MAPPED and S", ent(0)[0] & 0x1f,
		  SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_S);
	check_eqx(T, "read: tdata1 as installed", ent(0)[1], tdata1);
	check_eqx(T, "read: tdata2 is the function", ent(0)[2], (unsigned long)dbtr_target);
	/* the hart is given away: the trigger must follow this vCPU back */
	sleep_us(3000);
	expect_breakpoint("calling it", hits_calling(dbtr_target, &r), &r,
			  (unsigned long)dbtr_target);
	check_eq(T, "another function does not trigger", hits_calling(dbtr_target2, &r), 0);

	if (env.carapace) {
		/* v3.0's update(count); OpenSBI 1.6 takes a pre-3.0 (base, mask) */
		entry(0, tdata1, (unsigned long)dbtr_target2, 0);
		ent(0)[0] = idx;
		check_eq(T, "update it to the other function (Carapace)",
			 dbtr(SBI_DBTR_UPDATE_TRIGGERS, 1, 0, 0).error, SBI_SUCCESS);
		expect_breakpoint("updated (Carapace), calling the other", hits_calling(dbtr_target2, &r), &r,
				  (unsigned long)dbtr_target2);
		check_eq(T, "updated: the first does not trigger (Carapace)",
			 hits_calling(dbtr_target, &r), 0);
		ent(0)[0] = nr_trig;
		check_eq(T, "update trig_idx trig_max is INVALID_PARAM (Carapace)",
			 dbtr(SBI_DBTR_UPDATE_TRIGGERS, 1, 0, 0).error, SBI_ERR_INVALID_PARAM);
		ent(0)[0] = idx;
		ent(0)[1] = TDATA1_TYPE_MCONTROL << TDATA1_TYPE_SHIFT | MC6_EXECUTE;
		check_ne(T, "update to another type is refused (Carapace)",
			 dbtr(SBI_DBTR_UPDATE_TRIGGERS, 1, 0, 0).error, SBI_SUCCESS);
		entry(0, tdata1, (unsigned long)dbtr_target, 0);
		ent(0)[0] = idx;
		check_eq(T, "update it back (Carapace)",
			 dbtr(SBI_DBTR_UPDATE_TRIGGERS, 1, 0, 0).error, SBI_SUCCESS);
	} else {
		report_info(T, "OpenSBI 1.6: update_triggers is a pre-3.0 call: not checked");
	}

	check_eq(T, "disable it", dbtr(SBI_DBTR_DISABLE_TRIGGERS, idx, 1, 0).error, SBI_SUCCESS);
	check_eq(T, "disabled: calling it does not trigger", hits_calling(dbtr_target, &r), 0);
	read_one(idx);
	check_eqx(T, "disabled: tdata1 has no mode bit", ent(0)[1], mc6(MC6_EXECUTE));
	check_eqx(T, "disabled: trig_state keeps S", ent(0)[0] & 0x1f,
		  SBI_DBTR_TS_MAPPED | SBI_DBTR_TS_S);
	check_eq(T, "enable it", dbtr(SBI_DBTR_ENABLE_TRIGGERS, idx, 1, 0).error, SBI_SUCCESS);
	expect_breakpoint("enabled again: calling it", hits_calling(dbtr_target, &r), &r,
			  (unsigned long)dbtr_target);
	check_eq(T, "uninstall it", dbtr(SBI_DBTR_UNINSTALL_TRIGGERS, idx, 1, 0).error,
		 SBI_SUCCESS);
	check_eq(T, "uninstalled: calling it does not trigger", hits_calling(dbtr_target, &r), 0);
	read_one(idx);
	check_eqx(T, "uninstalled: trig_state is 0", ent(0)[0], 0);
	check_eq(T, "uninstall it again is INVALID_PARAM",
		 dbtr(SBI_DBTR_UNINSTALL_TRIGGERS, idx, 1, 0).error, SBI_ERR_INVALID_PARAM);
}

static void test_watchpoint(void)
{
	unsigned long idx;
	struct trap_record r;

	idx = install_one("install a load/store watchpoint (S-mode)",
			  mc6(MC6_LOAD | MC6_STORE | MC6_S), (unsigned long)&watched);
	if (idx == -1UL)
		return;
	sleep_us(3000);
	expect_breakpoint("loading it", hits_loading(&watched, &r), &r, 0);
	expect_breakpoint("storing it", hits_storing(&watched, &r), &r, 0);
	check_eq(T, "another variable does not trigger", hits_loading(&unwatched, &r) +
		 hits_storing(&unwatched, &r), 0);
	check_eq(T, "uninstall the watchpoint",
		 dbtr(SBI_DBTR_UNINSTALL_TRIGGERS, idx, 1, 0).error, SBI_SUCCESS);
	check_eq(T, "uninstalled: loading it does not trigger", hits_loading(&watched, &r), 0);
}

/* Modes a guest may not have: M is refused (the spec: m must be 0); VS and
 * VU name modes an S-mode guest never runs in, so such a trigger is taken
 * and never fires, bare (no virtualization) and under Carapace alike. */
static void test_modes(void)
{
	struct trap_record r;
	struct sbiret s;
	unsigned long idx;

	entry(0, mc6(MC6_EXECUTE | MC6_M), (unsigned long)dbtr_target, 0);
	s = dbtr(SBI_DBTR_INSTALL_TRIGGERS, 1, 0, 0);
	check_ne(T, "install with m=1 is refused", s.error, SBI_SUCCESS);
	if (env.carapace)
		check_eq(T, "install with m=1 is INVALID_PARAM (Carapace)", s.error,
			 SBI_ERR_INVALID_PARAM);
	entry(0, mc6(MC6_EXECUTE | MC6_S) | TDATA1_DMODE, (unsigned long)dbtr_target, 0);
	s = dbtr(SBI_DBTR_INSTALL_TRIGGERS, 1, 0, 0);
	check_ne(T, "install with dmode=1 is refused", s.error, SBI_SUCCESS);
	if (env.carapace)
		check_eq(T, "install with dmode=1 is INVALID_PARAM (Carapace)", s.error,
			 SBI_ERR_INVALID_PARAM);
	/* the second of two is bad: nothing is installed, value names it */
	entry(0, mc6(MC6_EXECUTE | MC6_S), (unsigned long)dbtr_target, 0);
	entry(1, mc6(MC6_EXECUTE | MC6_M), (unsigned long)dbtr_target, 0);
	s = dbtr(SBI_DBTR_INSTALL_TRIGGERS, 2, 0, 0);
	check_ne(T, "install of a good and an m=1 trigger is refused", s.error, SBI_SUCCESS);
	check_eq(T, "... value is 1 (the bad entry)", s.value, 1);
	check_eq(T, "... nothing was installed: calling it does not trigger",
		 hits_calling(dbtr_target, &r), 0);

	idx = install_one("install an execute trigger for VS and VU only",
			  mc6(MC6_EXECUTE | MC6_VS | MC6_VU), (unsigned long)dbtr_target);
	if (idx != -1UL) {
		check_eq(T, "VS/VU only: calling it in S-mode does not trigger",
			 hits_calling(dbtr_target, &r), 0);
		check_eq(T, "uninstall the VS/VU trigger",
			 dbtr(SBI_DBTR_UNINSTALL_TRIGGERS, idx, 1, 0).error, SBI_SUCCESS);
	}
	if (!env.carapace)
		return;
	entry(0, TDATA1_TYPE_MCONTROL << TDATA1_TYPE_SHIFT | MC6_EXECUTE | MC6_S,
	      (unsigned long)dbtr_target, 0);
	check_eq(T, "install of an mcontrol (type 2) is FAILED (Carapace)",
		 dbtr(SBI_DBTR_INSTALL_TRIGGERS, 1, 0, 0).error, SBI_ERR_FAILED);
	entry(0, mc6(MC6_EXECUTE | MC6_S | MC6_ACTION_DEBUG_MODE << MC6_ACTION_SHIFT),
	      (unsigned long)dbtr_target, 0);
	check_eq(T, "install with action Debug Mode is INVALID_PARAM (Carapace)",
		 dbtr(SBI_DBTR_INSTALL_TRIGGERS, 1, 0, 0).error, SBI_ERR_INVALID_PARAM);
	entry(0, mc6(MC6_EXECUTE | MC6_S | MC6_CHAIN), (unsigned long)dbtr_target, 0);
	check_eq(T, "install of a chain is NOT_SUPPORTED (Carapace)",
		 dbtr(SBI_DBTR_INSTALL_TRIGGERS, 1, 0, 0).error, SBI_ERR_NOT_SUPPORTED);
	entry(0, mc6(MC6_EXECUTE | MC6_S), (unsigned long)dbtr_target, 1);
	check_eq(T, "install with tdata3 != 0 is NOT_SUPPORTED (Carapace)",
		 dbtr(SBI_DBTR_INSTALL_TRIGGERS, 1, 0, 0).error, SBI_ERR_NOT_SUPPORTED);
}

/* Every trigger in use: one more is FAILED (value 0: the first entry). */
static void test_full(void)
{
	struct sbiret s;
	unsigned long mask = 0;

	for (unsigned int i = 0; i < nr_trig; i++)
		entry(i, mc6(MC6_EXECUTE | MC6_S), (unsigned long)dbtr_target2 + 64 + 4 * i, 0);
	s = dbtr(SBI_DBTR_INSTALL_TRIGGERS, nr_trig, 0, 0);
	if (!check_eq(T, "install trig_max triggers at once", s.error, SBI_SUCCESS))
		return;
	for (unsigned int i = 0; i < nr_trig; i++)
		mask |= 1UL << (idx_of(i) & 63);
	check_eqx(T, "they have trig_idx 0..trig_max-1", mask, (1UL << nr_trig) - 1);
	entry(0, mc6(MC6_EXECUTE | MC6_S), (unsigned long)dbtr_target, 0);
	s = dbtr(SBI_DBTR_INSTALL_TRIGGERS, 1, 0, 0);
	check_eq(T, "one more is FAILED", s.error, SBI_ERR_FAILED);
	check_eq(T, "one more: value is 0", s.value, 0);
	check_eq(T, "uninstall them all", dbtr(SBI_DBTR_UNINSTALL_TRIGGERS, 0, mask, 0).error,
		 SBI_SUCCESS);
}

/* Triggers on the hypervisor's own code and data, for every mode a guest
 * can name: they must never fire in HS, so the host runs on through
 * thousands of exits. */
static void test_attack(void)
{
	unsigned long text = bootarg_ulong("hyp_text", 0), data = bootarg_ulong("hyp_data", 0);
	unsigned long all = MC6_EXECUTE | MC6_LOAD | MC6_STORE | MC6_S | MC6_U | MC6_VS | MC6_VU;
	struct sbiret s;

	if (!env.carapace || !text || !data)
		return;
	entry(0, mc6(all), text, 0);
	entry(1, mc6(all), data, 0);
	s = dbtr(SBI_DBTR_INSTALL_TRIGGERS, 2, 0, 0);
	if (!check_eq(T, "install triggers on the hypervisor's code and data (Carapace)", s.error,
		      SBI_SUCCESS))
		return;
	for (unsigned int i = 0; i < 2000; i++)
		(void)sbi_probe(SBI_EXT_DBTR);
	sleep_us(5000);
	check_eq(T, "the host ran on through 2000 SBI calls and a sleep (Carapace)", 1, 1);
	check_eq(T, "uninstall them (Carapace)",
		 dbtr(SBI_DBTR_UNINSTALL_TRIGGERS, 0, 1UL << idx_of(0) | 1UL << idx_of(1), 0).error,
		 SBI_SUCCESS);
}

#define VMGENID_GPA	0x10100000UL

static uint64_t genid_read(void)
{
	const volatile uint64_t *id = (const volatile uint64_t *)VMGENID_GPA;

	return id[0] ^ id[1];
}

/* read_triggers of [0, n) into @out (4 words an entry, Carapace's layout) */
static bool read_all(uint64_t *out, unsigned long n)
{
	for (unsigned int k = 0; k < n * stride; k++)
		shm_words[k] = 0x5a5a;
	if (dbtr(SBI_DBTR_READ_TRIGGERS, 0, n, 0).error != SBI_SUCCESS)
		return false;
	for (unsigned int k = 0; k < n * stride; k++)
		out[k] = shm_words[k];
	return true;
}

static void test_snapshot(void)
{
	unsigned long limit = us_to_ticks(bootarg_ulong("max_wait_ms", 120000) * 1000), t0;
	unsigned long wait_ms = bootarg_ulong("wait_ms", 0);
	unsigned long exec = mc6(MC6_EXECUTE | MC6_S), watch = mc6(MC6_LOAD | MC6_S);
	static uint64_t before[MAX_ENTRIES * 4], after[MAX_ENTRIES * 4];
	unsigned long idx, widx, n;
	struct trap_record r;
	uint64_t genid = genid_read();
	bool same = true;

	if (!env.carapace) {
		report_skip(T, "snapshot mode needs Carapace (a snapshot, a generation ID)");
		return;
	}
	nr_trig = dbtr(SBI_DBTR_NUM_TRIGGERS, 0, 0, 0).value;
	n = nr_trig < MAX_ENTRIES ? nr_trig : MAX_ENTRIES;
	check_ge(T, "snapshot: num_triggers(0) >= 2", nr_trig, 2);
	if (!check_eq(T, "snapshot: set_shmem", dbtr(SBI_DBTR_SET_SHMEM,
						     (unsigned long)shm_words, 0, 0).error,
		      SBI_SUCCESS))
		return;
	idx = install_one("snapshot: install an execute trigger", exec, (unsigned long)dbtr_target);
	widx = install_one("snapshot: install a load watchpoint", watch, (unsigned long)&watched);
	if (idx == -1UL || widx == -1UL)
		return;
	check_eq(T, "snapshot: disable the watchpoint",
		 dbtr(SBI_DBTR_DISABLE_TRIGGERS, widx, 1, 0).error, SBI_SUCCESS);
	expect_breakpoint("snapshot: before, calling it", hits_calling(dbtr_target, &r), &r,
			  (unsigned long)dbtr_target);
	check_eq(T, "snapshot: before, the disabled watchpoint does not fire",
		 hits_loading(&watched, &r), 0);
	if (!check_eq(T, "snapshot: read_triggers of all", read_all(before, n), true))
		return;
	printf("SNAPSHOT-READY exec=%lu watch=%lu tdata1=0x%lx tdata2=0x%lx\n", idx, widx,
	       (unsigned long)before[idx * 4 + 1], (unsigned long)before[idx * 4 + 2]);

	t0 = rdtime();
	if (wait_ms) {		/* moved meanwhile: the harness checks where we print */
		udelay(wait_ms * 1000);
	} else {
		while (genid_read() == genid && rdtime() - t0 < limit)
			udelay(1000);
		if (!check_ne(T, "restored: a new VM generation ID", genid_read(), genid))
			return;
	}
	expect_breakpoint("restored: calling it", hits_calling(dbtr_target, &r), &r,
			  (unsigned long)dbtr_target);
	check_eq(T, "restored: another function does not trigger", hits_calling(dbtr_target2, &r),
		 0);
	check_eq(T, "restored: the disabled watchpoint does not fire", hits_loading(&watched, &r),
		 0);
	check_eq(T, "restored: read_triggers of all", read_all(after, n), true);
	for (unsigned long k = 0; k < n * 4; k++)
		if (after[k] != before[k]) {
			report_info(T, "word %lu: 0x%lx, was 0x%lx", k, (unsigned long)after[k],
				    (unsigned long)before[k]);
			same = false;
		}
	check_eq(T, "restored: read_triggers returns the same words", same, true);
	check_eq(T, "restored: enable the watchpoint",
		 dbtr(SBI_DBTR_ENABLE_TRIGGERS, widx, 1, 0).error, SBI_SUCCESS);
	expect_breakpoint("restored: enabled, loading it", hits_loading(&watched, &r), &r, 0);
	check_eq(T, "restored: uninstall both", dbtr(SBI_DBTR_UNINSTALL_TRIGGERS, 0,
						     (1UL << idx) | (1UL << widx), 0).error,
		 SBI_SUCCESS);
	check_eq(T, "restored: uninstalled, calling it does not trigger",
		 hits_calling(dbtr_target, &r), 0);
}

void test_main(unsigned long hartid)
{
	(void)hartid;
	stride = env.carapace ? 4 : 5;
	idx_word = env.carapace ? 0 : 4;
	if (!check_ne(T, "probe DBTR is available", sbi_probe(SBI_EXT_DBTR).value, 0))
		return;
	if (bootarg_ulong("snapshot", 0)) {
		test_snapshot();
		return;
	}
	test_counts();
	test_shmem();
	test_execute();
	test_watchpoint();
	test_modes();
	test_full();
	test_attack();
	check_eq(T, "set_shmem disable at the end", dbtr(SBI_DBTR_SET_SHMEM, -1UL, -1UL, 0).error,
		 SBI_SUCCESS);
}
