/* SPDX-License-Identifier: MIT */
/* hyp/lib/json.c: the flat-object parser and the writer. Inputs are copied into
 * heap buffers of their exact size (scratch too), so that ASan catches any read
 * or write one byte past the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json.h>
#include "test.h"

static struct json_obj obj;
static const char *g_err;
static size_t g_off;
static char *g_line, *g_scratch;

/* Parse s[0..n) from an exact-size copy, with scratch_size bytes of scratch. */
static int parse_scratch(const char *s, size_t n, size_t scratch_size)
{
	int ret;

	free(g_line);
	free(g_scratch);
	g_line = malloc(n ? n : 1);
	g_scratch = malloc(scratch_size ? scratch_size : 1);
	if (!g_line || !g_scratch)
		abort();
	memcpy(g_line, s, n);
	g_err = NULL;
	g_off = (size_t)-1;
	ret = json_parse_flat(g_line, n, &obj, g_scratch, scratch_size, &g_err, &g_off);
	if (ret) {
		EXPECT_EQ(obj.nr, 0);
		EXPECT_TRUE(g_err != NULL);
		EXPECT_TRUE(g_off <= n);
	} else {
		EXPECT_TRUE(g_err == NULL);
	}
	return ret;
}

/* scratch of len bytes: documented to always suffice */
static int parse_n(const char *s, size_t n)
{
	return parse_scratch(s, n, n);
}

static int parse(const char *s)
{
	return parse_n(s, strlen(s));
}

#define EXPECT_ERR(s, msg, off)                                               \
	do {                                                                  \
		EXPECT_EQ(parse(s), -1);                                      \
		EXPECT_STREQ(g_err, msg);                                     \
		EXPECT_EQ(g_off, off);                                        \
	} while (0)

#define EXPECT_ERR_N(s, n, msg, off)                                          \
	do {                                                                  \
		EXPECT_EQ(parse_n(s, n), -1);                                 \
		EXPECT_STREQ(g_err, msg);                                     \
		EXPECT_EQ(g_off, off);                                        \
	} while (0)

/* the decoded string value of key (and its length must be want's) */
#define EXPECT_STRVAL(key, want)                                              \
	do {                                                                  \
		const char *s_ = NULL;                                        \
		size_t n_ = 0;                                                \
		EXPECT_TRUE(json_get_str(&obj, key, &s_, &n_));               \
		EXPECT_EQ(n_, sizeof(want) - 1);                              \
		EXPECT_TRUE(s_ && !memcmp(s_, want, sizeof(want)));           \
	} while (0)

/* ---- parser: accepted input ---- */

TEST(json_parse_every_type)
{
	const struct json_value *v;
	uint64_t u = 0;
	bool b = false;

	EXPECT_EQ(parse("{\"n\":null,\"t\":true,\"f\":false,\"i\":42,\"m\":-7,\"s\":\"hi\"}"), 0);
	EXPECT_EQ(obj.nr, 6);
	EXPECT_TRUE(json_key_is(&obj.f[0], "n"));
	EXPECT_TRUE(json_key_is(&obj.f[5], "s"));
	v = json_get(&obj, "n");
	EXPECT_TRUE(v && v->type == JSON_NULL);
	v = json_get(&obj, "t");
	EXPECT_TRUE(v && v->type == JSON_BOOL && v->boolean);
	EXPECT_TRUE(json_get_bool(&obj, "f", &b));
	EXPECT_FALSE(b);
	EXPECT_TRUE(json_get_u64(&obj, "i", &u));
	EXPECT_EQ(u, 42);
	v = json_get(&obj, "m");
	EXPECT_TRUE(v && v->type == JSON_INT && v->negative && v->magnitude == 7);
	EXPECT_STRVAL("s", "hi");
	EXPECT_TRUE(json_get(&obj, "x") == NULL);
}

TEST(json_parse_empty_object_and_strings)
{
	EXPECT_EQ(parse("{}"), 0);
	EXPECT_EQ(obj.nr, 0);
	EXPECT_EQ(parse("{ }"), 0);
	EXPECT_EQ(parse("{\"\":\"\"}"), 0);	/* empty key and value */
	EXPECT_EQ(obj.nr, 1);
	EXPECT_EQ(obj.f[0].key_len, 0);
	EXPECT_STREQ(obj.f[0].key, "");
	EXPECT_STRVAL("", "");
	/* scratch may be NULL when there are no strings */
	EXPECT_EQ(json_parse_flat("{}", 2, &obj, NULL, 0, NULL, NULL), 0);
	EXPECT_EQ(json_parse_flat("{\"a\":1}", 7, &obj, NULL, 100, &g_err, &g_off), -1);
	EXPECT_STREQ(g_err, "scratch buffer too small");
}

