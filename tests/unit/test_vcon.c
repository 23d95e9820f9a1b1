/* SPDX-License-Identifier: MIT */
/* hyp/drivers/virtio_console.c against a device played here: the registers
 * of a virtio-mmio virtio-serial device (MULTIPORT, 2 ports, queues of 32)
 * and what it does when notified. The control receive queue can be told to
 * answer every buffer given back with a new control message at once, as
 * QEMU does while a client connects and leaves in a loop: one vcon_poll()
 * must still end, after at most a queue's worth of messages. */
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <libfdt.h>
#include <hart.h>
#include <log.h>
#include <virtio_console.h>
#include <virtio_mmio.h>
#include "test.h"

#define NR_QUEUES	12	/* 2 per port for 5 ports, and the control pair */
#define CTL_RX		2
#define CTL_TX		3
#define QUEUE_SIZE	32

#define TIMEBASE	10000000
static uint64_t clock_ticks;

uint64_t time_now(void)
{
	return clock_ticks += 100;
}

void pr_info(const char *fmt, ...)
{
	(void)fmt;
}

/* ---- the device ---- */

static uint32_t window[0x200 / 4] __attribute__((aligned(4096)));	/* read directly at probe */

static struct {
	uint32_t sel, feat_sel, status;
	struct {
		uint64_t desc, avail, used;
		uint32_t num;
		bool ready;
		uint16_t next_avail;
	} q[NR_QUEUES];
	uint32_t isr;		/* interrupt status: the line is high while it is not 0 */
	unsigned int isr_reads;
	bool flood;		/* every control rx buffer given back is filled again */
	unsigned int flood_msgs;
	uint16_t open;
} dev;

static struct virtq_desc *desc_of(unsigned int qi)
{
	return (struct virtq_desc *)(uintptr_t)dev.q[qi].desc;
}

static struct virtq_avail *avail_of(unsigned int qi)
{
	return (struct virtq_avail *)(uintptr_t)dev.q[qi].avail;
}

static struct virtq_used *used_of(unsigned int qi)
{
	return (struct virtq_used *)(uintptr_t)dev.q[qi].used;
}

/* Take the next buffer the driver gave; false if none. */
static bool take(unsigned int qi, uint16_t *id)
{
	if (avail_of(qi)->idx == dev.q[qi].next_avail)
		return false;
	*id = avail_of(qi)->ring[dev.q[qi].next_avail++ % dev.q[qi].num];
	return true;
}

static void give_back(unsigned int qi, uint16_t id, uint32_t len)
{
	struct virtq_used *u = used_of(qi);

	u->ring[u->idx % dev.q[qi].num] = (struct virtq_used_elem){ id, len };
	__atomic_store_n(&u->idx, (uint16_t)(u->idx + 1), __ATOMIC_RELEASE);
}

/* A control message @event/@value about port @port, @name after it. */
static bool post(uint32_t port, uint16_t event, uint16_t value, const char *name)
{
	struct { uint32_t id; uint16_t event, value; } m = { port, event, value };
	uint16_t id;
	uint8_t *buf;

	if (!take(CTL_RX, &id))
		return false;
	buf = (uint8_t *)(uintptr_t)desc_of(CTL_RX)[id].addr;
	memcpy(buf, &m, sizeof(m));
	if (name)
		memcpy(buf + sizeof(m), name, strlen(name));
	give_back(CTL_RX, id, (uint32_t)(sizeof(m) + (name ? strlen(name) : 0)));
	return true;
}

/* A control message from the device: port 1 opened or closed. */
static bool post_control(void)
{
	struct { uint32_t id; uint16_t event, value; } m = { 1, 6, dev.open ^= 1 };
	uint16_t id;

	if (!take(CTL_RX, &id))
		return false;
	memcpy((void *)(uintptr_t)desc_of(CTL_RX)[id].addr, &m, sizeof(m));
	give_back(CTL_RX, id, sizeof(m));
	dev.flood_msgs++;
	return true;
}

