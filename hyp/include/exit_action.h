/* SPDX-License-Identifier: MIT */
/* The verdict an exit handler returns to the dispatcher (hyp/dispatch/exit.c)
 * and the run loop: the vocabulary of every handler, in a header of its own so
 * a handler does not include the dispatcher's. */
#ifndef HYP_EXIT_ACTION_H
#define HYP_EXIT_ACTION_H

/* What the run loop does after an exit handler. Only the dispatcher advances sepc. */
enum exit_action {
	EXIT_RESUME_NEXT,	/* skip the trapping instruction, re-enter */
	EXIT_RESUME_SAME,	/* re-enter at the same pc (retry, or pc already set) */
	EXIT_INJECTED,		/* a trap was redirected into the guest; re-enter */
	EXIT_YIELD,		/* give the hart away (WFI, HSM stop/suspend, slice over) */
	EXIT_VM_STOP,		/* the VM was stopped; leave it */
};
#endif
