/* SPDX-License-Identifier: MIT */
/* SBI DBTR for guests (docs/sbi.md, DBTR; docs/security.md). Each vCPU has
 * virtual debug triggers (struct vcpu_dbtr, answered by hyp/vsbi/vsbi_dbtr.c);
 * they are live only while it runs on a hart, where the hypervisor installs
 * them in the firmware's DBTR with its own shared memory and its own words
 * (hyp/state/dbtr.c), rewritten to fire in VS/VU only (hyp/state/dbtr_word.c).
 * A guest's call and its shared-memory address never reach the firmware. */
#ifndef HYP_DBTR_H
#define HYP_DBTR_H
#include <types.h>

struct snap_record_ops;
struct vcpu;
struct vm;

/* A vCPU's triggers at most (trig_max is the host's, capped to this). */
#define DBTR_MAX_TRIGGERS	8

/* One virtual trigger: the guest's words, as it reads them back. */
struct dbtr_trigger {
	uint64_t tdata1, tdata2, tdata3;
	uint8_t state;		/* trig_state: MAPPED and the saved U, S, VU, VS */
};

struct vcpu_dbtr {
	uint64_t shmem;		/* guest physical address, while shmem_on */
	bool shmem_on;
	/* triggers that need a hardware trigger (mapped, firing in U or S):
	 * installed while the vCPU is loaded; 0 keeps the vCPU switch at one test */
	uint8_t live;
	struct dbtr_trigger trig[DBTR_MAX_TRIGGERS];
};

/* What the host's firmware offers, probed at boot (dbtr_host_probe()). */
struct dbtr_host {
	bool ok;		/* DBTR offered to guests */
	unsigned int trig_max;	/* mcontrol6 triggers a vCPU may have */
};
extern struct dbtr_host dbtr_host;

/* --- the words (dbtr_word.c, pure) --- */

/** dbtr_check() - the SBI error a guest's trigger words give at install or
 *  update: SBI_SUCCESS if Carapace can install them (mcontrol6, breakpoint
 *  action, no chain, no tdata3); INVALID_PARAM for what the spec forbids
 *  (dmode, m) or an action that needs Debug Mode; NOT_SUPPORTED for optional
 *  parts it does not implement; FAILED for a type no trigger here takes. */
long dbtr_check(uint64_t tdata1, uint64_t tdata3);
/** dbtr_host_tdata1() - the word the firmware gets for a guest's checked
 *  @tdata1: mcontrol6 firing in VS where the guest asked for S and in VU
 *  where it asked for U, never in M, HS or U; no Debug Mode, no chain. 0 if
 *  it can never fire (the guest asked for neither). */
uint64_t dbtr_host_tdata1(uint64_t tdata1);
/** dbtr_saved_state() - trig_state's saved U, S, VU, VS copy of @tdata1. */
uint8_t dbtr_saved_state(uint64_t tdata1);
/** dbtr_num_triggers() - sbi_debug_num_triggers(@tdata1) for a vCPU. */
unsigned long dbtr_num_triggers(uint64_t tdata1);

/* --- the hart (dbtr.c) --- */

/** dbtr_host_probe() - boot hart: does the firmware's DBTR take a VS/VU-only
 *  mcontrol6 trigger? Sets dbtr_host. */
void dbtr_host_probe(void);
/** dbtr_hart_init() - every hart: give the firmware this hart's shared memory. */
void dbtr_hart_init(void);
/** dbtr_vcpu_load_slow() - install the loaded @v's live triggers on this hart. */
void dbtr_vcpu_load_slow(struct vcpu *v);
/** dbtr_hart_clear() - uninstall whatever this hart has installed. */
void dbtr_hart_clear(void);
/** dbtr_vcpu_sync() - @v, loaded here, changed its triggers: the hart's follow. */
void dbtr_vcpu_sync(struct vcpu *v);
/** dbtr_live_count() - (dbtr_word.c) @d's triggers that need a hardware
 *  trigger (vcpu_dbtr.live): mapped and firing in U or S. */
uint8_t dbtr_live_count(const struct vcpu_dbtr *d);

/* --- the snapshot record (dbtr_record.c, pure) --- */

/** dbtr_record - the DBTR record's hooks (include/abi/snapshot_records.h). */
extern const struct snap_record_ops dbtr_record;
/** dbtr_no_triggers - the refusal of a record this host's firmware has too
 *  few triggers for (or no DBTR): a restore and a migration answer it with
 *  `no-feature`, any other with their malformed-stream code. */
extern const char dbtr_no_triggers[];
#endif
