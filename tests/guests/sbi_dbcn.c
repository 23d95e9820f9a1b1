/* SPDX-License-Identifier: MIT */
/* SBI DBCN: write, read with no input, write_byte, unknown FID, bad buffers.
 *
 * The driver also looks for the line "BYTE-LINE: dbcn write_byte ok" that
 * this payload prints one byte per call.
 *
 * Mode-dependent bad-buffer checks:
 *  - Carapace: any buffer not wholly inside guest RAM (outside, straddling
 *    either end, lo+len wrapping, base_hi != 0) gives INVALID_PARAM.
 *  - bare OpenSBI 1.6 checks only its own domain: a buffer in the firmware
 *    region (RAM base) gives INVALID_PARAM, base_hi != 0 gives FAILED, and
 *    other bad buffers are not checked (it reads/writes them, or hangs on a
 *    wrapping range), so they are not tried there.
 *
 * Reading real input (bootarg typed=1; tests/guests/test_dbcn_input.py):
 * the payload prints "DBCN-READY", the harness types TYPED on the console,
 * the payload waits for the 16550's LSR to say data ready (the same input:
 * Carapace's DBCN reads the queue its emulated 16550 reads, OpenSBI reads
 * the 16550), gives the rest settle_ms (default 500) to arrive, then reads
 * with a 4-byte buffer (at most 4 bytes taken, nothing written past it) and
 * with larger ones until all of TYPED came back in order; then a read
 * returns 0. That the 4-byte read takes exactly 4 and the next one the
 * other 11 at once is Carapace's behaviour (the spec only bounds the count
 * by the buffer): checked under Carapace, printed on bare OpenSBI.
 */
#include "libguest.h"

#define T "dbcn"
#define OUTSIDE_RAM	0x40000000UL	/* no RAM and no emulated device */

static char line_buf[80];
static char read_buf[16];
static char long_buf[1200];

#define TYPED		"DBCN-in 42 xyz!"	/* what the harness types */
#define TYPED_LEN	(sizeof(TYPED) - 1)	/* 15: fits a 16550's FIFO */
#define SMALL		4			/* the small read's buffer */
#define UART_LSR	0x10000005UL		/* QEMU virt and Carapace alike */
#define LSR_DR		0x01
static char typed_buf[64];

static void test_write(void)
{
	const char *msg = "INFO: dbcn: a line written by one raw DBCN write\n";
	size_t len = strlen(msg);
	struct sbiret r;

	memcpy(line_buf, msg, len);
	r = sbi_dbcn_write(len, (unsigned long)line_buf, 0);
	check_eq(T, "write error", r.error, SBI_SUCCESS);
	check_eq(T, "write wrote the whole line", r.value, len);

	r = sbi_dbcn_write(0, (unsigned long)line_buf, 0);
	check_eq(T, "write of 0 bytes error", r.error, SBI_SUCCESS);
	check_eq(T, "write of 0 bytes wrote 0", r.value, 0);
}

/* Write @len bytes of @buf as a guest's console driver does, a call at a
 * time, at most @max_calls calls: the bytes written; *@first: how many the
 * first call took. */
static unsigned long write_all(const char *buf, unsigned long len, unsigned long max_calls,
			       unsigned long *first)
{
	unsigned long done = 0, calls = 0;

	*first = 0;
	while (done < len && calls < max_calls) {
		struct sbiret r = sbi_dbcn_write(len - done, (unsigned long)buf + done, 0);

		if (r.error || !r.value)
			break;
		if (!calls)
			*first = r.value;
		done += r.value;
		calls++;
	}
	return done;
}

/* A long write. SBI lets a write take fewer bytes than asked (the caller
 * writes the rest); Carapace takes at most 256 per call, so a guest flooding
 * its console cannot hold the host console (or its hart) for long; bare
 * OpenSBI takes it all. Either way every byte goes out, in order. */
