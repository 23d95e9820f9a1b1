/* SPDX-License-Identifier: MIT */
/* hyp/host/mgmt.c: how much one mgmt_poll() does. A client that streams
 * requests, or one endless line, must not keep hart 0 in a single poll: a
 * poll serves requests for MGMT_POLL_BUDGET_US (1 ms) and then says that
 * input may be left (mgmt_busy()), so the scheduler's next pass serves the
 * rest. The clock here moves 10 us at every look and mgmt.c looks at least
 * once per request and per read of the port, so a poll may answer at most
 * 1 ms / 10 us + 1 requests and read as often. And the bound of a metrics
 * reply: every counter at its largest still fits in a reply line.
 *
 * The control port is a buffer here; what mgmt.c asks of the rest of the
 * hypervisor is stubbed (only hello is sent). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cfi.h>
#include <hart.h>
#include <host_irq.h>
#include <hyp_cfi.h>
#include <log.h>
#include <mgmt.h>
#include <migrate.h>
#include <vm_io.h>
#include <mm.h>
#include <snapshot.h>
#include <tlb.h>
#include <vcpu.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include <vmops.h>
#include "test.h"

#define TICK		100	/* per look at the clock: 10 us at 10 MHz */
#define BUDGET		10000	/* MGMT_POLL_BUDGET_US in ticks */
#define POLL_LOOKS	(BUDGET / TICK + 1)
#define READ		256	/* mgmt.c reads the port this much at a time */
#define PORT		3

/* ---- the hypervisor around mgmt.c ---- */

struct vm vms[VM_MAX];
unsigned int nr_vms;
struct hart harts[HART_MAX];
unsigned int nr_harts = 1;
uint64_t timebase_hz = 10000000;
bool mig_send_active, mig_recv_active;
const struct mig_host_ops vmops_migration;
static uint64_t clock_ticks;
static bool counters_full;	/* every counter at UINT64_MAX, names 15 bytes */
#define LONG_NAME	"abcdefghijklmno"

uint64_t mm_total_bytes(void)
{
	return counters_full ? UINT64_MAX : 0;
}

uint64_t time_now(void)
{
	return clock_ticks += TICK;
}

void pr_info(const char *fmt, ...)
{
	(void)fmt;
}

/* "alpha": 8 vCPUs, each on a hart that never gets to a sync request */
struct vm *vm_find(const char *name)
{
	if (strcmp(name, "alpha") && strcmp(name, LONG_NAME))
		return NULL;
	vms[0].state = VM_RUNNING;
	strcpy(vms[0].cfg.name, name);
	vms[0].cfg.nr_vcpus = VM_MAX_VCPUS;
	for (unsigned int i = 0; i < VM_MAX_VCPUS; i++) {
		vms[0].vcpus[i].vm = &vms[0];
		vms[0].vcpus[i].id = i;
	}
	return &vms[0];
}

/* the state list reads; a wake can find the guest asleep again at once */
static const char *stub_state = "running";
static bool wake_then_suspend_again;

const char *vm_state_name(const struct vm *vm)
{
	(void)vm;
	return stub_state;
}

/* counts_distinct: each counter its own value, and each VM's its own */
static bool counts_distinct;

void vm_count(const struct vm *vm, struct vm_counts *c)
{
	uint64_t base = 100 * vm->index;

	memset(c, counters_full ? 0xff : 0, sizeof(*c));
	if (!counts_distinct)
		return;
	*c = (struct vm_counts){ .exits = base + 1, .sbi = base + 2, .guest_page_faults = base + 3,
				 .virtual_insn = base + 4, .host_irq = base + 5, .sw_check = base + 6,
				 .wfi = base + 7, .mmio = base + 8, .injected = base + 9,
				 .cfi_lp = base + 10, .cfi_ss = base + 11, .wfi_in_place = base + 14,
				 .imsic_sw_stores = base + 15, .imsic_csr_exits = base + 16,
				 .imsic_moves = base + 17, .imsic_evictions = base + 18,
				 .imsic_sgei = base + 19, .misaligned_emulated = base + 20 };
	c->by_cause[9] = base + 12;
	c->by_cause[VCPU_EXIT_CAUSES - 1] = base + 13;
}

