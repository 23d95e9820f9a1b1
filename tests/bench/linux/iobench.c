// SPDX-License-Identifier: MIT
/*
 * iobench.c: PID 1 of the guest-I/O benchmark's initramfs (scripts/bench.py
 * steps disk_io and net_io, docs/performance.md "Guest I/O"). The same
 * program runs on bare QEMU and under Carapace, on the same guest kernel.
 *
 * What one figure is: the instructions the machine spends on an I/O phase.
 * Under QEMU -icount shift=0 a guest rdtime tick is 100 instructions, but
 * only while some hart executes: while every hart waits in WFI the clock
 * follows host time (QEMU's sleep=on), and an I/O wait is host time (QEMU's
 * block layer, its user network). So a **spinner** runs beside the I/O: a
 * SCHED_IDLE child counting iterations into shared memory. The machine never
 * idles; the interval's ticks x 100 are all the instructions executed, and
 * those the spinner did not get went to the I/O: the guest's own path, the
 * hypervisor's, interrupts, switches. The spinner's rate (iterations per
 * instruction) is calibrated in windows of the same boot before and after
 * each phase, with nothing else running; their difference is printed
 * (drift) so that a noisy calibration shows.
 *
 * Kernel command line (from /proc/cmdline):
 *   iobench.run=disk|tx|rx   disk: /dev/vda (a raw scratch disk) written
 *                            then read sequentially, then read at random;
 *                            tx: send to iobench.peer; rx: receive one
 *                            transfer on iobench.port and answer it
 *   iobench.mib=N            MiB per sequential transfer (64)
 *   iobench.bs=N             KiB per sequential disk request (1024)
 *   iobench.reads=N          4 KiB random reads (4096)
 *   iobench.peer=ADDR:PORT   tx: the receiver
 *   iobench.port=PORT        rx: the port to listen on
 *   iobench.cal_ms=N         length of a calibration window (300)
 *   iobench.sync_ms=N        print "IOBENCH SYNC <tag>" and sleep N ms
 *                            before and after each phase, so the host can
 *                            read the hypervisor's counters there (0: no)
 *   carapace.ip=ADDR/PREFIX  eth0's address (tx, rx)
 *
 * Output: "BENCH <phase>_<figure> <value>" lines (insns, ticks, requests,
 * irqs, drift_ppm), "IOBENCH done" at the end or "IOBENCH FAIL <why>";
 * then the VM powers off.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define INSNS_PER_TICK 100	/* -icount shift=0 at QEMU virt's 10 MHz timebase */
#define MIB (1024UL * 1024UL)
#define BLOCK 4096UL

static int console = -1;

static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* one write per line: consoles print whole lines */
	if (write(console, line, n) < 0)
		return;
}

static void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

static void fail(const char *fmt, ...)
{
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	say("IOBENCH FAIL %s (errno %d)", why, errno);
	power_off();
}

static uint64_t ticks(void)
{
	uint64_t t;

	__asm__ volatile("rdtime %0" : "=r"(t));
	return t;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* --- the command line --------------------------------------------------- */

static char cmdline[4096];

/* The value of "NAME=" on the kernel command line, or @def. The value is
 * in a buffer the next call reuses. */
static const char *arg(const char *name, const char *def)
{
	static char val[256];
	size_t len = strlen(name);
	char *p = cmdline;

	while ((p = strstr(p, name))) {
		if ((p == cmdline || p[-1] == ' ') && p[len] == '=') {
			size_t n = strcspn(p + len + 1, " \n");

			if (n >= sizeof(val))
				n = sizeof(val) - 1;
			memcpy(val, p + len + 1, n);
			val[n] = 0;
			return val;
		}
		p += len;
	}
	return def;
}

static unsigned long arg_num(const char *name, unsigned long def)
{
	const char *v = arg(name, NULL);

	return v ? strtoul(v, NULL, 0) : def;
}

/* --- the spinner and its calibration --------------------------------------- */

static volatile uint64_t *spun;	/* the spinner's iterations, shared */

static void start_spinner(void)
{
	struct sched_param sp = { 0 };
	pid_t pid;

	spun = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (spun == MAP_FAILED)
		fail("mmap");
	pid = fork();
	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		uint64_t n = 0;

		/* runs only when nothing else can: a wake-up preempts it at once */
		if (sched_setscheduler(0, SCHED_IDLE, &sp))
			_exit(1);
		for (;;)
			*spun = ++n;
	}
	while (*spun == 0)
		sched_yield();
}

