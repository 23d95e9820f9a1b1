/* SPDX-License-Identifier: MIT */
/* Snapshots of one VM (docs/snapshot-format.md): the guest state to and from
 * the stream structs (snap_state.c, pure), and the stream engines that save
 * a VM to the stream port and restore one from it (snap_save.c, snap_load.c;
 * their framing, shared with migrations: section_stream.h). */
#ifndef HYP_SNAPSHOT_H
#define HYP_SNAPSHOT_H
#include <types.h>
#include <snap_table.h>

struct vm;
struct vcpu;
struct vm_desc;

/* The trapped-context sstatus bits that are the guest's: a restore takes
 * these from the record and the rest (FS, UXL) from the hypervisor. */
#define SNAP_SSTATUS_GUEST	(SR_SPP | SR_SPIE | SR_SPELP)

/** snap_header_check() - NULL if @h opens a stream we can read, else why not. */
const char *snap_header_check(const struct snap_header *h);
/** snap_config_save() - what @vm is; @guest_time is its time now. */
void snap_config_save(const struct vm *vm, uint64_t guest_time, uint64_t timebase_hz,
		      struct snap_config *c);
/** snap_config_check() - NULL if every field is in range, else which is not. */
const char *snap_config_check(const struct snap_config *c);
/** snap_config_problem() - snap_config_check(), and *@offset: the offset in
 *  the payload of the field at fault. */
const char *snap_config_problem(const struct snap_config *c, uint32_t *offset);
/** snap_config_desc() - the VM description a restore creates (@name: a new
 *  name, or NULL for the saved one). */
void snap_config_desc(const struct snap_config *c, const char *name, struct vm_desc *d);
/** snap_vcpu_save()/snap_vcpu_load() - a vCPU's guest state (off its hart),
 *  every record of it. */
void snap_vcpu_save(const struct vcpu *v, struct snap_vcpu *s);
void snap_vcpu_load(struct vcpu *v, const struct snap_vcpu *s);
/** snap_vcpu_size() - a VCPU section's length in a stream of @version. */
uint64_t snap_vcpu_size(uint32_t version);
/** snap_vcpu_from_stream() - a VCPU payload of a @version stream as the
 *  current records (an older record gets what its writer gave the guest);
 *  NULL, or why not (a record header, a field with no place in the current
 *  records that is not 0) and *@offset: the payload offset at fault. */
const char *snap_vcpu_from_stream(const void *payload, uint32_t version, uint32_t features,
				  struct snap_vcpu *s, uint32_t *offset);
/** snap_vcpu_stream_offset() - where the byte at @offset of struct snap_vcpu
 *  came from in a VCPU payload of a @version stream. */
uint32_t snap_vcpu_stream_offset(uint32_t version, uint32_t offset);
/** snap_vcpu_check() - NULL if the records can be installed in the VM @c
 *  describes (its features, its RAM), else why not. */
const char *snap_vcpu_check(const struct snap_vcpu *s, const struct snap_config *c);
/** snap_vcpu_problem() - snap_vcpu_check(), and *@offset: the offset in
 *  struct snap_vcpu of the field at fault. */
const char *snap_vcpu_problem(const struct snap_vcpu *s, const struct snap_config *c,
			      uint32_t *offset);
/** snap_vcpu_mask() - clear every bit of @s that no bit rule allows a VM
 *  given @features, and the read-only bits (value rules are the check's: a
 *  value is never guessed). */
void snap_vcpu_mask(struct snap_vcpu *s, uint32_t features);

/* The record tables (include/abi/snapshot_records.h; their rows as struct
 * snap_field, snap_table.h), hyp/snap/snap_record.c. */
/** struct snap_record_desc - a vCPU record: its id, its table, where it is in
 *  struct snap_vcpu, and the hooks of the file that owns its state (NULL:
 *  none). A check hook's *@offset is in the record. */
