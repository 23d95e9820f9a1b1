/* SPDX-License-Identifier: MIT */
/* hyp/vsbi/vsbi.c (hart masks, registry lookup, dispatch), hyp/vsbi/vsbi_fwft.c
 * and hyp/state/cfi_state.c (FWFT LANDING_PAD/SHADOW_STACK, software-check routing).
 * and the landing-pad re-delivery window (hyp/cfi/lp_redeliver.c).
 * The other extensions are stubs defined here; so are hart_caps (hyp/arch/hart.c),
 * time_now(), vm_stop() and vcpu_redirect_trap(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <arch/riscv/encoding.h>
#include <abi/sbi_defs.h>
#include <abi/sbi_sta.h>
#include <cfi.h>
#include <exit_action.h>
#include <fwft.h>
#include <hartmask.h>
#include <hart.h>
#include <host_ipi.h>
#include <imsic.h>
#include <sbi_client.h>
#include <trap_inject.h>
#include <vm.h>
#include <vsbi.h>
#include "fake_imsic.h"
#include "test.h"

/* ---- stubs ---- */

/* host IPIs (hyp/drivers/host_ipi.c, linked) are held and looked at here,
 * never sent */
long sbi_send_ipi(unsigned long hart_mask, unsigned long hart_mask_base)
{
	(void)hart_mask;
	(void)hart_mask_base;
	EXPECT_TRUE(!"a host IPI sent");
	return 0;
}

struct hart_caps hart_caps;
static struct hart the_hart;
struct hart *test_this_hart = &the_hart;
uint64_t timebase_hz = 10000000;

/* (hyp/state/sched.c) a landing-pad window turns the hart's native WFI off */
void sched_wfi_mode_off(struct hart *h)
{
	h->native_wfi = false;
}
static uint64_t fake_time = 1000;

uint64_t time_now(void)
{
	return fake_time;
}

static struct {
	int calls;
	struct vm *vm;
	char msg[256];
} stop;

void vm_stop(struct vm *vm, const char *fmt, ...)
{
	va_list ap;

	stop.calls++;
	stop.vm = vm;
	va_start(ap, fmt);
	vsnprintf(stop.msg, sizeof(stop.msg), fmt, ap);
	va_end(ap);
}

static struct {
	int calls;
	struct vcpu *v;
	unsigned long cause, tval;
} redirect;

void vcpu_redirect_trap(struct vcpu *v, unsigned long cause, unsigned long tval)
{
	redirect.calls++;
	redirect.v = v;
	redirect.cause = cause;
	redirect.tval = tval;
}

static struct {
	int calls;
	const char *ext;
	unsigned long fid;
} stub;

static void stub_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret, const char *ext)
{
	(void)v;
	stub.calls++;
	stub.ext = ext;
	stub.fid = fid;
	ret->error = SBI_SUCCESS;
	ret->value = 0x1000 + fid;
}

#define STUB_CALL(ext)                                                        \
	static void ext##_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret) \
	{                                                                     \
		stub_call(v, fid, ret, #ext);                                 \
	}
STUB_CALL(time)
STUB_CALL(dbtr)

static bool again_next;

static void ipi_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	stub_call(v, fid, ret, "ipi");
	ret->again = again_next;	/* e.g. an RFENCE not done in time */
	again_next = false;
}
STUB_CALL(rfence)
STUB_CALL(dbcn)
STUB_CALL(debug)
STUB_CALL(sta)
STUB_CALL(susp)
STUB_CALL(pmu)

static void hsm_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	stub_call(v, fid, ret, "hsm");
	ret->action = EXIT_YIELD;	/* e.g. HART_STOP: returns, then gives the hart away */
	ret->value = 7;
}

static void srst_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	stub_call(v, fid, ret, "srst");
	ret->error = SBI_ERR_FAILED;
	ret->action = EXIT_VM_STOP;	/* does not return to the guest */
}

static bool dbcn_present;

static bool dbcn_probe(const struct vm *vm)
{
	(void)vm;
	return dbcn_present;
}

#define EXT(n, first, last, ...)                                              \
	const struct vsbi_ext vsbi_##n = { .name = #n, .eid_first = (first),  \
					   .eid_last = (last), .call = n##_call, __VA_ARGS__ }
EXT(time, SBI_EXT_TIME, SBI_EXT_TIME);
EXT(ipi, SBI_EXT_IPI, SBI_EXT_IPI);
/* one EID each, as the dispatcher requires */
EXT(rfence, SBI_EXT_RFENCE, SBI_EXT_RFENCE);
EXT(hsm, SBI_EXT_HSM, SBI_EXT_HSM);
EXT(srst, SBI_EXT_SRST, SBI_EXT_SRST);
EXT(susp, SBI_EXT_SUSP, SBI_EXT_SUSP);
EXT(debug, SBI_EXT_CARAPACE_DEBUG, SBI_EXT_CARAPACE_DEBUG);
EXT(sta, SBI_EXT_STA, SBI_EXT_STA);
EXT(pmu, SBI_EXT_PMU, SBI_EXT_PMU);
EXT(dbtr, 0x44425452, 0x44425452);
EXT(dbcn, SBI_EXT_DBCN, SBI_EXT_DBCN, .probe = dbcn_probe);

/* ---- setup ---- */

static struct vm vm;

static struct vcpu *setup(enum cfi_policy policy, bool lp, bool ss)
{
	memset(&vm, 0, sizeof(vm));
	memset(&stop, 0, sizeof(stop));
	memset(&redirect, 0, sizeof(redirect));
	memset(&stub, 0, sizeof(stub));
	fake_csr_reset();
	memcpy(vm.cfg.name, "t", 2);
	vm.cfg.cfi_policy = policy;
	vm.cfg.nr_vcpus = 2;
	for (unsigned int i = 0; i < vm.cfg.nr_vcpus; i++) {
		vm.vcpus[i].vm = &vm;
		vm.vcpus[i].id = i;
	}
	memset(&hart_caps, 0, sizeof(hart_caps));
	hart_caps.zicfilp = lp;
	hart_caps.zicfiss = ss;
	vm.cfg.features = vm_features(policy);	/* fixed at creation, as vm_create() does */
	dbcn_present = true;
	again_next = false;
	EXPECT_TRUE(vsbi_init());	/* boot does the same (hyp/boot/main.c) */
	return &vm.vcpus[0];
}

/* ---- vsbi_hart_mask ---- */

#define SENTINEL 0xdeadbeefUL

TEST(vsbi_hart_mask_base_all)
{
	unsigned long out = SENTINEL;

	EXPECT_EQ(vsbi_hart_mask(2, 0, -1UL, &out), SBI_SUCCESS);
	EXPECT_EQ(out, 0x3);
	EXPECT_EQ(vsbi_hart_mask(2, 0xf0, -1UL, &out), SBI_SUCCESS);	/* mask ignored */
	EXPECT_EQ(out, 0x3);
	EXPECT_EQ(vsbi_hart_mask(8, 0, -1UL, &out), SBI_SUCCESS);
	EXPECT_EQ(out, 0xff);
	EXPECT_EQ(vsbi_hart_mask(1, 0, -1UL, &out), SBI_SUCCESS);
	EXPECT_EQ(out, 0x1);
	EXPECT_EQ(vsbi_hart_mask(64, 0, -1UL, &out), SBI_SUCCESS);
	EXPECT_EQ(out, ~0UL);
}

TEST(vsbi_hart_mask_in_range)
{
	unsigned long out = SENTINEL;

	EXPECT_EQ(vsbi_hart_mask(2, 0x3, 0, &out), SBI_SUCCESS);
	EXPECT_EQ(out, 0x3);
	EXPECT_EQ(vsbi_hart_mask(2, 0x2, 0, &out), SBI_SUCCESS);
	EXPECT_EQ(out, 0x2);
	EXPECT_EQ(vsbi_hart_mask(2, 0x1, 1, &out), SBI_SUCCESS);
	EXPECT_EQ(out, 0x2);
	EXPECT_EQ(vsbi_hart_mask(8, 0x5, 3, &out), SBI_SUCCESS);
	EXPECT_EQ(out, 0x28);
	EXPECT_EQ(vsbi_hart_mask(8, 0x1, 7, &out), SBI_SUCCESS);
	EXPECT_EQ(out, 0x80);
}

