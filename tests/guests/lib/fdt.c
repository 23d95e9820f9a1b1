/* SPDX-License-Identifier: MIT */
/* Small read-only FDT walker: path lookup, properties, children (no writes). */
#include "fdt.h"

#define FDT_MAGIC	0xd00dfeedu
#define FDT_BEGIN_NODE	1
#define FDT_END_NODE	2
#define FDT_PROP	3
#define FDT_NOP		4
#define FDT_END		9

static const uint8_t *blob;
static const uint8_t *structs;
static const char *strings;
static uint32_t struct_size;

/* Byte loads: the blob's alignment is the loader's business, not ours. */
uint32_t fdt_be32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

uint64_t fdt_read_cells(const void *p, int cells)
{
	const uint8_t *b = p;
	uint64_t v = 0;

	while (cells-- > 0) {
		v = v << 32 | fdt_be32(b);
		b += 4;
	}
	return v;
}

int fdt_init(const void *fdt)
{
	uint32_t off_struct, off_strings;

	blob = fdt;
	if (!fdt || fdt_be32(blob) != FDT_MAGIC)
		return -1;
	off_struct = fdt_be32(blob + 8);
	off_strings = fdt_be32(blob + 12);
	struct_size = fdt_be32(blob + 36);
	structs = blob + off_struct;
	strings = (const char *)blob + off_strings;
	return 0;
}

static uint32_t align4(uint32_t x)
{
	return (x + 3) & ~3u;
}

/* Tag at @off; *next = offset of the tag after it (skipping its payload). */
static uint32_t next_tag(int off, int *next)
{
	uint32_t tag, len;

	if (off < 0 || (uint32_t)off + 4 > struct_size)
		return FDT_END;
	tag = fdt_be32(structs + off);
	off += 4;
	switch (tag) {
	case FDT_BEGIN_NODE:
		off += align4(strlen((const char *)structs + off) + 1);
		break;
	case FDT_PROP:
		len = fdt_be32(structs + off);
		off += 8 + align4(len);
		break;
	case FDT_END_NODE:
	case FDT_NOP:
		break;
	default:
		return FDT_END;
	}
	*next = off;
	return tag;
}

const char *fdt_node_name(int node)
{
	return (const char *)structs + node + 4;
}

/* Offset just past the END_NODE matching the BEGIN_NODE at @node. */
static int skip_node(int node)
{
	int depth = 0, off = node, next;

	for (;;) {
		switch (next_tag(off, &next)) {
		case FDT_BEGIN_NODE:
			depth++;
			break;
		case FDT_END_NODE:
			if (--depth == 0)
				return next;
			break;
		case FDT_END:
			return -1;
		}
		off = next;
	}
}

/* First tag after the node's properties: a child, or its END_NODE. */
static int after_props(int node)
{
	int off, next;
	uint32_t tag;

	next_tag(node, &off);
	while ((tag = next_tag(off, &next)) == FDT_PROP || tag == FDT_NOP)
		off = next;
	return off;
}

int fdt_first_child(int node)
{
	int off = after_props(node), next;

	return next_tag(off, &next) == FDT_BEGIN_NODE ? off : -1;
}

int fdt_next_sibling(int node)
{
	int off = skip_node(node), next;
	uint32_t tag;

	while ((tag = next_tag(off, &next)) == FDT_NOP)
		off = next;
	return tag == FDT_BEGIN_NODE ? off : -1;
}

const void *fdt_getprop(int node, const char *name, int *len)
{
	int off, next;
	uint32_t tag;

	if (node < 0)
		return NULL;
	next_tag(node, &off);
	while ((tag = next_tag(off, &next)) == FDT_PROP || tag == FDT_NOP) {
		if (tag == FDT_PROP &&
		    !strcmp(strings + fdt_be32(structs + off + 8), name)) {
			if (len)
				*len = (int)fdt_be32(structs + off + 4);
			return structs + off + 12;
		}
		off = next;
	}
	return NULL;
}

static bool has_unit(const char *comp, size_t n)
{
	while (n--)
		if (*comp++ == '@')
			return true;
	return false;
}

/* "memory" matches "memory@80000000"; a component with '@' must match whole. */
static bool name_matches(const char *name, const char *comp, size_t n)
{
	if (strncmp(name, comp, n))
		return false;
	return name[n] == '\0' || (name[n] == '@' && !has_unit(comp, n));
}

int fdt_path_offset(const char *path)
{
	int node = 0;

	if (!blob || *path != '/')
		return -1;
	for (path++; node >= 0 && *path; ) {
		size_t n = 0;
		int child;

		while (path[n] && path[n] != '/')
			n++;
		for (child = fdt_first_child(node); child >= 0;
		     child = fdt_next_sibling(child))
			if (name_matches(fdt_node_name(child), path, n))
				break;
		node = child;
		path += n;
		while (*path == '/')
			path++;
	}
	return node;
}

bool fdt_chosen_u32(const char *name, uint32_t *out)
{
	int len;
	const void *p = fdt_getprop(fdt_path_offset("/chosen"), name, &len);

	if (!p || len != 4)
		return false;
	*out = fdt_be32(p);
	return true;
}

const char *fdt_chosen_str(const char *name)
{
	int len;
	const char *p = fdt_getprop(fdt_path_offset("/chosen"), name, &len);

	/* Only hand out properly terminated strings. */
	if (!p || len < 1 || p[len - 1] != '\0')
		return NULL;
	return p;
}

static int cells_of(int node, const char *name, int dflt)
{
	const void *p = fdt_getprop(node, name, NULL);

	return p ? (int)fdt_be32(p) : dflt;
}

int fdt_memory(uint64_t *base, uint64_t *size)
{
	int ac = cells_of(0, "#address-cells", 2);
	int sc = cells_of(0, "#size-cells", 1);
	int len;
	const uint8_t *reg = fdt_getprop(fdt_path_offset("/memory"), "reg",
					 &len);

	if (!reg || len < (ac + sc) * 4)
		return -1;
	*base = fdt_read_cells(reg, ac);
	*size = fdt_read_cells(reg + ac * 4, sc);
	return 0;
}

int fdt_cpu_hartids(unsigned long *ids, int max)
{
	int cpus = fdt_path_offset("/cpus");
	int ac = cells_of(cpus, "#address-cells", 1);
	int node, n = 0;

	if (cpus < 0)
		return 0;
	for (node = fdt_first_child(cpus); node >= 0;
	     node = fdt_next_sibling(node)) {
		const void *reg;
		int len;

		if (strncmp(fdt_node_name(node), "cpu@", 4))
			continue;
		reg = fdt_getprop(node, "reg", &len);
		if (!reg || len < ac * 4)
			continue;
		if (n < max)
			ids[n] = fdt_read_cells(reg, ac);
		n++;
	}
	return n;
}

uint32_t fdt_timebase(void)
{
	const void *p = fdt_getprop(fdt_path_offset("/cpus"),
				    "timebase-frequency", NULL);

	return p ? fdt_be32(p) : 0;
}
