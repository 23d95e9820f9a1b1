// SPDX-License-Identifier: MIT
/*
 * numstream.c: a numbered, checksummed stream of messages over TCP whose
 * order the application itself checks, for tests of guests whose network
 * I/O goes on while one end is snapshotted and restored (issue 25; the
 * protocol is docs/testing.md's "The numstream test").
 *
 *   numstream send HOST PORT [--rate R] [--count N] [--stall S]
 *       connects to HOST:PORT and sends messages 0, 1, 2, ... (R a second
 *       at most, default 200, 0: as fast as the window lets it; with
 *       --count it stops after message N-1, else never); prints
 *       "numstream: all N acknowledged" when the receiver has them all, and
 *       stays (a receiver restored to an earlier instant may ask for them
 *       again) until the VM stops
 *   numstream recv PORT [--count N] [--every K]
 *       accepts connections on PORT and checks that the messages arrive in
 *       order, each once and right; prints "numstream: got N in order"
 *       whenever messages 0..N-1 are in and N is a multiple of K (default
 *       50), "numstream: done: N messages, 0..N-1 in order, over C
 *       connections" when message N-1 is (and stays: a sender restored
 *       to an earlier instant comes back), and "numstream: FAIL ..." (exit
 *       1) at the first one out of order or wrong
 *
 * Why the application numbers its messages when TCP already does: TCP's
 * in-order, exactly-once delivery holds only while both ends keep their
 * connection's state. A restore puts one end back to the snapshot instant,
 * its kernel's TCP state (sequence numbers, what it buffered, the
 * timestamps' clock) and its application's counters alike, while the other
 * end went on with the original. A receiver restored so expects bytes its
 * original had acknowledged: the sender never sends them again, the
 * receiver never takes what follows them, and the connection stalls with
 * no error on either side. A sender restored so sends again bytes the
 * receiver has, with older timestamps (PAWS drops them), and the receiver's
 * acknowledgements lie beyond anything it sent. Each end's application
 * state still matches its own TCP state, so the application's numbers are
 * the truth: on each connection the receiver first says which number it
 * wants next, and the sender (which can make any message again: a message
 * is a function of its number) goes on from there. The sender takes a
 * connection on which it waited STALL seconds (default 3) for an
 * acknowledgement in vain as broken, like one that failed, and opens
 * another; the receiver takes each new connection's hello as the end of
 * the connection before it.
 *
 * The wire (little-endian). Sender to receiver, 64-byte frames: magic
 * (u32: "NSHI" hello, "NSMG" message, "NSPG" ping), 0 (u32), a number
 * (u64: a message's own; the one the sender would send next in a hello or
 * a ping), 44 bytes of payload (the splitmix64 stream seeded with the
 * number, as u64 words, the last one cut short), CRC32 (IEEE, zlib's) of
 * the 60 bytes before it. Receiver to sender, 16-byte frames: magic (u32:
 * "NSRS" resume, the answer to a hello; "NSAK" acknowledgement), the number
 * it wants next (u64), CRC32 of the 12 bytes before it. The receiver
 * acknowledges after each read that brought messages or a ping; the sender
 * pings once a second when it has sent nothing else, so that it also
 * notices a stalled connection when it has nothing left to send.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "wire.h"

#define MSG_SIZE	64		/* sender to receiver */
#define MSG_HEADER	16		/* magic, 0, number */
#define CTL_SIZE	16		/* receiver to sender */
#define MAGIC_HELLO	0x4948534eu	/* "NSHI" as it lies on the wire */
#define MAGIC_DATA	0x474d534eu	/* "NSMG" */
#define MAGIC_PING	0x4750534eu	/* "NSPG" */
#define MAGIC_RESUME	0x5352534eu	/* "NSRS" */
#define MAGIC_ACK	0x4b41534eu	/* "NSAK" */
#define RATE_DEFAULT	200
#define EVERY_DEFAULT	50
#define STALL_DEFAULT	3
#define WINDOW		64		/* messages sent and not yet acknowledged, at most */
#define PING_NS		1000000000LL	/* a ping after this long without sending */
#define CONNECT_NS	2000000000LL	/* one connection attempt */
#define HELLO_S		2		/* the receiver's wait for a new connection's hello */
#define NS		1000000000LL

