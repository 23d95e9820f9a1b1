/* SPDX-License-Identifier: MIT */
/* ns16550A model: transmit goes straight to the host console (tagged with the
 * VM name), receive comes from its own RX FIFO, which the host console fills; interrupts
 * (RX data, THR empty) go to the PLIC, so Linux's 8250 driver runs
 * interrupt-driven instead of polling. */
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <mmio.h>
#include <vm.h>

#define REG_RBR_THR	0
#define REG_IER		1
#define REG_IIR_FCR	2
#define REG_LCR		3
#define REG_MCR		4
#define REG_LSR		5
#define REG_MSR		6
#define REG_SCR		7

#define IER_RDI		0x01
#define IER_THRI	0x02
#define IIR_NO_INT	0x01
#define IIR_THRI	0x02
#define IIR_RDI		0x04
#define IIR_FIFO	0xc0
#define FCR_FIFO_EN	0x01
#define LCR_DLAB	0x80
#define MCR_LOOP	0x10
#define LSR_DR		0x01
#define LSR_THRE	0x20
#define LSR_TEMT	0x40
#define MSR_DEFAULT	0xb0	/* DCD, DSR, CTS */

static bool rx_ready(const struct snap_dev_uart16550 *s)
{
	return s->rx_head != s->rx_tail;
}

/* Lock held. */
static size_t rx_take(struct snap_dev_uart16550 *s, char *buf, size_t len)
{
	size_t n = 0;

	while (n < len && rx_ready(s))
		buf[n++] = (char)s->rx[s->rx_tail++ % VUART_RX_FIFO];
	return n;
}

/* Interrupt line: RX data, or THR empty, when enabled. Lock held. */
static void update_irq(struct vm *vm)
{
	struct snap_dev_uart16550 *u = &vm->uart.s;
	bool level = ((u->ier & IER_RDI) && rx_ready(u)) ||
		     ((u->ier & IER_THRI) && u->thre_pending);

	/* most accesses (LSR polls) change nothing: leave the PLIC alone then */
	if (level != u->irq_level) {
		u->irq_level = level;
		virq_set_level(vm, VUART_IRQ, level);
	}
}

/* Transmit is instant: THR and the shifter are always empty. */
static uint8_t lsr(const struct snap_dev_uart16550 *u)
{
	return LSR_THRE | LSR_TEMT | (rx_ready(u) ? LSR_DR : 0);
}

static uint8_t read_iir(struct vm *vm)
{
	struct snap_dev_uart16550 *u = &vm->uart.s;
	uint8_t fifo = (u->fcr & FCR_FIFO_EN) ? IIR_FIFO : 0;

	if ((u->ier & IER_RDI) && rx_ready(u))
		return fifo | IIR_RDI;
	if ((u->ier & IER_THRI) && u->thre_pending) {
		u->thre_pending = false;	/* reading IIR clears THRE (16550 datasheet) */
		return fifo | IIR_THRI;
	}
	return fifo | IIR_NO_INT;
}

static uint8_t uart_read(struct vm *vm, unsigned int reg)
{
	struct snap_dev_uart16550 *u = &vm->uart.s;
	char c;

	switch (reg) {
	case REG_RBR_THR:
		if (u->lcr & LCR_DLAB)
			return u->dll;
		return rx_take(u, &c, 1) ? (uint8_t)c : 0;
	case REG_IER:
		return (u->lcr & LCR_DLAB) ? u->dlm : u->ier;
	case REG_IIR_FCR:
		return read_iir(vm);
	case REG_LCR:
		return u->lcr;
	case REG_MCR:
		return u->mcr;
	case REG_LSR:
		return lsr(u);
	case REG_MSR:
		if (u->mcr & MCR_LOOP)	/* loopback: modem outputs read back as inputs */
			return (uint8_t)(((u->mcr & 0x0c) << 4) | ((u->mcr & 0x01) << 5) |
					 ((u->mcr & 0x02) << 3));
		return MSR_DEFAULT;
	default:
		return u->scr;
	}
}

