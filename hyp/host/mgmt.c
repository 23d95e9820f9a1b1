/* SPDX-License-Identifier: MIT */
/* The management protocol (docs/management.md), version 1: one JSON object per
 * line on the control port, one reply line per request, in order. Every field
 * is checked here, at the boundary; unknown fields, commands and versions are
 * refused with an error, never guessed. Runs on hart 0 only (host_poll). */
#include <arch/riscv/encoding.h>
#include <string.h>
#include <errno.h>
#include <hart.h>
#include <host_irq.h>
#include <hyp_cfi.h>
#include <json.h>
#include <log.h>
#include <mgmt.h>
#include <mm.h>
#include <names.h>
#include <printf.h>
#include <snapshot.h>
#include <migrate.h>
#include <tlb.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_io.h>
#include <vm_lifecycle.h>
#include <vmops.h>

#define MGMT_PROTOCOL	1
#define MGMT_LINE_MAX	4096		/* bytes per request line, newline included */
#define MGMT_REPLY_MAX	8192
#define MGMT_PORT_NAME	"org.carapace.control"
/* How long one poll serves requests: a client that streams requests (or one
 * endless line) would otherwise keep hart 0 in mgmt_poll() for as long as it
 * sends, and with it the vCPU that hart interrupted, the TLB shootdowns and
 * remote fences aimed at that vCPU, and every other host service. The
 * deadline is looked at before each request and each read of the port once
 * the poll has done something, so a poll lasts at most this plus one request
 * or one read's bytes; the rest waits for the next poll, at the scheduler's
 * next pass (mgmt_busy()). */
#define MGMT_POLL_BUDGET_US	1000

static const char *const policy_names[] = { "trap", "delegate", "strict", "off" };

/* What a reply that comes later answers: a late callback of one kind never
 * answers a request of another (its client may have gone, and the next
 * client's request be waiting). */
enum wait_kind { W_NONE, W_OP, W_SNAPSHOT, W_RESTORE, W_MIGRATE, W_INCOMING };

static struct mgmt {
	int port;			/* -1: no management device */
	unsigned int generation;	/* the client connection the buffers belong to */
	char line[MGMT_LINE_MAX];
	size_t line_len;
	bool discarding;		/* skipping the rest of an overlong line */
	char reply[MGMT_REPLY_MAX];
	size_t reply_len, reply_sent;	/* a reply still going out */
	enum wait_kind waiting;		/* a reply that comes later */
	uint64_t wait_id;
	bool wait_has_id;
	char scratch[MGMT_LINE_MAX];	/* decoded JSON strings */
	char in[256];			/* bytes read from the port, not yet consumed */
	size_t in_len, in_off;
	unsigned int read_generation;	/* the client the line buffer belongs to */
	bool more;			/* the last poll stopped at its bound */
	uint64_t requests, errors;	/* lines answered, error replies (metrics) */
} m = { .port = -1 };

/* ---- replies ---- */

static void reply_head(struct json_writer *w, bool has_id, uint64_t id, bool ok)
{
	jw_init(w, m.reply, sizeof(m.reply) - 1);	/* room for the newline */
	jw_obj_begin(w);
	jw_kv_u64(w, "v", MGMT_PROTOCOL);
	jw_key(w, "id");
	if (has_id)
		jw_u64(w, id);
	else
		jw_null(w);
	jw_kv_bool(w, "ok", ok);
}

static void reply_send(struct json_writer *w)
{
	jw_obj_end(w);
	if (!jw_finish(w)) {
		/* never send a cut-off object: say what happened instead */
		m.errors++;
		jw_init(w, m.reply, sizeof(m.reply) - 1);
		jw_obj_begin(w);
		jw_kv_u64(w, "v", MGMT_PROTOCOL);
		jw_key(w, "id");
		jw_null(w);
		jw_kv_bool(w, "ok", false);
		jw_kv_str(w, "code", "internal");
		jw_kv_str(w, "error", "reply too large");
		jw_obj_end(w);
		jw_finish(w);
	}
	m.reply_len = strlen(m.reply);
	m.reply[m.reply_len++] = '\n';
	m.reply_sent = 0;
}

static void reply_error(bool has_id, uint64_t id, const char *code, const char *msg)
{
	struct json_writer w;

	m.errors++;
	reply_head(&w, has_id, id, false);
	jw_kv_str(&w, "code", code);
	jw_kv_str(&w, "error", msg);
	reply_send(&w);
}

/* ---- one request ---- */

struct req {
	const struct json_obj *o;
	bool has_id;
	uint64_t id;
	struct vm *vm;		/* for commands that name one */
};

/* Refuse fields the command does not take (v, id and cmd always allowed). */
static const char *unknown_field(const struct json_obj *o, const char *const *allowed)
{
	for (unsigned int i = 0; i < o->nr; i++) {
		const struct json_field *f = &o->f[i];
		bool ok = json_key_is(f, "v") || json_key_is(f, "id") || json_key_is(f, "cmd");

		for (const char *const *a = allowed; *a && !ok; a++)
			ok = json_key_is(f, *a);
		if (!ok)
			return f->key;
	}
	return NULL;
}

static bool get_vm(struct req *r, const char *key, bool required)
{
	const char *name;
	size_t len;

	r->vm = NULL;
	if (!json_get(r->o, key)) {
		if (required)
			reply_error(r->has_id, r->id, "bad-request", "missing field 'vm'");
		return !required;
	}
	if (!json_get_str(r->o, key, &name, &len)) {
		reply_error(r->has_id, r->id, "bad-request", "field 'vm' must be a string");
		return false;
	}
	r->vm = len < VM_NAME_LEN ? vm_find(name) : NULL;
	if (!r->vm) {
		reply_error(r->has_id, r->id, "no-such-vm", "no VM by that name");
		return false;
	}
	return true;
}

/* "vms":[...]: @entry of each VM in use, or of @only alone when it is set
 * (the one walk of the VM table that list, stats and metrics make). */
static void vms_array(struct json_writer *w, const struct vm *only,
		      void (*entry)(struct json_writer *w, const struct vm *vm))
{
	jw_key(w, "vms");
	jw_arr_begin(w);
	for (unsigned int i = 0; i < nr_vms; i++)
		if (vm_slot_used(&vms[i]) && (!only || only == &vms[i]))
			entry(w, &vms[i]);
	jw_arr_end(w);
}

static void vm_name(struct json_writer *w, const struct vm *vm)
{
	jw_str(w, vm->cfg.name);
}

