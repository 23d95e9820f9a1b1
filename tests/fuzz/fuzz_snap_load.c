/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the snapshot restore path (hyp/snap/snap_load.c) on the
 * host, with the real stream engine, the real field checks (snap_state.c),
 * the real CRC and the real device models' load hooks; everything below them
 * (VM slots, host memory, the stream port, the clock) is a small stub, shared
 * with the migration target (fuzz_restore_host.c).
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
#include <string.h>
#include <arch/riscv/encoding.h>
#include <errno.h>
#include <hart.h>
#include <snapshot.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include "fuzz_restore_host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_HDR	8
#define MAX_POLLS	200000		/* a load that needs more is a hang */

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
					     "exists", "no-memory", "no-stream", "no-device" };

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

	CHECK(vm == &fuzz_vm && vms_seen.live && vm->state == VM_RUNNING);
	CHECK(vms_seen.starts == 1 && vms_seen.destroys == 0);
	snap_config_save(vm, 0, timebase_hz, &c);
	CHECK(snap_config_check(&c) == NULL);
	CHECK(c.ram_size <= FUZZ_RAM_CAP);
	CHECK(!(c.features & ~vm_features((enum cfi_policy)c.cfi_policy)));
	fuzz_check_vcpus(vm, &c);
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		CHECK(vm->vcpus[i].last_hart == -1 && vm->vcpus[i].hart == -1);
		CHECK(vm->vcpus[i].g.ctx.sstatus & SR_UXL_64);
	}
	fuzz_check_devices(vm);
	CHECK(done_seen.r.pages <= vm->cfg.ram_size / SNAP_PAGE_SIZE);
	CHECK(done_seen.r.bytes == port.pos && done_seen.r.bytes <= stream_len);
}

static void restore(const uint8_t *stream, size_t len, uint8_t flags, int delta,
		    const uint8_t sizes[6])
{
	int64_t announced = (int64_t)len + delta;
	unsigned long polls = 0;

	fuzz_host_input(flags, stream, len, sizes);
	memset(&done_seen, 0, sizeof(done_seen));

	CHECK(!snap_busy());
	CHECK(snap_load_start(announced < 0 ? 0 : (uint64_t)announced,
			      (flags & FL_NAME) ? "copy" : NULL, NULL, load_done) == 0);
	CHECK(snap_busy());
	/* one load at a time */
	CHECK(snap_load_start(1, NULL, NULL, load_done) == -HYP_EBUSY);
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
	if (fuzz_verbose())
		fprintf(stderr, "fuzz_snap_load: %s%s%s (%lu of %zu bytes, %lu pages, %lu reads)\n",
			done_seen.r.err ? done_seen.r.code : "restored",
			done_seen.r.err ? ": " : "", done_seen.r.err ? done_seen.r.err : "",
			(unsigned long)done_seen.r.bytes, len, (unsigned long)done_seen.r.pages,
			(unsigned long)port.reads);
}

/* Before the first input: the one block guest RAM comes from (allocated in
 * an input, it would look like a leak of that input to libFuzzer). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_host_init();
	/* no client on the stream port: refused at once, nothing to call back */
	memset(&port, 0, sizeof(port));
	CHECK(snap_load_start(4096, NULL, NULL, load_done) == -HYP_ENOENT && !snap_busy());
	CHECK(done_seen.calls == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t whole[6];

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
		fuzz_fix_crcs(copy, size - FUZZ_HDR);
		restore(copy, size - FUZZ_HDR, data[0], (int8_t)data[1], data + 2);
		free(copy);
		return 0;
	}
	restore(data + FUZZ_HDR, size - FUZZ_HDR, data[0], (int8_t)data[1], data + 2);
	return 0;
}