const struct host_image *image_at(unsigned int i)
{
	(void)i;
	return NULL;
}

unsigned int vmid_usable(void)
{
	return 63;
}

struct hyp_cfi hyp_cfi;	/* the plain build's: all off */

uint64_t mm_free_bytes(void)
{
	return counters_full ? UINT64_MAX : 0;
}

static unsigned int syncs;

void vcpu_sync_state(struct vcpu *v, uint64_t until)
{
	(void)v;
	syncs++;
	if (clock_ticks < until)
		clock_ticks = until;	/* waited for the deadline: no answer */
}

bool cfi_vm_has_lp(const struct vm *vm)
{
	(void)vm;
	return false;
}

bool cfi_vm_has_ss(const struct vm *vm)
{
	(void)vm;
	return false;
}

bool cfi_vcpu_elp(const struct vcpu *v)
{
	(void)v;
	return false;
}

int vmop_pause(struct vm *vm, vmop_done_fn done, void *ctx)
{
	(void)vm, (void)done, (void)ctx;
	return -HYP_EBUSY;
}

int vmop_destroy(struct vm *vm, vmop_done_fn done, void *ctx)
{
	(void)vm, (void)done, (void)ctx;
	return -HYP_EBUSY;
}

const char *vmop_refusal(const struct vm *vm, enum vmop op)
{
	(void)vm;
	(void)op;
	return NULL;
}

/* A disk and a NIC for every VM (devices, nic); the NIC's attachment as the
 * last nic request set it. */
static bool stub_nic_attached = true;

unsigned int vm_io_list(struct vm *vm, struct vm_io_info *out, unsigned int max)
{
	(void)vm;
	if (max < 2)
		return 0;
	out[0] = (struct vm_io_info){ .slot = 0, .pci_dev = 2, .sectors = 16384,
				      .blk = { 37, 151552, 1, 0 }, .limit_ops = 2000,
				      .limit_bytes = 33554432, .held = 5 };
	out[1] = (struct vm_io_info){ .slot = 1, .is_net = true, .nic = 0, .sw = "lan",
				      .mac = { 0x52, 0x54, 0, 0x6a, 0x1f, 3 },
				      .attached = stub_nic_attached, .tx = { 120, 24000, 0, 0 },
				      .rx = { 118, 23600, 0, 2 }, .spoofed = 4,
				      .limit_ops = 0, .limit_bytes = 1048576 };
	return 2;
}

const struct vm_nic_desc *vm_io_nic(const struct vm *vm, unsigned int nic)
{
	static const struct vm_nic_desc n = { "lan", { 0x52, 0x54, 0, 0x6a, 0x1f, 3 }, 0, 0 };

	(void)vm;
	return nic ? NULL : &n;
}

int vm_io_nic_set(struct vm *vm, unsigned int nic, bool attach)
{
	(void)vm;
	if (nic)
		return -HYP_ENOENT;
	stub_nic_attached = attach;
	return 0;
}

const char *vm_migration_word(const struct vm *vm)
{
	(void)vm;
	return NULL;
}

/* the host's interrupts: fixed distinct counters, so the reply shows each */
const char *host_irq_chip_name(void)
{
	return "aia";
}

struct host_irq_stats host_irq_get_stats(void)
{
	return (struct host_irq_stats){ .handled = 21, .unknown = 22, .cut = 23, .polled = 24 };
}

uint64_t vm_events_dropped(void)
{
	return counters_full ? UINT64_MAX : 0;
}

int vmop_resume(struct vm *vm)
{
	(void)vm;
	return -HYP_EBUSY;
}

int vmop_wake(struct vm *vm)
{
	(void)vm;
	if (!wake_then_suspend_again)
		return -HYP_EBUSY;
	stub_state = "suspended";	/* the guest ran on another hart and slept again */
	return 0;
}

void vmop_cancel_waiter(void *ctx)
{
	(void)ctx;
}

int vm_create(const struct vm_desc *d, struct vm **out, const char **why)
{
	(void)d, (void)out;
	*why = "not here";
	return -HYP_EINVAL;
}