/* What a VM is and how it is doing (list, metrics). */
static void vm_description(struct json_writer *w, const struct vm *vm)
{
	jw_kv_u64(w, "index", vm->index);
	jw_kv_str(w, "state", vm_state_name(vm));
	jw_kv_u64(w, "vcpus", vm->cfg.nr_vcpus);
	jw_kv_u64(w, "mem", vm->cfg.ram_size);
	jw_kv_str(w, "cfi", policy_names[vm->cfg.cfi_policy]);
	jw_kv_u64(w, "boots", vm->cfg.boot_count);
	jw_kv_bool(w, "failed", vm->failed);
}

static void vm_entry(struct json_writer *w, const struct vm *vm)
{
	jw_obj_begin(w);
	jw_kv_str(w, "name", vm->cfg.name);
	vm_description(w, vm);
	if (vm_migration_word(vm))
		jw_kv_str(w, "migration", vm_migration_word(vm));
	jw_obj_end(w);
}

/* Which build runs and what its own CFI got (hyp_cfi.h): carapace-ctl hello. */
static void hyp_cfi_entry(struct json_writer *w)
{
	jw_key(w, "hyp_cfi");
	jw_obj_begin(w);
	jw_kv_str(w, "build", HYP_CFI_BUILD ? "cfi" : "plain");
	jw_kv_bool(w, "landing_pads", hyp_cfi.lp_on);
	jw_kv_bool(w, "landing_pads_locked", hyp_cfi.lp_on && hyp_cfi.lp_locked);
	jw_kv_bool(w, "shadow_stack", hyp_cfi.ss_on);
	jw_kv_bool(w, "shadow_stack_locked", hyp_cfi.ss_on && hyp_cfi.ss_locked);
	jw_kv_bool(w, "debug_hooks", HYP_DEBUG_HOOKS);
	jw_obj_end(w);
}

static void cmd_hello(struct req *r)
{
	static const char *const cmds[] = { "hello", "list", "images", "stats", "metrics", "cfi",
					    "pause", "resume", "wake", "destroy", "create",
					    "snapshot", "restore", "migrate", "incoming", "devices",
					    "nic" };
	struct json_writer w;

	reply_head(&w, r->has_id, r->id, true);
	jw_kv_u64(&w, "protocol", MGMT_PROTOCOL);
	jw_kv_str(&w, "hypervisor", "carapace");
	jw_key(&w, "commands");
	jw_arr_begin(&w);
	for (unsigned int i = 0; i < ARRAY_SIZE(cmds); i++)
		jw_str(&w, cmds[i]);
	jw_arr_end(&w);
	jw_kv_u64(&w, "vm_max", VM_MAX);
	jw_kv_u64(&w, "harts", nr_harts);
	jw_kv_u64(&w, "vmids", vmid_usable());
	hyp_cfi_entry(&w);
	reply_send(&w);
}

static void cmd_list(struct req *r)
{
	struct json_writer w;

	reply_head(&w, r->has_id, r->id, true);
	vms_array(&w, NULL, vm_entry);
	reply_send(&w);
}

