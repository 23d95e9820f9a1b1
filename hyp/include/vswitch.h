/* SPDX-License-Identifier: MIT */
/* Virtual Ethernet switches inside the hypervisor (hyp/vdev/vswitch.c; rules:
 * docs/security.md, "Virtual switches").
 *
 * A switch has a name and up to VSWITCH_MAX_PORTS ports: the NICs of VMs
 * (each with its own fixed MAC) and at most one uplink (a host NIC, behind
 * which sit many addresses). A port is a struct its owner embeds (a guest
 * NIC model, the host NIC's glue) and hands to vswitch_attach(); the switch
 * keeps a pointer to it while attached. Frames move as whole Ethernet frames
 * (destination MAC, source MAC, type, payload; no FCS) that the caller has
 * already copied into hypervisor memory.
 *
 * Forwarding of a frame sent on port P of switch S (vswitch_tx()):
 *  - 14 <= length <= 1514, else dropped;
 *  - P must be attached to S; a VM port's frames must carry P's MAC as
 *    source (no spoofing); an uplink's frames must not carry a multicast
 *    source;
 *  - broadcast/multicast destination: every other attached port of S;
 *  - a destination equal to the MAC of an attached VM port of S other than P:
 *    that port only;
 *  - any other unicast destination: the uplink of S only, if S has one and P
 *    is not it; else dropped (a VM port's unicast to its own MAC too).
 * So a VM never receives another VM's unicast, and no frame leaves its switch.
 *
 * Locking. Each switch has one spinlock, a leaf: nothing else is locked while
 * it is held (the switch table's lock is taken before it, never inside it). vswitch_tx() picks the receiving ports under it, marks each one
 * busy (an in-flight count), drops it, and only then calls the receivers'
 * deliver(); vswitch_detach() takes the port out under the lock and then
 * waits until no delivery to it is in flight, so once it returns the port's
 * deliver() is never called again and its owner may free ctx. Hence:
 *  - vswitch_tx() may run on any hart at once, for any ports;
 *  - deliver() may run on several harts at once for one port (frames from
 *    different senders): it must serialise itself; it may call vswitch_tx()
 *    (the lock is not held) but must not detach its own port (it would wait
 *    for itself);
 *  - a caller of vswitch_tx() or vswitch_detach() must hold no lock that any
 *    deliver() takes (a guest NIC sends with its receive side unlocked: two
 *    NICs sending to each other would otherwise deadlock, and a detach
 *    would wait for a delivery that waits for it);
 *  - attach and detach of one port are the port owner's to serialise;
 *  - the hypervisor's code runs with interrupts masked, so no call can
 *    interrupt a holder of a switch's lock on its own hart.
 * Work per frame is bounded: one pass over at most VSWITCH_MAX_PORTS ports,
 * then at most VSWITCH_MAX_PORTS - 1 deliveries. */
#ifndef HYP_VSWITCH_H
#define HYP_VSWITCH_H
#include <types.h>
#include <atomic.h>

#define VSWITCH_MAX		8	/* switches on one host */
#define VSWITCH_MAX_PORTS	16	/* ports on one switch, the uplink included */
#define VSWITCH_NAME_LEN	16	/* NUL included: [a-z0-9_-]{1,15} */
#define ETH_ALEN		6
#define ETH_HLEN		14	/* destination, source, type */
#define VSWITCH_FRAME_MIN	ETH_HLEN
#define VSWITCH_FRAME_MAX	1514	/* 1500 bytes of payload, no VLAN tag, no FCS */

enum vswitch_port_kind {
	VSWITCH_PORT_VM,	/* a VM's NIC: one fixed unicast MAC, enforced */
	VSWITCH_PORT_UPLINK,	/* the host side: any source, gets unknown unicast */
};

/* Frame counts of one port, as seen from the port: tx is what it sent into
 * the switch and the switch took, rx what the switch handed to its deliver(). */
struct vswitch_counters {
	uint64_t rx_frames, rx_bytes;
	uint64_t tx_frames, tx_bytes;
	uint64_t tx_drops;	/* frames it sent that went nowhere (every reason) */
	uint64_t tx_spoofed;	/* of those: a VM port's frame with another source MAC */
};

