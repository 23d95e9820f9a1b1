/* SPDX-License-Identifier: MIT */
/* The record tables (include/abi/snapshot_records.h) as the hypervisor uses
 * them: one engine checks a record's every field against its legal values,
 * masks what a save writes and a restore installs, and copies the fields that
 * are plain members of struct vcpu_guest both ways; the tables say which.
 * Restore, incoming migration, snapshot and outgoing migration alike, for
 * the vCPU records and the device states (include/abi/snapshot_devices.h,
 * whose rows the models hand over in struct vdev_ops). Also the CONFIG
 * table and the frozen version 2 VCPU layout. Pure: host-tested
 * (tests/unit). */
#include <stddef.h>
#include <string.h>
#include <snapshot.h>

#define CONFIG_FIELD(name, type, dim, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_config, name, type), bits, value, ro, live, SNAP_WHY(name, what) },
const struct snap_field snap_config_fields[] = { SNAP_CONFIG_FIELDS(CONFIG_FIELD) };
const size_t snap_nr_config_fields = ARRAY_SIZE(snap_config_fields);

#define V2_FIELD(name, type, dim) \
	{ #name, offsetof(struct snap_vcpu_v2, name), sizeof(type), \
	  sizeof(((struct snap_vcpu_v2 *)0)->name) / sizeof(type) },
const struct snap_v2_field snap_vcpu_v2_fields[] = { SNAP_VCPU_V2_FIELDS(V2_FIELD) };
const size_t snap_nr_vcpu_v2_fields = ARRAY_SIZE(snap_vcpu_v2_fields);

/* Fields are u8, u32 or u64 (or char, never ruled), little-endian like the
 * hypervisor and its hosts; @size is that of the memory at @p. */
uint64_t snap_get(const void *p, size_t size)
{
	uint64_t d = 0;

	switch (size) {
	case 1: return *(const uint8_t *)p;
	case 2: { uint16_t h; memcpy(&h, p, 2); return h; }
	case 4: { uint32_t w; memcpy(&w, p, 4); return w; }
	default: memcpy(&d, p, sizeof(d)); return d;
	}
}

void snap_put(void *p, size_t size, uint64_t v)
{
	switch (size) {
	case 1: *(uint8_t *)p = (uint8_t)v; break;
	case 2: { uint16_t h = (uint16_t)v; memcpy(p, &h, 2); break; }
	case 4: { uint32_t w = (uint32_t)v; memcpy(p, &w, 4); break; }
	default: memcpy(p, &v, sizeof(v)); break;
	}
}

static uint64_t allowed(const struct snap_field *f, uint32_t features)
{
	return f->any | ((features & SNAP_FEAT_ZICFILP) ? f->zicfilp : 0) |
	       ((features & SNAP_FEAT_ZICFISS) ? f->zicfiss : 0) |
	       ((features & SNAP_FEAT_SVADU) ? f->svadu : 0);
}

static bool value_ok(const struct snap_field *f, uint64_t field)
{
	uint64_t v = (field >> f->shift) & f->vmask;

	return v < 64 && (f->legal >> v & 1);
}

const char *snap_fields_check(const void *rec, const struct snap_field *fields, size_t n,
			      uint32_t features, uint32_t *offset)
{
	for (size_t i = 0; i < n; i++) {
		const struct snap_field *f = &fields[i];

		for (unsigned int e = 0; e < f->count; e++) {
			uint32_t at = f->offset + e * f->width;
			uint64_t v = snap_get((const uint8_t *)rec + at, f->width);

			*offset = at;
			if (v & ~allowed(f, features))
				return f->bits_why;
			if (!value_ok(f, v))
				return f->value_why;
		}
	}
	return NULL;
}

void snap_fields_mask(void *rec, const struct snap_field *fields, size_t n, uint32_t features)
{
	for (size_t i = 0; i < n; i++) {
		const struct snap_field *f = &fields[i];

		for (unsigned int e = 0; e < f->count; e++) {
			uint8_t *p = (uint8_t *)rec + f->offset + e * f->width;

			snap_put(p, f->width, snap_get(p, f->width) & allowed(f, features) & ~f->readonly);
		}
	}
}

/* Each live member is the field's element type or an integer of another
 * width (an enum, a bool): element by element. */
void snap_fields_save(const void *live, void *rec, const struct snap_field *fields, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct snap_field *f = &fields[i];
		size_t lw = f->live_size / f->count;

		if (f->live < 0)
			continue;
		for (unsigned int e = 0; e < f->count; e++)
			snap_put((uint8_t *)rec + f->offset + e * f->width, f->width,
				 snap_get((const uint8_t *)live + f->live + e * lw, lw));
	}
}

void snap_fields_load(void *live, const void *rec, const struct snap_field *fields, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct snap_field *f = &fields[i];
		size_t lw = f->live_size / f->count;

		if (f->live < 0)
			continue;
		for (unsigned int e = 0; e < f->count; e++)
			snap_put((uint8_t *)live + f->live + e * lw, lw,
				 snap_get((const uint8_t *)rec + f->offset + e * f->width, f->width));
	}
}

const struct snap_v2_field *snap_v2_field(const char *name)
{
	for (size_t i = 0; i < snap_nr_vcpu_v2_fields; i++)
		if (!strcmp(snap_vcpu_v2_fields[i].name, name))
			return &snap_vcpu_v2_fields[i];
	return NULL;
}

const char *snap_legal_config(const struct snap_config *c, uint32_t *offset)
{
	return snap_fields_check(c, snap_config_fields, snap_nr_config_fields, 0, offset);
}