TEST(vsbi_hart_mask_beyond_nr_vcpus)
{
	unsigned long out = SENTINEL;

	EXPECT_EQ(vsbi_hart_mask(2, 0x4, 0, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(vsbi_hart_mask(2, 0x7, 0, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(vsbi_hart_mask(2, 0x1, 2, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(vsbi_hart_mask(2, 0x2, 1, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(vsbi_hart_mask(8, 1UL << 63, 0, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(vsbi_hart_mask(8, 0x1, 1UL << 40, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(vsbi_hart_mask(0, 0x1, 0, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(SBI_ERR_INVALID_PARAM, -3);
	EXPECT_EQ(out, SENTINEL);	/* not written on failure */
}

TEST(vsbi_hart_mask_base_overflow)
{
	unsigned long out = SENTINEL;

	/* base + 2 wraps to 0: must not name hart 0 */
	EXPECT_EQ(vsbi_hart_mask(2, 0x4, -2UL, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(vsbi_hart_mask(8, 0x2, -1UL, &out), SBI_SUCCESS);	/* -1 is "all" */
	EXPECT_EQ(out, 0xff);
	out = SENTINEL;
	EXPECT_EQ(vsbi_hart_mask(8, 1UL << 63, -64UL, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(vsbi_hart_mask(8, 0x1, -2UL, &out), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(out, SENTINEL);
}

TEST(vsbi_hart_mask_empty)
{
	unsigned long out = SENTINEL;

	EXPECT_EQ(vsbi_hart_mask(2, 0, 0, &out), SBI_SUCCESS);
	EXPECT_EQ(out, 0);
	out = SENTINEL;
	EXPECT_EQ(vsbi_hart_mask(2, 0, 1000, &out), SBI_SUCCESS);	/* base irrelevant */
	EXPECT_EQ(out, 0);
}

/* ---- registry and dispatch ---- */

TEST(vsbi_find_registry)
{
	setup(CFI_POLICY_TRAP, true, true);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_TIME), &vsbi_time);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_BASE), &vsbi_base);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_FWFT), &vsbi_fwft);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_STA), &vsbi_sta);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_SUSP), &vsbi_susp);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_RFENCE - 3), NULL);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_RFENCE), &vsbi_rfence);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_RFENCE - 4), NULL);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_RFENCE + 1), NULL);
	EXPECT_EQ(vsbi_find(&vm, 0), NULL);
	EXPECT_EQ(vsbi_find(&vm, 0x735049 + 1), NULL);
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_DBCN), &vsbi_dbcn);
	dbcn_present = false;	/* probe says no */
	vsbi_vm_init(&vm);	/* probes are evaluated once per VM */
	EXPECT_EQ(vsbi_find(&vm, SBI_EXT_DBCN), NULL);
}

static void ecall(struct vcpu *v, unsigned long eid, unsigned long fid, unsigned long a0,
		  unsigned long a1, unsigned long a2)
{
	VSBI_ARG(v, 7) = eid;
	VSBI_ARG(v, 6) = fid;
	VSBI_ARG(v, 0) = a0;
	VSBI_ARG(v, 1) = a1;
	VSBI_ARG(v, 2) = a2;
}

TEST(vsbi_dispatch_return_values)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	struct exit_verdict vd;

	v->g.ctx.sepc = 0x80200000;
	ecall(v, SBI_EXT_TIME, 5, 0x11, 0x22, 0x33);
	vd = vsbi_dispatch(v);
	EXPECT_EQ(vd.action, EXIT_RESUME);
	EXPECT_EQ(vd.pc_step, 4);		/* past the ecall, by the run loop */
	EXPECT_EQ(stub.calls, 1);
	EXPECT_STREQ(stub.ext, "time");
	EXPECT_EQ(stub.fid, 5);
	EXPECT_EQ(VSBI_ARG(v, 0), SBI_SUCCESS);
	EXPECT_EQ(VSBI_ARG(v, 1), 0x1005);
	EXPECT_EQ(VSBI_ARG(v, 2), 0x33);		/* a2.. untouched */
	EXPECT_EQ(v->g.ctx.sepc, 0x80200000);	/* no handler moves the pc */
}

TEST(vsbi_dispatch_unknown_extension)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	struct exit_verdict vd;

	ecall(v, 0x12345678, 0, 0x11, 0x22, 0);
	vd = vsbi_dispatch(v);
	EXPECT_EQ(vd.action, EXIT_RESUME);
	EXPECT_EQ(vd.pc_step, 4);
	EXPECT_EQ(stub.calls, 0);
	EXPECT_EQ((long)VSBI_ARG(v, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(VSBI_ARG(v, 1), 0);

	dbcn_present = false;
	vsbi_vm_init(&vm);	/* probes are evaluated once per VM */
	ecall(v, SBI_EXT_DBCN, 0, 0, 0, 0);
	EXPECT_EQ(vsbi_dispatch(v).action, EXIT_RESUME);
	EXPECT_EQ(stub.calls, 0);
	EXPECT_EQ((long)VSBI_ARG(v, 0), SBI_ERR_NOT_SUPPORTED);
}

TEST(vsbi_dispatch_actions)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	struct exit_verdict vd;

	ecall(v, SBI_EXT_HSM, 1, 0x11, 0x22, 0);
	vd = vsbi_dispatch(v);
	EXPECT_EQ(vd.action, EXIT_YIELD);	/* returns to the guest later */
	EXPECT_EQ(vd.pc_step, 4);
	EXPECT_EQ(VSBI_ARG(v, 0), 0);
	EXPECT_EQ(VSBI_ARG(v, 1), 7);

	ecall(v, SBI_EXT_SRST, 0, 0x11, 0x22, 0);
	vd = vsbi_dispatch(v);
	EXPECT_EQ(vd.action, EXIT_VM_STOP);	/* no return: no a0/a1/pc update */
	EXPECT_EQ(vd.pc_step, 0);
	EXPECT_EQ(VSBI_ARG(v, 0), 0x11);
	EXPECT_EQ(VSBI_ARG(v, 1), 0x22);

	/* not made yet (an RFENCE a target's hart was slow to serve): the
	 * guest makes it again, so nothing returned and the pc stays */
	ecall(v, SBI_EXT_IPI, 0, 0x11, 0x22, 0);
	again_next = true;
	vd = vsbi_dispatch(v);
	EXPECT_EQ(vd.action, EXIT_RESUME);
	EXPECT_EQ(vd.pc_step, 0);
	EXPECT_EQ(VSBI_ARG(v, 0), 0x11);
	EXPECT_EQ(VSBI_ARG(v, 1), 0x22);
}

/* The one extension table and the lookup built from it. */
static const unsigned long promised_eids[] = {	/* docs/sbi.md, docs/architecture.md */
	SBI_EXT_BASE, SBI_EXT_TIME, SBI_EXT_IPI, SBI_EXT_RFENCE, SBI_EXT_HSM, SBI_EXT_SRST,
	SBI_EXT_DBCN, SBI_EXT_FWFT, SBI_EXT_SUSP, SBI_EXT_PMU, SBI_EXT_STA, 0x44425452 /* DBTR */,
	SBI_EXT_CARAPACE_DEBUG,
};

TEST(vsbi_table_serves_every_extension)
{
	static const struct vsbi_ext *const table[] = {
#define ENTRY(name) &vsbi_##name,
		VSBI_EXTENSIONS(ENTRY)
#undef ENTRY
	};
	const struct vsbi_ext *slots[VSBI_SLOTS];

	setup(CFI_POLICY_TRAP, true, true);
	EXPECT_TRUE(vsbi_lookup_build(table, ARRAY_SIZE(table), slots));
	/* every entry of the table is found at its EID, and only there */
	for (unsigned int i = 0; i < ARRAY_SIZE(table); i++) {
		EXPECT_EQ(vsbi_find(&vm, table[i]->eid_first), table[i]);
		EXPECT_EQ(slots[vsbi_slot(table[i]->eid_first)], table[i]);
	}
	/* every extension we promise guests is in the table */
	for (unsigned int i = 0; i < ARRAY_SIZE(promised_eids); i++) {
		const struct vsbi_ext *e = vsbi_find(&vm, promised_eids[i]);

		EXPECT_TRUE(e != NULL);
		if (e)
			EXPECT_EQ(e->eid_first, promised_eids[i]);
	}
	EXPECT_EQ(ARRAY_SIZE(table), ARRAY_SIZE(promised_eids));
}