/* A sender-to-receiver frame: @magic, number @n, its payload, the CRC. */
static void msg_build(uint8_t *m, uint32_t magic, uint64_t n)
{
	uint64_t state = n;

	put_le(m, magic, 4);
	put_le(m + 4, 0, 4);
	put_le(m + 8, n, 8);
	for (int off = MSG_HEADER; off < MSG_SIZE - 4; off += 8) {
		uint8_t w[8];

		put_le(w, splitmix64(&state), 8);
		memcpy(m + off, w, MSG_SIZE - 4 - off < 8 ? (size_t)(MSG_SIZE - 4 - off) : 8);
	}
	put_le(m + MSG_SIZE - 4, crc32(m, MSG_SIZE - 4), 4);
}

/* What is wrong with @m as a frame (any kind), or NULL; @why gets the words. */
static const char *msg_fault(const uint8_t *m, char *why, size_t whylen)
{
	uint32_t magic = (uint32_t)get_le(m, 4);
	uint32_t crc = (uint32_t)get_le(m + MSG_SIZE - 4, 4);
	uint8_t want[MSG_SIZE];

	if (magic != MAGIC_HELLO && magic != MAGIC_DATA && magic != MAGIC_PING) {
		snprintf(why, whylen, "bad magic %08x", magic);
		return why;
	}
	if (crc32(m, MSG_SIZE - 4) != crc) {
		snprintf(why, whylen, "CRC wrong (message %llu: stored %08x, computed %08x)",
			 (unsigned long long)get_le(m + 8, 8), crc, crc32(m, MSG_SIZE - 4));
		return why;
	}
	msg_build(want, magic, get_le(m + 8, 8));
	if (memcmp(m, want, MSG_SIZE)) {
		snprintf(why, whylen, "payload wrong (message %llu)",
			 (unsigned long long)get_le(m + 8, 8));
		return why;
	}
	return NULL;
}

static void ctl_build(uint8_t *c, uint32_t magic, uint64_t next)
{
	put_le(c, magic, 4);
	put_le(c + 4, next, 8);
	put_le(c + 12, crc32(c, 12), 4);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NS + ts.tv_nsec;
}

static void sleep_ns(long long ns)
{
	struct timespec ts = { ns / NS, ns % NS };

	while (ns > 0 && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The whole of @buf, or -1 (errno set; EAGAIN: the send timeout ran out).
 * MSG_NOSIGNAL: a peer gone is an error to handle, not a SIGPIPE. */
static int send_all(int fd, const uint8_t *buf, size_t n)
{
	while (n) {
		ssize_t got = send(fd, buf, n, MSG_NOSIGNAL);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got == 0)
				errno = EPIPE;
			return -1;
		}
		buf += got;
		n -= (size_t)got;
	}
	return 0;
}

