/* SPDX-License-Identifier: MIT */
/* The operator's pause and resume (hyp/host/vmops.c) and a VM's disks and
 * NICs (issue 25, device state): a pause freezes the devices and completes
 * only once they are drained (every request a host device had is in the
 * guest's used ring), so a snapshot or a migration's switchover never takes
 * a state with a request half done; a resume rescans every queue. The VM
 * lifecycle below vmops is stubbed: each call is recorded. */
#include <string.h>
#include <errno.h>
#include <console.h>
#include <migrate.h>
#include <sched.h>
#include <snapshot.h>
#include <vio_mmio.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include <vmops.h>
#include "test.h"

struct vm vms[VM_MAX];
unsigned int nr_vms;

static struct {
	bool off_cpu, drained, idle;
	bool files_held;	/* a vCPU of the VM holds a guest interrupt file */
	unsigned int release_asks;
	unsigned int freezes, resumes, drain_looks, settles, done_calls;
	struct vm *done_vm;
} st;

/* ---- what vmops calls ---- */

void sched_lock(void)
{
}

void sched_unlock(void)
{
}

bool vm_off_cpu(const struct vm *vm)
{
	(void)vm;
	return st.off_cpu;
}

bool imsic_files_vm_released(struct vm *vm)
{
	(void)vm;
	st.release_asks++;
	return !st.files_held;
}

int vm_request_pause(struct vm *vm)
{
	if (vm->state != VM_RUNNING)
		return -HYP_EINVAL;
	vm->state = VM_PAUSING;
	return 0;
}

bool vm_pause_settle(struct vm *vm)
{
	st.settles++;
	vm->state = VM_PAUSED;
	return true;
}

int vm_resume(struct vm *vm)
{
	if (vm->state != VM_PAUSED)
		return -HYP_EINVAL;
	vm->state = VM_RUNNING;
	return 0;
}

int vm_wake(struct vm *vm)
{
	(void)vm;
	return 0;
}

int vm_request_destroy(struct vm *vm)
{
	vm->state = VM_DESTROYING;
	return 0;
}

uint64_t vm_destroy_finish(struct vm *vm)
{
	vm->state = VM_EMPTY;
	return 0;
}

void console_vm_flush(struct vm *vm)
{
	(void)vm;
}

void pr_info(const char *fmt, ...)
{
	(void)fmt;
}

bool snap_holds_paused(const struct vm *vm)
{
	(void)vm;
	return false;
}

bool snap_saving(const struct vm *vm)
{
	(void)vm;
	return false;
}

bool mig_sending(const struct vm *vm)
{
	(void)vm;
	return false;
}

bool mig_receiving(const struct vm *vm)
{
	(void)vm;
	return false;
}

bool mig_recv_cancel(struct vm *vm, uint64_t *freed)
{
	(void)vm;
	(void)freed;
	return false;
}

void vio_freeze(struct vm *vm)
{
	(void)vm;
	st.freezes++;
}

bool vio_drained(struct vm *vm)
{
	(void)vm;
	st.drain_looks++;
	return st.drained;
}

void vio_resume(struct vm *vm)
{
	(void)vm;
	st.resumes++;
}

bool vio_quiesce(struct vm *vm)
{
	(void)vm;
	return st.idle;
}

/* ---- the tests ---- */

static void paused(void *ctx, struct vm *vm, uint64_t result)
{
	(void)ctx;
	(void)result;
	st.done_calls++;
	st.done_vm = vm;
}

static struct vm *running_vm(void)
{
	memset(vms, 0, sizeof(vms));
	memset(&st, 0, sizeof(st));
	nr_vms = 1;
	vms[0].state = VM_RUNNING;
	strcpy(vms[0].cfg.name, "alpha");
	return &vms[0];
}

TEST(pause_freezes_the_devices_and_waits_for_their_drain)
{
	struct vm *vm = running_vm();

	EXPECT_EQ(vmop_pause(vm, paused, NULL), 0);
	EXPECT_EQ(st.freezes, 1);		/* no new request from here on */
	vmops_poll();				/* the vCPUs are still on their harts */
	EXPECT_EQ(st.done_calls, 0);
	st.off_cpu = true;
	vmops_poll();				/* off their harts, a request in flight */
	vmops_poll();
	EXPECT_EQ(st.done_calls, 0);
	EXPECT_TRUE(st.drain_looks >= 2);
	EXPECT_EQ(vm->state, VM_PAUSING);
	EXPECT_TRUE(vmops_pending());		/* hart 0 looks again soon */
	st.drained = true;			/* its completion is in the used ring */
	vmops_poll();
	EXPECT_EQ(st.done_calls, 1);
	EXPECT_TRUE(st.done_vm == vm);
	EXPECT_EQ(vm->state, VM_PAUSED);
	EXPECT_TRUE(!vmops_pending());
}

/* a destroyed VM's guest interrupt files go back (zeroed) before its memory
 * and its slot do: another VM may get them next */
TEST(destroy_waits_for_the_guest_files)
{
	struct vm *vm = running_vm();

	st.off_cpu = st.idle = true;
	st.files_held = true;
	EXPECT_EQ(vmop_destroy(vm, paused, NULL), 0);
	vmops_poll();
	vmops_poll();
	EXPECT_EQ(st.done_calls, 0);
	EXPECT_EQ(vm->state, VM_DESTROYING);
	EXPECT_TRUE(st.release_asks >= 2);	/* asked again at each look */
	st.files_held = false;
	vmops_poll();
	EXPECT_EQ(st.done_calls, 1);
	EXPECT_EQ(vm->state, VM_EMPTY);
}

TEST(resume_rescans_the_devices)
{
	struct vm *vm = running_vm();

	st.off_cpu = st.drained = true;
	EXPECT_EQ(vmop_pause(vm, paused, NULL), 0);
	vmops_poll();
	EXPECT_EQ(vm->state, VM_PAUSED);
	EXPECT_EQ(vmop_resume(vm), 0);
	EXPECT_EQ(st.resumes, 1);		/* what the guest made available meanwhile */
	EXPECT_EQ(vm->state, VM_RUNNING);
	/* a resume that changes nothing rescans nothing */
	EXPECT_TRUE(vmop_resume(vm) != 0);
	EXPECT_EQ(st.resumes, 1);
}

TEST(a_pause_refused_freezes_nothing)
{
	struct vm *vm = running_vm();

	vm->state = VM_PAUSED;
	EXPECT_TRUE(vmop_pause(vm, paused, NULL) != 0);
	EXPECT_EQ(st.freezes, 0);
}
