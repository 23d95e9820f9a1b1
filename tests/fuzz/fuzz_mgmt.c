/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the management protocol's request path, hyp/host/mgmt.c
 * (reading lines off the control port, decoding and checking each request,
 * answering it) and the JSON codec under it, hyp/lib/json.c
 * (docs/fuzzing.md, "More targets").
 *
 * One input is one client connection. Byte 0 sets the host (flags below),
 * byte 1 the size of each read the port gives (0: 256), byte 2 the size of
 * each write it takes (0: all); the rest is what the client sends: request
 * lines, or anything. Three VMs exist ("alpha" running, "beta" paused,
 * "gamma" suspended by its guest); what mgmt.c asks of the rest of the
 * hypervisor (pause, destroy, create, snapshot, restore, migrate, incoming)
 * is stubbed, and the operations that finish later finish at the next poll.
 *
 * Checked: every line the client completes gets exactly one reply (an empty
 * line none), in order, once its operation has finished; every reply is one
 * line of pure printable ASCII, at most 8192 bytes, one valid JSON object
 * starting {"v":1,"id":; mgmt_poll() never reads more than there is, and the
 * connection's state ends idle. Each request line also goes straight to
 * json_parse_flat() with a scratch buffer of exactly its length (the
 * documented bound: ASan catches a byte more): on success every key and
 * string is NUL-terminated at its length with no NUL inside and valid UTF-8,
 * keys are distinct, at most JSON_MAX_FIELDS, integers in range, and the
 * object written back with the JSON writer parses again to the same fields;
 * on failure there is a message, an offset within the line and no field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <errno.h>
#include <cfi.h>
#include <hart.h>
#include <host_irq.h>
#include <hyp_cfi.h>
#include <json.h>
#include <log.h>
#include <mgmt.h>
#include <migrate.h>
#include <mm.h>
#include <snapshot.h>
#include <tlb.h>
#include <vcpu.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_io.h>
#include <vm_lifecycle.h>
#include <vmops.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define FL_NO_STREAM	0x01	/* no client on the stream port */
#define FL_STREAM_BUSY	0x02	/* a snapshot or migration is under way */
#define FL_OP_FAILS	0x04	/* pause/destroy/create/stream starts are refused */
#define FL_RESULT_ERR	0x08	/* operations that finish later finish with an error */
#define FL_CREATE_BOOT	0x10	/* vm_create: created, but its boot failed */
#define HDR		3
#define LINE_MAX_BYTES	4096	/* MGMT_LINE_MAX, newline included */
#define REPLY_MAX	8192

/* ---- the hypervisor around mgmt.c ---- */

struct vm vms[VM_MAX];
unsigned int nr_vms;
struct hart harts[HART_MAX];
unsigned int nr_harts = 2;
struct hart_caps hart_caps = { .zicfilp = true, .zicfiss = true };
uint64_t timebase_hz = 10000000;
struct hyp_cfi hyp_cfi;		/* hello's hyp_cfi entry: the plain build's, all off */
bool mig_send_active, mig_recv_active;
const struct mig_host_ops vmops_migration;
static uint8_t flags;

static bool nic_attached[VM_MAX][2];	/* NICs' state for vm_io stubs below */

static void setup_vms(void)
{
	static const char *const names[] = { "alpha", "beta", "gamma" };
	static const enum vm_state states[] = { VM_RUNNING, VM_PAUSED, VM_RUNNING };

	memset(vms, 0, sizeof(vms));
	memset(nic_attached, 0, sizeof(nic_attached));
	for (unsigned int i = 0; i < ARRAY_SIZE(names); i++) {
		struct vm *vm = &vms[i];

		strcpy(vm->cfg.name, names[i]);
		vm->index = i;
		vm->state = states[i];
		vm->cfg.nr_vcpus = i + 1;
		vm->cfg.ram_size = 64ULL << 20;
		vm->cfg.cfi_policy = (enum cfi_policy)i;
		vm->cfg.cfi_requested = (enum cfi_policy)i;
		for (unsigned int v = 0; v < VM_MAX_VCPUS; v++) {
			vm->vcpus[v].vm = vm;
			vm->vcpus[v].id = v;
		}
	}
	nr_vms = 3;
}

struct vm *vm_find(const char *name)
{
	for (unsigned int i = 0; i < nr_vms; i++)
		if (vm_slot_used(&vms[i]) && !strcmp(vms[i].cfg.name, name))
			return &vms[i];
	return NULL;
}

const char *vm_state_name(const struct vm *vm)
{
	return vm->state == VM_RUNNING ? "running" : vm->state == VM_PAUSED ? "paused" : "other";
}

void vm_count(const struct vm *vm, struct vm_counts *c)
{
	memset(c, 0, sizeof(*c));
	c->exits = vm->index * 1000 + 7;
}

const struct host_image *image_at(unsigned int i)
{
	static const struct host_image images[] = {
		{ "alpha.kernel", 0x80200000, 4096 }, { "img\"\\\x01\x7f\xff", 0x81000000, 1 },
	};

	return i < ARRAY_SIZE(images) ? &images[i] : NULL;
}

uint64_t mm_free_bytes(void)
{
	return 1ULL << 30;
}

uint64_t mm_total_bytes(void)
{
	return 1ULL << 31;
}

uint64_t vm_events_dropped(void)
{
	return 3;
}

const char *host_irq_chip_name(void)
{
	return "plic";
}

struct host_irq_stats host_irq_get_stats(void)
{
	return (struct host_irq_stats){ .handled = UINT64_MAX, .unknown = UINT64_MAX,
					.cut = UINT64_MAX, .polled = UINT64_MAX };
}

unsigned int vmid_usable(void)
{
	return 16383;
}

void vcpu_sync_state(struct vcpu *t, uint64_t until)
{
	(void)until;
	CHECK(t->vm && t->id < t->vm->cfg.nr_vcpus);
}

bool cfi_vm_has_lp(const struct vm *vm)
{
	return vm->cfg.cfi_policy != CFI_POLICY_OFF;
}

bool cfi_vm_has_ss(const struct vm *vm)
{
	return vm->cfg.cfi_policy != CFI_POLICY_OFF;
}

bool cfi_vcpu_elp(const struct vcpu *v)
{
	return v->id & 1;
}

/* Operations that finish later: one at a time, completed by the harness
 * after mgmt_poll() returns (as host_poll() does on a later turn). */
static struct {
	enum { OP_NONE, OP_VM, OP_SNAP, OP_MIG } kind;
	vmop_done_fn vm_done;
	void *ctx;
	struct vm *vm;
	uint64_t result;
	snap_done_fn snap_done;
	mig_done_fn mig_done;
	unsigned int started;
} op;

static void op_later(struct vm *vm, vmop_done_fn done, void *ctx, uint64_t result)
{
	CHECK(op.kind == OP_NONE);
	op.kind = OP_VM;
	op.vm = vm;
	op.vm_done = done;
	op.ctx = ctx;
	op.result = result;
	op.started++;
}

int vmop_pause(struct vm *vm, vmop_done_fn done, void *ctx)
{
	CHECK(vm_slot_used(vm));
	if ((flags & FL_OP_FAILS) || vm->state != VM_RUNNING)
		return -HYP_EBUSY;
	op_later(vm, done, ctx, 0);
	return 0;
}

int vmop_destroy(struct vm *vm, vmop_done_fn done, void *ctx)
{
	CHECK(vm_slot_used(vm));
	if (flags & FL_OP_FAILS)
		return -HYP_EBUSY;
	op_later(vm, done, ctx, vm->cfg.ram_size);
	return 0;
}

int vmop_resume(struct vm *vm)
{
	if (vm->state != VM_PAUSED)
		return -HYP_EBUSY;
	vm->state = VM_RUNNING;
	return 0;
}

int vmop_wake(struct vm *vm)
{
	return vm->index == 2 ? 0 : -HYP_EBUSY;
}

const char *vmop_refusal(const struct vm *vm, enum vmop op)
{
	CHECK(vm_slot_used(vm) && (unsigned int)op <= VMOP_DESTROY);
	return vm->index == 1 ? "held by a stream" : NULL;
}

const char *vm_migration_word(const struct vm *vm)
{
	return vm->index == 3 ? "left-unconfirmed" : NULL;
}

void vmop_cancel_waiter(void *ctx)
{
	if (op.kind == OP_VM && op.ctx == ctx)
		op.kind = OP_NONE;
}

int vm_create(const struct vm_desc *d, struct vm **out, const char **why)
{
	CHECK(memchr(d->name, 0, sizeof(d->name)) && memchr(d->kernel, 0, sizeof(d->kernel)));
	CHECK(memchr(d->initrd, 0, sizeof(d->initrd)) && memchr(d->bootargs, 0, sizeof(d->bootargs)));
	CHECK((unsigned int)d->cfi <= CFI_POLICY_OFF && d->vcpus <= VM_MAX_VCPUS);
	*why = NULL;
	if (vm_find(d->name))
		return *why = "a VM with that name exists", -HYP_EEXIST;
	if (!d->vcpus || d->memory < (8ULL << 20) || d->memory & ((2ULL << 20) - 1))
		return *why = "bad description", -HYP_EINVAL;
	if (flags & FL_OP_FAILS)
		return *why = "not enough host memory", -HYP_ENOMEM;
	*out = &vms[7];
	memset(&vms[7], 0, sizeof(vms[7]));
	memcpy(vms[7].cfg.name, d->name, VM_NAME_LEN);
	vms[7].index = 7;
	if (flags & FL_CREATE_BOOT) {
		strcpy(vms[7].reason, "kernel image does not fit");
		return -HYP_EINVAL;	/* created, its boot failed: *why stays NULL */
	}
	return 0;
}

/* the stream port and what uses it */
/* Devices (devices, nic): alpha a disk and two NICs, beta a read-only disk,
 * gamma none; counters near their limits so the reply's numbers are long. */
unsigned int vm_io_list(struct vm *vm, struct vm_io_info *out, unsigned int max)
{
	unsigned int i = (unsigned int)(vm - vms), n = 0;

	if (i == 0 || i == 1) {
		if (n < max)
			out[n] = (struct vm_io_info){ .slot = n, .pci_dev = (uint8_t)(2 + i),
				.read_only = i == 1, .sectors = UINT64_MAX >> 9,
				.blk = { UINT64_MAX, UINT64_MAX, 1, 0 } };
		n++;
	}
	for (unsigned int nic = 0; i == 0 && nic < 2; nic++) {
		if (n < max)
			out[n] = (struct vm_io_info){ .slot = n, .is_net = true, .nic = nic,
				.sw = "sw-15-char-name", .mac = { 0x52, 0x54, 0, 0, 0, (uint8_t)nic },
				.attached = !nic_attached[i][nic], .tx = { 1, 2, 3, 4 },
				.rx = { UINT64_MAX, 0, 0, UINT64_MAX }, .spoofed = UINT64_MAX };
		n++;
	}
	return n < max ? n : max;
}

const struct vm_nic_desc *vm_io_nic(const struct vm *vm, unsigned int nic)
{
	static const struct vm_nic_desc n[2] = { { "sw-15-char-name", { 0x52, 0x54, 0, 0, 0, 0 }, 0, 0 },
						 { "sw-15-char-name", { 0x52, 0x54, 0, 0, 0, 1 }, 0, 0 } };

	/* alpha's, and a restored VM's (vms[7]): a restore's reply lists them */
	return (vm == &vms[0] || vm == &vms[7]) && nic < 2 ? &n[nic] : NULL;
}

int vm_io_nic_set(struct vm *vm, unsigned int nic, bool attach)
{
	unsigned int i = (unsigned int)(vm - vms);

	if (i != 0 || nic >= 2)
		return -HYP_ENOENT;
	if (attach && (flags & FL_OP_FAILS))
		return -HYP_EEXIST;
	nic_attached[i][nic] = !attach;	/* stored inverted: zero is attached */
	return 0;
}

static bool stream_busy_now(void)
{
	return flags & FL_STREAM_BUSY;
}

bool snap_port_ready(void)
{
	return !(flags & FL_NO_STREAM);
}

void snap_port_drain(void)
{
}

bool snap_busy(void)
{
	return stream_busy_now() || op.kind == OP_SNAP;
}

bool mig_recv_armed(void)
{
	return false;
}

int snap_save_start(struct vm *vm, bool live, bool disks, snap_done_fn done)
{
	(void)live;
	(void)disks;
	CHECK(vm_slot_used(vm) && vm->state == VM_PAUSED);
	if (flags & FL_OP_FAILS)
		return -HYP_ENOMEM;
	CHECK(op.kind == OP_NONE);
	op.kind = OP_SNAP;
	op.vm = vm;
	op.snap_done = done;
	op.started++;
	return 0;
}

/* a failed start says why, as a disk whose identity could not be read does */
const char *snap_save_start_error(void)
{
	return (flags & FL_OP_FAILS) ? "disk 0: read error in block 8" : NULL;
}

int snap_load_start(uint64_t bytes, const char *name, const struct snap_io_map *map,
		    snap_done_fn done)
{
	CHECK(map);
	CHECK(bytes >= sizeof(struct snap_header));
	CHECK(!name || (strlen(name) > 0 && strlen(name) < VM_NAME_LEN));
	if (flags & FL_OP_FAILS)
		return -HYP_EBUSY;
	CHECK(op.kind == OP_NONE);
	op.kind = OP_SNAP;
	op.vm = &vms[7];
	memset(&vms[7], 0, sizeof(vms[7]));
	snprintf(vms[7].cfg.name, VM_NAME_LEN, "%s", name ? name : "restored");
	op.snap_done = done;
	op.started++;
	return 0;
}

int mig_send_start(struct vm *vm, const struct mig_send_opts *opts,
		   const struct mig_host_ops *ops, mig_done_fn done)
{
	CHECK(vm_slot_used(vm) && ops == &vmops_migration);
	CHECK(opts->max_rounds >= 1 && opts->max_rounds <= MIG_MAX_ROUNDS_LIMIT);
	CHECK(opts->downtime_limit_ms >= 1 &&
	      opts->downtime_limit_ms <= MIG_DOWNTIME_LIMIT_MS_MAX);
	if (flags & FL_OP_FAILS)
		return -HYP_ENOMEM;
	CHECK(op.kind == OP_NONE);
	op.kind = OP_MIG;
	op.vm = vm;
	op.mig_done = done;
	op.started++;
	return 0;
}

int mig_recv_start(const char *name, bool armed, const struct snap_io_map *map,
		   const struct mig_host_ops *ops, mig_done_fn done)
{
	CHECK(map);
	CHECK(!armed && ops == &vmops_migration);
	CHECK(!name || (strlen(name) > 0 && strlen(name) < VM_NAME_LEN));
	if (flags & FL_OP_FAILS)
		return -HYP_EBUSY;
	CHECK(op.kind == OP_NONE);
	op.kind = OP_MIG;
	op.vm = &vms[7];
	memset(&vms[7], 0, sizeof(vms[7]));
	snprintf(vms[7].cfg.name, VM_NAME_LEN, "%s", name ? name : "moved");
	op.mig_done = done;
	op.started++;
	return 0;
}

static void op_finish(void)
{
	bool err = flags & FL_RESULT_ERR;

	switch (op.kind) {
	case OP_NONE:
		return;
	case OP_VM:
		op.kind = OP_NONE;
		if (!op.result)
			op.vm->state = VM_PAUSED;
		op.vm_done(op.ctx, op.vm, op.result);
		return;
	case OP_SNAP: {
		struct snap_result r = { err ? "a \"quoted\"\n error" : NULL,
					 err ? "bad-snapshot" : NULL, err ? NULL : op.vm,
					 12345, 3, 999, 1, 0, 0 };	/* a restore: NIC 0's MAC new */

		op.kind = OP_NONE;
		op.snap_done(&r);
		return;
	}
	case OP_MIG: {
		struct mig_result r = { err ? "the stream broke" : NULL, err ? "stream" : NULL,
					op.vm->cfg.name, err ? NULL : op.vm, 1, 2, 3, 4, 5, 6,
					"copy", 7, 8, 9, 10, 11, 12 };

		op.kind = OP_NONE;
		op.mig_done(&r);
		return;
	}
	}
}

/* ---- the control port ---- */

static struct {
	const uint8_t *data;
	size_t len, pos;
	size_t read_chunk, write_chunk;
	unsigned int generation;
	char out[4 << 20];	/* every reply of the longest input */
	size_t out_len;
} port;

bool vcon_init(const void *fdt, uint64_t timebase)
{
	(void)fdt;
	(void)timebase;
	return true;
}

void vcon_poll(void)
{
}

int vcon_port_find(const char *name)
{
	return strcmp(name, "org.carapace.control") ? -1 : 3;
}

bool vcon_port_connected(int port_nr)
{
	return port_nr == 3;
}

unsigned int vcon_port_generation(int port_nr)
{
	CHECK(port_nr == 3);
	return port.generation;
}

unsigned int vcon_read_generation(int port_nr)
{
	CHECK(port_nr == 3);
	return port.generation;
}

size_t vcon_read(int port_nr, void *buf, size_t len)
{
	size_t n = MIN(MIN(len, port.read_chunk), port.len - port.pos);

	CHECK(port_nr == 3 && port.pos <= port.len);
	memcpy(buf, port.data + port.pos, n);
	port.pos += n;
	return n;
}

size_t vcon_write(int port_nr, const void *buf, size_t len)
{
	size_t n = port.write_chunk ? MIN(len, port.write_chunk) : len;

	CHECK(port_nr == 3 && len > 0);
	CHECK(port.out_len + n <= sizeof(port.out));
	memcpy(port.out + port.out_len, buf, n);
	port.out_len += n;
	return n;
}

/* ---- a JSON checker for the replies (any nesting) ---- */

static const char *js_value(const char *p, const char *end, int depth);

static const char *js_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static const char *js_string(const char *p, const char *end)
{
	if (p >= end || *p++ != '"')
		return NULL;
	while (p < end && *p != '"') {
		unsigned char c = (unsigned char)*p++;

		if (c < 0x20 || c >= 0x7f)
			return NULL;	/* the writer's output is printable ASCII */
		if (c == '\\') {
			if (p >= end)
				return NULL;
			c = (unsigned char)*p++;
			if (c == 'u') {
				for (int i = 0; i < 4; i++, p++)
					if (p >= end || !strchr("0123456789abcdefABCDEF", *p) || !*p)
						return NULL;
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				return NULL;
			}
		}
	}
	return p < end ? p + 1 : NULL;
}

static const char *js_number(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p >= end || *p < '0' || *p > '9')
		return NULL;
	if (*p == '0')
		return p + 1;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p;
}