static void test_long_write(void)
{
	const char *head = "INFO: dbcn: long write:";
	unsigned long want_first = env.carapace ? 256 : sizeof(long_buf);
	unsigned long done, first;

	memset(long_buf, 'x', sizeof(long_buf));
	memcpy(long_buf, head, strlen(head));
	long_buf[sizeof(long_buf) - 1] = '\n';
	done = write_all(long_buf, sizeof(long_buf), 100, &first);
	check_eq(T, "long write: the first call took a bounded part", first, want_first);
	check_eq(T, "long write: every byte written", done, sizeof(long_buf));
}

/* Several lines in one write. Carapace takes one line per call (each line
 * costs a tagged line on the host console, so 256 newlines would be 256
 * lines for one exit); bare OpenSBI takes them all. Every byte goes out. */
static void test_multi_line_write(void)
{
	static const char lines[] = "INFO: dbcn: line one\nINFO: dbcn: line two\n";
	unsigned long first_line = strlen("INFO: dbcn: line one\n");
	unsigned long want_first = env.carapace ? first_line : sizeof(lines) - 1;
	unsigned long done, first;

	memcpy(line_buf, lines, sizeof(lines) - 1);
	done = write_all(line_buf, sizeof(lines) - 1, 10, &first);
	check_eq(T, "two lines: the first call took the first line", first, want_first);
	check_eq(T, "two lines: every byte written", done, sizeof(lines) - 1);
}

static void test_read(void)
{
	struct sbiret r;

	memset(read_buf, 0x5a, sizeof(read_buf));
	r = sbi_dbcn_read(sizeof(read_buf), (unsigned long)read_buf, 0);
	check_eq(T, "read with no input error", r.error, SBI_SUCCESS);
	check_eq(T, "read with no input returns 0 bytes", r.value, 0);
	check_eq(T, "read with no input leaves the buffer", read_buf[0], 0x5a);
}

static void test_write_byte(void)
{
	const char *msg = "BYTE-LINE: dbcn write_byte ok\n";
	long first_err = SBI_SUCCESS;
	unsigned long nonzero_value = 0;

	for (; *msg; msg++) {
		struct sbiret r = sbi_dbcn_write_byte(*msg);

		if (r.error && first_err == SBI_SUCCESS)
			first_err = r.error;
		if (r.value)
			nonzero_value++;
	}
	check_eq(T, "write_byte error on every byte", first_err, SBI_SUCCESS);
	check_eq(T, "write_byte value is 0", nonzero_value, 0);
}

static void bad(const char *what, struct sbiret r, long want)
{
	check_eq(T, what, r.error, want);
}

static void test_bad_buffers(void)
{
	unsigned long ram_end = env.ram_base + env.ram_size;
	unsigned long ok = (unsigned long)line_buf;

	if (!env.carapace) {
		bad("write in firmware region", sbi_dbcn_write(8, env.ram_base, 0),
		    SBI_ERR_INVALID_PARAM);
		bad("read into firmware region", sbi_dbcn_read(8, env.ram_base, 0),
		    SBI_ERR_INVALID_PARAM);
		bad("write with base_hi 1 (OpenSBI: FAILED)",
		    sbi_dbcn_write(8, ok, 1), SBI_ERR_FAILED);
		bad("read with base_hi 1 (OpenSBI: FAILED)",
		    sbi_dbcn_read(8, ok, 1), SBI_ERR_FAILED);
		report_skip(T, "outside-RAM buffers: bare OpenSBI does not check them");
		return;
	}
	bad("write outside RAM", sbi_dbcn_write(8, OUTSIDE_RAM, 0),
	    SBI_ERR_INVALID_PARAM);
	bad("write straddling RAM end", sbi_dbcn_write(8, ram_end - 4, 0),
	    SBI_ERR_INVALID_PARAM);
	bad("write straddling RAM start",
	    sbi_dbcn_write(8, env.ram_base - 4, 0), SBI_ERR_INVALID_PARAM);
	bad("write with lo+len wrapping", sbi_dbcn_write(16, -8UL, 0),
	    SBI_ERR_INVALID_PARAM);
	bad("write of -1UL bytes from RAM", sbi_dbcn_write(-1UL, ok, 0),
	    SBI_ERR_INVALID_PARAM);
	bad("write with base_hi 1", sbi_dbcn_write(8, ok, 1),
	    SBI_ERR_INVALID_PARAM);
	bad("read into outside RAM", sbi_dbcn_read(8, OUTSIDE_RAM, 0),
	    SBI_ERR_INVALID_PARAM);
	bad("read straddling RAM end", sbi_dbcn_read(8, ram_end - 4, 0),
	    SBI_ERR_INVALID_PARAM);
	bad("read with lo+len wrapping", sbi_dbcn_read(16, -8UL, 0),
	    SBI_ERR_INVALID_PARAM);
	bad("read with base_hi 1", sbi_dbcn_read(8, ok, 1),
	    SBI_ERR_INVALID_PARAM);
}

