/* SPDX-License-Identifier: MIT */
/* Strict flat-object JSON parser and a JSON writer (see json.h). The parser is
 * a single loop over the bytes with explicit bounds checks on every read; it
 * never recurses because it accepts no nesting. */
#include <string.h>
#include <json.h>

/* ---- parser ---- */

struct parser {
	const unsigned char *s;
	size_t len, pos;
	char *scratch;
	size_t scratch_size, used;
	const char *err;
	size_t err_off;
};

static int fail_at(struct parser *p, size_t off, const char *msg)
{
	p->err = msg;
	p->err_off = off;
	return -1;
}

/* At p->pos, where @msg names what was expected: say so, or that input ended. */
static int fail_expect(struct parser *p, const char *msg)
{
	return fail_at(p, p->pos, p->pos < p->len ? msg : "unexpected end of input");
}

/* the byte at pos, or -1 at the end */
static int peek(const struct parser *p)
{
	return p->pos < p->len ? p->s[p->pos] : -1;
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static bool emit(struct parser *p, unsigned char c)
{
	if (p->used >= p->scratch_size)
		return false;
	p->scratch[p->used++] = (char)c;
	return true;
}

static bool emit_utf8(struct parser *p, uint32_t cp)
{
	if (cp < 0x80)
		return emit(p, (unsigned char)cp);
	if (cp < 0x800)
		return emit(p, (unsigned char)(0xc0 | cp >> 6)) &&
		       emit(p, (unsigned char)(0x80 | (cp & 0x3f)));
	if (cp < 0x10000)
		return emit(p, (unsigned char)(0xe0 | cp >> 12)) &&
		       emit(p, (unsigned char)(0x80 | ((cp >> 6) & 0x3f))) &&
		       emit(p, (unsigned char)(0x80 | (cp & 0x3f)));
	return emit(p, (unsigned char)(0xf0 | cp >> 18)) &&
	       emit(p, (unsigned char)(0x80 | ((cp >> 12) & 0x3f))) &&
	       emit(p, (unsigned char)(0x80 | ((cp >> 6) & 0x3f))) &&
	       emit(p, (unsigned char)(0x80 | (cp & 0x3f)));
}

static int hex_val(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at s[at..at+4) into *cp; false if short or not hex. */
static bool hex4(const struct parser *p, size_t at, uint32_t *cp)
{
	uint32_t v = 0;

	if (p->len - at < 4)	/* at <= len always holds here */
		return false;
	for (size_t i = 0; i < 4; i++) {
		int h = hex_val(p->s[at + i]);

		if (h < 0)
			return false;
		v = v << 4 | (uint32_t)h;
	}
	*cp = v;
	return true;
}

/*
 * Length of the well-formed UTF-8 sequence at s[at] (a byte >= 0x80), or 0.
 * Unicode 15 table 3-7: the second byte's range depends on the first, which
 * rules out overlong forms, UTF-16 surrogates and code points above U+10FFFF.
 */
static size_t utf8_seq(const struct parser *p, size_t at)
{
	unsigned char c = p->s[at], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (p->len - at < n)
		return 0;
	if (p->s[at + 1] < lo || p->s[at + 1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p->s[at + i] < 0x80 || p->s[at + i] > 0xbf)
			return 0;
	return n;
}

/* One escape at pos (the backslash); appends its UTF-8 and moves pos past it. */
static int parse_escape(struct parser *p)
{
	size_t at = p->pos;
	uint32_t cp, lo;
	unsigned char c;

	if (p->len - at < 2)
		return fail_at(p, p->len, "unexpected end of input");
	c = p->s[at + 1];
	switch (c) {
	case '"': case '\\': case '/':
		cp = c;
		break;
	case 'b':
		cp = '\b';
		break;
	case 'f':
		cp = '\f';
		break;
	case 'n':
		cp = '\n';
		break;
	case 'r':
		cp = '\r';
		break;
	case 't':
		cp = '\t';
		break;
	case 'u':
		if (!hex4(p, at + 2, &cp))
			return fail_at(p, at, "invalid \\u escape");
		if (cp == 0)
			return fail_at(p, at, "\\u0000 is not allowed");
		if (cp >= 0xdc00 && cp <= 0xdfff)
			return fail_at(p, at, "lone surrogate");
		if (cp >= 0xd800 && cp <= 0xdbff) {
			/* a high surrogate must be followed by \u and a low one */
			if (p->len - at < 12 || p->s[at + 6] != '\\' || p->s[at + 7] != 'u' ||
			    !hex4(p, at + 8, &lo) || lo < 0xdc00 || lo > 0xdfff)
				return fail_at(p, at, "lone surrogate");
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			p->pos += 6;
		}
		p->pos += 4;
		break;
	default:
		return fail_at(p, at, "invalid escape");
	}
	p->pos += 2;
	if (!emit_utf8(p, cp))
		return fail_at(p, at, "scratch buffer too small");
	return 0;
}

/* A string at pos (the opening quote), decoded and NUL-terminated in scratch. */
static int parse_string(struct parser *p, const char **out, size_t *out_len)
{
	size_t start = p->used;

	p->pos++;
	for (;;) {
		size_t at = p->pos, n;
		unsigned char c;

		if (at >= p->len)
			return fail_at(p, p->len, "unexpected end of input");
		c = p->s[at];
		if (c == '"')
			break;
		if (c == '\\') {
			if (parse_escape(p))
				return -1;
			continue;
		}
		if (c < 0x20)
			return fail_at(p, at, "control character in string");
		if (c < 0x80) {
			n = 1;
		} else {
			n = utf8_seq(p, at);
			if (!n)
				return fail_at(p, at, "invalid UTF-8");
		}
		for (size_t i = 0; i < n; i++)
			if (!emit(p, p->s[at + i]))
				return fail_at(p, at, "scratch buffer too small");
		p->pos += n;
	}
	if (!emit(p, 0))
		return fail_at(p, p->pos, "scratch buffer too small");
	p->pos++;
	*out = p->scratch + start;
	*out_len = p->used - start - 1;
	return 0;
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int parse_int(struct parser *p, struct json_value *v)
{
	size_t start = p->pos;
	uint64_t m = 0;
	bool neg = false;

	if (peek(p) == '-') {
		neg = true;
		p->pos++;
	}
	if (!is_digit(peek(p)))
		return fail_expect(p, "expected a digit");
	if (peek(p) == '0') {
		p->pos++;
		if (is_digit(peek(p)))
			return fail_at(p, start, "leading zeros are not allowed");
	} else {
		while (is_digit(peek(p))) {
			unsigned int d = (unsigned int)(p->s[p->pos] - '0');

			if (m > (UINT64_MAX - d) / 10)
				return fail_at(p, start, "integer out of range");
			m = m * 10 + d;
			p->pos++;
		}
	}
	if (peek(p) == '.' || peek(p) == 'e' || peek(p) == 'E')
		return fail_at(p, start, "fractions and exponents are not supported");
	if (neg && m > (uint64_t)1 << 63)
		return fail_at(p, start, "integer out of range");
	v->type = JSON_INT;
	v->negative = neg && m;	/* -0 is 0 */
	v->magnitude = m;
	return 0;
}

/* true if s[pos..) starts with the literal @lit (then pos moves past it) */
static bool match(struct parser *p, const char *lit, size_t n)
{
	if (p->len - p->pos < n || memcmp(p->s + p->pos, lit, n))
		return false;
	p->pos += n;
	return true;
}

static int parse_value(struct parser *p, struct json_value *v)
{
	size_t at = p->pos;

	memset(v, 0, sizeof(*v));
	switch (peek(p)) {
	case '"':
		v->type = JSON_STRING;
		return parse_string(p, &v->str, &v->str_len);
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		return parse_int(p, v);
	case '{': case '[':
		return fail_at(p, at, "nested values are not supported");
	case 't':
		v->type = JSON_BOOL;
		v->boolean = true;
		return match(p, "true", 4) ? 0 : fail_at(p, at, "invalid literal");
	case 'f':
		v->type = JSON_BOOL;
		return match(p, "false", 5) ? 0 : fail_at(p, at, "invalid literal");
	case 'n':
		v->type = JSON_NULL;
		return match(p, "null", 4) ? 0 : fail_at(p, at, "invalid literal");
	default:
		return fail_expect(p, "expected a value");
	}
}

static bool key_eq(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && !memcmp(a, b, alen);
}

static int parse_obj(struct parser *p, struct json_obj *out)
{
	skip_ws(p);
	if (peek(p) != '{')
		return fail_expect(p, "expected '{'");
	p->pos++;
	skip_ws(p);
	if (peek(p) == '}') {
		p->pos++;
		return 0;
	}
	for (;;) {
		struct json_field *f;
		size_t key_at;

		skip_ws(p);
		key_at = p->pos;
		if (peek(p) != '"')
			return fail_expect(p, "expected a key");
		if (out->nr == JSON_MAX_FIELDS)
			return fail_at(p, key_at, "too many fields");
		f = &out->f[out->nr];
		if (parse_string(p, &f->key, &f->key_len))
			return -1;
		for (unsigned int i = 0; i < out->nr; i++)
			if (key_eq(out->f[i].key, out->f[i].key_len, f->key, f->key_len))
				return fail_at(p, key_at, "duplicate key");
		skip_ws(p);
		if (peek(p) != ':')
			return fail_expect(p, "expected ':'");
		p->pos++;
		skip_ws(p);
		if (parse_value(p, &f->val))
			return -1;
		out->nr++;
		skip_ws(p);
		if (peek(p) == '}') {
			p->pos++;
			return 0;
		}
		if (peek(p) != ',')
			return fail_expect(p, "expected ',' or '}'");
		p->pos++;
	}
}

int json_parse_flat(const char *line, size_t len, struct json_obj *out,
		    char *scratch, size_t scratch_size, const char **err, size_t *err_off)
{
	struct parser p = {
		.s = (const unsigned char *)line, .len = len,
		.scratch = scratch, .scratch_size = scratch ? scratch_size : 0,
	};
	int ret;

	out->nr = 0;
	ret = parse_obj(&p, out);
	if (!ret) {
		skip_ws(&p);
		if (p.pos != p.len)
			ret = fail_at(&p, p.pos, "trailing characters after the object");
	}
	if (ret) {
		out->nr = 0;
		if (err)
			*err = p.err;
		if (err_off)
			*err_off = p.err_off;
	}
	return ret;
}

bool json_key_is(const struct json_field *f, const char *key)
{
	return key_eq(f->key, f->key_len, key, strlen(key));
}

const struct json_value *json_get(const struct json_obj *o, const char *key)
{
	for (unsigned int i = 0; i < o->nr && i < JSON_MAX_FIELDS; i++)
		if (json_key_is(&o->f[i], key))
			return &o->f[i].val;
	return NULL;
}

bool json_get_u64(const struct json_obj *o, const char *key, uint64_t *out)
{
	const struct json_value *v = json_get(o, key);

	if (!v || v->type != JSON_INT || v->negative)
		return false;
	*out = v->magnitude;
	return true;
}

bool json_get_bool(const struct json_obj *o, const char *key, bool *out)
{
	const struct json_value *v = json_get(o, key);

	if (!v || v->type != JSON_BOOL)
		return false;
	*out = v->boolean;
	return true;
}

bool json_get_str(const struct json_obj *o, const char *key, const char **s, size_t *len)
{
	const struct json_value *v = json_get(o, key);

	if (!v || v->type != JSON_STRING)
		return false;
	*s = v->str;
	*len = v->str_len;
	return true;
}

/* ---- writer ---- */

void jw_init(struct json_writer *w, char *buf, size_t cap)
{
	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->cap = buf ? cap : 0;
	if (w->cap)
		buf[0] = '\0';
}

static void put(struct json_writer *w, char c)
{
	if (w->failed)
		return;
	/* keep len < cap: jw_finish() needs a byte for the NUL */
	if (w->cap - w->len < 2) {
		w->failed = true;
		return;
	}
	w->buf[w->len++] = c;
}

static void put_str(struct json_writer *w, const char *s)
{
	while (*s)
		put(w, *s++);
}

static bool level_bit(uint32_t mask, unsigned int depth)
{
	return mask >> depth & 1;
}

/* Before any value (scalar or container): check it may go here, add a comma. */
static bool value_begin(struct json_writer *w)
{
	uint32_t bit = (uint32_t)1 << w->depth;

	if (w->failed)
		return false;
	if (level_bit(w->in_obj, w->depth)) {
		/* jw_key() wrote the comma and the colon */
		if (!w->after_key) {
			w->failed = true;
			return false;
		}
		w->after_key = false;
		return true;
	}
	if (w->need_comma & bit) {
		if (!w->depth) {	/* one top-level value only */
			w->failed = true;
			return false;
		}
		put(w, ',');
	}
	w->need_comma |= bit;
	return !w->failed;
}

static void container_begin(struct json_writer *w, char c, bool obj)
{
	uint32_t bit;

	if (!value_begin(w))
		return;
	if (w->depth == JSON_WRITER_MAX_DEPTH) {
		w->failed = true;
		return;
	}
	put(w, c);
	w->depth++;
	bit = (uint32_t)1 << w->depth;
	w->need_comma &= ~bit;
	if (obj)
		w->in_obj |= bit;
	else
		w->in_obj &= ~bit;
}

static void container_end(struct json_writer *w, char c, bool obj)
{
	if (w->failed)
		return;
	if (!w->depth || level_bit(w->in_obj, w->depth) != obj || w->after_key) {
		w->failed = true;
		return;
	}
	put(w, c);
	w->depth--;
}

void jw_obj_begin(struct json_writer *w)
{
	container_begin(w, '{', true);
}

void jw_obj_end(struct json_writer *w)
{
	container_end(w, '}', true);
}

void jw_arr_begin(struct json_writer *w)
{
	container_begin(w, '[', false);
}

void jw_arr_end(struct json_writer *w)
{
	container_end(w, ']', false);
}

static void put_escaped(struct json_writer *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	put(w, '"');
	for (size_t i = 0; i < n && !w->failed; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			put(w, '\\');
			put(w, (char)c);
		} else if (c < 0x20 || c >= 0x7f) {
			put_str(w, "\\u00");
			put(w, hex[c >> 4]);
			put(w, hex[c & 15]);
		} else {
			put(w, (char)c);
		}
	}
	put(w, '"');
}

void jw_key(struct json_writer *w, const char *key)
{
	uint32_t bit = (uint32_t)1 << w->depth;

	if (w->failed)
		return;
	if (!key || !w->depth || !level_bit(w->in_obj, w->depth) || w->after_key) {
		w->failed = true;
		return;
	}
	if (w->need_comma & bit)
		put(w, ',');
	w->need_comma |= bit;
	put_escaped(w, key, strlen(key));
	put(w, ':');
	w->after_key = true;
}

void jw_strn(struct json_writer *w, const char *s, size_t n)
{
	if (!s && n) {
		w->failed = true;
		return;
	}
	if (value_begin(w))
		put_escaped(w, s, n);
}

void jw_str(struct json_writer *w, const char *s)
{
	if (!s)
		jw_null(w);
	else
		jw_strn(w, s, strlen(s));
}

static void put_u64(struct json_writer *w, uint64_t v)
{
	char tmp[20];	/* 2^64-1 has 20 digits */
	unsigned int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		put(w, tmp[--n]);
}

void jw_u64(struct json_writer *w, uint64_t v)
{
	if (value_begin(w))
		put_u64(w, v);
}

void jw_i64(struct json_writer *w, int64_t v)
{
	if (!value_begin(w))
		return;
	if (v < 0) {
		put(w, '-');
		/* in unsigned arithmetic: -INT64_MIN overflows int64_t */
		put_u64(w, -(uint64_t)v);
	} else {
		put_u64(w, (uint64_t)v);
	}
}

void jw_bool(struct json_writer *w, bool v)
{
	if (value_begin(w))
		put_str(w, v ? "true" : "false");
}

void jw_null(struct json_writer *w)
{
	if (value_begin(w))
		put_str(w, "null");
}

void jw_kv_str(struct json_writer *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_str(w, s);
}

void jw_kv_u64(struct json_writer *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	jw_u64(w, v);
}

void jw_kv_i64(struct json_writer *w, const char *key, int64_t v)
{
	jw_key(w, key);
	jw_i64(w, v);
}

void jw_kv_bool(struct json_writer *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_bool(w, v);
}

bool jw_finish(struct json_writer *w)
{
	/* complete: nothing open, no dangling key, and a top-level value written */
	if (w->depth || w->after_key || !(w->need_comma & 1))
		w->failed = true;
	if (w->failed) {
		w->len = 0;
		if (w->cap)
			w->buf[0] = '\0';
		return false;
	}
	w->buf[w->len] = '\0';
	return true;
}
