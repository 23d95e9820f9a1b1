/* SPDX-License-Identifier: MIT */
/* What the guest learned at boot: harts, RAM, bootargs, whether under Carapace. */
#ifndef GUEST_ENV_H
#define GUEST_ENV_H

#include "guest.h"

struct guest_env {
	unsigned long boot_hart;
	unsigned long nr_harts;
	unsigned long hartids[MAX_HARTS];
	uint64_t ram_base;
	uint64_t ram_size;
	bool carapace;		/* /chosen has carapace,boot-count */
	uint32_t boot_count;	/* 0 unless under Carapace */
	const char *bootargs;	/* "" if absent */
	const void *fdt;	/* the device tree the guest was given (a1) */
};

extern struct guest_env env;

/* bootargs "key=value" (decimal or 0x hex); @dflt if the key is absent. */
unsigned long bootarg_ulong(const char *key, unsigned long dflt);

/* An id that names no hart of this machine (above every real one). */
unsigned long absent_hartid(void);
/* Some hart other than the caller, or -1UL if there is only one. */
unsigned long other_hartid(void);

/* HSM-start @hartid running @fn(hartid, opaque); returns the SBI error. */
typedef void (*hart_fn)(unsigned long hartid, unsigned long opaque);
long hart_start(unsigned long hartid, hart_fn fn, unsigned long opaque);
/* Start @fn on hart @other (other_hartid()) and wait up to a second for it
 * to set *@ready: PASS/FAIL lines of @test; with one hart (@other -1UL) a
 * SKIP line saying @skip. True if the other hart runs. */
bool start_other_hart(const char *test, unsigned long other, hart_fn fn, bool *ready,
		      const char *skip);
/* Point this hart's next _hart_entry (e.g. non-retentive resume) at @fn. */
void hart_set_entry(hart_fn fn);
/* Poll HSM status until it reads @state; false after @us microseconds. */
bool hart_wait_state(unsigned long hartid, long state, unsigned long us);

#endif
