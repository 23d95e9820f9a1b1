/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the virtual switches, hyp/vdev/vswitch.c
 * (docs/fuzzing.md, "More targets"). A guest chooses every byte of the
 * frames its NIC sends, and the operator attaches and detaches NICs: the
 * input is a script of such operations on 3 switches and 24 ports.
 *
 * Ports 0, 5, 10, 15 and 20 are uplinks (MACs 52:54:00:00:01:i); the others
 * are VM ports with MAC 52:54:00:00:00:(i % 22), so port 23 has port 1's (an
 * attach refused for a MAC already on the switch) and 17 VM ports have
 * distinct MACs (a full switch: 16 ports); port 19 has a multicast MAC and
 * can never attach.
 *
 * Each operation is one byte, op = b % 4, and its arguments:
 *   0 attach  port, switch            result checked against a model
 *   1 detach  port
 *   2 send    port, dst, src, len(2)  frame built from the choices below
 *   3 send    port, len(2), raw bytes the whole frame from the input
 * dst/src choice c: c % 8 < 4: the MAC of port c / 8 % 24; 4: broadcast;
 * 5: a multicast group; 6: slirp's gateway 52:55:0a:00:02:02; 7: all zero.
 *
 * Checked, at every delivery: the receiver is attached to the sender's
 * switch (no frame crosses switches, none reaches a detached port), is not
 * the sender, gets a unicast only if its MAC is the destination or it is the
 * uplink and no VM port of the switch has that MAC, never gets a frame from
 * a VM port with another source MAC; the length is 14..1514 and the bytes
 * are the sender's. After each send: exactly the receivers an independent
 * model of the rules names, each once, and the sender's counters moved by
 * one frame (tx or drop). After the script, every port is detached and every
 * switch destroyed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <vswitch.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NR_SW		3
#define NR_PORTS	24

static struct vswitch *sw[NR_SW];
static struct vswitch_port ports[NR_PORTS];
static int model_sw[NR_PORTS];		/* switch a port is on, -1: none */
static unsigned int got[NR_PORTS];	/* deliveries during one send */
static const uint8_t *sent;
static uint32_t sent_len;
static int sender;

