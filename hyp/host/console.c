/* SPDX-License-Identifier: MIT */
/* Host console: guest output as whole lines tagged "[vm] ", filtered so that
 * a guest cannot drive the terminal, erase its tag or start a line of its
 * own (hyp/include/console_filter.h). Keyboard input is the monitor's
 * (monitor.c). */
#include <atomic.h>
#include <console.h>
#include <console_filter.h>
#include <hart.h>
#include <log.h>
#include <string.h>
#include <vm.h>

static uint64_t partial_flush_ticks;	/* 0: only whole lines (batch runs) */

void console_set_partial_flush(uint32_t ms)
{
	partial_flush_ticks = timebase_hz * ms / 1000;
}

/* Take the VM's buffered text out (vm->con_lock held); it is printed after
 * the lock is dropped, so no VM lock is held while the UART is written. */
static size_t take_line(struct vm *vm, char *out)
{
	size_t n = vm->line_len;

	memcpy(out, vm->line, n);
	vm->line_len = 0;
	return n;
}

/* Guest output, filtered byte by byte (the policy: console_filter.h), into
 * the VM's line; a line goes out when it ends or fills the buffer (a
 * character that would not fit starts the next one). */
void console_vm_write(struct vm *vm, const char *buf, size_t len)
{
	char out[sizeof(vm->line)];
	struct console_out o = { .n = 0, .action = CONSOLE_NONE };
	size_t i = 0, n;

	atomic_add(&vm->stats.console_bytes, len);	/* vCPUs of a VM write from several harts */
	while (i < len || o.n) {
		bool line_done = false;

		spin_lock(&vm->con_lock);
		while (!line_done) {
			if (!o.n && o.action == CONSOLE_NONE) {
				if (i == len)
					break;
				console_filter_byte(&vm->con_filter, (uint8_t)buf[i++], &o);
			}
			if (o.n > sizeof(vm->line) - vm->line_len) {
				line_done = true;	/* o waits for the next line */
				break;
			}
			memcpy(vm->line + vm->line_len, o.b, o.n);
			vm->line_len += o.n;
			o.n = 0;
			if (o.action == CONSOLE_NEWLINE)
				line_done = true;
			else if (o.action == CONSOLE_ERASE)	/* only what is not shown yet */
				vm->line_len -= console_erase_len(vm->line, vm->line_len);
			o.action = CONSOLE_NONE;
			line_done |= vm->line_len == sizeof(vm->line);
		}
		vm->line_time = time_now();
		n = line_done ? take_line(vm, out) : 0;
		spin_unlock(&vm->con_lock);
		if (line_done)
			log_tagged(vm, vm->cfg.name, out, n, true);
	}
}

void console_vm_flush(struct vm *vm)
{
	char out[sizeof(vm->line)];
	size_t n;

	spin_lock(&vm->con_lock);
	n = take_line(vm, out);
	spin_unlock(&vm->con_lock);
	/* also ends a partial line already shown */
	log_tagged(vm, vm->cfg.name, out, n, true);
}

/* Unfinished lines (prompts, echoed keys) go out once the guest pauses. */
static void flush_stale_lines(void)
{
	uint64_t now = time_now();
	char out[sizeof(vms[0].line)];
	size_t n;

	for (unsigned int i = 0; i < nr_vms; i++) {
		struct vm *vm = &vms[i];

		if (!vm->line_len || now - vm->line_time < partial_flush_ticks)
			continue;
		spin_lock(&vm->con_lock);
		n = take_line(vm, out);
		spin_unlock(&vm->con_lock);
		if (n)
			log_tagged(vm, vm->cfg.name, out, n, false);
	}
}

/* Show unfinished lines (prompts, echoed keys) once the guest pauses. */
void console_flush_stale(void)
{
	if (partial_flush_ticks)
		flush_stale_lines();
}
