/* SPDX-License-Identifier: MIT */
/* A strict JSON codec for the management protocol (hyp/lib/json.c): one flat
 * object per request line in, any nesting out. No allocation, no recursion, no
 * floating point; every input byte is validated, so it can face untrusted input. */
#ifndef HYP_JSON_H
#define HYP_JSON_H
#include <types.h>

/* ---- parser ---- */

enum json_type {
	JSON_NULL,
	JSON_BOOL,
	JSON_INT,
	JSON_STRING,
};

/* An integer is sign + magnitude so that both 2^64-1 and -2^63 fit:
 * negative is never set with magnitude 0 ("-0" parses as plain 0). */
struct json_value {
	enum json_type type;
	bool boolean;		/* JSON_BOOL */
	bool negative;		/* JSON_INT */
	uint64_t magnitude;	/* JSON_INT: 0..2^64-1, or 1..2^63 if negative */
	const char *str;	/* JSON_STRING: UTF-8 in the scratch buffer, NUL-terminated */
	size_t str_len;		/* JSON_STRING: bytes before the NUL (never contains one) */
};

struct json_field {
	const char *key;	/* in the scratch buffer, NUL-terminated */
	size_t key_len;
	struct json_value val;
};

#define JSON_MAX_FIELDS		16

struct json_obj {
	unsigned int nr;	/* fields in input order */
	struct json_field f[JSON_MAX_FIELDS];
};

/**
 * json_parse_flat() - parse exactly one flat JSON object from line[0..len).
 *
 * RFC 8259 syntax, restricted: values may be null, true, false, integers (no
 * fraction or exponent, no leading zeros, -2^63..2^64-1) or strings; nested
 * objects and arrays are refused. Strings (keys too) are decoded into @scratch,
 * each NUL-terminated: escapes \" \\ \/ \b \f \n \r \t \uXXXX (surrogate pairs
 * included) become UTF-8; \u0000, lone surrogates, raw control characters and
 * invalid UTF-8 (overlong, surrogates, above U+10FFFF) are refused. Duplicate
 * keys (compared after decoding) and more than JSON_MAX_FIELDS fields are
 * refused. Whitespace (space, tab, LF, CR) around tokens is allowed; anything
 * but whitespace after the closing brace is refused. @line need not be
 * NUL-terminated and may be NULL if @len is 0.
 *
 * A @scratch_size of @len bytes always suffices. @out points into @scratch, so
 * it is valid only as long as @scratch is.
 *
 * Return: 0, or -1 with *@err set to a short static message ("expected ':'",
 * "duplicate key", "nested values are not supported", ...) and *@err_off to the
 * byte offset it refers to (@len if the input ended too early). @err and
 * @err_off may be NULL. On error @out is left with no fields.
 */
int json_parse_flat(const char *line, size_t len, struct json_obj *out,
		    char *scratch, size_t scratch_size, const char **err, size_t *err_off);

/** json_key_is() - true if @f's key is exactly the C string @key. */
bool json_key_is(const struct json_field *f, const char *key);

/** json_get() - the value of @key in @o, or NULL if absent. */
const struct json_value *json_get(const struct json_obj *o, const char *key);

/** json_get_u64() - true and *@out set if @key is present as a non-negative integer. */
bool json_get_u64(const struct json_obj *o, const char *key, uint64_t *out);

/** json_get_bool() - true and *@out set if @key is present as true or false. */
bool json_get_bool(const struct json_obj *o, const char *key, bool *out);

/** json_get_str() - true and *@s, *@len set if @key is present as a string. */
bool json_get_str(const struct json_obj *o, const char *key, const char **s, size_t *len);

/* ---- writer ---- */

#define JSON_WRITER_MAX_DEPTH	16

/*
 * Builds one JSON value in a caller's buffer. Commas and colons are the
 * writer's business; the caller only has to call things in a JSON order. Any
 * error (out of room, nesting deeper than JSON_WRITER_MAX_DEPTH, or calls that
 * would not form valid JSON: a value without a key in an object, a key in an
 * array, a mismatched end, a second top-level value) makes the writer ignore
 * every later call and jw_finish() return false.
 */
struct json_writer {
	char *buf;
	size_t cap, len;	/* len < cap always: a byte stays free for the NUL */
	bool failed;
	unsigned int depth;	/* open containers */
	uint32_t need_comma;	/* bit d: level d already has a member/element */
	uint32_t in_obj;	/* bit d: the container at level d is an object */
	bool after_key;		/* a key was written, its value is due */
};

/** jw_init() - start writing into buf[0..cap). */
void jw_init(struct json_writer *w, char *buf, size_t cap);

/** jw_obj_begin()/jw_obj_end()/jw_arr_begin()/jw_arr_end() - open or close a container. */
void jw_obj_begin(struct json_writer *w);
void jw_obj_end(struct json_writer *w);
void jw_arr_begin(struct json_writer *w);
void jw_arr_end(struct json_writer *w);

/** jw_key() - the next member's key (a C string, escaped like jw_str()). */
void jw_key(struct json_writer *w, const char *key);

/**
 * jw_strn() - a string value from any bytes s[0..n): '"' and '\' are escaped,
 * and every byte below 0x20 or from 0x7f up becomes \u00XX, so the output is
 * pure ASCII whatever the input. Bytes 0x80..0xff thus read back as U+0080..
 * U+00FF (a reader gets the raw bytes back by encoding the string as Latin-1),
 * and a NUL byte as \u0000 (valid JSON, though json_parse_flat() refuses it).
 */
void jw_strn(struct json_writer *w, const char *s, size_t n);

/** jw_str() - jw_strn() of a C string; NULL writes null. */
void jw_str(struct json_writer *w, const char *s);

/** jw_u64()/jw_i64()/jw_bool()/jw_null() - scalar values. */
void jw_u64(struct json_writer *w, uint64_t v);
void jw_i64(struct json_writer *w, int64_t v);
void jw_bool(struct json_writer *w, bool v);
void jw_null(struct json_writer *w);

/** jw_kv_str()/jw_kv_u64()/jw_kv_i64()/jw_kv_bool() - a key and its value. */
void jw_kv_str(struct json_writer *w, const char *key, const char *s);
void jw_kv_u64(struct json_writer *w, const char *key, uint64_t v);
void jw_kv_i64(struct json_writer *w, const char *key, int64_t v);
void jw_kv_bool(struct json_writer *w, const char *key, bool v);

/**
 * jw_finish() - NUL-terminate the output.
 *
 * Return: true if buf holds one complete JSON value (strlen(buf) == w->len).
 * False if anything failed or a container is still open: then buf holds the
 * empty string (if cap > 0) and w->len is 0, so no partial JSON can be sent by
 * mistake; the caller must send an error reply instead.
 */
bool jw_finish(struct json_writer *w);
#endif