/* a stream client connected: restore and incoming get to their engines,
 * which take note of the disk map and refuse (busy) */
static bool stub_stream_ready;
static struct snap_io_map stub_map;

bool snap_port_ready(void)
{
	return stub_stream_ready;
}

void snap_port_drain(void)
{
}

bool snap_busy(void)
{
	return false;
}

bool mig_recv_armed(void)
{
	return false;
}

int snap_save_start(struct vm *vm, bool live, bool disks, snap_done_fn done)
{
	(void)vm, (void)live, (void)disks, (void)done;
	return -HYP_EBUSY;
}

const char *snap_save_start_error(void)
{
	return NULL;
}

int snap_load_start(uint64_t bytes, const char *name, const struct snap_io_map *map,
		    snap_done_fn done)
{
	(void)bytes, (void)name, (void)done;
	stub_map = *map;
	return -HYP_EBUSY;
}

static struct mig_send_opts stub_mig_opts;
static unsigned int stub_mig_starts;

int mig_send_start(struct vm *vm, const struct mig_send_opts *opts,
		   const struct mig_host_ops *ops, mig_done_fn done)
{
	(void)vm, (void)ops, (void)done;
	stub_mig_opts = *opts;
	stub_mig_starts++;
	return -HYP_EBUSY;
}

int mig_recv_start(const char *name, bool armed, const struct snap_io_map *map,
		   const struct mig_host_ops *ops, mig_done_fn done)
{
	(void)name, (void)armed, (void)ops, (void)done;
	stub_map = *map;
	return -HYP_EBUSY;
}

/* ---- the control port: what the client sent, what it got back ---- */

static struct {
	char *in;
	size_t len, pos;
	size_t replies;		/* newlines written back */
	char out[4 * 8192];	/* what was written back (the first bytes) */
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
	return strcmp(name, "org.carapace.control") ? -1 : PORT;
}

unsigned int vcon_port_generation(int p)
{
	(void)p;
	return 1;
}

unsigned int vcon_read_generation(int p)
{
	(void)p;
	return 1;
}

size_t vcon_read(int p, void *buf, size_t len)
{
	size_t n = len < port.len - port.pos ? len : port.len - port.pos;

	(void)p;
	memcpy(buf, port.in + port.pos, n);
	port.pos += n;
	return n;
}

size_t vcon_write(int p, const void *buf, size_t len)
{
	(void)p;
	for (size_t i = 0; i < len; i++) {
		port.replies += ((const char *)buf)[i] == '\n';
		if (port.out_len < sizeof(port.out) - 1)
			port.out[port.out_len++] = ((const char *)buf)[i];
	}
	return len;	/* a client that reads everything at once */
}

/* A client that sends one line */
static void client_line(const char *line)
{
	free(port.in);
	memset(&port, 0, sizeof(port));
	port.in = strdup(line);
	port.len = strlen(line);
	mgmt_init(NULL);
}

/* A client that sends @n request lines, then @junk bytes without a newline
 * and one newline (when @junk). */
static void client(unsigned int n, size_t junk)
{
	static const char req[] = "{\"v\":1,\"id\":7,\"cmd\":\"hello\"}\n";
	size_t len = n * (sizeof(req) - 1) + (junk ? junk + 1 : 0);

	free(port.in);
	memset(&port, 0, sizeof(port));
	port.in = malloc(len ? len : 1);
	for (unsigned int i = 0; i < n; i++)
		memcpy(port.in + i * (sizeof(req) - 1), req, sizeof(req) - 1);
	if (junk) {
		memset(port.in + n * (sizeof(req) - 1), 'x', junk);
		port.in[len - 1] = '\n';
	}
	port.len = len;
	mgmt_init(NULL);
}

