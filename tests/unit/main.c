/* SPDX-License-Identifier: MIT */
/* Runs every TEST() of this binary, each in a forked child so that a crash or a
 * sanitizer abort fails only that test.
 *   ./test_x            run all tests
 *   ./test_x SUBSTR...  run the tests whose name contains one of SUBSTR
 *   UNIT_NOFORK=1       run in-process (for a debugger)
 * Output: one "PASS: unit: <name>" / "FAIL: unit: <name>" line per test, then
 * "N passed, M failed"; exit status 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test.h"

#define UNIT_MAX_TESTS 512

static struct {
	const char *name;
	void (*fn)(void);
} tests[UNIT_MAX_TESTS];
static unsigned int nr_tests;
static unsigned int failures;	/* expectation failures in the running test */

void unit_register(const char *name, void (*fn)(void))
{
	if (nr_tests == UNIT_MAX_TESTS) {
		fprintf(stderr, "unit: too many tests (raise UNIT_MAX_TESTS)\n");
		abort();
	}
	for (unsigned int i = 0; i < nr_tests; i++) {
		if (!strcmp(tests[i].name, name)) {
			fprintf(stderr, "unit: duplicate test name %s\n", name);
			abort();
		}
	}
	tests[nr_tests].name = name;
	tests[nr_tests].fn = fn;
	nr_tests++;
}

void unit_fail_eq(const char *file, int line, const char *ea, const char *eb,
		  unsigned long long a, unsigned long long b, int ne)
{
	failures++;
	printf("  %s:%d: expected %s %s %s\n", file, line, ea, ne ? "!=" : "==", eb);
	printf("    %s = %lld (0x%llx)\n", ea, (long long)a, a);
	printf("    %s = %lld (0x%llx)\n", eb, (long long)b, b);
}

void unit_fail_true(const char *file, int line, const char *e)
{
	failures++;
	printf("  %s:%d: expected true: %s\n", file, line, e);
}

void unit_deadline(unsigned int seconds)
{
	alarm(seconds);
}

int unit_streq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return !strcmp(a, b);
}

void unit_fail_str(const char *file, int line, const char *ea, const char *eb,
		   const char *a, const char *b)
{
	failures++;
	printf("  %s:%d: expected %s == %s\n", file, line, ea, eb);
	printf("    %s = %s%s%s\n", ea, a ? "\"" : "", a ? a : "NULL", a ? "\"" : "");
	printf("    %s = %s%s%s\n", eb, b ? "\"" : "", b ? b : "NULL", b ? "\"" : "");
}

static int selected(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strstr(name, argv[i]))
			return 1;
	return 0;
}

static int run_inline(unsigned int i)
{
	failures = 0;
	fake_csr_reset();
	tests[i].fn();
	return failures == 0;
}

static int run_forked(unsigned int i)
{
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return run_inline(i);
	}
	if (!pid) {
		int ok = run_inline(i);

		fflush(stdout);
		exit(ok ? 0 : 1);	/* exit(), not _exit(): LeakSanitizer runs here */
	}
	if (waitpid(pid, &status, 0) != pid) {
		perror("waitpid");
		return 0;
	}
	if (WIFSIGNALED(status)) {
		printf("  killed by signal %d\n", WTERMSIG(status));
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) > 1)
		printf("  exit status %d (sanitizer report above?)\n", WEXITSTATUS(status));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	const char *nofork = getenv("UNIT_NOFORK");
	unsigned int passed = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (unsigned int i = 0; i < nr_tests; i++) {
		int ok;

		if (!selected(tests[i].name, argc, argv))
			continue;
		ok = nofork && *nofork && strcmp(nofork, "0") ? run_inline(i) : run_forked(i);
		printf("%s: unit: %s\n", ok ? "PASS" : "FAIL", tests[i].name);
		if (ok)
			passed++;
		else
			failed++;
	}
	if (!passed && !failed)
		printf("unit: no test selected\n");
	printf("%u passed, %u failed\n", passed, failed);
	return failed || (!passed && !failed) ? 1 : 0;
}
