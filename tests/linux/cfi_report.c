// SPDX-License-Identifier: MIT
/*
 * cfi_report.c: PASS/FAIL/SKIP accounting for cfitest and the fork/pipe
 * plumbing that lets each group of checks run in its own process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfi_abi.h"
#include "cfi_report.h"

/* Seconds a test child may run before SIGALRM ends it: a hung CFI path
 * should show up as a FAIL line, not as a stuck boot. */
#define CHILD_TIMEOUT	20
#define GROUP_TIMEOUT	60

static int n_pass, n_fail;
/* Inside a group worker: write end of the pipe to the parent; else -1. */
static int result_fd = -1;

static const char *const verdict_name[] = { "PASS", "FAIL", "SKIP" };

static void emit(enum cfi_verdict v, const char *check, const char *detail)
{
	if (v == CFI_PASS)
		n_pass++;
	else if (v == CFI_FAIL)
		n_fail++;
	if (detail && *detail)
		printf("%s: cfi: %s (%s)\n", verdict_name[v], check, detail);
	else
		printf("%s: cfi: %s\n", verdict_name[v], check);
	fflush(stdout);
}

/* Tabs and newlines separate fields/records on the pipe. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n')
			*s = ' ';
}

static void vresult(enum cfi_verdict v, const char *check, const char *fmt,
		    va_list ap)
{
	char detail[256] = "", name[160], rec[512];
	int n;

	if (fmt)
		vsnprintf(detail, sizeof(detail), fmt, ap);
	if (result_fd < 0) {
		emit(v, check, detail);
		return;
	}
	snprintf(name, sizeof(name), "%s", check);
	sanitize(name);
	sanitize(detail);
	n = snprintf(rec, sizeof(rec), "%d\t%s\t%s\n", (int)v, name, detail);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(rec)) {
		n = sizeof(rec) - 1;
		rec[n - 1] = '\n';
	}
	/* One write below PIPE_BUF: records from several processes never mix. */
	if (write(result_fd, rec, n) != n)
		_exit(120);
}

void cfi_result(enum cfi_verdict v, const char *check, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vresult(v, check, fmt, ap);
	va_end(ap);
}

void cfi_check(int ok, const char *check, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vresult(ok ? CFI_PASS : CFI_FAIL, check, fmt, ap);
	va_end(ap);
}

void cfi_totals(int *passed, int *failed)
{
	*passed = n_pass;
	*failed = n_fail;
}

static void parse_records(char *buf)
{
	char *line, *next;

	for (line = buf; *line; line = next) {
		char *check, *detail, *nl = strchr(line, '\n');
		int v;

		if (!nl)
			break;	/* truncated last record: the worker died mid-write */
		*nl = '\0';
		next = nl + 1;
		check = strchr(line, '\t');
		detail = check ? strchr(check + 1, '\t') : NULL;
		if (!detail)
			continue;
		*check++ = '\0';
		*detail++ = '\0';
		v = atoi(line);
		if (v < CFI_PASS || v > CFI_SKIP)
			v = CFI_FAIL;
		emit((enum cfi_verdict)v, check, detail);
	}
}

static struct cfi_status wait_child(pid_t pid)
{
	struct cfi_status s = { 0, -1, 0 };
	int ws;

	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR)
			return s;
	if (WIFEXITED(ws)) {
		s.exited = 1;
		s.code = WEXITSTATUS(ws);
	} else if (WIFSIGNALED(ws)) {
		s.sig = WTERMSIG(ws);
	}
	return s;
}

void cfi_run_group(const char *group, void (*fn)(void))
{
	static char buf[16384];
	size_t used = 0;
	struct cfi_status s;
	char sbuf[96];
	int fds[2];
	pid_t pid;

	fflush(stdout);
	if (pipe(fds) < 0 || (pid = fork()) < 0) {
		cfi_result(CFI_FAIL, group, "pipe/fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		close(fds[0]);
		result_fd = fds[1];
		alarm(GROUP_TIMEOUT);
		fn();
		_exit(0);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], buf + used, sizeof(buf) - 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += n;
		if (used == sizeof(buf) - 1)
			break;
	}
	buf[used] = '\0';
	close(fds[0]);
	s = wait_child(pid);
	parse_records(buf);
	if (!s.exited || s.code != 0)
		cfi_result(CFI_FAIL, group, "worker ended abnormally: %s",
			   cfi_status_str(s, sbuf, sizeof(sbuf)));
}

struct cfi_status cfi_run_child(int (*fn)(long), long arg)
{
	struct cfi_status s = { 0, -1, 0 };
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return s;
	if (pid == 0) {
		alarm(CHILD_TIMEOUT);
		_exit(fn(arg));
	}
	return wait_child(pid);
}

int cfi_fault_is(struct cfi_status s, int sig, int si_code)
{
	return s.exited && s.code == ((sig << 4) | (si_code & 15));
}

const char *cfi_status_str(struct cfi_status s, char *buf, size_t len)
{
	if (!s.exited && s.sig == 0)
		snprintf(buf, len, "fork/wait failed");
	else if (!s.exited)
		snprintf(buf, len, "killed by %s (unhandled)", sigabbrev_np(s.sig) ?: "signal");
	else if (s.code >= 16)
		snprintf(buf, len, "SIG%s si_code %d (handled)",
			 sigabbrev_np(s.code >> 4) ?: "?", s.code & 15);
	else
		snprintf(buf, len, "exit %d", s.code);
	return buf;
}

void cfi_install_fault_handler(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL };
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = (void (*)(int, siginfo_t *, void *))cfi_fault_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

const char *cfi_errname(long ret)
{
	if (ret >= 0)
		return "ok";
	return strerrorname_np((int)-ret) ?: "unknown errno";
}
