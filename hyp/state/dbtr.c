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

/* One entry of the firmware's shared memory. OpenSBI 1.6 follows a pre-3.0
 * draft: 5 words an entry, trig_idx written back in the last one; the v3.0
 * text has 4, trig_idx in the first. Carapace installs one trigger a call
 * (the stride never matters) and finds at boot which word the firmware
 * writes the index to. */
struct fw_entry {
	uint64_t word0, tdata1, tdata2, tdata3;
	uint64_t word4;		/* OpenSBI 1.6's trig_idx */
};

/* Each hart's shared memory with the firmware (identity map: VA == PA). */
static struct fw_entry fw_shmem[HART_MAX] __attribute__((aligned(64)));
static bool fw_idx_in_word4;

static struct sbiret fw(unsigned long fid, unsigned long a0, unsigned long a1)
{
	return sbi_ecall(SBI_EXT_DBTR, fid, a0, a1, 0, 0);
}

static bool fw_set_shmem(void)
{
	return fw(SBI_DBTR_SET_SHMEM, (unsigned long)&fw_shmem[this_hart()->index], 0).error ==
	       SBI_SUCCESS;
}

/* Install one trigger on this hart: its firmware index, or -1 (error in *@err). */
static long fw_install(uint64_t tdata1, uint64_t tdata2, long *err)
{
	struct fw_entry *e = &fw_shmem[this_hart()->index];
	uint64_t idx;

	*e = (struct fw_entry){ -1ULL, tdata1, tdata2, 0, -1ULL };
	*err = fw(SBI_DBTR_INSTALL_TRIGGERS, 1, 0).error;
	if (*err)
		return -1;
	idx = fw_idx_in_word4 ? e->word4 : e->word0;
	return idx < 64 ? (long)idx : -1;
}

/* Does the firmware take a VS/VU-only mcontrol6 execute trigger, and where
 * does it write its index? Installed at address 0 while no guest runs, then
 * uninstalled. */
static bool fw_takes_vs_vu(void)
{
	struct fw_entry *e = &fw_shmem[this_hart()->index];
	uint64_t idx;

	*e = (struct fw_entry){ -1ULL, MC6_TYPE | MC6_VS | MC6_VU | MC6_EXECUTE, 0, 0, -1ULL };
	if (fw(SBI_DBTR_INSTALL_TRIGGERS, 1, 0).error)
		return false;
	fw_idx_in_word4 = e->word0 == -1ULL;
	idx = fw_idx_in_word4 ? e->word4 : e->word0;
	return idx < 64 && !fw(SBI_DBTR_UNINSTALL_TRIGGERS, idx, 1).error;
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

	for (unsigned int i = 0; i < dbtr_host.trig_max; i++) {
		const struct dbtr_trigger *t = &v->dbtr.trig[i];
		uint64_t word = t->state & SBI_DBTR_TS_MAPPED ? dbtr_host_tdata1(t->tdata1) : 0;
		long idx, err;

		if (!word)
			continue;
		idx = fw_install(word, t->tdata2, &err);
		if (idx < 0) {
			/* this trigger does not fire; nothing else is affected */
			pr_info("hart %lu: firmware DBTR install failed (%ld)", h->hartid, err);
			continue;
		}
		h->dbtr_hw |= 1UL << idx;
	}
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
