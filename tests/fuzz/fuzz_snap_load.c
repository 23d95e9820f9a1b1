/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the snapshot restore path (hyp/snap/snap_load.c) on the
 * host, with the real stream engine, the real field checks (snap_state.c),
 * the real CRC and the real device models' load hooks; everything below them
 * (VM slots, host memory, the stream port, the clock) is a small stub here.
 * docs/fuzzing.md says how to run it and why each stub is what it is.
 *
 * One input is one restore. It is either a snapshot file as is (it starts
 * with "CARASNAP": read in one piece per request), or an 8-byte harness
 * header followed by the stream:
 *
 *   byte 0     flags: FL_NAME restore under a new name ("copy"), FL_NO_SVADU
 *              the host lacks Svadu, FL_NO_ZICFISS the host lacks Zicfiss,
 *              FL_FIX_CRC every whole section's crc32c is set right before
 *              the stream is read (else a mutated payload is almost always
 *              refused for its CRC, and the field checks behind it are out
 *              of the fuzzer's reach)
 *   byte 1     announced length = stream length + (int8_t)byte 1 (what the
 *              management client says in "bytes"; the port runs dry after
 *              the stream, then the client disconnects)
 *   bytes 2-7  six chunk sizes, used in turn for each snap_port_read():
 *              0 as much as asked, 1..127 that many bytes, 128..254
 *              (v - 127) * 256 bytes, 255 nothing this time (the data is not
 *              there yet: the reader polls the console and tries again)
 *
 * so the fuzzer chooses where the stream is split as well as what it holds.
 *
 * After each restore the harness checks: done called exactly once; the load
 * is idle; on success the VM passes snap_config_check and snap_vcpu_check
 * again on what was installed, its device states load again, it was started
 * and it is the one VM allocated; on failure there is an error and a known
 * code, and the VM (if one was allocated) was freed. Any breach aborts.
 * FUZZ_VERBOSE=1 in the environment prints how each restore ended. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sanitizer/asan_interface.h>
#include <errno.h>
#include <arch/riscv/encoding.h>
#include <crc32c.h>
#include <entropy.h>
#include <hart.h>
#include <snapshot.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_lifecycle.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_RAM_CAP	(64ULL << 20)	/* a small host: bigger VMs get -HYP_ENOMEM */
#define FUZZ_HDR	8
#define FL_NAME		0x01
#define FL_NO_SVADU	0x02
#define FL_NO_ZICFISS	0x04
#define FL_FIX_CRC	0x08
#define MAX_POLLS	200000		/* a load that needs more is a hang */
#define DRY_READS	3		/* empty reads after the data before the client leaves */
#define TAKEN_NAME	"taken"		/* a VM of that name exists on this host */

#define CHECK(cond)								\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "fuzz_snap_load: invariant broken at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);			\
			abort();						\
		}								\
	} while (0)

/* --- the host the hypervisor code sees ------------------------------------- */

struct hart_caps hart_caps;
uint64_t timebase_hz = 10000000;
struct hart *test_this_hart;
void (*vm_console_out)(struct vm *vm, const char *buf, size_t len);

static uint64_t clock_ticks;

/* The clock moves on at every look, so snap_load_poll()'s time budget ends. */
uint64_t time_now(void)
{
	clock_ticks += 100;
	return clock_ticks;
}

static void host_caps(uint8_t flags)
{
	hart_caps = (struct hart_caps){
		.sstc = true, .zicfilp = true, .zicfiss = !(flags & FL_NO_ZICFISS),
		.henvcfg_ok = ENVCFG_STCE | ENVCFG_PBMTE |
			      ((flags & FL_NO_SVADU) ? 0 : ENVCFG_ADUE),
		.fw_cfi = true, .vmid_bits = 14,
	};
}

/* --- the stream port --------------------------------------------------------- */

static struct {
	const uint8_t *data;
	size_t len, pos;
	uint8_t sizes[6];
	unsigned int turn, dry;
	bool connected;
	uint64_t reads, empty_reads;
} port;

bool snap_port_ready(void)
{
	return port.connected;
}