TEST(vsbi_slots_keep_the_standard_extensions_apart)
{
	/* every extension served now, and the standard ones it may gain (SBI
	 * 3.0: SSE, MPXY, CPPC, NACL; DBTR is served): a slot each */
	static const unsigned long eids[] = {
#define ENTRY(name) 0,
		VSBI_EXTENSIONS(ENTRY)
#undef ENTRY
		0x535345, 0x4D505859, 0x43505043, 0x4E41434C };
	static const struct vsbi_ext *const table[] = {
#define ENTRY(name) &vsbi_##name,
		VSBI_EXTENSIONS(ENTRY)
#undef ENTRY
	};
	unsigned long used = 0;

	for (unsigned int i = 0; i < ARRAY_SIZE(eids); i++) {
		unsigned long eid = i < ARRAY_SIZE(table) ? table[i]->eid_first : eids[i];
		unsigned int slot = vsbi_slot(eid);

		EXPECT_TRUE(slot < VSBI_SLOTS);
		EXPECT_FALSE(used & (1UL << slot));
		used |= 1UL << slot;
	}
}

TEST(vsbi_lookup_build_refuses_collisions)
{
	/* the same low 32 bits: the same slot */
	static const struct vsbi_ext a = { .name = "a", .eid_first = 0x100, .eid_last = 0x100 };
	static const struct vsbi_ext b = { .name = "b", .eid_first = 0x100000100UL,
					   .eid_last = 0x100000100UL };
	static const struct vsbi_ext range = { .name = "r", .eid_first = 0x200,
					       .eid_last = 0x201 };
	const struct vsbi_ext *const clash[] = { &a, &b };
	const struct vsbi_ext *const twice[] = { &a, &a };
	const struct vsbi_ext *const ranged[] = { &range };
	const struct vsbi_ext *slots[VSBI_SLOTS];

	EXPECT_FALSE(vsbi_lookup_build(clash, 2, slots));
	EXPECT_FALSE(vsbi_lookup_build(twice, 2, slots));
	EXPECT_FALSE(vsbi_lookup_build(ranged, 1, slots));	/* one EID per extension */
	EXPECT_TRUE(vsbi_lookup_build(clash, 1, slots));
	EXPECT_EQ(slots[vsbi_slot(0x100)], &a);
}

/* ---- FWFT through the dispatcher (vsbi_fwft.c) ---- */

TEST(vsbi_fwft_dispatch)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	ecall(v, SBI_EXT_FWFT, SBI_FWFT_SET, SBI_FWFT_SHADOW_STACK, 1, 0);
	EXPECT_EQ(vsbi_dispatch(v).action, EXIT_RESUME);
	EXPECT_EQ(VSBI_ARG(v, 0), SBI_SUCCESS);
	EXPECT_EQ(v->g.fwft.ss_value, 1);
	ecall(v, SBI_EXT_FWFT, SBI_FWFT_GET, SBI_FWFT_SHADOW_STACK, 0, 0);
	vsbi_dispatch(v);
	EXPECT_EQ(VSBI_ARG(v, 0), SBI_SUCCESS);
	EXPECT_EQ(VSBI_ARG(v, 1), 1);
	/* the feature is a uint32: upper bits are not part of it */
	ecall(v, SBI_EXT_FWFT, SBI_FWFT_GET, (1UL << 32) | SBI_FWFT_LANDING_PAD, 0, 0);
	vsbi_dispatch(v);
	EXPECT_EQ(VSBI_ARG(v, 0), SBI_SUCCESS);
	EXPECT_EQ(VSBI_ARG(v, 1), 0);
	/* defined but not backed here: NOT_SUPPORTED */
	ecall(v, SBI_EXT_FWFT, SBI_FWFT_SET, SBI_FWFT_DOUBLE_TRAP, 1, 0);
	vsbi_dispatch(v);
	EXPECT_EQ((long)VSBI_ARG(v, 0), SBI_ERR_NOT_SUPPORTED);
	ecall(v, SBI_EXT_FWFT, SBI_FWFT_GET, SBI_FWFT_POINTER_MASKING_PMLEN, 0, 0);
	vsbi_dispatch(v);
	EXPECT_EQ((long)VSBI_ARG(v, 0), SBI_ERR_NOT_SUPPORTED);
	/* reserved IDs: DENIED */
	ecall(v, SBI_EXT_FWFT, SBI_FWFT_SET, SBI_FWFT_POINTER_MASKING_PMLEN + 1, 0, 0);
	vsbi_dispatch(v);
	EXPECT_EQ((long)VSBI_ARG(v, 0), SBI_ERR_DENIED);
	ecall(v, SBI_EXT_FWFT, SBI_FWFT_GET, 0x40000000, 0, 0);
	vsbi_dispatch(v);
	EXPECT_EQ((long)VSBI_ARG(v, 0), SBI_ERR_DENIED);
	/* unknown function */
	ecall(v, SBI_EXT_FWFT, 2, SBI_FWFT_SHADOW_STACK, 0, 0);
	vsbi_dispatch(v);
	EXPECT_EQ((long)VSBI_ARG(v, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(v->g.fwft.ss_value, 1);
}

static long fwft(struct vcpu *v, unsigned long fid, unsigned long feature,
		 unsigned long value, unsigned long flags)
{
	ecall(v, SBI_EXT_FWFT, fid, feature, value, flags);
	vsbi_dispatch(v);
	return (long)VSBI_ARG(v, 0);
}

static long fwft_set_call(struct vcpu *v, unsigned long feature, unsigned long value,
			  unsigned long flags)
{
	return fwft(v, SBI_FWFT_SET, feature, value, flags);
}

/* *@value only when the call succeeds */
static long fwft_get_call(struct vcpu *v, unsigned long feature, unsigned long *value)
{
	long err = fwft(v, SBI_FWFT_GET, feature, 0, 0);

	if (err == SBI_SUCCESS)
		*value = VSBI_ARG(v, 1);
	return err;
}

/* MISALIGNED_EXC_DELEG: delegated at reset (1); 0 takes causes 4 and 6 out of
 * the live hedeleg (the hypervisor emulates), 1 puts them back; an open CFI
 * window's bit 18 in the CSR is left alone; LOCK holds; reset gives 1 back. */
#define MISALIGNED_CAUSES	((1UL << EXC_LOAD_MISALIGNED) | (1UL << EXC_STORE_MISALIGNED))
TEST(vsbi_fwft_misaligned_exc_deleg)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	vm.hedeleg = HEDELEG_GUEST;
	fake_csr[CSR_HEDELEG] = HEDELEG_GUEST | (1UL << EXC_SW_CHECK);	/* a window is open */
	EXPECT_EQ(vcpu_hedeleg(v), HEDELEG_GUEST);
	EXPECT_EQ(fwft(v, SBI_FWFT_GET, SBI_FWFT_MISALIGNED_EXC_DELEG, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(VSBI_ARG(v, 1), 1);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_MISALIGNED_EXC_DELEG, 2, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_MISALIGNED_EXC_DELEG, 1, 2), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_MISALIGNED_EXC_DELEG, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(v->g.fwft_mem.misaligned_emulate, 1);
	EXPECT_EQ(fake_csr[CSR_HEDELEG], (HEDELEG_GUEST & ~MISALIGNED_CAUSES) | (1UL << EXC_SW_CHECK));
	EXPECT_EQ(vcpu_hedeleg(v), HEDELEG_GUEST & ~MISALIGNED_CAUSES);
	EXPECT_EQ(fwft(v, SBI_FWFT_GET, SBI_FWFT_MISALIGNED_EXC_DELEG, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(VSBI_ARG(v, 1), 0);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_MISALIGNED_EXC_DELEG, 1, 0), SBI_SUCCESS);
	EXPECT_EQ(v->g.fwft_mem.misaligned_emulate, 0);
	EXPECT_EQ(fake_csr[CSR_HEDELEG], HEDELEG_GUEST | (1UL << EXC_SW_CHECK));
	EXPECT_EQ(v->g.fwft_mem.misaligned_locked, 0);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_MISALIGNED_EXC_DELEG, 0, SBI_FWFT_SET_FLAG_LOCK),
		  SBI_SUCCESS);
	EXPECT_EQ(v->g.fwft_mem.misaligned_locked, 1);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_MISALIGNED_EXC_DELEG, 1, 0), SBI_ERR_DENIED_LOCKED);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_MISALIGNED_EXC_DELEG, 0, 0), SBI_ERR_DENIED_LOCKED);
	EXPECT_EQ(fwft(v, SBI_FWFT_GET, SBI_FWFT_MISALIGNED_EXC_DELEG, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(VSBI_ARG(v, 1), 0);
	EXPECT_EQ(vcpu_hedeleg(v), HEDELEG_GUEST & ~MISALIGNED_CAUSES);
	/* reset (SRST, HSM start): delegated and unlocked again */
	fwft_vcpu_reset(v);
	EXPECT_EQ(v->g.fwft_mem.misaligned_locked, 0);
	EXPECT_EQ(fwft(v, SBI_FWFT_GET, SBI_FWFT_MISALIGNED_EXC_DELEG, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(VSBI_ARG(v, 1), 1);
	EXPECT_EQ(vcpu_hedeleg(v), HEDELEG_GUEST);
}

/* PTE_AD_HW_UPDATING: henvcfg.ADUE of the vCPU, only where the VM has Svadu */
TEST(vsbi_fwft_pte_ad_hw_updating)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	EXPECT_EQ(fwft(v, SBI_FWFT_GET, SBI_FWFT_PTE_AD_HW_UPDATING, 0, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_PTE_AD_HW_UPDATING, 1, 0), SBI_ERR_NOT_SUPPORTED);
	hart_caps.henvcfg_ok = ENVCFG_ADUE;
	vm.cfg.features = vm_features(CFI_POLICY_TRAP);
	v->henvcfg = ENVCFG_STCE;
	EXPECT_EQ(fwft(v, SBI_FWFT_GET, SBI_FWFT_PTE_AD_HW_UPDATING, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(VSBI_ARG(v, 1), 0);	/* the spec's reset value */
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_PTE_AD_HW_UPDATING, 2, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_PTE_AD_HW_UPDATING, 1, 4), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(v->henvcfg, ENVCFG_STCE);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_PTE_AD_HW_UPDATING, 1, 0), SBI_SUCCESS);
	EXPECT_EQ(v->henvcfg, ENVCFG_STCE | ENVCFG_ADUE);
	EXPECT_EQ(fake_csr[CSR_HENVCFG], ENVCFG_STCE | ENVCFG_ADUE);
	EXPECT_TRUE(v->requests & VCPU_REQ_HFENCE_VVMA);
	EXPECT_EQ(vcpu_henvcfg_guest(v) & ENVCFG_ADUE, ENVCFG_ADUE);
	EXPECT_EQ(fwft(v, SBI_FWFT_GET, SBI_FWFT_PTE_AD_HW_UPDATING, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(VSBI_ARG(v, 1), 1);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_PTE_AD_HW_UPDATING, 0, SBI_FWFT_SET_FLAG_LOCK),
		  SBI_SUCCESS);
	EXPECT_EQ(v->henvcfg, ENVCFG_STCE);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_PTE_AD_HW_UPDATING, 1, 0), SBI_ERR_DENIED_LOCKED);
	EXPECT_EQ(fwft(v, SBI_FWFT_SET, SBI_FWFT_PTE_AD_HW_UPDATING, 0, 0), SBI_ERR_DENIED_LOCKED);
	EXPECT_EQ(v->henvcfg, ENVCFG_STCE);
}

