/* SPDX-License-Identifier: MIT */
/* Host console: guest output as whole lines tagged "[vm] " (escape sequences
 * dropped). Keyboard input is the monitor's (monitor.c). */
#include <atomic.h>
#include <console.h>
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

/* Guests must not drive the host terminal: drop ESC sequences (ESC x, and
 * CSI "ESC [ params final") instead of passing them on. */
static bool drop_escape(struct vm *vm, char c)
{
	switch (vm->esc_state) {
	case 1:
		vm->esc_state = c == '[' ? 2 : 0;
		return true;
	case 2:
		if (c >= 0x40 && c <= 0x7e)
			vm->esc_state = 0;
		return true;
	default:
		if (c != 0x1b)
			return false;
		vm->esc_state = 1;
		return true;
	}
}

void console_vm_write(struct vm *vm, const char *buf, size_t len)
{
	char out[sizeof(vm->line)];
	size_t i = 0, n;

	while (i < len) {
		bool line_done = false;

		spin_lock(&vm->con_lock);
		for (; i < len && !line_done; i++) {
			char c = buf[i];

			if (c == '\n') {
				line_done = true;
				continue;
			}
			if (c == '\r' || drop_escape(vm, c))
				continue;
			/* other control characters could still drive the host terminal */
			if ((c < 0x20 && c != '\t' && c != '\b') || c == 0x7f)
				c = '?';
			vm->line[vm->line_len++] = c;
			line_done = vm->line_len == sizeof(vm->line);
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
