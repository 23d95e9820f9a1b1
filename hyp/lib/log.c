/* SPDX-License-Identifier: MIT */
/* Host UART output: one lock, whole lines; hypervisor lines "carapace: ...". */
#include <stdarg.h>
#include <atomic.h>
#include <log.h>
#include <printf.h>
#include <string.h>
#include <sbi_client.h>
#include <uart.h>

static struct spinlock lock = SPINLOCK_INIT;
/* The owner whose unfinished line (a shell prompt, say) is at the host cursor:
 * anyone else printing starts a new line first. */
static const void *midline;

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
	spin_lock(&lock);
	if (midline)
		puts_locked("\n", 1);
	midline = NULL;
	puts_locked("carapace: ", 10);
	puts_locked(buf, (size_t)n);
	puts_locked("\n", 1);
	spin_unlock(&lock);
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

void log_tagged(const void *owner, const char *tag, const char *text, size_t len,
		bool end_of_line)
{
	spin_lock(&lock);
	if (!len && end_of_line && midline != owner) {
		spin_unlock(&lock);	/* nothing to end */
		return;
	}
	if (midline != owner) {
		if (midline)
			puts_locked("\n", 1);
		puts_locked("[", 1);
		puts_locked(tag, strlen(tag));
		puts_locked("] ", 2);
	}
	puts_locked(text, len);
	if (end_of_line)
		puts_locked("\n", 1);
	midline = end_of_line ? NULL : owner;
	spin_unlock(&lock);
}