static const uint8_t BCAST[ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t MCAST[ETH_ALEN] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t GATEWAY[ETH_ALEN] = { 0x52, 0x55, 0x0a, 0x00, 0x02, 0x02 };
static const uint8_t ZERO[ETH_ALEN];

static bool is_uplink(int i)
{
	return i % 5 == 0;
}

/* the VM port of switch @s with MAC @mac, or -1 */
static int model_owner(int s, const uint8_t *mac)
{
	for (int i = 0; i < NR_PORTS; i++)
		if (model_sw[i] == s && !is_uplink(i) && !memcmp(ports[i].mac, mac, ETH_ALEN))
			return i;
	return -1;
}

static int model_uplink(int s)
{
	for (int i = 0; i < NR_PORTS; i++)
		if (model_sw[i] == s && is_uplink(i))
			return i;
	return -1;
}

static void deliver(void *ctx, const void *frame, uint32_t len)
{
	int me = (int)(intptr_t)ctx;
	const uint8_t *f = frame;
	int s = model_sw[sender];

	CHECK(me >= 0 && me < NR_PORTS && me != sender);
	CHECK(s >= 0 && model_sw[me] == s);
	CHECK(frame == sent && len == sent_len);
	CHECK(len >= VSWITCH_FRAME_MIN && len <= VSWITCH_FRAME_MAX);
	if (!is_uplink(sender))
		CHECK(!memcmp(f + ETH_ALEN, ports[sender].mac, ETH_ALEN));
	if (!(f[0] & 1)) {
		if (is_uplink(me))
			CHECK(model_owner(s, f) < 0);
		else
			CHECK(!memcmp(f, ports[me].mac, ETH_ALEN));
	}
	got[me]++;
}

/* The receivers the rules name for a frame from @from (docs/security.md). */
static void model_expect(int from, const uint8_t *f, uint32_t len, bool want[NR_PORTS])
{
	int s = model_sw[from];

	memset(want, 0, NR_PORTS * sizeof(bool));
	if (s < 0 || len < VSWITCH_FRAME_MIN || len > VSWITCH_FRAME_MAX)
		return;
	if (!is_uplink(from) && memcmp(f + ETH_ALEN, ports[from].mac, ETH_ALEN))
		return;
	if (f[ETH_ALEN] & 1)
		return;
	if (f[0] & 1) {
		for (int i = 0; i < NR_PORTS; i++)
			want[i] = i != from && model_sw[i] == s;
		return;
	}
	if (model_owner(s, f) >= 0) {
		if (model_owner(s, f) != from)
			want[model_owner(s, f)] = true;
		return;
	}
	if (model_uplink(s) >= 0 && model_uplink(s) != from)
		want[model_uplink(s)] = true;
}

static void send(int from, const uint8_t *f, uint32_t len)
{
	bool want[NR_PORTS];
	struct vswitch_counters before, after;
	bool any = false;

	model_expect(from, f, len, want);
	memset(got, 0, sizeof(got));
	sender = from;
	sent = f;
	sent_len = len;
	vswitch_port_counters(&ports[from], &before);
	vswitch_tx(&ports[from], f, len);
	vswitch_port_counters(&ports[from], &after);
	for (int i = 0; i < NR_PORTS; i++) {
		CHECK(got[i] == (want[i] ? 1u : 0u));
		any |= want[i];
	}
	if (any)
		CHECK(after.tx_frames == before.tx_frames + 1 && after.tx_drops == before.tx_drops &&
		      after.tx_bytes == before.tx_bytes + len);
	else
		CHECK(after.tx_drops == before.tx_drops + 1 && after.tx_frames == before.tx_frames);
}

static int model_attach(int p, int s)
{
	int n = 0;

	if (!vswitch_mac_valid_unicast(ports[p].mac))
		return -HYP_EINVAL;
	if (model_sw[p] >= 0)
		return -HYP_EBUSY;
	if ((!is_uplink(p) && model_owner(s, ports[p].mac) >= 0) ||
	    (is_uplink(p) && model_uplink(s) >= 0))
		return -HYP_EEXIST;
	for (int i = 0; i < NR_PORTS; i++)
		n += model_sw[i] == s;
	return n == VSWITCH_MAX_PORTS ? -HYP_ENOMEM : 0;
}

static const uint8_t *choice(uint8_t c)
{
	switch (c % 8) {
	case 4: return BCAST;
	case 5: return MCAST;
	case 6: return GATEWAY;
	case 7: return ZERO;
	default: return ports[c / 8 % NR_PORTS].mac;
	}
}

static void setup(void)
{
	static const char *const names[NR_SW] = { "lan", "dmz", "wan" };

	for (int i = 0; i < NR_SW; i++)
		CHECK(vswitch_create(names[i], &sw[i]) == 0);
	for (int i = 0; i < NR_PORTS; i++) {
		uint8_t mac[ETH_ALEN] = { 0x52, 0x54, 0x00, 0x00, 0x00, (uint8_t)(i % 22) };

		if (is_uplink(i)) {
			mac[4] = 1;
			mac[5] = (uint8_t)i;
		}
		if (i == 19)
			mac[0] = 0x01;
		vswitch_port_init(&ports[i], is_uplink(i) ? VSWITCH_PORT_UPLINK : VSWITCH_PORT_VM,
				  mac, deliver, (void *)(intptr_t)i);
		model_sw[i] = -1;
	}
}

static void teardown(void)
{
	for (int i = 0; i < NR_PORTS; i++) {
		vswitch_detach(&ports[i]);
		CHECK(!ports[i].attached && !ports[i].inflight);
	}
	for (int i = 0; i < NR_SW; i++)
		CHECK(vswitch_destroy(sw[i]) == 0);
	CHECK(vswitch_at(0) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[VSWITCH_FRAME_MAX + 64];
	size_t i = 0;

	setup();
	while (i < size) {
		uint8_t op = data[i++] % 4;
		int p, s, rc;
		uint32_t len;

		if (i >= size)
			break;
		p = data[i++] % NR_PORTS;
		switch (op) {
		case 0:
			if (i >= size)
				break;
			s = data[i++] % NR_SW;
			rc = vswitch_attach(sw[s], &ports[p]);
			CHECK(rc == model_attach(p, s));
			if (!rc)
				model_sw[p] = s;
			CHECK(ports[p].attached == (model_sw[p] >= 0));
			break;
		case 1:
			vswitch_detach(&ports[p]);
			model_sw[p] = -1;
			CHECK(!ports[p].attached);
			break;
		case 2:
			if (i + 4 > size)
				break;
			len = (uint32_t)(data[i + 2] | data[i + 3] << 8) % (VSWITCH_FRAME_MAX + 40);
			memset(frame, 0x5a, sizeof(frame));
			memcpy(frame, choice(data[i]), ETH_ALEN);
			memcpy(frame + ETH_ALEN, choice(data[i + 1]), ETH_ALEN);
			i += 4;
			send(p, frame, len);
			break;
		default:
			if (i + 2 > size)
				break;
			len = (uint32_t)(data[i] | data[i + 1] << 8) % (VSWITCH_FRAME_MAX + 40);
			i += 2;
			memset(frame, 0, sizeof(frame));
			memcpy(frame, data + i, MIN(len, (uint32_t)(size - i)));
			i += MIN(len, (uint32_t)(size - i));
			send(p, frame, len);
			break;
		}
	}
	if (fuzz_verbose())
		fprintf(stderr, "fuzz_vswitch: %zu bytes of script\n", size);
	teardown();
	return 0;
}
