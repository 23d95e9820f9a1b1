/* SPDX-License-Identifier: MIT */
/* SBI DBTR on the hart: a vCPU's triggers are installed in the firmware's
 * DBTR when it lands on a hart and uninstalled when it leaves, with the
 * hypervisor's own per-hart shared memory and the words dbtr_host_tdata1()
 * makes (VS/VU only). A guest's words and addresses never reach the firmware
 * unchecked: OpenSBI 1.6 stops the machine on a bad shared-memory address. */
#include <abi/sbi_dbtr.h>
#include <abi/sbi_defs.h>
#include <dbtr.h>
#include <hart.h>
#include <log.h>
#include <sbi_client.h>
#include <vcpu.h>

/* Each hart's shared memory with the firmware (identity map: VA == PA). */
static struct sbi_dbtr_entry fw_shmem[HART_MAX][DBTR_MAX_TRIGGERS] __attribute__((aligned(64)));

static struct sbiret fw(unsigned long fid, unsigned long a0, unsigned long a1)
{
	return sbi_ecall(SBI_EXT_DBTR, fid, a0, a1, 0, 0);
}

static bool fw_set_shmem(void)
{
	return fw(SBI_DBTR_SET_SHMEM, (unsigned long)fw_shmem[this_hart()->index], 0).error ==
	       SBI_SUCCESS;
}

/* Does the firmware take a VS/VU-only mcontrol6 execute trigger? Installed
 * at address 0 while no guest runs, then uninstalled. */
static bool fw_takes_vs_vu(void)
{
	struct sbi_dbtr_entry *e = fw_shmem[this_hart()->index];
	struct sbiret r;

	e[0] = (struct sbi_dbtr_entry){ .tdata1 = MC6_TYPE | MC6_VS | MC6_VU | MC6_EXECUTE };
	r = fw(SBI_DBTR_INSTALL_TRIGGERS, 1, 0);
	if (r.error)
		return false;
	return e[0].word0 < 64 && !fw(SBI_DBTR_UNINSTALL_TRIGGERS, e[0].word0, 1).error;
}

void dbtr_host_probe(void)
{
	struct sbiret n;

	dbtr_host = (struct dbtr_host){ 0 };
	if (!sbi_probe_extension(SBI_EXT_DBTR))
		return;
	n = fw(SBI_DBTR_NUM_TRIGGERS, MC6_TYPE, 0);
	if (n.error || !n.value) {
		pr_info("DBTR: the firmware has no mcontrol6 trigger: not offered to guests");
		return;
	}
	if (!fw_set_shmem() || !fw_takes_vs_vu()) {
		pr_info("DBTR: the firmware refused a VS/VU-only mcontrol6 trigger: not offered to guests");
		return;
	}
	dbtr_host.trig_max = n.value < DBTR_MAX_TRIGGERS ? (unsigned int)n.value : DBTR_MAX_TRIGGERS;
	dbtr_host.ok = true;
	pr_info("DBTR: %u debug triggers per vCPU (mcontrol6, firing in VS/VU only)",
		dbtr_host.trig_max);
}

void dbtr_hart_init(void)
{
	struct sbiret n;

	if (!dbtr_host.ok)
		return;
	n = fw(SBI_DBTR_NUM_TRIGGERS, MC6_TYPE, 0);
	if (n.error || n.value < dbtr_host.trig_max || !fw_set_shmem()) {
		/* before any VM exists (vsbi_vm_init() reads it later) */
		pr_info("hart %lu: firmware DBTR differs from the boot hart's: DBTR not offered",
			this_hart()->hartid);
		dbtr_host.ok = false;
	}
}

void dbtr_vcpu_load_slow(struct vcpu *v)
{
	struct hart *h = this_hart();
	struct sbi_dbtr_entry *e = fw_shmem[h->index];
	unsigned int n = 0;
	struct sbiret r;

	for (unsigned int i = 0; i < dbtr_host.trig_max; i++) {
		const struct dbtr_trigger *t = &v->dbtr.trig[i];
		uint64_t word = t->state & SBI_DBTR_TS_MAPPED ? dbtr_host_tdata1(t->tdata1) : 0;

		if (word)
			e[n++] = (struct sbi_dbtr_entry){ .tdata1 = word, .tdata2 = t->tdata2 };
	}
	if (!n)
		return;
	r = fw(SBI_DBTR_INSTALL_TRIGGERS, n, 0);
	if (r.error) {
		/* its triggers do not fire; nothing else is affected */
		pr_info("hart %lu: firmware DBTR install of %u triggers failed (%ld)",
			h->hartid, n, r.error);
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		if (e[i].word0 < 64)
			h->dbtr_hw |= 1UL << e[i].word0;
}

void dbtr_hart_clear(void)
{
	struct hart *h = this_hart();
	long err;

	if (!h->dbtr_hw)
		return;
	err = fw(SBI_DBTR_UNINSTALL_TRIGGERS, 0, h->dbtr_hw).error;
	if (err)
		pr_info("hart %lu: firmware DBTR uninstall failed (%ld)", h->hartid, err);
	h->dbtr_hw = 0;
}

void dbtr_vcpu_sync(struct vcpu *v)
{
	dbtr_hart_clear();
	if (v->dbtr.live)
		dbtr_vcpu_load_slow(v);
}