TEST(json_parse_whitespace)
{
	EXPECT_EQ(parse(" \t\r\n{ \t\"a\" \n:\r 1 ,\t\"b\"\n:\"x\" \r\n} \t\r\n"), 0);
	EXPECT_EQ(obj.nr, 2);
	EXPECT_EQ(json_get(&obj, "a")->magnitude, 1);
	EXPECT_STRVAL("b", "x");
	/* only JSON's four whitespace bytes */
	EXPECT_ERR("{\v}", "expected a key", 1);
	EXPECT_ERR("{\f}", "expected a key", 1);
	EXPECT_ERR("\xc2\xa0{}", "expected '{'", 0);
	EXPECT_ERR_N("{} \0", 4, "trailing characters after the object", 3);
}

TEST(json_parse_simple_escapes)
{
	EXPECT_EQ(parse("{\"k\":\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"}"), 0);
	EXPECT_STRVAL("k", "\" \\ / \b \f \n \r \t");
	/* keys are decoded too */
	EXPECT_EQ(parse("{\"a\\nb\":1}"), 0);
	EXPECT_TRUE(json_key_is(&obj.f[0], "a\nb"));
}

TEST(json_parse_unicode_escapes)
{
	EXPECT_EQ(parse("{\"k\":\"\\u0041\\u00e9\\u00E9\\u07ff\\u0800\\u20ac\\uffff\"}"), 0);
	EXPECT_STRVAL("k", "A\xc3\xa9\xc3\xa9\xdf\xbf\xe0\xa0\x80\xe2\x82\xac\xef\xbf\xbf");
	EXPECT_EQ(parse("{\"k\":\"\\u0001\\u001f\\u007f\"}"), 0);
	EXPECT_STRVAL("k", "\x01\x1f\x7f");
}

TEST(json_parse_surrogate_pairs)
{
	EXPECT_EQ(parse("{\"k\":\"\\ud83d\\ude00\"}"), 0);	/* U+1F600 */
	EXPECT_STRVAL("k", "\xf0\x9f\x98\x80");
	EXPECT_EQ(parse("{\"k\":\"\\uD800\\uDC00|\\uDBFF\\uDFFF\"}"), 0);
	EXPECT_STRVAL("k", "\xf0\x90\x80\x80|\xf4\x8f\xbf\xbf");
}

TEST(json_parse_raw_utf8)
{
	/* boundaries of each length, and the edges table 3-7 makes special */
	EXPECT_EQ(parse("{\"k\":\"\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80"
			"\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"}"), 0);
	EXPECT_STRVAL("k", "\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80"
			   "\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
	EXPECT_EQ(parse("{\"\xc3\xa9\":1}"), 0);
	EXPECT_TRUE(json_key_is(&obj.f[0], "\xc3\xa9"));
}

/* ---- parser: refusals ---- */

TEST(json_parse_invalid_utf8)
{
	static const char *const bad[] = {
		"\x80", "\xbf", "\xc0\x80", "\xc1\xbf", "\xc2", "\xc2\x41", "\xc2\xc0",
		"\xe0\x80\x80", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf",
		"\xe2\x82", "\xe2\x82\x41", "\xf0\x80\x80\x80", "\xf0\x8f\xbf\xbf",
		"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf0\x9f\x98", "\xfe", "\xff",
	};
	char line[32];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = (size_t)snprintf(line, sizeof(line), "{\"k\":\"a%s\"}", bad[i]);

		EXPECT_ERR_N(line, n, "invalid UTF-8", 7);
	}
	EXPECT_ERR("{\"k\xff\":1}", "invalid UTF-8", 3);
	/* outside strings, any non-ASCII byte is just unexpected */
	EXPECT_ERR("{\"k\":\xc3\xa9}", "expected a value", 5);
}

TEST(json_parse_lone_surrogates)
{
	EXPECT_ERR("{\"k\":\"\\ud800\"}", "lone surrogate", 6);
	EXPECT_ERR("{\"k\":\"x\\udbff\\n\"}", "lone surrogate", 7);
	EXPECT_ERR("{\"k\":\"\\ud800\\u0041\"}", "lone surrogate", 6);
	EXPECT_ERR("{\"k\":\"\\ud800\\ud800\"}", "lone surrogate", 6);
	EXPECT_ERR("{\"k\":\"\\ud800\\uE000\"}", "lone surrogate", 6);
	EXPECT_ERR("{\"k\":\"\\udc00\"}", "lone surrogate", 6);
	EXPECT_ERR("{\"k\":\"\\udfff\\ud800\"}", "lone surrogate", 6);
	EXPECT_ERR("{\"k\":\"\\ud800x\\udc00\"}", "lone surrogate", 6);
	EXPECT_ERR("{\"k\":\"\\ud800\\udc0\"}", "lone surrogate", 6);
	EXPECT_ERR("{\"\\ud800\":1}", "lone surrogate", 2);
}

TEST(json_parse_nul_and_control_characters)
{
	char line[16];

	EXPECT_ERR("{\"k\":\"a\\u0000\"}", "\\u0000 is not allowed", 7);
	EXPECT_ERR_N("{\"k\":\"a\0\"}", 10, "control character in string", 7);
	for (unsigned int c = 1; c < 0x20; c++) {
		memcpy(line, "{\"k\":\"a?\"}", 10);
		line[7] = (char)c;
		EXPECT_ERR_N(line, 10, "control character in string", 7);
	}
	/* a raw NUL outside a string is an unexpected byte */
	EXPECT_ERR_N("{\0\"k\":1}", 8, "expected a key", 1);
	EXPECT_ERR_N("\0{}", 3, "expected '{'", 0);
}

TEST(json_parse_invalid_escapes)
{
	EXPECT_ERR("{\"k\":\"\\x\"}", "invalid escape", 6);
	EXPECT_ERR("{\"k\":\"\\U0041\"}", "invalid escape", 6);
	EXPECT_ERR("{\"k\":\"\\'\"}", "invalid escape", 6);
	EXPECT_ERR("{\"k\":\"\\0\"}", "invalid escape", 6);
	EXPECT_ERR("{\"k\":\"\\u12G4\"}", "invalid \\u escape", 6);
	EXPECT_ERR("{\"k\":\"\\u-123\"}", "invalid \\u escape", 6);
	EXPECT_ERR("{\"k\":\"\\u12\"}", "invalid \\u escape", 6);
	EXPECT_ERR("{\"k\":\"\\u\"}", "invalid \\u escape", 6);
}

TEST(json_parse_integer_limits)
{
	const struct json_value *v;
	uint64_t u = 1;

	EXPECT_EQ(parse("{\"a\":0}"), 0);
	EXPECT_TRUE(json_get_u64(&obj, "a", &u));
	EXPECT_EQ(u, 0);
	/* -0 is accepted as plain 0: not negative, a valid u64 */
	EXPECT_EQ(parse("{\"a\":-0}"), 0);
	v = json_get(&obj, "a");
	EXPECT_TRUE(v && v->type == JSON_INT && !v->negative && v->magnitude == 0);
	EXPECT_TRUE(json_get_u64(&obj, "a", &u));
	EXPECT_EQ(u, 0);
	EXPECT_EQ(parse("{\"a\":18446744073709551615}"), 0);
	EXPECT_TRUE(json_get_u64(&obj, "a", &u));
	EXPECT_EQ(u, UINT64_MAX);
	EXPECT_ERR("{\"a\":18446744073709551616}", "integer out of range", 5);
	EXPECT_ERR("{\"a\":18446744073709551620}", "integer out of range", 5);
	EXPECT_ERR("{\"a\":99999999999999999999999}", "integer out of range", 5);
	EXPECT_EQ(parse("{\"a\":9223372036854775808}"), 0);	/* 2^63, positive */
	EXPECT_EQ(json_get(&obj, "a")->magnitude, (uint64_t)1 << 63);
	EXPECT_EQ(parse("{\"a\":-9223372036854775808}"), 0);
	v = json_get(&obj, "a");
	EXPECT_TRUE(v && v->negative && v->magnitude == (uint64_t)1 << 63);
	EXPECT_FALSE(json_get_u64(&obj, "a", &u));	/* negative */
	EXPECT_ERR("{\"a\":-9223372036854775809}", "integer out of range", 5);
	EXPECT_ERR("{\"a\":-18446744073709551616}", "integer out of range", 5);
}

TEST(json_parse_integer_refusals)
{
	EXPECT_ERR("{\"a\":01}", "leading zeros are not allowed", 5);
	EXPECT_ERR("{\"a\":-01}", "leading zeros are not allowed", 5);
	EXPECT_ERR("{\"a\":00}", "leading zeros are not allowed", 5);
	EXPECT_ERR("{\"a\":1.5}", "fractions and exponents are not supported", 5);
	EXPECT_ERR("{\"a\":1.0}", "fractions and exponents are not supported", 5);
	EXPECT_ERR("{\"a\":0.5}", "fractions and exponents are not supported", 5);
	EXPECT_ERR("{\"a\":1e3}", "fractions and exponents are not supported", 5);
	EXPECT_ERR("{\"a\":-2E3}", "fractions and exponents are not supported", 5);
	EXPECT_ERR("{\"a\":-}", "expected a digit", 6);
	EXPECT_ERR("{\"a\":-a}", "expected a digit", 6);
	EXPECT_ERR("{\"a\":--1}", "expected a digit", 6);
	EXPECT_ERR("{\"a\":+1}", "expected a value", 5);
	EXPECT_ERR("{\"a\":.5}", "expected a value", 5);
	EXPECT_ERR("{\"a\":0x10}", "expected ',' or '}'", 6);
	EXPECT_ERR("{\"a\":12a}", "expected ',' or '}'", 7);
	EXPECT_ERR("{\"a\":1 2}", "expected ',' or '}'", 7);
}

TEST(json_parse_nested_refused)
{
	EXPECT_ERR("{\"a\":{}}", "nested values are not supported", 5);
	EXPECT_ERR("{\"a\":1, \"b\" : [1,2]}", "nested values are not supported", 14);
	EXPECT_ERR("{\"a\":[", "nested values are not supported", 5);
	/* deep nesting costs nothing: refused at the first level */
	EXPECT_ERR("{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
		   "nested values are not supported", 5);
	EXPECT_ERR("[{}]", "expected '{'", 0);
	EXPECT_ERR("{{}}", "expected a key", 1);
}

TEST(json_parse_literals)
{
	EXPECT_ERR("{\"a\":tru}", "invalid literal", 5);
	EXPECT_ERR("{\"a\":tru", "invalid literal", 5);
	EXPECT_ERR("{\"a\":True}", "expected a value", 5);
	EXPECT_ERR("{\"a\":nul}", "invalid literal", 5);
	EXPECT_ERR("{\"a\":fals}", "invalid literal", 5);
	EXPECT_ERR("{\"a\":nan}", "invalid literal", 5);
	EXPECT_ERR("{\"a\":truex}", "expected ',' or '}'", 9);
	EXPECT_ERR("{\"a\":nullnull}", "expected ',' or '}'", 9);
	EXPECT_ERR("{\"a\":undefined}", "expected a value", 5);
}

TEST(json_parse_duplicate_keys)
{
	EXPECT_ERR("{\"a\":1,\"b\":2,\"a\":3}", "duplicate key", 13);
	/* compared after decoding */
	EXPECT_ERR("{\"a\":1,\"\\u0061\":2}", "duplicate key", 7);
	EXPECT_ERR("{\"\":1,\"\":2}", "duplicate key", 6);
	/* a prefix is another key */
	EXPECT_EQ(parse("{\"a\":1,\"ab\":2,\"A\":3}"), 0);
	EXPECT_EQ(obj.nr, 3);
	EXPECT_EQ(json_get(&obj, "ab")->magnitude, 2);
	EXPECT_EQ(json_get(&obj, "A")->magnitude, 3);
}

TEST(json_parse_field_limit)
{
	char line[256];
	size_t n = 0;

	line[n++] = '{';
	for (int i = 0; i < JSON_MAX_FIELDS; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s\"k%d\":%d",
				      i ? "," : "", i, i);
	line[n++] = '}';
	EXPECT_EQ(parse_n(line, n), 0);
	EXPECT_EQ(obj.nr, JSON_MAX_FIELDS);
	EXPECT_EQ(json_get(&obj, "k15")->magnitude, 15);
	/* a 17th field */
	n--;
	n += (size_t)snprintf(line + n, sizeof(line) - n, ",\"x\":1}");
	EXPECT_ERR_N(line, n, "too many fields", n - 6);
}

TEST(json_parse_syntax_errors)
{
	EXPECT_ERR("", "unexpected end of input", 0);
	EXPECT_ERR("   ", "unexpected end of input", 3);
	EXPECT_ERR("\"a\"", "expected '{'", 0);
	EXPECT_ERR("null", "expected '{'", 0);
	EXPECT_ERR("{\"a\" 1}", "expected ':'", 5);
	EXPECT_ERR("{\"a\"=1}", "expected ':'", 4);
	EXPECT_ERR("{\"a\":1 \"b\":2}", "expected ',' or '}'", 7);
	EXPECT_ERR("{\"a\":1;\"b\":2}", "expected ',' or '}'", 6);
	EXPECT_ERR("{\"a\":1,}", "expected a key", 7);
	EXPECT_ERR("{,}", "expected a key", 1);
	EXPECT_ERR("{a:1}", "expected a key", 1);
	EXPECT_ERR("{'a':1}", "expected a key", 1);
	EXPECT_ERR("{\"a\":}", "expected a value", 5);
	EXPECT_ERR("{\"a\":'x'}", "expected a value", 5);
	EXPECT_ERR("{\"a\":1", "unexpected end of input", 6);
	EXPECT_ERR("{\"a\":1}}", "trailing characters after the object", 7);
	EXPECT_ERR("{\"a\":1} {}", "trailing characters after the object", 8);
	EXPECT_ERR("{} x", "trailing characters after the object", 3);
	EXPECT_ERR("{\"a", "unexpected end of input", 3);
	EXPECT_ERR("{\"a\":\"b", "unexpected end of input", 7);
	EXPECT_ERR("{\"a\":\"b\\", "unexpected end of input", 8);
	EXPECT_ERR("\xef\xbb\xbf{}", "expected '{'", 0);	/* no BOM */
}

TEST(json_parse_error_outputs_optional)
{
	EXPECT_EQ(json_parse_flat(NULL, 0, &obj, NULL, 0, NULL, NULL), -1);
	EXPECT_EQ(json_parse_flat(NULL, 0, &obj, NULL, 0, &g_err, &g_off), -1);
	EXPECT_STREQ(g_err, "unexpected end of input");
	EXPECT_EQ(g_off, 0);
	EXPECT_EQ(json_parse_flat("{x", 2, &obj, NULL, 0, NULL, NULL), -1);
	EXPECT_EQ(obj.nr, 0);
}

TEST(json_parse_failure_leaves_no_fields)
{
	EXPECT_EQ(parse("{\"a\":1,\"b\":2}"), 0);
	EXPECT_EQ(obj.nr, 2);
	EXPECT_EQ(parse("{\"a\":1,\"b\":2,\"c\":{}}"), -1);
	EXPECT_EQ(obj.nr, 0);
	EXPECT_TRUE(json_get(&obj, "a") == NULL);
}

TEST(json_parse_len_bounds_input)
{
	/* only line[0..len) counts: what follows is neither read nor needed */
	static const char text[] = "{\"a\":1}garbage";

	EXPECT_EQ(parse_n(text, 7), 0);
	EXPECT_EQ(json_get(&obj, "a")->magnitude, 1);
	EXPECT_EQ(parse_n(text, 6), -1);
	/* strings come back NUL-terminated even though the input is not */
	EXPECT_EQ(parse_n("{\"k\":\"v\"}", 9), 0);
	EXPECT_STREQ(json_get(&obj, "k")->str, "v");
	EXPECT_STREQ(obj.f[0].key, "k");
}

/* every proper prefix of a valid line is refused, and reads stay in bounds */
TEST(json_parse_every_truncation)
{
	static const char *const lines[] = {
		"{\"cmd\":\"start\",\"vm\":\"alpha\",\"id\":18446744073709551615,"
		"\"neg\":-9223372036854775808,\"ok\":true,\"no\":false,\"x\":null,"
		"\"esc\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\",\"u\":\"\xe2\x82\xac\"}",
		"{ \"a\" : 0 , \"b\" : -0 , \"\" : \"\" }",
		"{}",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		size_t len = strlen(lines[i]);

		EXPECT_EQ(parse_n(lines[i], len), 0);
		for (size_t n = 0; n < len; n++) {
			EXPECT_EQ(parse_n(lines[i], n), -1);
			EXPECT_TRUE(g_off <= n);
		}
	}
	EXPECT_EQ(parse_n(lines[0], strlen(lines[0])), 0);
	EXPECT_EQ(obj.nr, 9);
	EXPECT_STRVAL("esc", "\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(json_parse_scratch_too_small)
{
	/* needs "key\0" + "value\0" = 10 bytes */
	static const char line[] = "{\"key\":\"value\"}";
	size_t len = sizeof(line) - 1;

	for (size_t sz = 0; sz < 10; sz++) {
		EXPECT_EQ(parse_scratch(line, len, sz), -1);
		EXPECT_STREQ(g_err, "scratch buffer too small");
	}
	EXPECT_EQ(parse_scratch(line, len, 10), 0);
	EXPECT_STRVAL("key", "value");
}

TEST(json_parse_scratch_escapes_boundary)
{
	/* "\u20ac" is 3 bytes decoded: it fails as a whole, never half-written */
	static const char line[] = "{\"k\":\"\\u20ac\\ud83d\\ude00\"}";
	size_t len = sizeof(line) - 1;

	for (size_t sz = 0; sz < 2 + 3 + 4 + 1; sz++) {
		EXPECT_EQ(parse_scratch(line, len, sz), -1);
		EXPECT_STREQ(g_err, "scratch buffer too small");
	}
	EXPECT_EQ(parse_scratch(line, len, 10), 0);
	EXPECT_STRVAL("k", "\xe2\x82\xac\xf0\x9f\x98\x80");
}

TEST(json_get_helpers)
{
	const char *s = NULL;
	size_t n = 0;
	uint64_t u = 99;
	bool b = true;

	EXPECT_EQ(parse("{\"i\":-1,\"s\":\"x\",\"b\":false,\"z\":null,\"u\":5}"), 0);
	EXPECT_FALSE(json_get_u64(&obj, "i", &u));	/* negative */
	EXPECT_FALSE(json_get_u64(&obj, "s", &u));	/* a string */
	EXPECT_FALSE(json_get_u64(&obj, "missing", &u));
	EXPECT_EQ(u, 99);				/* untouched */
	EXPECT_TRUE(json_get_u64(&obj, "u", &u));
	EXPECT_EQ(u, 5);
	EXPECT_FALSE(json_get_str(&obj, "u", &s, &n));
	EXPECT_FALSE(json_get_str(&obj, "z", &s, &n));
	EXPECT_TRUE(s == NULL);
	EXPECT_TRUE(json_get_str(&obj, "s", &s, &n));
	EXPECT_EQ(n, 1);
	EXPECT_FALSE(json_get_bool(&obj, "z", &b));
	EXPECT_TRUE(b);
	EXPECT_TRUE(json_get_bool(&obj, "b", &b));
	EXPECT_FALSE(b);
	EXPECT_FALSE(json_key_is(&obj.f[0], ""));
	EXPECT_FALSE(json_key_is(&obj.f[0], "ii"));
	EXPECT_TRUE(json_key_is(&obj.f[0], "i"));
}

/* xorshift64: deterministic bytes for the mutation test */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* A small in-tree fuzz: mutated valid lines never crash, and what is accepted
 * satisfies the API's promises. */
TEST(json_parse_mutations)
{
	static const char seed[] =
		"{\"a\":\"x\\u00e9\\ud83d\\ude00\xc3\xa9\",\"b\":-12,\"c\":true,\"d\":null}";
	static const char alphabet[] = "{}[]\":,\\u0123456789-.eEtrufalsn \t\xc3\xa9\x80\xff\xed";
	char line[sizeof(seed) + 8];

	for (int iter = 0; iter < 20000; iter++) {
		size_t n = sizeof(seed) - 1;
		int edits = 1 + (int)(rnd() % 4);

		memcpy(line, seed, n);
		for (int e = 0; e < edits; e++) {
			size_t at = rnd() % n;
			char c = alphabet[rnd() % (sizeof(alphabet) - 1)];

			switch (rnd() % 3) {
			case 0:
				line[at] = c;
				break;
			case 1:
				if (n < sizeof(line)) {
					memmove(line + at + 1, line + at, n - at);
					line[at] = c;
					n++;
				}
				break;
			default:
				memmove(line + at, line + at + 1, n - at - 1);
				n--;
				break;
			}
		}
		if (parse_n(line, n))
			continue;
		EXPECT_TRUE(obj.nr <= JSON_MAX_FIELDS);
		for (unsigned int i = 0; i < obj.nr; i++) {
			const struct json_field *f = &obj.f[i];

			EXPECT_EQ(strlen(f->key), f->key_len);
			if (f->val.type == JSON_STRING)
				EXPECT_EQ(strlen(f->val.str), f->val.str_len);
			if (f->val.type == JSON_INT && f->val.negative)
				EXPECT_TRUE(f->val.magnitude && f->val.magnitude <= (uint64_t)1 << 63);
		}
	}
}

/* ---- writer ---- */

static char wbuf[4096];

TEST(json_write_flat_object)
{
	struct json_writer w;

	jw_init(&w, wbuf, sizeof(wbuf));
	jw_obj_begin(&w);
	jw_kv_str(&w, "cmd", "list");
	jw_kv_u64(&w, "id", 7);
	jw_kv_i64(&w, "delta", -3);
	jw_kv_bool(&w, "ok", true);
	jw_kv_bool(&w, "bad", false);
	jw_key(&w, "none");
	jw_null(&w);
	jw_kv_str(&w, "null_str", NULL);
	jw_obj_end(&w);
	EXPECT_TRUE(jw_finish(&w));
	EXPECT_STREQ(wbuf, "{\"cmd\":\"list\",\"id\":7,\"delta\":-3,\"ok\":true,"
			   "\"bad\":false,\"none\":null,\"null_str\":null}");
	EXPECT_EQ(w.len, strlen(wbuf));

	jw_init(&w, wbuf, sizeof(wbuf));
	jw_obj_begin(&w);
	jw_obj_end(&w);
	EXPECT_TRUE(jw_finish(&w));
	EXPECT_STREQ(wbuf, "{}");

	/* any single value is a valid document */
	jw_init(&w, wbuf, sizeof(wbuf));
	jw_u64(&w, 5);
	EXPECT_TRUE(jw_finish(&w));
	EXPECT_STREQ(wbuf, "5");
}

TEST(json_write_numbers)
{
	static const struct {
		int64_t v;
		const char *s;
	} i64s[] = {
		{ 0, "0" }, { 1, "1" }, { -1, "-1" }, { 10, "10" }, { -10, "-10" },
		{ INT64_MAX, "9223372036854775807" }, { INT64_MIN, "-9223372036854775808" },
	};
	static const struct {
		uint64_t v;
		const char *s;
	} u64s[] = {
		{ 0, "0" }, { 9, "9" }, { 10, "10" }, { 1000000, "1000000" },
		{ UINT64_MAX, "18446744073709551615" },
	};
	struct json_writer w;

	for (size_t i = 0; i < sizeof(i64s) / sizeof(i64s[0]); i++) {
		jw_init(&w, wbuf, sizeof(wbuf));
		jw_i64(&w, i64s[i].v);
		EXPECT_TRUE(jw_finish(&w));
		EXPECT_STREQ(wbuf, i64s[i].s);
	}
	for (size_t i = 0; i < sizeof(u64s) / sizeof(u64s[0]); i++) {
		jw_init(&w, wbuf, sizeof(wbuf));
		jw_u64(&w, u64s[i].v);
		EXPECT_TRUE(jw_finish(&w));
		EXPECT_STREQ(wbuf, u64s[i].s);
	}
}

/* the document the overflow test cuts at every size */
static void write_sample(struct json_writer *w)
{
	jw_obj_begin(w);
	jw_kv_str(w, "name", "al\"pha\n\xff");
	jw_key(w, "vms");
	jw_arr_begin(w);
	jw_obj_begin(w);
	jw_kv_u64(w, "id", 0);
	jw_kv_i64(w, "min", INT64_MIN);
	jw_obj_end(w);
	jw_obj_begin(w);
	jw_obj_end(w);
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_bool(w, true);
	jw_null(w);
	jw_strn(w, "a\0b", 3);
	jw_arr_end(w);
	jw_kv_u64(w, "max", UINT64_MAX);
	jw_obj_end(w);
}

static const char sample_json[] =
	"{\"name\":\"al\\\"pha\\u000a\\u00ff\",\"vms\":[{\"id\":0,\"min\":-9223372036854775808},"
	"{},[],true,null,\"a\\u0000b\"],\"max\":18446744073709551615}";

TEST(json_write_nested)
{
	struct json_writer w;

	jw_init(&w, wbuf, sizeof(wbuf));
	write_sample(&w);
	EXPECT_TRUE(jw_finish(&w));
	EXPECT_STREQ(wbuf, sample_json);
	EXPECT_EQ(w.len, sizeof(sample_json) - 1);
}

TEST(json_write_depth_limit)
{
	struct json_writer w;
	char want[2 * JSON_WRITER_MAX_DEPTH + 1];

	jw_init(&w, wbuf, sizeof(wbuf));
	for (int i = 0; i < JSON_WRITER_MAX_DEPTH; i++)
		jw_arr_begin(&w);
	for (int i = 0; i < JSON_WRITER_MAX_DEPTH; i++)
		jw_arr_end(&w);
	EXPECT_TRUE(jw_finish(&w));
	memset(want, '[', JSON_WRITER_MAX_DEPTH);
	memset(want + JSON_WRITER_MAX_DEPTH, ']', JSON_WRITER_MAX_DEPTH);
	want[2 * JSON_WRITER_MAX_DEPTH] = '\0';
	EXPECT_STREQ(wbuf, want);

	/* one level more is an error, whatever follows */
	jw_init(&w, wbuf, sizeof(wbuf));
	for (int i = 0; i < JSON_WRITER_MAX_DEPTH; i++) {
		jw_obj_begin(&w);
		jw_key(&w, "k");
	}
	jw_arr_begin(&w);
	EXPECT_TRUE(w.failed);
	jw_arr_end(&w);
	for (int i = 0; i < JSON_WRITER_MAX_DEPTH; i++)
		jw_obj_end(&w);
	EXPECT_FALSE(jw_finish(&w));
	EXPECT_STREQ(wbuf, "");
	EXPECT_EQ(w.len, 0);
}

/* one writer call sequence that is not valid JSON: jw_finish() must refuse */
static void expect_misuse(void (*fn)(struct json_writer *), const char *what)
{
	struct json_writer w;

	jw_init(&w, wbuf, sizeof(wbuf));
	fn(&w);
	if (jw_finish(&w))
		unit_fail_true(__FILE__, __LINE__, what);
	EXPECT_STREQ(wbuf, "");
}

static void m_nothing(struct json_writer *w)
{
	(void)w;
}

static void m_value_without_key(struct json_writer *w)
{
	jw_obj_begin(w);
	jw_u64(w, 1);
	jw_obj_end(w);
}

static void m_key_in_array(struct json_writer *w)
{
	jw_arr_begin(w);
	jw_key(w, "k");
	jw_u64(w, 1);
	jw_arr_end(w);
}

static void m_key_at_top(struct json_writer *w)
{
	jw_key(w, "k");
	jw_u64(w, 1);
}

static void m_two_keys(struct json_writer *w)
{
	jw_obj_begin(w);
	jw_key(w, "a");
	jw_key(w, "b");
	jw_u64(w, 1);
	jw_obj_end(w);
}

static void m_dangling_key(struct json_writer *w)
{
	jw_obj_begin(w);
	jw_key(w, "a");
	jw_obj_end(w);
}

static void m_mismatched_end(struct json_writer *w)
{
	jw_obj_begin(w);
	jw_arr_end(w);
}

static void m_extra_end(struct json_writer *w)
{
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_arr_end(w);
}

static void m_unclosed(struct json_writer *w)
{
	jw_obj_begin(w);
	jw_kv_u64(w, "a", 1);
}

static void m_two_top_values(struct json_writer *w)
{
	jw_obj_begin(w);
	jw_obj_end(w);
	jw_obj_begin(w);
	jw_obj_end(w);
}

static void m_null_key(struct json_writer *w)
{
	jw_obj_begin(w);
	jw_kv_u64(w, NULL, 1);
	jw_obj_end(w);
}

static void m_null_bytes(struct json_writer *w)
{
	jw_strn(w, NULL, 1);
}

TEST(json_write_misuse_refused)
{
	struct json_writer w;

	expect_misuse(m_nothing, "nothing written");
	expect_misuse(m_value_without_key, "value without key");
	expect_misuse(m_key_in_array, "key in array");
	expect_misuse(m_key_at_top, "key at top level");
	expect_misuse(m_two_keys, "two keys");
	expect_misuse(m_dangling_key, "dangling key");
	expect_misuse(m_mismatched_end, "mismatched end");
	expect_misuse(m_extra_end, "extra end");
	expect_misuse(m_unclosed, "unclosed object");
	expect_misuse(m_two_top_values, "two top-level values");
	expect_misuse(m_null_key, "NULL key");
	expect_misuse(m_null_bytes, "NULL bytes with a length");

	/* a NULL pointer with no bytes is just "" */
	jw_init(&w, wbuf, sizeof(wbuf));
	jw_strn(&w, NULL, 0);
	EXPECT_TRUE(jw_finish(&w));
	EXPECT_STREQ(wbuf, "\"\"");
}

/* Every byte 0..255 escapes to ASCII; 1..255 read back through the parser as
 * the code points U+0001..U+00FF, and NUL as \u0000, which the parser refuses. */
TEST(json_write_every_byte_round_trips)
{
	struct json_writer w;
	char bytes[256], key[2];
	size_t n;

	for (int i = 0; i < 256; i++)
		bytes[i] = (char)i;
	jw_init(&w, wbuf, sizeof(wbuf));
	jw_obj_begin(&w);
	jw_key(&w, "all");
	jw_strn(&w, bytes + 1, 255);
	for (int i = 1; i < JSON_MAX_FIELDS; i++) {
		/* single-byte keys through the same escaping */
		key[0] = (char)(i * 17 - 1);	/* 0x10, 0x21, ... 0xfe */
		key[1] = '\0';
		jw_kv_u64(&w, key, (uint64_t)i);
	}
	jw_obj_end(&w);
	EXPECT_TRUE(jw_finish(&w));
	for (n = 0; n < w.len; n++)
		if ((unsigned char)wbuf[n] < 0x20 || (unsigned char)wbuf[n] >= 0x7f)
			break;
	EXPECT_EQ(n, w.len);	/* pure printable ASCII */

	EXPECT_EQ(parse(wbuf), 0);
	EXPECT_EQ(obj.nr, JSON_MAX_FIELDS);
	{
		const char *s = NULL;
		size_t len = 0, at = 0;
		bool same = true;

		EXPECT_TRUE(json_get_str(&obj, "all", &s, &len));
		EXPECT_EQ(len, 127 + 2 * 128);	/* 0x80..0xff: two UTF-8 bytes each */
		for (int c = 1; c < 256 && s && at < len; c++) {
			if (c < 0x80) {
				same &= (unsigned char)s[at++] == c;
			} else {
				same &= (unsigned char)s[at++] == (0xc0 | c >> 6);
				same &= (unsigned char)s[at++] == (0x80 | (c & 0x3f));
			}
		}
		EXPECT_TRUE(same);
		EXPECT_EQ(at, len);
	}
	EXPECT_EQ(json_get(&obj, "\x10")->magnitude, 1);
	EXPECT_EQ(json_get(&obj, "!")->magnitude, 2);
	EXPECT_EQ(json_get(&obj, "\xc3\xbe")->magnitude, 15);	/* 0xfe as U+00FE */

	jw_init(&w, wbuf, sizeof(wbuf));
	jw_obj_begin(&w);
	jw_key(&w, "nul");
	jw_strn(&w, "\0", 1);
	jw_obj_end(&w);
	EXPECT_TRUE(jw_finish(&w));
	EXPECT_STREQ(wbuf, "{\"nul\":\"\\u0000\"}");
	EXPECT_ERR(wbuf, "\\u0000 is not allowed", 8);
}

TEST(json_write_parse_round_trip)
{
	struct json_writer w;
	const struct json_value *v;
	uint64_t u = 0;

	jw_init(&w, wbuf, sizeof(wbuf));
	jw_obj_begin(&w);
	jw_kv_str(&w, "s", "tab\there \"q\" \\");
	jw_kv_u64(&w, "u", UINT64_MAX);
	jw_kv_i64(&w, "i", INT64_MIN);
	jw_kv_bool(&w, "b", true);
	jw_key(&w, "n");
	jw_null(&w);
	jw_obj_end(&w);
	EXPECT_TRUE(jw_finish(&w));
	EXPECT_EQ(parse(wbuf), 0);
	EXPECT_STRVAL("s", "tab\there \"q\" \\");
	EXPECT_TRUE(json_get_u64(&obj, "u", &u));
	EXPECT_EQ(u, UINT64_MAX);
	v = json_get(&obj, "i");
	EXPECT_TRUE(v && v->negative && v->magnitude == (uint64_t)1 << 63);
	v = json_get(&obj, "n");
	EXPECT_TRUE(v && v->type == JSON_NULL);
}

/* At every capacity below what the sample needs (text + NUL), the writer must
 * fail, write nothing past cap and leave an empty string; from there on succeed. */
TEST(json_write_overflow_every_size)
{
	size_t full = sizeof(sample_json) - 1;

	for (size_t cap = 0; cap <= full + 2; cap++) {
		/* an exact-size heap buffer: ASan sees any write past cap */
		char *buf = malloc(cap ? cap : 1);
		struct json_writer w;
		bool ok;

		if (!buf)
			abort();
		jw_init(&w, cap ? buf : NULL, cap);
		write_sample(&w);
		ok = jw_finish(&w);
		EXPECT_EQ(ok, cap > full);
		if (ok) {
			EXPECT_STREQ(buf, sample_json);
		} else {
			EXPECT_EQ(w.len, 0);
			if (cap)
				EXPECT_EQ(buf[0], '\0');
		}
		free(buf);
	}

	/* with a guard zone behind cap in one array too (no ASan needed) */
	for (size_t cap = 1; cap <= full; cap++) {
		char buf[sizeof(sample_json) + 16];
		struct json_writer w;

		memset(buf, 0x5a, sizeof(buf));
		jw_init(&w, buf, cap);
		write_sample(&w);
		EXPECT_FALSE(jw_finish(&w));
		for (size_t i = cap; i < sizeof(buf); i++)
			if (buf[i] != 0x5a)
				unit_fail_true(__FILE__, __LINE__, "byte past cap untouched");
	}
}