size_t snap_port_read(void *buf, size_t len)
{
	uint8_t v = port.sizes[port.turn++ % 6];
	size_t n = len;

	CHECK(port.connected);
	port.reads++;
	if (port.pos == port.len) {
		/* the client sent everything it had: after a few looks, it is gone */
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
	(void)buf;
	(void)len;
	abort();	/* a restore never writes the stream */
}

void snap_port_drain(void)
{
}

uint32_t snap_stall_ms = SNAP_STALL_MS_DEFAULT;

/* A client gone silent: when the first chunk size says so (254), the third
 * empty read counts as a stall, so the fuzzer reaches that refusal too. */
bool snap_port_stalled(uint64_t since)
{
	(void)since;
	return port.sizes[0] == 254 && port.empty_reads >= 3;
}

static unsigned long vcon_polls;

void vcon_poll(void)
{
	vcon_polls++;
}

/* snap_save.c is not linked: no save is ever under way. */
bool snap_busy_save(void);
bool snap_busy_save(void)
{
	return false;
}

/* --- the VM the restore creates ---------------------------------------------- */

static struct vm fuzz_vm;		/* the one free slot */
static struct vm scratch_vm;		/* device states loaded again, to check them */
static uint8_t *fuzz_ram;		/* the VM's RAM: the last ram_size bytes of host_ram */
static uint8_t *host_ram;		/* FUZZ_RAM_CAP bytes, allocated at start */

/* Guest RAM is the tail of one heap block allocated once: ASan's redzone
 * after the block catches a write past the end of RAM, and a poisoned guard
 * before the VM's first byte one before it. (A malloc of 8 MiB or more per
 * input costs ASan megabytes of shadow to clear: 300 inputs a second.) */
#define RAM_GUARD	(64 * 1024)

static uint8_t *ram_get(uint64_t size)
{
	uint8_t *ram;

	if (!host_ram)
		return NULL;
	ram = host_ram + FUZZ_RAM_CAP - size;
	if (ram - host_ram >= RAM_GUARD)
		ASAN_POISON_MEMORY_REGION(ram - RAM_GUARD, RAM_GUARD);
	return ram;
}

static void ram_put(uint8_t *ram)
{
	if (ram - host_ram >= RAM_GUARD)
		ASAN_UNPOISON_MEMORY_REGION(ram - RAM_GUARD, RAM_GUARD);
}
static struct {
	unsigned int allocs, alloc_fails, destroys, starts, kicks;
	bool live;
} vms_seen;

/* vm_alloc()'s own checks (hyp/vmm/vm.c check_desc) */
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

	CHECK(!need_images);		/* a restore never needs the images */
	CHECK(!vms_seen.live);		/* one load, one VM */
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
	/* not zeroed: the real one zeroes a 2 MiB chunk at its first touch, and
	 * nothing here reads RAM it did not write */
	if (d->memory > FUZZ_RAM_CAP || !(fuzz_ram = ram_get(d->memory))) {
		*why = "not enough host memory";
		vms_seen.alloc_fails++;
		return -HYP_ENOMEM;
	}
	memset(vm, 0, sizeof(*vm));
	memcpy(vm->cfg.name, d->name, VM_NAME_LEN);
	vm->state = VM_RESETTING;
	vm->serial = vms_seen.allocs;
	vm->cfg.ram_gpa = VM_GUEST_RAM_BASE;
	vm->cfg.ram_size = d->memory;
	vm->cfg.nr_vcpus = d->vcpus;
	vm->cfg.cfi_policy = d->cfi;
	vm->cfg.features = vm_features(d->cfi);
	vm->cfg.debug_ext = d->debug;
	memcpy(vm->cfg.bootargs, d->bootargs, VM_BOOTARGS_LEN);
	memcpy(vm->cfg.kernel_image, d->kernel, VM_IMAGE_NAME_LEN);
	memcpy(vm->cfg.initrd_image, d->initrd, VM_IMAGE_NAME_LEN);
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
	uint64_t freed = vm->cfg.ram_size;

	CHECK(vm == &fuzz_vm && vms_seen.live);	/* no double free, no stray VM */
	ram_put(fuzz_ram);
	fuzz_ram = NULL;
	vm->ram_hpa = 0;
	vm->state = VM_EMPTY;
	vm->cfg.nr_vcpus = 0;
	vms_seen.live = false;
	vms_seen.destroys++;
	return freed;
}

