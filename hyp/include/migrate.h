/* SPDX-License-Identifier: MIT */
/* Live migration of one VM (docs/migration.md): the source's engine sends it
 * on the stream port (mig_send.c), the destination's receives it
 * (mig_recv.c); both frame their messages as snapshots do (section_stream.h)
 * with the protocol's header and ABORT (mig_wire.c). */
#ifndef HYP_MIGRATE_H
#define HYP_MIGRATE_H
#include <types.h>
#include <abi/migration_format.h>

struct vm;
struct snap_io_map;

/* What the engines need from the host layer (vmops): the VM lifecycle. */
typedef void (*mig_vm_done_fn)(void *ctx, struct vm *vm, uint64_t result);
struct mig_host_ops {
	int (*pause)(struct vm *vm, mig_vm_done_fn done, void *ctx);
	int (*resume)(struct vm *vm);
	int (*destroy)(struct vm *vm, mig_vm_done_fn done, void *ctx);
};

struct mig_result {
	const char *err, *code;		/* NULL on success */
	const char *vm_name;
	struct vm *vm;			/* the destination's new VM */
	uint64_t bytes, pages;
	uint32_t rounds;
	uint64_t total_ticks;		/* request to the end */
	uint64_t downtime_ticks;	/* this side's part of the downtime */
	uint64_t peer_downtime_ticks;	/* the source: the destination's part */
	const char *disk_mode;		/* "copy", "shared", "none" (no disk) */
	uint64_t disk_blocks, disk_bytes;	/* DISK sections sent or received */
};
typedef void (*mig_done_fn)(const struct mig_result *r);

#define MIG_MAX_ROUNDS_DEFAULT	30
#define MIG_MAX_ROUNDS_LIMIT	100
/* Pre-copy ends when at most this many pages were written in a round: what
 * is left goes while the VM is paused (128 KiB: ~1 ms on the loopback); or
 * when a round (from the third on) left no fewer than 90 % of the dirty
 * pages of the one before: the guest writes as fast as we send, and more
 * rounds would only send the same pages again. */
#define MIG_STOP_PAGES		32
#define MIG_MIN_ROUNDS_BEFORE_GIVING_UP	3

/** mig_send_start() - migrate @vm (running or paused) over the stream port. */
int mig_send_start(struct vm *vm, unsigned int max_rounds, const struct mig_host_ops *ops,
		   mig_done_fn done);
/** mig_sending() - is @vm being migrated (it must stay)? */
bool mig_sending(const struct vm *vm);
/** mig_recv_start() - take one VM from the stream port (named @name, or as
 *  sent when NULL; its disks where @map says, or as sent when NULL).
 *  @armed: wait for a client as long as it takes (a host started for it),
 *  and wait again after a failed attempt. */
int mig_recv_start(const char *name, bool armed, const struct snap_io_map *map,
		   const struct mig_host_ops *ops, mig_done_fn done);
/** mig_send_poll()/mig_recv_poll() - move bytes (host services, hart 0):
 *  true when stopped on the time bound with more to do at once, false when
 *  nothing is under way or what is waits for the port (its interrupt wakes
 *  hart 0) or for a pause (vmops). */
bool mig_send_poll(void);
bool mig_recv_poll(void);
/* Kept by the engines: the scheduler asks on every vCPU switch on hart 0,
 * so the answer is one load (a function call cost the switch 30 instructions). */
extern bool mig_send_active, mig_recv_active;
/** mig_busy() - a migration is under way (a receive waiting for its client
 *  counts only once the client is connected). */
static inline bool mig_busy(void)
{
	return mig_send_active || mig_recv_active;
}
/** mig_recv_armed() - a receive waits for its client. */
bool mig_recv_armed(void);
/** mig_receiving() - is @vm the one a receive created (arriving, or run but
 *  not yet confirmed by the source's DONE)? */
bool mig_receiving(const struct vm *vm);
/** mig_recv_cancel() - its operator destroys @vm, which is arriving: the
 *  receive ends and never touches its slot again. True if the VM had not
 *  run yet: then it is freed here (*@freed bytes) and the source told
 *  (ABORT: it keeps its copy); false: destroy it as any VM. */
bool mig_recv_cancel(struct vm *vm, uint64_t *freed);
#endif