static void notify(unsigned int qi)
{
	uint16_t id;

	if (qi == CTL_TX)	/* the driver's control messages: taken */
		while (take(CTL_TX, &id))
			give_back(CTL_TX, id, 0);
	if (qi == CTL_RX && dev.flood)
		post_control();
}

uint32_t vcon_test_rd(unsigned int off)
{
	switch (off) {
	case VIRTIO_MMIO_DEVICE_FEATURES:
		/* VERSION_1 (bit 32), MULTIPORT (bit 1) */
		return dev.feat_sel ? 1u << (VIRTIO_F_VERSION_1 - 32) : 1u << 1;
	case VIRTIO_MMIO_QUEUE_NUM_MAX:
		return dev.sel < NR_QUEUES ? QUEUE_SIZE : 0;
	case VIRTIO_MMIO_QUEUE_READY:
		return dev.sel < NR_QUEUES && dev.q[dev.sel].ready;
	case VIRTIO_MMIO_STATUS:
		return dev.status;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		dev.isr_reads++;
		return dev.isr;
	case VIRTIO_MMIO_CONFIG + 4:
		return 2;	/* max_nr_ports */
	default:
		return off < sizeof(window) ? window[off / 4] : 0;
	}
}

void vcon_test_wr(unsigned int off, uint32_t v)
{
	uint32_t s = dev.sel < NR_QUEUES ? dev.sel : 0;

	switch (off) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL: dev.feat_sel = v; break;
	case VIRTIO_MMIO_QUEUE_SEL: dev.sel = v; break;
	case VIRTIO_MMIO_QUEUE_NUM: dev.q[s].num = v; break;
	case VIRTIO_MMIO_QUEUE_READY: dev.q[s].ready = v; break;
	case VIRTIO_MMIO_QUEUE_NOTIFY: notify(v); break;
	case VIRTIO_MMIO_STATUS: dev.status = v; break;
	case VIRTIO_MMIO_INTERRUPT_ACK: dev.isr &= ~v; break;
	case VIRTIO_MMIO_QUEUE_DESC_LOW: dev.q[s].desc = (dev.q[s].desc & ~0xffffffffULL) | v; break;
	case VIRTIO_MMIO_QUEUE_DESC_HIGH: dev.q[s].desc = (dev.q[s].desc & 0xffffffffULL) | (uint64_t)v << 32; break;
	case VIRTIO_MMIO_QUEUE_DRIVER_LOW: dev.q[s].avail = (dev.q[s].avail & ~0xffffffffULL) | v; break;
	case VIRTIO_MMIO_QUEUE_DRIVER_HIGH: dev.q[s].avail = (dev.q[s].avail & 0xffffffffULL) | (uint64_t)v << 32; break;
	case VIRTIO_MMIO_QUEUE_DEVICE_LOW: dev.q[s].used = (dev.q[s].used & ~0xffffffffULL) | v; break;
	case VIRTIO_MMIO_QUEUE_DEVICE_HIGH: dev.q[s].used = (dev.q[s].used & 0xffffffffULL) | (uint64_t)v << 32; break;
	default: break;
	}
}

/* A host DT with the device at @window's address. */
static void host_dt(void *fdt, size_t size)
{
	uint64_t base = (uintptr_t)window;
	fdt32_t reg[4] = { cpu_to_fdt32((uint32_t)(base >> 32)), cpu_to_fdt32((uint32_t)base),
			   0, cpu_to_fdt32(0x1000) };
	int node;

	fdt_create_empty_tree(fdt, (int)size);
	fdt_setprop_u32(fdt, 0, "#address-cells", 2);
	fdt_setprop_u32(fdt, 0, "#size-cells", 2);
	node = fdt_add_subnode(fdt, 0, "virtio_mmio@0");
	fdt_setprop_string(fdt, node, "compatible", "virtio,mmio");
	fdt_setprop(fdt, node, "reg", reg, sizeof(reg));
	fdt_setprop_u32(fdt, node, "interrupts", 7);
	fdt_setprop_u32(fdt, 0, "interrupt-parent", 0x33);	/* inherited */
}