/* @deliver gets a frame the switch forwards to this port: @frame is valid
 * only during the call (the sender's copy, shared by every receiver: read
 * it, never write it), 14 <= @len <= 1514. */
typedef void (*vswitch_deliver_fn)(void *ctx, const void *frame, uint32_t len);

struct vswitch;

struct vswitch_port {
	enum vswitch_port_kind kind;
	uint8_t mac[ETH_ALEN];		/* a VM port's own address; the uplink's NIC address */
	vswitch_deliver_fn deliver;
	void *ctx;
	struct vswitch_counters c;	/* updated atomically; read with vswitch_port_counters() */
	bool attached;			/* written under the switch's lock */
	struct vswitch *sw;		/* the switch it was last attached to */
	uint32_t inflight;		/* deliveries to it under way (atomic) */
};

struct vswitch {
	char name[VSWITCH_NAME_LEN];
	bool used;
	struct spinlock lock;
	struct vswitch_port *ports[VSWITCH_MAX_PORTS];	/* NULL: free slot */
	struct vswitch_port *uplink;			/* one of ports[], or NULL */
};

/** vswitch_create() - a new switch named @name ([a-z0-9_-]{1,15}). Boot time,
 *  from the host DT's switch list. -HYP_EINVAL for a bad name, -HYP_EEXIST if
 *  a switch has that name, -HYP_ENOMEM when VSWITCH_MAX exist. */
int vswitch_create(const char *name, struct vswitch **out);
/** vswitch_find() - the switch named @name, or NULL. */
struct vswitch *vswitch_find(const char *name);
/** vswitch_at() - the i-th switch in use (listing), or NULL past the end. */
struct vswitch *vswitch_at(unsigned int i);
/** vswitch_destroy() - forget a switch; -HYP_EBUSY while a port is attached. */
int vswitch_destroy(struct vswitch *sw);

/** vswitch_port_init() - fill @p (not attached): @kind, @mac, @deliver(@ctx),
 *  counters zero. */
void vswitch_port_init(struct vswitch_port *p, enum vswitch_port_kind kind,
		       const uint8_t mac[ETH_ALEN], vswitch_deliver_fn deliver, void *ctx);
/** vswitch_attach() - connect @p to @sw. Refused: -HYP_EBUSY if @p is attached
 *  somewhere, -HYP_EINVAL for a MAC that is multicast or all zero or a NULL
 *  deliver, -HYP_EEXIST for a second uplink or a MAC already on @sw, -HYP_ENOMEM
 *  when @sw has VSWITCH_MAX_PORTS ports. */
int vswitch_attach(struct vswitch *sw, struct vswitch_port *p);
/** vswitch_has_mac() - a port attached to @sw has @mac (a restore looks
 *  before it attaches a copy of a VM beside its original). */
bool vswitch_has_mac(struct vswitch *sw, const uint8_t mac[ETH_ALEN]);
/** vswitch_detach() - disconnect @p (nothing if it is not attached); returns
 *  once no delivery to @p is in flight. Never from @p's own deliver(). */
void vswitch_detach(struct vswitch_port *p);
/** vswitch_tx() - send the frame @frame (@len bytes, a hypervisor copy) on @p
 *  by the rules above. Counted in @p's counters (tx or tx_drops) and in each
 *  receiver's rx. A port that is not attached sends nothing. */
void vswitch_tx(struct vswitch_port *p, const void *frame, uint32_t len);
/** vswitch_port_counters() - a copy of @p's counters. */
void vswitch_port_counters(const struct vswitch_port *p, struct vswitch_counters *out);

/** vswitch_mac_is_multicast() - the group bit (broadcast included). */
static inline bool vswitch_mac_is_multicast(const uint8_t mac[ETH_ALEN])
{
	return mac[0] & 1;
}
/** vswitch_mac_valid_unicast() - what a port's own MAC must be. */
bool vswitch_mac_valid_unicast(const uint8_t mac[ETH_ALEN]);
#endif
