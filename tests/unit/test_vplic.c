/* SPDX-License-Identifier: MIT */
/* The emulated PLIC (hyp/vdev/vplic.c) over the real guest memory layer: the
 * enable words the guest reads through its read-only page (no exit) are, at
 * every instant, the ones the model holds: after the guest's own writes,
 * after a restore and after a reset. Writes still go to the model. */
#include <stdlib.h>
#include <string.h>
#include <gstage.h>
#include <guest_mem.h>
#include <mm.h>
#include <mmio.h>
#include <vdev.h>
#include <vm.h>
#include "test.h"

#define RAM_SIZE	(4 * SZ_2M)
#define ENABLES		(VPLIC_BASE + 0x2000)	/* context c's word at + c * 0x80 */

static struct vm tvm;
static unsigned int kicks;

void vcpu_kick(struct vcpu *v)
{
	(void)v;
	kicks++;
}

void steal_note_wake(struct vcpu *v, unsigned long bits)
{
	(void)v;
	(void)bits;
}

static void vm_new(unsigned int vcpus)
{
	memset(&tvm, 0, sizeof(tvm));
	tvm.cfg.ram_gpa = VM_GUEST_RAM_BASE;
	tvm.cfg.ram_size = RAM_SIZE;
	tvm.cfg.nr_vcpus = vcpus;
	for (unsigned int i = 0; i < vcpus; i++)
		tvm.vcpus[i].vm = &tvm;
	tvm.meta_hpa = mm_alloc(vm_meta_size(RAM_SIZE), GSTAGE_ROOT_SIZE);
	vm_ram_init(&tvm);
	EXPECT_EQ(plic_ops.reg(&tvm), 0);
}

static void vm_free(void)
{
	mm_free(tvm.meta_hpa, 0);
}

/* the guest's access, as the exit path hands it to the window's handler */
static uint32_t mmio(gpa_t gpa, bool write, uint32_t value)
{
	struct mmio_region *r = vm_mmio_find(&tvm, gpa);
	struct mmio_access a = { .gpa = gpa, .width = 4, .is_write = write, .value = value };

	EXPECT_TRUE(r != NULL);
	if (!r)
		return 0;
	EXPECT_EQ(r->handle(&tvm, r->priv, &a), 0);
	return (uint32_t)a.value;
}

/* what a guest load reads without an exit: through its G-stage leaf */
static uint32_t guest_load(gpa_t gpa)
{
	hpa_t hpa = gstage_translate(tvm.gstage_root, gpa);

	EXPECT_TRUE(hpa != 0);
	return hpa ? *(volatile uint32_t *)(uintptr_t)hpa : 0xdeadbeef;
}

static void expect_page_matches_model(void)
{
	for (unsigned int c = 0; c < VPLIC_MAX_CTX; c++)
		EXPECT_EQ(guest_load(ENABLES + c * 0x80), tvm.plic.s.enable[c]);
}

TEST(vplic_enable_page_is_read_only_never_executable_and_only_that_page)
{
	uint64_t size = 0, *pte;

	vm_new(2);
	pte = gstage_lookup(tvm.gstage_root, ENABLES, &size);
	EXPECT_TRUE(pte != NULL);
	if (pte) {
		EXPECT_EQ(size, SZ_4K);
		EXPECT_TRUE(*pte & PTE_R);
		EXPECT_EQ(*pte & (PTE_W | PTE_X), 0);	/* stores trap to the model */
	}
	/* the rest of the window stays unmapped: every other register exits */
	EXPECT_EQ(gstage_translate(tvm.gstage_root, VPLIC_BASE), 0);
	EXPECT_EQ(gstage_translate(tvm.gstage_root, ENABLES - SZ_4K), 0);
	EXPECT_EQ(gstage_translate(tvm.gstage_root, ENABLES + SZ_4K), 0);
	EXPECT_EQ(gstage_translate(tvm.gstage_root, VPLIC_BASE + 0x200000), 0);
	/* never twice at one address */
	EXPECT_TRUE(vm_map_device_page(&tvm, ENABLES) == NULL);
	vm_free();
}