struct sample {
	uint64_t t, n;		/* rdtime, spinner iterations */
	uint64_t requests;	/* block requests completed, or eth0 packets */
	uint64_t irqs;		/* virtio interrupts */
};

/* Instructions per spinner iteration over a window with only the spinner. */
static double calibrate(unsigned ms)
{
	uint64_t t0 = ticks(), n0 = *spun, t1, n1;

	sleep_ms(ms);
	t1 = ticks();
	n1 = *spun;
	if (n1 <= n0)
		fail("the spinner did not run");
	return (double)(t1 - t0) * INSNS_PER_TICK / (double)(n1 - n0);
}

/* --- counters the guest can see ------------------------------------------- */

static uint64_t read_file_u64s(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		fail("open %s", path);
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		fail("read %s", path);
	buf[n] = 0;
	return (uint64_t)n;
}

/* Interrupts of every virtio line, all CPUs (/proc/interrupts). */
static uint64_t virtio_irqs(void)
{
	static char buf[16384];
	uint64_t sum = 0;
	char *line;

	read_file_u64s("/proc/interrupts", buf, sizeof(buf));
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *p = strchr(line, ':');

		if (!p || !strstr(line, "virtio"))
			continue;
		for (p++;;) {
			char *end;
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
	}
	return sum;
}

/* Block requests completed on vda, reads and writes (/sys/block/vda/stat). */
static uint64_t disk_requests(void)
{
	char buf[512];
	unsigned long f[8] = { 0 };

	read_file_u64s("/sys/block/vda/stat", buf, sizeof(buf));
	if (sscanf(buf, "%lu %lu %lu %lu %lu %lu %lu %lu", &f[0], &f[1], &f[2], &f[3],
		   &f[4], &f[5], &f[6], &f[7]) != 8)
		fail("parse /sys/block/vda/stat");
	return f[0] + f[4];
}

/* eth0's packets, received and sent (/proc/net/dev). */
static uint64_t net_packets(void)
{
	static char buf[4096];
	unsigned long v[10];
	char *p;

	read_file_u64s("/proc/net/dev", buf, sizeof(buf));
	p = strstr(buf, "eth0:");
	if (!p || sscanf(p + 5, "%lu %lu %lu %lu %lu %lu %lu %lu %lu %lu", &v[0], &v[1], &v[2],
			 &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) != 10)
		fail("parse /proc/net/dev");
	return v[1] + v[9];
}

/* --- phases ------------------------------------------------------------------ */

static unsigned cal_ms, sync_ms;
static uint64_t (*requests)(void);

/* Called at each phase's start and end, before the counters are read: a
 * fixed address where an instruction-profiling QEMU plugin can cut its
 * counts into phases (docs/performance.md, "Where the instructions go"). */
__attribute__((noinline)) void iobench_mark(void)
{
	__asm__ volatile("" ::: "memory");
}

static void take(struct sample *s)
{
	iobench_mark();
	s->requests = requests();
	s->irqs = virtio_irqs();
	s->n = *spun;
	s->t = ticks();
}

static void sync_point(const char *phase, const char *where)
{
	if (!sync_ms)
		return;
	say("IOBENCH SYNC %s-%s", phase, where);
	sleep_ms(sync_ms);
}

struct phase {
	const char *name;
	double before;		/* instructions per iteration, window before */
	struct sample a;
};

static void phase_start(struct phase *ph, const char *name)
{
	ph->name = name;
	ph->before = calibrate(cal_ms);
	sync_point(name, "start");
	take(&ph->a);
}

