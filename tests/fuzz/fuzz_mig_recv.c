/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the destination of a live migration reading the source's
 * stream, hyp/migrate/mig_recv.c over the framing of hyp/migrate/mig_wire.c
 * (docs/fuzzing.md, "More targets"). The VM it creates goes through the real
 * snap_admit() (hyp/snap/snap_load.c), snap_state.c's checks and the device
 * models' load hooks; vm_alloc() and guest RAM are stubbed as in
 * tests/fuzz/fuzz_snap_load.c.
 *
 * One input is one incoming migration (mig_recv_start() for a client that is
 * connected): an 8-byte harness header, then the bytes the source sends.
 *
 *   byte 0   flags: 0x01 take the VM under a new name ("copy"); 0x02 the host
 *            lacks Svadu; 0x04 the host lacks Zicfiss; 0x08 fix CRCs (every
 *            whole section's crc32c is set right before the stream is read);
 *            0x10 the port takes what the destination sends 7 bytes at a time
 *   byte 1   the destination's writes: 255 = the port takes nothing at the
 *            2nd write and after (the source stopped reading)
 *   2-7      six chunk sizes for the reads, as fuzz_snap_load.c's; the first
 *            254 = a silent client stalls at the third empty read
 *
 * Checked after each: done called exactly once; the receiver idle again (no
 * busy flag; a second start while it runs is -HYP_EBUSY); never more read
 * than sent; what the destination wrote is a migration header and whole
 * sections with right CRCs, CAPS first, then at most ACCEPT, RUNNING and one
 * ABORT (NUL-terminated code and message) in that order; on success the VM
 * was started once, ACCEPT and RUNNING were sent, and its installed state
 * passes every check again; on failure an error and a known code, no VM
 * returned, and any VM created was destroyed exactly once (the real
 * destroy for one that had started); no sanitizer report; no hang. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sanitizer/asan_interface.h>
#include <errno.h>
#include <arch/riscv/encoding.h>
#include <crc32c.h>
#include <entropy.h>
#include <hart.h>
#include <log.h>
#include <migrate.h>
#include <mm.h>
#include <snapshot.h>
#include <vdev.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_lifecycle.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_RAM_CAP	(64ULL << 20)
#define FUZZ_HDR	8
#define FL_NAME		0x01
#define FL_NO_SVADU	0x02
#define FL_NO_ZICFISS	0x04
#define FL_FIX_CRC	0x08
#define FL_SLOW_TX	0x10
#define MAX_POLLS	200000
#define DRY_READS	3
#define TAKEN_NAME	"taken"

#define CHECK(cond)								\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "fuzz_mig_recv: invariant broken at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);			\
			abort();						\
		}								\
	} while (0)

struct hart_caps hart_caps;
uint64_t timebase_hz = 10000000;
struct hart *test_this_hart;
void (*vm_console_out)(struct vm *vm, const char *buf, size_t len);
uint32_t snap_stall_ms = SNAP_STALL_MS_DEFAULT;
bool mig_send_active;		/* mig_send.c is not linked */
static uint64_t clock_ticks;
static int verbose = -1;

uint64_t time_now(void)
{
	return clock_ticks += 100;
}