static const char *js_container(const char *p, const char *end, int depth, bool obj)
{
	p = js_ws(p + 1, end);
	if (p < end && *p == (obj ? '}' : ']'))
		return p + 1;
	for (;;) {
		if (obj) {
			p = js_string(js_ws(p, end), end);
			if (!p)
				return NULL;
			p = js_ws(p, end);
			if (p >= end || *p++ != ':')
				return NULL;
		}
		p = js_value(p, end, depth + 1);
		if (!p)
			return NULL;
		p = js_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		return p < end && *p == (obj ? '}' : ']') ? p + 1 : NULL;
	}
}

static const char *js_value(const char *p, const char *end, int depth)
{
	p = js_ws(p, end);
	if (p >= end || depth > 32)
		return NULL;
	switch (*p) {
	case '{': return js_container(p, end, depth, true);
	case '[': return js_container(p, end, depth, false);
	case '"': return js_string(p, end);
	case 't': return end - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
	case 'f': return end - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
	case 'n': return end - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
	default: return js_number(p, end);
	}
}

static void check_reply(const char *s, size_t len)
{
	static const char head[] = "{\"v\":1,\"id\":";

	CHECK(len <= REPLY_MAX - 1);
	CHECK(len > sizeof(head) && !memcmp(s, head, sizeof(head) - 1));
	for (size_t i = 0; i < len; i++)
		CHECK(s[i] >= 0x20 && s[i] < 0x7f);
	CHECK(js_value(s, s + len, 0) == s + len);
	CHECK(s[len - 1] == '}');
}

