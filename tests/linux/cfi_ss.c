// SPDX-License-Identifier: MIT
/*
 * cfi_ss.c: Zicfiss shadow-stack checks: enabling through prctl, balanced
 * call chains, a corrupted return address, and shadow-stack memory rules.
 * Every group runs in its own worker (cfi_run_group), so enabling the
 * shadow stack here never affects the main cfitest process.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cfi_abi.h"
#include "cfi_report.h"
#include "cfi_sys.h"
#include "cfi_tests.h"

#define SS_ENTRY	sizeof(unsigned long)
#define PAGE		4096UL

/* Finds the /proc/self/smaps entry containing addr and reports whether its
 * VmFlags carry "ss", i.e. the kernel made it a VM_SHADOW_STACK mapping. */
static int in_ss_mapping(unsigned long addr, char *flags, size_t len)
{
	char line[512];
	int inside = 0, found = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	snprintf(flags, len, "no mapping");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		/* Only mapping headers start with "lo-hi". */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			inside = addr >= lo && addr < hi;
			continue;
		}
		if (inside && strncmp(line, "VmFlags:", 8) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(flags, len, "%.100s", line + 8);
			found = strstr(line, " ss") != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}

void cfi_group_ss_enable(void)
{
	unsigned long before, ssp, status = ~0UL;
	char flags[160];
	long r;

	before = cfi_ssrdp();
	cfi_check(before == 0, "shadow stack: ssrdp reads 0 before enable",
		  "ssp=%#lx", before);

	r = cfi_ss_enable();
	cfi_check(r == 0, "shadow stack: PR_SET_SHADOW_STACK_STATUS(ENABLE) succeeds",
		  "%s", cfi_errname(r));
	if (r != 0)
		return;

	r = cfi_prctl(CFI_PR_GET_SHADOW_STACK_STATUS, (unsigned long)&status, 0);
	cfi_check(r == 0 && status == CFI_PR_SHADOW_STACK_ENABLE,
		  "shadow stack: PR_GET_SHADOW_STACK_STATUS reports ENABLE",
		  "%s, status=%#lx", cfi_errname(r), status);

	ssp = cfi_ssrdp();
	cfi_check(ssp != 0, "shadow stack: ssrdp non-zero after enable",
		  "ssp=%#lx", ssp);

	/* The kernel sets ssp to the top (one past the end) of its mapping. */
	cfi_check(ssp && in_ss_mapping(ssp - SS_ENTRY, flags, sizeof(flags)),
		  "shadow stack: ssp points into a VM_SHADOW_STACK mapping",
		  "VmFlags:%s", flags);

	/* Once locked, a request to turn it off must be refused. */
	r = cfi_prctl(CFI_PR_LOCK_SHADOW_STACK_STATUS, 0, 0);
	if (r == 0)
		r = cfi_prctl(CFI_PR_SET_SHADOW_STACK_STATUS, 0, 0) == 0 ? 1 : 0;
	status = ~0UL;
	cfi_prctl(CFI_PR_GET_SHADOW_STACK_STATUS, (unsigned long)&status, 0);
	cfi_check(r == 0 && status == CFI_PR_SHADOW_STACK_ENABLE,
		  "shadow stack: disabling after PR_LOCK_SHADOW_STACK_STATUS is refused",
		  "%s, status=%#lx", r == 1 ? "disable accepted" : cfi_errname(r),
		  status);
}

/* Runs depth nested sspush/sspopchk frames and checks the shadow stack
 * grew by exactly one entry per frame and came back to where it was. */
static void balanced(const char *check, long depth)
{
	unsigned long ssp0, ssp1, deepest = 0;
	long n;

	ssp0 = cfi_ssrdp();
	n = cfi_ss_balanced(depth - 1, &deepest);
	ssp1 = cfi_ssrdp();
	cfi_check(n == depth && ssp1 == ssp0 && ssp0 - deepest == depth * SS_ENTRY,
		  check, "%ld levels, ssp %#lx -> deepest %#lx -> %#lx",
		  n, ssp0, deepest, ssp1);
}

void cfi_group_ss_calls(void)
{
	long r = cfi_ss_enable();

	if (r != 0) {
		cfi_result(CFI_FAIL, "shadow stack: balanced calls",
			   "enable: %s", cfi_errname(r));
		return;
	}
	balanced("shadow stack: 1 balanced sspush/sspopchk call", 1);
	balanced("shadow stack: 64 nested balanced calls", 64);
	/* 20000 entries = 40 shadow-stack pages, all faulted in on demand. */
	balanced("shadow stack: 20000 nested balanced calls across shadow-stack pages", 20000);
}

