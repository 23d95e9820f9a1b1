/* SPDX-License-Identifier: MIT */
/* The stream framing snapshots and migrations share: hyp/snap/section_tx.c
 * and section_rx.c, and the migration's additions (hyp/migrate/mig_wire.c),
 * over a stream port stubbed here that takes and gives a few bytes at a
 * time. Linked with hyp/lib/crc32c.c.
 *
 * Regression (found by tests/fuzz/fuzz_mig_recv.c, docs/fuzzing.md): the
 * staged payload was at offset 4 of the receiver (after the state enum), and
 * mig_recv.c reads a VCPU payload in place as a struct snap_vcpu (64-bit
 * fields): a misaligned access (UBSan: "member access within misaligned
 * address"). The tests read it the same way, so under UBSan they fail if the
 * stage is ever misaligned again. */
#include <string.h>
#include <crc32c.h>
#include <hart.h>
#include <log.h>
#include <section_stream.h>
#include <snapshot.h>
#include "../../hyp/migrate/mig_wire.h"
#include "test.h"

/* ---- stubs ---- */

static struct {
	const uint8_t *data;
	size_t len, pos, chunk;
} in;

size_t snap_port_read(void *buf, size_t len)
{
	size_t n = len;

	if (in.chunk && n > in.chunk)
		n = in.chunk;
	if (n > in.len - in.pos)
		n = in.len - in.pos;
	memcpy(buf, in.data + in.pos, n);
	in.pos += n;
	return n;
}

/* what the transmitter wrote: @chunk bytes a write at most (0: all), and
 * every @refuse-th write takes nothing (the port is full) */
static struct {
	uint8_t data[16384];
	size_t len, chunk;
	unsigned int writes, refuse;
} out;

size_t snap_port_write(const void *buf, size_t len)
{
	size_t n = len;

	if (out.refuse && ++out.writes % out.refuse == 0)
		return 0;
	if (out.chunk && n > out.chunk)
		n = out.chunk;
	if (n > sizeof(out.data) - out.len)
		n = sizeof(out.data) - out.len;
	memcpy(out.data + out.len, buf, n);
	out.len += n;
	return n;
}

uint64_t time_now(void)
{
	static uint64_t t;

	return t += 10;
}

void hyp_panic(const char *fmt, ...)
{
	(void)fmt;
	__builtin_trap();
}

/* ---- a stream ---- */

static uint8_t stream[4096];

static size_t put_header(void)
{
	struct snap_header h = { .version = MIG_VERSION, .header_size = sizeof(h) };

	memcpy(h.magic, MIG_MAGIC, sizeof(h.magic));
	memcpy(stream, &h, sizeof(h));
	return sizeof(h);
}

static size_t put_section(size_t off, uint32_t type, uint32_t instance, const void *pl,
			  size_t len)
{
	struct snap_section s = { type, instance, len, crc32c(pl, len), 0 };

	memcpy(stream + off, &s, sizeof(s));
	memcpy(stream + off + sizeof(s), pl, len);
	return off + sizeof(s) + len;
}

/* the receiver as mig_recv.c holds it: after other fields */
static struct {
	uint32_t phase;
	struct section_rx rx;
} holder;

static enum section_rx_event poll_event(struct section_rx *r)
{
	enum section_rx_event e;

	for (int i = 0; i < 10000; i++)
		if ((e = mig_rx_poll(r)) != SECTION_RX_NONE || in.pos == in.len)
			return e;
	return SECTION_RX_NONE;
}

static void vcpu_in_place(size_t chunk)
{
	static struct snap_vcpu v;
	const struct snap_vcpu *staged;
	struct section_rx *r = &holder.rx;
	size_t off;

	memset(&v, 0, sizeof(v));
	v.core.pc = 0x80200000;
	v.core.gpr[10] = 0x1234;
	v.fp.fcsr = 0x7;
	off = put_header();
	off = put_section(off, SNAP_SEC_VCPU, 1, &v, sizeof(v));
	in = (typeof(in)){ stream, off, 0, chunk };

	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), SECTION_RX_HEADER);
	EXPECT_TRUE(mig_rx_header_check(r) == NULL);
	EXPECT_EQ(poll_event(r), SECTION_RX_PAYLOAD);
	EXPECT_EQ(r->sec.type, SNAP_SEC_VCPU);
	EXPECT_EQ(r->sec.length, sizeof(v));
	/* mig_recv.c hands the stage to snap_vcpu_check()/snap_vcpu_load() as is */
	EXPECT_EQ((uintptr_t)r->stage % _Alignof(struct snap_vcpu), 0);
	staged = (const struct snap_vcpu *)(const void *)r->stage;
	EXPECT_EQ(staged->core.pc, 0x80200000);
	EXPECT_EQ(staged->core.gpr[10], 0x1234);
	EXPECT_EQ(staged->fp.fcsr, 0x7);
	EXPECT_EQ(r->bytes, off);
}

