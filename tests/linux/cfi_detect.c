// SPDX-License-Identifier: MIT
/*
 * cfi_detect.c: does the kernel see Zicfilp/Zicfiss?  Checked both through
 * /proc/cpuinfo (every hart's "isa" line) and through riscv_hwprobe, since
 * a hypervisor could get the device tree right for one hart and not another.
 */
#include <stdio.h>
#include <string.h>

#include "cfi_abi.h"
#include "cfi_report.h"
#include "cfi_sys.h"
#include "cfi_tests.h"

struct isa_count {
	int harts;	/* "isa" lines seen, one per hart */
	int lp;		/* ... of which list zicfilp */
	int ss;		/* ... of which list zicfiss */
};

/* Is ext one of the '_'-separated tokens of the isa string? */
static int has_ext(const char *isa, const char *ext)
{
	size_t n = strlen(ext);
	const char *p = isa;

	while ((p = strstr(p, ext)) != NULL) {
		if (p > isa && p[-1] == '_' && (p[n] == '_' || p[n] == '\0' ||
						p[n] == '\n'))
			return 1;
		p += n;
	}
	return 0;
}

static int read_cpuinfo(struct isa_count *c)
{
	char line[2048];
	FILE *f = fopen("/proc/cpuinfo", "r");

	memset(c, 0, sizeof(*c));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon;

		/* "isa" only: newer kernels also print "hart isa". */
		if (strncmp(line, "isa", 3) != 0 || !(colon = strchr(line, ':')))
			continue;
		c->harts++;
		c->lp += has_ext(colon, "zicfilp");
		c->ss += has_ext(colon, "zicfiss");
	}
	fclose(f);
	return 0;
}

struct hwprobe_pair {
	long long key;
	unsigned long long value;
};

/* Returns 0 and sets *lp and *ss, or -errno if the syscall fails. */
static long read_hwprobe(int *lp, int *ss)
{
	struct hwprobe_pair p[2] = {
		{ CFI_HWPROBE_KEY_IMA_EXT_0, 0 },
		{ CFI_HWPROBE_KEY_IMA_EXT_1, 0 },
	};
	long r = cfi_syscall5(CFI_NR_riscv_hwprobe, (long)p, 2, 0, 0, 0);

	if (r < 0)
		return r;
	/* An unknown key comes back as -1: treat as "not present". */
	*lp = p[0].key == CFI_HWPROBE_KEY_IMA_EXT_0 &&
	      (p[0].value & CFI_HWPROBE_EXT_ZICFILP);
	*ss = p[1].key == CFI_HWPROBE_KEY_IMA_EXT_1 &&
	      (p[1].value & CFI_HWPROBE_EXT_ZICFISS);
	return 0;
}

void cfi_check_detect(int expect_on)
{
	const char *pfx = expect_on ? "detect" : "off";
	struct isa_count c;
	char name[96];
	int lp = 0, ss = 0;
	long r;

	snprintf(name, sizeof(name), "%s: /proc/cpuinfo isa %s zicfilp and zicfiss",
		 pfx, expect_on ? "has" : "lacks");
	if (read_cpuinfo(&c) < 0 || c.harts == 0)
		cfi_result(CFI_FAIL, name, "no isa line in /proc/cpuinfo");
	else if (expect_on)
		cfi_check(c.lp == c.harts && c.ss == c.harts, name,
			  "%d harts: zicfilp on %d, zicfiss on %d", c.harts, c.lp, c.ss);
	else
		cfi_check(c.lp == 0 && c.ss == 0, name,
			  "%d harts: zicfilp on %d, zicfiss on %d", c.harts, c.lp, c.ss);

	snprintf(name, sizeof(name), "%s: riscv_hwprobe %s ZICFILP and ZICFISS",
		 pfx, expect_on ? "reports" : "does not report");
	r = read_hwprobe(&lp, &ss);
	if (r < 0)
		cfi_result(CFI_FAIL, name, "riscv_hwprobe: %s", cfi_errname(r));
	else
		cfi_check(expect_on ? (lp && ss) : (!lp && !ss), name,
			  "ZICFILP %d, ZICFISS %d", lp, ss);
}
