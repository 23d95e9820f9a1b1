/* SPDX-License-Identifier: MIT */
/* hyp/migrate/mig_wire.c: the receiver's framing (mig_rx_*), over a stream
 * port stubbed here. Linked with hyp/lib/crc32c.c.
 *
 * Regression (found by tests/fuzz/fuzz_mig_recv.c, docs/fuzzing.md): the
 * staged payload was at offset 4 of struct mig_rx (after the state enum), and
 * mig_recv.c reads a VCPU payload in place as a struct snap_vcpu (64-bit
 * fields): a misaligned access (UBSan: "member access within misaligned
 * address"). The tests read it the same way, so under UBSan they fail if the
 * stage is ever misaligned again. */
#include <string.h>
#include <crc32c.h>
#include <hart.h>
#include <log.h>
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

size_t snap_port_write(const void *buf, size_t len)
{
	(void)buf;
	return len;
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
	struct mig_rx rx;
} holder;

static enum mig_rx_event poll_event(struct mig_rx *r)
{
	enum mig_rx_event e;

	for (int i = 0; i < 10000; i++)
		if ((e = mig_rx_poll(r)) != MIG_RX_NONE || in.pos == in.len)
			return e;
	return MIG_RX_NONE;
}

static void vcpu_in_place(size_t chunk)
{
	static struct snap_vcpu v;
	const struct snap_vcpu *staged;
	struct mig_rx *r = &holder.rx;
	size_t off;

	memset(&v, 0, sizeof(v));
	v.core.pc = 0x80200000;
	v.core.gpr[10] = 0x1234;
	v.fp.fcsr = 0x7;
	off = put_header();
	off = put_section(off, SNAP_SEC_VCPU, 1, &v, sizeof(v));
	in = (typeof(in)){ stream, off, 0, chunk };

	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), MIG_RX_HEADER);
	EXPECT_TRUE(mig_rx_header_check(r) == NULL);
	EXPECT_EQ(poll_event(r), MIG_RX_SECTION);
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
	struct mig_rx *r = &holder.rx;
	size_t off = put_header();

	off = put_section(off, SNAP_SEC_DEVICE, 0, pl, sizeof(pl));
	in = (typeof(in)){ stream, off, 0, 0 };
	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), MIG_RX_HEADER);
	EXPECT_EQ(poll_event(r), MIG_RX_SECTION);
	EXPECT_EQ((uintptr_t)(r->stage + sizeof(struct snap_device)) % 8, 0);
}

TEST(mig_rx_refuses_bad_framing)
{
	struct mig_rx *r = &holder.rx;
	uint8_t pl[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct snap_section s = { SNAP_SEC_END, 0, sizeof(pl), 0, 0 };
	size_t off = put_header();

	/* a wrong CRC */
	memcpy(stream + off, &s, sizeof(s));
	memcpy(stream + off + sizeof(s), pl, sizeof(pl));
	in = (typeof(in)){ stream, off + sizeof(s) + sizeof(pl), 0, 0 };
	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), MIG_RX_HEADER);
	EXPECT_EQ(poll_event(r), MIG_RX_ERROR);
	EXPECT_STREQ(r->why, "CRC mismatch");

	/* longer than the stage */
	s.length = MIG_STAGE_SIZE + 1;
	memcpy(stream + off, &s, sizeof(s));
	in = (typeof(in)){ stream, off + sizeof(s), 0, 0 };
	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), MIG_RX_HEADER);
	EXPECT_EQ(poll_event(r), MIG_RX_ERROR);
	EXPECT_STREQ(r->why, "impossible section length");

	/* a snapshot, not a migration */
	memcpy(stream, SNAP_MAGIC, 8);
	in = (typeof(in)){ stream, off, 0, 0 };
	mig_rx_reset(r);
	EXPECT_EQ(poll_event(r), MIG_RX_HEADER);
	EXPECT_STREQ(mig_rx_header_check(r), "a snapshot stream, not a migration stream");
}
