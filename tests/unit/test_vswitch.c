/* SPDX-License-Identifier: MIT */
/* hyp/vdev/vswitch.c: every forwarding rule (spoofed sources, unicast to one
 * port only, broadcast and multicast to the others of the same switch,
 * unknown unicast to the uplink only, lengths, detached ports), the attach
 * refusals, the switch table, and that detach waits for a delivery under way
 * while deliver() runs without the switch's lock. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <vswitch.h>
#include "test.h"

struct sink {
	unsigned int frames;
	uint32_t last_len;
	uint8_t last[VSWITCH_FRAME_MAX];
};

static void sink_deliver(void *ctx, const void *frame, uint32_t len)
{
	struct sink *s = ctx;

	s->frames++;
	s->last_len = len;
	memcpy(s->last, frame, len);
}

static const uint8_t BCAST[ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t MCAST[ETH_ALEN] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
static const uint8_t GATEWAY[ETH_ALEN] = { 0x52, 0x55, 0x0a, 0x00, 0x02, 0x02 };

static void mac_of(uint8_t mac[ETH_ALEN], unsigned int n)
{
	const uint8_t m[ETH_ALEN] = { 0x52, 0x54, 0x00, 0x12, 0x34, (uint8_t)n };

	memcpy(mac, m, ETH_ALEN);
}

static uint32_t frame(uint8_t *buf, const uint8_t dst[ETH_ALEN], const uint8_t src[ETH_ALEN],
		      uint32_t len)
{
	memset(buf, 0xa5, len);
	memcpy(buf, dst, ETH_ALEN);
	memcpy(buf + ETH_ALEN, src, ETH_ALEN);
	return len;
}

/* A switch "lan" with VM ports a, b, c (MACs ..:01, ..:02, ..:03) and an
 * uplink u; a second switch "dmz" with VM port d (..:04) and uplink e. */
static struct vswitch *lan, *dmz;
static struct vswitch_port pa, pb, pc, pu, pd, pe;
static struct sink sa, sb, sc, su, sd, se;

static void port(struct vswitch *sw, struct vswitch_port *p, struct sink *s,
		 enum vswitch_port_kind kind, unsigned int n)
{
	uint8_t mac[ETH_ALEN];

	mac_of(mac, n);
	memset(s, 0, sizeof(*s));
	vswitch_port_init(p, kind, mac, sink_deliver, s);
	EXPECT_EQ(vswitch_attach(sw, p), 0);
}

static void teardown(void)
{
	struct vswitch *sw;

	while ((sw = vswitch_at(0))) {
		for (unsigned int i = 0; i < VSWITCH_MAX_PORTS; i++)
			if (sw->ports[i])
				vswitch_detach(sw->ports[i]);
		EXPECT_EQ(vswitch_destroy(sw), 0);
	}
}

static void setup(void)
{
	teardown();
	EXPECT_EQ(vswitch_create("lan", &lan), 0);
	EXPECT_EQ(vswitch_create("dmz", &dmz), 0);
	port(lan, &pa, &sa, VSWITCH_PORT_VM, 1);
	port(lan, &pb, &sb, VSWITCH_PORT_VM, 2);
	port(lan, &pc, &sc, VSWITCH_PORT_VM, 3);
	port(lan, &pu, &su, VSWITCH_PORT_UPLINK, 0x10);
	port(dmz, &pd, &sd, VSWITCH_PORT_VM, 4);
	port(dmz, &pe, &se, VSWITCH_PORT_UPLINK, 0x11);
	alarm(5);	/* a deadlock fails the test instead of hanging it */
}

static unsigned int total_rx(void)
{
	return sa.frames + sb.frames + sc.frames + su.frames + sd.frames + se.frames;
}