struct snap_record_desc {
	uint32_t id;
	const char *name;
	uint16_t offset, size;	/* of its fields, behind its struct snap_record */
	const struct snap_field *fields;
	size_t nr_fields;
	const struct snap_record_ops *ops;
};
extern const struct snap_record_desc snap_vcpu_records[];
extern const size_t snap_nr_vcpu_records;
extern const struct snap_field snap_config_fields[];
extern const size_t snap_nr_config_fields;
/** struct snap_v2_field - a field of the frozen version 2 VCPU record. */
struct snap_v2_field {
	const char *name;
	uint16_t offset;
	uint16_t width, count;
};
extern const struct snap_v2_field snap_vcpu_v2_fields[];
extern const size_t snap_nr_vcpu_v2_fields;
const struct snap_v2_field *snap_v2_field(const char *name);
/** snap_get()/snap_put() - a little-endian integer of @size bytes at @p. */
uint64_t snap_get(const void *p, size_t size);
void snap_put(void *p, size_t size, uint64_t v);
/** snap_fields_check() - NULL if each field of @rec holds a legal value for a
 *  VM given @features, else the first rule broken, naming its field;
 *  *@offset: that element's offset in @rec. */
const char *snap_fields_check(const void *rec, const struct snap_field *fields, size_t n,
			      uint32_t features, uint32_t *offset);
/** snap_fields_mask() - clear the bits no bit rule allows, and the read-only. */
void snap_fields_mask(void *rec, const struct snap_field *fields, size_t n, uint32_t features);
/** snap_fields_save()/snap_fields_load() - copy the fields with a live member
 *  from/to @live (a struct vcpu_guest). */
void snap_fields_save(const void *live, void *rec, const struct snap_field *fields, size_t n);
void snap_fields_load(void *live, const void *rec, const struct snap_field *fields, size_t n);
/** snap_legal_config() - snap_fields_check() of CONFIG's table. */
const char *snap_legal_config(const struct snap_config *c, uint32_t *offset);
/** snap_lost_features() - SNAP_FEAT_* the guest was given and a VM created
 *  here with its policy would not get (0: none lost); SNAP_FEAT_AIA: an AIA
 *  VM on a host without Ssaia. */
uint32_t snap_lost_features(const struct snap_config *c);

/* Admission, shared by restores and incoming migrations (snap_admit.c). */
/** snap_device_count() - the DEVICE sections a @version stream has: the
 *  first this many models of SNAP_DEVICES. */
unsigned int snap_device_count(uint32_t version);
/** snap_section_length() - the payload length of a CONFIG, VCPU, DEVICE
 *  (@instance: its index) or END section in a @version stream; 0: none. */
uint64_t snap_section_length(uint32_t type, uint32_t instance, uint32_t version);
/** snap_admit() - check @c as a restore does and create its VM (named @name,
 *  or as saved when NULL), not started; NULL with the refusal's @code and
 *  @why. */
struct vm *snap_admit(const struct snap_config *c, const char *name, const char **code,
		      const char **why);
/** snap_admit_vcpu() - check the VCPU payload of a @version stream for the
 *  VM @c describes and install it in @vm's vCPU @instance; else why not, and
 *  *@offset: the payload offset of the field at fault. */
const char *snap_admit_vcpu(struct vm *vm, uint32_t instance, const void *payload,
			    uint32_t version, const struct snap_config *c, uint32_t *offset);
/** snap_admit_device_at() - check the DEVICE payload for device @index with
 *  the model's table (include/abi/snapshot_devices.h) and check hook, and
 *  install it; else why not, naming the field, and *@offset: the payload
 *  offset at fault. */
const char *snap_admit_device_at(struct vm *vm, uint32_t index, const void *payload,
				 uint32_t *offset);
/** snap_device_check() - NULL if @state is one device @index of @vm can
 *  hold (its table's rules and its check hook), else why not and *@offset:
 *  the offset in @state of the field at fault. */
