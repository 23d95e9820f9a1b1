/* SPDX-License-Identifier: MIT */
/* hyp/vsbi/vsbi_susp.c (SBI SUSP system_suspend: argument checks, the other
 * harts' states, what a successful call leaves for the run loop) and the
 * suspend helper it shares with hyp/vsbi/vsbi_hsm.c. The scheduler lock,
 * vcpu_reset() and the RAM check are stubs defined here. */
#include <string.h>
#include <arch/riscv/encoding.h>
#include <abi/sbi_defs.h>
#include <exit_action.h>
#include <guest_mem.h>
#include <vm.h>
#include <vsbi.h>
#include "test.h"

#define RAM_BASE	0x80000000UL
#define RAM_SIZE	0x08000000UL
#define RESUME		(RAM_BASE + 0x200000)
#define OPAQUE		0x5eed5eed00c0ffeeUL

/* ---- stubs ---- */

static int lock_depth, lock_calls;

void sched_lock(void)
{
	lock_depth++;
	lock_calls++;
}

void sched_unlock(void)
{
	lock_depth--;
}

void sched_kick_idle(void)
{
}

static unsigned long reset_entry;

void vcpu_reset(struct vcpu *v, unsigned long entry, unsigned long arg)
{
	(void)v;
	(void)arg;
	reset_entry = entry;
}

/* the contract of hyp/mm/guest_mem.c: the whole range inside RAM, no wrap */
bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	return gpa >= vm->cfg.ram_gpa && len <= vm->cfg.ram_size &&
	       gpa - vm->cfg.ram_gpa <= vm->cfg.ram_size - len;
}

/* ---- setup ---- */

static struct vm vm;

/* A 3-vCPU VM: vCPU 0 calls, the others as @other_state, off their harts. */
static struct vcpu *setup(enum vcpu_hsm_state other_state)
{
	memset(&vm, 0, sizeof(vm));
	lock_depth = lock_calls = 0;
	vm.cfg.nr_vcpus = 3;
	vm.cfg.ram_gpa = RAM_BASE;
	vm.cfg.ram_size = RAM_SIZE;
	vm.state = VM_RUNNING;
	for (unsigned int i = 0; i < vm.cfg.nr_vcpus; i++) {
		vm.vcpus[i].vm = &vm;
		vm.vcpus[i].id = i;
		vm.vcpus[i].hart = -1;
		vm.vcpus[i].g.hsm.state = other_state;
	}
	vm.vcpus[0].g.hsm.state = VCPU_HSM_STARTED;
	vm.vcpus[0].hart = 0;	/* the caller is on a hart */
	return &vm.vcpus[0];
}

static struct vsbi_ret call(struct vcpu *v, unsigned long fid, unsigned long type,
			    unsigned long addr, unsigned long opaque)
{
	struct vsbi_ret ret = { .error = SBI_ERR_NOT_SUPPORTED, .action = EXIT_RESUME };

	VSBI_ARG(v, 0) = type;
	VSBI_ARG(v, 1) = addr;
	VSBI_ARG(v, 2) = opaque;
	vsbi_susp.call(v, fid, &ret);
	return ret;
}

/* A refused call returns to the caller and leaves it running. */
static void expect_refused(struct vcpu *v, struct vsbi_ret r, long err)
{
	EXPECT_EQ(r.error, err);
	EXPECT_EQ(r.action, EXIT_RESUME);
	EXPECT_EQ(v->g.hsm.state, VCPU_HSM_STARTED);
	EXPECT_FALSE(v->g.hsm.waiting);
	EXPECT_FALSE(v->g.hsm.system);
	EXPECT_FALSE(v->g.hsm.resume_nonret);
	EXPECT_EQ(lock_depth, 0);
}

TEST(susp_registry_entry)
{
	EXPECT_EQ(vsbi_susp.eid_first, 0x53555350UL);
	EXPECT_EQ(vsbi_susp.eid_last, 0x53555350UL);
	EXPECT_EQ(vsbi_susp.probe, NULL);	/* every VM has it */
}

TEST(susp_unknown_function)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	expect_refused(v, call(v, 1, 0, RESUME, 0), SBI_ERR_NOT_SUPPORTED);
	expect_refused(v, call(v, -1UL, 0, RESUME, 0), SBI_ERR_NOT_SUPPORTED);
}

TEST(susp_reserved_types)
{
	static const unsigned long types[] = { 1, 2, 0x7fffffff };
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	for (unsigned int i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		expect_refused(v, call(v, 0, types[i], RESUME, 0), SBI_ERR_INVALID_PARAM);
}

TEST(susp_platform_types_unimplemented)
{
	static const unsigned long types[] = { 0x80000000, 0x80000001, 0xffffffff };
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	/* platform-specific and none implemented: INVALID_PARAM (v3.0 table) */
	for (unsigned int i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		expect_refused(v, call(v, 0, types[i], RESUME, 0), SBI_ERR_INVALID_PARAM);
}

TEST(susp_type_checked_before_address_and_harts)
{
	struct vcpu *v = setup(VCPU_HSM_STARTED);

	expect_refused(v, call(v, 0, 1, 0, 0), SBI_ERR_INVALID_PARAM);
	/* upper 32 bits ignored, but 0x1_00000001 truncates to a reserved 1 */
	expect_refused(v, call(v, 0, (1UL << 32) | 1, RESUME, 0), SBI_ERR_INVALID_PARAM);
}

TEST(susp_bad_resume_address)
{
	static const unsigned long bad[] = { 0, RAM_BASE - 4, RAM_BASE + RAM_SIZE,
					     RAM_BASE + RAM_SIZE - 2, -4UL, 0x40000000 };
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused(v, call(v, 0, 0, bad[i], 0), SBI_ERR_INVALID_ADDRESS);
}

TEST(susp_address_checked_before_harts)
{
	struct vcpu *v = setup(VCPU_HSM_STARTED);

	expect_refused(v, call(v, 0, 0, 0x1000, 0), SBI_ERR_INVALID_ADDRESS);
}

TEST(susp_denied_while_another_hart_started)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	vm.vcpus[2].g.hsm.state = VCPU_HSM_STARTED;
	expect_refused(v, call(v, 0, 0, RESUME, 0), SBI_ERR_DENIED);
	EXPECT_EQ(lock_calls, 1);	/* looked at under the scheduler lock */
}

TEST(susp_denied_while_another_hart_suspended)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	vm.vcpus[1].g.hsm.state = VCPU_HSM_SUSPENDED;
	vm.vcpus[1].g.hsm.waiting = true;
	expect_refused(v, call(v, 0, 0, RESUME, 0), SBI_ERR_DENIED);
}