TEST(vswitch_unicast_reaches_only_its_port)
{
	uint8_t buf[64];

	setup();
	vswitch_tx(&pa, buf, frame(buf, pb.mac, pa.mac, 60));
	EXPECT_EQ(sb.frames, 1);
	EXPECT_EQ(sb.last_len, 60);
	EXPECT_EQ(memcmp(sb.last, buf, 60), 0);
	EXPECT_EQ(total_rx(), 1);	/* not c, not the uplink, not dmz */
	EXPECT_EQ(pa.c.tx_frames, 1);
	EXPECT_EQ(pa.c.tx_bytes, 60);
	EXPECT_EQ(pb.c.rx_frames, 1);
	EXPECT_EQ(pb.c.rx_bytes, 60);
	/* the uplink side's unicast to a VM: that VM only */
	vswitch_tx(&pu, buf, frame(buf, pc.mac, GATEWAY, 60));
	EXPECT_EQ(sc.frames, 1);
	EXPECT_EQ(total_rx(), 2);
}

TEST(vswitch_spoofed_source_is_dropped)
{
	uint8_t buf[64];

	setup();
	/* a: source b's MAC, to b and to everybody */
	vswitch_tx(&pa, buf, frame(buf, pb.mac, pb.mac, 60));
	vswitch_tx(&pa, buf, frame(buf, BCAST, pc.mac, 60));
	vswitch_tx(&pa, buf, frame(buf, GATEWAY, GATEWAY, 60));
	EXPECT_EQ(total_rx(), 0);
	EXPECT_EQ(pa.c.tx_drops, 3);
	EXPECT_EQ(pa.c.tx_spoofed, 3);
	EXPECT_EQ(pa.c.tx_frames, 0);
	/* the uplink speaks for many addresses, but never a group address */
	vswitch_tx(&pu, buf, frame(buf, pa.mac, GATEWAY, 60));
	EXPECT_EQ(sa.frames, 1);
	vswitch_tx(&pu, buf, frame(buf, pa.mac, BCAST, 60));
	EXPECT_EQ(sa.frames, 1);
	EXPECT_EQ(pu.c.tx_drops, 1);
	EXPECT_EQ(pu.c.tx_spoofed, 0);
}

TEST(vswitch_broadcast_and_multicast_reach_the_others_of_the_switch)
{
	uint8_t buf[64];

	setup();
	vswitch_tx(&pa, buf, frame(buf, BCAST, pa.mac, 42));
	EXPECT_EQ(sa.frames, 0);	/* not back to the sender */
	EXPECT_EQ(sb.frames, 1);
	EXPECT_EQ(sc.frames, 1);
	EXPECT_EQ(su.frames, 1);
	EXPECT_EQ(sd.frames + se.frames, 0);	/* not across switches */
	vswitch_tx(&pa, buf, frame(buf, MCAST, pa.mac, 42));
	EXPECT_EQ(sb.frames, 2);
	EXPECT_EQ(sc.frames, 2);
	EXPECT_EQ(su.frames, 2);
	EXPECT_EQ(sd.frames + se.frames, 0);
	/* from the uplink: every VM of the switch */
	vswitch_tx(&pu, buf, frame(buf, BCAST, GATEWAY, 42));
	EXPECT_EQ(sa.frames, 1);
	EXPECT_EQ(sb.frames, 3);
	EXPECT_EQ(su.frames, 2);
	EXPECT_EQ(sd.frames + se.frames, 0);
}

TEST(vswitch_unknown_unicast_goes_to_the_uplink_only)
{
	uint8_t buf[64];

	setup();
	vswitch_tx(&pa, buf, frame(buf, GATEWAY, pa.mac, 60));
	EXPECT_EQ(su.frames, 1);
	EXPECT_EQ(total_rx(), 1);
	/* the uplink's own NIC address is no VM's: the uplink too */
	vswitch_tx(&pa, buf, frame(buf, pu.mac, pa.mac, 60));
	EXPECT_EQ(su.frames, 2);
	EXPECT_EQ(total_rx(), 2);
	/* unknown unicast from the uplink is not reflected, nor flooded */
	vswitch_tx(&pu, buf, frame(buf, GATEWAY, GATEWAY, 60));
	EXPECT_EQ(total_rx(), 2);
	EXPECT_EQ(pu.c.tx_drops, 1);
	/* no uplink: dropped and counted */
	vswitch_detach(&pu);
	vswitch_tx(&pa, buf, frame(buf, GATEWAY, pa.mac, 60));
	EXPECT_EQ(total_rx(), 2);
	EXPECT_EQ(pa.c.tx_drops, 1);
}