static bool untouched(const char *p, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		if (p[i] != 0x5a)
			return false;
	return true;
}

static void test_typed_input(void)
{
	unsigned long settle = bootarg_ulong("settle_ms", 500);
	unsigned long got = 0, calls = 0, first;
	struct sbiret r;

	printf("DBCN-READY: type %lu bytes\n", (unsigned long)TYPED_LEN);
	if (!check_eq(T, "typed: input arrives",
		      wait_for(*(volatile uint8_t *)UART_LSR & LSR_DR, 60000000), 1))
		return;
	udelay(settle * 1000);

	memset(typed_buf, 0x5a, sizeof(typed_buf));
	r = sbi_dbcn_read(SMALL, (unsigned long)typed_buf, 0);
	check_eq(T, "typed: 4-byte read error", r.error, SBI_SUCCESS);
	first = r.value;
	if (!check_ge(T, "typed: 4-byte read takes some input", first, 1) ||
	    !check_le(T, "typed: 4-byte read takes at most 4 bytes", first, SMALL))
		return;
	check_eq(T, "typed: 4-byte read writes nothing past the buffer",
		 untouched(typed_buf + SMALL, sizeof(typed_buf) - SMALL), 1);
	check_eq(T, "typed: 4-byte read got the first bytes typed",
		 !memcmp(typed_buf, TYPED, first), 1);
	if (env.carapace)
		check_eq(T, "typed: 4-byte read takes exactly 4 of the 15 queued",
			 first, SMALL);
	else
		report_info(T, "typed: 4-byte read took %lu", first);

	/* the rest, in one read or (bare, byte by byte from a FIFO) several */
	got = first;
	while (got < TYPED_LEN && calls < 1000) {
		char *at = typed_buf + got;

		r = sbi_dbcn_read(sizeof(typed_buf) - got, (unsigned long)at, 0);
		if (r.error || (unsigned long)r.value > sizeof(typed_buf) - got)
			break;
		if (!calls) {
			if (env.carapace)
				check_eq(T, "typed: the next read takes the other 11",
					 r.value, TYPED_LEN - SMALL);
			else
				report_info(T, "typed: the next read took %ld", r.value);
		}
		got += r.value;
		calls++;
		if (!r.value)
			udelay(1000);
	}
	check_eq(T, "typed: read error", r.error, SBI_SUCCESS);
	check_eq(T, "typed: every byte typed was read", got, TYPED_LEN);
	check_eq(T, "typed: the bytes read are the bytes typed, in order",
		 !memcmp(typed_buf, TYPED, TYPED_LEN), 1);
	check_eq(T, "typed: nothing written past the bytes read",
		 untouched(typed_buf + got, sizeof(typed_buf) - got), 1);
	r = sbi_dbcn_read(sizeof(typed_buf), (unsigned long)typed_buf, 0);
	check_eq(T, "typed: then a read returns 0 bytes", r.value, 0);
}

void test_main(unsigned long hartid)
{
	(void)hartid;
	test_write();
	test_long_write();
	test_multi_line_write();
	test_read();
	test_write_byte();
	check_eq(T, "unknown DBCN function 3",
		 SBI_CALL0(SBI_EXT_DBCN, 3).error, SBI_ERR_NOT_SUPPORTED);
	test_bad_buffers();
	if (bootarg_ulong("typed", 0))
		test_typed_input();
}