TEST(susp_denied_while_another_hart_stop_pending)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	vm.vcpus[1].hart = 1;	/* stopped but still on its hart: STOP_PENDING */
	expect_refused(v, call(v, 0, 0, RESUME, 0), SBI_ERR_DENIED);
	vm.vcpus[1].hart = -1;
	EXPECT_EQ(call(v, 0, 0, RESUME, 0).error, SBI_SUCCESS);
}

static void expect_suspended(struct vcpu *v, struct vsbi_ret r, unsigned long addr,
			     unsigned long opaque)
{
	EXPECT_EQ(r.error, SBI_SUCCESS);
	EXPECT_EQ(r.action, EXIT_YIELD);	/* gives the hart away */
	EXPECT_EQ(v->g.hsm.state, VCPU_HSM_SUSPENDED);
	EXPECT_TRUE(v->g.hsm.waiting);		/* skipped until a wake-up interrupt */
	EXPECT_TRUE(v->g.hsm.resume_nonret);	/* restarts at resume_addr */
	EXPECT_TRUE(v->g.hsm.system);
	EXPECT_EQ(v->g.hsm.resume_addr, addr);
	EXPECT_EQ(v->g.hsm.resume_opaque, opaque);
	EXPECT_EQ(lock_depth, 0);
}

TEST(susp_suspend_to_ram)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	expect_suspended(v, call(v, 0, 0, RESUME, OPAQUE), RESUME, OPAQUE);
	/* the other vCPUs are untouched */
	EXPECT_EQ(vm.vcpus[1].g.hsm.state, VCPU_HSM_STOPPED);
	EXPECT_FALSE(vm.vcpus[1].g.hsm.system);
}

TEST(susp_upper_bits_of_type_ignored)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	expect_suspended(v, call(v, 0, 0xffffffff00000000UL, RESUME, 7), RESUME, 7);
}

TEST(susp_resume_address_edges)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	expect_suspended(v, call(v, 0, 0, RAM_BASE, 0), RAM_BASE, 0);
	v = setup(VCPU_HSM_STOPPED);
	expect_suspended(v, call(v, 0, 0, RAM_BASE + RAM_SIZE - 4, 0), RAM_BASE + RAM_SIZE - 4, 0);
}

TEST(susp_single_vcpu_vm)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	vm.cfg.nr_vcpus = 1;
	vm.vcpus[1].g.hsm.state = VCPU_HSM_STARTED;	/* not part of this VM */
	expect_suspended(v, call(v, 0, 0, RESUME, 1), RESUME, 1);
}

/* The helper HSM uses too: an HSM suspend is never the VM's. */
TEST(susp_hsm_suspend_is_not_system)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);
	struct vsbi_ret r = { .error = SBI_ERR_NOT_SUPPORTED, .action = EXIT_RESUME };

	v->g.hsm.system = true;	/* left over from an earlier system suspend */
	VSBI_ARG(v, 0) = SBI_HSM_SUSPEND_NON_RET_DEFAULT;
	VSBI_ARG(v, 1) = RESUME;
	VSBI_ARG(v, 2) = 3;
	vsbi_hsm.call(v, SBI_HSM_HART_SUSPEND, &r);
	EXPECT_EQ(r.error, SBI_SUCCESS);
	EXPECT_EQ(r.action, EXIT_YIELD);
	EXPECT_TRUE(v->g.hsm.resume_nonret);
	EXPECT_EQ(v->g.hsm.resume_opaque, 3);
	EXPECT_FALSE(v->g.hsm.system);
}

/* sepc[0] is read-only 0: an odd start or resume address loses bit 0, as the
 * firmware's mret would drop it on bare hardware (never an odd guest pc). */
TEST(susp_odd_resume_address_loses_bit_0)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);

	expect_suspended(v, call(v, 0, 0, RESUME + 1, OPAQUE), RESUME, OPAQUE);
}

TEST(hsm_odd_start_address_loses_bit_0)
{
	struct vcpu *v = setup(VCPU_HSM_STOPPED);
	struct vsbi_ret ret = { .error = SBI_ERR_NOT_SUPPORTED, .action = EXIT_RESUME };

	reset_entry = 0;
	VSBI_ARG(v, 0) = 1;		/* hart 1, stopped */
	VSBI_ARG(v, 1) = RESUME + 3;
	VSBI_ARG(v, 2) = OPAQUE;
	vsbi_hsm.call(v, SBI_HSM_HART_START, &ret);
	EXPECT_EQ(ret.error, SBI_SUCCESS);
	EXPECT_EQ(reset_entry, RESUME + 2);
}
