// SPDX-License-Identifier: MIT
/*
 * cfi_ss_proc.c: shadow stacks across process events the kernel has to
 * handle: fork (the shadow stack is copied, copy-on-write) and signal
 * delivery (a restore token is pushed and checked again at sigreturn).
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

/* 0 if depth nested balanced calls work and leave ssp where it was. */
static int balanced_ok(long depth)
{
	unsigned long ssp0 = cfi_ssrdp(), deepest = 0;
	long n = cfi_ss_balanced(depth - 1, &deepest);

	return n == depth && cfi_ssrdp() == ssp0 &&
	       ssp0 - deepest == depth * SS_ENTRY;
}

static unsigned long parent_ssp;

/* Forked child: shadow stack state must be inherited as it was. */
static int fork_child(long unused)
{
	unsigned long status = 0;

	(void)unused;
	if (cfi_prctl(CFI_PR_GET_SHADOW_STACK_STATUS, (unsigned long)&status, 0) ||
	    status != CFI_PR_SHADOW_STACK_ENABLE)
		return 1;
	if (cfi_ssrdp() != parent_ssp)
		return 2;
	/* The first sspush after fork hits a read-only (COW) shadow page. */
	if (!balanced_ok(600))
		return 3;
	return 0;
}

/* Forked child: inherited enforcement still catches a corrupted return. */
static int fork_child_hijack(long unused)
{
	(void)unused;
	cfi_install_fault_handler();
	cfi_ss_hijack();
	return 2;
}

void cfi_group_ss_fork(void)
{
	static const char *const why[] = {
		"ok", "status not inherited", "ssp differs from parent",
		"balanced calls failed",
	};
	struct cfi_status s;
	char buf[96];
	long r = cfi_ss_enable();

	if (r != 0) {
		cfi_result(CFI_FAIL, "fork with shadow stack", "enable: %s",
			   cfi_errname(r));
		return;
	}
	/* Touch the shadow stack before fork so there is something to copy. */
	cfi_check(balanced_ok(600), "fork with shadow stack: parent calls before fork", NULL);
	parent_ssp = cfi_ssrdp();
	s = cfi_run_child(fork_child, 0);
	cfi_check(s.exited && s.code == 0,
		  "fork with shadow stack: child inherits it, balanced calls work",
		  "%s", s.exited && s.code < 4 ? why[s.code] :
		  cfi_status_str(s, buf, sizeof(buf)));
	cfi_check(balanced_ok(600) && cfi_ssrdp() == parent_ssp,
		  "fork with shadow stack: parent balanced calls work after fork", NULL);

	s = cfi_run_child(fork_child_hijack, 0);
	cfi_check(cfi_fault_is(s, SIGSEGV, CFI_SEGV_CPERR),
		  "fork with shadow stack: corrupted return in child -> SEGV_CPERR",
		  "%s", cfi_status_str(s, buf, sizeof(buf)));
}

static volatile sig_atomic_t handler_ran, handler_ok;
static volatile unsigned long handler_ssp;

static void usr1_handler(int sig)
{
	(void)sig;
	handler_ssp = cfi_ssrdp();
	handler_ok = balanced_ok(32);
	handler_ran = 1;
}

void cfi_group_ss_signal(void)
{
	struct sigaction sa;
	unsigned long ssp0, ssp1;
	long r = cfi_ss_enable();

	if (r != 0) {
		cfi_result(CFI_FAIL, "signal with shadow stack", "enable: %s",
			   cfi_errname(r));
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usr1_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);

	ssp0 = cfi_ssrdp();
	raise(SIGUSR1);
	ssp1 = cfi_ssrdp();

	/* Delivery pushes a restore token, so the handler runs below ssp0. */
	cfi_check(handler_ran && handler_ok && handler_ssp != 0 && handler_ssp < ssp0,
		  "signal with shadow stack: handler runs, balanced calls inside work",
		  "ran=%d ok=%d, ssp %#lx in handler vs %#lx outside",
		  (int)handler_ran, (int)handler_ok, handler_ssp, ssp0);
	cfi_check(ssp1 == ssp0, "signal with shadow stack: ssp restored by sigreturn",
		  "%#lx -> %#lx", ssp0, ssp1);
	cfi_check(balanced_ok(64),
		  "signal with shadow stack: balanced calls after handler returns", NULL);
}