/* ---- cfi_state.c: FWFT backends ---- */

TEST(cfi_fwft_shadow_stack_set_get)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);
	unsigned long val = SENTINEL;

	v->henvcfg = ENVCFG_STCE | ENVCFG_FIOM;	/* unrelated bits survive */
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_SHADOW_STACK, &val), SBI_SUCCESS);
	EXPECT_EQ(val, 0);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, 0), SBI_SUCCESS);
	EXPECT_EQ(v->g.fwft.ss_value, 1);
	EXPECT_EQ(v->g.fwft.ss_locked, 0);
	EXPECT_EQ(v->g.fwft.lp_value, 0);
	EXPECT_EQ(v->henvcfg, ENVCFG_STCE | ENVCFG_FIOM | ENVCFG_SSE);
	EXPECT_EQ(fake_csr[CSR_HENVCFG], ENVCFG_STCE | ENVCFG_FIOM | ENVCFG_SSE);
	EXPECT_EQ(fake_csr[0x60a] & ENVCFG_SSE, ENVCFG_SSE);
	EXPECT_EQ(cfi_henvcfg(v), ENVCFG_SSE);
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_SHADOW_STACK, &val), SBI_SUCCESS);
	EXPECT_EQ(val, 1);
	/* and off again */
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(v->henvcfg, ENVCFG_STCE | ENVCFG_FIOM);
	EXPECT_EQ(fake_csr[CSR_HENVCFG], ENVCFG_STCE | ENVCFG_FIOM);
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_SHADOW_STACK, &val), SBI_SUCCESS);
	EXPECT_EQ(val, 0);
}

TEST(cfi_fwft_landing_pad_set_get)
{
	struct vcpu *v = setup(CFI_POLICY_STRICT, true, true);
	unsigned long val = SENTINEL;

	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, 0), SBI_SUCCESS);
	EXPECT_EQ(v->henvcfg, ENVCFG_LPE);
	EXPECT_EQ(fake_csr[CSR_HENVCFG], ENVCFG_LPE);
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_LANDING_PAD, &val), SBI_SUCCESS);
	EXPECT_EQ(val, 1);
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_SHADOW_STACK, &val), SBI_SUCCESS);
	EXPECT_EQ(val, 0);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, 0), SBI_SUCCESS);
	EXPECT_EQ(v->henvcfg, ENVCFG_LPE | ENVCFG_SSE);
	EXPECT_EQ(cfi_henvcfg(v), ENVCFG_LPE | ENVCFG_SSE);
	/* the other vCPU is independent */
	EXPECT_EQ(fwft_get_call(&vm.vcpus[1], SBI_FWFT_LANDING_PAD, &val), SBI_SUCCESS);
	EXPECT_EQ(val, 0);
	EXPECT_EQ(cfi_henvcfg(&vm.vcpus[1]), 0);
}

TEST(cfi_fwft_senvcfg_sse_cleared_when_ss_off)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	/* SS on: the guest's senvcfg is left alone */
	fake_csr[CSR_SENVCFG] = ENVCFG_SSE | ENVCFG_LPE | ENVCFG_CBZE;
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, 0), SBI_SUCCESS);
	EXPECT_EQ(fake_csr[CSR_SENVCFG], ENVCFG_SSE | ENVCFG_LPE | ENVCFG_CBZE);
	/* SS off: senvcfg.SSE must read 0, other bits stay */
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(fake_csr[CSR_SENVCFG], ENVCFG_LPE | ENVCFG_CBZE);
	EXPECT_EQ(fake_csr[0x10a] & ENVCFG_SSE, 0);
	/* also when only LANDING_PAD changes while SS is off */
	fake_csr[CSR_SENVCFG] = ENVCFG_SSE;
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, 0), SBI_SUCCESS);
	EXPECT_EQ(fake_csr[CSR_SENVCFG], 0);
}

TEST(cfi_fwft_invalid_params)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 2, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, -1UL, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, 2), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, 3), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, 1UL << 63), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1UL << 32, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(SBI_ERR_INVALID_PARAM, -3);
	/* nothing changed, nothing written */
	EXPECT_EQ(v->g.fwft.ss_value, 0);
	EXPECT_EQ(v->g.fwft.ss_locked, 0);
	EXPECT_EQ(v->g.fwft.lp_value, 0);
	EXPECT_EQ(v->g.fwft.lp_locked, 0);
	EXPECT_EQ(v->henvcfg, 0);
	EXPECT_EQ(fake_csr_nr_writes[CSR_HENVCFG], 0);
}

