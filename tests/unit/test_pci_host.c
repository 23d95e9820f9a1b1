/* SPDX-License-Identifier: MIT */
/* hyp/drivers/pci_host.c: BAR sizing and placement, and the virtio capability
 * walk, against a fake function's config space that decodes BARs like
 * hardware (the size bits read back as zero) and counts where it was read. */
#include <string.h>
#include <errno.h>
#include <pci_host.h>
#include "test.h"

#define CAP_CHAIN	0x40

struct fake_fn {
	uint32_t cfg[1024];		/* 4 KiB ECAM function */
	uint64_t bar_size[PCI_NR_BARS];	/* 0: unimplemented; for a 64-bit BAR, at its low slot */
	unsigned int max_read;		/* highest offset read */
};

static bool is_bar(unsigned int off)
{
	return off >= 0x10 && off < 0x10 + 4 * PCI_NR_BARS;
}

static uint32_t fake_rd(void *ctx, unsigned int off)
{
	struct fake_fn *f = ctx;

	if (off > f->max_read)
		f->max_read = off;
	return f->cfg[off / 4];
}

static void fake_wr(void *ctx, unsigned int off, uint32_t v)
{
	struct fake_fn *f = ctx;
	unsigned int i = (off - 0x10) / 4;

	if (off == 0x04) {	/* command; the status half is write-1-to-clear */
		f->cfg[1] = (f->cfg[1] & 0xffff0000u) | (v & 0xffffu);
		return;
	}
	if (!is_bar(off)) {
		f->cfg[off / 4] = v;
		return;
	}
	if (f->bar_size[i]) {		/* low half: size bits read as zero, type bits fixed */
		f->cfg[off / 4] = (v & ~(uint32_t)(f->bar_size[i] - 1) & ~0xfu) | (f->cfg[off / 4] & 0xfu);
	} else if (i && f->bar_size[i - 1] && (f->cfg[off / 4 - 1] & 6) == 4) {
		f->cfg[off / 4] = v & (uint32_t)(~(f->bar_size[i - 1] - 1) >> 32);
	}			/* else: unimplemented, reads as 0 */
}

static struct pci_cfg cfg_of(struct fake_fn *f)
{
	return (struct pci_cfg){ fake_rd, fake_wr, f };
}

static void add_bar(struct fake_fn *f, unsigned int i, uint64_t size, bool is64)
{
	f->bar_size[i] = size;
	f->cfg[4 + i] = is64 ? 0xc : 0;	/* 64-bit prefetchable, or 32-bit */
}

/* A virtio vendor capability at @pos, chained to @next. */
static void add_vcap(struct fake_fn *f, unsigned int pos, unsigned int next, uint8_t type,
		     uint8_t len, uint8_t bar, uint32_t off, uint32_t length)
{
	f->cfg[pos / 4] = 0x09u | next << 8 | (uint32_t)len << 16 | (uint32_t)type << 24;
	f->cfg[pos / 4 + 1] = bar;
	f->cfg[pos / 4 + 2] = off;
	f->cfg[pos / 4 + 3] = length;
	if (len >= 20)
		f->cfg[pos / 4 + 4] = 4;	/* notify_off_multiplier */
}

/* A modern virtio-blk with a 64-bit BAR 4 and the caps QEMU gives it. */
static void virtio_blk(struct fake_fn *f)
{
	memset(f, 0, sizeof(*f));
	f->cfg[0] = 0x10421af4;
	f->cfg[1] = 1u << 20;			/* status: capability list */
	f->cfg[2] = 0x01000000;
	f->cfg[0x34 / 4] = CAP_CHAIN;
	add_bar(f, 1, 0x1000, false);
	add_bar(f, 4, 0x4000, true);
	add_vcap(f, 0x40, 0x50, 1, 16, 4, 0x0000, 0x1000);
	add_vcap(f, 0x50, 0x60, 3, 16, 4, 0x1000, 0x1000);
	add_vcap(f, 0x60, 0x70, 4, 16, 4, 0x2000, 0x1000);
	add_vcap(f, 0x70, 0x00, 2, 20, 4, 0x3000, 0x1000);
}