TEST(mig_rx_vcpu_payload_is_aligned)
{
	vcpu_in_place(0);
}

TEST(mig_rx_vcpu_payload_is_aligned_in_pieces)
{
	vcpu_in_place(3);
}

/* a DEVICE payload: the device's state follows struct snap_device */
TEST(mig_rx_device_state_is_aligned)
{
	uint8_t pl[sizeof(struct snap_device) + 16] = "uart16550";
	struct section_rx *r = &holder.rx;
	size_t off = put_header();

	off = put_section(off, SNAP_SEC_DEVICE, 0, pl, sizeof(pl));
	in = (typeof(in)){ stream, off, 0, 0 };
	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), SECTION_RX_HEADER);
	EXPECT_EQ(poll_event(r), SECTION_RX_PAYLOAD);
	EXPECT_EQ((uintptr_t)(r->stage + sizeof(struct snap_device)) % 8, 0);
}

TEST(mig_rx_refuses_bad_framing)
{
	struct section_rx *r = &holder.rx;
	uint8_t pl[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct snap_section s = { SNAP_SEC_END, 0, sizeof(pl), 0, 0 };
	size_t off = put_header();

	/* a wrong CRC */
	memcpy(stream + off, &s, sizeof(s));
	memcpy(stream + off + sizeof(s), pl, sizeof(pl));
	in = (typeof(in)){ stream, off + sizeof(s) + sizeof(pl), 0, 0 };
	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), SECTION_RX_HEADER);
	EXPECT_EQ(poll_event(r), SECTION_RX_ERROR);
	EXPECT_STREQ(r->why, "CRC mismatch");

	/* longer than the stage */
	s.length = SECTION_STAGE_SIZE + 1;
	memcpy(stream + off, &s, sizeof(s));
	in = (typeof(in)){ stream, off + sizeof(s), 0, 0 };
	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), SECTION_RX_HEADER);
	EXPECT_EQ(poll_event(r), SECTION_RX_ERROR);
	EXPECT_STREQ(r->why, "impossible section length");

	/* a snapshot, not a migration */
	memcpy(stream, SNAP_MAGIC, 8);
	in = (typeof(in)){ stream, off, 0, 0 };
	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), SECTION_RX_HEADER);
	EXPECT_STREQ(mig_rx_header_check(r), "a snapshot stream, not a migration stream");
}

/* ---- the transmitter into the receiver, a few bytes at a time ---- */

static uint8_t pages[2 * SNAP_PAGE_SIZE];
static uint8_t small[100];

/* Push what @t staged through a port that takes 7 bytes a write and nothing
 * every 5th: true once all of it is out. */
static bool push_all(struct section_tx *t)
{
	for (int i = 0; i < 100000; i++)
		if (section_tx_push(t))
			return true;
	return false;
}

/* A snapshot-like stream: header, a copied section, one written in place,
 * a MEMORY run of two pages, END (@via_take: the first two sections staged
 * at once and sent later, as the live snapshot's prefix). */
static void transmit(bool via_take)
{
	static struct section_tx t;
	static uint8_t prefix[2048];
	size_t prefix_len = 0;
	uint64_t *in_place;
	struct snap_end e;

	for (size_t i = 0; i < sizeof(pages); i++)
		pages[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(small); i++)
		small[i] = (uint8_t)(0xa0 + i);
	memset(&out, 0, sizeof(out));
	out.chunk = 7;
	out.refuse = 5;
	section_tx_reset(&t);
	section_tx_header(&t, SNAP_MAGIC, SNAP_VERSION, SNAP_F_LIVE);
	EXPECT_TRUE(push_all(&t));
	section_tx_small(&t, SNAP_SEC_VCPU, 2, small, sizeof(small));
	if (via_take)
		prefix_len += section_tx_take(&t, prefix, sizeof(prefix));
	else
		EXPECT_TRUE(push_all(&t));
	EXPECT_TRUE(section_tx_idle(&t));
	in_place = section_tx_payload(&t);
	EXPECT_EQ((uintptr_t)in_place % 8, 0);
	in_place[0] = 0x1122334455667788ULL;
	in_place[1] = 42;
	section_tx_seal(&t, SNAP_SEC_DEVICE, 1, 16);
	if (via_take) {
		prefix_len += section_tx_take(&t, prefix + prefix_len, sizeof(prefix) - prefix_len);
		section_tx_framed(&t, prefix, prefix_len);
	}
	EXPECT_TRUE(push_all(&t));
	section_tx_pages(&t, 0x80200000, 2, pages);
	EXPECT_TRUE(push_all(&t));
	e = (struct snap_end){ t.sections, 2 };
	section_tx_small(&t, SNAP_SEC_END, 0, &e, sizeof(e));
	EXPECT_TRUE(push_all(&t));
	EXPECT_TRUE(section_tx_idle(&t));
	EXPECT_EQ(t.sections, 4);
	EXPECT_EQ(t.bytes, out.len);
	EXPECT_EQ(out.len, sizeof(struct snap_header) + 4 * sizeof(struct snap_section) +
		  sizeof(small) + 16 + sizeof(struct snap_mem_run) + sizeof(pages) +
		  sizeof(struct snap_end));
}