void pr_info(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void hyp_panic(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	abort();
}

static void host_caps(uint8_t flags)
{
	hart_caps = (struct hart_caps){
		.sstc = true, .zicfilp = true, .zicfiss = !(flags & FL_NO_ZICFISS),
		.henvcfg_ok = ENVCFG_STCE | ENVCFG_PBMTE |
			      ((flags & FL_NO_SVADU) ? 0 : ENVCFG_ADUE),
		.fw_cfi = true, .vmid_bits = 14, .vs_sv = 48,
	};
}

uint64_t mm_free_bytes(void)
{
	return FUZZ_RAM_CAP;
}

/* ---- the stream port ---- */

static struct {
	const uint8_t *data;
	size_t len, pos;
	uint8_t sizes[6], wmode;
	bool slow_tx;
	unsigned int turn, dry, writes;
	bool connected;
	uint64_t reads, empty_reads;
	uint8_t out[16384];
	size_t out_len;
} port;

bool snap_port_ready(void)
{
	return port.connected;
}

size_t snap_port_read(void *buf, size_t len)
{
	uint8_t v = port.sizes[port.turn++ % 6];
	size_t n = len;

	CHECK(len > 0);
	port.reads++;
	/* read after a disconnect too: what came before it still counts */
	if (!port.connected)
		return 0;
	if (port.pos == port.len) {
		if (++port.dry >= DRY_READS)
			port.connected = false;
		port.empty_reads++;
		return 0;
	}
	if (v == 255) {
		port.empty_reads++;
		return 0;
	}
	if (v >= 128)
		n = (size_t)(v - 127) * 256;
	else if (v)
		n = v;
	n = MIN(n, MIN(len, port.len - port.pos));
	memcpy(buf, port.data + port.pos, n);
	port.pos += n;
	return n;
}

size_t snap_port_write(const void *buf, size_t len)
{
	size_t n = port.slow_tx ? MIN(len, 7) : len;

	CHECK(len > 0);
	if (!port.connected || (port.wmode == 255 && port.writes >= 1))
		return 0;
	port.writes++;
	CHECK(port.out_len + n <= sizeof(port.out));
	memcpy(port.out + port.out_len, buf, n);
	port.out_len += n;
	return n;
}

/* mig_recv_start() drains before the source sends: nothing is there yet */
void snap_port_drain(void)
{
}

bool snap_port_stalled(uint64_t since)
{
	(void)since;
	return (port.sizes[0] == 254 && port.empty_reads >= 3) ||
	       (port.wmode == 255 && port.writes >= 1);
}

void vcon_poll(void)
{
}

bool snap_busy_save(void);
bool snap_busy_save(void)
{
	return false;
}

/* ---- the VM it creates (as tests/fuzz/fuzz_snap_load.c) ---- */

static struct vm fuzz_vm, scratch_vm;
static uint8_t *fuzz_ram, *host_ram;
#define RAM_GUARD	(64 * 1024)

static struct {
	unsigned int allocs, alloc_fails, destroys, op_destroys, starts, paused_starts, kicks;
	bool live;
} vms_seen;

static const char *check_desc(const struct vm_desc *d)
{
	if (!d->name[0] || strnlen(d->name, VM_NAME_LEN) == VM_NAME_LEN)
		return "bad name";
	if (!d->vcpus || d->vcpus > VM_MAX_VCPUS)
		return "vcpus must be 1..8";
	if (d->memory < 4 * SZ_2M || d->memory & (SZ_2M - 1) ||
	    d->memory > (1UL << 41) - VM_GUEST_RAM_BASE)
		return "memory must be a multiple of 2 MiB, at least 8 MiB";
	if ((unsigned int)d->cfi > CFI_POLICY_OFF)
		return "unknown cfi policy";
	if (strnlen(d->bootargs, VM_BOOTARGS_LEN) == VM_BOOTARGS_LEN)
		return "bootargs too long";
	return NULL;
}

int vm_alloc(const struct vm_desc *d, bool need_images, struct vm **out, const char **why)
{
	struct vm *vm = &fuzz_vm;

	CHECK(!need_images && !vms_seen.live);
	vms_seen.allocs++;
	*why = check_desc(d);
	if (*why) {
		vms_seen.alloc_fails++;
		return -HYP_EINVAL;
	}
	if (!strncmp(d->name, TAKEN_NAME, VM_NAME_LEN)) {
		*why = "a VM with that name exists";
		vms_seen.alloc_fails++;
		return -HYP_EEXIST;
	}
	if (d->memory > FUZZ_RAM_CAP) {
		*why = "not enough host memory";
		vms_seen.alloc_fails++;
		return -HYP_ENOMEM;
	}
	fuzz_ram = host_ram + FUZZ_RAM_CAP - d->memory;
	if (fuzz_ram - host_ram >= RAM_GUARD)
		ASAN_POISON_MEMORY_REGION(fuzz_ram - RAM_GUARD, RAM_GUARD);
	memset(vm, 0, sizeof(*vm));
	memcpy(vm->cfg.name, d->name, VM_NAME_LEN);
	vm->state = VM_RESETTING;
	vm->index = 5;
	vm->cfg.ram_gpa = VM_GUEST_RAM_BASE;
	vm->cfg.ram_size = d->memory;
	vm->cfg.nr_vcpus = d->vcpus;
	vm->cfg.cfi_policy = d->cfi;
	vm->cfg.features = vm_features(d->cfi);
	vm->cfg.debug_ext = d->debug;
	memcpy(vm->cfg.bootargs, d->bootargs, VM_BOOTARGS_LEN);
	for (unsigned int i = 0; i < VM_MAX_VCPUS; i++) {
		vm->vcpus[i].vm = vm;
		vm->vcpus[i].id = i;
		vm->vcpus[i].hart = -1;
	}
	vm->ram_hpa = (hpa_t)(uintptr_t)fuzz_ram;
	for (unsigned int i = 0; i < vdev_count; i++)
		CHECK(vdev_all[i]->reg(vm) == 0);
	vms_seen.live = true;
	*out = vm;
	return 0;
}

uint64_t vm_destroy_finish(struct vm *vm)
{
	CHECK(vm == &fuzz_vm && vms_seen.live);
	if (fuzz_ram - host_ram >= RAM_GUARD)
		ASAN_UNPOISON_MEMORY_REGION(fuzz_ram - RAM_GUARD, RAM_GUARD);
	fuzz_ram = NULL;
	vm->state = VM_EMPTY;
	vms_seen.live = false;
	vms_seen.destroys++;
	return vm->cfg.ram_size;
}

void vm_start(struct vm *vm)
{
	CHECK(vm == &fuzz_vm && vms_seen.live && vm->state == VM_RESETTING);
	vm->state = VM_RUNNING;
	vms_seen.starts++;
}

void vm_start_paused(struct vm *vm)
{
	CHECK(vm == &fuzz_vm && vms_seen.live && vm->state == VM_RESETTING);
	vm->state = VM_PAUSED;
	vms_seen.starts++;
	vms_seen.paused_starts++;
}

bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	return range_within(gpa, len, vm->cfg.ram_gpa, vm->cfg.ram_size);
}

