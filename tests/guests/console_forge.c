/* SPDX-License-Identifier: MIT */
/* Console forger: tries to make its output look like another VM's line or
 * to erase its own "[name] " tag on the host console (issue 22): backspaces,
 * a lone carriage return, CSI (ESC [, raw 0x9b, UTF-8 U+009B) moving the
 * cursor or erasing the line, NEL, the line separator, an OSC string, each
 * followed by "[victim] FORGED". Through SBI DBCN (a buffer and byte by
 * byte) and the UART. Ends with "FORGE-DONE". tests/guests/test_console.py
 * reads the host console's raw bytes. Same in both modes. */
#include "libguest.h"

#define UART_BASE	0x10000000UL

static const char *const tricks[] = {
	"\b\b\b\b\b\b\b\b\b\b\b\b[victim] FORGED\n",
	"ab\b\b\b\b\b\b\b\b\b\b\b\b[victim] FORGED\n",
	"\r[victim] FORGED\n",
	"x\x1b[1G[victim] FORGED\n",
	"x\x1b[2K\x1b[1A\r[victim] FORGED\n",
	"x\x9b" "1G[victim] FORGED\n",
	"x\xc2\x9b" "1G[victim] FORGED\n",
	"x\xc2\x85[victim] FORGED\n",
	"x\xe2\x80\xa8[victim] FORGED\n",
	"x\x1b]0;title\x07\r[victim] FORGED\n",
	"x\x0b\x0c\x1c[victim] FORGED\n",
};

static unsigned long len_of(const char *s)
{
	unsigned long n = 0;

	while (s[n])
		n++;
	return n;
}

void test_main(unsigned long hartid)
{
	volatile uint8_t *uart = (volatile uint8_t *)UART_BASE;

	(void)hartid;
	for (unsigned int i = 0; i < sizeof(tricks) / sizeof(tricks[0]); i++) {
		const char *s = tricks[i];
		unsigned long n = len_of(s);

		sbi_dbcn_write(n, (unsigned long)s, 0);
		for (unsigned long k = 0; k < n; k++)
			sbi_dbcn_write_byte((unsigned char)s[k]);
		for (unsigned long k = 0; k < n; k++)
			uart[0] = (uint8_t)s[k];
	}
	printf("FORGE-DONE\n");
}