TEST(mgmt_poll_answers_a_bounded_number_of_requests)
{
	unsigned int polls = 0;

	client(1000, 0);
	mgmt_poll();
	EXPECT_TRUE(port.replies > 0);
	EXPECT_TRUE(port.replies <= POLL_LOOKS);
	EXPECT_TRUE(mgmt_busy());	/* the scheduler polls again at once */
	while (mgmt_busy() && polls++ < 1000) {
		size_t before = port.replies;

		mgmt_poll();
		EXPECT_TRUE(port.replies - before <= POLL_LOOKS);
	}
	EXPECT_EQ(port.replies, 1000);	/* every request answered, once */
	EXPECT_EQ(port.pos, port.len);
	EXPECT_FALSE(mgmt_busy());	/* nothing left: hart 0 may sleep */
}

TEST(mgmt_poll_takes_a_bounded_number_of_bytes)
{
	unsigned int polls = 0;
	size_t before;

	/* one line of 1 MiB: refused, but read through, a share per poll */
	client(0, 1 << 20);
	mgmt_poll();
	EXPECT_TRUE(port.pos <= POLL_LOOKS * READ);
	EXPECT_EQ(port.replies, 0);
	EXPECT_TRUE(mgmt_busy());
	while (mgmt_busy() && polls++ < 10000) {
		before = port.pos;
		mgmt_poll();
		EXPECT_TRUE(port.pos - before <= POLL_LOOKS * READ);
	}
	EXPECT_EQ(port.pos, port.len);
	EXPECT_EQ(port.replies, 1);	/* "line too long", once */
}

TEST(mgmt_poll_idle_client_is_not_busy)
{
	client(2, 0);
	mgmt_poll();
	EXPECT_EQ(port.replies, 2);
	EXPECT_FALSE(mgmt_busy());
	mgmt_poll();
	EXPECT_FALSE(mgmt_busy());
}

TEST(mgmt_cfi_waits_for_all_vcpus_under_one_deadline)
{
	uint64_t start;

	/* a VM whose 8 harts never answer: 10 ms for the request, not 10 each */
	client_line("{\"v\":1,\"id\":1,\"cmd\":\"cfi\",\"vm\":\"alpha\"}\n");
	start = clock_ticks;
	mgmt_poll();
	EXPECT_EQ(syncs, VM_MAX_VCPUS);
	EXPECT_EQ(port.replies, 1);
	EXPECT_TRUE(clock_ticks - start <= timebase_hz * VCPU_SYNC_STATE_MS / 1000 + 10 * TICK);
}

/* The length of the @n-th reply line (from 0) written back, newline included. */
static size_t reply_len(unsigned int n)
{
	const char *line = port.out, *end;

	while (n--)
		line = strchr(line, '\n') + 1;
	end = strchr(line, '\n');
	return (size_t)(end - line) + 1;
}

/* The integer after "key": in the @n-th reply line. */
static uint64_t reply_u64(unsigned int n, const char *key)
{
	const char *line = port.out;
	char pattern[64];

	while (n--)
		line = strchr(line, '\n') + 1;
	snprintf(pattern, sizeof(pattern), "\"%s\":", key);
	line = strstr(line, pattern);
	return line ? strtoull(line + strlen(pattern), NULL, 10) : ~0ULL - 1;
}

static void fill_vms(void)
{
	nr_vms = VM_MAX;
	nr_harts = HART_MAX;
	for (unsigned int i = 0; i < VM_MAX; i++) {
		struct vm *vm = &vms[i];

		vm->state = VM_RUNNING;
		vm->index = i;
		snprintf(vm->cfg.name, sizeof(vm->cfg.name), "abcdefghijklm%02u", i);
		vm->cfg.nr_vcpus = VM_MAX_VCPUS;
		vm->cfg.boot_count = UINT32_MAX;
		vm->cfg.ram_size = UINT64_MAX;
		vm->failed = true;
		vm->stats.console_bytes = UINT64_MAX;
		for (unsigned int k = 0; k < VM_MAX_VCPUS; k++)
			vm->vcpus[k].steal.total_ns = UINT64_MAX / VM_MAX_VCPUS;
		harts[i % HART_MAX].idle_wakeups = UINT64_MAX;
	}
}

