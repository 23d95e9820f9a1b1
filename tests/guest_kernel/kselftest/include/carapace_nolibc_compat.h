/* SPDX-License-Identifier: MIT */
/*
 * carapace_nolibc_compat.h: the few libc definitions the upstream riscv CFI
 * kselftests (tools/testing/selftests/riscv/cfi) use and the kernel's own
 * nolibc lacks. Forced in front of every test source (-include), so it also
 * pulls in nolibc itself. Written for Carapace from the uapi headers. (The
 * wait-status macros nolibc got wrong or lacked are fixed by our patch 0003,
 * guest-linux-patches/, not here.)
 */
#ifndef CARAPACE_NOLIBC_COMPAT_H
#define CARAPACE_NOLIBC_COMPAT_H

/*
 * The uapi struct sigaction has a plain sa_handler only; the tests use the
 * libc one with sa_sigaction. Rename the uapi one out of the way.
 */
#define sigaction carapace_uapi_sigaction
#include <linux/signal.h>
#undef sigaction

/*
 * The tests read the faulting pc as uc_mcontext.gregs[0], glibc's name for
 * the signal frame's registers. Same layout as the uapi struct sigcontext
 * (32 registers, pc first, then the FP state), whose header is kept out.
 */
#define _ASM_RISCV_SIGCONTEXT_H
#include <asm/ptrace.h>
struct sigcontext {
	unsigned long gregs[32];
	union {
		union __riscv_fp_state fpregs;
		struct __riscv_extra_ext_header extdesc;
	};
};

#include "nolibc.h"

struct sigaction {
	union {
		void (*sa_handler)(int);
		void (*sa_sigaction)(int, siginfo_t *, void *);
	};
	unsigned long sa_flags;
	sigset_t sa_mask;
};

static __attribute__((unused)) int sigemptyset(sigset_t *set)
{
	memset(set, 0, sizeof(*set));
	return 0;
}

/* rt_sigaction; riscv needs no sa_restorer (the vDSO returns from handlers) */
static __attribute__((unused))
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return __sysret(__nolibc_syscall4(__NR_rt_sigaction, sig, act, old,
					  sizeof(sigset_t)));
}

#endif
