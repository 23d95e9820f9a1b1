/* SPDX-License-Identifier: MIT */
/* A virtual APLIC domain in MSI mode (aplic_model.h). */
#include <aplic.h>
#include <aplic_model.h>
#include <bitops.h>
#include <stddef.h>
#include <string.h>

#define NR_SRC	APLIC_MODEL_SOURCES

static uint32_t mode(const struct aplic_state *s, uint32_t i)
{
	return s->sourcecfg[i] & APLIC_SOURCECFG_SM_MASK;
}

/* The sources whose mode is in @modes (a bit per SM value). */
static uint32_t sources_in(const struct aplic_state *s, uint32_t modes)
{
	uint32_t bits = 0;

	for (uint32_t i = 1; i < NR_SRC; i++)
		if (modes >> mode(s, i) & 1)
			bits |= 1u << i;
	return bits;
}

#define M(sm)		(1u << (sm))
#define ACTIVE		(M(APLIC_SM_DETACHED) | M(APLIC_SM_EDGE_RISE) | M(APLIC_SM_EDGE_FALL) | \
			 M(APLIC_SM_LEVEL_HIGH) | M(APLIC_SM_LEVEL_LOW))
#define LEVEL		(M(APLIC_SM_LEVEL_HIGH) | M(APLIC_SM_LEVEL_LOW))
#define INVERTED	(M(APLIC_SM_EDGE_FALL) | M(APLIC_SM_LEVEL_LOW))
#define WIRED		(M(APLIC_SM_EDGE_RISE) | M(APLIC_SM_EDGE_FALL) | LEVEL)

static bool legal_mode(uint32_t sm)
{
	return sm <= APLIC_SOURCECFG_SM_MASK && (M(APLIC_SM_INACTIVE) | ACTIVE) >> sm & 1;
}

/* Rectified inputs: the wire, inverted for Edge0/Level0; 0 for inactive and
 * detached sources. */
static uint32_t rectified(const struct aplic_state *s)
{
	return (s->level ^ sources_in(s, INVERTED)) & sources_in(s, WIRED);
}

/* A setip* write: an active source becomes pending, except a level source
 * whose rectified input is low (MSI mode). */
static void set_pending(struct aplic_state *s, uint32_t bits)
{
	uint32_t level = sources_in(s, LEVEL);

	s->pending |= bits & sources_in(s, ACTIVE) & (~level | rectified(s));
}

/* A source number written to a *num register: its bit, 0 if no source. */
static uint32_t source_bit(uint32_t val)
{
	return val && val < NR_SRC ? 1u << val : 0;
}

/* Send what is due: IE, enabled and pending. Sending clears pending. */
static void forward(struct aplic_state *s, aplic_send_fn send, void *ctx)
{
	uint32_t due;

	if (!(s->domaincfg & APLIC_DOMAINCFG_IE))
		return;
	due = s->pending & s->enabled;
	s->pending &= ~due;
	for (; due; due &= due - 1) {
		uint32_t t = s->target[bit_first(due)];

		if (send)
			send(ctx, t >> APLIC_TARGET_HART_SHIFT,
			     t >> APLIC_TARGET_GUEST_SHIFT & APLIC_TARGET_GUEST_MAX,
			     t & APLIC_TARGET_EIID_MASK);
	}
}

void aplic_model_reset(struct aplic_state *s)
{
	memset(s, 0, sizeof(*s));
}

uint32_t aplic_model_read(const struct aplic_state *s, uint32_t off)
{
	if (off & 3)
		return 0;
	if (off == APLIC_DOMAINCFG)
		return APLIC_DOMAINCFG_RO | APLIC_DOMAINCFG_DM | (s->domaincfg & APLIC_DOMAINCFG_IE);
	if (off < APLIC_SOURCECFG(NR_SRC))
		return s->sourcecfg[off / 4];
	if (off == APLIC_SETIP(0))
		return s->pending & APLIC_MODEL_SRC_MASK;
	if (off == APLIC_IN_CLRIP(0))
		return rectified(s);
	if (off == APLIC_SETIE(0))
		return s->enabled & APLIC_MODEL_SRC_MASK;
	if (off == APLIC_GENMSI)
		return s->genmsi & APLIC_MODEL_TARGET_MASK;
	if (off > APLIC_GENMSI && off < APLIC_TARGET(NR_SRC))
		return s->target[(off - APLIC_GENMSI) / 4];
	return 0;
}

/* sourcecfg[i] <- @val. Only SM exists (no child domain: a D write makes the
 * register 0, as reserved SM values do). A level source is pending only
 * while its rectified input is high, and the write counts as that input
 * rising if it makes it high (the spec lets a sourcecfg write set pending
 * then), so a line asserted before its driver set the mode is not lost;
 * edge sources wait for an edge. */
static void write_sourcecfg(struct aplic_state *s, uint32_t i, uint32_t val)
{
	uint32_t bit = 1u << i, sm = val & APLIC_SOURCECFG_SM_MASK;
	uint32_t was_high = rectified(s) & bit;

	if ((val & APLIC_SOURCECFG_D) || !legal_mode(sm))
		sm = APLIC_SM_INACTIVE;
	s->sourcecfg[i] = sm;
	if (sm == APLIC_SM_INACTIVE) {
		s->pending &= ~bit;
		s->enabled &= ~bit;
		s->target[i] = 0;
	} else if (LEVEL >> sm & 1) {
		if (!(rectified(s) & bit))
			s->pending &= ~bit;
		else if (!was_high)
			s->pending |= bit;
	}
}