static void rx_start(struct section_rx *r, size_t limit, size_t chunk)
{
	in = (typeof(in)){ out.data, out.len, 0, chunk };
	section_rx_reset(r, limit);
}

/* The next event, taking the payload of each section as it comes. */
static enum section_rx_event next(struct section_rx *r)
{
	enum section_rx_event e;

	for (int i = 0; i < 100000; i++) {
		e = section_rx_poll(r);
		if (e == SECTION_RX_SECTION && !section_rx_take(r))
			continue;
		if (e != SECTION_RX_NONE || in.pos == in.len)
			return e;
	}
	return SECTION_RX_NONE;
}

static void receive_all(size_t chunk)
{
	static struct section_rx r;
	static uint8_t ram[sizeof(pages)];
	const struct snap_header *h = (const void *)r.stage;
	const uint64_t *dev = (const void *)r.stage;
	const struct snap_mem_run *run = (const void *)r.stage;
	const struct snap_end *end = (const void *)r.stage;

	memset(ram, 0, sizeof(ram));
	rx_start(&r, out.len, chunk);
	EXPECT_EQ(next(&r), SECTION_RX_HEADER);
	EXPECT_TRUE(!memcmp(h->magic, SNAP_MAGIC, 8) && h->version == SNAP_VERSION &&
		    h->flags == SNAP_F_LIVE && h->header_size == sizeof(*h));
	EXPECT_EQ(section_rx_poll(&r), SECTION_RX_SECTION);	/* the header was all in */
	EXPECT_TRUE(r.sec.type == SNAP_SEC_VCPU && r.sec.instance == 2 &&
		    r.sec.length == sizeof(small));
	EXPECT_EQ(r.sec_offset, sizeof(struct snap_header));
	EXPECT_TRUE(section_rx_take(&r) == NULL);
	EXPECT_EQ(next(&r), SECTION_RX_PAYLOAD);
	EXPECT_TRUE(!memcmp(r.stage, small, sizeof(small)));
	/* a refusal of the payload names its own section's offset */
	EXPECT_EQ(r.sec_offset, sizeof(struct snap_header));
	EXPECT_EQ(next(&r), SECTION_RX_PAYLOAD);
	EXPECT_TRUE(r.sec.type == SNAP_SEC_DEVICE && r.sec.instance == 1);
	EXPECT_TRUE(dev[0] == 0x1122334455667788ULL && dev[1] == 42);
	EXPECT_EQ(next(&r), SECTION_RX_PAYLOAD);		/* MEMORY: its run header */
	EXPECT_TRUE(r.sec.type == SNAP_SEC_MEMORY && run->gpa == 0x80200000 && run->pages == 2);
	EXPECT_EQ(section_rx_poll(&r), SECTION_RX_NONE);	/* where do the pages go? */
	section_rx_data(&r, ram, sizeof(ram));
	EXPECT_EQ(next(&r), SECTION_RX_DATA);
	EXPECT_TRUE(!memcmp(ram, pages, sizeof(pages)));
	EXPECT_EQ(next(&r), SECTION_RX_PAYLOAD);
	EXPECT_TRUE(r.sec.type == SNAP_SEC_END && end->sections == 3 && end->memory_pages == 2);
	EXPECT_EQ(r.bytes, out.len);
	EXPECT_EQ(section_rx_poll(&r), SECTION_RX_NONE);
}

TEST(section_stream_round_trip_a_few_bytes_at_a_time)
{
	transmit(false);
	receive_all(5);
	receive_all(0);
}

