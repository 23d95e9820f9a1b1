/* SPDX-License-Identifier: MIT */
/* Virtual Ethernet switches: the table of switches, port attach/detach, and
 * forwarding with each port's MAC enforced (rules and lock order:
 * hyp/include/vswitch.h). */
#include <string.h>
#include <errno.h>
#include <names.h>
#include <vswitch.h>

static struct vswitch switches[VSWITCH_MAX];
/* Guards the table (create, destroy, find, at); taken before a switch's lock,
 * never inside one. */
static struct spinlock table_lock = SPINLOCK_INIT;

static bool name_valid(const char *name)
{
	return name_ok(name, VSWITCH_NAME_LEN);
}

static struct vswitch *find_locked(const char *name)
{
	for (unsigned int i = 0; i < VSWITCH_MAX; i++)
		if (switches[i].used && !strncmp(switches[i].name, name, VSWITCH_NAME_LEN))
			return &switches[i];
	return NULL;
}

int vswitch_create(const char *name, struct vswitch **out)
{
	struct vswitch *sw = NULL;
	int rc = 0;

	if (!name_valid(name))
		return -HYP_EINVAL;
	spin_lock(&table_lock);
	if (find_locked(name)) {
		rc = -HYP_EEXIST;
		goto out;
	}
	for (unsigned int i = 0; i < VSWITCH_MAX && !sw; i++)
		if (!switches[i].used)
			sw = &switches[i];
	if (!sw) {
		rc = -HYP_ENOMEM;
		goto out;
	}
	memset(sw, 0, sizeof(*sw));
	memcpy(sw->name, name, strlen(name) + 1);
	sw->used = true;
	if (out)
		*out = sw;
out:
	spin_unlock(&table_lock);
	return rc;
}

struct vswitch *vswitch_find(const char *name)
{
	struct vswitch *sw;

	spin_lock(&table_lock);
	sw = find_locked(name);
	spin_unlock(&table_lock);
	return sw;
}

struct vswitch *vswitch_at(unsigned int i)
{
	struct vswitch *sw = NULL;

	spin_lock(&table_lock);
	for (unsigned int j = 0; j < VSWITCH_MAX; j++) {
		if (switches[j].used && i-- == 0) {
			sw = &switches[j];
			break;
		}
	}
	spin_unlock(&table_lock);
	return sw;
}

int vswitch_destroy(struct vswitch *sw)
{
	int rc = 0;

	spin_lock(&table_lock);
	spin_lock(&sw->lock);
	for (unsigned int i = 0; i < VSWITCH_MAX_PORTS; i++)
		if (sw->ports[i])
			rc = -HYP_EBUSY;
	if (!rc)
		sw->used = false;
	spin_unlock(&sw->lock);
	spin_unlock(&table_lock);
	return rc;
}

bool vswitch_mac_valid_unicast(const uint8_t mac[ETH_ALEN])
{
	static const uint8_t zero[ETH_ALEN];

	return !vswitch_mac_is_multicast(mac) && memcmp(mac, zero, ETH_ALEN);
}

void vswitch_port_init(struct vswitch_port *p, enum vswitch_port_kind kind,
		       const uint8_t mac[ETH_ALEN], vswitch_deliver_fn deliver, void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	memcpy(p->mac, mac, ETH_ALEN);
	p->deliver = deliver;
	p->ctx = ctx;
}

int vswitch_attach(struct vswitch *sw, struct vswitch_port *p)
{
	int free_slot = -1, rc = 0;

	if (!p->deliver || !vswitch_mac_valid_unicast(p->mac) ||
	    (p->kind != VSWITCH_PORT_VM && p->kind != VSWITCH_PORT_UPLINK))
		return -HYP_EINVAL;
	if (atomic_load(&p->attached))
		return -HYP_EBUSY;
	spin_lock(&sw->lock);
	for (unsigned int i = 0; i < VSWITCH_MAX_PORTS; i++) {
		struct vswitch_port *q = sw->ports[i];

		if (!q) {
			if (free_slot < 0)
				free_slot = (int)i;
			continue;
		}
		/* one owner per MAC, or "the port with this MAC" is ambiguous */
		if (q == p || !memcmp(q->mac, p->mac, ETH_ALEN))
			rc = -HYP_EEXIST;
	}
	if (!rc && p->kind == VSWITCH_PORT_UPLINK && sw->uplink)
		rc = -HYP_EEXIST;
	if (!rc && free_slot < 0)
		rc = -HYP_ENOMEM;
	if (!rc) {
		sw->ports[free_slot] = p;
		if (p->kind == VSWITCH_PORT_UPLINK)
			sw->uplink = p;
		p->sw = sw;
		atomic_store(&p->attached, true);
	}
	spin_unlock(&sw->lock);
	return rc;
}