TEST(mgmt_metrics_vm_reply_fits_with_every_counter_at_its_largest)
{
	counters_full = true;
	fill_vms();
	client_line("{\"v\":1,\"id\":18446744073709551615,\"cmd\":\"metrics\",\"vm\":\"" LONG_NAME
		    "\"}\n");
	mgmt_poll();
	EXPECT_EQ(port.replies, 1);
	EXPECT_TRUE(strstr(port.out, "\"ok\":true") != NULL);
	EXPECT_TRUE(strstr(port.out, "\"vm\":\"" LONG_NAME "\"") != NULL);
	/* all 24 causes, each at its largest */
	EXPECT_TRUE(strstr(port.out, "\"0\":18446744073709551615,") != NULL);
	EXPECT_TRUE(strstr(port.out, "\"23\":18446744073709551615}") != NULL);
	EXPECT_EQ(reply_u64(0, "console_bytes"), UINT64_MAX);
	EXPECT_EQ(reply_u64(0, "violations_ss"), UINT64_MAX);
	/* docs/management.md promises at most 1536 bytes: a sixth of a line */
	EXPECT_TRUE(reply_len(0) <= 1536);
	counters_full = false;
}

TEST(mgmt_metrics_host_reply_fits_with_every_slot_and_hart)
{
	counters_full = true;
	fill_vms();
	client_line("{\"v\":1,\"id\":18446744073709551615,\"cmd\":\"metrics\"}\n");
	mgmt_poll();
	EXPECT_EQ(port.replies, 1);
	EXPECT_TRUE(strstr(port.out, "\"ok\":true") != NULL);
	EXPECT_TRUE(strstr(port.out, "\"vms\":[\"abcdefghijklm00\",") != NULL);
	EXPECT_TRUE(strstr(port.out, "\"abcdefghijklm07\"]") != NULL);
	EXPECT_EQ(reply_u64(0, "mem_total"), UINT64_MAX);
	EXPECT_TRUE(reply_len(0) <= 1536);
	counters_full = false;
}

TEST(mgmt_metrics_counts_requests_and_error_replies)
{
	/* two requests between the scrapes: one refused, one answered */
	client_line("{\"v\":1,\"id\":1,\"cmd\":\"metrics\"}\n"
		    "not json\n"
		    "{\"v\":1,\"id\":2,\"cmd\":\"hello\"}\n"
		    "{\"v\":1,\"id\":3,\"cmd\":\"metrics\"}\n");
	mgmt_poll();
	EXPECT_EQ(port.replies, 4);
	EXPECT_EQ(reply_u64(3, "requests") - reply_u64(0, "requests"), 3);
	EXPECT_EQ(reply_u64(3, "request_errors") - reply_u64(0, "request_errors"), 1);
}

TEST(mgmt_wake_reply_says_what_the_wake_did)
{
	/* the guest may suspend itself again before the reply is written:
	 * the reply still says the wake made it run (it once read the state
	 * again and answered "suspended" to a wake that worked) */
	wake_then_suspend_again = true;
	stub_state = "suspended";
	client_line("{\"v\":1,\"id\":5,\"cmd\":\"wake\",\"vm\":\"alpha\"}\n");
	mgmt_poll();
	wake_then_suspend_again = false;
	stub_state = "running";
	EXPECT_EQ(port.replies, 1);
	EXPECT_TRUE(strstr(port.out, "\"ok\":true") != NULL);
	EXPECT_TRUE(strstr(port.out, "\"state\":\"running\"") != NULL);
}

/* The replies that walk the VM table (list, stats, metrics), byte for byte:
 * docs/management.md's wire format, a free slot between two VMs skipped, and
 * "vm" choosing one. */
static void two_vms_and_a_free_slot(void)
{
	memset(vms, 0, sizeof(vms));
	memset(harts, 0, sizeof(harts));
	nr_vms = 3;
	nr_harts = 2;
	harts[0].idle_wakeups = 5;
	harts[1].idle_wakeups = 7;
	for (unsigned int i = 0; i < 3; i += 2) {
		struct vm *vm = &vms[i];

		vm->state = VM_RUNNING;
		vm->index = i;
		strcpy(vm->cfg.name, i ? "gamma" : "alpha");
		vm->cfg.nr_vcpus = i + 1;
		vm->cfg.ram_size = (i + 1) << 20;
		vm->cfg.cfi_policy = i ? CFI_POLICY_STRICT : CFI_POLICY_TRAP;
		vm->cfg.boot_count = i + 1;
		vm->failed = i;
		vm->stats.console_bytes = 10 + i;
		vm->vcpus[0].steal.total_ns = 100 + i;
	}
}

