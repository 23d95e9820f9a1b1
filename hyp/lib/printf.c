/* SPDX-License-Identifier: MIT */
/* Minimal vsnprintf: %d %i %u %x %X %p %s %c %%, with l/ll/z, width, '0' and '-'. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <printf.h>

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_str(struct out *o, const char *s, int width, bool left)
{
	int n = 0;

	if (!s)
		s = "(null)";
	while (s[n])
		n++;
	for (; !left && width > n; width--)
		put(o, ' ');
	while (*s)
		put(o, *s++);
	for (; left && width > n; width--)
		put(o, ' ');
}

static void put_num(struct out *o, unsigned long long v, unsigned base, bool neg,
		    int width, char pad, bool left, bool upper)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	if (neg)
		tmp[n++] = '-';
	if (neg && pad == '0') {
		/* the sign goes before zero padding */
		put(o, '-');
		n--;
		width--;
	}
	for (; !left && width > n; width--)
		put(o, pad);
	for (int i = n; i; i--)
		put(o, tmp[i - 1]);
	for (; left && width > n; width--)
		put(o, ' ');
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };

	for (; *fmt; fmt++) {
		bool left = false, upper = false;
		char pad = ' ';
		int width = 0, lng = 0;

		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '0')
				pad = '0';
			else
				break;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
		case 'i': {
			long long v = lng ? va_arg(ap, long) : va_arg(ap, int);
			bool neg = v < 0;

			put_num(&o, neg ? -(unsigned long long)v : (unsigned long long)v,
				10, neg, width, pad, left, false);
			break;
		}
		case 'u':
		case 'x':
		case 'X': {
			unsigned long long v = lng ? va_arg(ap, unsigned long) :
						     va_arg(ap, unsigned int);

			upper = *fmt == 'X';
			put_num(&o, v, *fmt == 'u' ? 10 : 16, false, width, pad, left, upper);
			break;
		}
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, (unsigned long)va_arg(ap, void *), 16, false, width, pad,
				left, false);
			break;
		case 's':
			put_str(&o, va_arg(ap, const char *), width, left);
			break;
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case '%':
			put(&o, '%');
			break;
		case '\0':
			fmt--;
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
