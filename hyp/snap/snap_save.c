/* SPDX-License-Identifier: MIT */
/* Saving a VM to the stream port, a piece at a time from the host services'
 * poll (hart 0): header, CONFIG, the vCPUs and devices (snap_emit.c, as a
 * migration sends them), MEMORY runs of non-zero pages, the disks' DISK
 * runs (snap_disk_save.c) unless the caller leaves them out, END, each
 * section framed and pushed by the shared transmitter (section_tx.c).
 * Without the disks' content, each disk's identity goes in instead (DISK_ID
 * after the VIRTIO sections, snap_disk_id.c): its sampled blocks are read at
 * the pause, before a live snapshot lets the VM run on.
 *
 * Plain: the VM stays paused until the last byte. Live: while it is paused,
 * the vCPU and device state are staged and its RAM is write-protected at
 * G-stage; then it runs on, and a chunk the guest (or the hypervisor for it)
 * writes before it was sent is copied first (vm->cow), so the stream holds
 * RAM as it was at the pause. Shadow-stack accesses to a protected chunk
 * fault as writes, so they are copied too. With no memory for a copy, the VM
 * is paused until the stream is out, then runs again. A reboot ends a live
 * snapshot with an error before anything of the new boot is read (the VM's
 * RAM epoch, checked under its memory lock). */
#include <string.h>
#include <errno.h>
#include <arch/riscv/encoding.h>
#include <guest_mem.h>
#include <hart.h>
#include <log.h>
#include <mm.h>
#include <section_stream.h>
#include <snapshot.h>
#include <virtio_console.h>
#include <vm.h>
#include <disk_stream.h>

#define POLL_BUDGET_US	2000	/* streaming time per poll, so hart 0 goes on */

enum phase { P_IDLE, P_HEADER, P_CONFIG, P_STATE, P_DISK_ID, P_PREFIX, P_MEMORY, P_DISK, P_END,
	     P_DONE };

#define PREFIX_MAX	(sizeof(struct snap_header) + \
			 sizeof(struct snap_section) + sizeof(struct snap_config) + \
			 SNAP_MAX_VCPUS * (sizeof(struct snap_section) + sizeof(struct snap_vcpu)) + \
			 (4 + VIO_MMIO_SLOTS) * (sizeof(struct snap_section) + SNAP_DEVICE_MAX) + \
			 VM_MAX_DISKS * (sizeof(struct snap_section) + sizeof(struct snap_disk_id)))
#define PAGES_PER_CHUNK	(VM_RAM_CHUNK / SNAP_PAGE_SIZE)
/* A run's CRC is computed before it is sent, in one go on hart 0, where a
 * vCPU waits meanwhile: runs of 64 pages keep that to ~1 ms (2 MiB runs held
 * the hart for 15-20 ms under -icount), for 40 bytes of headers per 256 KiB. */
#define SAVE_RUN_PAGES	64

static struct {
	enum phase phase;
	struct vm *vm;
	snap_done_fn done;
	bool live;
	bool disks;			/* the disks' content goes in (SNAP_F_DISKS) */
	const char *disk_err;		/* the disks' part failed: why */
	struct snap_disk_id disk_id[VM_MAX_DISKS];	/* without disks: read at the pause */
	unsigned int nr_disk_ids;
	uint64_t disk_runs;		/* DISK sections staged */
	bool forced_pause;		/* no memory for a copy: the VM waits for us */
	uint64_t forced_at;		/* when that pause was asked for */
	uint32_t boot_count;		/* a reboot during a live snapshot ends it */
	uint32_t ram_epoch;		/* the VM's RAM epoch at the pause */
	bool reset;			/* the VM's RAM was discarded: abort */
	unsigned int index;		/* piece of the state being staged */
	uint64_t pages, start;
	struct section_tx tx;		/* a staged section or the prefix, guest pages */
	/* memory: the chunk being scanned and where its bytes are */
	uint64_t chunks, next_chunk, chunk;
	const uint8_t *chunk_src;	/* NULL: no chunk taken */
	unsigned int page;
	hpa_t chunk_copy;		/* live: the copy to free when it is sent */
	/* live only */
	uint64_t *pending;		/* chunks populated at the pause, not taken yet */
	hpa_t *copies;			/* a chunk's content kept before its first write */
	hpa_t send_buf;			/* a chunk copied out of guest RAM to be sent */
	uint64_t meta_bytes;
	uint8_t prefix[PREFIX_MAX];	/* header to virtio devices, staged at the pause */
	size_t prefix_len;
} sv;

bool snap_busy_save(void);
bool snap_busy_save(void)
{
	return sv.phase != P_IDLE;
}

bool snap_saving(const struct vm *vm)
{
	return sv.phase != P_IDLE && sv.vm == vm;
}