/* Child: enable, then return through a corrupted return address. */
int cfi_ss_violate(long unused)
{
	(void)unused;
	cfi_install_fault_handler();
	if (cfi_ss_enable() != 0)
		return 1;
	cfi_ss_hijack();
	return 2;	/* not reached: either trapped or hijacked */
}

void cfi_group_ss_violation(void)
{
	struct cfi_status s = cfi_run_child(cfi_ss_violate, 0);
	char buf[96];

	cfi_check(cfi_fault_is(s, SIGSEGV, CFI_SEGV_CPERR),
		  "shadow stack: corrupted return address -> SIGSEGV/SEGV_CPERR",
		  "%s", s.exited && s.code == CFI_EXIT_HIJACKED ?
		  "return went to the forged address" :
		  s.exited && s.code == 1 ? "enable failed" :
		  cfi_status_str(s, buf, sizeof(buf)));
}

static unsigned long *ss_page;

/* Children of cfi_group_ss_memory (shadow stack already enabled). */
/* An ordinary store to shadow-stack memory must not land. */
static int plain_store(long unused)
{
	(void)unused;
	cfi_install_fault_handler();
	*(volatile unsigned long *)ss_page = 0x1234;
	return 3;
}

/* A shadow-stack store to ordinary memory must not land either. */
static int ss_store_to_plain(long unused)
{
	static unsigned long plain[2];

	(void)unused;
	cfi_install_fault_handler();
	cfi_ssamoswap(&plain[0], 0x1234);
	return 3;
}

void cfi_group_ss_memory(void)
{
	struct cfi_status s;
	unsigned long old, tok;
	char buf[96];
	long r, m;

	/*
	 * Enable first: while the task's SSE bit is clear, the R=0/W=1/X=0
	 * PTE of a shadow-stack page is a reserved encoding, so even a plain
	 * load from it page-faults (and Linux just retries it forever).  The
	 * children below inherit the enabled state through fork.
	 */
	r = cfi_ss_enable();
	if (r != 0) {
		cfi_result(CFI_FAIL, "shadow stack: memory", "enable: %s",
			   cfi_errname(r));
		return;
	}
	m = cfi_map_shadow_stack(0, PAGE, CFI_SHADOW_STACK_SET_TOKEN);
	cfi_check(m > 0, "shadow stack: map_shadow_stack(4K, SET_TOKEN) succeeds",
		  "%s", m > 0 ? "ok" : cfi_errname(m));
	if (m <= 0)
		return;
	ss_page = (unsigned long *)m;

	/* The kernel writes the restore token with ssamoswap; an ordinary
	 * load must be able to read it back (shadow stacks are readable). */
	tok = ss_page[PAGE / SS_ENTRY - 1];
	cfi_check(tok == (unsigned long)m + PAGE,
		  "shadow stack: restore token readable by a plain load",
		  "token=%#lx, expected %#lx", tok, (unsigned long)m + PAGE);

	s = cfi_run_child(plain_store, 0);
	cfi_check(cfi_fault_is(s, SIGSEGV, CFI_SEGV_ACCERR),
		  "shadow stack: plain store to shadow-stack page -> SIGSEGV/SEGV_ACCERR",
		  "%s", s.exited && s.code == 3 ? "store succeeded" :
		  cfi_status_str(s, buf, sizeof(buf)));

	/* The spec makes this an access fault, but QEMU (10.0) lets shadow-
	 * stack stores through to ordinary read-write pages, so on QEMU --
	 * and on Carapace running on QEMU -- a landed store is only a SKIP. */
	s = cfi_run_child(ss_store_to_plain, 0);
	if (s.exited && s.code == 3)
		cfi_result(CFI_SKIP, "shadow stack: ssamoswap to ordinary memory -> SIGSEGV",
			   "store landed; QEMU does not enforce this");
	else
		cfi_check(s.exited ? s.code >> 4 == SIGSEGV : s.sig == SIGSEGV,
			  "shadow stack: ssamoswap to ordinary memory -> SIGSEGV",
			  "%s", cfi_status_str(s, buf, sizeof(buf)));

	old = cfi_ssamoswap(&ss_page[1], 0x5a5a5a5aUL);
	cfi_check(old == 0 && ss_page[1] == 0x5a5a5a5aUL,
		  "shadow stack: ssamoswap to shadow-stack page works",
		  "old=%#lx, now=%#lx", old, ss_page[1]);
}
