/* SPDX-License-Identifier: MIT */
/* Tiny vsnprintf (%d %i %u %x %s %c %p, l/ll/z, width, 0 and - flags) and printf. */
#include "guest.h"
#include "printf.h"
#include "sbi.h"

struct out {
	char *buf;
	size_t size;
	size_t len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_padded(struct out *o, const char *s, size_t n, int width,
		       bool left, char pad)
{
	int fill = width > (int)n ? width - (int)n : 0;

	/* Zero padding goes after a sign so "-0042" comes out right. */
	if (!left && pad == '0' && n && *s == '-') {
		put(o, *s++);
		n--;
	}
	while (!left && fill-- > 0)
		put(o, pad);
	while (n--)
		put(o, *s++);
	while (left && fill-- > 0)
		put(o, ' ');
}

static size_t fmt_num(char *tmp, unsigned long long v, unsigned int base,
		      bool neg)
{
	char rev[24];
	size_t n = 0, i = 0;

	do {
		unsigned int d = v % base;

		rev[n++] = d < 10 ? '0' + d : 'a' + d - 10;
		v /= base;
	} while (v);
	if (neg)
		tmp[i++] = '-';
	while (n)
		tmp[i++] = rev[--n];
	return i;
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };
	char tmp[32];

	for (; *fmt; fmt++) {
		int width = 0, lng = 0;
		bool left = false;
		char pad = ' ';
		unsigned long long u;
		long long s;
		const char *str;
		size_t n;

		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		for (; *fmt == '-' || *fmt == '0'; fmt++) {
			if (*fmt == '-')
				left = true;
			else
				pad = '0';
		}
		for (; *fmt >= '0' && *fmt <= '9'; fmt++)
			width = width * 10 + (*fmt - '0');
		for (; *fmt == 'l' || *fmt == 'z'; fmt++)
			lng++;

		switch (*fmt) {
		case 'd':
		case 'i':
			s = lng ? va_arg(ap, long) : va_arg(ap, int);
			u = s < 0 ? -(unsigned long long)s : (unsigned long long)s;
			n = fmt_num(tmp, u, 10, s < 0);
			put_padded(&o, tmp, n, width, left, pad);
			break;
		case 'u':
		case 'x':
			u = lng ? va_arg(ap, unsigned long)
				: va_arg(ap, unsigned int);
			n = fmt_num(tmp, u, *fmt == 'u' ? 10 : 16, false);
			put_padded(&o, tmp, n, width, left, pad);
			break;
		case 'p':
			tmp[0] = '0';
			tmp[1] = 'x';
			n = 2 + fmt_num(tmp + 2, (unsigned long)va_arg(ap, void *),
					16, false);
			put_padded(&o, tmp, n, width, left, pad);
			break;
		case 's':
			str = va_arg(ap, const char *);
			if (!str)
				str = "(null)";
			put_padded(&o, str, strlen(str), width, left, ' ');
			break;
		case 'c':
			tmp[0] = (char)va_arg(ap, int);
			put_padded(&o, tmp, 1, width, left, ' ');
			break;
		case '%':
			put(&o, '%');
			break;
		case '\0':
			fmt--;	/* lone '%' at the end: stop at the NUL */
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
			break;
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

/* DBCN may accept fewer bytes than asked; keep going until all are out. */
long console_write(const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct sbiret r = sbi_dbcn_write(len - done,
						 (unsigned long)(buf + done), 0);

		if (r.error)
			return r.error;
		if (r.value <= 0)
			return SBI_ERR_FAILED;
		done += r.value;
	}
	return (long)done;
}

int printf(const char *fmt, ...)
{
	char buf[PRINTF_BUF];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf)) {
		/* Truncated: still end the line so the next one starts clean. */
		n = sizeof(buf) - 1;
		buf[n - 1] = '\n';
	}
	console_write(buf, n);
	return n;
}
