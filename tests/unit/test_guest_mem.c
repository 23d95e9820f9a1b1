/* SPDX-License-Identifier: MIT */
/* hyp/mm/guest_mem.c and hyp/mm/dirty_log.c over hyp/mm/gstage.c: while a
 * VM's writes are logged, no G-stage leaf that lets a guest write a page
 * whose write is not logged may ever be visible, not even for an instant:
 * another hart could cache it and write unlogged until its next flush (the
 * destination of a migration would then keep a stale page).
 *
 * The G-stage functions guest_mem.c and dirty_log.c call are wrapped at link
 * time (-Wl,--wrap, tests/unit/unit.mk): each wrapper compares the VM's
 * tables before and after the real call and checks every entry it changed.
 * So an entry installed and fixed again within one guest_mem.c call is seen
 * too, which a look after the call could never catch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arch/riscv/encoding.h>
#include <errno.h>
#include <gstage.h>
#include <guest_mem.h>
#include <mm.h>
#include <tlb.h>
#include <vm.h>
#include "test.h"

#define RAM_SIZE	(8 * SZ_2M)
#define CHUNKS		(RAM_SIZE / SZ_2M)
#define PAGES		(RAM_SIZE / PAGE_SIZE)
#define GPA(c, p)	(VM_GUEST_RAM_BASE + (uint64_t)(c) * SZ_2M + (uint64_t)(p) * PAGE_SIZE)

static struct vm tvm;
static unsigned int violations, checks;
static char first_violation[160];

/* ---- what guest_mem.c needs beside gstage.c (the allocator:
 * host_memory.c) ---- */

static unsigned int flushes;

void tlb_flush_vm_gstage(struct vm *vm)
{
	(void)vm;
	flushes++;
}

void tlb_local_gstage(const struct vm *vm)
{
	(void)vm;
}

/* ---- the checker ---- */

/* A chunk's entries: its level-1 entry and, if it points to a table, the
 * table's 512 leaves. */
struct chunk_view {
	uint64_t pmd;
	uint64_t leaf[512];
};
static struct chunk_view before[CHUNKS];

static void view(struct chunk_view *v)
{
	for (unsigned int c = 0; c < CHUNKS; c++) {
		uint64_t *pmd = gstage_pmd(tvm.gstage_root, GPA(c, 0));

		v[c].pmd = pmd ? *pmd : 0;
		if (gstage_pmd_is_table(v[c].pmd))
			memcpy(v[c].leaf, (void *)(uintptr_t)gstage_pmd_table(v[c].pmd),
			       sizeof(v[c].leaf));
		else
			memset(v[c].leaf, 0, sizeof(v[c].leaf));
	}
}

static bool logged(uint64_t page)
{
	return tvm.page_log[page / 64] & (1UL << (page % 64));
}

static void violation(const char *what, unsigned int c, unsigned int p)
{
	if (!violations++)
		snprintf(first_violation, sizeof(first_violation),
			 "%s installed a writable leaf over chunk %u page %u, whose write is not "
			 "logged", what, c, p);
}

/* Every entry @what changed: while logging, writable only over logged pages. */
static void check_changes(const char *what)
{
	static struct chunk_view after[CHUNKS];

	checks++;
	if (!tvm.page_log)
		return;
	view(after);
	for (unsigned int c = 0; c < CHUNKS; c++) {
		uint64_t pmd = after[c].pmd;

		if ((pmd & PTE_V) && !gstage_pmd_is_table(pmd)) {
			/* a 2 MiB leaf: all 512 pages must be logged */
			if (pmd != before[c].pmd && (pmd & PTE_W))
				for (unsigned int p = 0; p < 512; p++)
					if (!logged(c * 512 + p)) {
						violation(what, c, p);
						break;
					}
			continue;
		}
		if (!gstage_pmd_is_table(pmd))
			continue;
		for (unsigned int p = 0; p < 512; p++) {
			uint64_t pte = after[c].leaf[p];
			bool changed = pmd != before[c].pmd || pte != before[c].leaf[p];

			if (changed && (pte & PTE_V) && (pte & PTE_W) && !logged(c * 512 + p))
				violation(what, c, p);
		}
	}
}

/* The wrappers: the real function between two looks at the tables. */
int __real_gstage_map(uint64_t root, gpa_t gpa, hpa_t hpa, uint64_t size, unsigned long prot,
		      gstage_alloc_fn alloc, void *ctx);
int __wrap_gstage_map(uint64_t root, gpa_t gpa, hpa_t hpa, uint64_t size, unsigned long prot,
		      gstage_alloc_fn alloc, void *ctx);
int __wrap_gstage_map(uint64_t root, gpa_t gpa, hpa_t hpa, uint64_t size, unsigned long prot,
		      gstage_alloc_fn alloc, void *ctx)
{
	int rc;

	view(before);
	rc = __real_gstage_map(root, gpa, hpa, size, prot, alloc, ctx);
	check_changes("gstage_map()");
	return rc;
}

