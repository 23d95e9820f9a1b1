/* SPDX-License-Identifier: MIT */
/* Host ns16550a UART, polled (the hypervisor takes no host device interrupts). */
#include <uart.h>

#define UART_RBR	0
#define UART_THR	0
#define UART_LSR	5
#define UART_LSR_DR	0x01
#define UART_LSR_THRE	0x20

static volatile uint8_t *uart_base;
static unsigned int uart_shift;

static inline uint8_t reg_read(unsigned int r)
{
	return uart_base[r << uart_shift];
}

static inline void reg_write(unsigned int r, uint8_t v)
{
	uart_base[r << uart_shift] = v;
}

void uart_init(hpa_t base, unsigned int reg_shift)
{
	/* QEMU's UART needs no baud setup; firmware already configured it. */
	uart_base = (volatile uint8_t *)base;
	uart_shift = reg_shift;
}

void uart_putc(char c)
{
	if (!uart_base)
		return;
	while (!(reg_read(UART_LSR) & UART_LSR_THRE))
		;
	reg_write(UART_THR, (uint8_t)c);
}

int uart_getc(void)
{
	if (!uart_base || !(reg_read(UART_LSR) & UART_LSR_DR))
		return -1;
	return reg_read(UART_RBR);
}
