/* SPDX-License-Identifier: MIT */
/* Host interrupts: the host PLIC's S-mode context of hart 0 (the boot hart),
 * the only host external interrupts Carapace takes. Drivers register a
 * handler per PLIC source at boot; the exit path (an interrupt taken while a
 * guest runs on hart 0) and the scheduler's loop on hart 0 (idle, or busy in
 * the hypervisor with interrupts off) call host_irq_handle(), which claims,
 * dispatches and completes, at most HOST_IRQ_MAX_CLAIMS sources a call
 * (docs/architecture.md, "Host interrupts"). */
#ifndef HYP_HOST_IRQ_H
#define HYP_HOST_IRQ_H
#include <types.h>

#define PLIC_MAX_SOURCES	1024	/* source IDs 1..1023; 0 means "none" */
#define PLIC_MAX_CONTEXTS	15872
#define PLIC_NO_CONTEXT		UINT32_MAX

/* PLIC register map (RISC-V PLIC spec 1.0.0) */
#define PLIC_PRIORITY(irq)	(4ull * (irq))
#define PLIC_ENABLE(ctx, irq)	(0x2000ull + 0x80ull * (ctx) + 4ull * ((irq) / 32))
#define PLIC_THRESHOLD(ctx)	(0x200000ull + 0x1000ull * (ctx))
#define PLIC_CLAIM(ctx)		(PLIC_THRESHOLD(ctx) + 4)

/* What the host DT says about the PLIC (fdt_host.c fills it). */
struct plic_host_desc {
	bool present;
	uint64_t base, size;		/* reg: covers every context named below */
	uint32_t ndev;			/* riscv,ndev: sources 1..ndev exist */
	uint32_t phandle;		/* 0: none */
};

/* The claim loop's bound: a line that stays asserted (a device nobody
 * quiets, a stuck source) costs at most this many claims per call; what is
 * left stays pending for the next call. */
#define HOST_IRQ_MAX_CLAIMS	8
#define HOST_IRQ_MAX_HANDLERS	32

/* The PLIC's registers: MMIO on the machine, a fake in the unit tests.
 * @off is a byte offset from the PLIC's base, 4-aligned. */
struct plic_regs {
	uint32_t (*read32)(void *ctx, uint64_t off);
	void (*write32)(void *ctx, uint64_t off, uint32_t v);
	void *ctx;
};

struct host_irq_stats {
	uint64_t handled;	/* claims dispatched to a handler */
	uint64_t unknown;	/* claims of no registered source (completed only) */
	uint64_t cut;		/* calls that stopped at HOST_IRQ_MAX_CLAIMS */
	uint64_t polled;	/* host_irq_poll() calls that found one pending (not an exit) */
};

/** host_irq_init() - use the PLIC of @d through MMIO, S-mode context
 *  @context (hart 0's, from the DT). Boot, hart 0. Returns 0, or -HYP_ENOENT
 *  if @d is absent or @context is PLIC_NO_CONTEXT. */
int host_irq_init(const struct plic_host_desc *d, uint32_t context);

/** host_irq_init_regs() - the same over @regs (the unit tests' fake PLIC),
 *  @ndev sources; sets the context's threshold to 0. */
int host_irq_init_regs(const struct plic_regs *regs, uint32_t ndev, uint32_t context);

/** host_irq_register() - call @fn(@ctx) when source @irq (1..ndev) fires:
 *  priority 1, enabled for hart 0's S-context, and sie.SEIE set on this hart
 *  (boot, hart 0, after host_irq_init()). Returns 0, -HYP_ENOENT (no PLIC),
 *  -HYP_EINVAL (bad source, already registered) or -HYP_ENOMEM (table full). */
int host_irq_register(uint32_t irq, void (*fn)(void *ctx), void *ctx);

/** host_irq_handle() - claim, dispatch and complete pending sources, at most
 *  HOST_IRQ_MAX_CLAIMS; a source without a handler is completed and counted,
 *  never dispatched. Hart 0, interrupts off. */
void host_irq_handle(void);

/** host_irq_poll() - host_irq_handle() if anything is registered and the
 *  hart has a supervisor external interrupt pending (sip.SEIP); true if it
 *  had (a handler ran, or at least the PLIC was asked). */
bool host_irq_poll(void);

/** host_irq_polling() - true while host_irq_poll() dispatches (a handler
 *  called from the scheduler's loop or the host services), false when the
 *  call came from a guest exit. For diagnostics. */
bool host_irq_polling(void);

/** host_irq_get_stats() - the counters since boot. */
struct host_irq_stats host_irq_get_stats(void);
#endif
