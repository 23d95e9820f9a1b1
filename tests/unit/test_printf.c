/* SPDX-License-Identifier: MIT */
/* hyp/lib/printf.c. unit.mk compiles it and this file with
 * -Dsnprintf=hyp_snprintf -Dvsnprintf=hyp_vsnprintf: the hypervisor's functions
 * under other names, the host libc's untouched. No <stdio.h> here. */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <printf.h>
#include "test.h"

static char buf[128];

/* snprintf into buf (fully sized); check the return value against the text */
#define EXPECT_FMT(want, ...)                                                 \
	do {                                                                  \
		int n_ = snprintf(buf, sizeof(buf), __VA_ARGS__);             \
		EXPECT_STREQ(buf, want);                                      \
		EXPECT_EQ(n_, sizeof(want) - 1);                              \
	} while (0)

/* formats gcc would reject at compile time, passed as non-literals */
static const char *volatile fmt_unknown = "a%qb";
static const char *volatile fmt_trailing = "abc%";
static const char *volatile null_str;

TEST(printf_signed)
{
	EXPECT_FMT("0", "%d", 0);
	EXPECT_FMT("42", "%d", 42);
	EXPECT_FMT("-42", "%d", -42);
	EXPECT_FMT("-1", "%i", -1);
	EXPECT_FMT("-2147483648", "%d", INT_MIN);
	EXPECT_FMT("2147483647", "%d", INT_MAX);
	EXPECT_FMT("-9223372036854775807", "%ld", -LONG_MAX);
	EXPECT_FMT("9223372036854775807", "%ld", LONG_MAX);
	EXPECT_FMT("-5 -6", "%ld %lld", -5L, -6LL);
	/* an int argument with no 'l': only 32 bits are read */
	EXPECT_FMT("-1", "%d", (int)0xffffffff);
}

TEST(printf_signed_min)
{
	EXPECT_FMT("-9223372036854775808", "%ld", LONG_MIN);
	EXPECT_FMT("-9223372036854775808", "%lld", LLONG_MIN);
}

TEST(printf_unsigned_hex)
{
	EXPECT_FMT("0", "%u", 0u);
	EXPECT_FMT("4294967295", "%u", UINT_MAX);
	EXPECT_FMT("18446744073709551615", "%lu", ULONG_MAX);
	EXPECT_FMT("12345", "%zu", (size_t)12345);
	EXPECT_FMT("deadbeef", "%x", 0xdeadbeefu);
	EXPECT_FMT("DEADBEEF", "%X", 0xdeadbeefu);
	EXPECT_FMT("0", "%x", 0u);
	EXPECT_FMT("123456789abcdef0", "%lx", 0x123456789abcdef0UL);
	EXPECT_FMT("ffffffffffffffff", "%llx", ~0ULL);
	EXPECT_FMT("ffffffff", "%x", 0xffffffffu);	/* not sign-extended */
	EXPECT_FMT("0000000000001234", "%016lx", 0x1234UL);
	EXPECT_FMT("fedcba9876543210", "%016lx", 0xfedcba9876543210UL);
	EXPECT_FMT("0x00000080", "0x%08x", 0x80u);
}

TEST(printf_width_and_flags)
{
	EXPECT_FMT("   42|", "%5d|", 42);
	EXPECT_FMT("42   |", "%-5d|", 42);
	EXPECT_FMT("-42  |", "%-5d|", -42);
	EXPECT_FMT("00042", "%05d", 42);
	EXPECT_FMT("-0042", "%05d", -42);
	EXPECT_FMT("  -42", "%5d", -42);
	EXPECT_FMT("123456", "%3d", 123456);	/* width is a minimum */
	EXPECT_FMT("ab   |", "%-5s|", "ab");
	EXPECT_FMT("   ab|", "%5s|", "ab");
	EXPECT_FMT("abcdef|", "%-5s|", "abcdef");
	EXPECT_FMT("|     |", "|%5s|", "");
}

TEST(printf_string_char_percent_pointer)
{
	EXPECT_FMT("hello world", "%s %s", "hello", "world");
	EXPECT_FMT("(null)", "%s", null_str);
	EXPECT_FMT("x", "%c", 'x');
	EXPECT_FMT("a-b", "%c%c%c", 'a', '-', 'b');
	EXPECT_FMT("%", "%%");
	EXPECT_FMT("100% done", "%d%% done", 100);
	EXPECT_FMT("0x1234", "%p", (void *)0x1234);
	EXPECT_FMT("0x0", "%p", (void *)0);
	EXPECT_FMT("0xffffffffffffffff", "%p", (void *)UINTPTR_MAX);
	EXPECT_FMT("plain text", "plain text");
	EXPECT_FMT("", "%s", "");
}

TEST(printf_unknown_and_trailing_percent)
{
	int n = snprintf(buf, sizeof(buf), fmt_unknown, 1);

	EXPECT_STREQ(buf, "a%qb");
	EXPECT_EQ(n, 4);
	n = snprintf(buf, sizeof(buf), fmt_trailing, 1);
	EXPECT_STREQ(buf, "abc");
	EXPECT_EQ(n, 3);
}

TEST(printf_truncation)
{
	char small[8];
	int n;

	for (unsigned int i = 0; i < sizeof(small); i++)
		small[i] = 'Z';
	n = snprintf(small, 5, "hello world");
	EXPECT_EQ(n, 11);			/* the length it would have had */
	EXPECT_STREQ(small, "hell");		/* NUL-terminated within size */
	EXPECT_EQ(small[5], 'Z');		/* nothing written past size */

	n = snprintf(small, 6, "hello");	/* exact fit */
	EXPECT_EQ(n, 5);
	EXPECT_STREQ(small, "hello");
	n = snprintf(small, 5, "hello");	/* one short */
	EXPECT_EQ(n, 5);
	EXPECT_STREQ(small, "hell");

	n = snprintf(small, 4, "%d", 123456);
	EXPECT_EQ(n, 6);
	EXPECT_STREQ(small, "123");
	n = snprintf(small, 4, "%10d", 1);
	EXPECT_EQ(n, 10);
	EXPECT_STREQ(small, "   ");
	n = snprintf(small, 3, "%016lx", 0xabcUL);
	EXPECT_EQ(n, 16);
	EXPECT_STREQ(small, "00");

	small[0] = 'Z';
	n = snprintf(small, 1, "abc");
	EXPECT_EQ(n, 3);
	EXPECT_EQ(small[0], '\0');

	small[0] = 'Z';
	n = snprintf(small, 0, "abc%d", 12);	/* size 0: nothing written */
	EXPECT_EQ(n, 5);
	EXPECT_EQ(small[0], 'Z');
	EXPECT_EQ(snprintf(NULL, 0, "%s=%d", "key", -1), 6);
}

static int call_vsnprintf(char *b, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int call_vsnprintf(char *b, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b, size, fmt, ap);
	va_end(ap);
	return n;
}

TEST(printf_vsnprintf)
{
	EXPECT_EQ(call_vsnprintf(buf, sizeof(buf), "%s:%u:%lx", "vm", 3u, 0xffUL), 7);
	EXPECT_STREQ(buf, "vm:3:ff");
	EXPECT_EQ(call_vsnprintf(buf, 3, "%s", "abcdef"), 6);
	EXPECT_STREQ(buf, "ab");
}
