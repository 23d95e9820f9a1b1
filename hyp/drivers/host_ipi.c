/* SPDX-License-Identifier: MIT */
/* Host IPIs. Through the firmware an IPI is an ecall, OpenSBI's IPI code and
 * its M-mode software interrupt on the target: about 1 200 instructions
 * (docs/performance.md, "IPI latency"). The ACLINT SSWI (the ACLINT spec's
 * S-level software interrupt device; QEMU virt with aclint=on) lets S-mode
 * set another hart's SSIP with one store. The AIA machine has no SSWI, but
 * each hart's S-level IMSIC file is a page an MSI store reaches: one store
 * of a reserved identity (HOST_IPI_EIID) there is the IPI, taken as an
 * external interrupt (docs/design-aia.md 2.5). */
#include <arch/riscv/csr.h>
#include <host_ipi.h>
#include <imsic.h>
#include <sbi_client.h>

#define MAX_HARTS	8

#ifndef HOST_TEST
#define mem_before_io()	asm volatile("fence rw, ow" ::: "memory")
#else
#define mem_before_io()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

static unsigned long fw_hartid[MAX_HARTS];
static volatile uint32_t *setssip[MAX_HARTS];
static volatile uint32_t *s_file[MAX_HARTS];
static bool use_sswi, use_imsic;

void host_ipi_init(const unsigned long *hartids, const uint64_t *sswi, unsigned int nr)
{
	bool all = sswi != NULL && nr > 0 && nr <= MAX_HARTS;

	for (unsigned int i = 0; i < nr && i < MAX_HARTS; i++) {
		fw_hartid[i] = hartids[i];
		all = all && sswi[i];
	}
	for (unsigned int i = 0; i < nr && i < MAX_HARTS; i++)
		setssip[i] = all ? (volatile uint32_t *)(uintptr_t)sswi[i] : NULL;
	use_sswi = all;
	use_imsic = false;
}

bool host_ipi_use_imsic(const uint64_t *pages, unsigned int nr)
{
	bool all = !use_sswi && pages != NULL && nr > 0 && nr <= MAX_HARTS;

	for (unsigned int i = 0; i < nr && i < MAX_HARTS; i++)
		all = all && pages[i];
	for (unsigned int i = 0; i < nr && i < MAX_HARTS; i++)
		s_file[i] = all ? (volatile uint32_t *)(uintptr_t)pages[i] : NULL;
	use_imsic = all;
	return all;
}

void host_ipi_hart_init(void)
{
	if (!use_imsic)
		return;
	imsic_host_enable(HOST_IPI_EIID);
	csr_set(CSR_SIE, MIP_SEIP);
}

bool host_ipi_sswi(void)
{
	return use_sswi;
}

bool host_ipi_imsic(void)
{
	return use_imsic;
}

__attribute__((noinline)) void host_ipi_send(unsigned int hart)
{
	/* what the target reads after the interrupt (posted work, requests)
	 * first: the ecall was a barrier of its own, a device store is not */
	if (use_sswi) {
		mem_before_io();
		*setssip[hart] = 1;
		return;
	}
	if (use_imsic) {
		mem_before_io();
		*s_file[hart] = HOST_IPI_EIID;	/* seteipnum_le, offset 0 */
		return;
	}
	sbi_send_ipi(1, fw_hartid[hart]);
}

bool host_ipi_claim_ext(void)
{
	return use_imsic && imsic_host_claim_top(HOST_IPI_EIID);
}

void host_ipi_clear(void)
{
	if (__builtin_expect(use_imsic, 0))	/* (the SSWI's path as it was) */
		imsic_host_claim_top(HOST_IPI_EIID);
	else
		csr_clear(CSR_SIP, MIP_SSIP);
}

bool host_ipi_pending(void)
{
	if (use_imsic)
		return imsic_host_pending(HOST_IPI_EIID);
	return csr_read(CSR_SIP) & MIP_SSIP;
}

void host_ipi_hold(void)
{
	if (use_imsic)
		imsic_host_disable(HOST_IPI_EIID);	/* SEIE stays: hart 0's devices */
	else
		csr_clear(CSR_SIE, MIP_SSIP);
}

void host_ipi_release(void)
{
	if (use_imsic)
		imsic_host_enable(HOST_IPI_EIID);
	else
		csr_set(CSR_SIE, MIP_SSIP);
}
