/* SPDX-License-Identifier: MIT */
/* The host console's filter of guest bytes (the policy: console_filter.h). */
#include <string.h>
#include <console_filter.h>

enum {
	ESC_NONE,
	ESC_START,	/* after ESC */
	ESC_INTER,	/* ESC, intermediates 0x20-0x2f: until a final byte */
	ESC_CSI,	/* ESC [: parameters and intermediates until a final byte */
	ESC_STRING,	/* OSC, DCS, SOS, PM, APC: until BEL or ST */
	ESC_STRING_ESC,	/* an ESC inside one: ST if '\' follows */
};

#define CH_BS	0x08
#define CH_TAB	0x09
#define CH_LF	0x0a
#define CH_CR	0x0d
#define CH_ESC	0x1b
#define CH_BEL	0x07
#define CH_DEL	0x7f

void console_filter_reset(struct console_filter *f)
{
	memset(f, 0, sizeof(*f));
}

static void put(struct console_out *o, char c)
{
	o->b[o->n++] = c;
}

/* Code points shown as '?': C1 controls, surrogates (malformed in UTF-8),
 * and those that break a line or reorder it. */
static bool cp_hidden(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0xd800 && cp <= 0xdfff) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The shortest encoding of a code point needing @len bytes starts here. */
static uint32_t cp_min(unsigned int len)
{
	return len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
}

/* A byte outside any sequence: ASCII, a control, or a UTF-8 lead. */
static void plain_byte(struct console_filter *f, uint8_t c, struct console_out *o)
{
	if (c == CH_LF) {
		o->action = CONSOLE_NEWLINE;
	} else if (c == CH_BS) {
		o->action = CONSOLE_ERASE;
	} else if (c == CH_ESC) {
		f->esc = ESC_START;
	} else if (c == CH_CR) {
		/* dropped: CR LF ends a line, and a lone CR could overwrite the tag */
	} else if (c == CH_TAB || (c >= 0x20 && c < CH_DEL)) {
		put(o, (char)c);
	} else if (c >= 0xc2 && c <= 0xf4) {
		f->need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
		f->cp = c & (0x3f >> f->need);
		f->seq[0] = c;
		f->have = 1;
	} else {
		put(o, '?');	/* C0, DEL, a raw C1 or continuation byte, 0xc0/0xc1/0xf5.. */
	}
}

static void utf8_byte(struct console_filter *f, uint8_t c, struct console_out *o)
{
	if ((c & 0xc0) != 0x80) {
		/* the sequence broke off: one '?' for it, then the byte itself */
		f->need = 0;
		put(o, '?');
		plain_byte(f, c, o);
		return;
	}
	f->seq[f->have++] = c;
	f->cp = (f->cp << 6) | (c & 0x3f);
	if (--f->need)
		return;
	if (f->cp < cp_min(f->have) || f->cp > 0x10ffff || cp_hidden(f->cp)) {
		put(o, '?');
		return;
	}
	for (unsigned int i = 0; i < f->have; i++)
		put(o, (char)f->seq[i]);
}

/* Inside an escape sequence: true if @c was swallowed by it. A control byte
 * (or DEL and above) ends any sequence but a string and is then itself shown
 * as usual, so a newline is never lost. */
static bool escape_byte(struct console_filter *f, uint8_t c)
{
	switch (f->esc) {
	case ESC_START:
		if (c == '[') {
			f->esc = ESC_CSI;
			return true;
		}
		if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
			f->esc = ESC_STRING;
			return true;
		}
		if (c >= 0x20 && c <= 0x2f) {
			f->esc = ESC_INTER;
			return true;
		}
		f->esc = ESC_NONE;
		return c >= 0x30 && c < CH_DEL;	/* ESC x: a two-byte sequence */
	case ESC_INTER:
	case ESC_CSI:
		if (c >= 0x20 && c < CH_DEL) {
			if (c >= (f->esc == ESC_CSI ? 0x40 : 0x30))
				f->esc = ESC_NONE;	/* the final byte */
			return true;
		}
		f->esc = ESC_NONE;
		return false;
	case ESC_STRING:
		if (c == CH_BEL)
			f->esc = ESC_NONE;
		else if (c == CH_ESC)
			f->esc = ESC_STRING_ESC;
		else if (c == CH_LF)
			f->esc = ESC_NONE;	/* our bound: the line ends it */
		return c != CH_LF;
	case ESC_STRING_ESC:
		f->esc = c == '\\' ? ESC_NONE : ESC_START;
		if (c == '\\')
			return true;
		return escape_byte(f, c);	/* ESC then something else: a new sequence */
	default:
		return false;
	}
}

void console_filter_byte(struct console_filter *f, uint8_t c, struct console_out *o)
{
	o->n = 0;
	o->action = CONSOLE_NONE;
	if (f->esc != ESC_NONE && escape_byte(f, c))
		return;
	if (f->need)
		utf8_byte(f, c, o);
	else
		plain_byte(f, c, o);
}

size_t console_erase_len(const char *line, size_t len)
{
	size_t n = 0;

	/* back over continuation bytes to the lead of the last character */
	while (n < len && n < 4 && ((uint8_t)line[len - 1 - n] & 0xc0) == 0x80)
		n++;
	return n < len ? n + 1 : len;
}
