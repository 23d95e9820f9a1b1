/* SPDX-License-Identifier: MIT */
/* What of a guest's console bytes may reach the host terminal. Every guest
 * line is shown as "[name] text"; the text must not be able to move the
 * cursor, erase or overwrite the tag, start a line of its own or drive the
 * terminal. Kept, as the terminal would show them: printable ASCII, tab, and
 * well-formed UTF-8 for printable code points (U+00A0 and up). Acted on
 * here and never passed on: newline (ends the line), backspace (erases the
 * last character of the line not yet shown; dropped when there is none,
 * so it can never reach text already shown, let alone the tag). Dropped:
 * carriage return (a guest ends its lines with CR LF) and escape sequences
 * (ESC x, ESC with intermediates, CSI "ESC [ ... final", and the strings
 * OSC, DCS, SOS, PM, APC up to BEL, ST or the end of the line). Shown as '?':
 * every other C0 control and DEL, C1 controls whether raw (0x80-0x9f, CSI
 * 0x9b included) or UTF-8 encoded (U+0080-U+009F), malformed or overlong
 * UTF-8, surrogates, and the code points that change line or direction
 * (U+2028, U+2029, the bidirectional controls U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069). */
#ifndef HYP_CONSOLE_FILTER_H
#define HYP_CONSOLE_FILTER_H
#include <types.h>

/* Per VM, across writes (a sequence may be split between two). */
struct console_filter {
	uint8_t esc;		/* escape-sequence state */
	uint8_t need;		/* UTF-8 continuation bytes still expected */
	uint8_t have;		/* bytes of the sequence so far */
	uint8_t seq[4];
	uint32_t cp;		/* its code point so far */
};

enum console_action {
	CONSOLE_NONE,
	CONSOLE_NEWLINE,	/* end the line (after out[]) */
	CONSOLE_ERASE,		/* erase the last character of the line (after out[]) */
};

/* What one byte gives: bytes to append, then an action. */
struct console_out {
	uint8_t n;
	char b[5];	/* at most a '?' for a broken sequence and a 4-byte one */
	enum console_action action;
};

/** console_filter_byte() - feed one guest byte; @o says what to show. Pure. */
void console_filter_byte(struct console_filter *f, uint8_t c, struct console_out *o);
/** console_filter_reset() - forget a half-read sequence (a VM's new boot). */
void console_filter_reset(struct console_filter *f);
/** console_erase_len() - bytes the last character of @line (@len bytes of
 *  output of this filter) takes, so that an erase removes it whole. */
size_t console_erase_len(const char *line, size_t len);
#endif