void *vm_gpa_to_hva(struct vm *vm, gpa_t gpa, uint64_t len, bool write)
{
	(void)write;
	CHECK(vm == &fuzz_vm && vms_seen.live);
	if (!vm_gpa_range_is_ram(vm, gpa, len))
		return NULL;
	return fuzz_ram + (gpa - vm->cfg.ram_gpa);
}

int vm_mmio_register(struct vm *vm, const struct mmio_region *r)
{
	if (vm->nr_mmio >= VM_MMIO_MAX)
		return -HYP_ENOMEM;
	vm->mmio[vm->nr_mmio++] = *r;
	return 0;
}

void vcpu_kick(struct vcpu *v)
{
	CHECK(v->vm && v->id < v->vm->cfg.nr_vcpus);
	vms_seen.kicks++;
}

void entropy_fill(uint64_t stream, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		stream = stream * 6364136223846793005ULL + 1442695040888963407ULL;
		out[i] = (uint8_t)(stream >> 56);
	}
}

/* the host layer's lifecycle operations (vmops_migration) */
static int op_pause(struct vm *vm, mig_vm_done_fn done, void *ctx)
{
	(void)vm;
	(void)done;
	(void)ctx;
	CHECK(0);	/* a destination never pauses */
	return 0;
}

static int op_resume(struct vm *vm)
{
	(void)vm;
	CHECK(0);
	return 0;
}

/* a started VM: what vmop_destroy() ends with once it is off every hart */
static int op_destroy(struct vm *vm, mig_vm_done_fn done, void *ctx)
{
	(void)ctx;
	CHECK(vm == &fuzz_vm && vms_seen.live && vms_seen.starts == 1 && !done);
	vms_seen.op_destroys++;
	vm->state = VM_DESTROYING;
	vm_destroy_finish(vm);
	return 0;
}

static const struct mig_host_ops ops = { op_pause, op_resume, op_destroy };

/* ---- one migration ---- */

static struct {
	unsigned int calls;
	struct mig_result r;
	char err[256], name[VM_NAME_LEN];
} done_seen;

static void recv_done(const struct mig_result *r)
{
	done_seen.calls++;
	CHECK(done_seen.calls == 1);
	done_seen.r = *r;
	CHECK(r->vm_name && memchr(r->vm_name, 0, VM_NAME_LEN));
	strcpy(done_seen.name, r->vm_name);
	done_seen.r.vm_name = done_seen.name;
	if (r->err) {
		CHECK(memchr(r->err, 0, sizeof(done_seen.err)));
		strcpy(done_seen.err, r->err);
		done_seen.r.err = done_seen.err;
	}
}