bool vswitch_has_mac(struct vswitch *sw, const uint8_t mac[ETH_ALEN])
{
	bool found = false;

	spin_lock(&sw->lock);
	for (unsigned int i = 0; i < VSWITCH_MAX_PORTS; i++)
		if (sw->ports[i] && !memcmp(sw->ports[i]->mac, mac, ETH_ALEN))
			found = true;
	spin_unlock(&sw->lock);
	return found;
}

void vswitch_detach(struct vswitch_port *p)
{
	struct vswitch *sw = atomic_load(&p->sw);

	if (!sw)
		return;
	spin_lock(&sw->lock);
	for (unsigned int i = 0; i < VSWITCH_MAX_PORTS; i++)
		if (sw->ports[i] == p)
			sw->ports[i] = NULL;
	if (sw->uplink == p)
		sw->uplink = NULL;
	atomic_store(&p->attached, false);
	spin_unlock(&sw->lock);
	/* a sender that picked @p before the lock above is still delivering */
	while (atomic_load(&p->inflight))
		;
}

static void count_drop(struct vswitch_port *p, bool spoofed)
{
	atomic_add(&p->c.tx_drops, 1);
	if (spoofed)
		atomic_add(&p->c.tx_spoofed, 1);
}

/* Pick the receivers of a frame from @p on @sw (its lock held); each one is
 * marked in flight. Returns how many, or -1 if @p may not send it. */
static int pick_receivers(struct vswitch *sw, struct vswitch_port *p, const uint8_t *frame,
			  struct vswitch_port **to, bool *spoofed)
{
	const uint8_t *dst = frame, *src = frame + ETH_ALEN;
	bool member = false, multicast = vswitch_mac_is_multicast(dst);
	struct vswitch_port *exact = NULL;
	int n = 0;

	for (unsigned int i = 0; i < VSWITCH_MAX_PORTS; i++) {
		struct vswitch_port *q = sw->ports[i];

		if (!q)
			continue;
		if (q == p) {
			member = true;
			continue;
		}
		if (multicast)
			to[n++] = q;
		else if (q->kind == VSWITCH_PORT_VM && !memcmp(q->mac, dst, ETH_ALEN))
			exact = q;
	}
	/* membership, not p->attached: @p may have moved to another switch
	 * since the caller read p->sw */
	if (!member)
		return -1;
	if (p->kind == VSWITCH_PORT_VM && memcmp(src, p->mac, ETH_ALEN)) {
		*spoofed = true;
		return -1;
	}
	if (vswitch_mac_is_multicast(src))
		return -1;
	if (!multicast) {
		/* a VM port's unicast to itself is not reflected, nor sent out */
		bool to_self = p->kind == VSWITCH_PORT_VM && !memcmp(dst, p->mac, ETH_ALEN);

		if (exact)
			to[n++] = exact;
		else if (sw->uplink && sw->uplink != p && !to_self)
			to[n++] = sw->uplink;
		/* else to nobody: dropped */
	}
	for (int i = 0; i < n; i++)
		atomic_add(&to[i]->inflight, 1);
	return n;
}

void vswitch_tx(struct vswitch_port *p, const void *frame, uint32_t len)
{
	struct vswitch *sw = atomic_load(&p->sw);
	struct vswitch_port *to[VSWITCH_MAX_PORTS];
	bool spoofed = false;
	int n;

	if (!sw || len < VSWITCH_FRAME_MIN || len > VSWITCH_FRAME_MAX) {
		count_drop(p, false);
		return;
	}
	spin_lock(&sw->lock);
	n = pick_receivers(sw, p, frame, to, &spoofed);
	spin_unlock(&sw->lock);
	if (n <= 0) {
		count_drop(p, spoofed);
		return;
	}
	atomic_add(&p->c.tx_frames, 1);
	atomic_add(&p->c.tx_bytes, len);
	for (int i = 0; i < n; i++) {
		struct vswitch_port *q = to[i];

		atomic_add(&q->c.rx_frames, 1);
		atomic_add(&q->c.rx_bytes, len);
		q->deliver(q->ctx, frame, len);
		/* release: vswitch_detach() sees the delivery over only after it is */
		__atomic_fetch_sub(&q->inflight, 1, __ATOMIC_RELEASE);
	}
}

void vswitch_port_counters(const struct vswitch_port *p, struct vswitch_counters *out)
{
	out->rx_frames = atomic_load(&p->c.rx_frames);
	out->rx_bytes = atomic_load(&p->c.rx_bytes);
	out->tx_frames = atomic_load(&p->c.tx_frames);
	out->tx_bytes = atomic_load(&p->c.tx_bytes);
	out->tx_drops = atomic_load(&p->c.tx_drops);
	out->tx_spoofed = atomic_load(&p->c.tx_spoofed);
}