bool snap_holds_paused(const struct vm *vm)
{
	return snap_saving(vm) && (!sv.live || __atomic_load_n(&sv.forced_pause, __ATOMIC_ACQUIRE));
}

static bool page_is_zero(const uint8_t *page)
{
	const uint64_t *p = (const uint64_t *)page;

	for (unsigned int i = 0; i < SNAP_PAGE_SIZE / 8; i++)
		if (p[i])
			return false;
	return true;
}

static bool bit(const uint64_t *map, uint64_t c)
{
	return map[c / 64] & (1UL << (c % 64));
}

static const uint8_t *guest_chunk(const struct vm *vm, uint64_t c)
{
	return (const uint8_t *)(uintptr_t)(vm->ram_hpa + c * VM_RAM_CHUNK);
}

/* Take the next chunk to send; false when none is left. Plain: straight
 * from guest RAM (the VM is paused). Live: its copy if the guest wrote to it
 * meanwhile, else a copy made now, under the lock the write path takes. */
static bool take_chunk(void)
{
	struct vm *vm = sv.vm;

	for (; sv.next_chunk < sv.chunks; sv.next_chunk++) {
		uint64_t c = sv.next_chunk;

		if (!sv.live) {
			if (!bit(vm->populated, c))
				continue;	/* never touched: zero */
			sv.chunk_src = guest_chunk(vm, c);
		} else {
			if (!bit(sv.pending, c))
				continue;
			spin_lock(&vm->mem_lock);
			if (vm->ram_epoch != sv.ram_epoch) {
				/* a reboot began: this RAM is not the paused guest's */
				sv.reset = true;
				spin_unlock(&vm->mem_lock);
				return false;
			}
			sv.pending[c / 64] &= ~(1UL << (c % 64));
			if (sv.copies[c]) {
				sv.chunk_copy = sv.copies[c];
				sv.copies[c] = 0;
				sv.chunk_src = (const uint8_t *)(uintptr_t)sv.chunk_copy;
			} else {
				memcpy((void *)(uintptr_t)sv.send_buf, guest_chunk(vm, c),
				       VM_RAM_CHUNK);
				sv.chunk_src = (const uint8_t *)(uintptr_t)sv.send_buf;
			}
			spin_unlock(&vm->mem_lock);
		}
		sv.chunk = c;
		sv.page = 0;
		sv.next_chunk++;
		return true;
	}
	return false;
}

static void drop_chunk(void)
{
	if (sv.chunk_copy)
		mm_free(sv.chunk_copy, VM_RAM_CHUNK);
	sv.chunk_copy = 0;
	sv.chunk_src = NULL;
}

/* Stage the next run of non-zero pages; false when RAM is done. */
static bool stage_memory_run(void)
{
	for (;;) {
		unsigned int first;
		uint64_t pages;

		if (!sv.chunk_src && !take_chunk())
			return false;
		while (sv.page < PAGES_PER_CHUNK &&
		       page_is_zero(sv.chunk_src + sv.page * SNAP_PAGE_SIZE))
			sv.page++;
		if (sv.page == PAGES_PER_CHUNK) {
			drop_chunk();
			continue;
		}
		first = sv.page;
		while (sv.page < PAGES_PER_CHUNK && sv.page - first < SAVE_RUN_PAGES &&
		       !page_is_zero(sv.chunk_src + sv.page * SNAP_PAGE_SIZE))
			sv.page++;
		pages = sv.page - first;
		section_tx_pages(&sv.tx, sv.vm->cfg.ram_gpa + sv.chunk * VM_RAM_CHUNK +
				 first * SNAP_PAGE_SIZE, pages, sv.chunk_src + first * SNAP_PAGE_SIZE);
		sv.pages += pages;
		return true;
	}
}