static bool known_code(const char *code)
{
	static const char *const codes[] = { "bad-snapshot", "bad-stream", "invalid", "no-cfi",
					     "no-feature", "exists", "no-memory", "no-stream",
					     "stream", "aborted" };

	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (!strcmp(code, codes[i]))
			return true;
	return false;
}

/* What the destination sent: a header, then whole sections, each CRC right,
 * in the protocol's order. Returns a bit per type seen (1 << (type - 16)). */
static unsigned int check_sent(void)
{
	struct snap_header h;
	size_t off = sizeof(h);
	unsigned int seen = 0, last = 0;

	if (!port.out_len)
		return 0;
	/* the header (or as much of it as a port that stopped took) */
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MIG_MAGIC, 8);
	h.version = MIG_VERSION;
	h.header_size = sizeof(h);
	CHECK(!memcmp(port.out, &h, MIN(port.out_len, sizeof(h))));
	if (port.out_len < sizeof(h)) {
		CHECK(port.wmode == 255 || port.slow_tx || !port.connected);
		return 0;
	}
	while (off < port.out_len) {
		struct snap_section s;
		const uint8_t *pl = port.out + off + sizeof(s);

		/* a refusal may leave its last section cut off when the port stops */
		if (port.out_len - off < sizeof(s))
			break;
		memcpy(&s, port.out + off, sizeof(s));
		if (port.out_len - off - sizeof(s) < s.length) {
			CHECK(port.wmode == 255 || port.slow_tx || !port.connected);
			break;
		}
		CHECK(s.crc32c == crc32c(pl, (size_t)s.length) && !s.reserved && !s.instance);
		CHECK(s.type > last || s.type == MIG_SEC_ABORT);	/* CAPS, ACCEPT, RUNNING */
		CHECK(!(seen & (1U << (s.type - 16))));
		switch (s.type) {
		case MIG_SEC_CAPS:
			CHECK(s.length == sizeof(struct mig_caps) && !seen);
			break;
		case MIG_SEC_ACCEPT:
			CHECK(s.length == sizeof(struct mig_accept));
			break;
		case MIG_SEC_RUNNING:
			CHECK(s.length == sizeof(struct mig_running));
			break;
		case MIG_SEC_ABORT: {
			struct mig_abort a;

			CHECK(s.length == sizeof(a));
			memcpy(&a, pl, sizeof(a));
			CHECK(memchr(a.code, 0, sizeof(a.code)) && a.code[0]);
			CHECK(memchr(a.message, 0, sizeof(a.message)) && a.message[0]);
			CHECK(known_code(a.code));
			break;
		}
		default:
			CHECK(0);
		}
		seen |= 1U << (s.type - 16);
		last = s.type;
		off += sizeof(s) + (size_t)s.length;
	}
	return seen;
}

static void check_installed(struct vm *vm)
{
	struct snap_config c;
	uint8_t state[1024];

	CHECK(vm == &fuzz_vm && vms_seen.live && vms_seen.starts == 1);
	CHECK(vm->state == (vms_seen.paused_starts ? VM_PAUSED : VM_RUNNING));
	CHECK(vm->moved_in);
	snap_config_save(vm, 0, timebase_hz, &c);
	CHECK(snap_config_check(&c) == NULL);
	CHECK(c.ram_size <= FUZZ_RAM_CAP);
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct snap_vcpu s;

		snap_vcpu_save(&vm->vcpus[i], &s);
		CHECK(snap_vcpu_check(&s, &c) == NULL);
		CHECK(vm->vcpus[i].last_hart == -1);
	}
	scratch_vm = *vm;
	for (unsigned int i = 0; i < vdev_count; i++) {
		CHECK(vdev_all[i]->state_size <= sizeof(state));
		vdev_all[i]->save(vm, state);
		CHECK(vdev_all[i]->load(&scratch_vm, state) == 0);
	}
	CHECK(done_seen.r.pages <= (uint64_t)MAX_POLLS * SNAP_RUN_MAX_PAGES);
}