/* the live snapshot's prefix: staged at the pause, sent later, the same bytes */
TEST(section_stream_framed_prefix_is_the_same_stream)
{
	static uint8_t direct[sizeof(out.data)];
	size_t len;

	transmit(false);
	memcpy(direct, out.data, out.len);
	len = out.len;
	transmit(true);
	EXPECT_EQ(out.len, len);
	EXPECT_TRUE(!memcmp(out.data, direct, len));
	receive_all(3);
}

/* The MEMORY section of a transmitted stream with its header edited by
 * @edit: what section_rx_take() says of it once the sections before it are in. */
static const char *take_edited_memory_header(void (*edit)(struct snap_section *))
{
	static struct section_rx r;
	struct snap_section s;
	size_t mem = sizeof(struct snap_header) + 2 * sizeof(struct snap_section) +
		     sizeof(small) + 16;

	transmit(false);
	memcpy(&s, out.data + mem, sizeof(s));
	EXPECT_EQ(s.type, SNAP_SEC_MEMORY);
	edit(&s);
	memcpy(out.data + mem, &s, sizeof(s));
	rx_start(&r, out.len, 0);
	for (int i = 0; i < 3; i++)
		EXPECT_NE(next(&r), SECTION_RX_ERROR);
	EXPECT_EQ(section_rx_poll(&r), SECTION_RX_SECTION);
	return section_rx_take(&r);
}

static void length_not_whole_pages(struct snap_section *s)
{
	s->length += 1;
}

static void instance_one(struct snap_section *s)
{
	s->instance = 1;
}

/* Offset of the first MEMORY payload byte after its run header. */
static size_t page_data_offset(void)
{
	return sizeof(struct snap_header) + 2 * sizeof(struct snap_section) + sizeof(small) + 16 +
	       sizeof(struct snap_section) + sizeof(struct snap_mem_run);
}

TEST(section_rx_refuses_a_crc_mismatch)
{
	static struct section_rx r;
	static uint8_t ram[sizeof(pages)];
	size_t off = sizeof(struct snap_header) + sizeof(struct snap_section) + 40;

	transmit(false);
	out.data[off] ^= 1;		/* in the VCPU payload */
	rx_start(&r, out.len, 11);
	EXPECT_EQ(next(&r), SECTION_RX_HEADER);
	EXPECT_EQ(next(&r), SECTION_RX_ERROR);
	EXPECT_STREQ(r.why, "CRC mismatch");

	transmit(false);
	out.data[page_data_offset() + SNAP_PAGE_SIZE + 3] ^= 0x80;	/* in a page */
	rx_start(&r, out.len, 11);
	for (int i = 0; i < 4; i++)
		EXPECT_NE(next(&r), SECTION_RX_ERROR);
	section_rx_data(&r, ram, sizeof(ram));
	EXPECT_EQ(next(&r), SECTION_RX_ERROR);
	EXPECT_STREQ(r.why, "CRC mismatch");
}

TEST(section_rx_refuses_a_reserved_field)
{
	static struct section_rx r;
	struct snap_section s;
	size_t off = sizeof(struct snap_header);

	transmit(false);
	memcpy(&s, out.data + off, sizeof(s));
	s.reserved = 1;
	memcpy(out.data + off, &s, sizeof(s));
	rx_start(&r, out.len, 0);
	EXPECT_EQ(next(&r), SECTION_RX_HEADER);
	EXPECT_EQ(section_rx_poll(&r), SECTION_RX_ERROR);
	EXPECT_STREQ(r.why, "reserved field of a section header is not 0");
}

TEST(section_rx_refuses_impossible_lengths)
{
	EXPECT_STREQ(take_edited_memory_header(length_not_whole_pages), "impossible MEMORY length");
}

/* a MEMORY section is instance 0 in both streams (the migration receiver
 * took any: only the framing sees every MEMORY header) */
TEST(section_rx_refuses_a_memory_instance)
{
	EXPECT_STREQ(take_edited_memory_header(instance_one), "MEMORY instance is not 0");
}

/* what follows the limit is not the stream's: never read */
TEST(section_rx_never_reads_past_its_limit)
{
	static struct section_rx r;
	size_t limit = sizeof(struct snap_header) + sizeof(struct snap_section) + 10;

	transmit(false);
	rx_start(&r, limit, 0);
	EXPECT_EQ(next(&r), SECTION_RX_HEADER);
	EXPECT_EQ(section_rx_poll(&r), SECTION_RX_SECTION);
	EXPECT_TRUE(section_rx_take(&r) == NULL);
	EXPECT_EQ(section_rx_poll(&r), SECTION_RX_NONE);
	EXPECT_EQ(r.bytes, limit);
	EXPECT_EQ(in.pos, limit);
}