/* ---- json_parse_flat() on its own ---- */

static bool utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			   (c & 0xf8) == 0xf0 ? 4 : 0;
		uint32_t cp;

		if (!k || i + k > n)
			return false;
		cp = k == 1 ? c : k == 2 ? c & 0x1f : k == 3 ? c & 0x0f : c & 0x07;
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k;
	}
	return true;
}

/* What jw_strn() of raw bytes reads back as: each byte >= 0x80 a Latin-1
 * code point, so UTF-8 of two bytes. */
static bool same_as_latin1(const char *orig, size_t n, const char *back, size_t m)
{
	size_t j = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)orig[i];

		if (c < 0x80) {
			if (j >= m || back[j++] != (char)c)
				return false;
		} else {
			if (j + 2 > m || (unsigned char)back[j] != (0xc0 | c >> 6) ||
			    (unsigned char)back[j + 1] != (0x80 | (c & 0x3f)))
				return false;
			j += 2;
		}
	}
	return j == m;
}

static void check_json(const char *line, size_t len)
{
	struct json_obj o, o2;
	const char *err = NULL;
	size_t off = (size_t)-1;
	char *scratch = malloc(len ? len : 1), *out, *scratch2;
	size_t out_cap;
	struct json_writer w;

	CHECK(scratch);
	memset(&o, 0x5a, sizeof(o));
	if (json_parse_flat(line, len, &o, scratch, len, &err, &off)) {
		CHECK(err && *err && off <= len && o.nr == 0);
		free(scratch);
		return;
	}
	CHECK(o.nr <= JSON_MAX_FIELDS);
	for (unsigned int i = 0; i < o.nr; i++) {
		const struct json_field *f = &o.f[i];

		CHECK(f->key >= scratch && f->key + f->key_len < scratch + len);
		CHECK(strlen(f->key) == f->key_len && utf8_ok((const void *)f->key, f->key_len));
		CHECK(json_key_is(f, f->key) && json_get(&o, f->key) == &f->val);
		for (unsigned int j = 0; j < i; j++)
			CHECK(strcmp(o.f[j].key, f->key));
		switch (f->val.type) {
		case JSON_STRING:
			CHECK(f->val.str >= scratch && f->val.str + f->val.str_len < scratch + len);
			CHECK(strlen(f->val.str) == f->val.str_len);
			CHECK(utf8_ok((const void *)f->val.str, f->val.str_len));
			break;
		case JSON_INT:
			CHECK(!f->val.negative ||
			      (f->val.magnitude >= 1 && f->val.magnitude <= (1ULL << 63)));
			break;
		case JSON_NULL:
		case JSON_BOOL:
			break;
		default:
			CHECK(0);
		}
	}
	/* written back and read again: the same fields */
	out_cap = 16 + 8 * len;
	out = malloc(out_cap);
	CHECK(out);
	jw_init(&w, out, out_cap);
	jw_obj_begin(&w);
	for (unsigned int i = 0; i < o.nr; i++) {
		const struct json_value *v = &o.f[i].val;

		jw_key(&w, o.f[i].key);
		switch (v->type) {
		case JSON_NULL: jw_null(&w); break;
		case JSON_BOOL: jw_bool(&w, v->boolean); break;
		case JSON_INT:
			if (!v->negative)
				jw_u64(&w, v->magnitude);
			else
				jw_i64(&w, (int64_t)(0 - v->magnitude));
			break;
		case JSON_STRING: jw_strn(&w, v->str, v->str_len); break;
		}
	}
	jw_obj_end(&w);
	CHECK(jw_finish(&w) && strlen(out) == w.len);
	CHECK(js_value(out, out + w.len, 0) == out + w.len);
	scratch2 = malloc(w.len + 1);
	CHECK(scratch2);
	CHECK(json_parse_flat(out, w.len, &o2, scratch2, w.len, NULL, NULL) == 0);
	CHECK(o2.nr == o.nr);
	for (unsigned int i = 0; i < o.nr; i++) {
		const struct json_value *a = &o.f[i].val, *b = &o2.f[i].val;

		CHECK(same_as_latin1(o.f[i].key, o.f[i].key_len, o2.f[i].key, o2.f[i].key_len));
		CHECK(a->type == b->type);
		if (a->type == JSON_BOOL)
			CHECK(a->boolean == b->boolean);
		if (a->type == JSON_INT)
			CHECK(a->negative == b->negative && a->magnitude == b->magnitude);
		if (a->type == JSON_STRING)
			CHECK(same_as_latin1(a->str, a->str_len, b->str, b->str_len));
	}
	free(scratch2);
	free(out);
	free(scratch);
}