static struct pci_window win(uint64_t base, uint64_t size)
{
	return (struct pci_window){ .pci_base = base, .cpu_base = base, .size = size };
}

static void probe(struct fake_fn *ff, struct pci_func *f, struct pci_window *w32,
		  struct pci_window *w64)
{
	struct pci_cfg c = cfg_of(ff);

	memset(f, 0, sizeof(*f));
	pci_probe_func(&c, f, w32, w64);
}

TEST(pci_window_alloc_aligns_and_fills)
{
	struct pci_window w = win(0x40000000, 0x10000);
	uint64_t a = 0;

	EXPECT_EQ(pci_window_alloc(&w, 0x1000, &a), 0);
	EXPECT_EQ(a, 0x40000000);
	EXPECT_EQ(pci_window_alloc(&w, 0x4000, &a), 0);
	EXPECT_EQ(a, 0x40004000);	/* aligned to its size, the gap left */
	EXPECT_EQ(pci_window_alloc(&w, 0x8000, &a), 0);
	EXPECT_EQ(a, 0x40008000);
	EXPECT_EQ(pci_window_alloc(&w, 0x10, &a), -HYP_ENOMEM);	/* full */
	EXPECT_EQ(pci_window_alloc(&w, 0x3000, &a), -HYP_ENOMEM);	/* not a power of two */
}

TEST(pci_window_alloc_no_overflow)
{
	struct pci_window w = win(0xfffffffffff00000ull, 0xfffff);
	struct pci_window empty = win(0x1000, 0);
	uint64_t a = 0;

	EXPECT_EQ(pci_window_alloc(&w, 1ull << 63, &a), -HYP_ENOMEM);
	EXPECT_EQ(pci_window_alloc(&w, 0x100000, &a), -HYP_ENOMEM);	/* one byte too big */
	EXPECT_EQ(pci_window_alloc(&w, 0x80000, &a), 0);
	EXPECT_EQ(pci_window_alloc(&w, 0x80000, &a), -HYP_ENOMEM);	/* would end past it */
	EXPECT_EQ(pci_window_alloc(&empty, 0x10, &a), -HYP_ENOMEM);
}

TEST(pci_bars_64bit_high_window_32bit_low)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x400000000ull);

	virtio_blk(&ff);
	probe(&ff, &f, &w32, &w64);
	EXPECT_EQ(f.bar_error, NULL);
	EXPECT_EQ(f.bar[1].size, 0x1000);
	EXPECT_EQ(f.bar[1].cpu, 0x40000000);
	EXPECT_EQ(ff.cfg[4 + 1], 0x40000000);
	EXPECT_TRUE(f.bar[4].is64);
	EXPECT_EQ(f.bar[4].size, 0x4000);
	EXPECT_EQ(f.bar[4].cpu, 0x400000000ull);
	EXPECT_EQ(ff.cfg[4 + 4], 0x0000000c);		/* low half: address bits, type kept */
	EXPECT_EQ(ff.cfg[4 + 5], 0x4);			/* high half */
	EXPECT_EQ(f.bar[5].size, 0);			/* the upper half is no BAR */
	EXPECT_EQ(ff.cfg[1] & 0x7, 0x6);		/* memory decode, bus master, no I/O */
}

TEST(pci_bars_64bit_falls_back_below_4g)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0, 0);

	virtio_blk(&ff);
	probe(&ff, &f, &w32, &w64);
	EXPECT_EQ(f.bar_error, NULL);
	EXPECT_EQ(f.bar[4].cpu, 0x40004000);
	EXPECT_EQ(ff.cfg[4 + 5], 0);
}

TEST(pci_bar_too_large_for_window)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x1000);

	virtio_blk(&ff);
	ff.bar_size[1] = 0x80000000;	/* 2 GiB 32-bit BAR in a 1 GiB window */
	ff.cfg[1] |= 0x6;		/* decode was on: it must be turned off */
	probe(&ff, &f, &w32, &w64);
	EXPECT_STREQ(f.bar_error, "BAR does not fit its window");
	EXPECT_EQ(f.bar[1].size, 0);
	EXPECT_EQ(f.bar[4].size, 0);
	EXPECT_EQ(ff.cfg[1] & 0x7, 0);
	EXPECT_FALSE(f.cap[VPCI_COMMON].found);	/* no BAR, no capability */
}

