/* SPDX-License-Identifier: MIT */
/* An IMSIC interrupt file in software (imsic_file.h). */
#include <bitops.h>
#include <errno.h>
#include <imsic_file.h>
#include <string.h>

/* Identities beyond the arrays would index past them: cap at the most. */
static uint32_t cap(uint32_t nr_ids)
{
	return nr_ids > IMSIC_FILE_MAX_IDS ? IMSIC_FILE_MAX_IDS : nr_ids;
}

void imsic_file_reset(struct imsic_file *f)
{
	memset(f, 0, sizeof(*f));
}

uint64_t imsic_word_mask(uint32_t nr_ids, uint32_t w)
{
	uint64_t m = w ? ~0ull : ~1ull;		/* identity 0 never exists */
	uint32_t first = 64 * w;

	nr_ids = cap(nr_ids);
	if (w >= IMSIC_FILE_WORDS || first > nr_ids)
		return 0;
	if (nr_ids - first < 63)
		m &= (2ull << (nr_ids - first)) - 1;
	return m;
}

uint32_t imsic_topei(const struct imsic_file *f, uint32_t nr_ids)
{
	uint32_t limit = cap(nr_ids);

	/* a threshold P lets only identities below P through; 0 lets all */
	if (f->eithreshold && f->eithreshold - 1 < limit)
		limit = f->eithreshold - 1;
	for (uint32_t w = 0; w <= limit / 64; w++) {
		uint64_t bits = f->eip[w] & f->eie[w] & imsic_word_mask(limit, w);

		if (bits)
			return 64 * w + bit_first(bits);
	}
	return 0;
}

bool imsic_signal(const struct imsic_file *f, uint32_t nr_ids)
{
	return f->eidelivery == 1 && imsic_topei(f, nr_ids);
}

uint64_t imsic_topei_csr(const struct imsic_file *f, uint32_t nr_ids)
{
	uint64_t id = imsic_topei(f, nr_ids);

	return id << IMSIC_TOPEI_ID_SHIFT | id;
}

uint32_t imsic_claim(struct imsic_file *f, uint32_t nr_ids)
{
	uint32_t id = imsic_topei(f, nr_ids);

	if (id)
		f->eip[id / 64] &= ~(1ull << (id % 64));
	return id;
}

bool imsic_set_pending(struct imsic_file *f, uint32_t nr_ids, uint32_t id)
{
	bool before;

	if (!id || id > cap(nr_ids))
		return false;
	before = imsic_signal(f, nr_ids);
	f->eip[id / 64] |= 1ull << (id % 64);
	return !before && imsic_signal(f, nr_ids);
}

int imsic_rmw(struct imsic_file *f, uint32_t nr_ids, uint64_t isel, uint64_t *old,
	      uint64_t val, uint64_t wmask)
{
	uint64_t *word, mask, cur, next;

	if (isel < IMSIC_ISEL_FIRST || isel > IMSIC_ISEL_LAST)
		return -HYP_EINVAL;
	/* a pure read (csrrs/csrrc with x0) writes nothing */
	if (isel >= IMSIC_ISEL_EIP0) {
		uint32_t n = (uint32_t)(isel - IMSIC_ISEL_EIP0) % 64;	/* eipN or eieN */

		if (n & 1)
			return -HYP_EINVAL;	/* RV64: odd numbers do not exist */
		word = isel >= IMSIC_ISEL_EIE0 ? &f->eie[n / 2] : &f->eip[n / 2];
		mask = imsic_word_mask(nr_ids, n / 2);
		cur = *word & mask;
		if (wmask)
			*word = ((cur & ~wmask) | (val & wmask)) & mask;
	} else if (isel == IMSIC_ISEL_EIDELIVERY) {
		cur = f->eidelivery;
		if (wmask)
			f->eidelivery = (uint32_t)((cur & ~wmask) | (val & wmask)) & 1;
	} else if (isel == IMSIC_ISEL_EITHRESHOLD) {
		cur = f->eithreshold;
		next = (cur & ~wmask) | (val & wmask);
		if (wmask)
			f->eithreshold = next <= cap(nr_ids) ? (uint32_t)next : 0;
	} else {
		cur = 0;	/* reserved: reads 0, writes ignored */
	}
	if (old)
		*old = cur;
	return 0;
}
