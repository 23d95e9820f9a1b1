/* SPDX-License-Identifier: MIT */
/* Host interrupts: the external interrupts of hart 0 (the boot hart), the only
 * host external interrupts Carapace takes, from either controller the host
 * may have: a PLIC (its S-mode context of hart 0) or, on an AIA machine, the
 * S-level APLIC domain in MSI mode sending each source to an identity of
 * hart 0's S-level IMSIC file. Drivers register a handler per wired source
 * (the same numbers on both machines) at boot; the exit path (an interrupt
 * taken while a guest runs on hart 0) and the scheduler's loop on hart 0
 * (idle, or busy in the hypervisor with interrupts off) call
 * host_irq_handle(), which claims, dispatches and completes, at most
 * HOST_IRQ_MAX_CLAIMS sources a call (docs/architecture.md, "Host
 * interrupts"). hyp/drivers/host_irq.c is the front end, plic_host.c and
 * aplic_host.c the two backends. */
#ifndef HYP_HOST_IRQ_H
#define HYP_HOST_IRQ_H
#include <types.h>
#include <aplic.h>
#include <imsic.h>

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

/* A wired source's trigger, as the second cell of a two-cell specifier says
 * (the Linux IRQ_TYPE_* numbers every DT uses). A PLIC ignores it. */
#define HOST_IRQ_EDGE_RISING	1
#define HOST_IRQ_EDGE_FALLING	2
#define HOST_IRQ_LEVEL_HIGH	4
#define HOST_IRQ_LEVEL_LOW	8

/* The claim loop's bound: a line that stays asserted (a device nobody
 * quiets, a stuck source) costs at most this many claims per call; what is
 * left stays pending for the next call. */
#define HOST_IRQ_MAX_CLAIMS	8
#define HOST_IRQ_MAX_HANDLERS	32
/* AIA: handler slot s is S-file identity HOST_IRQ_EIID_BASE + s (16..47: below
 * 63, valid on any IMSIC; 1..15 left for IPIs and the like). */
#define HOST_IRQ_EIID_BASE	16

/* A controller's 32-bit registers: MMIO on the machine, a fake in the unit
 * tests. @off is a byte offset from the controller's base, 4-aligned. */
struct irqchip_regs {
	uint32_t (*read32)(void *ctx, uint64_t off);
	void (*write32)(void *ctx, uint64_t off, uint32_t v);
	void *ctx;
};

/* Which controller the host's interrupts come through. */
enum host_irq_chip { HOST_IRQ_NONE, HOST_IRQ_PLIC, HOST_IRQ_AIA };

struct host_irq_stats {
	uint64_t handled;	/* claims dispatched to a handler */
	uint64_t unknown;	/* claims of no registered source (completed only) */
	uint64_t cut;		/* calls that stopped at HOST_IRQ_MAX_CLAIMS */
	uint64_t polled;	/* host_irq_poll() calls that found one pending (not an exit) */
};

/** host_irq_init_plic() - use the PLIC of @d through MMIO, S-mode context
 *  @context (hart 0's, from the DT). Boot, hart 0. Returns 0, or -HYP_ENOENT
 *  if @d is absent or @context is PLIC_NO_CONTEXT. */
int host_irq_init_plic(const struct plic_host_desc *d, uint32_t context);

/** host_irq_init_regs() - the PLIC backend over @regs (the unit tests' fake
 *  PLIC), @ndev sources; sets the context's threshold to 0. */
int host_irq_init_regs(const struct irqchip_regs *regs, uint32_t ndev, uint32_t context);

/** host_irq_init_aia() - use the S-level APLIC domain @a (MSI mode) through
 *  MMIO, its MSIs going to this hart's S file of @m, this hart being at
 *  position @hart_index of the IMSIC node (its APLIC hart index). The S file
 *  must be set up (imsic_host_hart_init()). Boot, hart 0. Returns 0 or
 *  -HYP_ENOENT (either absent, or no hart index). */
int host_irq_init_aia(const struct aplic_host_desc *a, const struct imsic_host_desc *m,
		      uint32_t hart_index);

/** host_irq_init_aia_regs() - the AIA backend over @regs (the unit tests'
 *  fake APLIC; the S file through the CSR accessors), @num_sources sources,
 *  identities 1..@num_ids. */
int host_irq_init_aia_regs(const struct irqchip_regs *regs, uint32_t num_sources,
			   uint32_t hart_index, uint32_t num_ids);

/** host_irq_register_type() - call @fn(@ctx) when wired source @irq fires,
 *  @type (HOST_IRQ_*) its trigger: enabled for hart 0 (PLIC: priority 1 in its
 *  context; AIA: the APLIC source set to @type and sent to an identity of
 *  hart 0's S file, enabled there), and sie.SEIE set on this hart (boot, hart
 *  0, after a host_irq_init_*()). Returns 0, -HYP_ENOENT (no controller, or
 *  an APLIC source the parent domain did not delegate), -HYP_EINVAL (bad
 *  source or type, already registered) or -HYP_ENOMEM (table full). */
int host_irq_register_type(uint32_t irq, uint32_t type, void (*fn)(void *ctx), void *ctx);

/** host_irq_register() - host_irq_register_type() for a level-high source
 *  (every wired device of QEMU virt: PCI INTx, virtio-mmio, the UART). */
int host_irq_register(uint32_t irq, void (*fn)(void *ctx), void *ctx);

/** host_irq_handle() - claim, dispatch and complete pending sources, at most
 *  HOST_IRQ_MAX_CLAIMS; a source without a handler is completed and counted,
 *  never dispatched. Hart 0, interrupts off. */
void host_irq_handle(void);

/** host_irq_poll() - host_irq_handle() if anything is registered and the
 *  hart has a supervisor external interrupt pending (sip.SEIP: the PLIC's
 *  context, or the S file's top identity, on AIA); true if a source was
 *  claimed (a handler ran, or an unknown one was completed). On AIA the host
 *  IPI identity (HOST_IPI_EIID) is never claimed here: it stays pending,
 *  and sip.SEIP with it, for the IPI path (host_ipi.h). */
bool host_irq_poll(void);

/** host_irq_polling() - true while host_irq_poll() dispatches (a handler
 *  called from the scheduler's loop or the host services), false when the
 *  call came from a guest exit. For diagnostics. */
bool host_irq_polling(void);

/** host_irq_chip() - the controller in use; host_irq_chip_name() the same as
 *  "plic", "aia" or "none" (the boot log, metrics). */
enum host_irq_chip host_irq_chip(void);
const char *host_irq_chip_name(void);

/** host_irq_get_stats() - the counters since boot. */
struct host_irq_stats host_irq_get_stats(void);
#endif