static char fdt[1024];

static void start(void)
{
	memset(&dev, 0, sizeof(dev));
	window[VIRTIO_MMIO_MAGIC_VALUE / 4] = VIRTIO_MMIO_MAGIC;
	window[VIRTIO_MMIO_VERSION / 4] = VIRTIO_MMIO_VERSION_MODERN;
	window[VIRTIO_MMIO_DEVICE_ID / 4] = VIRTIO_ID_CONSOLE;
	host_dt(fdt, sizeof(fdt));
	/* a poll that never ends fails the test instead of hanging it */
	alarm(5);
}

TEST(vcon_starts_on_the_played_device)
{
	start();
	EXPECT_TRUE(vcon_init(fdt, TIMEBASE));
	EXPECT_TRUE(dev.status & VIRTIO_STATUS_DRIVER_OK);
	EXPECT_TRUE(dev.q[CTL_RX].ready && dev.q[CTL_TX].ready);
}

TEST(vcon_poll_ends_while_control_messages_keep_coming)
{
	unsigned int after_first;

	start();
	EXPECT_TRUE(vcon_init(fdt, TIMEBASE));
	dev.flood = true;
	EXPECT_TRUE(post_control());
	vcon_poll();
	after_first = dev.flood_msgs;
	/* one queue's worth handled (each answered by a new message) */
	EXPECT_TRUE(after_first >= QUEUE_SIZE);
	EXPECT_TRUE(after_first <= QUEUE_SIZE + 1);
	vcon_poll();	/* the next poll goes on where this one stopped */
	EXPECT_TRUE(dev.flood_msgs > after_first);
}

TEST(vcon_irq_is_the_nodes_with_its_inherited_parent)
{
	uint32_t parent = 0, type = 99;

	start();
	EXPECT_EQ(vcon_irq(&parent, &type), -1);	/* no device yet */
	EXPECT_TRUE(vcon_init(fdt, TIMEBASE));
	EXPECT_EQ(vcon_irq(&parent, &type), 7);
	EXPECT_EQ(parent, 0x33);
	EXPECT_EQ(type, 0);		/* one cell: a PLIC's */
}

/* An AIA machine's virtio-mmio node: <source trigger>, the APLIC's two cells. */
TEST(vcon_irq_reads_a_two_cell_specifier)
{
	uint32_t parent = 0, type = 0;
	int node;

	start();
	node = fdt_path_offset(fdt, "/virtio_mmio@0");
	EXPECT_EQ(fdt_setprop_u32(fdt, node, "interrupts", 8), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, node, "interrupts", 4), 0);
	EXPECT_TRUE(vcon_init(fdt, TIMEBASE));
	EXPECT_EQ(vcon_irq(&parent, &type), 8);
	EXPECT_EQ(type, 4);
	start();
	node = fdt_path_offset(fdt, "/virtio_mmio@0");
	EXPECT_EQ(fdt_appendprop_u32(fdt, node, "interrupts", 4), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, node, "interrupts", 1), 0);	/* three cells: none */
	EXPECT_TRUE(vcon_init(fdt, TIMEBASE));
	EXPECT_EQ(vcon_irq(&parent, &type), -1);
}

/* The handler lowers the line; what the device said is vcon_poll()'s still:
 * a config change with NEEDS_RESET takes the channel down. */
TEST(vcon_interrupt_acknowledges_and_poll_sees_what_it_said)
{
	start();
	EXPECT_TRUE(vcon_init(fdt, TIMEBASE));
	dev.isr = 1;			/* a used buffer */
	vcon_interrupt(NULL);
	EXPECT_EQ(dev.isr, 0);
	vcon_poll();
	EXPECT_TRUE(vcon_irq(&(uint32_t){ 0 }, &(uint32_t){ 0 }) == 7);	/* still up */
	dev.status |= VIRTIO_STATUS_NEEDS_RESET;
	dev.isr = 2;			/* config change */
	vcon_interrupt(NULL);
	EXPECT_EQ(dev.isr, 0);
	vcon_poll();
	EXPECT_EQ(vcon_irq(&(uint32_t){ 0 }, &(uint32_t){ 0 }), -1);	/* down: noticed all the same */
	dev.isr = 3;			/* a device out of service still gets its ack */
	vcon_interrupt(NULL);
	EXPECT_EQ(dev.isr, 0);
}

