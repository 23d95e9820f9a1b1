/* SPDX-License-Identifier: MIT */
/* The host console's guest output (hyp/host/console.c) and its filter
 * (hyp/lib/console_filter.c). The review's finding: backspace, C1 controls
 * (raw 0x9b is CSI on an 8-bit terminal, U+009B on a UTF-8 one) and escape
 * strings reached the terminal, so a guest could erase or overwrite its own
 * "[name] " tag, or make a line look like another VM's. What the terminal
 * receives is replayed here on a model terminal that honours every control
 * a real one would; each screen line must start with its true tag. */
#include <string.h>
#include <stdio.h>
#include <console.h>
#include <console_filter.h>
#include <hart.h>
#include <vm.h>
#include "test.h"

uint64_t timebase_hz = 10000000;
struct vm vms[VM_MAX];
unsigned int nr_vms;

uint64_t time_now(void)
{
	return 0;
}

/* What log_tagged() would write, as one byte stream. */
static char term[65536];
static size_t term_len;

static void term_put(const char *s, size_t n)
{
	if (term_len + n < sizeof(term)) {
		memcpy(term + term_len, s, n);
		term_len += n;
	}
}

void log_tagged(const void *owner, const char *tag, const char *text, size_t len,
		bool end_of_line)
{
	(void)owner;
	term_put("[", 1);
	term_put(tag, strlen(tag));
	term_put("] ", 2);
	term_put(text, len);
	if (end_of_line)
		term_put("\n", 1);
}

/* A model terminal, 80 columns: CR to column 0, BS one left, ESC [ ... and
 * C1 CSI (raw 0x9b or U+009B) with 'G' (column), 'K' (erase line), 'A'
 * (up), any other final ignored; ESC ] ... BEL ignored. Good enough to
 * replay what an attacker would aim at. Returns the screen, one line each. */
#define ROWS	64
#define COLS	80
static char screen[ROWS][COLS + 1];

static void replay(void)
{
	unsigned int row = 0, col = 0;

	memset(screen, 0, sizeof(screen));
	for (size_t i = 0; i < term_len && row < ROWS; i++) {
		unsigned char c = (unsigned char)term[i];
		bool csi = false;

		if (c == 0x1b && i + 1 < term_len && term[i + 1] == '[') {
			csi = true;
			i++;
		} else if (c == 0x9b) {
			csi = true;
		} else if (c == 0xc2 && i + 1 < term_len && (unsigned char)term[i + 1] == 0x9b) {
			csi = true;
			i++;
		}
		if (csi) {
			unsigned int arg = 0;

			while (++i < term_len && term[i] >= '0' && term[i] <= '9')
				arg = arg * 10 + (unsigned int)(term[i] - '0');
			if (i < term_len && term[i] == 'G')
				col = arg ? arg - 1 : 0;
			else if (i < term_len && term[i] == 'K')
				memset(screen[row], 0, sizeof(screen[row]));
			else if (i < term_len && term[i] == 'A' && row)
				row -= arg ? arg : 1;
			continue;
		}
		if (c == '\n') {
			row++;
			col = 0;
		} else if (c == '\r') {
			col = 0;
		} else if (c == '\b') {
			col -= col > 0;
		} else if (col < COLS) {
			screen[row][col++] = (char)c;
		}
	}
}

static struct vm *vm_named(const char *name)
{
	static struct vm vm;

	memset(&vm, 0, sizeof(vm));
	strcpy(vm.cfg.name, name);
	term_len = 0;
	return &vm;
}

static bool term_is(const char *s)
{
	return term_len == strlen(s) && !memcmp(term, s, term_len);
}

static void say(struct vm *vm, const char *s, size_t n)
{
	console_vm_write(vm, s, n ? n : strlen(s));
}

/* Every screen line up to the last written one starts with "[evil] " and
 * none shows "[other]" at its start. */
static void expect_tagged(const char *what)
{
	unsigned int lines = 0;

	replay();
	for (unsigned int r = 0; r < ROWS && screen[r][0]; r++, lines++) {
		if (strncmp(screen[r], "[evil] ", 7)) {
			printf("  %s: line %u: \"%s\"\n", what, r, screen[r]);
			EXPECT_TRUE(!"every line starts with the true tag");
		}
	}
	EXPECT_TRUE(lines > 0);
}

/* Nothing but printable text, tabs and line ends reaches the terminal:
 * no C0 control but \t and \n, no DEL, no C1 (raw or UTF-8), valid UTF-8. */
static void expect_clean(void)
{
	for (size_t i = 0; i < term_len; i++) {
		unsigned char c = (unsigned char)term[i];

		EXPECT_TRUE(c >= 0x20 || c == '\t' || c == '\n');
		EXPECT_TRUE(c != 0x7f);
		if (c >= 0x80 && c < 0xc0)
			EXPECT_TRUE(i > 0 && (unsigned char)term[i - 1] >= 0x80);	/* a continuation */
		if (c == 0xc2 && i + 1 < term_len)
			EXPECT_TRUE((unsigned char)term[i + 1] >= 0xa0);	/* not U+0080-U+009F */
	}
}

