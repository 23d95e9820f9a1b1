/* SPDX-License-Identifier: MIT */
/* The transmitting half of the stream framing (section_stream.h), for
 * snapshots (snap_save.c) and migrations (hyp/migrate/): a stream header or
 * one section is staged at a time, a MEMORY section's pages pushed from
 * where they are, as the stream port takes bytes. Nothing here knows what a
 * section means. */
#include <string.h>
#include <crc32c.h>
#include <hart.h>
#include <log.h>
#include <section_stream.h>
#include <snapshot.h>

void section_tx_reset(struct section_tx *t)
{
	memset(t, 0, sizeof(*t));
	t->moved = time_now();
}

static void staged(struct section_tx *t, size_t len)
{
	t->len = len;
	t->off = 0;
	t->data_len = t->data_off = 0;
}

void section_tx_header(struct section_tx *t, const char *magic, uint32_t version,
		       uint64_t flags)
{
	struct snap_header h = { .version = version, .header_size = sizeof(h), .flags = flags };

	memcpy(h.magic, magic, sizeof(h.magic));
	memcpy(t->stage, &h, sizeof(h));
	staged(t, sizeof(h));
}

void *section_tx_payload(struct section_tx *t)
{
	return t->stage + sizeof(struct snap_section);
}

/* The header of a section whose payload (@len of its @total bytes) is
 * behind it in the stage. */
static void seal(struct section_tx *t, uint32_t type, uint32_t instance, size_t len,
		 uint64_t total, uint32_t crc)
{
	struct snap_section h = { type, instance, total, crc, 0 };

	memcpy(t->stage, &h, sizeof(h));
	staged(t, sizeof(h) + len);
	t->sections++;
}

void section_tx_seal(struct section_tx *t, uint32_t type, uint32_t instance, size_t len)
{
	HYP_ASSERT(len <= SECTION_TX_ROOM);
	seal(t, type, instance, len, len, crc32c(section_tx_payload(t), len));
}

void section_tx_small(struct section_tx *t, uint32_t type, uint32_t instance,
		      const void *payload, size_t len)
{
	HYP_ASSERT(len <= SECTION_TX_ROOM);
	memcpy(section_tx_payload(t), payload, len);
	section_tx_seal(t, type, instance, len);
}

/* A section of a run header and the @len bytes at @data it describes. */
static void stage_run(struct section_tx *t, uint32_t type, uint32_t instance, const void *run,
		      size_t run_len, const void *data, size_t len)
{
	uint32_t crc = crc32c_update(CRC32C_INIT, run, run_len);

	crc = crc32c_final(crc32c_update(crc, data, len));
	memcpy(section_tx_payload(t), run, run_len);
	seal(t, type, instance, run_len, run_len + len, crc);
	t->data = data;
	t->data_len = len;
}

void section_tx_pages(struct section_tx *t, uint64_t gpa, uint64_t pages, const void *data)
{
	struct snap_mem_run run = { gpa, pages };

	stage_run(t, SNAP_SEC_MEMORY, 0, &run, sizeof(run), data, pages * SNAP_PAGE_SIZE);
}

void section_tx_disk(struct section_tx *t, uint32_t slot, uint64_t sector, uint32_t sectors,
		     const void *data)
{
	struct snap_disk_run run = { sector, sectors, 0 };

	stage_run(t, SNAP_SEC_DISK, slot, &run, sizeof(run), data,
		  (size_t)sectors * SNAP_DISK_SECTOR);
}

void section_tx_framed(struct section_tx *t, const void *bytes, size_t len)
{
	staged(t, 0);
	t->data = bytes;
	t->data_len = len;
}

size_t section_tx_take(struct section_tx *t, void *dst, size_t room)
{
	size_t len = t->len;

	HYP_ASSERT(len <= room && !t->data_len);
	memcpy(dst, t->stage, len);
	staged(t, 0);
	return len;
}

bool section_tx_idle(const struct section_tx *t)
{
	return t->off == t->len && t->data_off == t->data_len;
}

/* Write from @buf at *@off up to @len; false if the port took not all. */
static bool write_out(struct section_tx *t, const uint8_t *buf, size_t *off, size_t len)
{
	while (*off < len) {
		size_t n = snap_port_write(buf + *off, len - *off);

		if (!n)
			return false;
		*off += n;
		t->bytes += n;
		t->moved = time_now();
	}
	return true;
}

bool section_tx_push(struct section_tx *t)
{
	return write_out(t, t->stage, &t->off, t->len) &&
	       write_out(t, t->data, &t->data_off, t->data_len);
}
