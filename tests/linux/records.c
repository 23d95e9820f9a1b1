// SPDX-License-Identifier: MIT
/*
 * records.c: numbered, checksummed, fsync'd records in one file, for tests of
 * guests whose disk I/O goes on while they are snapshotted, restored and
 * moved (issue 25; the format is docs/testing.md's "The records test").
 *
 *   records write [--rate R] [--bytes SIZE] [--count N] FILE
 *       appends record after record to FILE (created if missing; an
 *       existing file goes on after its last good record, a torn tail cut
 *       off), fsync()s each and only then prints "records: acked N (fsync
 *       ok)"; R records a second at most (default 20, 0: no pause), SIZE
 *       bytes each (a multiple of 512, 512..65536, default 4096); with
 *       --count it stops once records 0..N-1 are there, else never
 *   records check FILE
 *       "records: check ok last=K" when records 0..K follow each other,
 *       each whole and right (a partial record after the last is allowed
 *       and said: "; torn tail T bytes"), else "records: check FAIL at
 *       offset X: why" and exit 1
 *
 * A record of SIZE bytes, little-endian: magic "RECD", SIZE (u32), its
 * number N (u64), SIZE - 20 bytes of payload (the splitmix64 stream seeded
 * with N, as u64 words, the last one cut short), CRC32 (IEEE, zlib's) of
 * everything before it.  The payload makes a record another record's CRC
 * cannot pass for, the CRC catches any other change.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "wire.h"

#define REC_MAGIC	0x44434552u	/* "RECD" as it lies in the file */
#define REC_HEADER	16		/* magic, size, seq */
#define REC_TRAILER	4		/* CRC32 */
#define REC_MIN		512u
#define REC_MAX		65536u
#define REC_DEFAULT	4096u
#define RATE_DEFAULT	20u

/* The payload of record @seq: @n bytes of splitmix64(seq) words. */
static void payload(uint8_t *p, size_t n, uint64_t seq)
{
	uint64_t state = seq;

	for (size_t off = 0; off < n; off += 8) {
		uint8_t w[8];

		put_le(w, splitmix64(&state), 8);
		memcpy(p + off, w, n - off < 8 ? n - off : 8);
	}
}

static void record_build(uint8_t *rec, uint32_t size, uint64_t seq)
{
	put_le(rec, REC_MAGIC, 4);
	put_le(rec + 4, size, 4);
	put_le(rec + 8, seq, 8);
	payload(rec + REC_HEADER, size - REC_HEADER - REC_TRAILER, seq);
	put_le(rec + size - REC_TRAILER, crc32(rec, size - REC_TRAILER), 4);
}

/* What is wrong with @rec as record @seq of @size bytes (@want: scratch of
 * @size bytes), or NULL; @why gets the words. */
static const char *record_fault(const uint8_t *rec, uint32_t size, uint64_t seq, uint8_t *want,
				char *why, size_t whylen)
{
	uint64_t got_seq = get_le(rec + 8, 8);
	uint32_t crc = (uint32_t)get_le(rec + size - REC_TRAILER, 4);

	if (get_le(rec, 4) != REC_MAGIC) {
		snprintf(why, whylen, "bad magic %08llx (record %llu)",
			 (unsigned long long)get_le(rec, 4), (unsigned long long)seq);
	} else if (get_le(rec + 4, 4) != size) {
		snprintf(why, whylen, "record size %llu, the file's records have %u",
			 (unsigned long long)get_le(rec + 4, 4), size);
	} else if (crc32(rec, size - REC_TRAILER) != crc) {
		snprintf(why, whylen, "CRC wrong (record %llu: stored %08x, computed %08x)",
			 (unsigned long long)seq, crc, crc32(rec, size - REC_TRAILER));
	} else if (got_seq > seq) {
		snprintf(why, whylen, "gap: record %llu where %llu belongs (%llu missing)",
			 (unsigned long long)got_seq, (unsigned long long)seq,
			 (unsigned long long)(got_seq - seq));
	} else if (got_seq < seq) {
		snprintf(why, whylen, "record %llu again where %llu belongs",
			 (unsigned long long)got_seq, (unsigned long long)seq);
	} else {
		record_build(want, size, seq);
		for (uint32_t i = REC_HEADER; i < size - REC_TRAILER; i++) {
			if (rec[i] != want[i]) {
				snprintf(why, whylen, "payload byte %u wrong (record %llu)", i,
					 (unsigned long long)seq);
				return why;
			}
		}
		return NULL;
	}
	return why;
}

struct scan {
	uint32_t size;		/* bytes a record (0: no record) */
	uint64_t count;		/* good records, 0..count-1 */
	uint64_t torn;		/* bytes of a partial record after them */
	int64_t bad_at;		/* offset of the first bad record, -1: none */
	char why[160];
};

/* Reads @fd from its start: its records, as struct scan says. Returns -1 on
 * a read error (errno set). */
