/* SPDX-License-Identifier: MIT */
/* The framing snapshots and migrations share on the stream port
 * (docs/snapshot-format.md, "Layout", "Sections"; docs/migration.md,
 * "Header", "Sections"): a header (its magic and version the caller's), then
 * sections of a struct snap_section and its payload, a MEMORY section's pages
 * behind its run header. A transmitter stages one section at a time and pushes it as
 * the port takes bytes (hyp/snap/section_tx.c); a receiver reads exactly
 * what the next step needs, pages straight to where the caller says
 * (hyp/snap/section_rx.c). Neither knows what a section means. */
#ifndef HYP_SECTION_STREAM_H
#define HYP_SECTION_STREAM_H
#include <types.h>
#include <abi/snapshot_format.h>

#define SECTION_STAGE_SIZE	2048	/* a section header and the largest small payload
					 * (a VCPU section: 1440 bytes) */

struct section_tx {
	/* payloads are written in place as their structs: aligned for them */
	_Alignas(uint64_t) uint8_t stage[SECTION_STAGE_SIZE];
	size_t len, off;		/* staged bytes, bytes of them out */
	const uint8_t *data;		/* bytes that follow the staged ones */
	size_t data_len, data_off;
	uint64_t bytes, sections;	/* pushed; staged (the header is none) */
	uint64_t moved;			/* when the port last took a byte */
};

/** section_tx_reset() - nothing staged, nothing counted. */
void section_tx_reset(struct section_tx *t);
/** section_tx_header() - stage the stream header: @magic (8 bytes, no NUL),
 *  @version, @flags. */
void section_tx_header(struct section_tx *t, const char *magic, uint32_t version,
		       uint64_t flags);
/** section_tx_payload() - where the next small section's payload is written
 *  in place (SECTION_TX_ROOM bytes), before section_tx_seal(). */
void *section_tx_payload(struct section_tx *t);
#define SECTION_TX_ROOM		(SECTION_STAGE_SIZE - sizeof(struct snap_section))
/** section_tx_seal() - stage the section whose @len payload bytes are at
 *  section_tx_payload(): its header, with the payload's CRC. */
void section_tx_seal(struct section_tx *t, uint32_t type, uint32_t instance, size_t len);
/** section_tx_small() - stage a section with a copy of @payload. */
void section_tx_small(struct section_tx *t, uint32_t type, uint32_t instance,
		      const void *payload, size_t len);
/** section_tx_pages() - stage a MEMORY section: the run header, then @pages
 *  pages at @data for guest address @gpa (@data must not change until
 *  pushed: the CRC is computed now). */
void section_tx_pages(struct section_tx *t, uint64_t gpa, uint64_t pages, const void *data);
/** section_tx_disk() - stage a DISK section of the disk in @slot: the run
 *  header, then @sectors sectors at @data from @sector (@data must not
 *  change until pushed: the CRC is computed now). */
void section_tx_disk(struct section_tx *t, uint32_t slot, uint64_t sector, uint32_t sectors,
		     const void *data);
/** section_tx_framed() - stage @len bytes framed before (sections staged
 *  and taken with section_tx_take(): counted then), sent from @bytes. */
void section_tx_framed(struct section_tx *t, const void *bytes, size_t len);
/** section_tx_take() - move what is staged (never pages) to @dst, which has
 *  @room bytes, instead of sending it; its length. */
size_t section_tx_take(struct section_tx *t, void *dst, size_t room);
/** section_tx_push() - write what is staged; true when all of it is out. */
bool section_tx_push(struct section_tx *t);
/** section_tx_idle() - nothing staged is left to push. */
bool section_tx_idle(const struct section_tx *t);

enum section_rx_event {
	SECTION_RX_NONE,	/* no byte waiting (or the limit reached) */
	SECTION_RX_HEADER,	/* the stream header is in stage: the caller checks it */
	SECTION_RX_SECTION,	/* a section header is in sec: section_rx_take() or refuse */
	SECTION_RX_PAYLOAD,	/* the payload is in stage, its CRC good; MEMORY, DISK:
				 * only the run header, the CRC unchecked:
				 * section_rx_data() next */
	SECTION_RX_DATA,	/* a MEMORY section's pages (a DISK section's sectors) are
				 * in, its CRC good */
	SECTION_RX_ERROR,	/* why */
};

struct section_rx {
	enum { RX_HEADER, RX_SECTION, RX_TAKE, RX_PAYLOAD, RX_WAIT, RX_DATA } state;
	/* payloads are read in place as their structs (struct snap_vcpu has
	 * 64-bit fields): aligned for them, never at the enum's offset 4 */
	_Alignas(uint64_t) uint8_t stage[SECTION_STAGE_SIZE];
	size_t need, have;		/* bytes wanted in stage, bytes there */
	struct snap_section sec;
	uint64_t sec_offset;		/* stream offset of the section header */
	uint8_t *data;			/* RX_DATA: where the pages go */
	uint64_t data_len, data_off;
	uint32_t crc;
	uint64_t bytes, limit;		/* read; never read beyond */
	uint64_t moved;			/* when the last byte came */
	const char *why;		/* SECTION_RX_ERROR */
};

/** section_rx_reset() - expect a stream header; never read more than @limit
 *  bytes (what follows them is not this stream's). */
void section_rx_reset(struct section_rx *r, uint64_t limit);
/** section_rx_poll() - read toward the next event. */
enum section_rx_event section_rx_poll(struct section_rx *r);
/** section_rx_take() - read the payload of the section whose header is in:
 *  a MEMORY or DISK section's run header, or a whole small payload. NULL,
 *  or why not (a length no section of that kind can have, a MEMORY
 *  instance not 0). */
const char *section_rx_take(struct section_rx *r);
/** section_rx_data() - the MEMORY section's pages (the DISK section's
 *  sectors) go to @dst (@len bytes). */
void section_rx_data(struct section_rx *r, void *dst, uint64_t len);
#endif