static void expect_reply(const char *request, const char *reply)
{
	client_line(request);
	mgmt_poll();
	EXPECT_EQ(port.replies, 1);
	EXPECT_STREQ(port.out, reply);
	if (strcmp(port.out, reply))
		printf("got:  %s", port.out);
}

TEST(mgmt_vm_table_replies_are_the_documented_bytes)
{
	char host[1024];

	counts_distinct = true;
	two_vms_and_a_free_slot();
	expect_reply("{\"v\":1,\"id\":1,\"cmd\":\"list\"}\n",
		     "{\"v\":1,\"id\":1,\"ok\":true,\"vms\":[{\"name\":\"alpha\","
		     "\"index\":0,\"state\":\"running\",\"vcpus\":1,\"mem\":1048576,"
		     "\"cfi\":\"trap\",\"boots\":1,\"failed\":false},{\"name\":\"gamma\","
		     "\"index\":2,\"state\":\"running\",\"vcpus\":3,\"mem\":3145728,"
		     "\"cfi\":\"strict\",\"boots\":3,\"failed\":true}]}\n");
	expect_reply("{\"v\":1,\"id\":2,\"cmd\":\"stats\"}\n",
		     "{\"v\":1,\"id\":2,\"ok\":true,\"vms\":[{\"name\":\"alpha\","
		     "\"exits\":1,\"sbi\":2,\"guest_page_faults\":3,\"virtual_insn\":4,"
		     "\"host_irq\":5,\"sw_check\":6,\"mmio\":8,\"wfi\":7,\"injected\":9,"
		     "\"by_cause\":{\"9\":12,\"23\":13}},{\"name\":\"gamma\",\"exits\":201,"
		     "\"sbi\":202,\"guest_page_faults\":203,\"virtual_insn\":204,"
		     "\"host_irq\":205,\"sw_check\":206,\"mmio\":208,\"wfi\":207,"
		     "\"injected\":209,\"by_cause\":{\"9\":212,\"23\":213}}],"
		     "\"host\":{\"free_mem\":0,\"events_dropped\":0,"
		     "\"idle_wakeups\":[5,7]}}\n");
	expect_reply("{\"v\":1,\"id\":3,\"cmd\":\"stats\",\"vm\":\"alpha\"}\n",
		     "{\"v\":1,\"id\":3,\"ok\":true,\"vms\":[{\"name\":\"alpha\","
		     "\"exits\":1,\"sbi\":2,\"guest_page_faults\":3,\"virtual_insn\":4,"
		     "\"host_irq\":5,\"sw_check\":6,\"mmio\":8,\"wfi\":7,\"injected\":9,"
		     "\"by_cause\":{\"9\":12,\"23\":13}}],\"host\":{\"free_mem\":0,"
		     "\"events_dropped\":0,\"idle_wakeups\":[5,7]}}\n");
	expect_reply("{\"v\":1,\"id\":4,\"cmd\":\"metrics\",\"vm\":\"alpha\"}\n",
		     "{\"v\":1,\"id\":4,\"ok\":true,\"vm\":\"alpha\",\"index\":0,"
		     "\"state\":\"running\",\"vcpus\":8,\"mem\":1048576,\"cfi\":\"trap\","
		     "\"boots\":1,\"failed\":false,\"exits\":1,\"host_irq\":5,"
		     "\"by_cause\":{\"9\":12,\"23\":13},\"mmio\":8,\"wfi\":7,\"wfi_in_place\":14,"
		     "\"injected\":9,\"misaligned_emulated\":20,"
		     "\"violations_lp\":10,\"violations_ss\":11,\"imsic_sw_stores\":15,"
		     "\"imsic_csr_exits\":16,\"imsic_moves\":17,\"imsic_evictions\":18,"
		     "\"imsic_sgei\":19,\"steal_ns\":100,\"console_bytes\":10}\n");
	client_line("{\"v\":1,\"id\":5,\"cmd\":\"metrics\"}\n");
	mgmt_poll();
	/* requests and request_errors count every earlier test's lines too */
	snprintf(host, sizeof(host),
		 "{\"v\":1,\"id\":5,\"ok\":true,\"harts\":2,\"vm_max\":8,"
		 "\"mem_total\":0,\"mem_free\":0,\"events_dropped\":0,\"requests\":%lu,"
		 "\"request_errors\":%lu,\"idle_wakeups\":[5,7],\"irq_chip\":\"aia\","
		 "\"irq_handled\":21,\"irq_unknown\":22,\"irq_cut\":23,\"irq_polled\":24,"
		 "\"vms\":[\"alpha\","
		 "\"gamma\"]}\n",
		 reply_u64(0, "requests"), reply_u64(0, "request_errors"));
	EXPECT_STREQ(port.out, host);
	if (strcmp(port.out, host))
		printf("got:  %s", port.out);
	counts_distinct = false;
}