static void uart_write(struct vm *vm, unsigned int reg, uint8_t val)
{
	struct snap_dev_uart16550 *u = &vm->uart.s;
	char c = (char)val;

	switch (reg) {
	case REG_RBR_THR:
		if (u->lcr & LCR_DLAB) {
			u->dll = val;
		} else {
			if (!(u->mcr & MCR_LOOP))
				vm_console_out(vm, &c, 1);
			u->thre_pending = true;	/* sent at once: THR empty again */
		}
		break;
	case REG_IER:
		if (u->lcr & LCR_DLAB) {
			u->dlm = val;
			break;
		}
		/* enabling THRI while THR is empty raises the interrupt (16550) */
		if ((val & IER_THRI) && !(u->ier & IER_THRI))
			u->thre_pending = true;
		u->ier = val & SNAP_UART_IER_BITS;	/* what its table allows */
		break;
	case REG_IIR_FCR:
		u->fcr = val & ~0x06;	/* FIFO reset bits self-clear */
		break;
	case REG_LCR:
		u->lcr = val;
		break;
	case REG_MCR:
		u->mcr = val & SNAP_UART_MCR_BITS;
		break;
	case REG_SCR:
		u->scr = val;
		break;
	default:
		break;	/* LSR/MSR: read-only */
	}
}

static int vuart_access(struct vm *vm, void *priv, struct mmio_access *a)
{
	unsigned int reg = (unsigned int)(a->gpa - VUART_BASE);

	(void)priv;
	if (a->width != 1 || reg > REG_SCR)
		return -HYP_EINVAL;	/* byte registers, reg-shift 0 */
	if (reg == REG_LSR && !a->is_write) {
		/* the console poll: one look at the FIFO indices, no state changes */
		a->value = lsr(&vm->uart.s);
		return 0;
	}
	spin_lock(&vm->uart.lock);
	if (a->is_write)
		uart_write(vm, reg, (uint8_t)a->value);
	else
		a->value = uart_read(vm, reg);
	/* only THR/RBR, IER and IIR change the interrupt condition; the common
	 * LSR poll does not */
	if (reg <= REG_IIR_FCR)
		update_irq(vm);
	spin_unlock(&vm->uart.lock);
	return 0;
}

size_t vuart_input(struct vm *vm, const char *buf, size_t len)
{
	struct snap_dev_uart16550 *u = &vm->uart.s;
	size_t n = 0;

	spin_lock(&vm->uart.lock);
	for (; n < len && u->rx_head - u->rx_tail < VUART_RX_FIFO; n++)
		u->rx[u->rx_head++ % VUART_RX_FIFO] = (uint8_t)buf[n];
	update_irq(vm);
	spin_unlock(&vm->uart.lock);
	return n;
}

size_t vuart_read_input(struct vm *vm, char *buf, size_t len)
{
	size_t n;

	spin_lock(&vm->uart.lock);
	n = rx_take(&vm->uart.s, buf, len);
	update_irq(vm);
	spin_unlock(&vm->uart.lock);
	return n;
}

static int vuart_register(struct vm *vm)
{
	struct mmio_region r = { VUART_BASE, VUART_SIZE, vuart_access, NULL };

	return vm_mmio_register(vm, &r);
}

/* The lock is not part of the state: another hart (the host console) may hold it. */
static void vuart_reset(struct vm *vm)
{
	spin_lock(&vm->uart.lock);
	memset(&vm->uart.s, 0, sizeof(vm->uart.s));
	spin_unlock(&vm->uart.lock);
}

static void vuart_save(struct vm *vm, void *out)
{
	spin_lock(&vm->uart.lock);
	memcpy(out, &vm->uart.s, sizeof(vm->uart.s));
	spin_unlock(&vm->uart.lock);
}

#define FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_dev_uart16550, n, t), bits, value, ro, live, SNAP_DEV_WHY(n, what) },
static const struct snap_field fields[] = { SNAP_DEV_UART16550(FIELD) };

/* What the table cannot say: the queue is at most the ring. */
static const char *vuart_check(const struct vm *vm, const void *state, uint32_t *offset)
{
	const struct snap_dev_uart16550 *s = state;

	(void)vm;
	*offset = offsetof(struct snap_dev_uart16550, rx_head);
	if (s->rx_head - s->rx_tail > VUART_RX_FIFO)
		return "rx_head is ahead of rx_tail by more than the receive FIFO holds (256 bytes)";
	return NULL;
}

static void vuart_load(struct vm *vm, const void *in)
{
	spin_lock(&vm->uart.lock);
	memcpy(&vm->uart.s, in, sizeof(vm->uart.s));
	spin_unlock(&vm->uart.lock);
}

const struct vdev_ops uart16550_ops = {
	VDEV_STATE(uart16550, fields),
	.reg = vuart_register,
	.reset = vuart_reset,
	.save = vuart_save,
	.check = vuart_check,
	.load = vuart_load,
};
