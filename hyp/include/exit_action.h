/* SPDX-License-Identifier: MIT */
/* The verdict an exit handler returns to the dispatcher (hyp/dispatch/exit.c)
 * and the run loop: the vocabulary of every handler, in a header of its own so
 * a handler does not include the dispatcher's. */
#ifndef HYP_EXIT_ACTION_H
#define HYP_EXIT_ACTION_H

/* What the run loop does after an exit handler. */
enum exit_action {
	EXIT_RESUME,		/* re-enter (at the pc the verdict says) */
	EXIT_INJECTED,		/* a trap was redirected into the guest; re-enter */
	EXIT_YIELD,		/* give the hart away (WFI, HSM stop/suspend, slice over) */
	EXIT_VM_STOP,		/* the VM was stopped; leave it */
	EXIT_FULL,		/* fast path only: not handled, nothing changed (vcpu_exit_hot) */
};

/* A handler's whole verdict. The run loop alone moves the guest's pc
 * (run/vcpu_run.c, exit_apply()): by @pc_step, after the handler and before
 * anything else reads the context. 0 re-runs the instruction or keeps a pc the
 * handler set (a trap redirected to the guest, a sret emulated); 4 skips an
 * ecall, a WFI or a trapped CSR access; 2 or 4 an emulated load/store (its
 * decoded length, compressed included). Returned in two registers (a0, a1):
 * @action is register-wide because GCC moves a 4-byte member with padding
 * through the stack, a cost on every SBI call. */
struct exit_verdict {
	long action;		/* enum exit_action */
	unsigned long pc_step;	/* bytes the guest pc moves past the trapping instruction */
};

/** exit_stay() - @act with the guest pc kept where it is. */
static inline struct exit_verdict exit_stay(enum exit_action act)
{
	return (struct exit_verdict){ act, 0 };
}

/** exit_next() - re-enter past the trapping instruction of @len bytes. */
static inline struct exit_verdict exit_next(unsigned long len)
{
	return (struct exit_verdict){ EXIT_RESUME, len };
}
#endif