TEST(pci_bar_64bit_too_large_everywhere)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x400000000ull);

	virtio_blk(&ff);
	ff.bar_size[4] = 1ull << 40;	/* 1 TiB: neither window holds it */
	probe(&ff, &f, &w32, &w64);
	EXPECT_STREQ(f.bar_error, "BAR does not fit its window");
	EXPECT_EQ(ff.cfg[1] & 0x2, 0);
}

TEST(pci_bar_64bit_in_last_slot)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x400000000ull);

	virtio_blk(&ff);
	ff.bar_size[4] = 0;
	ff.cfg[4 + 4] = 0;
	add_bar(&ff, 5, 0x1000, true);
	probe(&ff, &f, &w32, &w64);
	EXPECT_STREQ(f.bar_error, "64-bit BAR in the last slot");
	EXPECT_EQ(ff.cfg[1] & 0x2, 0);
}

TEST(pci_virtio_caps_all_four)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x400000000ull);

	virtio_blk(&ff);
	probe(&ff, &f, &w32, &w64);
	EXPECT_EQ(f.cap_error, NULL);
	EXPECT_TRUE(f.cap[VPCI_COMMON].found);
	EXPECT_EQ(f.cap[VPCI_COMMON].bar, 4);
	EXPECT_EQ(f.cap[VPCI_ISR].offset, 0x1000);
	EXPECT_EQ(f.cap[VPCI_DEVICE].offset, 0x2000);
	EXPECT_EQ(f.cap[VPCI_NOTIFY].offset, 0x3000);
	EXPECT_EQ(f.notify_off_multiplier, 4);
}

TEST(pci_virtio_caps_loop_ends)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x400000000ull);

	virtio_blk(&ff);
	ff.cfg[0x70 / 4] = (ff.cfg[0x70 / 4] & ~0xff00u) | 0x50u << 8;	/* last -> second */
	probe(&ff, &f, &w32, &w64);
	EXPECT_STREQ(f.cap_error, "capability list loops");
	EXPECT_TRUE(f.cap[VPCI_NOTIFY].found);	/* what came before the loop stays */
}

TEST(pci_virtio_caps_self_loop_and_header)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x400000000ull);

	virtio_blk(&ff);
	ff.cfg[0x40 / 4] = (ff.cfg[0x40 / 4] & ~0xff00u) | 0x40u << 8;
	probe(&ff, &f, &w32, &w64);
	EXPECT_STREQ(f.cap_error, "capability list loops");
	virtio_blk(&ff);
	ff.cfg[0x34 / 4] = 0x10;		/* into the BARs */
	probe(&ff, &f, &w32, &w64);
	EXPECT_STREQ(f.cap_error, "capability inside the header");
	EXPECT_FALSE(f.cap[VPCI_COMMON].found);
}

TEST(pci_virtio_cap_past_256_bytes)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x400000000ull);

	virtio_blk(&ff);
	ff.cfg[0x70 / 4] = (ff.cfg[0x70 / 4] & ~0xff00u) | 0xf8u << 8;
	add_vcap(&ff, 0xf8, 0, 1, 16, 4, 0, 0x100);	/* would end at 0x108 */
	ff.cfg[0x40 / 4] = 0;				/* its common cap is gone */
	ff.cfg[0x34 / 4] = 0x50;
	probe(&ff, &f, &w32, &w64);
	EXPECT_FALSE(f.cap[VPCI_COMMON].found);
	EXPECT_TRUE(ff.max_read < PCI_CFG_SIZE);
	virtio_blk(&ff);
	ff.cfg[0x40 / 4] = (ff.cfg[0x40 / 4] & 0xff00ffffu) | 0xc8u << 16;	/* cap_len 200 */
	probe(&ff, &f, &w32, &w64);
	EXPECT_FALSE(f.cap[VPCI_COMMON].found);
	EXPECT_TRUE(f.cap[VPCI_ISR].found);
}