static int scan_file(int fd, uint32_t size_hint, struct scan *s)
{
	uint8_t *rec = NULL, *want = NULL;
	uint8_t head[8];
	ssize_t got;
	off_t off = 0;

	memset(s, 0, sizeof(*s));
	s->bad_at = -1;
	got = pread(fd, head, sizeof(head), 0);
	if (got < 0)
		return -1;
	if (got == 0)
		return 0;
	s->size = size_hint;
	if (got == sizeof(head) && get_le(head, 4) == REC_MAGIC)
		s->size = (uint32_t)get_le(head + 4, 4);
	if (s->size < REC_MIN || s->size > REC_MAX || s->size % 512) {
		s->bad_at = 0;
		snprintf(s->why, sizeof(s->why), "no record size in the first record (%u)",
			 s->size);
		return 0;
	}
	rec = malloc(s->size);
	want = malloc(s->size);
	if (!rec || !want) {
		free(rec);
		free(want);
		errno = ENOMEM;
		return -1;
	}
	for (;; off += s->size, s->count++) {
		size_t have = 0;

		while (have < s->size) {
			got = pread(fd, rec + have, s->size - have, off + (off_t)have);
			if (got < 0) {
				free(rec);
				free(want);
				return -1;
			}
			if (got == 0)
				break;
			have += (size_t)got;
		}
		if (have < s->size) {
			s->torn = have;
			break;
		}
		if (record_fault(rec, s->size, s->count, want, s->why, sizeof(s->why))) {
			s->bad_at = off;
			break;
		}
	}
	free(rec);
	free(want);
	return 0;
}

static int check(const char *path)
{
	struct scan s;
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		printf("records: check FAIL at offset 0: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (scan_file(fd, REC_DEFAULT, &s)) {
		printf("records: check FAIL at offset 0: read %s: %s\n", path, strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	if (s.bad_at >= 0) {
		printf("records: check FAIL at offset %lld: %s\n", (long long)s.bad_at, s.why);
		return 1;
	}
	printf("records: check ok last=%lld", (long long)s.count - 1);
	if (s.torn)
		printf("; torn tail %llu bytes", (unsigned long long)s.torn);
	printf("\n");
	return 0;
}

static void sleep_ns(long long ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	while (ns > 0 && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The whole of @buf, or -1 (errno set). */
static int write_all(int fd, const uint8_t *buf, size_t n)
{
	while (n) {
		ssize_t got = write(fd, buf, n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		buf += got;
		n -= (size_t)got;
	}
	return 0;
}

static int write_records(const char *path, uint32_t size, unsigned int rate, uint64_t count)
{
	struct scan s;
	uint8_t *rec;
	uint64_t seq;
	int fd = open(path, O_RDWR | O_APPEND | O_CREAT, 0644);

	if (fd < 0) {
		printf("records: write FAIL: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (scan_file(fd, size, &s)) {
		printf("records: write FAIL: read %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (s.bad_at >= 0) {
		printf("records: write FAIL: %s has a bad record at offset %lld: %s\n", path,
		       (long long)s.bad_at, s.why);
		return 1;
	}
	if (s.count && s.size != size) {
		printf("records: write FAIL: %s has records of %u bytes, not %u\n", path, s.size,
		       size);
		return 1;
	}
	/* a record cut short by a crash: the next one goes where it began */
	if (s.torn && ftruncate(fd, (off_t)(s.count * size))) {
		printf("records: write FAIL: cutting the torn tail: %s\n", strerror(errno));
		return 1;
	}
	rec = malloc(size);
	if (!rec) {
		printf("records: write FAIL: no memory\n");
		return 1;
	}
	seq = s.count;
	printf("records: writing %s from record %llu, %u bytes each, %u a second%s\n", path,
	       (unsigned long long)seq, size, rate, rate ? "" : " (no pause)");
	for (; !count || seq < count; seq++) {
		long long start = now_ns();

		record_build(rec, size, seq);
		if (write_all(fd, rec, size) || fsync(fd)) {
			printf("records: write FAIL at record %llu: %s\n", (unsigned long long)seq,
			       strerror(errno));
			return 1;
		}
		/* the ack: only now is the record on the disk */
		printf("records: acked %llu (fsync ok)\n", (unsigned long long)seq);
		if (rate)
			sleep_ns(1000000000LL / rate - (now_ns() - start));
	}
	printf("records: wrote records 0..%llu\n", (unsigned long long)count - 1);
	free(rec);
	return close(fd) ? 1 : 0;
}

static int usage(void)
{
	printf("usage: records write [--rate R] [--bytes SIZE] [--count N] FILE\n"
	       "       records check FILE\n");
	return 2;
}

/* A decimal number in [lo, hi], or -1. */
static long long number(const char *s, long long lo, long long hi)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	long long rate = RATE_DEFAULT, size = REC_DEFAULT, count = 0;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* one ack, one line out */
	crc32_init();
	if (argc == 3 && !strcmp(argv[1], "check"))
		return check(argv[2]);
	if (argc < 3 || strcmp(argv[1], "write"))
		return usage();
	for (i = 2; i < argc - 1; i += 2) {
		const char *opt = argv[i], *val = argv[i + 1];

		if (i + 1 >= argc - 1)
			return usage();
		if (!strcmp(opt, "--rate"))
			rate = number(val, 0, 100000);
		else if (!strcmp(opt, "--bytes"))
			size = number(val, REC_MIN, REC_MAX);
		else if (!strcmp(opt, "--count"))
			count = number(val, 1, 1LL << 40);
		else
			return usage();
		if (rate < 0 || size < 0 || size % 512 || count < 0) {
			printf("records: bad %s %s\n", opt, val);
			return 2;
		}
	}
	if (i != argc - 1)
		return usage();
	return write_records(argv[argc - 1], (uint32_t)size, (unsigned int)rate, (uint64_t)count);
}