TEST(mgmt_devices_and_nic_replies_are_the_documented_bytes)
{
	two_vms_and_a_free_slot();
	expect_reply("{\"v\":1,\"id\":6,\"cmd\":\"devices\",\"vm\":\"alpha\"}\n",
		     "{\"v\":1,\"id\":6,\"ok\":true,\"vm\":\"alpha\",\"devices\":[{\"slot\":0,"
		     "\"kind\":\"blk\",\"host\":\"00:02.0\",\"sectors\":16384,\"read_only\":false,"
		     "\"io\":{\"requests\":37,\"bytes\":151552,\"errors\":1,\"drops\":0},"
		     "\"limit\":{\"iops\":2000,\"bandwidth\":33554432},\"held\":5},"
		     "{\"slot\":1,\"kind\":\"net\",\"nic\":0,\"switch\":\"lan\","
		     "\"mac\":\"52:54:00:6a:1f:03\",\"attached\":true,\"tx\":{\"requests\":120,"
		     "\"bytes\":24000,\"errors\":0,\"drops\":0},\"rx\":{\"requests\":118,"
		     "\"bytes\":23600,\"errors\":0,\"drops\":2},\"tx_spoofed\":4,"
		     "\"limit\":{\"pps\":0,\"bandwidth\":1048576},\"held\":0}]}\n");
	expect_reply("{\"v\":1,\"id\":7,\"cmd\":\"nic\",\"vm\":\"alpha\",\"nic\":0,"
		     "\"action\":\"detach\"}\n",
		     "{\"v\":1,\"id\":7,\"ok\":true,\"vm\":\"alpha\",\"nic\":0,"
		     "\"attached\":false}\n");
	EXPECT_TRUE(!stub_nic_attached);
	expect_reply("{\"v\":1,\"id\":8,\"cmd\":\"nic\",\"vm\":\"alpha\",\"nic\":1,"
		     "\"action\":\"attach\"}\n",
		     "{\"v\":1,\"id\":8,\"ok\":false,\"code\":\"no-such-nic\","
		     "\"error\":\"the VM has no NIC with that index\"}\n");
	/* an action that is a prefix, a longer word, or not a string */
	client_line("{\"v\":1,\"id\":9,\"cmd\":\"nic\",\"vm\":\"alpha\",\"nic\":0,"
		    "\"action\":\"detached\"}\n");
	mgmt_poll();
	EXPECT_TRUE(strstr(port.out, "\"code\":\"bad-request\"") != NULL);
	client_line("{\"v\":1,\"id\":10,\"cmd\":\"nic\",\"vm\":\"alpha\",\"nic\":0,"
		    "\"action\":\"att\"}\n");
	mgmt_poll();
	EXPECT_TRUE(strstr(port.out, "\"code\":\"bad-request\"") != NULL);
	client_line("{\"v\":1,\"id\":11,\"cmd\":\"nic\",\"vm\":\"alpha\",\"action\":\"attach\"}\n");
	mgmt_poll();
	EXPECT_TRUE(strstr(port.out, "\"code\":\"bad-request\"") != NULL);
	EXPECT_TRUE(!stub_nic_attached);	/* none of those reached the NIC */
}

