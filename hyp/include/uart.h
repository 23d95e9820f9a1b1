/* SPDX-License-Identifier: MIT */
/* Host UART (ns16550a) driver. */
#ifndef HYP_UART_H
#define HYP_UART_H
#include <types.h>

void uart_init(hpa_t base, unsigned int reg_shift);
void uart_putc(char c);
/** uart_getc() - a received byte, or -1 when none is waiting. */
int uart_getc(void);
#endif