TEST(cfi_fwft_lock)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);
	unsigned long val = SENTINEL;

	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, SBI_FWFT_SET_FLAG_LOCK), SBI_SUCCESS);
	EXPECT_EQ(v->g.fwft.ss_locked, 1);
	EXPECT_EQ(v->henvcfg, ENVCFG_SSE);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 0, 0), SBI_ERR_DENIED_LOCKED);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, 0), SBI_ERR_DENIED_LOCKED);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 0, SBI_FWFT_SET_FLAG_LOCK),
		  SBI_ERR_DENIED_LOCKED);
	EXPECT_EQ(SBI_ERR_DENIED_LOCKED, -14);
	EXPECT_EQ(v->g.fwft.ss_value, 1);
	EXPECT_EQ(v->henvcfg, ENVCFG_SSE);
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_SHADOW_STACK, &val), SBI_SUCCESS);
	EXPECT_EQ(val, 1);
	/* the lock is per feature */
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, 0), SBI_SUCCESS);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 0, SBI_FWFT_SET_FLAG_LOCK), SBI_SUCCESS);
	EXPECT_EQ(v->g.fwft.lp_locked, 1);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, 0), SBI_ERR_DENIED_LOCKED);
	EXPECT_EQ(v->henvcfg, ENVCFG_SSE);
	/* locked with value 0 still reads 0 */
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_LANDING_PAD, &val), SBI_SUCCESS);
	EXPECT_EQ(val, 0);
}

TEST(cfi_fwft_unsupported)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, false);	/* no Zicfiss */
	unsigned long val = SENTINEL;

	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_SHADOW_STACK, &val), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(val, SENTINEL);
	EXPECT_EQ(v->henvcfg, 0);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, 0), SBI_SUCCESS);	/* LP still there */
	EXPECT_EQ(SBI_ERR_NOT_SUPPORTED, -2);

	v = setup(CFI_POLICY_TRAP, false, true);			/* no Zicfilp */
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_LANDING_PAD, &val), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, 0), SBI_SUCCESS);

	v = setup(CFI_POLICY_OFF, true, true);				/* policy off */
	EXPECT_FALSE(cfi_vm_has_lp(&vm));
	EXPECT_FALSE(cfi_vm_has_ss(&vm));
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_SHADOW_STACK, &val), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(fwft_get_call(v, SBI_FWFT_LANDING_PAD, &val), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(v->henvcfg, 0);
	EXPECT_EQ(fake_csr_nr_writes[CSR_HENVCFG], 0);

	v = setup(CFI_POLICY_DELEGATE, true, true);
	EXPECT_TRUE(cfi_vm_has_lp(&vm));
	EXPECT_TRUE(cfi_vm_has_ss(&vm));
}

TEST(cfi_fwft_reserved_feature)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);
	unsigned long val = SENTINEL;

	EXPECT_EQ(fwft_set_call(v, 0x40000000, 1, 0), SBI_ERR_DENIED);
	/* defined by the spec, not in the table */
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_DOUBLE_TRAP, 1, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(fwft_get_call(v, 0x40000000, &val), SBI_ERR_DENIED);
	EXPECT_EQ(SBI_ERR_DENIED, -4);
	EXPECT_EQ(val, SENTINEL);
	EXPECT_EQ(fake_csr_nr_writes[CSR_HENVCFG], 0);
}

/* The feature table: every feature the spec defines is either in it (and then
 * complete) or answers NOT_SUPPORTED; reset unlocks every one of them. */
TEST(fwft_table_complete)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);
	unsigned int n = 0;

	vm.cfg.features |= VM_FEAT_SVADU;
	for (uint32_t id = 0; id <= SBI_FWFT_POINTER_MASKING_PMLEN; id++) {
		const struct fwft_feature *f = fwft_feature(id);

		if (!f) {
			EXPECT_EQ(fwft_set_call(v, id, 1, 0), SBI_ERR_NOT_SUPPORTED);
			continue;
		}
		n++;
		EXPECT_EQ(f->id, id);
		EXPECT_TRUE(f->value_at < sizeof(struct vcpu_guest) && f->lock_at < sizeof(struct vcpu_guest));
		EXPECT_EQ(fwft_set_call(v, id, 1, SBI_FWFT_SET_FLAG_LOCK), SBI_SUCCESS);
		EXPECT_EQ(*fwft_feature_lock(v, f), 1);
		EXPECT_EQ(fwft_feature_get(v, f), 1);
	}
	EXPECT_EQ(n, 4);	/* MISALIGNED_EXC_DELEG, LANDING_PAD, SHADOW_STACK, PTE_AD */
	fwft_vcpu_reset(v);
	for (uint32_t id = 0; id <= SBI_FWFT_POINTER_MASKING_PMLEN; id++) {
		const struct fwft_feature *f = fwft_feature(id);

		if (f) {
			EXPECT_EQ(*fwft_feature_lock(v, f), 0);
			EXPECT_EQ(fwft_feature_get(v, f), f->inverted);	/* reset value */
		}
	}
	EXPECT_EQ(v->g.fwft_mem.pte_ad_value, 0);
	EXPECT_EQ(v->g.fwft.lp_value, 0);
}

TEST(cfi_vcpu_reset_clears_state)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 1, SBI_FWFT_SET_FLAG_LOCK), SBI_SUCCESS);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, SBI_FWFT_SET_FLAG_LOCK), SBI_SUCCESS);
	v->g.csr.senvcfg = ENVCFG_SSE | ENVCFG_LPE | ENVCFG_CBZE;
	v->g.csr.ssp = 0x80001000;
	v->g.ctx.sstatus = SR_SPELP | SR_SPP | SR_FS_INITIAL;
	v->g.csr.vsstatus = SR_SPELP | SR_SIE;
	fwft_vcpu_reset(v);	/* as vcpu_reset() does */
	cfi_vcpu_reset(v);
	EXPECT_EQ(v->g.fwft.ss_value, 0);
	EXPECT_EQ(v->g.fwft.ss_locked, 0);
	EXPECT_EQ(v->g.fwft.lp_value, 0);
	EXPECT_EQ(v->g.fwft.lp_locked, 0);
	EXPECT_EQ(cfi_henvcfg(v), 0);
	EXPECT_EQ(v->g.csr.senvcfg, 0);
	EXPECT_EQ(v->g.csr.ssp, 0);
	EXPECT_EQ(v->g.ctx.sstatus, SR_SPP | SR_FS_INITIAL);
	EXPECT_EQ(v->g.csr.vsstatus, SR_SIE);
	/* unlocked again */
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_SHADOW_STACK, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(fwft_set_call(v, SBI_FWFT_LANDING_PAD, 1, 0), SBI_SUCCESS);
}

TEST(cfi_hedeleg_by_policy)
{
	setup(CFI_POLICY_DELEGATE, true, true);
	EXPECT_EQ(cfi_hedeleg(&vm), 1UL << 18);
	vm.cfg.cfi_policy = CFI_POLICY_TRAP;
	EXPECT_EQ(cfi_hedeleg(&vm), 0);
	vm.cfg.cfi_policy = CFI_POLICY_STRICT;
	EXPECT_EQ(cfi_hedeleg(&vm), 0);
	vm.cfg.cfi_policy = CFI_POLICY_OFF;
	EXPECT_EQ(cfi_hedeleg(&vm), 0);
}

TEST(cfi_swcheck_trap_injects)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	v->g.ctx.sepc = 0x80201234;
	v->g.ctx.sstatus = SR_SPP;		/* from VS-mode */
	fake_csr[CSR_STVAL] = SWCHECK_TVAL_LANDING_PAD;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_INJECTED);
	EXPECT_EQ(v->cfi_stats.swcheck_lp, 1);
	EXPECT_EQ(v->cfi_stats.swcheck_ss, 0);
	EXPECT_EQ(v->cfi_stats.last_pc, 0x80201234);
	EXPECT_EQ(v->cfi_stats.last_tval, 2);
	EXPECT_EQ(v->cfi_stats.last_from_vs, 1);
	EXPECT_EQ(redirect.calls, 1);
	EXPECT_EQ(redirect.v, v);
	EXPECT_EQ(redirect.cause, 18);
	EXPECT_EQ(redirect.tval, 2);
	EXPECT_EQ(stop.calls, 0);

	v->g.ctx.sstatus = 0;			/* from VU-mode */
	fake_csr[CSR_STVAL] = SWCHECK_TVAL_SHADOW_STACK;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_INJECTED);
	EXPECT_EQ(v->cfi_stats.swcheck_lp, 1);
	EXPECT_EQ(v->cfi_stats.swcheck_ss, 1);
	EXPECT_EQ(v->cfi_stats.last_from_vs, 0);
	EXPECT_EQ(redirect.tval, 3);
}