TEST(vswitch_frames_never_cross_switches)
{
	uint8_t buf[64];

	setup();
	/* a VM on lan addressing d (on dmz): lan's uplink, never d */
	vswitch_tx(&pa, buf, frame(buf, pd.mac, pa.mac, 60));
	EXPECT_EQ(sd.frames, 0);
	EXPECT_EQ(su.frames, 1);
	/* and d addressing a: dmz's uplink */
	vswitch_tx(&pd, buf, frame(buf, pa.mac, pd.mac, 60));
	EXPECT_EQ(sa.frames, 0);
	EXPECT_EQ(se.frames, 1);
	/* the same MAC may live on two switches: each switch has its own */
	{
		struct vswitch_port twin;
		struct sink st = { 0 };

		vswitch_port_init(&twin, VSWITCH_PORT_VM, pa.mac, sink_deliver, &st);
		EXPECT_EQ(vswitch_attach(dmz, &twin), 0);
		vswitch_tx(&pb, buf, frame(buf, pa.mac, pb.mac, 60));
		EXPECT_EQ(sa.frames, 1);
		EXPECT_EQ(st.frames, 0);
		vswitch_detach(&twin);
	}
}

TEST(vswitch_frame_lengths)
{
	uint8_t buf[VSWITCH_FRAME_MAX + 1];

	setup();
	vswitch_tx(&pa, buf, frame(buf, pb.mac, pa.mac, VSWITCH_FRAME_MIN - 1));
	vswitch_tx(&pa, buf, frame(buf, pb.mac, pa.mac, VSWITCH_FRAME_MAX + 1));
	vswitch_tx(&pa, buf, 0);
	EXPECT_EQ(sb.frames, 0);
	EXPECT_EQ(pa.c.tx_drops, 3);
	vswitch_tx(&pa, buf, frame(buf, pb.mac, pa.mac, VSWITCH_FRAME_MIN));
	EXPECT_EQ(sb.frames, 1);
	EXPECT_EQ(sb.last_len, VSWITCH_FRAME_MIN);
	vswitch_tx(&pa, buf, frame(buf, pb.mac, pa.mac, VSWITCH_FRAME_MAX));
	EXPECT_EQ(sb.frames, 2);
	EXPECT_EQ(sb.last_len, VSWITCH_FRAME_MAX);
	EXPECT_EQ(pa.c.tx_drops, 3);
}

TEST(vswitch_detached_port_gets_and_sends_nothing)
{
	uint8_t buf[64];

	setup();
	vswitch_detach(&pb);
	EXPECT_FALSE(pb.attached);
	vswitch_tx(&pa, buf, frame(buf, BCAST, pa.mac, 60));
	EXPECT_EQ(sb.frames, 0);
	EXPECT_EQ(sc.frames, 1);
	/* b's MAC is unknown now: to the uplink, not to b */
	vswitch_tx(&pa, buf, frame(buf, pb.mac, pa.mac, 60));
	EXPECT_EQ(sb.frames, 0);
	EXPECT_EQ(su.frames, 2);
	vswitch_tx(&pb, buf, frame(buf, BCAST, pb.mac, 60));
	vswitch_tx(&pb, buf, frame(buf, pa.mac, pb.mac, 60));
	EXPECT_EQ(sa.frames, 0);
	EXPECT_EQ(pb.c.tx_drops, 2);
	EXPECT_EQ(pb.c.tx_frames, 0);
	/* never attached at all: the same */
	{
		struct vswitch_port lone;
		uint8_t mac[ETH_ALEN];

		mac_of(mac, 9);
		vswitch_port_init(&lone, VSWITCH_PORT_VM, mac, sink_deliver, &sb);
		vswitch_tx(&lone, buf, frame(buf, BCAST, mac, 60));
		EXPECT_EQ(lone.c.tx_drops, 1);
		EXPECT_EQ(total_rx(), 3);
	}
	/* attached again, it works again */
	EXPECT_EQ(vswitch_attach(lan, &pb), 0);
	vswitch_tx(&pa, buf, frame(buf, pb.mac, pa.mac, 60));
	EXPECT_EQ(sb.frames, 1);
}

