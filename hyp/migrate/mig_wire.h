/* SPDX-License-Identifier: MIT */
/* What the migration protocol adds to the shared stream framing
 * (section_stream.h, hyp/snap/section_tx.c and section_rx.c): its header,
 * messages whose payload is taken whole as they come, and ABORT. */
#ifndef HYP_MIGRATE_WIRE_H
#define HYP_MIGRATE_WIRE_H
#include <types.h>
#include <abi/migration_format.h>
#include <section_stream.h>

/** mig_tx_header() - stage the migration protocol's header. */
void mig_tx_header(struct section_tx *t);
/** mig_tx_abort() - stage ABORT with the error @code and @why. */
void mig_tx_abort(struct section_tx *t, const char *code, const char *why);
/** mig_rx_reset() - expect the peer's header; no limit on the stream. */
void mig_rx_reset(struct section_rx *r);
/** mig_rx_poll() - section_rx_poll(), each section's payload taken as its
 *  header comes (the protocol checks a message once it is whole): never
 *  SECTION_RX_SECTION. */
enum section_rx_event mig_rx_poll(struct section_rx *r);
/** mig_rx_header_check() - NULL if the header in @r's stage opens a
 *  migration stream we speak, else why not. */
const char *mig_rx_header_check(const struct section_rx *r);
#endif