const char *snap_device_check(const struct vm *vm, uint32_t index, const void *state,
			      uint32_t *offset);
/** snap_device_save() - device @index's DEVICE payload into @payload (@room
 *  bytes), masked with its table; its length. */
size_t snap_device_save(struct vm *vm, uint32_t index, void *payload, size_t room);
/* The largest DEVICE payload (a struct snap_device and the model's state). */
#define SNAP_DEVICE_MAX		(sizeof(struct snap_device) + 512)

/* The VIRTIO sections: a VM's disks and NICs (snap_vio.c). */
/* Where a restore or an incoming migration puts the disks: the host disk of
 * disk k is disk_pci[k], or the one it was saved on where that is 0. */
struct snap_io_map {
	uint8_t disk_pci[2];		/* VM_MAX_DISKS */
	bool copy;			/* a migration in copy mode (docs/migration.md) */
	uint8_t bound;			/* copy mode: a bit a disk its DISK_LAYOUT bound
					 * already; its VIRTIO state loads into it */
};
/** snap_vio_count() - @vm's virtio devices: slots 0 .. count - 1. */
unsigned int snap_vio_count(const struct vm *vm);
/** snap_vio_save() - the VIRTIO payload of the device in @slot (the VM
 *  paused, its devices drained) into @payload (@room bytes); its length. */
size_t snap_vio_save(struct vm *vm, uint32_t slot, void *payload, size_t room);
/** snap_vio_length_ok() - @length is a VIRTIO payload's (a model's state
 *  behind its struct snap_device). */
bool snap_vio_length_ok(uint64_t length);
/** snap_vio_admit() - check the VIRTIO payload (@length bytes) for @slot of
 *  @vm (the next one) and give @vm that device, bound to this host (@map:
 *  its disks; a NIC whose MAC is on its switch gets a derived one, bit k of
 *  *@derived set, unless the VM is moved in); else why not, *@code
 *  "bad-snapshot" (the stream) or "no-device" (this host cannot bind it),
 *  *@offset the payload offset at fault. */
const char *snap_vio_admit(struct vm *vm, uint32_t slot, const void *payload, uint64_t length,
			   const struct snap_io_map *map, uint32_t *derived, uint32_t *offset,
			   const char **code);
/** snap_vio_started() - @vm, restored or moved in, runs (or waits paused):
 *  its queues are rescanned once it runs, each NIC on its switch announces
 *  itself. */
void snap_vio_started(struct vm *vm, bool paused);

/* The state both senders stage on their transmitter (snap_emit.c). */
struct section_tx;
/** snap_emit_config() - stage CONFIG: what @vm is, @guest_time its time now. */
void snap_emit_config(struct section_tx *t, const struct vm *vm, uint64_t guest_time);
/** snap_state_pieces() - how many pieces @vm's state has: a VCPU section
 *  per vCPU, a DEVICE section per device model, then a VIRTIO section per
 *  virtio device. */
unsigned int snap_state_pieces(const struct vm *vm);
/** snap_emit_state() - stage piece @index (below snap_state_pieces()) of
 *  @vm's state, whose vCPUs are off their harts. */
void snap_emit_state(struct section_tx *t, struct vm *vm, unsigned int index);
/** snap_emit_end() - stage END: the sections @t staged, @pages pages. */
void snap_emit_end(struct section_tx *t, uint64_t pages);

#define SNAP_PORT_NAME	"org.carapace.stream"

/** snap_done_fn - a save or load ended: @err NULL on success, else why
 *  (@code: the protocol's error code); @vm the VM saved or created. */
