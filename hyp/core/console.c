/* SPDX-License-Identifier: MIT */
/* Host console: one lock, whole lines, guest output tagged "[vm] ". */
#include <stdarg.h>
#include <atomic.h>
#include <hart.h>
#include <console.h>
#include <monitor.h>
#include <printf.h>
#include <string.h>
#include <sbi_client.h>
#include <uart.h>
#include <vm.h>

static struct spinlock console_lock = SPINLOCK_INIT;
/* The VM whose unfinished line (a shell prompt, say) is at the host cursor:
 * anyone else printing starts a new line first. */
static const struct vm *midline;

static uint64_t partial_flush_ticks;	/* 0: only whole lines (batch runs) */

void console_set_partial_flush(uint32_t ms)
{
	partial_flush_ticks = timebase_hz * ms / 1000;
}

static void puts_locked(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			uart_putc('\r');
		uart_putc(s[i]);
	}
}

void pr_info(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	spin_lock(&console_lock);
	if (midline)
		puts_locked("\n", 1);
	midline = NULL;
	puts_locked("carapace: ", 10);
	puts_locked(buf, (size_t)n);
	puts_locked("\n", 1);
	spin_unlock(&console_lock);
}

void hyp_panic(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* no lock: the holder may be the one that broke */
	puts_locked("carapace: PANIC: ", 17);
	puts_locked(buf, strlen(buf));
	puts_locked("\n", 1);
	sbi_system_shutdown(true);
}

/* Emit the VM's buffered text, as a whole line or as the start of one.
 * Caller holds vm->lock. */
static void vm_text_emit(struct vm *vm, bool end_of_line)
{
	spin_lock(&console_lock);
	if (midline != vm) {
		if (midline)
			puts_locked("\n", 1);
		puts_locked("[", 1);
		puts_locked(vm->name, strlen(vm->name));
		puts_locked("] ", 2);
	}
	puts_locked(vm->line, vm->line_len);
	if (end_of_line)
		puts_locked("\n", 1);
	midline = end_of_line ? NULL : vm;
	spin_unlock(&console_lock);
	vm->line_len = 0;
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
	spin_lock(&vm->lock);
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (c == '\n') {
			vm_text_emit(vm, true);
			continue;
		}
		if (c == '\r' || drop_escape(vm, c))
			continue;
		/* other control characters could still drive the host terminal */
		if ((c < 0x20 && c != '\t' && c != '\b') || c == 0x7f)
			c = '?';
		vm->line[vm->line_len++] = c;
		if (vm->line_len == VM_CONSOLE_LINE)
			vm_text_emit(vm, true);
	}
	vm->line_time = time_now();
	spin_unlock(&vm->lock);
}

void console_vm_flush(struct vm *vm)
{
	spin_lock(&vm->lock);
	if (vm->line_len || midline == vm)
		vm_text_emit(vm, true);
	spin_unlock(&vm->lock);
}

/* Unfinished lines (prompts, echoed keys) go out once the guest pauses. */
static void flush_stale_lines(void)
{
	uint64_t now = time_now();

	for (unsigned int i = 0; i < nr_vms; i++) {
		struct vm *vm = &vms[i];

		if (!vm->line_len || now - vm->line_time < partial_flush_ticks)
			continue;
		spin_lock(&vm->lock);
		if (vm->line_len)
			vm_text_emit(vm, false);
		spin_unlock(&vm->lock);
	}
}

/* Host input goes to the focused VM; the escape key opens the monitor. */
void console_poll_input(void)
{
	static bool in_monitor;
	int c;

	if (!nr_vms)
		return;
	if (partial_flush_ticks)
		flush_stale_lines();
	while ((c = uart_getc()) >= 0) {
		struct vm *vm;

		if (in_monitor) {
			in_monitor = monitor_key(c);
			continue;
		}
		if (c == MONITOR_ESCAPE) {
			in_monitor = true;
			monitor_open();
			continue;
		}
		vm = &vms[monitor_focus()];
		spin_lock(&vm->lock);
		if ((vm->in_head - vm->in_tail) < VM_INPUT_SIZE) {
			vm->input[vm->in_head % VM_INPUT_SIZE] = (char)c;
			vm->in_head++;
		}
		spin_unlock(&vm->lock);
		vuart_input_ready(vm);
	}
}

size_t console_vm_read(struct vm *vm, char *buf, size_t len)
{
	size_t n = 0;

	spin_lock(&vm->lock);
	while (n < len && vm->in_tail != vm->in_head) {
		buf[n++] = vm->input[vm->in_tail % VM_INPUT_SIZE];
		vm->in_tail++;
	}
	spin_unlock(&vm->lock);
	return n;
}