/* A CPU whose sret clears the guest's SPELP (QEMU 10.0.2): a landing-pad
 * fault is re-run with ELP=1 and cause 18 delegated, not injected. */
TEST(cfi_swcheck_redelivers_lp_where_sret_loses_spelp)
{
	struct vcpu *v = setup(CFI_POLICY_TRAP, true, true);

	hart_caps.spelp_lost_at_sret = true;
	fake_csr[CSR_HEDELEG] = vm.hedeleg = 0x1ff;
	fake_csr[CSR_HSTATUS] = HSTATUS_SPV;
	fake_csr[CSR_SIE] = MIP_SSIP | MIP_STIP;
	fake_csr[CSR_STIMECMP] = fake_time + 10;	/* the slice ends before the guard */
	v->henvcfg = 0;					/* guest kernel without landing pads */
	v->g.ctx.sepc = 0x1000;
	v->g.ctx.sstatus = 0;				/* from VU */
	fake_csr[CSR_STVAL] = SWCHECK_TVAL_LANDING_PAD;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_RESUME);
	EXPECT_EQ(redirect.calls, 0);
	EXPECT_EQ(v->cfi_stats.swcheck_lp, 1);
	EXPECT_EQ(v->g.ctx.sepc, 0x1000);		/* the same instruction again */
	EXPECT_EQ(!!(v->g.ctx.sstatus & SR_SPELP), 1);	/* ELP=1 there (shared bit) */
	/* cause 18 alone: any other trap of the handler exits to us first */
	EXPECT_EQ(fake_csr[CSR_HEDELEG], 1UL << 18);
	EXPECT_EQ(!!(fake_csr[CSR_HSTATUS] & HSTATUS_VTSR), 1);
	EXPECT_EQ(fake_csr[CSR_SIE], MIP_STIP);		/* no IPI before the handler reads SPELP */
	EXPECT_TRUE(fake_csr[CSR_STIMECMP] >= fake_time + 2000);	/* 200 us guard */
	EXPECT_TRUE(v->lp_window.open);

	/* a shadow-stack fault is injected as before: its SPELP is 0 anyway */
	fake_csr[CSR_STVAL] = SWCHECK_TVAL_SHADOW_STACK;
	v->lp_window.open = false;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_INJECTED);
	EXPECT_EQ(redirect.calls, 1);

	/* strict with landing pads on in the guest kernel: injected (a kernel
	 * violation inside the window could not be told from the fault) */
	vm.cfg.cfi_policy = CFI_POLICY_STRICT;
	v->henvcfg = ENVCFG_LPE;
	fake_csr[CSR_STVAL] = SWCHECK_TVAL_LANDING_PAD;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_INJECTED);
	EXPECT_EQ(redirect.calls, 2);
	v->henvcfg = 0;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_RESUME);
	EXPECT_EQ(redirect.calls, 2);
	hart_caps.spelp_lost_at_sret = false;
}

/* @hvip and @vstimecmp: the guest's interrupts and timer when it faulted */
static unsigned long window_htimedelta;	/* guest time - host time while it opens */
static void (*window_host)(void);	/* the host's set-up, after the CSR file's reset */

static struct vcpu *open_window_with(enum cfi_policy policy, unsigned long hvip,
				     unsigned long vstimecmp)
{
	struct vcpu *v = setup(policy, true, true);

	fake_csr[CSR_HTIMEDELTA] = window_htimedelta;
	fake_csr[CSR_HVIP] = hvip;
	fake_csr[CSR_VSTIMECMP] = vstimecmp;
	hart_caps.spelp_lost_at_sret = true;
	fake_csr[CSR_HEDELEG] = vm.hedeleg = 0x1ff;
	fake_csr[CSR_HSTATUS] = HSTATUS_SPV;
	fake_csr[CSR_SIE] = MIP_SSIP | MIP_STIP;
	if (window_host)
		window_host();
	fake_csr[CSR_STIMECMP] = fake_time + 50000;
	v->henvcfg = 0;
	v->g.ctx.sepc = 0x1000;
	v->g.ctx.sstatus = 0;
	fake_csr[CSR_STVAL] = SWCHECK_TVAL_LANDING_PAD;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_RESUME);
	hart_caps.spelp_lost_at_sret = false;
	/* the hardware delivered it: the guest's handler runs in VS */
	fake_csr[CSR_VSCAUSE] = EXC_SW_CHECK;
	fake_csr[CSR_VSTVAL] = SWCHECK_TVAL_LANDING_PAD;
	fake_csr[CSR_VSEPC] = 0x1000;
	fake_csr[CSR_VSSTATUS] = SR_SPIE;		/* SPP=U: back to user */
	v->g.ctx.sstatus = SR_SPP | SR_SPELP;		/* trapped in VS, guest's SPELP=1 */
	v->g.ctx.sepc = 0x2000;
	return v;
}

static struct vcpu *open_window(enum cfi_policy policy)
{
	return open_window_with(policy, 0, -1UL);
}

TEST(cfi_lp_window_closes_at_the_guest_sret)
{
	struct vcpu *v = open_window(CFI_POLICY_TRAP);
	enum exit_action act = EXIT_YIELD;

	fake_csr[CSR_VSEPC] = 0x1004;			/* the handler skips the target */
	v->g.ctx.sstatus &= ~SR_SPELP;			/* and returns with SPELP=0 */
	EXPECT_TRUE(cfi_lp_window_exit(v, EXC_VIRTUAL_INST, 0x10200073, &act));
	EXPECT_EQ(act, EXIT_RESUME);
	EXPECT_FALSE(v->lp_window.open);
	EXPECT_EQ(v->g.ctx.sepc, 0x1004);		/* where the guest's sret goes */
	EXPECT_EQ(v->g.ctx.sstatus & (SR_SPP | SR_SPELP), 0);	/* to VU, ELP=0 */
	EXPECT_EQ(fake_csr[CSR_VSSTATUS] & (SR_SIE | SR_SPIE | SR_SPP), SR_SIE | SR_SPIE);
	EXPECT_EQ(fake_csr[CSR_HEDELEG], 0x1ff);
	EXPECT_EQ(fake_csr[CSR_HSTATUS] & HSTATUS_VTSR, 0);
	EXPECT_EQ(fake_csr[CSR_SIE], MIP_SSIP | MIP_STIP);
	EXPECT_EQ(fake_csr[CSR_STIMECMP], fake_time + 50000);	/* the rest of the slice */
	EXPECT_EQ(v->cfi_stats.swcheck_lp, 1);

	/* a return with SPELP=1 keeps it: ELP=1 at the target (shared bit) */
	v = open_window(CFI_POLICY_TRAP);
	EXPECT_TRUE(cfi_lp_window_exit(v, EXC_VIRTUAL_INST, 0x10200073, &act));
	EXPECT_EQ(!!(v->g.ctx.sstatus & SR_SPELP), 1);
}

TEST(cfi_lp_window_waits_for_the_fault)
{
	struct vcpu *v = open_window(CFI_POLICY_TRAP);
	enum exit_action act = EXIT_YIELD;

	/* the guard fired before the instruction ran again: window kept */
	v->g.ctx.sepc = 0x1000;
	v->g.ctx.sstatus = 0;
	EXPECT_TRUE(cfi_lp_window_exit(v, CAUSE_IRQ_FLAG | IRQ_S_TIMER, 0, &act));
	EXPECT_EQ(act, EXIT_RESUME);
	EXPECT_TRUE(v->lp_window.open);
}

/* A handler that is the faulting instruction itself (it jumps to itself)
 * looks like "not run yet" for ever: the window is kept for at most 3 more
 * guard periods, then closed with the fault owed, and the timer exit goes on
 * as usual (host services, slice end, scheduler). */