void vm_start(struct vm *vm)
{
	CHECK(vm == &fuzz_vm && vms_seen.live && vm->state == VM_RESETTING);
	vm->state = VM_RUNNING;
	vms_seen.starts++;
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

/* hyp/vmm/vcpu.c's, which is not linked (its other functions drive CSRs
 * and harts) */
void vcpu_kick(struct vcpu *v)
{
	CHECK(v->vm && v->id < v->vm->cfg.nr_vcpus);
	vms_seen.kicks++;
}

/* Not the host's ChaCha20 stream (hyp/lib/entropy.c has inline asm):
 * anything deterministic will do for a generation ID. */
void entropy_fill(uint64_t stream, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		stream = stream * 6364136223846793005ULL + 1442695040888963407ULL;
		out[i] = (uint8_t)(stream >> 56);
	}
}

/* --- one restore ----------------------------------------------------------------- */

static struct {
	unsigned int calls;
	struct snap_result r;
	char err[256];
} done_seen;

static void load_done(const struct snap_result *r)
{
	done_seen.calls++;
	CHECK(done_seen.calls == 1);
	done_seen.r = *r;
	if (r->err) {
		/* the message lives in the loader; keep a copy while it is idle */
		CHECK(memchr(r->err, 0, sizeof(done_seen.err)));
		strcpy(done_seen.err, r->err);
		done_seen.r.err = done_seen.err;
	}
}

static bool known_code(const char *code)
{
	static const char *const codes[] = { "bad-snapshot", "invalid", "no-cfi", "no-feature",
					     "exists", "no-memory", "no-stream" };

	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (!strcmp(code, codes[i]))
			return true;
	return false;
}

/* The restored VM is one a restore may create: every check passes again on
 * what was installed. */
static void check_installed(struct vm *vm, uint64_t stream_len)
{
	struct snap_config c;
	uint8_t state[1024];

	CHECK(vm == &fuzz_vm && vms_seen.live && vm->state == VM_RUNNING);
	CHECK(vms_seen.starts == 1 && vms_seen.destroys == 0);
	snap_config_save(vm, 0, timebase_hz, &c);
	CHECK(snap_config_check(&c) == NULL);
	CHECK(c.ram_size <= FUZZ_RAM_CAP);
	CHECK(!(c.features & ~vm_features((enum cfi_policy)c.cfi_policy)));
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct snap_vcpu s;

		snap_vcpu_save(&vm->vcpus[i], &s);
		CHECK(snap_vcpu_check(&s, &c) == NULL);
		CHECK(vm->vcpus[i].last_hart == -1 && vm->vcpus[i].hart == -1);
		CHECK(vm->vcpus[i].g.ctx.sstatus & SR_UXL_64);
	}
	/* each device's installed state is one its load hook accepts */
	scratch_vm = *vm;
	for (unsigned int i = 0; i < vdev_count; i++) {
		CHECK(vdev_all[i]->state_size <= sizeof(state));
		vdev_all[i]->save(vm, state);
		CHECK(vdev_all[i]->load(&scratch_vm, state) == 0);
	}
	CHECK(done_seen.r.pages <= vm->cfg.ram_size / SNAP_PAGE_SIZE);
	CHECK(done_seen.r.bytes == port.pos && done_seen.r.bytes <= stream_len);
}

static int verbose = -1;	/* FUZZ_VERBOSE=1: say how each restore ended */

