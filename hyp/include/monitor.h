/* SPDX-License-Identifier: MIT */
/* The operator's monitor on the host console (escape key Ctrl-]). */
#ifndef HYP_MONITOR_H
#define HYP_MONITOR_H
#include <types.h>

struct vcpu;

#define MONITOR_ESCAPE	0x1d	/* Ctrl-] (QEMU keeps Ctrl-A for itself) */

/** monitor_poll_input() - host keyboard input: to the focused VM's UART, or to
 *  the monitor after the escape key. */
void monitor_poll_input(void);
/** monitor_key() - feed one host key while the monitor is open; returns false
 *  when the monitor closes. */
bool monitor_key(int c);
/** monitor_open() - show the monitor menu. */
void monitor_open(void);
/** monitor_focus() - index of the VM that gets host input. */
unsigned int monitor_focus(void);
/** monitor_print_vcpu_cfi() - one line in words about a vCPU's CFI state;
 *  waits for its hart until @until at most (vcpu_sync_state()). */
void monitor_print_vcpu_cfi(struct vcpu *v, uint64_t until);
#endif