static void phase_end(struct phase *ph)
{
	struct sample b;
	double after, per_iter, lost;

	take(&b);
	sync_point(ph->name, "end");
	after = calibrate(cal_ms);
	per_iter = (ph->before + after) / 2;
	lost = (double)(b.t - ph->a.t) * INSNS_PER_TICK - (double)(b.n - ph->a.n) * per_iter;
	say("BENCH %s_insns %.0f", ph->name, lost);
	say("BENCH %s_ticks %lu", ph->name, (unsigned long)(b.t - ph->a.t));
	say("BENCH %s_requests %lu", ph->name, (unsigned long)(b.requests - ph->a.requests));
	say("BENCH %s_irqs %lu", ph->name, (unsigned long)(b.irqs - ph->a.irqs));
	say("BENCH %s_drift_ppm %.0f", ph->name,
	    1e6 * (after > ph->before ? after - ph->before : ph->before - after) / per_iter);
}

/* --- disk ---------------------------------------------------------------------- */

static void disk(void)
{
	unsigned long mib = arg_num("iobench.mib", 64), bs = arg_num("iobench.bs", 1024) * 1024;
	unsigned long reads = arg_num("iobench.reads", 4096), total = mib * MIB, off, i;
	uint32_t lcg = 12345;
	struct phase ph;
	void *buf;
	int fd;

	if (!bs || bs % BLOCK || total % bs)
		fail("iobench.bs must be a multiple of 4 and divide iobench.mib");
	if (posix_memalign(&buf, BLOCK, bs))
		fail("posix_memalign");
	memset(buf, 0x5a, bs);
	fd = open("/dev/vda", O_RDWR | O_DIRECT);
	if (fd < 0)
		fail("open /dev/vda");
	requests = disk_requests;

	phase_start(&ph, "disk_write");
	for (off = 0; off < total; off += bs)
		if (pwrite(fd, buf, bs, off) != (ssize_t)bs)
			fail("write at %lu", off);
	phase_end(&ph);

	phase_start(&ph, "disk_read");
	for (off = 0; off < total; off += bs)
		if (pread(fd, buf, bs, off) != (ssize_t)bs)
			fail("read at %lu", off);
	phase_end(&ph);

	/* the same pseudo-random blocks on every run and every host */
	phase_start(&ph, "disk_rand");
	for (i = 0; i < reads; i++) {
		lcg = lcg * 1103515245u + 12345u;
		off = (unsigned long)(lcg >> 8) % (total / BLOCK) * BLOCK;
		if (pread(fd, buf, BLOCK, off) != (ssize_t)BLOCK)
			fail("random read at %lu", off);
	}
	phase_end(&ph);
	close(fd);
}

/* --- network -------------------------------------------------------------------- */

static void set_ip(void)
{
	const char *spec = arg("carapace.ip", NULL);
	struct sockaddr_in *sin;
	struct ifreq ifr;
	char addr[32];
	unsigned prefix;
	const char *slash;
	int s;

	if (!spec || !(slash = strchr(spec, '/')) || slash - spec >= (long)sizeof(addr))
		fail("no carapace.ip=ADDR/PREFIX");
	memcpy(addr, spec, slash - spec);
	addr[slash - spec] = 0;
	prefix = strtoul(slash + 1, NULL, 10);
	if (prefix < 1 || prefix > 30)
		fail("bad prefix in carapace.ip");

	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		fail("socket");
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "eth0");
	sin = (struct sockaddr_in *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
		fail("bad address %s", addr);
	if (ioctl(s, SIOCSIFADDR, &ifr))
		fail("SIOCSIFADDR");
	sin->sin_addr.s_addr = htonl(~0u << (32 - prefix));
	if (ioctl(s, SIOCSIFNETMASK, &ifr))
		fail("SIOCSIFNETMASK");
	if (ioctl(s, SIOCGIFFLAGS, &ifr))
		fail("SIOCGIFFLAGS");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr))
		fail("SIOCSIFFLAGS");
	close(s);
}