static void restore(const uint8_t *stream, size_t len, uint8_t flags, int delta,
		    const uint8_t sizes[6])
{
	int64_t announced = (int64_t)len + delta;
	unsigned long polls = 0;
	bool all_empty = true;

	memset(&port, 0, sizeof(port));
	port.data = stream;
	port.len = len;
	port.connected = true;
	memcpy(port.sizes, sizes, 6);
	for (int i = 0; i < 6; i++)
		all_empty &= sizes[i] == 255;
	/* a connected client that never sends keeps the load waiting (there is
	 * no timeout): not an input worth having, so read as much as asked */
	if (all_empty)
		memset(port.sizes, 0, sizeof(port.sizes));
	memset(&done_seen, 0, sizeof(done_seen));
	memset(&vms_seen, 0, sizeof(vms_seen));
	host_caps(flags);

	CHECK(!snap_busy());
	CHECK(snap_load_start(announced < 0 ? 0 : (uint64_t)announced,
			      (flags & FL_NAME) ? "copy" : NULL, load_done) == 0);
	CHECK(snap_busy());
	/* one load at a time */
	CHECK(snap_load_start(1, NULL, load_done) == -HYP_EBUSY);
	while (snap_busy()) {
		CHECK(++polls <= MAX_POLLS);
		snap_load_poll();
	}
	snap_load_poll();		/* idle: nothing happens */
	CHECK(done_seen.calls == 1);
	CHECK(port.pos <= len && port.pos <= (uint64_t)(announced < 0 ? 0 : announced));
	CHECK(vms_seen.allocs <= 1);

	if (!done_seen.r.err) {
		CHECK(!done_seen.r.code && done_seen.r.vm);
		/* all it was told, not a byte more (END is the last one) */
		CHECK(announced >= 0 && done_seen.r.bytes == (uint64_t)announced);
		CHECK(!(flags & FL_NAME) || !strcmp(done_seen.r.vm->cfg.name, "copy"));
		check_installed(done_seen.r.vm, len);
		vm_destroy_finish(done_seen.r.vm);	/* what a later destroy does */
	} else {
		CHECK(done_seen.r.err[0] && done_seen.r.code && known_code(done_seen.r.code));
		CHECK(!done_seen.r.vm && !vms_seen.live && vms_seen.starts == 0);
		CHECK(vms_seen.destroys == vms_seen.allocs - vms_seen.alloc_fails);
	}
	CHECK(!vms_seen.live && !fuzz_ram);
	if (verbose)
		fprintf(stderr, "fuzz_snap_load: %s%s%s (%lu of %zu bytes, %lu pages, %lu reads)\n",
			done_seen.r.err ? done_seen.r.code : "restored",
			done_seen.r.err ? ": " : "", done_seen.r.err ? done_seen.r.err : "",
			(unsigned long)done_seen.r.bytes, len, (unsigned long)done_seen.r.pages,
			(unsigned long)port.reads);
}

/* Walk the sections of @s (as they claim to be laid out) and give each one
 * whose payload is all there the CRC of that payload. */
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

/* Before the first input: the one block guest RAM comes from (allocated in
 * an input, it would look like a leak of that input to libFuzzer). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	host_ram = malloc(FUZZ_RAM_CAP);
	/* no client on the stream port: refused at once, nothing to call back */
	memset(&port, 0, sizeof(port));
	CHECK(snap_load_start(4096, NULL, load_done) == -HYP_ENOENT && !snap_busy());
	CHECK(done_seen.calls == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t whole[6];

	if (verbose < 0) {
		const char *v = getenv("FUZZ_VERBOSE");

		verbose = v && *v && *v != '0';
	}

	if (size >= 8 && !memcmp(data, SNAP_MAGIC, 8)) {
		restore(data, size, 0, 0, whole);	/* a snapshot file as is */
		return 0;
	}
	if (size < FUZZ_HDR)
		return -1;	/* not an input: keep it out of the corpus */
	if (data[0] & FL_FIX_CRC) {
		uint8_t *copy = malloc(size - FUZZ_HDR + 1);

		CHECK(copy);
		memcpy(copy, data + FUZZ_HDR, size - FUZZ_HDR);
		fix_crcs(copy, size - FUZZ_HDR);
		restore(copy, size - FUZZ_HDR, data[0], (int8_t)data[1], data + 2);
		free(copy);
		return 0;
	}
	restore(data + FUZZ_HDR, size - FUZZ_HDR, data[0], (int8_t)data[1], data + 2);
	return 0;
}