static void set_timeouts(int fd, int seconds)
{
	struct timeval tv = { seconds, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* --- the receiver ------------------------------------------------------------ */

struct receiver {
	uint64_t next;		/* the number it wants next: 0..next-1 are in */
	uint64_t received;	/* messages taken, counted apart from next */
	uint64_t count;		/* the last is count-1; 0: no end */
	uint64_t every;
	unsigned int conns;
	int fd;			/* the current connection, -1: none */
	uint8_t buf[MSG_SIZE * 64];
	size_t have;		/* bytes of buf not yet taken (a frame's start) */
};

static void recv_drop(struct receiver *r, const char *why)
{
	printf("numstream: connection %u %s\n", r->conns, why);
	close(r->fd);
	r->fd = -1;
	r->have = 0;
}

/* Reads the hello of a connection just accepted: 0 and the sender's
 * number, or -1 (@why set). */
static int read_hello(int fd, uint64_t *sender_at, char *why, size_t whylen)
{
	uint8_t m[MSG_SIZE];
	size_t have = 0;

	while (have < MSG_SIZE) {
		ssize_t got = recv(fd, m + have, MSG_SIZE - have, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			snprintf(why, whylen, "no hello (%s)", got ? strerror(errno) : "closed");
			return -1;
		}
		have += (size_t)got;
	}
	if (msg_fault(m, why, whylen))
		return -1;
	if (get_le(m, 4) != MAGIC_HELLO) {
		snprintf(why, whylen, "no hello (magic %08x)", (uint32_t)get_le(m, 4));
		return -1;
	}
	*sender_at = get_le(m + 8, 8);
	return 0;
}

/* A new connection from the listening socket @lfd: once its hello is in, it
 * replaces the current one (whose unread bytes go with it: the sender sends
 * them again from the number this one resumes at). */
static void recv_accept(struct receiver *r, int lfd)
{
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);
	char why[160], addr[INET_ADDRSTRLEN] = "?";
	uint8_t c[CTL_SIZE];
	uint64_t sender_at;
	int fd = accept(lfd, (struct sockaddr *)&peer, &len);

	if (fd < 0)
		return;
	inet_ntop(AF_INET, &peer.sin_addr, addr, sizeof(addr));
	set_timeouts(fd, HELLO_S);
	if (read_hello(fd, &sender_at, why, sizeof(why))) {
		printf("numstream: connection from %s:%u refused: %s\n", addr,
		       ntohs(peer.sin_port), why);
		close(fd);
		return;
	}
	if (r->fd >= 0)
		recv_drop(r, "replaced by a new one");
	r->fd = fd;
	r->conns++;
	printf("numstream: connection %u from %s:%u, resuming at %llu (the sender was at %llu)\n",
	       r->conns, addr, ntohs(peer.sin_port), (unsigned long long)r->next,
	       (unsigned long long)sender_at);
	ctl_build(c, MAGIC_RESUME, r->next);
	if (send_all(fd, c, sizeof(c)))
		recv_drop(r, "lost before the resume went out");
}

/* Takes frame @m: 0, or -1 after a FAIL line. */
static int recv_frame(struct receiver *r, const uint8_t *m)
{
	char why[160];
	uint64_t n = get_le(m + 8, 8);

	if (msg_fault(m, why, sizeof(why))) {
		printf("numstream: FAIL at message %llu: %s\n", (unsigned long long)r->next, why);
		return -1;
	}
	switch (get_le(m, 4)) {
	case MAGIC_PING:
		return 0;
	case MAGIC_HELLO:
		printf("numstream: FAIL at message %llu: a hello inside connection %u\n",
		       (unsigned long long)r->next, r->conns);
		return -1;
	}
	if (n > r->next) {
		printf("numstream: FAIL at message %llu: gap: message %llu where %llu belongs "
		       "(%llu missing)\n", (unsigned long long)r->next, (unsigned long long)n,
		       (unsigned long long)r->next, (unsigned long long)(n - r->next));
		return -1;
	}
	if (n < r->next) {
		printf("numstream: FAIL at message %llu: message %llu again where %llu belongs\n",
		       (unsigned long long)r->next, (unsigned long long)n,
		       (unsigned long long)r->next);
		return -1;
	}
	if (r->count && n >= r->count) {
		printf("numstream: FAIL at message %llu: past the last (%llu)\n",
		       (unsigned long long)n, (unsigned long long)r->count - 1);
		return -1;
	}
	r->next++;
	r->received++;
	if (r->next % r->every == 0)
		printf("numstream: got %llu in order\n", (unsigned long long)r->next);
	if (r->count && r->next == r->count) {
		if (r->received != r->next) {
			printf("numstream: FAIL at message %llu: %llu received\n",
			       (unsigned long long)r->next, (unsigned long long)r->received);
			return -1;
		}
		printf("numstream: done: %llu messages, 0..%llu in order, over %u connections\n",
		       (unsigned long long)r->received, (unsigned long long)r->next - 1, r->conns);
	}
	return 0;
}

/* Reads what the current connection has: 0, or -1 after a FAIL line. */
static int recv_read(struct receiver *r)
{
	uint8_t c[CTL_SIZE];
	size_t off = 0;
	int frames = 0;
	ssize_t got = recv(r->fd, r->buf + r->have, sizeof(r->buf) - r->have, MSG_DONTWAIT);

	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (got <= 0) {
		char why[96];

		snprintf(why, sizeof(why), "lost (%s)", got ? strerror(errno) : "closed by the sender");
		recv_drop(r, why);
		return 0;
	}
	r->have += (size_t)got;
	for (; r->have - off >= MSG_SIZE; off += MSG_SIZE, frames++)
		if (recv_frame(r, r->buf + off))
			return -1;
	memmove(r->buf, r->buf + off, r->have - off);
	r->have -= off;
	if (frames) {
		ctl_build(c, MAGIC_ACK, r->next);
		if (send_all(r->fd, c, sizeof(c)))
			recv_drop(r, "lost (an acknowledgement did not go out)");
	}
	return 0;
}

static int receive(unsigned int port, uint64_t count, uint64_t every)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	static struct receiver r;
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);

	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 4)) {
		printf("numstream: FAIL: cannot listen on port %u: %s\n", port, strerror(errno));
		return 1;
	}
	r.count = count;
	r.every = every;
	r.fd = -1;
	printf("numstream: receiving on port %u%s\n", port, count ? "" : ", no end");
	for (;;) {
		struct pollfd p[2] = { { lfd, POLLIN, 0 }, { r.fd, POLLIN, 0 } };

		if (poll(p, r.fd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			printf("numstream: FAIL: poll: %s\n", strerror(errno));
			return 1;
		}
		/* the current connection's bytes first: a replacement comes after them */
		if (r.fd >= 0 && p[1].revents && recv_read(&r))
			return 1;
		if (p[0].revents & POLLIN)
			recv_accept(&r, lfd);
	}
}

