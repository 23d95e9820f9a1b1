/* SPDX-License-Identifier: MIT */
/* Migration message framing on the stream port (docs/migration.md,
 * "Header", "Sections"): the snapshot format's header and section framing
 * (hyp/snap/section_tx.c, section_rx.c) with the migration magic, and ABORT.
 * Nothing here knows what another message means. */
#include <string.h>
#include <printf.h>
#include <snapshot.h>
#include "mig_wire.h"

void mig_tx_header(struct section_tx *t)
{
	section_tx_header(t, MIG_MAGIC, MIG_VERSION, 0);
}

void mig_tx_abort(struct section_tx *t, const char *code, const char *why)
{
	struct mig_abort *a = section_tx_payload(t);

	memset(a, 0, sizeof(*a));
	snprintf(a->code, sizeof(a->code), "%s", code);
	snprintf(a->message, sizeof(a->message), "%s", why);
	section_tx_seal(t, MIG_SEC_ABORT, 0, sizeof(*a));
}

void mig_rx_reset(struct section_rx *r)
{
	section_rx_reset(r, UINT64_MAX);
}

enum section_rx_event mig_rx_poll(struct section_rx *r)
{
	enum section_rx_event e = section_rx_poll(r);

	while (e == SECTION_RX_SECTION) {
		r->why = section_rx_take(r);
		if (r->why)
			return SECTION_RX_ERROR;
		e = section_rx_poll(r);
	}
	return e;
}

const char *mig_rx_header_check(const struct section_rx *r)
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