static void receive(const uint8_t *stream, size_t len, const uint8_t *hdr)
{
	uint8_t flags = hdr[0];
	unsigned long polls = 0;
	bool all_empty = true;
	unsigned int sent;

	memset(&port, 0, sizeof(port));
	port.data = stream;
	port.len = len;
	port.connected = true;
	port.wmode = hdr[1];
	port.slow_tx = flags & FL_SLOW_TX;
	memcpy(port.sizes, hdr + 2, 6);
	for (int i = 0; i < 6; i++)
		all_empty &= port.sizes[i] == 255;
	if (all_empty)
		memset(port.sizes, 0, sizeof(port.sizes));
	memset(&done_seen, 0, sizeof(done_seen));
	memset(&vms_seen, 0, sizeof(vms_seen));
	host_caps(flags);

	CHECK(!mig_busy() && !mig_recv_armed());
	CHECK(mig_recv_start((flags & FL_NAME) ? "copy" : NULL, false, &ops, recv_done) == 0);
	CHECK(mig_recv_start(NULL, false, &ops, recv_done) == -HYP_EBUSY);
	while (!done_seen.calls) {
		CHECK(++polls <= MAX_POLLS);
		mig_recv_poll();
	}
	mig_recv_poll();	/* idle: nothing happens */
	CHECK(done_seen.calls == 1 && !mig_busy() && !mig_recv_armed());
	CHECK(port.pos <= len && vms_seen.allocs <= 1);
	sent = check_sent();

	if (!done_seen.r.err) {
		CHECK(!done_seen.r.code && done_seen.r.vm);
		CHECK((sent & 1) && (sent & 2) && (sent & (1U << 5)) && !(sent & (1U << 7)));
		CHECK(!(flags & FL_NAME) || !strcmp(done_seen.r.vm->cfg.name, "copy"));
		CHECK(!strcmp(done_seen.r.vm_name, done_seen.r.vm->cfg.name));
		check_installed(done_seen.r.vm);
		vm_destroy_finish(done_seen.r.vm);
	} else {
		CHECK(done_seen.r.err[0] && done_seen.r.code && known_code(done_seen.r.code));
		CHECK(!done_seen.r.vm && !vms_seen.live);
		CHECK(vms_seen.destroys == vms_seen.allocs - vms_seen.alloc_fails);
		CHECK(vms_seen.op_destroys == vms_seen.starts);
	}
	CHECK(!vms_seen.live && !fuzz_ram);
	if (verbose)
		fprintf(stderr, "fuzz_mig_recv: %s%s%s (%lu of %zu bytes, %lu pages, %u rounds, "
			"sent %#x)\n", done_seen.r.err ? done_seen.r.code : "migrated in",
			done_seen.r.err ? ": " : "", done_seen.r.err ? done_seen.r.err : "",
			(unsigned long)done_seen.r.bytes, len, (unsigned long)done_seen.r.pages,
			done_seen.r.rounds, sent);
}

static void fix_crcs(uint8_t *s, size_t len)
{
	size_t off = sizeof(struct snap_header);

	while (off <= len && len - off >= sizeof(struct snap_section)) {
		struct snap_section sec;
		size_t avail = len - off - sizeof(sec);

		memcpy(&sec, s + off, sizeof(sec));
		if (sec.length > avail)
			break;
		sec.crc32c = crc32c(s + off + sizeof(sec), (size_t)sec.length);
		memcpy(s + off, &sec, sizeof(sec));
		off += sizeof(sec) + (size_t)sec.length;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	host_ram = malloc(FUZZ_RAM_CAP);
	CHECK(host_ram);
	/* no client on the stream port: refused at once */
	memset(&port, 0, sizeof(port));
	CHECK(mig_recv_start(NULL, false, &ops, recv_done) == -HYP_ENOENT && !mig_busy());
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	if (verbose < 0) {
		const char *v = getenv("FUZZ_VERBOSE");

		verbose = v && *v && *v != '0';
	}
	if (size < FUZZ_HDR)
		return -1;
	/* the stream in a block of its own size: a read past it is an ASan report */
	copy = malloc(size - FUZZ_HDR + 1);
	CHECK(copy);
	memcpy(copy, data + FUZZ_HDR, size - FUZZ_HDR);
	if (data[0] & FL_FIX_CRC)
		fix_crcs(copy, size - FUZZ_HDR);
	receive(copy, size - FUZZ_HDR, data);
	free(copy);
	return 0;
}