static void cmd_images(struct req *r)
{
	const struct host_image *im;
	struct json_writer w;

	reply_head(&w, r->has_id, r->id, true);
	jw_key(&w, "images");
	jw_arr_begin(&w);
	for (unsigned int i = 0; (im = image_at(i)); i++) {
		jw_obj_begin(&w);
		jw_kv_str(&w, "name", im->name);
		jw_kv_u64(&w, "size", im->size);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	reply_send(&w);
}

/* Exits by exception cause, the non-zero ones: "by_cause":{"10": n, ...}. */
static void by_cause(struct json_writer *w, const struct vm_counts *c)
{
	jw_key(w, "by_cause");
	jw_obj_begin(w);
	for (unsigned int k = 0; k < VCPU_EXIT_CAUSES; k++) {
		char key[4];

		if (!c->by_cause[k])
			continue;
		snprintf(key, sizeof(key), "%u", k);
		jw_kv_u64(w, key, c->by_cause[k]);
	}
	jw_obj_end(w);
}

static void idle_wakeups(struct json_writer *w)
{
	jw_key(w, "idle_wakeups");	/* per hart */
	jw_arr_begin(w);
	for (unsigned int i = 0; i < nr_harts; i++)
		jw_u64(w, harts[i].idle_wakeups);
	jw_arr_end(w);
}

static void stats_entry(struct json_writer *w, const struct vm *vm)
{
	struct vm_counts c;

	vm_count(vm, &c);
	jw_obj_begin(w);
	jw_kv_str(w, "name", vm->cfg.name);
	jw_kv_u64(w, "exits", c.exits);
	jw_kv_u64(w, "sbi", c.sbi);
	jw_kv_u64(w, "guest_page_faults", c.guest_page_faults);
	jw_kv_u64(w, "virtual_insn", c.virtual_insn);
	jw_kv_u64(w, "host_irq", c.host_irq);
	jw_kv_u64(w, "sw_check", c.sw_check);
	jw_kv_u64(w, "mmio", c.mmio);
	jw_kv_u64(w, "wfi", c.wfi);
	jw_kv_u64(w, "injected", c.injected);
	by_cause(w, &c);
	jw_obj_end(w);
}

static void cmd_stats(struct req *r)
{
	struct json_writer w;

	if (!get_vm(r, "vm", false))
		return;
	reply_head(&w, r->has_id, r->id, true);
	vms_array(&w, r->vm, stats_entry);
	jw_key(&w, "host");
	jw_obj_begin(&w);
	jw_kv_u64(&w, "free_mem", mm_free_bytes());
	jw_kv_u64(&w, "events_dropped", vm_events_dropped());
	idle_wakeups(&w);
	jw_obj_end(&w);
	reply_send(&w);
}

/* metrics: every counter, for scrapers (carapace-ctl metrics). One VM per
 * reply: a reply then has a bound far below MGMT_REPLY_MAX whatever the
 * counts (tests/unit/test_mgmt.c fills every field), where all VMs with every
 * exit cause in one line would not fit. Without "vm": the host's counters and
 * the names of the VMs to ask for. Counters are read as they are, without
 * stopping the VM (each 64-bit word whole, the set not at one instant). */
static void metrics_vm(struct json_writer *w, const struct vm *vm)
{
	struct vm_counts c;
	uint64_t steal_ns = 0;

	vm_count(vm, &c);
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		steal_ns += vm->vcpus[i].steal.total_ns;
	jw_kv_str(w, "vm", vm->cfg.name);
	vm_description(w, vm);
	jw_kv_u64(w, "exits", c.exits);
	jw_kv_u64(w, "host_irq", c.host_irq);
	by_cause(w, &c);
	jw_kv_u64(w, "mmio", c.mmio);
	jw_kv_u64(w, "wfi", c.wfi);
	jw_kv_u64(w, "wfi_in_place", c.wfi_in_place);
	jw_kv_u64(w, "injected", c.injected);
	jw_kv_u64(w, "misaligned_emulated", c.misaligned_emulated);
	jw_kv_u64(w, "violations_lp", c.cfi_lp);
	jw_kv_u64(w, "violations_ss", c.cfi_ss);
	jw_kv_u64(w, "imsic_sw_stores", c.imsic_sw_stores);
	jw_kv_u64(w, "imsic_csr_exits", c.imsic_csr_exits);
	jw_kv_u64(w, "imsic_moves", c.imsic_moves);
	jw_kv_u64(w, "imsic_evictions", c.imsic_evictions);
	jw_kv_u64(w, "imsic_sgei", c.imsic_sgei);
	jw_kv_u64(w, "steal_ns", steal_ns);
	jw_kv_u64(w, "console_bytes", vm->stats.console_bytes);
}

/* The host's own interrupts (host_irq.h): through which controller, and
 * what its claims found. */
static void host_irqs(struct json_writer *w)
{
	struct host_irq_stats s = host_irq_get_stats();

	jw_kv_str(w, "irq_chip", host_irq_chip_name());
	jw_kv_u64(w, "irq_handled", s.handled);
	jw_kv_u64(w, "irq_unknown", s.unknown);
	jw_kv_u64(w, "irq_cut", s.cut);
	jw_kv_u64(w, "irq_polled", s.polled);
}

static void metrics_host(struct json_writer *w)
{
	jw_kv_u64(w, "harts", nr_harts);
	jw_kv_u64(w, "vm_max", VM_MAX);
	jw_kv_u64(w, "mem_total", mm_total_bytes());
	jw_kv_u64(w, "mem_free", mm_free_bytes());
	jw_kv_u64(w, "events_dropped", vm_events_dropped());
	jw_kv_u64(w, "requests", m.requests);
	jw_kv_u64(w, "request_errors", m.errors);
	idle_wakeups(w);
	host_irqs(w);
	vms_array(w, NULL, vm_name);
}

static void cmd_metrics(struct req *r)
{
	struct json_writer w;

	if (!get_vm(r, "vm", false))
		return;
	reply_head(&w, r->has_id, r->id, true);
	if (r->vm)
		metrics_vm(&w, r->vm);
	else
		metrics_host(&w);
	reply_send(&w);
}

static const char *hsm_word(const struct vcpu *v)
{
	switch (v->g.hsm.state) {
	case VCPU_HSM_STOPPED: return "stopped";
	case VCPU_HSM_SUSPENDED: return "suspended";
	default: return "started";
	}
}

static void cmd_cfi(struct req *r)
{
	const struct vm *vm;
	struct json_writer w;
	uint64_t until;

	if (!get_vm(r, "vm", true))
		return;
	vm = r->vm;
	/* a vCPU that stayed on its hart keeps ssp/senvcfg in the CSRs only;
	 * one deadline for them all bounds the reply's wait */
	until = time_now() + timebase_hz * VCPU_SYNC_STATE_MS / 1000;
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		vcpu_sync_state(&r->vm->vcpus[i], until);
	reply_head(&w, r->has_id, r->id, true);
	jw_kv_str(&w, "vm", vm->cfg.name);
	jw_kv_str(&w, "policy", policy_names[vm->cfg.cfi_policy]);
	jw_kv_str(&w, "policy_requested", policy_names[vm->cfg.cfi_requested]);
	jw_kv_bool(&w, "landing_pads", cfi_vm_has_lp(vm));
	jw_kv_bool(&w, "shadow_stacks", cfi_vm_has_ss(vm));
	{
		struct vm_counts c = { 0 };

		vm_count(vm, &c);	/* every boot's, where each vCPU's is this boot's */
		jw_kv_u64(&w, "violations_lp_total", c.cfi_lp);
		jw_kv_u64(&w, "violations_ss_total", c.cfi_ss);
	}
	jw_key(&w, "vcpus");
	jw_arr_begin(&w);
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		const struct vcpu *v = &vm->vcpus[i];
		const struct cfi_stats *cs = &v->cfi_stats;

		jw_obj_begin(&w);
		jw_kv_u64(&w, "id", i);
		jw_kv_str(&w, "hsm", hsm_word(v));
		jw_kv_bool(&w, "ss_enabled", v->g.fwft.ss_value);
		jw_kv_bool(&w, "ss_locked", v->g.fwft.ss_locked);
		jw_kv_u64(&w, "ssp", v->g.csr.ssp);
		jw_kv_bool(&w, "lp_enabled", v->g.fwft.lp_value);
		jw_kv_bool(&w, "lp_locked", v->g.fwft.lp_locked);
		jw_kv_u64(&w, "elp", cfi_vcpu_elp(v));
		jw_kv_u64(&w, "senvcfg", v->g.csr.senvcfg);
		jw_kv_u64(&w, "violations_lp", cs->swcheck_lp);
		jw_kv_u64(&w, "violations_ss", cs->swcheck_ss);
		jw_kv_u64(&w, "last_pc", cs->last_pc);
		jw_kv_u64(&w, "last_tval", cs->last_tval);
		jw_kv_u64(&w, "lp_windows_cut", cs->lp_windows_cut);
		jw_key(&w, "last_from");
		if (cs->swcheck_lp || cs->swcheck_ss)
			jw_str(&w, cs->last_from_vs ? "VS" : "VU");
		else
			jw_null(&w);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	reply_send(&w);
}

/* A request whose reply comes when its operation ends (one at a time). */
static void start_wait(struct req *r, enum wait_kind kind)
{
	m.waiting = kind;
	m.wait_has_id = r->has_id;
	m.wait_id = r->id;
}

/* The operation was refused at its start: the request waits no more. */
static void refuse_wait(struct req *r, const char *code, const char *msg)
{
	m.waiting = W_NONE;
	reply_error(r->has_id, r->id, code, msg);
}

/* The operation a request of @kind waits for ended: true if that request is
 * still waiting (now answered by the caller); false if its client left and
 * the reply is dropped. */
static bool end_wait(enum wait_kind kind)
{
	if (m.waiting != kind)
		return false;
	m.waiting = W_NONE;
	return true;
}

static void wait_error(const char *code, const char *msg)
{
	reply_error(m.wait_has_id, m.wait_id, code, msg);
}

/* A pause or destroy finished (host_poll, hart 0). */
static void op_done(void *ctx, struct vm *vm, uint64_t result)
{
	struct json_writer w;

	(void)ctx;
	if (!end_wait(W_OP))
		return;
	reply_head(&w, m.wait_has_id, m.wait_id, true);
	jw_kv_str(&w, "vm", vm->cfg.name);
	if (result)
		jw_kv_u64(&w, "freed", result);
	else
		jw_kv_str(&w, "state", vm_state_name(vm));
	reply_send(&w);
}

/* Start @op, which answers when it finishes (op_done()); refused now: the
 * error, "busy" when something else holds the VM (vmop_refusal() says
 * what), else @code and @why_not. */
static void start_op(struct req *r, int (*start)(struct vm *vm, vmop_done_fn done, void *ctx),
		     enum vmop op, const char *code, const char *why_not)
{
	const char *why;

	if (!get_vm(r, "vm", true))
		return;
	start_wait(r, W_OP);
	if (!start(r->vm, op_done, &m))
		return;
	why = vmop_refusal(r->vm, op);
	refuse_wait(r, why ? "busy" : code, why ? why : why_not);
}

static void cmd_pause(struct req *r)
{
	start_op(r, vmop_pause, VMOP_PAUSE, "bad-state", "the VM is not running");
}

static void cmd_resume(struct req *r)
{
	struct json_writer w;

	if (!get_vm(r, "vm", true))
		return;
	if (vmop_resume(r->vm)) {
		const char *why = vmop_refusal(r->vm, VMOP_RESUME);

		reply_error(r->has_id, r->id, why ? "busy" : "bad-state",
			    why ? why : "the VM is not paused");
		return;
	}
	pr_info("vm %s: resumed", r->vm->cfg.name);
	reply_head(&w, r->has_id, r->id, true);
	jw_kv_str(&w, "vm", r->vm->cfg.name);
	jw_kv_str(&w, "state", vm_state_name(r->vm));
	reply_send(&w);
}

/* The guest's own suspend (SBI SUSP) ends as on a wake-up interrupt. */
static void cmd_wake(struct req *r)
{
	struct json_writer w;

	if (!get_vm(r, "vm", true))
		return;
	if (vmop_wake(r->vm)) {
		reply_error(r->has_id, r->id, "bad-state", "the VM is not suspended");
		return;
	}
	pr_info("vm %s: woken", r->vm->cfg.name);
	reply_head(&w, r->has_id, r->id, true);
	jw_kv_str(&w, "vm", r->vm->cfg.name);
	/* What the wake made it: reading the state now could already see the
	 * guest's next suspend (it runs on another hart meanwhile). */
	jw_kv_str(&w, "state", "running");
	reply_send(&w);
}

static void cmd_destroy(struct req *r)
{
	start_op(r, vmop_destroy, VMOP_DESTROY, "busy",
		 "the VM is being reset (a reboot) or restored; try again");
}

/* Copy a string field into @dst (NUL-terminated); false with a reply if bad. */
static bool get_name(struct req *r, const char *key, char *dst, size_t size, bool required)
{
	const char *s;
	size_t len;

	if (!json_get(r->o, key)) {
		if (required)
			reply_error(r->has_id, r->id, "bad-request", "missing a required field");
		return !required;
	}
	if (!json_get_str(r->o, key, &s, &len)) {
		reply_error(r->has_id, r->id, "bad-request", "a string field has another type");
		return false;
	}
	if (len >= size) {
		reply_error(r->has_id, r->id, "invalid", "a string field is too long");
		return false;
	}
	memcpy(dst, s, len + 1);
	return true;
}

static bool vm_name_ok(const char *s)
{
	return *s && name_chars_ok(s, strlen(s));
}

static void cmd_create(struct req *r)
{
	struct vm_desc d;
	char policy[16] = "trap", irqchip[8] = "plic";
	uint64_t mem = 64ULL << 20, vcpus = 1;
	const char *why;
	struct json_writer w;
	struct vm *vm;
	int rc;
	bool debug = false;

	memset(&d, 0, sizeof(d));
	if (!get_name(r, "name", d.name, sizeof(d.name), true) ||
	    !get_name(r, "kernel", d.kernel, sizeof(d.kernel), true) ||
	    !get_name(r, "initrd", d.initrd, sizeof(d.initrd), false) ||
	    !get_name(r, "bootargs", d.bootargs, sizeof(d.bootargs), false) ||
	    !get_name(r, "cfi", policy, sizeof(policy), false) ||
	    !get_name(r, "irqchip", irqchip, sizeof(irqchip), false))
		return;
	if ((json_get(r->o, "mem") && !json_get_u64(r->o, "mem", &mem)) ||
	    (json_get(r->o, "vcpus") && !json_get_u64(r->o, "vcpus", &vcpus)) ||
	    (json_get(r->o, "debug") && !json_get_bool(r->o, "debug", &debug))) {
		reply_error(r->has_id, r->id, "bad-request", "mem and vcpus are integers, debug a boolean");
		return;
	}
	if (!vm_name_ok(d.name)) {
		reply_error(r->has_id, r->id, "invalid", "name: 1-15 of a-z 0-9 _ -");
		return;
	}
	d.cfi = CFI_POLICY_OFF + 1;
	for (unsigned int i = 0; i < ARRAY_SIZE(policy_names); i++)
		if (!strcmp(policy, policy_names[i]))
			d.cfi = (enum cfi_policy)i;
	if (d.cfi > CFI_POLICY_OFF) {
		reply_error(r->has_id, r->id, "invalid", "cfi: trap, delegate, strict or off");
		return;
	}
	if (strcmp(irqchip, "plic") && strcmp(irqchip, "aia")) {
		reply_error(r->has_id, r->id, "invalid", "irqchip: plic or aia");
		return;
	}
	d.irqchip = strcmp(irqchip, "aia") ? VM_IRQCHIP_PLIC : VM_IRQCHIP_AIA;
	d.memory = mem;
	d.vcpus = vcpus > VM_MAX_VCPUS ? 0 : (unsigned int)vcpus;
	d.debug = debug;
	rc = vm_create(&d, &vm, &why);
	if (rc && why) {
		reply_error(r->has_id, r->id, rc == -HYP_EEXIST ? "exists" :
			    rc == -HYP_ENOMEM ? "no-memory" : "invalid", why);
		return;
	}
	if (rc) {
		/* created, but its first boot failed (an image that does not fit):
		 * it is down with the reason; destroy gives its memory back */
		reply_error(r->has_id, r->id, "invalid", vm->reason[0] ? vm->reason :
			    "the VM could not be started");
		return;
	}
	pr_info("vm %s: created from the management channel", d.name);
	reply_head(&w, r->has_id, r->id, true);
	jw_kv_str(&w, "vm", vm->cfg.name);
	jw_kv_u64(&w, "index", vm->index);
	reply_send(&w);
}

/* ---- snapshot and restore (the bytes go on the stream port) ---- */

/* One stream port: one snapshot, restore or migration at a time. */
static bool stream_busy(void)
{
	return snap_busy() || mig_busy() || mig_recv_armed();
}

/* The stream port can take an operation for @r's client; else replies why. */
static bool stream_free(struct req *r)
{
	if (!snap_port_ready()) {
		reply_error(r->has_id, r->id, "no-stream",
			    "connect to the stream socket first (carapace-ctl does)");
		return false;
	}
	if (stream_busy()) {
		reply_error(r->has_id, r->id, "busy", "a snapshot, restore or migration is under way");
		return false;
	}
	return true;
}

/* The optional "name" a restored or arriving VM takes ("" : its own). */
static bool get_new_name(struct req *r, char *name, size_t size)
{
	if (!get_name(r, "name", name, size, false))
		return false;
	if (name[0] && !vm_name_ok(name)) {
		reply_error(r->has_id, r->id, "invalid", "name: 1-15 of a-z 0-9 _ -");
		return false;
	}
	return true;
}

/* disk0, disk1: the host disks (PCI device numbers) a restored or arriving
 * VM's disks go to, instead of the ones they were saved on. */
static bool get_disk_map(struct req *r, struct snap_io_map *map)
{
	static const char *const keys[] = { "disk0", "disk1" };

	_Static_assert(ARRAY_SIZE(keys) == VM_MAX_DISKS && ARRAY_SIZE(map->disk_pci) == VM_MAX_DISKS,
		       "a key per disk");
	memset(map, 0, sizeof(*map));
	for (unsigned int i = 0; i < ARRAY_SIZE(keys); i++) {
		uint64_t v;

		if (!json_get(r->o, keys[i]))
			continue;
		if (!json_get_u64(r->o, keys[i], &v) || v < HOST_PCI_DEV_MIN || v > HOST_PCI_DEV_MAX) {
			reply_error(r->has_id, r->id, "bad-request",
				    "disk0, disk1: a host PCI device number 1..31");
			return false;
		}
		map->disk_pci[i] = (uint8_t)v;
	}
	return true;
}

/* A restored VM's NICs: their MACs, and whether the restore gave a NIC a new
 * one (its saved MAC was on its switch: the original runs there). */
static void reply_nics(struct json_writer *w, struct vm *vm, uint32_t derived)
{
	char mac[18];

	if (!vm_io_nic(vm, 0))
		return;
	jw_key(w, "nics");
	jw_arr_begin(w);
	for (unsigned int i = 0; vm_io_nic(vm, i); i++) {
		const uint8_t *a = vm_io_nic(vm, i)->mac;

		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3],
			 a[4], a[5]);
		jw_obj_begin(w);
		jw_kv_u64(w, "nic", i);
		jw_kv_str(w, "mac", mac);
		jw_kv_bool(w, "new_mac", derived & (1U << i));
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static struct {
	struct vm *vm;
	bool resume;		/* we paused it: resume it when the stream is out */
	bool live;
	bool disks;		/* the disks' content goes in (the default) */
	uint64_t paused_at, pause_ticks;
} snap_req;

static uint64_t ticks_to_us(uint64_t t)
{
	return t * 1000000 / timebase_hz;
}

static void snapshot_done(const struct snap_result *r)
{
	struct json_writer w;
	uint64_t pause = snap_req.pause_ticks;

	if (!snap_req.live) {
		pause = time_now() - snap_req.paused_at;
		if (snap_req.resume && !vmop_resume(snap_req.vm))
			pr_info("vm %s: resumed after the snapshot", snap_req.vm->cfg.name);
	}
	if (r->err)
		pr_info("vm %s: snapshot failed: %s", snap_req.vm->cfg.name, r->err);
	if (!end_wait(W_SNAPSHOT))
		return;
	if (r->err) {
		wait_error("stream", r->err);
		return;
	}
	pr_info("vm %s: snapshot of %lu bytes (%lu pages), paused %lu us", snap_req.vm->cfg.name,
		(unsigned long)r->bytes, (unsigned long)r->pages, (unsigned long)ticks_to_us(pause));
	reply_head(&w, m.wait_has_id, m.wait_id, true);
	jw_kv_str(&w, "vm", snap_req.vm->cfg.name);
	jw_kv_u64(&w, "bytes", r->bytes);
	jw_kv_u64(&w, "pages", r->pages);
	jw_kv_u64(&w, "pause_us", ticks_to_us(pause));
	jw_kv_bool(&w, "live", snap_req.live);
	jw_kv_bool(&w, "disks", snap_req.disks);
	jw_kv_u64(&w, "disk_runs", r->disk_runs);
	if (snap_req.live)
		jw_kv_u64(&w, "memory_pause_us", r->ticks ? MAX(ticks_to_us(r->ticks), 1UL) : 0);
	if (snap_req.live && snap_req.disks)
		jw_kv_u64(&w, "disk_holds", r->disk_holds);
	reply_send(&w);
}

/* The pause a snapshot asked for is over. Its waiter is &snap_req, not the
 * client's: a client that left does not leave the VM paused for ever (the
 * snapshot goes on, its reply dropped, as any operation already started). */
static void snapshot_paused(void *ctx, struct vm *vm, uint64_t result)
{
	(void)ctx;
	(void)result;
	if (vm->state != VM_PAUSED ||
	    snap_save_start(vm, snap_req.live, snap_req.disks, snapshot_done)) {
		struct snap_result r = { "the VM could not be saved (it left, or no memory for a "
					 "live snapshot)", NULL, vm, 0, 0, 0, 0, 0, 0 };

		/* a disk whose identity (--no-disks) could not be read says so */
		if (vm->state == VM_PAUSED && snap_save_start_error())
			r.err = snap_save_start_error();

		snap_req.live = false;
		snapshot_done(&r);
		return;
	}
	if (snap_req.live) {
		/* state staged and RAM write-protected: the guest runs on */
		if (snap_req.resume)
			vmop_resume(vm);
		snap_req.pause_ticks = time_now() - snap_req.paused_at;
	}
}

static void cmd_snapshot(struct req *r)
{
	bool live = false, disks = true;

	if (!get_vm(r, "vm", true))
		return;
	if (json_get(r->o, "live") && !json_get_bool(r->o, "live", &live)) {
		reply_error(r->has_id, r->id, "bad-request", "live is a boolean");
		return;
	}
	if (json_get(r->o, "disks") && !json_get_bool(r->o, "disks", &disks)) {
		reply_error(r->has_id, r->id, "bad-request", "disks is a boolean");
		return;
	}
	if (!stream_free(r))
		return;
	snap_req.vm = r->vm;
	snap_req.live = live;
	snap_req.disks = disks;
	snap_req.paused_at = time_now();
	start_wait(r, W_SNAPSHOT);
	if (r->vm->state == VM_PAUSED) {
		snap_req.resume = false;
		snapshot_paused(NULL, r->vm, 0);
	} else {
		snap_req.resume = true;
		if (vmop_pause(r->vm, snapshot_paused, &snap_req))
			refuse_wait(r, "bad-state", "the VM is neither running nor paused");
	}
}

static void restore_done(const struct snap_result *r)
{
	struct json_writer w;

	if (!r->err)
		pr_info("vm %s: restored (%lu pages), running", r->vm->cfg.name,
			(unsigned long)r->pages);
	else
		pr_info("restore refused: %s", r->err);
	if (!end_wait(W_RESTORE))
		return;
	if (r->err) {
		wait_error(r->code, r->err);
		return;
	}
	reply_head(&w, m.wait_has_id, m.wait_id, true);
	jw_kv_str(&w, "vm", r->vm->cfg.name);
	jw_kv_u64(&w, "index", r->vm->index);
	jw_kv_u64(&w, "pages", r->pages);
	jw_kv_u64(&w, "bytes", r->bytes);
	jw_kv_u64(&w, "restore_us", ticks_to_us(r->ticks));
	jw_kv_u64(&w, "disk_runs", r->disk_runs);
	reply_nics(&w, r->vm, r->macs_derived);
	reply_send(&w);
}

static void cmd_restore(struct req *r)
{
	char name[VM_NAME_LEN] = "";
	struct snap_io_map map;
	uint64_t bytes;

	if (!get_new_name(r, name, sizeof(name)) || !get_disk_map(r, &map))
		return;
	if (!json_get_u64(r->o, "bytes", &bytes) || bytes < sizeof(struct snap_header)) {
		reply_error(r->has_id, r->id, "bad-request", "bytes: the stream's length is required");
		return;
	}
	if (!stream_free(r))
		return;
	snap_port_drain();
	start_wait(r, W_RESTORE);
	if (snap_load_start(bytes, name[0] ? name : NULL, &map, restore_done)) {
		refuse_wait(r, "busy", "a snapshot or restore is under way");
	}
}

/* ---- migration (the bytes go on the stream port, relayed by carapace-ctl) ---- */

/* How the disks moved: their mode, and the blocks and bytes copied. */
static void disk_figures(struct json_writer *w, const struct mig_result *r)
{
	jw_kv_str(w, "disk_mode", r->disk_mode);
	jw_kv_u64(w, "disk_blocks", r->disk_blocks);
	jw_kv_u64(w, "disk_bytes", r->disk_bytes);
}

static void migrate_done(const struct mig_result *r)
{
	struct json_writer w;

	if (r->err)
		pr_info("vm %s: migration failed: %s", r->vm_name, r->err);
	if (!end_wait(W_MIGRATE))
		return;
	if (r->err) {
		wait_error(r->code, r->err);
		return;
	}
	reply_head(&w, m.wait_has_id, m.wait_id, true);
	jw_kv_str(&w, "vm", r->vm_name);
	jw_kv_u64(&w, "rounds", r->rounds);
	jw_kv_u64(&w, "pages", r->pages);
	jw_kv_u64(&w, "bytes", r->bytes);
	jw_kv_u64(&w, "total_us", ticks_to_us(r->total_ticks));
	jw_kv_u64(&w, "downtime_us", ticks_to_us(r->downtime_ticks));
	jw_kv_u64(&w, "dest_downtime_us", ticks_to_us(r->peer_downtime_ticks));
	jw_kv_u64(&w, "expected_downtime_us", r->expected_downtime_ticks == -1ULL ? 0 :
						ticks_to_us(r->expected_downtime_ticks));
	jw_kv_u64(&w, "dirty_limit", r->dirty_limit);
	jw_kv_u64(&w, "dirty_holds", r->dirty_holds);
	jw_kv_u64(&w, "dirty_held_us", ticks_to_us(r->dirty_held_ticks));
	disk_figures(&w, r);
	reply_send(&w);
}

static void cmd_migrate(struct req *r)
{
	uint64_t rounds = MIG_MAX_ROUNDS_DEFAULT, limit = MIG_DOWNTIME_LIMIT_MS_DEFAULT;
	bool converge = true;
	struct mig_send_opts opts;
	int rc;

	if (!get_vm(r, "vm", true))
		return;
	if (json_get(r->o, "max_rounds") &&
	    (!json_get_u64(r->o, "max_rounds", &rounds) || !rounds ||
	     rounds > MIG_MAX_ROUNDS_LIMIT)) {
		reply_error(r->has_id, r->id, "bad-request", "max_rounds: an integer 1..100");
		return;
	}
	if (json_get(r->o, "downtime_limit_ms") &&
	    (!json_get_u64(r->o, "downtime_limit_ms", &limit) || !limit ||
	     limit > MIG_DOWNTIME_LIMIT_MS_MAX)) {
		reply_error(r->has_id, r->id, "bad-request", "downtime_limit_ms: an integer 1..60000");
		return;
	}
	if (json_get(r->o, "auto_converge") && !json_get_bool(r->o, "auto_converge", &converge)) {
		reply_error(r->has_id, r->id, "bad-request", "auto_converge: true or false");
		return;
	}
	opts = (struct mig_send_opts){ (unsigned int)rounds, (unsigned int)limit, converge };
	if (r->vm->state != VM_RUNNING && r->vm->state != VM_PAUSED) {
		reply_error(r->has_id, r->id, "bad-state", "the VM is neither running nor paused");
		return;
	}
	if (!stream_free(r))
		return;
	start_wait(r, W_MIGRATE);
	rc = mig_send_start(r->vm, &opts, &vmops_migration, migrate_done);
	if (rc) {
		refuse_wait(r, rc == -HYP_ENOMEM ? "no-memory" : "busy",
			    rc == -HYP_ENOMEM ? "no memory for the migration's page maps" :
						"the stream port is busy");
		return;
	}
	pr_info("vm %s: migrating", r->vm->cfg.name);
}

static void incoming_done(const struct mig_result *r)
{
	struct json_writer w;

	if (!r->err)
		pr_info("vm %s: migrated in, running", r->vm_name);
	if (!end_wait(W_INCOMING))
		return;
	if (r->err || !r->vm) {
		wait_error(r->err ? r->code : "internal",
			    r->err ? r->err : "the VM is gone");
		return;
	}
	reply_head(&w, m.wait_has_id, m.wait_id, true);
	jw_kv_str(&w, "vm", r->vm_name);
	jw_kv_u64(&w, "index", r->vm->index);
	jw_kv_u64(&w, "rounds", r->rounds);
	jw_kv_u64(&w, "pages", r->pages);
	jw_kv_u64(&w, "bytes", r->bytes);
	jw_kv_u64(&w, "downtime_us", ticks_to_us(r->downtime_ticks));
	disk_figures(&w, r);
	reply_send(&w);
}

static void cmd_incoming(struct req *r)
{
	char name[VM_NAME_LEN] = "";
	struct snap_io_map map;
	const char *mode = "shared";
	size_t len = 6;

	if (!get_new_name(r, name, sizeof(name)) || !get_disk_map(r, &map))
		return;
	if (json_get(r->o, "disks") &&
	    (!json_get_str(r->o, "disks", &mode, &len) ||
	     !((len == 6 && !memcmp(mode, "shared", 6)) || (len == 4 && !memcmp(mode, "copy", 4))))) {
		reply_error(r->has_id, r->id, "bad-request",
			    "disks: \"shared\" (the images the source uses) or \"copy\" (into "
			    "the zeroed host disks disk0, disk1)");
		return;
	}
	map.copy = len == 4;
	if (!stream_free(r))
		return;
	start_wait(r, W_INCOMING);
	if (mig_recv_start(name[0] ? name : NULL, false, &map, &vmops_migration, incoming_done)) {
		refuse_wait(r, "busy", "the stream port is busy");
	}
}

/* A host started for one VM: no client asks, the console tells. */
static void armed_done(const struct mig_result *r)
{
	if (!r->err)
		pr_info("vm %s: migrated in, running", r->vm_name);
}

void mgmt_arm_incoming(const uint8_t disks[2], bool copy)
{
	struct snap_io_map map = { .copy = copy };

	memcpy(map.disk_pci, disks, sizeof(map.disk_pci));
	if (mig_recv_start(NULL, true, &map, &vmops_migration, armed_done))
		return;
	pr_info("waiting for an incoming migration on the stream port");
	if (map.disk_pci[1])
		pr_info("incoming: its disks go to host disks 00:%02x.0 and 00:%02x.0, %s",
			map.disk_pci[0], map.disk_pci[1], copy ? "copied there" : "shared");
	else if (map.disk_pci[0])
		pr_info("incoming: its disk goes to host disk 00:%02x.0, %s", map.disk_pci[0],
			copy ? "copied there" : "shared");
}

static void vio_counts(struct json_writer *w, const char *key, const struct vio_stats *s)
{
	jw_key(w, key);
	jw_obj_begin(w);
	jw_kv_u64(w, "requests", s->requests);
	jw_kv_u64(w, "bytes", s->bytes);
	jw_kv_u64(w, "errors", s->errors);
	jw_kv_u64(w, "drops", s->drops);
	jw_obj_end(w);
}

/* A device's rate limit (0: none) and how often it held a request or a frame
 * back for tokens. */
static void rate_limit(struct json_writer *w, const char *ops, const struct vm_io_info *d)
{
	jw_key(w, "limit");
	jw_obj_begin(w);
	jw_kv_u64(w, ops, d->limit_ops);
	jw_kv_u64(w, "bandwidth", d->limit_bytes);
	jw_obj_end(w);
	jw_kv_u64(w, "held", d->held);
}

/* devices: a VM's disks and NICs with their counters (carapace-ctl devices). */
static void cmd_devices(struct req *r)
{
	struct vm_io_info dev[VIO_MMIO_SLOTS];
	struct json_writer w;
	unsigned int n;
	char text[24];

	if (!get_vm(r, "vm", true))
		return;
	n = vm_io_list(r->vm, dev, ARRAY_SIZE(dev));
	reply_head(&w, r->has_id, r->id, true);
	jw_kv_str(&w, "vm", r->vm->cfg.name);
	jw_key(&w, "devices");
	jw_arr_begin(&w);
	for (unsigned int i = 0; i < n; i++) {
		const struct vm_io_info *d = &dev[i];

		jw_obj_begin(&w);
		jw_kv_u64(&w, "slot", d->slot);
		jw_kv_str(&w, "kind", d->is_net ? "net" : "blk");
		if (d->is_net) {
			jw_kv_u64(&w, "nic", d->nic);
			jw_kv_str(&w, "switch", d->sw);
			snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", d->mac[0],
				 d->mac[1], d->mac[2], d->mac[3], d->mac[4], d->mac[5]);
			jw_kv_str(&w, "mac", text);
			jw_kv_bool(&w, "attached", d->attached);
			vio_counts(&w, "tx", &d->tx);
			vio_counts(&w, "rx", &d->rx);
			jw_kv_u64(&w, "tx_spoofed", d->spoofed);
			rate_limit(&w, "pps", d);
		} else {
			snprintf(text, sizeof(text), "00:%02x.0", d->pci_dev);
			jw_kv_str(&w, "host", text);
			jw_kv_u64(&w, "sectors", d->sectors);
			jw_kv_bool(&w, "read_only", d->read_only);
			vio_counts(&w, "io", &d->blk);
			rate_limit(&w, "iops", d);
		}
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	reply_send(&w);
}

/* nic: take a VM's NIC off its switch or put it back. */
static void cmd_nic(struct req *r)
{
	struct json_writer w;
	const char *action;
	size_t len;
	uint64_t nic;
	bool attach;
	int rc;

	if (!get_vm(r, "vm", true))
		return;
	if (!json_get_u64(r->o, "nic", &nic) || nic > 0xffff) {
		reply_error(r->has_id, r->id, "bad-request", "field 'nic' must be a NIC index");
		return;
	}
	if (!json_get_str(r->o, "action", &action, &len) ||
	    !((len == 6 && !memcmp(action, "detach", 6)) || (len == 6 && !memcmp(action, "attach", 6)))) {
		reply_error(r->has_id, r->id, "bad-request", "field 'action' must be detach or attach");
		return;
	}
	attach = !memcmp(action, "attach", 6);
	rc = vm_io_nic_set(r->vm, (unsigned int)nic, attach);
	if (rc == -HYP_ENOENT) {
		reply_error(r->has_id, r->id, "no-such-nic", "the VM has no NIC with that index");
		return;
	}
	if (rc) {
		reply_error(r->has_id, r->id, "busy", "the NIC's MAC is on its switch again");
		return;
	}
	reply_head(&w, r->has_id, r->id, true);
	jw_kv_str(&w, "vm", r->vm->cfg.name);
	jw_kv_u64(&w, "nic", nic);
	jw_kv_bool(&w, "attached", attach);
	reply_send(&w);
}

struct command {
	const char *name;
	void (*run)(struct req *r);
	const char *const allowed[10];
};

static const struct command commands[] = {
	{ "hello", cmd_hello, { NULL } },
	{ "list", cmd_list, { NULL } },
	{ "images", cmd_images, { NULL } },
	{ "stats", cmd_stats, { "vm", NULL } },
	{ "metrics", cmd_metrics, { "vm", NULL } },
	{ "cfi", cmd_cfi, { "vm", NULL } },
	{ "pause", cmd_pause, { "vm", NULL } },
	{ "resume", cmd_resume, { "vm", NULL } },
	{ "wake", cmd_wake, { "vm", NULL } },
	{ "destroy", cmd_destroy, { "vm", NULL } },
	{ "create", cmd_create, { "name", "kernel", "initrd", "mem", "vcpus", "cfi", "irqchip",
				  "bootargs", "debug", NULL } },
	{ "snapshot", cmd_snapshot, { "vm", "live", "disks", NULL } },
	{ "restore", cmd_restore, { "name", "bytes", "disk0", "disk1", NULL } },
	{ "migrate", cmd_migrate, { "vm", "max_rounds", "downtime_limit_ms", "auto_converge", NULL } },
	{ "incoming", cmd_incoming, { "name", "disk0", "disk1", "disks", NULL } },
	{ "devices", cmd_devices, { "vm", NULL } },
	{ "nic", cmd_nic, { "vm", "nic", "action", NULL } },
};

static void handle_line(const char *line, size_t len)
{
	const char *err, *cmd, *bad;
	const struct json_value *idv;
	struct json_obj o;
	struct req r = { .o = &o };
	size_t off, cmd_len;
	uint64_t v;

	m.requests++;
	if (json_parse_flat(line, len, &o, m.scratch, sizeof(m.scratch), &err, &off)) {
		char msg[96];

		snprintf(msg, sizeof(msg), "malformed JSON at byte %lu: %s", (unsigned long)off, err);
		reply_error(false, 0, "bad-request", msg);
		return;
	}
	idv = json_get(&o, "id");
	if (idv && !(idv->type == JSON_INT && !idv->negative) && idv->type != JSON_NULL) {
		reply_error(false, 0, "bad-request", "id must be a non-negative integer");
		return;
	}
	r.has_id = idv && idv->type == JSON_INT;
	r.id = r.has_id ? idv->magnitude : 0;
	if (!json_get_u64(&o, "v", &v)) {
		reply_error(r.has_id, r.id, "bad-request", "missing or non-integer field 'v'");
		return;
	}
	if (v != MGMT_PROTOCOL) {
		reply_error(r.has_id, r.id, "version", "protocol version 1 only");
		return;
	}
	if (!json_get_str(&o, "cmd", &cmd, &cmd_len)) {
		reply_error(r.has_id, r.id, "bad-request", "missing or non-string field 'cmd'");
		return;
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(cmd, commands[i].name))
			continue;
		bad = unknown_field(&o, commands[i].allowed);
		if (bad) {
			char msg[96], key[41];
			size_t n = strnlen(bad, sizeof(key) - 1);

			memcpy(key, bad, n);	/* a bounded copy: keys can be long */
			key[n] = '\0';
			snprintf(msg, sizeof(msg), "unknown field '%s' for '%s'", key,
				 commands[i].name);
			reply_error(r.has_id, r.id, "bad-request", msg);
			return;
		}
		commands[i].run(&r);
		return;
	}
	reply_error(r.has_id, r.id, "unknown-command", "unknown command (try hello)");
}