/* ---- one connection ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool inited;
	const uint8_t *in;
	size_t len, lines = 0, line_len = 0, start = 0, replies = 0;
	unsigned int polls = 0;

	if (size < HDR)
		return -1;
	if (!inited) {
		CHECK(mgmt_init(NULL));
		inited = true;
	}
	flags = data[0];
	in = data + HDR;
	len = size - HDR;
	setup_vms();
	memset(&op, 0, sizeof(op));
	mig_send_active = (flags & FL_STREAM_BUSY) && (data[1] & 1);
	/* each input is a new client: what the last one left goes */
	port.generation++;
	port.data = in;
	port.len = len;
	port.pos = 0;
	port.read_chunk = data[1] ? data[1] : 256;
	port.write_chunk = data[2];
	port.out_len = 0;

	/* the requests the client completes (an empty line gets no reply) */
	for (size_t i = 0; i < len; i++) {
		if (in[i] != '\n') {
			line_len++;
			continue;
		}
		if (line_len) {
			lines++;
			if (line_len < LINE_MAX_BYTES)
				check_json((const char *)in + start, line_len);
		}
		line_len = 0;
		start = i + 1;
	}

	/* until all is read, the last poll started nothing and left nothing
	 * over (a poll serves a bounded share and says so: mgmt_busy()) */
	for (;;) {
		bool started;

		mgmt_poll();
		started = op.kind != OP_NONE;
		op_finish();
		CHECK(++polls < 100000);
		if (port.pos == port.len && !started && !mgmt_busy())
			break;
	}
	mgmt_poll();		/* the last reply goes out */
	CHECK(port.pos == port.len && op.kind == OP_NONE);

	{
		size_t s = 0;

		for (size_t i = 0; i < port.out_len; i++) {
			if (port.out[i] != '\n')
				continue;
			if (fuzz_verbose())
				fprintf(stderr, "reply: %.*s\n", (int)(i - s), port.out + s);
			check_reply(port.out + s, i - s);
			replies++;
			s = i + 1;
		}
		CHECK(s == port.out_len);	/* no cut-off reply */
		CHECK(replies == lines);
	}
	return 0;
}