void aplic_model_write(struct aplic_state *s, uint32_t off, uint32_t val,
		       aplic_send_fn send, void *ctx)
{
	uint32_t active = sources_in(s, ACTIVE);

	if (off & 3)
		return;
	if (off == APLIC_DOMAINCFG) {
		s->domaincfg = val & APLIC_DOMAINCFG_IE;
	} else if (off >= APLIC_SOURCECFG(1) && off < APLIC_SOURCECFG(NR_SRC)) {
		write_sourcecfg(s, off / 4, val);
	} else if (off == APLIC_SETIP(0)) {
		set_pending(s, val);
	} else if (off == APLIC_SETIPNUM || off == APLIC_SETIPNUM_LE) {
		set_pending(s, source_bit(val));
	} else if (off == APLIC_IN_CLRIP(0)) {
		s->pending &= ~(val & active);
	} else if (off == APLIC_CLRIPNUM) {
		s->pending &= ~(source_bit(val) & active);
	} else if (off == APLIC_SETIE(0)) {
		s->enabled |= val & active;
	} else if (off == APLIC_SETIENUM) {
		s->enabled |= source_bit(val) & active;
	} else if (off == APLIC_CLRIE(0)) {
		s->enabled &= ~val;
	} else if (off == APLIC_CLRIENUM) {
		s->enabled &= ~source_bit(val);
	} else if (off == APLIC_GENMSI) {
		/* extempore: sent now, IE or not; Busy is over before a read */
		s->genmsi = val & APLIC_MODEL_TARGET_MASK;
		if (send)
			send(ctx, s->genmsi >> APLIC_TARGET_HART_SHIFT, 0,
			     s->genmsi & APLIC_TARGET_EIID_MASK);
	} else if (off > APLIC_GENMSI && off < APLIC_TARGET(NR_SRC)) {
		uint32_t i = (off - APLIC_GENMSI) / 4;

		if (active >> i & 1)	/* an inactive source's target is read-only 0 */
			s->target[i] = val & APLIC_MODEL_TARGET_MASK;
	}
	/* setipnum_be, read-only and reserved offsets: nothing */
	forward(s, send, ctx);
}

void aplic_model_set_level(struct aplic_state *s, uint32_t src, bool level,
			   aplic_send_fn send, void *ctx)
{
	uint32_t bit, was_high;

	if (!src || src >= NR_SRC)
		return;
	bit = 1u << src;
	was_high = rectified(s) & bit;
	s->level = level ? s->level | bit : s->level & ~bit;
	if (rectified(s) & bit) {
		if (!was_high)	/* a rising edge: edge and level sources alike */
			s->pending |= bit;
	} else if (sources_in(s, LEVEL) & bit) {
		s->pending &= ~bit;	/* a level source pends only while asserted */
	}
	forward(s, send, ctx);
}

#define AT(field)	offsetof(struct aplic_state, field)

const char *aplic_model_check(const struct aplic_state *s, uint32_t *offset)
{
	uint32_t active = sources_in(s, ACTIVE);

	if (s->domaincfg & ~APLIC_DOMAINCFG_IE) {
		*offset = AT(domaincfg);
		return "domaincfg holds bits other than IE";
	}
	for (uint32_t i = 0; i < NR_SRC; i++) {
		if (!legal_mode(s->sourcecfg[i]) || (i == 0 && s->sourcecfg[i])) {
			*offset = AT(sourcecfg) + 4 * i;
			return "sourcecfg is not an implemented source mode";
		}
	}
	for (uint32_t i = 0; i < NR_SRC; i++) {
		if ((s->target[i] & ~APLIC_MODEL_TARGET_MASK) ||
		    (s->target[i] && !(active >> i & 1))) {
			*offset = AT(target) + 4 * i;
			return "target has a guest index, or its source is inactive";
		}
	}
	if (s->pending & ~active) {
		*offset = AT(pending);
		return "pending has a bit of an inactive source";
	}
	if (s->pending & sources_in(s, LEVEL) & ~rectified(s)) {
		*offset = AT(pending);
		return "pending has a bit of a level source whose input is low";
	}
	if ((s->domaincfg & APLIC_DOMAINCFG_IE) && (s->pending & s->enabled)) {
		*offset = AT(pending);
		return "pending has a bit of an enabled source with IE set: its MSI would have been sent";
	}
	if (s->enabled & ~active) {
		*offset = AT(enabled);
		return "enabled has a bit of an inactive source";
	}
	if (s->level & ~APLIC_MODEL_SRC_MASK) {
		*offset = AT(level);
		return "level has the bit of source 0";
	}
	if (s->genmsi & ~APLIC_MODEL_TARGET_MASK) {
		*offset = AT(genmsi);
		return "genmsi has bits outside hart index and EIID";
	}
	if (s->pad) {
		*offset = AT(pad);
		return "pad is not 0";
	}
	return NULL;
}