TEST(mgmt_restore_and_incoming_take_the_disk_map)
{
	/* each command and its other required fields */
	static const char *const cmds[][2] = { { "restore", ",\"bytes\":64" }, { "incoming", "" } };
	char req[160];

	/* disk0/disk1 (docs/management.md): the host disks a restored or
	 * arriving VM's disks go to reach the engine (they were once refused
	 * as unknown fields, so carapace-run --restore FILE,disk=PATH failed) */
	stub_stream_ready = true;
	for (unsigned int i = 0; i < ARRAY_SIZE(cmds); i++) {
		memset(&stub_map, 0, sizeof(stub_map));
		snprintf(req, sizeof(req), "{\"v\":1,\"id\":1,\"cmd\":\"%s\"%s,"
			 "\"disk0\":5,\"disk1\":31}\n", cmds[i][0], cmds[i][1]);
		client_line(req);
		mgmt_poll();
		EXPECT_EQ(port.replies, 1);
		EXPECT_TRUE(strstr(port.out, "\"code\":\"busy\"") != NULL);
		EXPECT_EQ(stub_map.disk_pci[0], 5);
		EXPECT_EQ(stub_map.disk_pci[1], 31);
		/* out of 1..31: refused before the engine */
		memset(&stub_map, 0, sizeof(stub_map));
		snprintf(req, sizeof(req), "{\"v\":1,\"id\":2,\"cmd\":\"%s\"%s,"
			 "\"disk0\":32}\n", cmds[i][0], cmds[i][1]);
		client_line(req);
		mgmt_poll();
		EXPECT_TRUE(strstr(port.out, "\"code\":\"bad-request\",\"error\":\"disk0, disk1: "
				   "a host PCI device number 1..31\"") != NULL);
		EXPECT_EQ(stub_map.disk_pci[0], 0);
	}
	stub_stream_ready = false;
}

TEST(mgmt_migrate_takes_the_downtime_limit_and_auto_converge)
{
	static const char *const bad[] = {
		",\"downtime_limit_ms\":0", ",\"downtime_limit_ms\":60001",
		",\"downtime_limit_ms\":\"5\"", ",\"auto_converge\":1",
		",\"auto_converge\":\"no\"",
	};
	unsigned int starts;

	two_vms_and_a_free_slot();
	stub_stream_ready = true;
	/* defaults: what docs/management.md says */
	client_line("{\"v\":1,\"id\":1,\"cmd\":\"migrate\",\"vm\":\"alpha\"}\n");
	mgmt_poll();
	EXPECT_EQ(stub_mig_opts.max_rounds, MIG_MAX_ROUNDS_DEFAULT);
	EXPECT_EQ(stub_mig_opts.downtime_limit_ms, MIG_DOWNTIME_LIMIT_MS_DEFAULT);
	EXPECT_TRUE(stub_mig_opts.auto_converge);
	client_line("{\"v\":1,\"id\":2,\"cmd\":\"migrate\",\"vm\":\"alpha\","
		    "\"downtime_limit_ms\":60000,\"auto_converge\":false,\"max_rounds\":7}\n");
	mgmt_poll();
	EXPECT_EQ(stub_mig_opts.max_rounds, 7);
	EXPECT_EQ(stub_mig_opts.downtime_limit_ms, 60000);
	EXPECT_FALSE(stub_mig_opts.auto_converge);
	/* out of range or of the wrong type: refused before the engine */
	starts = stub_mig_starts;
	for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
		char req[160];

		snprintf(req, sizeof(req), "{\"v\":1,\"id\":3,\"cmd\":\"migrate\",\"vm\":\"alpha\"%s}\n",
			 bad[i]);
		client_line(req);
		mgmt_poll();
		EXPECT_TRUE(strstr(port.out, "\"code\":\"bad-request\"") != NULL);
	}
	EXPECT_EQ(stub_mig_starts, starts);
	stub_stream_ready = false;
}
