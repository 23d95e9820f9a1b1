/* SPDX-License-Identifier: MIT */
/* SBI STA: set_shmem's argument checks (hyp/vsbi/vsbi_sta.c) and the steal
 * computation and record update (hyp/state/steal_time.c). Guest RAM is a small
 * host buffer; vm_gpa_to_hva(), time_now() and timebase_hz are defined here. */
#include <string.h>
#include <arch/riscv/encoding.h>
#include <abi/sbi_defs.h>
#include <abi/sbi_sta.h>
#include <guest_mem.h>
#include <hart.h>
#include <steal_time.h>
#include <vm.h>
#include <vsbi.h>
#include "test.h"

#define RAM_GPA		0x80000000UL
#define RAM_SIZE	0x10000UL

uint64_t timebase_hz = 10000000;	/* QEMU virt: 100 ns a tick */
static uint64_t fake_time;
static unsigned char ram[RAM_SIZE] __attribute__((aligned(64)));
static bool ram_busy;	/* a live snapshot cannot copy the chunk now */

uint64_t time_now(void)
{
	return fake_time;
}

bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	return range_within(gpa, len, vm->cfg.ram_gpa, vm->cfg.ram_size);
}

void *vm_gpa_to_hva(struct vm *vm, gpa_t gpa, uint64_t len, bool write)
{
	(void)write;
	if (!vm_gpa_range_is_ram(vm, gpa, len) || ram_busy)
		return NULL;
	return ram + (gpa - RAM_GPA);
}

static struct vm vm;

static struct vcpu *setup(void)
{
	memset(&vm, 0, sizeof(vm));
	memset(ram, 0x5a, sizeof(ram));
	ram_busy = false;
	fake_time = 1000000;
	vm.cfg.ram_gpa = RAM_GPA;
	vm.cfg.ram_size = RAM_SIZE;
	vm.cfg.nr_vcpus = 2;
	vm.state = VM_RUNNING;
	for (unsigned int i = 0; i < 2; i++) {
		vm.vcpus[i].vm = &vm;
		vm.vcpus[i].id = i;
		vm.vcpus[i].hart = -1;
		vm.vcpus[i].g.hsm.state = VCPU_HSM_STARTED;
		vm.vcpus[i].g.csr.vstimecmp = -1UL;
		steal_vcpu_reset(&vm.vcpus[i]);
	}
	return &vm.vcpus[0];
}

static struct sbi_sta_record *rec_at(gpa_t gpa)
{
	return (struct sbi_sta_record *)(ram + (gpa - RAM_GPA));
}

static struct vsbi_ret call(struct vcpu *v, unsigned long fid, unsigned long lo,
			    unsigned long hi, unsigned long flags)
{
	struct vsbi_ret ret = { .error = 12345, .value = 777, .action = EXIT_RESUME };

	VSBI_ARG(v, 0) = lo;
	VSBI_ARG(v, 1) = hi;
	VSBI_ARG(v, 2) = flags;
	vsbi_sta.call(v, fid, &ret);
	return ret;
}

static long set(struct vcpu *v, unsigned long lo, unsigned long hi, unsigned long flags)
{
	struct vsbi_ret r = call(v, SBI_STA_STEAL_TIME_SET_SHMEM, lo, hi, flags);

	EXPECT_EQ(r.value, 0);	/* value is 0 on success and on every error */
	return r.error;
}

static bool ram_untouched(void)
{
	for (unsigned long i = 0; i < RAM_SIZE; i++)
		if (ram[i] != 0x5a)
			return false;
	return true;
}

/* ---- set_shmem: arguments ---- */

TEST(sta_unknown_function)
{
	struct vcpu *v = setup();

	EXPECT_EQ(call(v, 1, RAM_GPA, 0, 0).error, SBI_ERR_NOT_SUPPORTED);
	EXPECT_FALSE(v->g.sta.enabled);
}

