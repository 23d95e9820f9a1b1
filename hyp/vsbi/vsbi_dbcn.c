/* SPDX-License-Identifier: MIT */
/* SBI DBCN: the guest's debug console, multiplexed onto the host console by VM name. */
#include <string.h>
#include <guest_mem.h>
#include <vsbi.h>
#include <vm.h>

/* Bound the console work one call does (SBI lets a write take fewer bytes;
 * the guest calls again for the rest), so a guest flooding its console cannot
 * hold the host console, or its hart, for long: at most 256 bytes, and at
 * most one line, as one UART byte can end at most one (each line costs its
 * "[name] " tag on the host console: 256 newlines were 256 lines). */
#define DBCN_CHUNK	256

/* The buffer must lie entirely in this VM's RAM; base_hi must be 0 on RV64. */
static void *dbcn_buffer(struct vcpu *v, unsigned long *len, bool write)
{
	unsigned long num = VSBI_ARG(v, 0), lo = VSBI_ARG(v, 1), hi = VSBI_ARG(v, 2);

	if (hi || !vm_gpa_range_is_ram(v->vm, lo, num))
		return NULL;
	*len = num < DBCN_CHUNK ? num : DBCN_CHUNK;
	return vm_gpa_to_hva(v->vm, lo, *len, write);
}

static void dbcn_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	unsigned long len = 0;
	char *buf, c;

	ret->error = SBI_SUCCESS;
	switch (fid) {
	case SBI_DBCN_WRITE:
	case SBI_DBCN_READ:
		buf = dbcn_buffer(v, &len, fid == SBI_DBCN_READ);
		if (!buf && VSBI_ARG(v, 0)) {
			ret->error = SBI_ERR_INVALID_PARAM;
			break;
		}
		if (fid == SBI_DBCN_WRITE) {
			const char *nl = len ? memchr(buf, '\n', len) : NULL;

			if (nl)
				len = (unsigned long)(nl - buf) + 1;
			vm_console_out(v->vm, buf, len);
			ret->value = len;
		} else {
			ret->value = vuart_read_input(v->vm, buf, len);
		}
		break;
	case SBI_DBCN_WRITE_BYTE:
		c = (char)VSBI_ARG(v, 0);
		vm_console_out(v->vm, &c, 1);
		break;
	default:
		ret->error = SBI_ERR_NOT_SUPPORTED;
	}
}

const struct vsbi_ext vsbi_dbcn = {
	.name = "dbcn",
	.eid_first = SBI_EXT_DBCN,
	.eid_last = SBI_EXT_DBCN,
	.call = dbcn_call,
};