int __real_gstage_map_2m_split(uint64_t root, gpa_t gpa, hpa_t hpa, hpa_t table,
			       unsigned long prot, gstage_alloc_fn alloc, void *ctx);
int __wrap_gstage_map_2m_split(uint64_t root, gpa_t gpa, hpa_t hpa, hpa_t table,
			       unsigned long prot, gstage_alloc_fn alloc, void *ctx);
int __wrap_gstage_map_2m_split(uint64_t root, gpa_t gpa, hpa_t hpa, hpa_t table,
			       unsigned long prot, gstage_alloc_fn alloc, void *ctx)
{
	int rc;

	view(before);
	rc = __real_gstage_map_2m_split(root, gpa, hpa, table, prot, alloc, ctx);
	check_changes("gstage_map_2m_split()");
	return rc;
}

void __real_gstage_split_2m(uint64_t *pmd, hpa_t table, unsigned long prot);
void __wrap_gstage_split_2m(uint64_t *pmd, hpa_t table, unsigned long prot);
void __wrap_gstage_split_2m(uint64_t *pmd, hpa_t table, unsigned long prot)
{
	view(before);
	__real_gstage_split_2m(pmd, table, prot);
	check_changes("gstage_split_2m()");
}

void __real_gstage_merge_2m(uint64_t *pmd, unsigned long prot);
void __wrap_gstage_merge_2m(uint64_t *pmd, unsigned long prot);
void __wrap_gstage_merge_2m(uint64_t *pmd, unsigned long prot)
{
	view(before);
	__real_gstage_merge_2m(pmd, prot);
	check_changes("gstage_merge_2m()");
}

/* ---- a VM of 16 MiB ---- */

static void vm_new(void)
{
	memset(&tvm, 0, sizeof(tvm));
	tvm.cfg.ram_gpa = VM_GUEST_RAM_BASE;
	tvm.cfg.ram_size = RAM_SIZE;
	tvm.ram_hpa = (hpa_t)(uintptr_t)aligned_alloc(SZ_2M, RAM_SIZE);
	tvm.meta_hpa = mm_alloc(vm_meta_size(RAM_SIZE), GSTAGE_ROOT_SIZE);
	vm_ram_init(&tvm);
	violations = checks = 0;
	first_violation[0] = '\0';
}

static void vm_free(void)
{
	vm_dirty_log_stop(&tvm);
	free((void *)(uintptr_t)tvm.ram_hpa);
	mm_free(tvm.meta_hpa, 0);
}

/* The leaf a guest access to @gpa goes through now. */
static uint64_t leaf(gpa_t gpa)
{
	uint64_t *pte = gstage_lookup(tvm.gstage_root, gpa, NULL);

	return pte ? *pte : 0;
}

#define EXPECT_NO_VIOLATION() do { \
	if (violations) \
		fprintf(stderr, "  %s\n", first_violation); \
	EXPECT_EQ(violations, 0); \
} while (0)

TEST(guest_mem_first_read_while_logging_never_shows_a_writable_leaf)
{
	vm_new();
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(0, 0), 1, true), 0);	/* mapped before */
	EXPECT_EQ(vm_dirty_log_start(&tvm), 0);
	/* a guest read is the first touch of chunk 3 */
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(3, 7), 1, false), 0);
	EXPECT_TRUE(checks > 0);
	EXPECT_NO_VIOLATION();
	EXPECT_TRUE(leaf(GPA(3, 7)) & PTE_V);
	EXPECT_EQ(leaf(GPA(3, 7)) & PTE_W, 0);
	vm_free();
}

TEST(guest_mem_first_write_while_logging_never_shows_a_writable_leaf)
{
	static const char data[] = "written by the hypervisor for the guest";

	vm_new();
	EXPECT_EQ(vm_dirty_log_start(&tvm), 0);
	/* the hypervisor writes for the guest (an SBI reply, a console byte):
	 * the first touch of chunk 5 */
	EXPECT_EQ(vm_copy_to_guest(&tvm, GPA(5, 9) + 100, data, sizeof(data)), 0);
	EXPECT_NO_VIOLATION();
	/* the page it wrote is logged; no page of the chunk is writable yet */
	EXPECT_TRUE(logged(5 * 512 + 9));
	EXPECT_TRUE(!logged(5 * 512 + 10));
	for (unsigned int p = 0; p < 512; p++)
		EXPECT_EQ(leaf(GPA(5, p)) & PTE_W, 0);
	/* a guest write fault there: logged, then writable */
	EXPECT_TRUE(vm_ram_resolve_write(&tvm, GPA(5, 10)));
	EXPECT_TRUE(logged(5 * 512 + 10));
	EXPECT_TRUE(leaf(GPA(5, 10)) & PTE_W);
	EXPECT_NO_VIOLATION();
	vm_free();
}

