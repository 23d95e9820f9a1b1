/* SPDX-License-Identifier: MIT */
/* The legal-value table (include/abi/snapshot_legal.h) as the hypervisor uses
 * it: a restore or an incoming migration checks every record with it before
 * installing anything, and masks what it installs with it; a snapshot or an
 * outgoing migration masks what it writes with it, so that Carapace never
 * writes a record it would refuse. Pure: host-tested (tests/unit). */
#include <stddef.h>
#include <string.h>
#include <abi/snapshot_legal.h>
#include <snapshot.h>

struct bit_rule {
	uint16_t offset;
	uint8_t size;
	uint64_t any, zicfilp, zicfiss, svadu;
	const char *why;
};

struct value_rule {
	uint16_t offset;
	uint8_t size, shift;
	uint64_t mask, legal;
	const char *why;
};

#define FIELD(type, f)	offsetof(struct type, f), sizeof(((struct type *)0)->f)

#define BITS_WHY(f, what)	#f " has a bit a guest given this VM's ISA cannot hold (legal: " what ")"
#define VALUE_WHY(f, what)	#f " is out of range (legal: " what ")"
#define CONFIG_BIT(f, any, lp, ss, ad, what) \
	{ FIELD(snap_config, f), any, lp, ss, ad, BITS_WHY(f, what) },
#define VCPU_BIT(f, any, lp, ss, ad, what) { FIELD(snap_vcpu, f), any, lp, ss, ad, BITS_WHY(f, what) },
#define CONFIG_VALUE(f, shift, mask, legal, what) \
	{ FIELD(snap_config, f), shift, mask, legal, VALUE_WHY(f, what) },
#define VCPU_VALUE(f, shift, mask, legal, what) \
	{ FIELD(snap_vcpu, f), shift, mask, legal, VALUE_WHY(f, what) },

static const struct bit_rule config_bits[] = { SNAP_CONFIG_BITS(CONFIG_BIT) };
static const struct bit_rule vcpu_bits[] = { SNAP_VCPU_BITS(VCPU_BIT) };
static const struct value_rule config_values[] = { SNAP_CONFIG_VALUES(CONFIG_VALUE) };
static const struct value_rule vcpu_values[] = { SNAP_VCPU_VALUES(VCPU_VALUE) };

struct readonly_rule {
	uint16_t offset;
	uint8_t size;
	uint64_t bits;
};

#define VCPU_READONLY(f, bits, what) { FIELD(snap_vcpu, f), bits },
static const struct readonly_rule vcpu_readonly[] = { SNAP_VCPU_READONLY(VCPU_READONLY) };

/* Fields are u8, u32 or u64, little-endian like the hypervisor and its hosts. */
static uint64_t get(const void *rec, uint16_t offset, uint8_t size)
{
	const uint8_t *p = (const uint8_t *)rec + offset;
	uint32_t w;
	uint64_t d;

	switch (size) {
	case 1: return *p;
	case 4: memcpy(&w, p, sizeof(w)); return w;
	default: memcpy(&d, p, sizeof(d)); return d;
	}
}

static void put(void *rec, uint16_t offset, uint8_t size, uint64_t v)
{
	uint8_t *p = (uint8_t *)rec + offset;
	uint32_t w = (uint32_t)v;

	switch (size) {
	case 1: *p = (uint8_t)v; break;
	case 4: memcpy(p, &w, sizeof(w)); break;
	default: memcpy(p, &v, sizeof(v)); break;
	}
}

static uint64_t allowed(const struct bit_rule *r, uint32_t features)
{
	return r->any | ((features & SNAP_FEAT_ZICFILP) ? r->zicfilp : 0) |
	       ((features & SNAP_FEAT_ZICFISS) ? r->zicfiss : 0) |
	       ((features & SNAP_FEAT_SVADU) ? r->svadu : 0);
}

static bool value_ok(const struct value_rule *r, uint64_t field)
{
	uint64_t v = (field >> r->shift) & r->mask;

	return v < 64 && (r->legal >> v & 1);
}

static const char *check(const void *rec, uint32_t features, const struct bit_rule *bits,
			 size_t nr_bits, const struct value_rule *values, size_t nr_values,
			 uint32_t *offset)
{
	for (size_t i = 0; i < nr_bits; i++)
		if (get(rec, bits[i].offset, bits[i].size) & ~allowed(&bits[i], features)) {
			*offset = bits[i].offset;
			return bits[i].why;
		}
	for (size_t i = 0; i < nr_values; i++)
		if (!value_ok(&values[i], get(rec, values[i].offset, values[i].size))) {
			*offset = values[i].offset;
			return values[i].why;
		}
	return NULL;
}

const char *snap_legal_config(const struct snap_config *c, uint32_t *offset)
{
	return check(c, 0, config_bits, ARRAY_SIZE(config_bits), config_values,
		     ARRAY_SIZE(config_values), offset);
}

const char *snap_legal_vcpu(const struct snap_vcpu *s, uint32_t features, uint32_t *offset)
{
	return check(s, features, vcpu_bits, ARRAY_SIZE(vcpu_bits), vcpu_values,
		     ARRAY_SIZE(vcpu_values), offset);
}

void snap_legal_vcpu_mask(struct snap_vcpu *s, uint32_t features)
{
	for (size_t i = 0; i < ARRAY_SIZE(vcpu_bits); i++) {
		const struct bit_rule *r = &vcpu_bits[i];

		put(s, r->offset, r->size, get(s, r->offset, r->size) & allowed(r, features));
	}
	for (size_t i = 0; i < ARRAY_SIZE(vcpu_readonly); i++) {
		const struct readonly_rule *r = &vcpu_readonly[i];

		put(s, r->offset, r->size, get(s, r->offset, r->size) & ~r->bits);
	}
}