TEST(console_backspace_cannot_erase_the_tag)
{
	struct vm *vm = vm_named("evil");

	say(vm, "\b\b\b\b\b\b\b[other] forged\n", 0);
	say(vm, "ab\b\b\b\b\b\b\b\b\b\b[other] forged\n", 0);
	expect_tagged("backspace");
	expect_clean();
	/* erasing its own unshown text still works (a shell's echo) */
	term_len = 0;
	say(vm, "pass\b\b\b\bwd\b\bok\n", 0);
	EXPECT_TRUE(term_is("[evil] ok\n"));
}

TEST(console_carriage_return_cannot_overwrite_the_tag)
{
	struct vm *vm = vm_named("evil");

	say(vm, "\r[other] forged\n", 0);
	say(vm, "text\r\n", 0);
	expect_tagged("CR");
	expect_clean();
}

TEST(console_c1_controls_are_neutralized)
{
	struct vm *vm = vm_named("evil");

	say(vm, "x\x9b" "1G[other] raw CSI\n", 0);
	say(vm, "x\xc2\x9b" "1G[other] UTF-8 CSI\n", 0);
	say(vm, "x\x9b" "2K\xc2\x9b" "1A[other] up\n", 0);
	say(vm, "nel\xc2\x85" "[other] next line\n", 0);
	say(vm, "sep\xe2\x80\xa8" "[other] line separator\n", 0);
	expect_tagged("C1");
	expect_clean();
}

TEST(console_escape_sequences_are_dropped)
{
	struct vm *vm = vm_named("evil");

	say(vm, "x\x1b[1G[other] CSI column\n", 0);
	say(vm, "x\x1b[2K\x1b[1A[other] erase and up\n", 0);
	say(vm, "\x1b]0;title\x07visible\n", 0);
	say(vm, "\x1bP dcs \x1b\\after\n", 0);
	say(vm, "\x1b(Bcharset\n", 0);
	say(vm, "\x1b[1", 0);		/* a sequence split across writes */
	say(vm, "Gsplit\n", 0);
	expect_tagged("ESC");
	expect_clean();
	replay();
	EXPECT_STREQ(screen[2], "[evil] visible");
	EXPECT_STREQ(screen[3], "[evil] after");
	EXPECT_STREQ(screen[4], "[evil] charset");
	EXPECT_STREQ(screen[5], "[evil] split");
}

TEST(console_unterminated_string_ends_with_the_line)
{
	struct vm *vm = vm_named("evil");

	say(vm, "\x1b]0;never ended\nnext line\n", 0);
	replay();
	EXPECT_STREQ(screen[0], "[evil] ");
	EXPECT_STREQ(screen[1], "[evil] next line");
}

TEST(console_utf8_text_passes_whole)
{
	struct vm *vm = vm_named("evil");
	/* é, ●, 😀 split across writes, then a line that fills the buffer with
	 * 3-byte characters: none is cut in two */
	char big[400];

	say(vm, "caf\xc3\xa9 \xe2\x97\x8f \xf0\x9f", 0);
	say(vm, "\x98\x80\n", 0);
	EXPECT_TRUE(term_is("[evil] caf\xc3\xa9 \xe2\x97\x8f \xf0\x9f\x98\x80\n"));
	term_len = 0;
	for (unsigned int i = 0; i < 130; i++)
		memcpy(big + 3 * i, "\xe2\x97\x8f", 3);
	big[390] = '\n';
	say(vm, big, 391);
	expect_clean();
	/* 85 characters (255 bytes) fit the 256-byte line, 45 go on the next */
	EXPECT_EQ(term_len, 7 + 255 + 1 + 7 + 135 + 1);
}

TEST(console_malformed_utf8_shows_question_marks)
{
	struct vm *vm = vm_named("evil");

	say(vm, "a\xc0\xaf" "b\xed\xa0\x80" "c\xe2\x97" "d\xff" "e\xf4\x90\x80\x80" "f\n", 0);
	expect_clean();
	EXPECT_TRUE(term_is("[evil] a??b?c?d?e?f\n"));
}

TEST(console_other_controls_show_as_question_marks)
{
	struct vm *vm = vm_named("evil");

	say(vm, "a\x01" "b\x07" "c\x0b" "d\x0c" "e\x7f" "f\tg\n", 0);
	EXPECT_TRUE(term_is("[evil] a?b?c?d?e?f\tg\n"));
}

/* Arbitrary bytes, split at random: the terminal never sees a control. */
TEST(console_random_bytes_stay_clean)
{
	struct vm *vm = vm_named("evil");
	uint64_t seed = 99;
	char buf[64];

	for (unsigned int round = 0; round < 3000; round++) {
		size_t n = 1 + round % 64;

		for (size_t i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			buf[i] = (char)(seed >> 56);
		}
		say(vm, buf, n);
		if (term_len > sizeof(term) - 1024) {
			expect_clean();
			term_len = 0;
		}
	}
	expect_clean();
}
