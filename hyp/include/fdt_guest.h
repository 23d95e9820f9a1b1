/* SPDX-License-Identifier: MIT */
/* The device tree each guest boots with, built with libfdt's sequential-write API. */
#ifndef HYP_FDT_GUEST_H
#define HYP_FDT_GUEST_H
#include <types.h>

struct vm;

struct guest_fdt_info {
	gpa_t initrd_start, initrd_end;	/* 0/0: none */
	uint8_t rng_seed[32];		/* /chosen/rng-seed: fresh for each boot */
};

/** fdt_guest_build() - write the DT for @vm into buf; 0, or a negative libfdt
 *  error code (-FDT_ERR_NOSPACE when buf is too small). */
int fdt_guest_build(const struct vm *vm, const struct guest_fdt_info *gi, void *buf,
		    size_t size);
/** fdt_guest_isa_extensions() - the extension list guests get (for logs/tests). */
size_t fdt_guest_isa_extensions(const struct vm *vm, const char **out, size_t max);
/** fdt_guest_isa_string() - the riscv,isa string of extensions @ext[0..@n):
 *  "rv64" and the single letters in canonical order, then "_"-separated the
 *  multi-letter ones (Z by category, then S, then X); 0 or -FDT_ERR_NOSPACE. */
int fdt_guest_isa_string(const char *const *ext, size_t n, char *buf, size_t len);
#endif