static bool have_device;

bool mgmt_init(const void *fdt)
{
	have_device = vcon_init(fdt, timebase_hz);
	return have_device;
}

/* The client came or went: a reply or a pending answer was for the old one.
 * (Its half-received line goes when the bytes of a new client arrive.) But
 * the request being answered may be this very client's: vcon gives bytes to
 * a connection whose connect event is still queued, so a client that
 * connected just after another left may be heard before its event is seen. */
static void new_connection(void)
{
	m.generation = vcon_port_generation(m.port);
	if (m.read_generation == m.generation)
		return;
	m.reply_len = m.reply_sent = 0;
	m.waiting = W_NONE;
	vmop_cancel_waiter(&m);
}

/* More bytes into m.in; false if none. Bytes of a departed client are still
 * read (a request it completed is carried out) but they never join a line
 * of the next client's. */
static bool refill(void)
{
	unsigned int gen = vcon_read_generation(m.port);

	if (gen != m.read_generation) {
		m.read_generation = gen;
		m.line_len = 0;
		m.discarding = false;
	}
	m.in_len = vcon_read(m.port, m.in, sizeof(m.in));
	m.in_off = 0;
	return m.in_len > 0;
}

/* Push out what is left of the reply; true when it is all gone. A reply to
 * a client that has gone is dropped, never sent to the next one. */