TEST(sta_flags_must_be_zero)
{
	struct vcpu *v = setup();

	EXPECT_EQ(set(v, RAM_GPA, 0, 1), SBI_ERR_INVALID_PARAM);
	/* an unsigned long, not a uint32: the upper half counts */
	EXPECT_EQ(set(v, RAM_GPA, 0, 1UL << 32), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(set(v, -1UL, -1UL, 1UL << 63), SBI_ERR_INVALID_PARAM);
	EXPECT_FALSE(v->g.sta.enabled);
	EXPECT_TRUE(ram_untouched());
}

TEST(sta_misaligned_is_invalid_param)
{
	struct vcpu *v = setup();

	EXPECT_EQ(set(v, RAM_GPA + 8, 0, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(set(v, RAM_GPA + 32, 0, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(set(v, RAM_GPA + 63, 0, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(set(v, -1UL, 0, 0), SBI_ERR_INVALID_PARAM);	/* half a disable pair */
	/* alignment before the address: misaligned and outside RAM */
	EXPECT_EQ(set(v, 0x40000008UL, 0, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(set(v, RAM_GPA + RAM_SIZE - 32, 0, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_FALSE(v->g.sta.enabled);
	EXPECT_TRUE(ram_untouched());
}

TEST(sta_outside_ram_is_invalid_address)
{
	struct vcpu *v = setup();

	EXPECT_EQ(set(v, 0x40000000UL, 0, 0), SBI_ERR_INVALID_ADDRESS);
	EXPECT_EQ(set(v, RAM_GPA - 64, 0, 0), SBI_ERR_INVALID_ADDRESS);
	EXPECT_EQ(set(v, RAM_GPA + RAM_SIZE, 0, 0), SBI_ERR_INVALID_ADDRESS);
	EXPECT_EQ(set(v, -64UL, 0, 0), SBI_ERR_INVALID_ADDRESS);	/* would wrap */
	EXPECT_EQ(set(v, 0, 0, 0), SBI_ERR_INVALID_ADDRESS);
	EXPECT_EQ(set(v, RAM_GPA, 1, 0), SBI_ERR_INVALID_ADDRESS);	/* hi != 0 on RV64 */
	EXPECT_EQ(set(v, RAM_GPA, -1UL, 0), SBI_ERR_INVALID_ADDRESS);	/* half a disable pair */
	EXPECT_FALSE(v->g.sta.enabled);
	EXPECT_TRUE(ram_untouched());
}

TEST(sta_set_zeroes_exactly_the_record)
{
	struct vcpu *v = setup();
	gpa_t gpa = RAM_GPA + 0x1040;

	EXPECT_EQ(set(v, gpa, 0, 0), SBI_SUCCESS);
	EXPECT_TRUE(v->g.sta.enabled);
	EXPECT_EQ(v->g.sta.shmem, gpa);
	for (unsigned long i = 0; i < RAM_SIZE; i++) {
		bool in = i >= gpa - RAM_GPA && i < gpa - RAM_GPA + 64;

		if (ram[i] != (in ? 0 : 0x5a)) {
			EXPECT_EQ(i, -1UL);	/* the first wrong byte */
			break;
		}
	}
	/* the last 64 bytes of RAM are a valid record */
	EXPECT_EQ(set(v, RAM_GPA + RAM_SIZE - 64, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(v->g.sta.shmem, RAM_GPA + RAM_SIZE - 64);
}

TEST(sta_disable_and_reenable)
{
	struct vcpu *v = setup();

	EXPECT_EQ(set(v, RAM_GPA, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(set(v, -1UL, -1UL, 0), SBI_SUCCESS);
	EXPECT_FALSE(v->g.sta.enabled);
	EXPECT_EQ(v->g.sta.shmem, 0);
	EXPECT_EQ(set(v, -1UL, -1UL, 0), SBI_SUCCESS);	/* while disabled */
	memset(ram, 0x77, 64);
	EXPECT_EQ(set(v, RAM_GPA, 0, 0), SBI_SUCCESS);
	EXPECT_TRUE(v->g.sta.enabled);
	EXPECT_EQ(rec_at(RAM_GPA)->sequence, 0);
	EXPECT_EQ(rec_at(RAM_GPA)->steal, 0);
	EXPECT_EQ(ram[63], 0);
}

TEST(sta_set_fails_cleanly_when_memory_is_busy)
{
	struct vcpu *v = setup();

	ram_busy = true;
	EXPECT_EQ(set(v, RAM_GPA, 0, 0), SBI_ERR_FAILED);
	EXPECT_FALSE(v->g.sta.enabled);
}

/* ---- the steal computation ---- */

TEST(steal_wait_ticks_cases)
{
	const uint64_t none = ~0ULL;

	/* preempted: ready from the moment it left */
	EXPECT_EQ(steal_wait_ticks(100, 100, none, 350), 250);
	/* idle, nothing made it ready: no steal however long it was off */
	EXPECT_EQ(steal_wait_ticks(100, 0, none, 100000), 0);
	/* idle, its timer fired at 200 */
	EXPECT_EQ(steal_wait_ticks(100, 0, 200, 350), 150);
	/* a timer that had fired before it left counts from the leaving */
	EXPECT_EQ(steal_wait_ticks(100, 0, 50, 350), 250);
	/* a timer still in the future: not ready by that */
	EXPECT_EQ(steal_wait_ticks(100, 0, 400, 350), 0);
	/* an interrupt at 300 and the timer at 200: the earlier one */
	EXPECT_EQ(steal_wait_ticks(100, 300, 200, 350), 150);
	EXPECT_EQ(steal_wait_ticks(100, 200, 300, 350), 150);
	/* never ran since reset */
	EXPECT_EQ(steal_wait_ticks(none, 0, 50, 350), 0);
	EXPECT_EQ(steal_wait_ticks(none, 10, none, 350), 0);
	/* a stamp from the future (racy writer): nothing, never a wrap */
	EXPECT_EQ(steal_wait_ticks(100, 400, none, 350), 0);
}

TEST(steal_ticks_to_ns_without_overflow)
{
	EXPECT_EQ(steal_ticks_to_ns(1, 10000000), 100);
	EXPECT_EQ(steal_ticks_to_ns(12345, 10000000), 1234500);
	EXPECT_EQ(steal_ticks_to_ns(1, 3), 333333333);
	EXPECT_EQ(steal_ticks_to_ns(4, 3), 1333333333);
	/* ten years at 10 MHz: ticks * 1e9 would overflow 64 bits */
	EXPECT_EQ(steal_ticks_to_ns(10ULL * 365 * 86400 * 10000000, 10000000),
		  10ULL * 365 * 86400 * 1000000000);
	EXPECT_EQ(steal_ticks_to_ns(0, 10000000), 0);
}

TEST(steal_record_sequence_protocol)
{
	struct sbi_sta_record r = { .preempted = 1, .steal = 5 };

	steal_record_add(&r, 100);
	EXPECT_EQ(r.sequence, 2);	/* odd during, even after */
	EXPECT_EQ(r.steal, 105);
	EXPECT_EQ(r.preempted, 0);
	steal_record_add(&r, 0);	/* nothing to add: sequence unchanged */
	EXPECT_EQ(r.sequence, 2);
	r.preempted = 1;
	steal_record_add(&r, 0);
	EXPECT_EQ(r.preempted, 0);	/* cleared before every run */
	r.sequence = 5;			/* the guest scribbled an odd value */
	steal_record_add(&r, 1);
	EXPECT_EQ(r.sequence & 1, 0);
	EXPECT_EQ(r.sequence, 8);
	EXPECT_EQ(r.steal, 106);
}

/* ---- out/in around a switch ---- */

static struct sbi_sta_record *enable(struct vcpu *v)
{
	EXPECT_EQ(set(v, RAM_GPA + 64 * v->id, 0, 0), SBI_SUCCESS);
	return rec_at(RAM_GPA + 64 * v->id);
}

TEST(steal_preempted_vcpu_counts_its_wait)
{
	struct vcpu *v = setup();
	struct sbi_sta_record *r = enable(v);

	steal_vcpu_in(v);		/* first run since reset: nothing */
	EXPECT_EQ(r->steal, 0);
	EXPECT_EQ(r->sequence, 0);
	fake_time = 2000000;
	steal_vcpu_out(v);		/* slice over, still runnable */
	EXPECT_EQ(r->preempted, 1);
	EXPECT_TRUE(v->requests & VCPU_REQ_STEAL);	/* in runs before its next entry */
	fake_time = 2000500;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 500 * 100);
	EXPECT_EQ(r->sequence, 2);
	EXPECT_EQ(r->preempted, 0);
}

TEST(steal_wfi_is_idle_until_an_interrupt)
{
	struct vcpu *v = setup();
	struct sbi_sta_record *r = enable(v);

	steal_vcpu_in(v);
	/* WFI with no interrupt enabled: never ready, never steal */
	v->g.hsm.waiting = true;
	fake_time = 2000000;
	steal_vcpu_out(v);
	EXPECT_EQ(r->preempted, 0);
	fake_time = 9000000;
	v->g.hsm.waiting = false;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 0);

	/* WFI, its timer (enabled) fires at 3000000 host time; picked 40 ticks later */
	v->g.hsm.waiting = true;
	v->g.csr.vsie = MIP_STIP;	/* guest layout: STIE */
	vm.htimedelta = 1000;
	v->g.csr.vstimecmp = 3000000 + 1000;
	fake_time = 2500000;
	steal_vcpu_out(v);
	fake_time = 3000040;
	v->g.hsm.waiting = false;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 40 * 100);

	/* the same timer, but masked in vsie: no steal */
	v->g.csr.vsie = 0;
	v->g.hsm.waiting = true;
	fake_time = 3500000;
	steal_vcpu_out(v);
	fake_time = 3500000 + 900;
	v->g.hsm.waiting = false;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 40 * 100);
}

/* The review's finding: with a negative htimedelta (restored 5 s behind the
 * host's clock) a vCPU waiting with its timer enabled but off (vstimecmp -1)
 * was found "ready" since host time |htimedelta| - 1: all its idle time was
 * reported to the guest as steal. */
TEST(steal_negative_htimedelta_idle_is_not_steal)
{
	struct vcpu *v = setup();
	struct sbi_sta_record *r = enable(v);

	vm.htimedelta = (uint64_t)-50000000LL;
	fake_time = 60000000;
	steal_vcpu_in(v);
	v->g.hsm.waiting = true;
	v->g.csr.vsie = MIP_STIP;	/* guest layout: STIE */
	v->g.csr.vstimecmp = -1UL;
	steal_vcpu_out(v);
	fake_time = 90000000;		/* 3 s idle, then an IPI (not STIE) picked it */
	v->g.hsm.waiting = false;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 0);

	/* its timer at guest time 40 000 000 (host 90 000 000) fires; picked 40
	 * ticks later: that much is steal */
	v->g.hsm.waiting = true;
	v->g.csr.vstimecmp = 40000000;
	steal_vcpu_out(v);
	fake_time = 90000040;
	v->g.hsm.waiting = false;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 40 * 100);
}

TEST(steal_posted_interrupt_makes_it_ready)
{
	struct vcpu *v = setup();
	struct sbi_sta_record *r = enable(v);

	steal_vcpu_in(v);
	v->g.hsm.waiting = true;
	v->g.csr.vsie = MIP_SSIP;	/* guest layout: SSIE */
	fake_time = 2000000;
	steal_vcpu_out(v);
	fake_time = 2000100;
	steal_note_wake(v, MIP_VSTIP);	/* not enabled: ignored */
	fake_time = 2000200;
	steal_note_wake(v, MIP_VSSIP);	/* an IPI it waits for */
	fake_time = 2000300;
	steal_note_wake(v, MIP_VSSIP);	/* a second one: the first counts */
	fake_time = 2000700;
	v->g.hsm.waiting = false;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 500 * 100);

	/* posted while it runs: nothing to note */
	v->hart = 0;
	steal_note_wake(v, MIP_VSSIP);
	EXPECT_EQ(v->steal.ready_at, 0);
}

TEST(steal_pause_is_not_steal)
{
	struct vcpu *v = setup();
	struct sbi_sta_record *r = enable(v);

	steal_vcpu_in(v);
	vm.state = VM_PAUSING;		/* kicked off its hart by a pause */
	fake_time = 2000000;
	steal_vcpu_out(v);
	EXPECT_EQ(r->preempted, 0);	/* no writes to a VM that is not running */
	fake_time = 5000000;
	steal_vm_resumed(&vm, fake_time);
	vm.state = VM_RUNNING;
	fake_time = 5000300;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 300 * 100);
}

TEST(steal_unreported_until_the_record_is_writable)
{
	struct vcpu *v = setup();
	struct sbi_sta_record *r = enable(v);

	steal_vcpu_in(v);
	fake_time = 2000000;
	steal_vcpu_out(v);
	fake_time = 2000100;
	ram_busy = true;
	steal_vcpu_in(v);
	ram_busy = false;
	EXPECT_EQ(r->steal, 0);
	fake_time = 2001000;
	steal_vcpu_out(v);
	fake_time = 2001200;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 300 * 100);	/* both waits */
	/* a new record starts from 0, without the old one's leftovers */
	ram_busy = true;
	fake_time = 2002000;
	steal_vcpu_out(v);
	fake_time = 2002100;
	steal_vcpu_in(v);
	ram_busy = false;
	r = enable(v);
	fake_time = 2003000;
	steal_vcpu_out(v);
	fake_time = 2003001;
	steal_vcpu_in(v);
	EXPECT_EQ(r->steal, 100);
}

TEST(steal_total_counts_each_wait_once_and_outlives_a_reset)
{
	struct vcpu *v = setup();

	enable(v);
	steal_vcpu_in(v);
	fake_time = 2000000;
	steal_vcpu_out(v);
	fake_time = 2000100;
	ram_busy = true;		/* the record cannot take it yet: counted now */
	steal_vcpu_in(v);
	ram_busy = false;
	EXPECT_EQ(v->steal.total_ns, 100 * 100);
	fake_time = 2001000;
	steal_vcpu_out(v);
	fake_time = 2001200;
	steal_vcpu_in(v);		/* reports both waits; counts the new one only */
	EXPECT_EQ(v->steal.total_ns, 300 * 100);
	steal_vcpu_reset(v);		/* a reboot: the VM's total goes on (metrics) */
	EXPECT_EQ(v->steal.total_ns, 300 * 100);
}

TEST(steal_records_are_per_vcpu)
{
	struct vcpu *a = setup(), *b = &vm.vcpus[1];
	struct sbi_sta_record *ra = enable(a), *rb = enable(b);

	steal_vcpu_in(a);
	steal_vcpu_in(b);
	fake_time = 2000000;
	steal_vcpu_out(a);
	fake_time = 2000010;
	steal_vcpu_in(a);
	EXPECT_EQ(ra->steal, 1000);
	EXPECT_EQ(rb->steal, 0);
	EXPECT_EQ(rb->sequence, 0);
}
