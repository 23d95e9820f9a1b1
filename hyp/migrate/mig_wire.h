/* SPDX-License-Identifier: MIT */
/* Framing of migration messages on the stream port, both directions:
 * a transmitter that stages one section at a time and pushes it as the port
 * takes bytes, and a receiver that reads exactly what the next step needs. */
#ifndef HYP_MIGRATE_WIRE_H
#define HYP_MIGRATE_WIRE_H
#include <types.h>
#include <abi/migration_format.h>

#define MIG_STAGE_SIZE	1024	/* the largest non-memory payload fits */

struct mig_tx {
	uint8_t stage[MIG_STAGE_SIZE];
	size_t len, off;
	const uint8_t *data;		/* pages that follow the staged bytes */
	size_t data_len, data_off;
	uint64_t bytes, sections;
	uint64_t moved;			/* when the port last took a byte */
};

enum mig_rx_event { MIG_RX_NONE, MIG_RX_HEADER, MIG_RX_SECTION, MIG_RX_DATA, MIG_RX_ERROR };

struct mig_rx {
	enum { RX_HEADER, RX_SECTION, RX_PAYLOAD, RX_DATA, RX_WAIT } state;
	/* payloads are read in place as their structs (struct snap_vcpu has
	 * 64-bit fields): aligned for them, never at the enum's offset 4 */
	_Alignas(uint64_t) uint8_t stage[MIG_STAGE_SIZE];
	size_t need, have;
	struct snap_section sec;
	uint64_t sec_offset;		/* stream offset of the section header */
	uint8_t *data;			/* RX_DATA: where the bytes go */
	uint64_t data_len, data_off;
	uint32_t crc;
	uint64_t bytes;
	uint64_t moved;			/* when the last byte came */
	const char *why;		/* MIG_RX_ERROR */
};

void mig_tx_reset(struct mig_tx *t);
/** mig_tx_header() - stage the protocol header. */
void mig_tx_header(struct mig_tx *t);
/** mig_tx_section() - stage a section with a small payload. */
void mig_tx_section(struct mig_tx *t, uint32_t type, uint32_t instance, const void *payload,
		    size_t len);
/** mig_tx_pages() - stage a MEMORY section: the run header, then @pages
 *  pages at @data (which must not change until pushed). */
void mig_tx_pages(struct mig_tx *t, uint64_t gpa, uint64_t pages, const void *data);
/** mig_tx_push() - write what is staged; true when all of it is out. */
bool mig_tx_push(struct mig_tx *t);
/** mig_tx_idle() - nothing staged is left to push. */
bool mig_tx_idle(const struct mig_tx *t);

void mig_rx_reset(struct mig_rx *r);
/** mig_rx_poll() - read toward the next event: the header, a section whose
 *  payload is staged (MEMORY: only its run header; the caller then calls
 *  mig_rx_data()), or the end of the data. MIG_RX_NONE: no byte waiting. */
enum mig_rx_event mig_rx_poll(struct mig_rx *r);
/** mig_rx_data() - the MEMORY section's pages go to @dst (@len bytes). */
void mig_rx_data(struct mig_rx *r, void *dst, uint64_t len);
/** mig_rx_header_check() - NULL if @h opens a migration stream we speak. */
const char *mig_rx_header_check(const struct mig_rx *r);
#endif