struct snap_result {
	const char *err, *code;
	struct vm *vm;
	uint64_t bytes, pages;
	/* a load: from its request to the VM running; a live save: how long it
	 * kept the VM paused for want of memory for copies (0: not at all) */
	uint64_t ticks;
	uint32_t macs_derived;	/* a load: bit k, NIC k got a new MAC (snap_vio_admit) */
	uint64_t disk_runs;	/* DISK sections: blocks of the disks that are not zero */
	uint64_t disk_holds;	/* a live save: guest writes held for their block's read */
};
typedef void (*snap_done_fn)(const struct snap_result *r);

/* The stream port (snap_port.c; hart 0 only). */
/** snap_port_init() - at boot, before any VM: the port's large transmit
 *  buffers (SNAP_PORT_TX_BUF_SIZE each, hypervisor memory, kept for good),
 *  given to the port once it is found. Without memory for them the port
 *  keeps its driver's small ones: slower, nothing else changes. */
void snap_port_init(void);
#define SNAP_PORT_TX_BUF_SIZE	(64 * 1024)
/** snap_port_ready() - the stream port exists and a client is connected. */
bool snap_port_ready(void);
/** snap_port_write()/snap_port_read() - as many bytes as the port takes/has. */
size_t snap_port_write(const void *buf, size_t len);
size_t snap_port_read(void *buf, size_t len);
/** snap_port_drain() - drop bytes a client left behind (before a new load). */
void snap_port_drain(void);
/* A save or load whose client moves no byte for this long is abandoned: a
 * stuck client must not keep a VM paused, or the restore slot taken, forever. */
#define SNAP_STALL_MS_DEFAULT	30000
extern uint32_t snap_stall_ms;		/* /chosen carapace,stream-stall-ms */
/** snap_port_stalled() - no byte moved since @since (time_now() ticks). */
bool snap_port_stalled(uint64_t since);

/* A restore or an incoming migration of an AIA VM (CONFIG's features have
 * SNAP_FEAT_AIA) on a host whose CPU lacks Ssaia: refused at CONFIG, before
 * anything is installed (docs/design-aia.md 5). */
#define SNAP_AIA_NO_SSAIA	"the guest uses AIA (an IMSIC per vCPU and an APLIC); this host's " \
				"CPU has no Ssaia"

/** snap_save_start() - stream @vm, which the caller paused (all vCPUs off
 *  their harts, its devices drained), to the stream port; @done is called
 *  when it ended. @live: the caller may resume the VM as soon as this
 *  returns. @disks: its disks' content goes in too (SNAP_F_DISKS); else each
 *  disk's identity (DISK_ID), whose blocks are read now. */
int snap_save_start(struct vm *vm, bool live, bool disks, snap_done_fn done);
/** snap_save_start_error() - why the last snap_save_start() failed, when it
 *  says more than its code (a disk's identity could not be read), or NULL. */
const char *snap_save_start_error(void);
/** snap_saving() - is @vm being saved (its memory must stay)? */
bool snap_saving(const struct vm *vm);
/** snap_holds_paused() - a save of @vm needs it paused until the stream is
 *  out: a plain snapshot, or a live one that ran out of memory for copies.
 *  Nobody else may resume it meanwhile. */
bool snap_holds_paused(const struct vm *vm);
/** snap_load_start() - read a stream of @bytes from the stream port into a
 *  new VM (named @name, or as saved when NULL; its disks where @map says, or
 *  as saved when NULL); @done when it ended. */
int snap_load_start(uint64_t bytes, const char *name, const struct snap_io_map *map,
		    snap_done_fn done);
/** snap_save_poll()/snap_load_poll() - move bytes (host services, hart 0).
 *  Each returns true when it stopped on its time bound with more to do at
 *  once, false when nothing is under way or what is waits for the host: a
 *  disk read (its interrupt wakes hart 0), room in the port or bytes from
 *  it (the port's interrupt wakes hart 0). */
bool snap_save_poll(void);
bool snap_load_poll(void);
/** snap_busy() - a save or a load is under way. */
bool snap_busy(void);
/** snap_busy_load() - a load is under way. */
bool snap_busy_load(void);
#endif
