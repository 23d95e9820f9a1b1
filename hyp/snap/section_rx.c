/* SPDX-License-Identifier: MIT */
/* The receiving half of the stream framing (section_stream.h), for
 * restores (snap_load.c) and migrations (hyp/migrate/): it reads exactly
 * what the next step needs from the stream port, never beyond the limit it
 * was given; a small payload into its stage, a MEMORY section's pages
 * straight to where the caller says. It checks what framing alone can tell:
 * a section header's reserved field, a length no section can have, every
 * CRC. What a header or section may say is the caller's to check. */
#include <string.h>
#include <crc32c.h>
#include <hart.h>
#include <section_stream.h>
#include <snapshot.h>

#define READ_MAX	65536	/* bytes per port read: pages come in bounded slices */

static void expect(struct section_rx *r, size_t n, int state)
{
	r->need = n;
	r->have = 0;
	r->state = state;
}

/* A section header comes next (sec and sec_offset stay the last section's
 * until its first byte is asked for: the caller's refusals name it). */
static void next_section(struct section_rx *r)
{
	expect(r, sizeof(struct snap_section), RX_SECTION);
}

void section_rx_reset(struct section_rx *r, uint64_t limit)
{
	memset(r, 0, sizeof(*r));
	r->limit = limit;
	r->moved = time_now();
	expect(r, sizeof(struct snap_header), RX_HEADER);
}

/* A DISK section: its run header, then 1..SNAP_DISK_BLOCK_SECTORS sectors. */
static bool disk_length_ok(uint64_t length)
{
	return length > sizeof(struct snap_disk_run) &&
	       length <= sizeof(struct snap_disk_run) +
			 SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR &&
	       (length - sizeof(struct snap_disk_run)) % SNAP_DISK_SECTOR == 0;
}

const char *section_rx_take(struct section_rx *r)
{
	if (r->sec.type == SNAP_SEC_DISK) {
		if (!disk_length_ok(r->sec.length))
			return "impossible DISK length";
		expect(r, sizeof(struct snap_disk_run), RX_PAYLOAD);
		return NULL;
	}
	if (r->sec.type == SNAP_SEC_MEMORY) {
		/* both streams' MEMORY is instance 0: said here, where every
		 * MEMORY header passes (a migration's receiver takes them before
		 * its own checks) */
		if (r->sec.instance)
			return "MEMORY instance is not 0";
		if (r->sec.length < sizeof(struct snap_mem_run) || r->sec.length > SNAP_SECTION_MAX ||
		    (r->sec.length - sizeof(struct snap_mem_run)) % SNAP_PAGE_SIZE)
			return "impossible MEMORY length";
		expect(r, sizeof(struct snap_mem_run), RX_PAYLOAD);
		return NULL;
	}
	if (r->sec.length > sizeof(r->stage))
		return "impossible section length";
	expect(r, (size_t)r->sec.length, RX_PAYLOAD);
	return NULL;
}

void section_rx_data(struct section_rx *r, void *dst, uint64_t len)
{
	r->data = dst;
	r->data_len = len;
	r->data_off = 0;
	r->state = RX_DATA;
}

static enum section_rx_event error(struct section_rx *r, const char *why)
{
	r->why = why;
	return SECTION_RX_ERROR;
}

/* What was wanted in the stage is there: the event it makes. */
static enum section_rx_event staged(struct section_rx *r)
{
	switch (r->state) {
	case RX_HEADER:
		next_section(r);
		return SECTION_RX_HEADER;
	case RX_SECTION:
		memcpy(&r->sec, r->stage, sizeof(r->sec));
		if (r->sec.reserved)
			return error(r, "reserved field of a section header is not 0");
		r->state = RX_TAKE;
		return SECTION_RX_SECTION;
	default:
		/* MEMORY, DISK: the run header starts the CRC, the data continues it */
		r->crc = crc32c_update(CRC32C_INIT, r->stage, r->have);
		if (r->sec.type == SNAP_SEC_MEMORY || r->sec.type == SNAP_SEC_DISK) {
			r->state = RX_WAIT;
			return SECTION_RX_PAYLOAD;
		}
		if (crc32c_final(r->crc) != r->sec.crc32c)
			return error(r, "CRC mismatch");
		next_section(r);
		return SECTION_RX_PAYLOAD;
	}
}

/* Read up to @want bytes to @dst, within the limit; how many came. */
static size_t read_in(struct section_rx *r, void *dst, uint64_t want)
{
	size_t n = (size_t)MIN(MIN(want, r->limit - r->bytes), (uint64_t)READ_MAX);

	if (n)
		n = snap_port_read(dst, n);
	if (n) {
		r->bytes += n;
		r->moved = time_now();
	}
	return n;
}

enum section_rx_event section_rx_poll(struct section_rx *r)
{
	for (;;) {
		size_t n;

		if (r->state == RX_TAKE || r->state == RX_WAIT)
			return SECTION_RX_NONE;		/* the caller's turn */
		if (r->state == RX_SECTION && !r->have)
			r->sec_offset = r->bytes;
		if (r->state == RX_DATA) {
			if (r->data_off == r->data_len) {
				if (crc32c_final(r->crc) != r->sec.crc32c)
					return error(r, "CRC mismatch");
				next_section(r);
				return SECTION_RX_DATA;
			}
			n = read_in(r, r->data + r->data_off, r->data_len - r->data_off);
			if (!n)
				return SECTION_RX_NONE;
			r->crc = crc32c_update(r->crc, r->data + r->data_off, n);
			r->data_off += n;
			continue;
		}
		if (r->have < r->need) {
			n = read_in(r, r->stage + r->have, r->need - r->have);
			if (!n)
				return SECTION_RX_NONE;
			r->have += n;
			if (r->have < r->need)
				continue;
		}
		return staged(r);
	}
}
