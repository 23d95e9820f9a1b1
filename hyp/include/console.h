/* SPDX-License-Identifier: MIT */
/* Host console: hypervisor messages, guest output multiplexed by VM name, input routing. */
#ifndef HYP_CONSOLE_H
#define HYP_CONSOLE_H
#include <types.h>

struct vm;

/** console_set_partial_flush() - show an unfinished guest line after @ms (0: never). */
void console_set_partial_flush(uint32_t ms);
/** pr_info() - print one hypervisor line, prefixed "carapace: ". */
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** hyp_panic() - a broken hypervisor invariant: print and stop the whole machine. */
void hyp_panic(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/** console_vm_write() - queue guest output; complete lines go out as "[name] text". */
void console_vm_write(struct vm *vm, const char *buf, size_t len);
/** console_vm_flush() - emit a VM's partial line (on stop). */
void console_vm_flush(struct vm *vm);
/** console_poll_input() - move host UART input into the focused VM's input queue. */
void console_poll_input(void);
/** console_vm_read() - take up to len queued input bytes for @vm; returns the count. */
size_t console_vm_read(struct vm *vm, char *buf, size_t len);

#define HYP_ASSERT(c) do { if (!(c)) hyp_panic("assertion '%s' failed at %s:%d", #c, __FILE__, __LINE__); } while (0)
#endif
