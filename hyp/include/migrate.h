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
	/* the source: its estimate of the downtime when it stopped pre-copy, and
	 * the pace its guest's page writes were held to (0: never) */
	uint64_t expected_downtime_ticks;
	uint64_t dirty_limit, dirty_holds, dirty_held_ticks;
};
typedef void (*mig_done_fn)(const struct mig_result *r);

#define MIG_MAX_ROUNDS_DEFAULT	30
#define MIG_MAX_ROUNDS_LIMIT	100
/* Pre-copy ends when what is left would go within the downtime limit at the
 * stream's measured rate (QEMU's downtime-limit), or when at most
 * MIG_STOP_PAGES were written in a round (128 KiB: ~1 ms on the loopback,
 * whatever the rate). A guest that writes pages faster than that has its
 * page writes paced (auto-converge, dirty_limit.h) to MIG_DIRTY_SHARE_PCT of
 * the stream's rate, halved again each time a round under the pace still
 * leaves as much as the one before; without auto-converge, pre-copy ends
 * once a round (from the third on) left no fewer than 90 % of the dirty
 * pages of the one before, and what is left goes while paused. */
#define MIG_STOP_PAGES		32
#define MIG_MIN_ROUNDS_BEFORE_GIVING_UP	3
#define MIG_DOWNTIME_LIMIT_MS_DEFAULT	20
#define MIG_DOWNTIME_LIMIT_MS_MAX	60000
#define MIG_DIRTY_SHARE_PCT	50

struct mig_send_opts {
	unsigned int max_rounds;	/* 1..MIG_MAX_ROUNDS_LIMIT */
	unsigned int downtime_limit_ms;	/* 1..MIG_DOWNTIME_LIMIT_MS_MAX */
	bool auto_converge;		/* pace a guest that out-writes the stream */
};

/** mig_send_start() - migrate @vm (running or paused) over the stream port. */
int mig_send_start(struct vm *vm, const struct mig_send_opts *opts,
		   const struct mig_host_ops *ops, mig_done_fn done);
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
