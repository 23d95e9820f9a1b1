/* SPDX-License-Identifier: MIT */
/* Migration message framing on the stream port (docs/migration.md,
 * "Framing"): the snapshot format's header and section framing, with the
 * migration magic. Nothing here knows what a message means. */
#include <string.h>
#include <crc32c.h>
#include <hart.h>
#include <log.h>
#include <snapshot.h>
#include "mig_wire.h"

void mig_tx_reset(struct mig_tx *t)
{
	memset(t, 0, sizeof(*t));
	t->moved = time_now();
}

void mig_tx_header(struct mig_tx *t)
{
	struct snap_header h = { .version = MIG_VERSION, .header_size = sizeof(h) };

	memcpy(h.magic, MIG_MAGIC, sizeof(h.magic));
	memcpy(t->stage, &h, sizeof(h));
	t->len = sizeof(h);
	t->off = 0;
	t->data_len = t->data_off = 0;
}

static void stage(struct mig_tx *t, uint32_t type, uint32_t instance, const void *payload,
		  size_t len, uint64_t total, uint32_t crc)
{
	struct snap_section h = { type, instance, total, crc, 0 };

	memcpy(t->stage, &h, sizeof(h));
	memcpy(t->stage + sizeof(h), payload, len);
	t->len = sizeof(h) + len;
	t->off = 0;
	t->data_len = t->data_off = 0;
	t->sections++;
}

void mig_tx_section(struct mig_tx *t, uint32_t type, uint32_t instance, const void *payload,
		    size_t len)
{
	HYP_ASSERT(len + sizeof(struct snap_section) <= sizeof(t->stage));
	stage(t, type, instance, payload, len, len, crc32c(payload, len));
}

void mig_tx_pages(struct mig_tx *t, uint64_t gpa, uint64_t pages, const void *data)
{
	struct snap_mem_run run = { gpa, pages };
	size_t len = pages * SNAP_PAGE_SIZE;
	uint32_t crc = crc32c_update(CRC32C_INIT, &run, sizeof(run));

	crc = crc32c_final(crc32c_update(crc, data, len));
	stage(t, SNAP_SEC_MEMORY, 0, &run, sizeof(run), sizeof(run) + len, crc);
	t->data = data;
	t->data_len = len;
}

bool mig_tx_idle(const struct mig_tx *t)
{
	return t->off == t->len && t->data_off == t->data_len;
}

bool mig_tx_push(struct mig_tx *t)
{
	size_t n;

	while (t->off < t->len) {
		n = snap_port_write(t->stage + t->off, t->len - t->off);
		if (!n)
			return false;
		t->off += n;
		t->bytes += n;
		t->moved = time_now();
	}
	while (t->data_off < t->data_len) {
		n = snap_port_write(t->data + t->data_off, t->data_len - t->data_off);
		if (!n)
			return false;
		t->data_off += n;
		t->bytes += n;
		t->moved = time_now();
	}
	return true;
}

static void expect(struct mig_rx *r, size_t n, int state)
{
	r->need = n;
	r->have = 0;
	r->state = state;
}

void mig_rx_reset(struct mig_rx *r)
{
	memset(r, 0, sizeof(*r));
	r->moved = time_now();
	expect(r, sizeof(struct snap_header), RX_HEADER);
}

const char *mig_rx_header_check(const struct mig_rx *r)
{
	struct snap_header h;

	memcpy(&h, r->stage, sizeof(h));
	if (memcmp(h.magic, MIG_MAGIC, sizeof(h.magic)))
		return memcmp(h.magic, SNAP_MAGIC, sizeof(h.magic)) ?
		       "not a migration stream (wrong magic)" :
		       "a snapshot stream, not a migration stream";
	if (h.version != MIG_VERSION)
		return "unsupported migration protocol version";
	if (h.header_size != sizeof(h) || h.flags || h.reserved)
		return "bad migration header (size, flags or reserved field)";
	return NULL;
}

void mig_rx_data(struct mig_rx *r, void *dst, uint64_t len)
{
	r->data = dst;
	r->data_len = len;
	r->data_off = 0;
	r->state = RX_DATA;
}

/* A section header is in: how much of its payload to stage. */
static enum mig_rx_event got_section_header(struct mig_rx *r)
{
	memcpy(&r->sec, r->stage, sizeof(r->sec));
	if (r->sec.reserved) {
		r->why = "reserved field of a section header is not 0";
		return MIG_RX_ERROR;
	}
	if (r->sec.type == SNAP_SEC_MEMORY) {
		if (r->sec.length < sizeof(struct snap_mem_run) || r->sec.length > SNAP_SECTION_MAX ||
		    (r->sec.length - sizeof(struct snap_mem_run)) % SNAP_PAGE_SIZE) {
			r->why = "impossible MEMORY length";
			return MIG_RX_ERROR;
		}
		expect(r, sizeof(struct snap_mem_run), RX_PAYLOAD);
	} else {
		if (r->sec.length > sizeof(r->stage)) {
			r->why = "impossible section length";
			return MIG_RX_ERROR;
		}
		expect(r, (size_t)r->sec.length, RX_PAYLOAD);
	}
	return MIG_RX_NONE;
}

/* What was staged is complete: the next event, or NONE to read on. */
static enum mig_rx_event staged(struct mig_rx *r)
{
	switch (r->state) {
	case RX_HEADER:
		r->sec_offset = r->bytes;
		expect(r, sizeof(struct snap_section), RX_SECTION);
		return MIG_RX_HEADER;
	case RX_SECTION:
		return got_section_header(r);
	case RX_PAYLOAD:
		r->crc = crc32c_update(CRC32C_INIT, r->stage, r->have);
		if (r->sec.type == SNAP_SEC_MEMORY) {
			r->state = RX_WAIT;	/* the caller says where the pages go */
			return MIG_RX_SECTION;
		}
		if (crc32c_final(r->crc) != r->sec.crc32c) {
			r->why = "CRC mismatch";
			return MIG_RX_ERROR;
		}
		r->sec_offset = r->bytes;
		expect(r, sizeof(struct snap_section), RX_SECTION);
		return MIG_RX_SECTION;
	default:
		return MIG_RX_NONE;
	}
}

enum mig_rx_event mig_rx_poll(struct mig_rx *r)
{
	for (;;) {
		size_t n;

		if (r->state == RX_WAIT)
			return MIG_RX_NONE;
		if (r->state == RX_DATA) {
			if (r->data_off == r->data_len) {
				if (crc32c_final(r->crc) != r->sec.crc32c) {
					r->why = "CRC mismatch";
					return MIG_RX_ERROR;
				}
				r->sec_offset = r->bytes;
				expect(r, sizeof(struct snap_section), RX_SECTION);
				return MIG_RX_DATA;
			}
			n = snap_port_read(r->data + r->data_off,
					   (size_t)MIN(r->data_len - r->data_off, (uint64_t)65536));
			if (!n)
				return MIG_RX_NONE;
			r->crc = crc32c_update(r->crc, r->data + r->data_off, n);
			r->data_off += n;
		} else {
			n = r->need - r->have;
			if (n) {
				n = snap_port_read(r->stage + r->have, n);
				if (!n)
					return MIG_RX_NONE;
				r->have += n;
			}
			if (r->have == r->need) {
				enum mig_rx_event e;

				r->bytes += n;
				r->moved = time_now();
				e = staged(r);
				if (e != MIG_RX_NONE)
					return e;
				continue;
			}
		}
		r->bytes += n;
		r->moved = time_now();
	}
}