TEST(cfi_lp_window_at_the_pc_has_a_bound)
{
	struct vcpu *v = open_window(CFI_POLICY_TRAP);
	enum exit_action act = EXIT_YIELD;

	v->g.ctx.sepc = 0x1000;
	for (int i = 0; i < 3; i++) {
		EXPECT_TRUE(cfi_lp_window_exit(v, CAUSE_IRQ_FLAG | IRQ_S_TIMER, 0, &act));
		EXPECT_TRUE(v->lp_window.open);
	}
	EXPECT_FALSE(cfi_lp_window_exit(v, CAUSE_IRQ_FLAG | IRQ_S_TIMER, 0, &act));
	EXPECT_FALSE(v->lp_window.open);
	EXPECT_TRUE(v->lp_window.owed);
	EXPECT_EQ(v->lp_window.owed_pc, 0x1000);
	EXPECT_EQ(v->cfi_stats.lp_windows_cut, 1);
	EXPECT_EQ(fake_csr[CSR_HEDELEG], 0x1ff);		/* the VM's own again */
	EXPECT_EQ(fake_csr[CSR_HSTATUS] & HSTATUS_VTSR, 0);
	EXPECT_EQ(fake_csr[CSR_SIE], MIP_SSIP | MIP_STIP);	/* host IPIs again */
}

/* Host work waiting (a kick, a TLB shootdown: SSIP pending) ends the window
 * at the next timer exit, without a guard period more. */
TEST(cfi_lp_window_gives_way_to_a_host_ipi)
{
	struct vcpu *v = open_window(CFI_POLICY_TRAP);
	enum exit_action act = EXIT_YIELD;

	v->g.ctx.sepc = 0x1000;
	fake_csr[CSR_SIP] = MIP_SSIP;
	EXPECT_FALSE(cfi_lp_window_exit(v, CAUSE_IRQ_FLAG | IRQ_S_TIMER, 0, &act));
	EXPECT_FALSE(v->lp_window.open);
	EXPECT_TRUE(v->lp_window.owed);
	fake_csr[CSR_SIP] = 0;
}

/* The same on the AIA machine, host IPIs through the IMSIC (host_ipi.h): the
 * window holds them by their identity's enable bit, not sie (hart 0's
 * devices still interrupt), a pending one cuts it short the same way, and it
 * interrupts again once the window is closed. */
static void imsic_host_ipis(void)
{
	fake_imsic_install(255);
	imsic_host_hart_init(255, true);
	host_ipi_hart_init();
}

TEST(cfi_lp_window_holds_and_gives_way_to_an_imsic_host_ipi)
{
	static uint32_t pages[2];
	uint64_t files[2] = { (uintptr_t)&pages[0], (uintptr_t)&pages[1] };
	unsigned long ids[2] = { 0, 1 };
	struct vcpu *v;
	enum exit_action act = EXIT_YIELD;

	host_ipi_init(ids, NULL, 2);
	EXPECT_TRUE(host_ipi_use_imsic(files, 2));
	window_host = imsic_host_ipis;
	v = open_window(CFI_POLICY_TRAP);
	window_host = NULL;
	EXPECT_FALSE(fake_imsic_enabled(HOST_IPI_EIID));
	EXPECT_TRUE(fake_csr[CSR_SIE] & MIP_SEIP);
	v->g.ctx.sepc = 0x1000;
	EXPECT_TRUE(cfi_lp_window_exit(v, CAUSE_IRQ_FLAG | IRQ_S_TIMER, 0, &act));
	EXPECT_TRUE(v->lp_window.open);		/* nothing waiting: kept */
	fake_imsic_send(HOST_IPI_EIID);
	EXPECT_FALSE(fake_csr_read(CSR_SIP) & MIP_SEIP);	/* held: no signal */
	EXPECT_FALSE(cfi_lp_window_exit(v, CAUSE_IRQ_FLAG | IRQ_S_TIMER, 0, &act));
	EXPECT_FALSE(v->lp_window.open);
	EXPECT_TRUE(v->lp_window.owed);
	EXPECT_TRUE(fake_imsic_enabled(HOST_IPI_EIID));	/* given back */
	EXPECT_TRUE(fake_csr_read(CSR_SIP) & MIP_SEIP);
	host_ipi_init(ids, NULL, 2);		/* the other tests' machine: SBI */
}

/* No guest interrupt may come before the re-delivered fault: one would find
 * ELP=1 at the faulting instruction, and a guest kernel that ran another task
 * before returning there would bring the fault back to us after the window,
 * counted twice (a Linux guest under 200 us slices did). */
TEST(cfi_lp_window_holds_guest_interrupts_until_it_closes)
{
	struct vcpu *v;
	enum exit_action act = EXIT_YIELD;

	v = open_window_with(CFI_POLICY_TRAP, MIP_VSSIP | MIP_VSEIP, fake_time + 10);
	v->ext_irq_live = true;
	EXPECT_EQ(fake_csr[CSR_HVIP] & VS_IRQ_MASK, 0);
	EXPECT_TRUE(fake_csr[CSR_VSTIMECMP] > fake_time + (1UL << 60));	/* parked */
	/* posted while open (vcpu_apply_pending() before entry): held too */
	fake_csr[CSR_HVIP] |= MIP_VSTIP;
	vcpu_hold_irqs(v);
	EXPECT_EQ(fake_csr[CSR_HVIP] & VS_IRQ_MASK, 0);
	/* the handler's sret closes it: all given back, the timer as it was */
	fake_csr[CSR_VSEPC] = 0x1004;
	EXPECT_TRUE(cfi_lp_window_exit(v, EXC_VIRTUAL_INST, 0x10200073, &act));
	EXPECT_FALSE(v->lp_window.open);
	EXPECT_EQ(fake_csr[CSR_HVIP] & VS_IRQ_MASK, VS_IRQ_MASK);
	EXPECT_EQ(fake_csr[CSR_VSTIMECMP], fake_time + 10);

	/* the external level dropped meanwhile; the handler set a new timer;
	 * the vCPU leaves the hart with the window open */
	v = open_window_with(CFI_POLICY_TRAP, MIP_VSEIP, fake_time + 10);
	v->ext_irq_live = false;
	fake_csr[CSR_VSTIMECMP] = 777;
	cfi_lp_window_drop(v);
	EXPECT_FALSE(v->lp_window.open);
	EXPECT_EQ(fake_csr[CSR_HVIP] & VS_IRQ_MASK, 0);
	EXPECT_EQ(fake_csr[CSR_VSTIMECMP], 777);

	/* a timer due after the guard is left alone (owed if it comes first) */
	v = open_window_with(CFI_POLICY_TRAP, 0, fake_time + 1000000);
	EXPECT_EQ(fake_csr[CSR_VSTIMECMP], fake_time + 1000000);
}

/* vstimecmp is guest time: a guest whose clock runs 5 s ahead of the host's
 * (htimedelta > 0, after a restore or a move) with its timer due within the
 * guard has it held too, and one due after the guard in its time does not. */
TEST(cfi_lp_window_parks_the_timer_in_guest_time)
{
	struct vcpu *v;

	window_htimedelta = 50000000;
	v = open_window_with(CFI_POLICY_TRAP, 0, fake_time + 50000000 + 10);
	EXPECT_TRUE(v->lp_window.timer_parked);
	EXPECT_TRUE(fake_csr[CSR_VSTIMECMP] > fake_time + (1UL << 60));	/* parked */
	/* 5 s behind (htimedelta < 0): due 100 ms after the guard in its time */
	window_htimedelta = -50000000UL;
	v = open_window_with(CFI_POLICY_TRAP, 0, fake_time - 50000000 + 1000000);
	EXPECT_FALSE(v->lp_window.timer_parked);
	window_htimedelta = 0;
}

/* A window that closes before the guest had its fault (an interrupt came
 * first and the guest kernel went to another task; the vCPU left the hart
 * before the instruction ran again): when the fault comes back, it is
 * re-delivered but not counted a second time. */
