/* SPDX-License-Identifier: MIT */
/* Host console service: guest output multiplexed by VM name. */
#ifndef HYP_CONSOLE_H
#define HYP_CONSOLE_H
#include <types.h>
#include <log.h>

struct vm;

/** console_set_partial_flush() - show an unfinished guest line after @ms (0: never). */
void console_set_partial_flush(uint32_t ms);
/** console_vm_write() - guest output (vm_console_out); complete lines go out as
 *  "[name] text". */
void console_vm_write(struct vm *vm, const char *buf, size_t len);
/** console_vm_flush() - emit a VM's partial line (on stop). */
void console_vm_flush(struct vm *vm);
/** console_flush_stale() - show guest lines left unfinished for a while. */
void console_flush_stale(void);
#endif