TEST(vswitch_unicast_to_self_is_dropped)
{
	uint8_t buf[64];

	setup();
	vswitch_tx(&pa, buf, frame(buf, pa.mac, pa.mac, 60));
	EXPECT_EQ(total_rx(), 0);
	EXPECT_EQ(pa.c.tx_drops, 1);
}

TEST(vswitch_attach_refusals)
{
	struct vswitch_port p, q;
	struct sink s;
	uint8_t mac[ETH_ALEN];
	static const uint8_t zero[ETH_ALEN];

	setup();
	vswitch_port_init(&p, VSWITCH_PORT_VM, MCAST, sink_deliver, &s);
	EXPECT_EQ(vswitch_attach(lan, &p), -HYP_EINVAL);
	vswitch_port_init(&p, VSWITCH_PORT_VM, BCAST, sink_deliver, &s);
	EXPECT_EQ(vswitch_attach(lan, &p), -HYP_EINVAL);
	vswitch_port_init(&p, VSWITCH_PORT_VM, zero, sink_deliver, &s);
	EXPECT_EQ(vswitch_attach(lan, &p), -HYP_EINVAL);
	mac_of(mac, 0x20);
	vswitch_port_init(&p, VSWITCH_PORT_VM, mac, NULL, &s);
	EXPECT_EQ(vswitch_attach(lan, &p), -HYP_EINVAL);
	vswitch_port_init(&p, (enum vswitch_port_kind)7, mac, sink_deliver, &s);
	EXPECT_EQ(vswitch_attach(lan, &p), -HYP_EINVAL);
	/* b's MAC again on lan */
	vswitch_port_init(&p, VSWITCH_PORT_VM, pb.mac, sink_deliver, &s);
	EXPECT_EQ(vswitch_attach(lan, &p), -HYP_EEXIST);
	/* a second uplink */
	vswitch_port_init(&p, VSWITCH_PORT_UPLINK, mac, sink_deliver, &s);
	EXPECT_EQ(vswitch_attach(lan, &p), -HYP_EEXIST);
	/* a port already attached, to the same or another switch */
	EXPECT_EQ(vswitch_attach(lan, &pa), -HYP_EBUSY);
	EXPECT_EQ(vswitch_attach(dmz, &pa), -HYP_EBUSY);
	/* the refusals changed nothing */
	vswitch_port_init(&q, VSWITCH_PORT_VM, mac, sink_deliver, &s);
	EXPECT_EQ(vswitch_attach(lan, &q), 0);
	EXPECT_EQ(lan->uplink, &pu);
}

TEST(vswitch_ports_per_switch_are_bounded)
{
	static struct vswitch_port many[VSWITCH_MAX_PORTS];
	static struct sink s;
	uint8_t mac[ETH_ALEN];
	unsigned int ok = 0;

	setup();
	for (unsigned int i = 0; i < VSWITCH_MAX_PORTS; i++) {
		mac_of(mac, 0x40 + i);
		vswitch_port_init(&many[i], VSWITCH_PORT_VM, mac, sink_deliver, &s);
		ok += vswitch_attach(dmz, &many[i]) == 0;
	}
	EXPECT_EQ(ok, VSWITCH_MAX_PORTS - 2);	/* d and e were there */
	EXPECT_EQ(vswitch_attach(dmz, &many[VSWITCH_MAX_PORTS - 1]), -HYP_ENOMEM);
	/* a broadcast reaches each of the others once */
	{
		uint8_t buf[64];

		vswitch_tx(&pd, buf, frame(buf, BCAST, pd.mac, 60));
		EXPECT_EQ(s.frames, VSWITCH_MAX_PORTS - 2);
		EXPECT_EQ(se.frames, 1);
	}
}