/* Without an interrupt taken, the status (an exit to the device model, under
 * QEMU's big lock) is looked at no more than once a millisecond, and a
 * device that gave up is noticed all the same. */
TEST(vcon_poll_looks_at_the_status_at_most_once_a_millisecond)
{
	unsigned int reads, polls = 0;

	start();
	EXPECT_TRUE(vcon_init(fdt, TIMEBASE));
	vcon_poll();
	reads = dev.isr_reads;
	for (int i = 0; i < 10; i++)
		vcon_poll();		/* the fake clock: 100 ticks a look, 10 000 a ms */
	EXPECT_TRUE(dev.isr_reads - reads <= 1);
	dev.status |= VIRTIO_STATUS_NEEDS_RESET;
	dev.isr = 2;			/* config change, no interrupt routed */
	while (vcon_irq(&(uint32_t){ 0 }, &(uint32_t){ 0 }) != -1 && polls < 10000) {
		vcon_poll();
		polls++;
	}
	EXPECT_EQ(vcon_irq(&(uint32_t){ 0 }, &(uint32_t){ 0 }), -1);
	EXPECT_EQ(dev.isr, 0);		/* the look acknowledged it */
}

#define PORT1_TX	5	/* port 1's transmit queue: 2n+3 */

/* A port's own transmit buffers give way to larger ones only while the
 * device holds none of them; writes then fill the larger ones. */
TEST(vcon_port_tx_buffers_wait_for_the_device_then_carry_writes)
{
	static uint8_t big[VCON_BUFS][16384] __attribute__((aligned(16)));
	static uint8_t data[40000];
	struct virtq_desc *d;
	uint16_t id, first;
	int port;

	start();
	EXPECT_TRUE(vcon_init(fdt, TIMEBASE));
	EXPECT_TRUE(post(1, 1, 1, NULL));		/* PORT_ADD */
	EXPECT_TRUE(post(1, 7, 0, "bulk"));		/* PORT_NAME */
	EXPECT_TRUE(post(1, 6, 1, NULL));		/* PORT_OPEN: a client */
	vcon_poll();
	port = vcon_port_find("bulk");
	EXPECT_EQ(port, 1);
	EXPECT_TRUE(vcon_port_connected(port));
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	EXPECT_EQ(vcon_write(port, data, 100), 100);	/* with the device now */
	EXPECT_FALSE(vcon_port_tx_buffers(port, big, sizeof(big[0])));
	EXPECT_TRUE(take(PORT1_TX, &id));
	give_back(PORT1_TX, id, 0);
	EXPECT_TRUE(vcon_port_tx_buffers(port, big, sizeof(big[0])));
	EXPECT_EQ(vcon_write(port, data, sizeof(data)), sizeof(data));
	EXPECT_TRUE(take(PORT1_TX, &first));
	d = &desc_of(PORT1_TX)[first];
	EXPECT_EQ(d->addr, (uint64_t)(uintptr_t)big[first]);
	EXPECT_EQ(d->len, sizeof(big[0]));
	EXPECT_TRUE(memcmp(big[first], data, sizeof(big[0])) == 0);
	EXPECT_TRUE(take(PORT1_TX, &id));
	EXPECT_TRUE(take(PORT1_TX, &id));
	EXPECT_EQ(desc_of(PORT1_TX)[id].len, sizeof(data) - 2 * sizeof(big[0]));
	EXPECT_FALSE(take(PORT1_TX, &id));
	EXPECT_FALSE(vcon_port_tx_buffers(-1, big, sizeof(big[0])));
}