TEST(cfi_lp_fault_owed_is_counted_once)
{
	struct vcpu *v = open_window(CFI_POLICY_TRAP);
	enum exit_action act = EXIT_YIELD;

	fake_csr[CSR_VSATP] = 0x8000000000012345UL;
	fake_csr[CSR_VSCAUSE] = CAUSE_IRQ_FLAG | 5;	/* the timer, at the instruction */
	fake_csr[CSR_VSEPC] = 0x5000;			/* its handler returns elsewhere */
	fake_csr[CSR_VSSTATUS] = SR_SPIE;		/* to user code */
	EXPECT_TRUE(cfi_lp_window_exit(v, EXC_VIRTUAL_INST, 0x10200073, &act));
	EXPECT_FALSE(v->lp_window.open);
	EXPECT_EQ(v->cfi_stats.swcheck_lp, 1);
	/* the task comes back to it later: faults to us, re-delivered, not counted */
	hart_caps.spelp_lost_at_sret = true;
	v->g.ctx.sepc = 0x1000;
	v->g.ctx.sstatus = 0;
	fake_csr[CSR_STVAL] = SWCHECK_TVAL_LANDING_PAD;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_RESUME);
	EXPECT_EQ(v->cfi_stats.swcheck_lp, 1);
	EXPECT_TRUE(v->lp_window.open);
	/* a new violation there is one more */
	v->lp_window.open = false;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_RESUME);
	EXPECT_EQ(v->cfi_stats.swcheck_lp, 2);

	/* another address space at the same pc is not the owed fault */
	v = open_window(CFI_POLICY_TRAP);
	v->g.ctx.sepc = 0x1000;			/* before the instruction ran again */
	cfi_lp_window_drop(v);
	EXPECT_TRUE(v->lp_window.owed);
	fake_csr[CSR_VSATP] = 0x8000000000099999UL;
	v->g.ctx.sepc = 0x1000;
	v->g.ctx.sstatus = 0;
	fake_csr[CSR_STVAL] = SWCHECK_TVAL_LANDING_PAD;
	hart_caps.spelp_lost_at_sret = true;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_RESUME);
	EXPECT_EQ(v->cfi_stats.swcheck_lp, 2);

	/* the handler's own return after the delivered fault owes nothing */
	v = open_window(CFI_POLICY_TRAP);
	fake_csr[CSR_VSEPC] = 0x1004;
	EXPECT_TRUE(cfi_lp_window_exit(v, EXC_VIRTUAL_INST, 0x10200073, &act));
	EXPECT_FALSE(v->lp_window.owed);
	hart_caps.spelp_lost_at_sret = false;
}

TEST(cfi_lp_window_kernel_ss_violation_counts_and_stops_strict)
{
	struct vcpu *v = open_window(CFI_POLICY_STRICT);
	enum exit_action act = EXIT_YIELD;

	/* the handler itself failed a sspopchk: the hardware gave it to the guest */
	fake_csr[CSR_VSCAUSE] = EXC_SW_CHECK;
	fake_csr[CSR_VSTVAL] = SWCHECK_TVAL_SHADOW_STACK;
	fake_csr[CSR_VSEPC] = 0x80201000;
	stop.calls = 0;
	EXPECT_TRUE(cfi_lp_window_exit(v, CAUSE_IRQ_FLAG | IRQ_S_SOFT, 0, &act));
	EXPECT_EQ(act, EXIT_VM_STOP);
	EXPECT_EQ(stop.calls, 1);
	EXPECT_EQ(v->cfi_stats.swcheck_ss, 1);
	EXPECT_FALSE(v->lp_window.open);

	/* under trap it is counted, and the exit handled as usual */
	v = open_window(CFI_POLICY_TRAP);
	fake_csr[CSR_VSCAUSE] = EXC_SW_CHECK;
	fake_csr[CSR_VSTVAL] = SWCHECK_TVAL_SHADOW_STACK;
	EXPECT_FALSE(cfi_lp_window_exit(v, CAUSE_IRQ_FLAG | IRQ_S_SOFT, 0, &act));
	EXPECT_EQ(v->cfi_stats.swcheck_ss, 1);
}

/* csrrw/csrrs/csrrc[i] rd, senvcfg, rs1 */
static unsigned long csr_insn(unsigned int f3, unsigned int rd, unsigned int rs1)
{
	return 0x73 | rd << 7 | f3 << 12 | rs1 << 15 | (unsigned long)CSR_SENVCFG << 20;
}

TEST(cfi_senvcfg_hidden_in_a_vm_without_cfi)
{
	struct vcpu *v = setup(CFI_POLICY_OFF, true, true);

	EXPECT_EQ(cfi_hstateen0(&vm), HSTATEEN0_SE0);	/* ENVCFG clear: senvcfg traps */
	v->g.ctx.gpr[5] = ENVCFG_LPE | ENVCFG_SSE | ENVCFG_FIOM;
	EXPECT_TRUE(cfi_senvcfg_insn(v, csr_insn(1, 6, 5)));		/* csrrw t1, senvcfg, t0 */
	EXPECT_EQ(fake_csr[CSR_SENVCFG], ENVCFG_FIOM);
	EXPECT_EQ(v->g.ctx.gpr[6], 0);
	EXPECT_TRUE(cfi_senvcfg_insn(v, csr_insn(2, 7, 0)));		/* csrr t2, senvcfg */
	EXPECT_EQ(v->g.ctx.gpr[7], ENVCFG_FIOM);
	EXPECT_TRUE(cfi_senvcfg_insn(v, csr_insn(6, 0, ENVCFG_LPE)));	/* csrsi senvcfg, LPE */
	EXPECT_EQ(fake_csr[CSR_SENVCFG], ENVCFG_FIOM);
	EXPECT_TRUE(cfi_senvcfg_insn(v, csr_insn(7, 8, ENVCFG_FIOM)));	/* csrrci s0, senvcfg, FIOM */
	EXPECT_EQ(v->g.ctx.gpr[8], ENVCFG_FIOM);
	EXPECT_EQ(fake_csr[CSR_SENVCFG], 0);
	EXPECT_FALSE(cfi_senvcfg_insn(v, 0x10500073));			/* wfi */
	EXPECT_FALSE(cfi_senvcfg_insn(v, csr_insn(1, 6, 5) ^ (1UL << 20)));	/* another CSR */

	/* a VM with CFI keeps ENVCFG (no trap); were it trapped, LPE/SSE would stay */
	v = setup(CFI_POLICY_TRAP, true, true);
	EXPECT_EQ(cfi_hstateen0(&vm), HSTATEEN0_SE0 | HSTATEEN0_ENVCFG);
	v->g.ctx.gpr[5] = ENVCFG_LPE | ENVCFG_SSE;
	EXPECT_TRUE(cfi_senvcfg_insn(v, csr_insn(1, 0, 5)));
	EXPECT_EQ(fake_csr[CSR_SENVCFG], ENVCFG_LPE | ENVCFG_SSE);
	/* cfi=off on a host without CFI: nothing to hide */
	setup(CFI_POLICY_OFF, false, false);
	EXPECT_EQ(cfi_hstateen0(&vm), HSTATEEN0_SE0 | HSTATEEN0_ENVCFG);
}

TEST(cfi_swcheck_strict_stops_vs_only)
{
	struct vcpu *v = setup(CFI_POLICY_STRICT, true, true);

	v->g.ctx.sepc = 0x80200010;
	v->g.ctx.sstatus = 0;			/* VU: injected like trap */
	fake_csr[CSR_STVAL] = SWCHECK_TVAL_SHADOW_STACK;
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_INJECTED);
	EXPECT_EQ(stop.calls, 0);
	EXPECT_EQ(redirect.calls, 1);

	v->g.ctx.sstatus = SR_SPP;		/* VS: the VM stops */
	EXPECT_EQ(cfi_swcheck_exit(v), EXIT_VM_STOP);
	EXPECT_EQ(stop.calls, 1);
	EXPECT_EQ(stop.vm, &vm);
	EXPECT_TRUE(strstr(stop.msg, "shadow stack") != NULL);
	EXPECT_TRUE(strstr(stop.msg, "0x80200010") != NULL);
	EXPECT_EQ(redirect.calls, 1);		/* not injected */
	EXPECT_EQ(v->cfi_stats.swcheck_ss, 2);
}
