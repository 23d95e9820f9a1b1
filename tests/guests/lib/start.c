/* SPDX-License-Identifier: MIT */
/* Library init on the boot hart, and the dispatch for HSM-started harts. */
#include "env.h"
#include "fdt.h"
#include "printf.h"
#include "report.h"
#include "sbi.h"
#include "timer.h"

struct guest_env env;
static hart_fn entry_fns[MAX_HARTS];

void guest_main(unsigned long hartid, const void *fdt)
{
	int n;

	env.boot_hart = hartid;
	env.bootargs = "";
	env.fdt = fdt;
	if (fdt_init(fdt)) {
		report_fail("init", "no device tree at a1 (got %p, want an FDT)",
			    fdt);
		report_done();
	}
	n = fdt_cpu_hartids(env.hartids, MAX_HARTS);
	env.nr_harts = n > MAX_HARTS ? MAX_HARTS : n;
	if (fdt_memory(&env.ram_base, &env.ram_size)) {
		report_fail("init", "no /memory reg in the DT (got none, want one)");
		report_done();
	}
	env.carapace = fdt_chosen_u32("carapace,boot-count", &env.boot_count);
	if (fdt_chosen_str("bootargs"))
		env.bootargs = fdt_chosen_str("bootargs");
	timer_init();
	printf("INFO: init: hart %lu of %lu, ram 0x%lx+0x%lx, %s, boot-count %u\n",
	       hartid, env.nr_harts, (unsigned long)env.ram_base,
	       (unsigned long)env.ram_size,
	       env.carapace ? "carapace" : "bare", env.boot_count);
	test_main(hartid);
	report_done();
}

void hart_entry_c(unsigned long hartid, unsigned long opaque)
{
	hart_fn fn = READ_ONCE(entry_fns[hartid]);

	if (fn)
		fn(hartid, opaque);
	sbi_hart_stop();
	report_fail("hsm", "hart %lu: hart_stop returned (got return, want none)",
		    hartid);
	for (;;)
		wfi();
}

long hart_start(unsigned long hartid, hart_fn fn, unsigned long opaque)
{
	if (hartid < MAX_HARTS)
		WRITE_ONCE(entry_fns[hartid], fn);
	return sbi_hart_start(hartid, (unsigned long)_hart_entry, opaque).error;
}

bool start_other_hart(const char *test, unsigned long other, hart_fn fn, bool *ready,
		      const char *skip)
{
	if (other == -1UL) {
		report_skip(test, "%s", skip);
		return false;
	}
	check_eq(test, "start other hart", hart_start(other, fn, 0), SBI_SUCCESS);
	return check_eq(test, "other hart ready", wait_for(READ_ONCE(*ready), 1000000), 1);
}

void hart_set_entry(hart_fn fn)
{
	WRITE_ONCE(entry_fns[current_hartid()], fn);
}

bool hart_wait_state(unsigned long hartid, long state, unsigned long us)
{
	struct sbiret r;

	return wait_for((r = sbi_hart_status(hartid), !r.error && r.value == state),
			us);
}

unsigned long absent_hartid(void)
{
	unsigned long max = 0, i;

	for (i = 0; i < env.nr_harts; i++)
		if (env.hartids[i] > max)
			max = env.hartids[i];
	return max + 1;
}

unsigned long other_hartid(void)
{
	unsigned long i, self = current_hartid();

	for (i = 0; i < env.nr_harts; i++)
		if (env.hartids[i] != self)
			return env.hartids[i];
	return -1UL;
}