TEST(guest_mem_logged_rounds_and_reboot_keep_every_write_logged)
{
	uint64_t taken[PAGES / 64];

	vm_new();
	for (unsigned int c = 0; c < CHUNKS; c += 2)
		EXPECT_EQ(vm_ram_populate(&tvm, GPA(c, 0), 1, true), 0);
	EXPECT_EQ(vm_dirty_log_start(&tvm), 0);
	EXPECT_TRUE(vm_ram_resolve_write(&tvm, GPA(2, 4)));
	EXPECT_EQ(vm_dirty_log_take(&tvm, taken, false), 1);
	EXPECT_TRUE(taken[(2 * 512 + 4) / 64] & (1UL << ((2 * 512 + 4) % 64)));
	EXPECT_EQ(leaf(GPA(2, 4)) & PTE_W, 0);	/* read-only again after the take */
	/* a reboot while logging: RAM unmapped, then touched again */
	vm_ram_discard(&tvm);
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(2, 0), 1, false), 0);
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(7, 0), SZ_2M, true), 0);
	EXPECT_NO_VIOLATION();
	vm_free();
}

TEST(guest_mem_stop_merges_only_once_logging_is_off)
{
	vm_new();
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(1, 0), 1, true), 0);
	EXPECT_EQ(vm_dirty_log_start(&tvm), 0);
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(4, 0), 1, false), 0);
	vm_dirty_log_stop(&tvm);
	EXPECT_NO_VIOLATION();
	/* 2 MiB writable leaves again */
	EXPECT_TRUE(leaf(GPA(1, 0)) & PTE_W);
	EXPECT_TRUE(leaf(GPA(4, 0)) & PTE_W);
	EXPECT_TRUE(tvm.page_log == NULL);
	vm_free();
}

TEST(guest_mem_discard_bumps_the_ram_epoch_first)
{
	uint32_t epoch;

	vm_new();
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(0, 0), 1, true), 0);
	epoch = tvm.ram_epoch;
	vm_ram_discard(&tvm);
	EXPECT_EQ(tvm.ram_epoch, epoch + 1);
	EXPECT_EQ(leaf(GPA(0, 0)), 0);
	vm_free();
}

/* Tickets the VM's memory lock handed out so far: did a call take it? */
static uint16_t mem_lock_taken(void)
{
	return tvm.mem_lock.next;
}

TEST(guest_mem_populated_chunk_is_answered_without_the_lock)
{
	uint16_t t;

	vm_new();
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(2, 0), SZ_2M, true), 0);
	t = mem_lock_taken();
	/* a disk request's segments: reads and writes inside mapped chunks */
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(2, 5), PAGE_SIZE, false), 0);
	EXPECT_TRUE(vm_gpa_to_hva(&tvm, GPA(2, 6), 3 * PAGE_SIZE, true) != NULL);
	EXPECT_EQ(mem_lock_taken(), t);
	/* a range reaching into a chunk not yet mapped: the locked way, which
	 * zeroes and maps it */
	memset((uint8_t *)(uintptr_t)tvm.ram_hpa + 3 * SZ_2M, 0xa5, PAGE_SIZE);
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(2, 511), 2 * PAGE_SIZE, false), 0);
	EXPECT_EQ(mem_lock_taken(), (uint16_t)(t + 1));
	EXPECT_EQ(((uint8_t *)(uintptr_t)tvm.ram_hpa)[3 * SZ_2M], 0);
	EXPECT_TRUE(leaf(GPA(3, 0)) & PTE_V);
	/* after a reboot's discard nothing is answered from the old bits */
	vm_ram_discard(&tvm);
	t = mem_lock_taken();
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(2, 5), PAGE_SIZE, false), 0);
	EXPECT_EQ(mem_lock_taken(), (uint16_t)(t + 1));
	vm_free();
}

TEST(guest_mem_writes_to_populated_chunks_are_still_tracked_and_logged)
{
	static const char data[] = "a disk read landing in guest memory";
	uint16_t t;

	vm_new();
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(1, 0), SZ_2M, true), 0);
	EXPECT_EQ(vm_ram_populate(&tvm, GPA(6, 0), SZ_2M, true), 0);
	/* a live snapshot's write tracking: a write marks the chunk dirty and
	 * gives W back; a read is still answered at once */
	vm_ram_write_protect(&tvm);
	EXPECT_EQ(vm_ram_dirty_chunks(&tvm), 0);
	t = mem_lock_taken();
	EXPECT_TRUE(vm_gpa_to_hva(&tvm, GPA(1, 3), 8, false) != NULL);
	EXPECT_EQ(mem_lock_taken(), t);
	EXPECT_EQ(vm_copy_to_guest(&tvm, GPA(1, 3), data, sizeof(data)), 0);
	EXPECT_EQ(vm_ram_dirty_chunks(&tvm), 1);
	EXPECT_TRUE(leaf(GPA(1, 3)) & PTE_W);
	vm_ram_unprotect(&tvm);
	/* 4 KiB logging: the page written is logged */
	EXPECT_EQ(vm_dirty_log_start(&tvm), 0);
	EXPECT_EQ(vm_copy_to_guest(&tvm, GPA(6, 9), data, sizeof(data)), 0);
	EXPECT_TRUE(logged(6 * 512 + 9));
	EXPECT_NO_VIOLATION();
	vm_free();
}
