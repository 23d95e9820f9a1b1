/* SPDX-License-Identifier: MIT */
/* Host console: one lock, whole lines, guest output tagged "[vm] ". */
#include <stdarg.h>
#include <atomic.h>
#include <console.h>
#include <monitor.h>
#include <printf.h>
#include <string.h>
#include <sbi_client.h>
#include <uart.h>
#include <vm.h>

static struct spinlock console_lock = SPINLOCK_INIT;

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

/* Emit the VM's buffered line; caller holds vm->lock. */
static void vm_line_emit(struct vm *vm)
{
	spin_lock(&console_lock);
	puts_locked("[", 1);
	puts_locked(vm->name, strlen(vm->name));
	puts_locked("] ", 2);
	puts_locked(vm->line, vm->line_len);
	puts_locked("\n", 1);
	spin_unlock(&console_lock);
	vm->line_len = 0;
}

void console_vm_write(struct vm *vm, const char *buf, size_t len)
{
	spin_lock(&vm->lock);
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (c == '\n') {
			vm_line_emit(vm);
			continue;
		}
		if (c == '\r')
			continue;
		/* keep the host terminal sane: no escape sequences from guests */
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			c = '?';
		vm->line[vm->line_len++] = c;
		if (vm->line_len == VM_CONSOLE_LINE)
			vm_line_emit(vm);
	}
	spin_unlock(&vm->lock);
}

void console_vm_flush(struct vm *vm)
{
	spin_lock(&vm->lock);
	if (vm->line_len)
		vm_line_emit(vm);
	spin_unlock(&vm->lock);
}

/* Host input goes to the focused VM; the escape key opens the monitor. */
void console_poll_input(void)
{
	static bool in_monitor;
	int c;

	if (!nr_vms)
		return;
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