/* --- the sender -------------------------------------------------------------- */

struct sender {
	struct sockaddr_in to;
	const char *name;	/* HOST:PORT, for the lines */
	uint64_t sent;		/* the number it sends next */
	uint64_t acked;		/* the receiver has 0..acked-1 (it said so) */
	uint64_t count;		/* the last is count-1; 0: no end */
	long long period;	/* ns between messages, 0: no pause */
	long long stall;	/* ns without an acknowledgement that break a connection */
	unsigned int conns;
	int fd;
	long long waiting;	/* since when it waits for an acknowledgement, 0: it does not */
	long long last_tx, due;
	int all_said;		/* "all N acknowledged" said since the last resume */
	uint8_t in[CTL_SIZE * 64];
	size_t have;
};

static void send_drop(struct sender *s, const char *why)
{
	printf("numstream: connection %u %s, reconnecting\n", s->conns, why);
	close(s->fd);
	s->fd = -1;
	s->have = 0;
}

/* One connection attempt of at most CONNECT_NS: the socket, or -1. */
static int connect_once(struct sender *s, char *why, size_t whylen)
{
	struct pollfd p;
	int err = 0;
	socklen_t len = sizeof(err);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	if (fd < 0) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&s->to, sizeof(s->to)) && errno != EINPROGRESS) {
		snprintf(why, whylen, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	p = (struct pollfd){ fd, POLLOUT, 0 };
	if (poll(&p, 1, (int)(CONNECT_NS / 1000000)) != 1) {
		snprintf(why, whylen, "no answer in %lld s", CONNECT_NS / NS);
		close(fd);
		return -1;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	if (err) {
		snprintf(why, whylen, "%s", strerror(err));
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/* Reads exactly @n bytes within the socket's receive timeout: 0 or -1. */
static int read_exact(int fd, uint8_t *buf, size_t n)
{
	while (n) {
		ssize_t got = recv(fd, buf, n, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		buf += got;
		n -= (size_t)got;
	}
	return 0;
}

/* Connects (again and again until it works), says hello and takes the
 * receiver's number: the stream goes on from there. 0, or -1 after a FAIL
 * line. */
static int send_connect(struct sender *s)
{
	long long quiet_until = 0;
	char why[160];

	for (;;) {
		uint8_t m[MSG_SIZE], c[CTL_SIZE];
		uint64_t next;
		int fd = connect_once(s, why, sizeof(why));

		if (fd >= 0) {
			set_timeouts(fd, (int)(s->stall / NS));
			msg_build(m, MAGIC_HELLO, s->sent);
			if (send_all(fd, m, sizeof(m)) || read_exact(fd, c, sizeof(c))) {
				snprintf(why, sizeof(why), "no resume (%s)",
					 errno == EAGAIN ? "timed out" : strerror(errno));
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0) {
			/* the peer may be away for a while (destroyed, not yet restored) */
			if (now_ns() >= quiet_until) {
				printf("numstream: cannot connect to %s: %s (retrying)\n", s->name, why);
				quiet_until = now_ns() + 10 * NS;
			}
			sleep_ns(NS / 5);
			continue;
		}
		next = get_le(c + 4, 8);
		if (get_le(c, 4) != MAGIC_RESUME || get_le(c + 12, 4) != crc32(c, 12)) {
			printf("numstream: FAIL: connection %u: no resume in the receiver's first "
			       "frame (magic %08x)\n", s->conns + 1, (uint32_t)get_le(c, 4));
			return -1;
		}
		if (s->count && next > s->count) {
			printf("numstream: FAIL: connection %u: resume at %llu, past the last (%llu)\n",
			       s->conns + 1, (unsigned long long)next,
			       (unsigned long long)s->count - 1);
			return -1;
		}
		s->conns++;
		printf("numstream: connection %u to %s, resuming at %llu (had sent %llu, "
		       "acknowledged %llu)\n", s->conns, s->name, (unsigned long long)next,
		       (unsigned long long)s->sent, (unsigned long long)s->acked);
		/* any number: a restored receiver may want what it had, the one
		 * beside a restored sender what this one never sent */
		s->sent = s->acked = next;
		s->all_said = 0;
		s->fd = fd;
		s->have = 0;
		s->waiting = 0;
		s->last_tx = s->due = now_ns();
		return 0;
	}
}

/* Takes the acknowledgements that came: 0, or -1 after a FAIL line. */
static int send_read_acks(struct sender *s)
{
	size_t off = 0;
	ssize_t got = recv(s->fd, s->in + s->have, sizeof(s->in) - s->have, MSG_DONTWAIT);

	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (got <= 0) {
		char why[96];

		snprintf(why, sizeof(why), "lost (%s)", got ? strerror(errno) : "closed by the receiver");
		send_drop(s, why);
		return 0;
	}
	s->have += (size_t)got;
	for (; s->have - off >= CTL_SIZE; off += CTL_SIZE) {
		const uint8_t *c = s->in + off;
		uint64_t next = get_le(c + 4, 8);

		if (get_le(c, 4) != MAGIC_ACK || get_le(c + 12, 4) != crc32(c, 12)) {
			printf("numstream: FAIL: connection %u: a bad acknowledgement (magic %08x)\n",
			       s->conns, (uint32_t)get_le(c, 4));
			return -1;
		}
		/* within one connection TCP keeps them in order */
		if (next < s->acked || next > s->sent) {
			printf("numstream: FAIL: connection %u: acknowledgement of %llu, outside "
			       "%llu..%llu\n", s->conns, (unsigned long long)next,
			       (unsigned long long)s->acked, (unsigned long long)s->sent);
			return -1;
		}
		s->acked = next;
		s->waiting = s->acked == s->sent ? 0 : now_ns();
		if (s->count && s->acked == s->count && !s->all_said) {
			printf("numstream: all %llu acknowledged\n", (unsigned long long)s->count);
			s->all_said = 1;
		}
	}
	memmove(s->in, s->in + off, s->have - off);
	s->have -= off;
	return 0;
}

/* Sends frame @magic @n on the current connection: 0, or -1 (dropped). */
static int send_frame(struct sender *s, uint32_t magic, uint64_t n)
{
	uint8_t m[MSG_SIZE];

	msg_build(m, magic, n);
	if (send_all(s->fd, m, sizeof(m))) {
		char why[96];

		snprintf(why, sizeof(why), "lost (%s)", strerror(errno));
		send_drop(s, why);
		return -1;
	}
	s->last_tx = now_ns();
	if (!s->waiting)
		s->waiting = s->last_tx;
	return 0;
}

static int transmit(struct sender *s)
{
	printf("numstream: sending to %s, %lld a second%s\n", s->name,
	       s->period ? NS / s->period : 0, s->period ? "" : " (no pause)");
	s->fd = -1;
	for (;;) {
		long long now, wake;
		struct pollfd p;

		if (s->fd < 0 && send_connect(s))
			return 1;
		now = now_ns();
		while ((!s->count || s->sent < s->count) && s->sent - s->acked < WINDOW &&
		       now >= s->due) {
			if (send_frame(s, MAGIC_DATA, s->sent))
				break;
			s->sent++;
			/* behind by more than a message (it waited for the window):
			 * the rate again from now, no burst to catch up */
			s->due += s->period;
			if (s->due < now - s->period)
				s->due = now;
		}
		if (s->fd < 0)
			continue;
		if (now - s->last_tx >= PING_NS && send_frame(s, MAGIC_PING, s->sent))
			continue;
		if (s->waiting && now - s->waiting >= s->stall) {
			char why[96];

			snprintf(why, sizeof(why), "stalled (no acknowledgement for %lld s)",
				 s->stall / NS);
			send_drop(s, why);
			continue;
		}
		wake = s->last_tx + PING_NS;
		if (s->waiting && s->waiting + s->stall < wake)
			wake = s->waiting + s->stall;
		if ((!s->count || s->sent < s->count) && s->sent - s->acked < WINDOW && s->due < wake)
			wake = s->due;
		p = (struct pollfd){ s->fd, POLLIN, 0 };
		if (poll(&p, 1, wake > now ? (int)((wake - now) / 1000000) + 1 : 0) > 0 &&
		    send_read_acks(s))
			return 1;
	}
}

/* --- the command line -------------------------------------------------------- */

static int usage(void)
{
	printf("usage: numstream send HOST PORT [--rate R] [--count N] [--stall S]\n"
	       "       numstream recv PORT [--count N] [--every K]\n");
	return 2;
}

/* A decimal number in [lo, hi], or -1. */
static long long number(const char *s, long long lo, long long hi)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	long long rate = RATE_DEFAULT, count = 0, every = EVERY_DEFAULT, stall = STALL_DEFAULT;
	long long port;
	int sending, first, i;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* one line at a time to the console */
	crc32_init();
	if (argc < 3)
		return usage();
	sending = !strcmp(argv[1], "send");
	if (!sending && strcmp(argv[1], "recv"))
		return usage();
	first = sending ? 4 : 3;
	if (argc < first)
		return usage();
	port = number(argv[first - 1], 1, 65535);
	for (i = first; i < argc; i += 2) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		long long *to = NULL, lo = 0, hi = 0;

		if (!strcmp(opt, "--count"))
			to = &count, lo = 1, hi = 1LL << 40;
		else if (sending && !strcmp(opt, "--rate"))
			to = &rate, lo = 0, hi = 100000;
		else if (sending && !strcmp(opt, "--stall"))
			to = &stall, lo = 1, hi = 600;
		else if (!sending && !strcmp(opt, "--every"))
			to = &every, lo = 1, hi = 1LL << 40;
		if (!to || !val)
			return usage();
		*to = number(val, lo, hi);
		if (*to < 0) {
			printf("numstream: bad %s %s\n", opt, val);
			return 2;
		}
	}
	if (port < 0) {
		printf("numstream: bad port %s\n", argv[first - 1]);
		return 2;
	}
	if (sending) {
		static struct sender s;
		static char name[64];

		s.to.sin_family = AF_INET;
		s.to.sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, argv[2], &s.to.sin_addr) != 1) {
			printf("numstream: bad address %s\n", argv[2]);
			return 2;
		}
		snprintf(name, sizeof(name), "%s:%lld", argv[2], port);
		s.name = name;
		s.count = (uint64_t)count;
		s.period = rate ? NS / rate : 0;
		s.stall = stall * NS;
		return transmit(&s);
	}
	return receive((unsigned int)port, (uint64_t)count, (uint64_t)every);
}
