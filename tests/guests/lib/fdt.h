/* SPDX-License-Identifier: MIT */
/* Read-only flattened-device-tree lookups the test guests need. */
#ifndef GUEST_FDT_H
#define GUEST_FDT_H

#include "guest.h"

int fdt_init(const void *fdt);		/* 0, or -1 if the blob is bad */
int fdt_path_offset(const char *path);	/* node offset or -1 */
const void *fdt_getprop(int node, const char *name, int *len);
int fdt_first_child(int node);		/* -1 if none */
int fdt_next_sibling(int node);		/* -1 if none */
const char *fdt_node_name(int node);

uint32_t fdt_be32(const void *p);
uint64_t fdt_read_cells(const void *p, int cells);

bool fdt_chosen_u32(const char *name, uint32_t *out);
const char *fdt_chosen_str(const char *name);
int fdt_memory(uint64_t *base, uint64_t *size);
/* Hart ids from /cpus/cpu@N reg, in tree order; returns how many there are. */
int fdt_cpu_hartids(unsigned long *ids, int max);
uint32_t fdt_timebase(void);		/* /cpus timebase-frequency or 0 */

#endif