static int connect_peer(void)
{
	const char *spec = arg("iobench.peer", NULL), *colon;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char addr[32];
	int tries, s;

	if (!spec || !(colon = strchr(spec, ':')) || colon - spec >= (long)sizeof(addr))
		fail("no iobench.peer=ADDR:PORT");
	memcpy(addr, spec, colon - spec);
	addr[colon - spec] = 0;
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		fail("bad peer address %s", addr);
	sin.sin_port = htons(strtoul(colon + 1, NULL, 10));
	/* the receiver may still be booting: 60 s of guest time */
	for (tries = 0; tries < 600; tries++) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0)
			fail("socket");
		if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) == 0)
			return s;
		close(s);
		sleep_ms(100);
	}
	fail("connect %s", spec);
	return -1;
}

/* Send MiB MiB, half-close, wait for the receiver's 8-byte count of them. */
static void tx(void)
{
	unsigned long mib = arg_num("iobench.mib", 64), total = mib * MIB, sent = 0;
	static char buf[65536];
	uint64_t got = 0;
	struct phase ph;
	size_t have = 0;
	int s;

	set_ip();
	requests = net_packets;
	memset(buf, 0xa5, sizeof(buf));
	s = connect_peer();
	phase_start(&ph, "net_tx");
	while (sent < total) {
		size_t n = total - sent < sizeof(buf) ? total - sent : sizeof(buf);
		ssize_t w = write(s, buf, n);

		if (w <= 0)
			fail("send after %lu bytes", sent);
		sent += w;
	}
	shutdown(s, SHUT_WR);
	while (have < sizeof(got)) {
		ssize_t r = read(s, (char *)&got + have, sizeof(got) - have);

		if (r <= 0)
			fail("no count from the receiver");
		have += r;
	}
	phase_end(&ph);
	close(s);
	if (got != total)
		fail("the receiver counted %lu bytes of %lu", (unsigned long)got, total);
	say("BENCH net_tx_bytes %lu", total);
}

/* Receive one transfer, answer its byte count (8 bytes, little-endian). */
static void rx(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = INADDR_ANY };
	static char buf[65536];
	uint64_t got = 0;
	int one = 1, l, s;
	ssize_t r;

	set_ip();
	sin.sin_port = htons(arg_num("iobench.port", 5001));
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 1))
		fail("listen");
	say("IOBENCH listening");
	s = accept(l, NULL, NULL);
	if (s < 0)
		fail("accept");
	while ((r = read(s, buf, sizeof(buf))) > 0)
		got += r;
	if (r < 0)
		fail("receive");
	if (write(s, &got, sizeof(got)) != sizeof(got))
		fail("answer");
	close(s);
	say("BENCH net_rx_bytes %lu", (unsigned long)got);
}

int main(void)
{
	char run[16];
	int fd;

	mkdir("/dev", 0755);
	mkdir("/proc", 0555);
	mkdir("/sys", 0555);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	console = open("/dev/console", O_WRONLY | O_NOCTTY);
	fd = open("/proc/cmdline", O_RDONLY);
	if (fd < 0 || read(fd, cmdline, sizeof(cmdline) - 1) <= 0)
		fail("read /proc/cmdline");
	close(fd);

	snprintf(run, sizeof(run), "%s", arg("iobench.run", ""));
	cal_ms = arg_num("iobench.cal_ms", 300);
	sync_ms = arg_num("iobench.sync_ms", 0);
	say("IOBENCH start %s", run);
	if (strcmp(run, "rx")) {
		start_spinner();
		/* the first window wakes the page cache and the spinner's pages */
		calibrate(cal_ms);
	}
	if (!strcmp(run, "disk"))
		disk();
	else if (!strcmp(run, "tx"))
		tx();
	else if (!strcmp(run, "rx"))
		rx();
	else
		fail("iobench.run=%s: not disk, tx or rx", run);
	say("IOBENCH done");
	power_off();
	return 0;
}
