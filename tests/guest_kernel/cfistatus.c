// SPDX-License-Identifier: MIT
/*
 * cfistatus: what /proc/<pid>/status says about a process's user CFI state
 * (the riscv_Thread_features lines of guest-linux-patches/0001).
 *
 * For each mode, a child sets its CFI state with raw prctl()s, tells the
 * parent through a pipe and blocks; the parent, which never turns CFI on,
 * reads the child's /proc/<pid>/status from outside and prints
 *
 *   cfistatus: MODE: prctl ok|failed(-ERRNO) features=[...] locked=[...]
 *
 * ("missing" instead of [...] when the line is not there), then kills the
 * child. The test (tests/guest_kernel/test_guest_kernel.py) compares the
 * lines with what each mode must show.
 *
 * cfistatus --hold ROUNDS keeps one child per mode alive instead and prints
 * every child's lines once per round (~200 ms apart), as
 *
 *   cfistatus: round R/N MODE: pid P features=[...] locked=[...]
 *
 * so that a snapshot taken in the middle can be restored and the same
 * processes shown to have kept their CFI state. Once landing pads are on, the child
 * must not make an indirect call into libc (not built with lpad), so it only
 * issues raw syscalls (tests/linux/cfi_sys.h); this file is not built with
 * Zicfiss, so returns need no shadow-stack entries.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfi_sys.h"

#define NR_ppoll 73

enum mode { OFF, SHSTK, LPAD, BOTH, LOCKED, NMODES };

static const char *const mode_name[NMODES] = {
	"off", "shstk", "lpad", "shstk+lpad", "shstk+lpad locked",
};

/* Set the state of MODE; 0 or the first -errno. Raw syscalls only. */
static inline __attribute__((always_inline)) long set_mode(enum mode m)
{
	long rc = 0;

	if (m == SHSTK || m == BOTH || m == LOCKED)
		rc = cfi_ss_enable();
	if (!rc && (m == LPAD || m == BOTH || m == LOCKED))
		rc = cfi_lp_enable();
	if (!rc && m == LOCKED)
		rc = cfi_prctl(CFI_PR_LOCK_SHADOW_STACK_STATUS, 0, 0);
	if (!rc && m == LOCKED)
		rc = cfi_prctl(CFI_PR_SET_CFI, CFI_PR_CFI_BRANCH_LANDING_PADS,
			       CFI_PR_CFI_ENABLE | CFI_PR_CFI_LOCK);
	return rc;
}

static __attribute__((noreturn)) void child(enum mode m, int fd)
{
	long rc = set_mode(m);

	cfi_syscall5(CFI_NR_write, fd, (long)&rc, sizeof(rc), 0, 0);
	for (;;)	/* ppoll(NULL, 0, NULL, NULL): sleep until killed */
		cfi_syscall5(NR_ppoll, 0, 0, 0, 0, 0);
}

/* The value of status line KEY ("missing" if absent), into OUT. */
static void field(const char *status, const char *key, char *out, size_t len)
{
	const char *p = status;
	size_t klen = strlen(key);

	for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, klen) || p[klen] != ':')
			continue;
		p += klen + 1;
		while (*p == '\t' || *p == ' ')
			p++;
		snprintf(out, len, "[%.*s]", (int)strcspn(p, "\n"), p);
		return;
	}
	snprintf(out, len, "missing");
}

/* Start a child in mode M; its pid (0 on failure), its prctl result in RC. */
static pid_t spawn(enum mode m, long *rc)
{
	int fds[2];
	pid_t pid;

	*rc = -1;
	if (pipe(fds))
		return perror("pipe"), 0;
	pid = fork();
	if (pid < 0)
		return perror("fork"), 0;
	if (pid == 0) {
		close(fds[0]);
		child(m, fds[1]);
	}
	close(fds[1]);
	if (read(fds[0], rc, sizeof(*rc)) != sizeof(*rc)) {
		printf("cfistatus: %s: child died before reporting\n", mode_name[m]);
		waitpid(pid, NULL, 0);
		pid = 0;
	}
	close(fds[0]);
	return pid;
}

/* PID's two riscv_Thread_features values, as "features=... locked=...". */
static void features(pid_t pid, char *out, size_t len)
{
	char path[64], status[8192], feat[64], locked[64];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	n = f ? fread(status, 1, sizeof(status) - 1, f) : 0;
	if (f)
		fclose(f);
	status[n] = 0;
	field(status, "riscv_Thread_features", feat, sizeof(feat));
	field(status, "riscv_Thread_features_locked", locked, sizeof(locked));
	snprintf(out, len, "features=%s locked=%s", feat, locked);
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static int show(enum mode m)
{
	char res[32], feat[160];
	long rc;
	pid_t pid = spawn(m, &rc);

	if (!pid)
		return 1;
	features(pid, feat, sizeof(feat));
	if (rc)
		snprintf(res, sizeof(res), "failed(%ld)", rc);
	else
		snprintf(res, sizeof(res), "ok");
	printf("cfistatus: %s: prctl %s %s\n", mode_name[m], res, feat);
	reap(pid);
	return 0;
}

static int hold(int rounds)
{
	pid_t pid[NMODES];
	char feat[160];
	int m, r, bad = 0;
	long rc;

	for (m = 0; m < NMODES; m++) {
		pid[m] = spawn((enum mode)m, &rc);
		bad |= !pid[m] || rc;
	}
	for (r = 1; r <= rounds && !bad; r++) {
		for (m = 0; m < NMODES; m++) {
			features(pid[m], feat, sizeof(feat));
			printf("cfistatus: round %d/%d %s: pid %d %s\n", r, rounds,
			       mode_name[m], (int)pid[m], feat);
		}
		usleep(200000);
	}
	for (m = 0; m < NMODES; m++)
		if (pid[m])
			reap(pid[m]);
	return bad;
}

int main(int argc, char **argv)
{
	int m, bad = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 3 && !strcmp(argv[1], "--hold")) {
		bad = hold(atoi(argv[2]));
	} else {
		for (m = 0; m < NMODES; m++)
			bad |= show((enum mode)m);
	}
	printf("cfistatus: done\n");
	return bad;
}