static bool send_reply(void)
{
	if (m.read_generation != vcon_port_generation(m.port))
		m.reply_len = m.reply_sent = 0;
	while (m.reply_sent < m.reply_len) {
		size_t n = vcon_write(m.port, m.reply + m.reply_sent, m.reply_len - m.reply_sent);

		if (!n)
			return false;
		m.reply_sent += n;
	}
	m.reply_len = m.reply_sent = 0;
	return true;
}

bool mgmt_busy(void)
{
	return m.more;
}

/* The poll's time is up: say that more may wait, and stop. */
static bool budget_spent(uint64_t until)
{
	m.more = time_now() >= until;
	return m.more;
}

void mgmt_poll(void)
{
	uint64_t until = time_now() + timebase_hz / 1000000 * MGMT_POLL_BUDGET_US;
	bool progress = false;	/* the budget binds once something was done */

	m.more = false;
	if (!have_device)
		return;
	vcon_poll();
	if (m.port < 0) {
		/* QEMU names its ports after the driver is ready: look each time */
		m.port = vcon_port_find(MGMT_PORT_NAME);
		if (m.port < 0)
			return;
		new_connection();
	}
	if (vcon_port_generation(m.port) != m.generation)
		new_connection();
	/* one request at a time: the next is read once the last is answered */
	while (send_reply() && !m.waiting) {
		char c;

		if (m.in_off == m.in_len) {
			if (progress && budget_spent(until))
				return;
			if (!refill())
				return;
			progress = true;
		}
		c = m.in[m.in_off++];
		if (c != '\n') {
			if (m.line_len < MGMT_LINE_MAX - 1)
				m.line[m.line_len++] = c;
			else
				m.discarding = true;
			continue;
		}
		if (progress && budget_spent(until)) {
			m.in_off--;	/* this line is answered at the next poll */
			return;
		}
		if (m.discarding) {
			m.requests++;
			reply_error(false, 0, "bad-request", "line too long (4096 bytes at most)");
		}
		else if (m.line_len)
			handle_line(m.line, m.line_len);
		m.line_len = 0;
		m.discarding = false;
		progress = true;
	}
}