TEST(vplic_enable_page_follows_the_guests_writes)
{
	vm_new(2);
	expect_page_matches_model();
	mmio(ENABLES, true, 0xffffffff);		/* source 0 does not exist */
	mmio(ENABLES + 0x80, true, 0x00000a0a);
	EXPECT_EQ(guest_load(ENABLES), 0xfffffffe);
	EXPECT_EQ(guest_load(ENABLES + 0x80), 0x00000a0a);
	EXPECT_EQ(mmio(ENABLES, false, 0), 0xfffffffe);	/* the model agrees */
	/* a context the VM does not have: nothing changes, in either view */
	mmio(ENABLES + 2 * 0x80, true, 0x6);
	EXPECT_EQ(guest_load(ENABLES + 2 * 0x80), 0);
	/* a word between contexts: reads 0, as the model's window does */
	mmio(ENABLES + 4, true, 0x6);
	EXPECT_EQ(guest_load(ENABLES + 4), 0);
	mmio(ENABLES, true, 0x2);
	expect_page_matches_model();
	vm_free();
}

TEST(vplic_enable_page_follows_a_restore_and_a_reset)
{
	struct snap_dev_plic s;

	vm_new(2);
	memset(&s, 0, sizeof(s));
	s.enable[0] = 0x6;
	s.enable[1] = 0x400;
	plic_ops.load(&tvm, &s);
	EXPECT_EQ(guest_load(ENABLES), 0x6);
	EXPECT_EQ(guest_load(ENABLES + 0x80), 0x400);
	plic_ops.reset(&tvm);
	EXPECT_EQ(guest_load(ENABLES), 0);
	EXPECT_EQ(guest_load(ENABLES + 0x80), 0);
	expect_page_matches_model();
	vm_free();
}

/* The table budget (VM_DEVICE_PAGE_TABLES) holds the PLIC's page and every
 * virtio window's; one more page than VM_DEVICE_PAGES is refused. */
TEST(vm_map_device_page_maps_the_plic_and_every_virtio_window)
{
	vm_new(1);
	for (unsigned int slot = 0; slot < VIO_MMIO_SLOTS; slot++) {
		gpa_t gpa = VIO_MMIO_BASE + slot * VIO_MMIO_STRIDE;
		uint32_t *page = vm_map_device_page(&tvm, gpa);

		EXPECT_TRUE(page != NULL);
		if (page)
			EXPECT_EQ(gstage_translate(tvm.gstage_root, gpa), (uintptr_t)page);
	}
	EXPECT_TRUE(vm_map_device_page(&tvm, VIO_MMIO_BASE + VIO_MMIO_SLOTS * VIO_MMIO_STRIDE) ==
		    NULL);
	vm_free();
}

TEST(vm_map_device_page_refuses_ram_and_unaligned_addresses)
{
	memset(&tvm, 0, sizeof(tvm));
	tvm.cfg.ram_gpa = VM_GUEST_RAM_BASE;
	tvm.cfg.ram_size = RAM_SIZE;
	tvm.meta_hpa = mm_alloc(vm_meta_size(RAM_SIZE), GSTAGE_ROOT_SIZE);
	vm_ram_init(&tvm);
	EXPECT_TRUE(vm_map_device_page(&tvm, VM_GUEST_RAM_BASE) == NULL);
	EXPECT_TRUE(vm_map_device_page(&tvm, VM_GUEST_RAM_BASE - 8) == NULL);
	EXPECT_TRUE(vm_map_device_page(&tvm, VM_GUEST_RAM_BASE + RAM_SIZE - SZ_4K) == NULL);
	EXPECT_TRUE(vm_map_device_page(&tvm, ENABLES + 4) == NULL);
	EXPECT_TRUE(vm_map_device_page(&tvm, VM_GUEST_RAM_BASE + RAM_SIZE) != NULL);
	vm_free();
}
