/* SPDX-License-Identifier: MIT */
/* The driver's side of a split virtqueue (split_ring.h). */
#include <split_ring.h>
#include <string.h>

void sring_init(struct sring *r, struct virtq_desc *desc, void *avail, void *used, uint16_t num)
{
	*r = (struct sring){ .desc = desc, .avail = avail, .used = used, .num = num };
	memset(desc, 0, sizeof(*desc) * num);
	/* flags, idx, the ring, used_event */
	memset(avail, 0, sizeof(struct sring_avail) + sizeof(uint16_t) * (num + 1u));
	/* flags, idx, the ring, avail_event */
	memset(used, 0, sizeof(struct sring_used) + sizeof(struct virtq_used_elem) * num + 2);
}

bool sring_publish(struct sring *r)
{
	if (r->published == r->avail_idx)
		return false;
	virt_wmb();	/* descriptors, ring entries and buffer data before the index */
	WRITE_ONCE(r->avail->idx, r->avail_idx);
	r->published = r->avail_idx;
	virt_mb();	/* the index before reading the device's flags */
	return !(READ_ONCE(r->used->flags) & VIRTQ_USED_F_NO_NOTIFY);
}

uint16_t sring_pending(const struct sring *r)
{
	uint16_t n = (uint16_t)(READ_ONCE(r->used->idx) - r->last_used);

	if (n)
		virt_rmb();	/* the entries and the buffer data after the index */
	return n;
}

void sring_take(struct sring *r, uint32_t *id, uint32_t *len)
{
	const struct virtq_used_elem *e = &r->used->ring[r->last_used % r->num];

	*id = READ_ONCE(e->id);
	*len = READ_ONCE(e->len);
	r->last_used++;
}