TEST(vswitch_table)
{
	struct vswitch *sw;
	char name[8];

	setup();
	EXPECT_EQ(vswitch_find("lan"), lan);
	EXPECT_EQ(vswitch_find("dmz"), dmz);
	EXPECT_EQ(vswitch_find("wan"), NULL);
	EXPECT_EQ(vswitch_create("lan", &sw), -HYP_EEXIST);
	EXPECT_EQ(vswitch_create("", &sw), -HYP_EINVAL);
	EXPECT_EQ(vswitch_create("Lan", &sw), -HYP_EINVAL);
	EXPECT_EQ(vswitch_create("a,b", &sw), -HYP_EINVAL);
	EXPECT_EQ(vswitch_create("sixteen-chars-xx", &sw), -HYP_EINVAL);
	EXPECT_EQ(vswitch_create("fifteen-chars-x", &sw), 0);
	for (unsigned int i = 0; i < VSWITCH_MAX - 3; i++) {
		memcpy(name, "sw0", 4);
		name[2] = (char)('0' + i);
		EXPECT_EQ(vswitch_create(name, NULL), 0);
	}
	EXPECT_EQ(vswitch_create("one-too-many", &sw), -HYP_ENOMEM);
	EXPECT_NE(vswitch_at(VSWITCH_MAX - 1), NULL);
	EXPECT_EQ(vswitch_at(VSWITCH_MAX), NULL);
	/* a switch with ports stays */
	EXPECT_EQ(vswitch_destroy(lan), -HYP_EBUSY);
	EXPECT_EQ(vswitch_find("lan"), lan);
	teardown();
	EXPECT_EQ(vswitch_at(0), NULL);
}

/* Detach while a delivery to the port is under way: the delivery runs with the
 * switch's lock free (it can itself send), and detach returns only after it. */
static struct {
	int entered, release, done, detached;
	struct vswitch_port *reply_on;
} slow;

static void slow_deliver(void *ctx, const void *f, uint32_t len)
{
	uint8_t buf[64];

	(void)ctx;
	(void)f;
	(void)len;
	__atomic_store_n(&slow.entered, 1, __ATOMIC_SEQ_CST);
	/* the switch's lock is free: sending from here does not deadlock */
	vswitch_tx(slow.reply_on, buf, frame(buf, pa.mac, slow.reply_on->mac, 60));
	while (!__atomic_load_n(&slow.release, __ATOMIC_SEQ_CST))
		usleep(100);
	__atomic_store_n(&slow.done, 1, __ATOMIC_SEQ_CST);
}

static void *sender(void *arg)
{
	uint8_t buf[64];

	(void)arg;
	vswitch_tx(&pa, buf, frame(buf, pb.mac, pa.mac, 60));
	return NULL;
}

static void *detacher(void *arg)
{
	(void)arg;
	vswitch_detach(&pb);
	__atomic_store_n(&slow.detached, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

TEST(vswitch_detach_waits_for_a_delivery_in_flight)
{
	pthread_t t1, t2;

	setup();
	memset(&slow, 0, sizeof(slow));
	slow.reply_on = &pb;
	pb.deliver = slow_deliver;
	pthread_create(&t1, NULL, sender, NULL);
	while (!__atomic_load_n(&slow.entered, __ATOMIC_SEQ_CST))
		usleep(100);
	EXPECT_EQ(sa.frames, 1);	/* b's reply, sent from inside its deliver */
	pthread_create(&t2, NULL, detacher, NULL);
	usleep(20000);
	/* detach has taken b out (it gets no new frame) but has not returned */
	EXPECT_FALSE(__atomic_load_n(&pb.attached, __ATOMIC_SEQ_CST));
	EXPECT_EQ(__atomic_load_n(&slow.detached, __ATOMIC_SEQ_CST), 0);
	__atomic_store_n(&slow.release, 1, __ATOMIC_SEQ_CST);
	pthread_join(t2, NULL);
	EXPECT_EQ(__atomic_load_n(&slow.done, __ATOMIC_SEQ_CST), 1);
	pthread_join(t1, NULL);
	EXPECT_EQ(pb.inflight, 0);
}