TEST(pci_virtio_cap_outside_its_bar)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x400000000ull);

	virtio_blk(&ff);
	ff.cfg[0x50 / 4 + 2] = 0x3800;			/* isr: 0x3800 + 0x1000 > 0x4000 */
	ff.cfg[0x60 / 4 + 1] = 2;			/* device: BAR 2 unimplemented */
	ff.cfg[0x40 / 4 + 2] = 0xfffff000u;		/* common: offset + length wraps 32 bits */
	probe(&ff, &f, &w32, &w64);
	EXPECT_FALSE(f.cap[VPCI_ISR].found);
	EXPECT_FALSE(f.cap[VPCI_DEVICE].found);
	EXPECT_FALSE(f.cap[VPCI_COMMON].found);
	EXPECT_TRUE(f.cap[VPCI_NOTIFY].found);
}

TEST(pci_virtio_cap_first_usable_wins)
{
	struct fake_fn ff;
	struct pci_func f;
	struct pci_window w32 = win(0x40000000, 0x40000000), w64 = win(0x400000000ull, 0x400000000ull);

	virtio_blk(&ff);
	ff.cfg[0x70 / 4] = (ff.cfg[0x70 / 4] & ~0xff00u) | 0x80u << 8;
	add_vcap(&ff, 0x80, 0x90, 1, 16, 9, 0, 0x10);		/* BAR 9: unusable */
	add_vcap(&ff, 0x90, 0xa8, 2, 20, 4, 0x3000, 0x100);	/* a notify of full length */
	add_vcap(&ff, 0xa8, 0, 4, 16, 1, 0x0, 0x100);		/* a second device cap */
	ff.cfg[0x40 / 4 + 1] = 9;				/* the first common: unusable */
	ff.cfg[0x70 / 4] = (ff.cfg[0x70 / 4] & 0xff00ffffu) | 16u << 16;	/* notify without its multiplier */
	probe(&ff, &f, &w32, &w64);
	EXPECT_FALSE(f.cap[VPCI_COMMON].found);
	EXPECT_EQ(f.cap[VPCI_DEVICE].bar, 4);			/* the first one */
	EXPECT_EQ(f.cap[VPCI_NOTIFY].length, 0x100);		/* the short one skipped */
	EXPECT_EQ(f.notify_off_multiplier, 4);
}

TEST(pci_virtio_type_ids)
{
	EXPECT_EQ(pci_virtio_type(0x1af4, 0x1042, 0), 2);
	EXPECT_EQ(pci_virtio_type(0x1af4, 0x1041, 0), 1);
	EXPECT_EQ(pci_virtio_type(0x1af4, 0x1000, 1), 1);	/* transitional net */
	EXPECT_EQ(pci_virtio_type(0x1af4, 0x1110, 1), 0);	/* ivshmem: not virtio */
	EXPECT_EQ(pci_virtio_type(0x1b36, 0x1042, 2), 0);
}

TEST(pci_intx_irq_masks_and_misses)
{
	struct pci_host_desc d = { .intx_mask_hi = 0x1800, .intx_mask_pin = 7, .nr_intx = 2 };

	d.intx[0] = (struct pci_intx_route){ .addr_hi = 0x0800, .pin = 1, .irq = 33 };
	d.intx[1] = (struct pci_intx_route){ .addr_hi = 0x1000, .pin = 2, .irq = 35 };
	EXPECT_EQ(pci_intx_irq(&d, 0, 1, 0, 1), 33);
	EXPECT_EQ(pci_intx_irq(&d, 0, 5, 3, 1), 33);	/* slot 5 & 3 = 1, function masked */
	EXPECT_EQ(pci_intx_irq(&d, 0, 2, 0, 2), 35);
	EXPECT_EQ(pci_intx_irq(&d, 0, 2, 0, 1), -1);	/* no entry */
	d.nr_intx = 1000;				/* never read past the table */
	EXPECT_EQ(pci_intx_irq(&d, 0, 3, 0, 4), -1);
}