/* Stage what comes next; false when the stream is complete. */
static bool stage_next(void)
{
	struct vm *vm = sv.vm;

	switch (sv.phase) {
	case P_HEADER:
		section_tx_header(&sv.tx, SNAP_MAGIC, SNAP_VERSION,
				  (sv.live ? SNAP_F_LIVE : 0) | (sv.disks ? SNAP_F_DISKS : 0));
		sv.phase = P_CONFIG;
		return true;
	case P_CONFIG:
		/* the guest's time when it stopped: a restore continues from it */
		snap_emit_config(&sv.tx, vm, sv.start + vm->htimedelta);
		sv.phase = P_STATE;
		sv.index = 0;
		return true;
	case P_STATE:
		snap_emit_state(&sv.tx, vm, sv.index);
		if (++sv.index == snap_state_pieces(vm)) {
			sv.index = 0;
			sv.phase = sv.nr_disk_ids ? P_DISK_ID : sv.live ? P_PREFIX : P_MEMORY;
		}
		return true;
	case P_DISK_ID:
		section_tx_small(&sv.tx, SNAP_SEC_DISK_ID, sv.index, &sv.disk_id[sv.index],
				 sizeof(sv.disk_id[0]));
		if (++sv.index == sv.nr_disk_ids)
			sv.phase = sv.live ? P_PREFIX : P_MEMORY;
		return true;
	case P_PREFIX:
		/* live: the state staged at the pause goes out first */
		section_tx_framed(&sv.tx, sv.prefix, sv.prefix_len);
		sv.phase = P_MEMORY;
		return true;
	case P_MEMORY:
		if (stage_memory_run())
			return true;
		if (sv.reset)
			return false;	/* never an END after a reset: the poll aborts */
		sv.phase = sv.disks ? P_DISK : P_END;
		return stage_next();
	case P_DISK:
		switch (disk_save_next(&sv.tx, &sv.disk_err)) {
		case DS_STAGED:
			sv.disk_runs++;
			return true;
		case DS_DONE:
			sv.phase = P_END;
			return stage_next();
		default:
			return false;	/* reads under way, or disk_err: the poll ends it */
		}
	case P_END:
		snap_emit_end(&sv.tx, sv.pages);
		sv.phase = P_DONE;
		return true;
	default:
		return false;
	}
}

/* Live: called under vm->mem_lock, on any hart, before a chunk that was
 * populated at the pause becomes writable. */
static bool keep_before_write(struct vm *vm, uint64_t c)
{
	hpa_t copy;

	if (vm != sv.vm || !sv.pending || !bit(sv.pending, c) || sv.copies[c] ||
	    vm->ram_epoch != sv.ram_epoch)
		return true;	/* sent already, kept already, or a reboot ends it */
	copy = mm_alloc_raw(VM_RAM_CHUNK, PAGE_SIZE);
	if (!copy) {
		/* no room for a copy: the VM waits, paused, until the stream is
		 * out (a pause its operator asked for first stays theirs) */
		if (!sv.forced_pause && !vm_request_pause(vm)) {
			sv.forced_at = time_now();
			__atomic_store_n(&sv.forced_pause, true, __ATOMIC_RELEASE);
		}
		return false;
	}
	memcpy((void *)(uintptr_t)copy, guest_chunk(vm, c), VM_RAM_CHUNK);
	sv.copies[c] = copy;
	return true;
}

static void live_end(void)
{
	struct vm *vm = sv.vm;

	if (!sv.live)
		return;
	spin_lock(&vm->mem_lock);
	vm->cow = NULL;
	spin_unlock(&vm->mem_lock);
	for (uint64_t c = 0; c < sv.chunks; c++)
		if (sv.copies[c])
			mm_free(sv.copies[c], VM_RAM_CHUNK);
	mm_free((hpa_t)(uintptr_t)sv.pending, sv.meta_bytes);
	mm_free(sv.send_buf, VM_RAM_CHUNK);
	sv.pending = NULL;
	vm_ram_unprotect(vm);
	/* the pause we asked for ends with the stream, finished or not */
	if (sv.forced_pause && !vm_unpause(vm))
		pr_info("vm %s: runs again: the live snapshot kept it paused %lu us for want of "
			"memory for copies", vm->cfg.name,
			(unsigned long)((time_now() - sv.forced_at) * 1000000 / timebase_hz));
}

static void finish(const char *err)
{
	struct snap_result r = { err, err ? "stream" : NULL, sv.vm, sv.tx.bytes, sv.pages,
				 sv.forced_pause ? time_now() - sv.forced_at + 1 : 0, 0, sv.disk_runs,
				 sv.disks ? disk_save_holds() : 0 };
	snap_done_fn done = sv.done;

	drop_chunk();
	if (sv.disks)
		disk_save_end();
	live_end();
	sv.phase = P_IDLE;
	sv.vm = NULL;
	if (done)
		done(&r);
}

/* Live: everything but memory is staged now, while the VM is paused, and its
 * RAM write-protected; the caller resumes it. */
static int live_begin(struct vm *vm)
{
	uint64_t map = ALIGN_UP((sv.chunks + 63) / 64 * 8, 8);

	sv.meta_bytes = ALIGN_UP(map + sv.chunks * sizeof(hpa_t), PAGE_SIZE);
	sv.pending = (uint64_t *)(uintptr_t)mm_alloc(sv.meta_bytes, PAGE_SIZE);
	sv.send_buf = mm_alloc_raw(VM_RAM_CHUNK, PAGE_SIZE);
	if (!sv.pending || !sv.send_buf) {
		if (sv.pending)
			mm_free((hpa_t)(uintptr_t)sv.pending, sv.meta_bytes);
		if (sv.send_buf)
			mm_free(sv.send_buf, VM_RAM_CHUNK);
		sv.pending = NULL;
		return -HYP_ENOMEM;
	}
	sv.copies = (hpa_t *)((uint8_t *)sv.pending + map);
	while (sv.phase != P_PREFIX) {
		stage_next();
		sv.prefix_len += section_tx_take(&sv.tx, sv.prefix + sv.prefix_len,
						 sizeof(sv.prefix) - sv.prefix_len);
	}
	spin_lock(&vm->mem_lock);
	memcpy(sv.pending, vm->populated, (sv.chunks + 63) / 64 * 8);
	vm->cow = keep_before_write;
	spin_unlock(&vm->mem_lock);
	vm_ram_write_protect(vm);	/* every hart that ran it drops W first */
	return 0;
}

static const char *start_error;

const char *snap_save_start_error(void)
{
	return start_error;
}

/* Without the disks' content: each disk's identity, read now (paused). */
static int take_disk_ids(struct vm *vm)
{
	for (unsigned int i = 0; i < VM_MAX_DISKS && vm_io_disk_sectors(vm, i); i++) {
		int rc = disk_id_take(vm, i, &sv.disk_id[i], &start_error);

		if (rc)
			return rc;
		sv.nr_disk_ids++;
	}
	return 0;
}

int snap_save_start(struct vm *vm, bool live, bool disks, snap_done_fn done)
{
	int rc;

	start_error = NULL;
	if (sv.phase != P_IDLE)
		return -HYP_EBUSY;
	if (!snap_port_ready())
		return -HYP_ENOENT;
	memset(&sv, 0, offsetof(__typeof__(sv), prefix));
	sv.prefix_len = 0;
	sv.phase = P_HEADER;
	sv.vm = vm;
	sv.done = done;
	sv.live = live;
	sv.disks = disks;
	sv.boot_count = vm->cfg.boot_count;
	sv.ram_epoch = vm->ram_epoch;
	sv.chunks = vm->cfg.ram_size / VM_RAM_CHUNK;
	sv.start = time_now();
	section_tx_reset(&sv.tx);
	if (!disks && (rc = take_disk_ids(vm))) {
		sv.phase = P_IDLE;
		return rc;
	}
	/* the disks first: their guard is set while the VM is still paused */
	if (disks && disk_save_begin(vm, live ? DISK_SAVE_LIVE : DISK_SAVE_PLAIN)) {
		sv.phase = P_IDLE;
		return -HYP_ENOMEM;
	}
	if (live && live_begin(vm)) {
		if (disks)
			disk_save_end();
		sv.phase = P_IDLE;
		return -HYP_ENOMEM;
	}
	return 0;
}

/* A reboot was asked for, is under way or happened since the pause. */
static bool rebooting(const struct vm *vm)
{
	return sv.reset || vm->cfg.boot_count != sv.boot_count ||
	       __atomic_load_n(&vm->ram_epoch, __ATOMIC_ACQUIRE) != sv.ram_epoch ||
	       vm->state == VM_REBOOTING || vm->state == VM_RESETTING;
}

bool snap_save_poll(void)
{
	uint64_t until = time_now() + timebase_hz / 1000000 * POLL_BUDGET_US;

	if (sv.phase == P_IDLE)
		return false;
	/* our pause ends in PAUSED once the vCPUs are off their harts */
	if (__atomic_load_n(&sv.forced_pause, __ATOMIC_ACQUIRE) && sv.vm->state == VM_PAUSING)
		vm_pause_settle(sv.vm);
	do {
		if (!snap_port_ready()) {
			finish("the stream client went away");
			return false;
		}
		if (rebooting(sv.vm)) {
			finish("the VM rebooted during the live snapshot: the snapshot is aborted "
			       "(nothing of the new boot went out); take it again");
			return false;
		}
		if (sv.disks && sv.live)
			disk_save_serve();	/* held guest writes never wait for the stream */
		if (!section_tx_push(&sv.tx)) {
			if (snap_port_stalled(sv.tx.moved)) {
				finish("the stream client stopped reading");
				return false;
			}
			vcon_poll();	/* buffers come back as QEMU sends them */
			if (!section_tx_push(&sv.tx))
				return false;	/* no room: hart 0 waits (host_poll()) */
		}
		if (sv.phase == P_DONE) {
			finish(NULL);
			return false;
		}
		if (!stage_next()) {
			if (sv.disk_err) {
				finish(sv.disk_err);
				return false;
			}
			if (!sv.reset)
				return false;	/* the disk reads are under way */
		}
	} while (time_now() < until);
	return true;
}
