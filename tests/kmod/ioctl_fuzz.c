// SPDX-License-Identifier: MIT
/*
 * ioctl_fuzz.c - hostile callers of /dev/gradnet, for a fixed time.
 *
 *   ioctl_fuzz [--seconds S] [--seed N] [--port P]
 *
 * Two threads call the module's ioctls (and poll, read, write) on a shared
 * set of files with random and boundary arguments: bad pointers (NULL,
 * kernel addresses, unmapped and read-only pages, structs that straddle a
 * hole), size fields of 0, too small, too large with zero or nonzero
 * tails, and huge; nonzero reserved fields and unknown flags; a wrong ABI;
 * calls out of order (REGISTER before OPEN, START on a tensor never
 * registered, OPEN twice); files closed and reopened while the other
 * thread uses them, and while it waits. Some files are joined into a real
 * two-rank job on 127.0.0.1 (both ranks in this process), so the calls
 * that need an open job reach their checks and valid allreduces finish;
 * a buffer is unmapped while its allreduce is in flight.
 *
 * A call that breaks a rule the UAPI states (nonzero reserved bytes, an
 * unknown flag, a nonzero tail beyond the struct, an unmapped struct, a
 * wrong ABI, an unknown command) must fail; one that succeeds is counted
 * and fails the run. The module must also never write past an errmsg
 * buffer's length (a canary follows it). What the kernel log says is
 * checked by the guest script (tests/kmod/cases/fuzz.sh).
 *
 * Output: TAP. Exit 0 if every check passed, 1 otherwise, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <gradnet/gradnet.h>
#include <linux/gradnet.h>

#define NSLOTS		6
#define ARENA		(4 * 4096)	/* a struct's room, zero-filled */
#define CANARY		0x5a
#define TENSOR_ELEMS	4099
#define MAX_IOC		8

struct rng {
	uint64_t s;
};

/* A file of the shared set; fd -1 when closed. */
struct slot {
	int fd;
	bool joined;		/* OPEN succeeded: part of a two-rank job */
};

static struct slot slots[NSLOTS];
static _Thread_local int last_kind;	/* mutate()'s last choice, for reports */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static uint16_t base_port = 47000;
static unsigned int job_seq;

/* Pages with known properties, set up once. */
static uint8_t *hole;		/* PROT_NONE */
static uint8_t *rdonly;		/* PROT_READ, zero */

struct counts {
	unsigned long calls, ok, err, must_fail, wrong_ok, canary, by_errno[140];
	unsigned long joined_ok, allreduce_ok, per_cmd_ok[MAX_IOC];
};

static uint64_t rnd(struct rng *r)
{
	uint64_t x = r->s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	r->s = x;
	return x;
}

static unsigned int below(struct rng *r, unsigned int n)
{
	return (unsigned int)(rnd(r) % n);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *map(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("ioctl_fuzz: mmap");
		exit(1);
	}
	return p;
}

static void pages_setup(void)
{
	hole = map(4096, PROT_NONE);
	rdonly = map(4096, PROT_READ);
}

/*
 * @len bytes followed by a PROT_NONE page, not an unmapped one: a later
 * mmap() could fill a hole, and a struct meant to straddle it would be
 * whole again.
 */
static uint8_t *guarded(size_t len)
{
	uint8_t *m = map(len + 4096, PROT_READ | PROT_WRITE);

	if (mprotect(m + len, 4096, PROT_NONE))
		exit(1);
	return m;
}

/*
 * The ioctls and their struct sizes. ERRMSG's and STATS's pointers are
 * outputs; the others' @data, @peers are inputs.
 */
static const struct {
	unsigned long cmd;
	uint32_t size;
} iocs[] = {
	{ GRADNET_IOC_OPEN, sizeof(struct gradnet_open) },
	{ GRADNET_IOC_REGISTER, sizeof(struct gradnet_tensor) },
	{ GRADNET_IOC_UNREGISTER, sizeof(struct gradnet_tensor) },
	{ GRADNET_IOC_START, sizeof(struct gradnet_start) },
	{ GRADNET_IOC_WAIT, sizeof(struct gradnet_wait) },
	{ GRADNET_IOC_STATS, sizeof(struct gradnet_stats) },
	{ GRADNET_IOC_ERRMSG, sizeof(struct gradnet_errmsg) },
	{ GRADNET_IOC_INFO, sizeof(struct gradnet_info) },
};
#define NIOC (sizeof(iocs) / sizeof(iocs[0]))

static const char *const ioc_names[] = {
	"OPEN", "REGISTER", "UNREGISTER", "START", "WAIT", "STATS", "ERRMSG", "INFO",
};

/*
 * Per-thread memory the structs and buffers live in. Its own edge page:
 * a struct another thread moved there could hand this one's call a size
 * that fits before the hole.
 */
struct arena {
	uint8_t *mem;		/* ARENA bytes, then a hole */
	uint8_t *edge;		/* a page, then a hole */
	uint8_t errbuf[GRADNET_ERRMSG_LEN + 64];
	uint64_t statbuf[600];
	float *tensor;		/* TENSOR_ELEMS floats */
	struct gradnet_peer peers[GRADNET_MAX_WORLD + 1];
};

static void arena_init(struct arena *a)
{
	a->mem = guarded(ARENA);
	a->edge = guarded(4096);
	a->tensor = map(TENSOR_ELEMS * sizeof(float), PROT_READ | PROT_WRITE);
}

/* A pointer value that is wrong in one of the ways a caller gets wrong. */
static uint64_t bad_ptr(struct rng *r, const struct arena *a)
{
	switch (below(r, 6)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return 0xffff888000000000ull;	/* the kernel's direct map */
	case 3: return (uint64_t)(uintptr_t)hole + below(r, 4096);
	case 4: return (uint64_t)(uintptr_t)(a->edge + 4096 - below(r, 8));
	default: return ~0ull - below(r, 4096);
	}
}

static void peer_fill(struct gradnet_peer *p, uint16_t port)
{
	memset(p, 0, sizeof(*p));
	p->family = 2;
	p->port = htons(port);
	p->addr[0] = 127;
	p->addr[3] = 1;
}

/* A plausible struct for @i in @a->mem, with sensible values. */
static void fill_valid(struct rng *r, struct arena *a, unsigned int i)
{
	uint8_t *m = a->mem;
	unsigned int k;

	memset(m, 0, ARENA);
	*(uint32_t *)m = iocs[i].size;
	switch (iocs[i].cmd) {
	case GRADNET_IOC_OPEN: {
		struct gradnet_open *o = (void *)m;

		o->abi = GRADNET_ABI_VERSION;
		o->world = 2 + below(r, 3);
		o->rank = below(r, o->world);
		o->job_id = (uint32_t)rnd(r);
		o->timeout_ms = 100 + below(r, 200);
		o->codec = below(r, 3);
		o->flags = below(r, 2) ? GRADNET_OPEN_INSECURE : 0;
		for (k = 0; k < o->world; k++)
			peer_fill(&a->peers[k], (uint16_t)(base_port + 100 +
							   below(r, 500)));
		o->peers = (uint64_t)(uintptr_t)a->peers;
		for (k = 0; k < GRADNET_KEY_LEN; k++)
			o->key[k] = (uint8_t)rnd(r);
		break;
	}
	case GRADNET_IOC_REGISTER:
	case GRADNET_IOC_UNREGISTER: {
		struct gradnet_tensor *t = (void *)m;

		t->id = below(r, 4);
		t->codec = below(r, 3);
		/* Parameter blocks a codec may refuse: wrong words, values
		 * out of range; REGISTER must say so, never misbehave. */
		if (below(r, 4) == 0) {
			t->given = (uint32_t)rnd(r);
			for (k = 0; k < GRADNET_PARAM_WORDS; k++)
				t->params[k] = below(r, 2) ? (uint32_t)rnd(r) :
					       0x3f800000u + below(r, 0x800000);
		}
		t->elems = iocs[i].cmd == GRADNET_IOC_REGISTER ?
			   1 + below(r, TENSOR_ELEMS) : 0;
		t->flags = below(r, 2) ? GRADNET_TENSOR_AVERAGE : 0;
		break;
	}
	case GRADNET_IOC_START: {
		struct gradnet_start *s = (void *)m;

		s->id = below(r, 4);
		s->data = (uint64_t)(uintptr_t)a->tensor;
		break;
	}
	case GRADNET_IOC_WAIT: {
		struct gradnet_wait *w = (void *)m;

		w->id = below(r, 4);
		w->timeout_ms = below(r, 3) ? below(r, 30) : 0;
		w->errmsg = below(r, 2) ? (uint64_t)(uintptr_t)a->errbuf : 0;
		break;
	}
	case GRADNET_IOC_STATS: {
		struct gradnet_stats *s = (void *)m;

		s->scope = below(r, 3);
		s->key = s->scope == GRADNET_STATS_TENSOR ? below(r, 4) : below(r, 2);
		s->len = 8 * (1 + below(r, 64));
		s->buf = (uint64_t)(uintptr_t)a->statbuf;
		break;
	}
	case GRADNET_IOC_ERRMSG: {
		struct gradnet_errmsg *e = (void *)m;

		e->len = 1 + below(r, GRADNET_ERRMSG_LEN);
		e->buf = (uint64_t)(uintptr_t)a->errbuf;
		break;
	}
	}
}

/* Offsets of the reserved bytes of @cmd's struct, and of its flags. */
static int reserved_off(unsigned long cmd, unsigned int *off, unsigned int *len)
{
	switch (cmd) {
	case GRADNET_IOC_OPEN:
		*off = offsetof(struct gradnet_open, reserved);
		*len = sizeof(((struct gradnet_open *)0)->reserved);
		return 0;
	case GRADNET_IOC_REGISTER:
	case GRADNET_IOC_UNREGISTER:
		*off = offsetof(struct gradnet_tensor, reserved);
		*len = sizeof(((struct gradnet_tensor *)0)->reserved);
		return 0;
	case GRADNET_IOC_START:
		*off = offsetof(struct gradnet_start, reserved0);
		*len = sizeof(((struct gradnet_start *)0)->reserved0);
		return 0;
	case GRADNET_IOC_WAIT:
		*off = offsetof(struct gradnet_wait, reserved);
		*len = sizeof(((struct gradnet_wait *)0)->reserved);
		return 0;
	case GRADNET_IOC_STATS:
		*off = offsetof(struct gradnet_stats, reserved);
		*len = sizeof(((struct gradnet_stats *)0)->reserved);
		return 0;
	case GRADNET_IOC_ERRMSG:
		*off = offsetof(struct gradnet_errmsg, reserved);
		*len = sizeof(((struct gradnet_errmsg *)0)->reserved);
		return 0;
	}
	return -1;
}

/* One bit that @known does not define, so the UAPI refuses it. */
static uint32_t unknown_bit(struct rng *r, uint32_t known)
{
	uint32_t bit;

	do
		bit = 1u << below(r, 32);
	while (bit & known);
	return bit;
}

/*
 * Break @a->mem's struct in one way; returns true if the UAPI says the
 * call must then fail whatever the file's state. @ptr may be replaced.
 */
static bool mutate(struct rng *r, struct arena *a, unsigned int i, uint64_t *ptr,
		   unsigned long *cmd)
{
	uint8_t *m = a->mem;
	uint32_t *size = (uint32_t *)m, sz = iocs[i].size;
	unsigned int off, len;

	last_kind = (int)below(r, 14);
	switch (last_kind) {
	case 0:		/* reserved bytes */
		if (iocs[i].cmd == GRADNET_IOC_OPEN && below(r, 2)) {
			struct gradnet_open *o = (void *)m;

			if (below(r, 2))	/* the entropy word's unused bits */
				o->entropy = 1u << (16 + below(r, 16));
			else	/* the peers' */
				a->peers[below(r, o->world)].reserved = 1 + below(r, 9);
			return true;
		}
		if ((iocs[i].cmd == GRADNET_IOC_REGISTER ||
		     iocs[i].cmd == GRADNET_IOC_UNREGISTER) && below(r, 2)) {
			((struct gradnet_tensor *)m)->entropy = 1u << (16 + below(r, 16));
			return true;
		}
		if (reserved_off(iocs[i].cmd, &off, &len))
			return false;
		m[off + below(r, len)] = (uint8_t)(1 + below(r, 255));
		return true;
	case 1:		/* unknown flag bits */
		if (iocs[i].cmd == GRADNET_IOC_OPEN) {
			((struct gradnet_open *)m)->flags |= unknown_bit(r, GRADNET_OPEN_FLAGS);
			return true;
		}
		if (iocs[i].cmd == GRADNET_IOC_REGISTER) {
			((struct gradnet_tensor *)m)->flags |=
				unknown_bit(r, GRADNET_TENSOR_FLAGS);
			return true;
		}
		return false;
	case 2:		/* a nonzero tail beyond the struct */
		*size = sz + 8 * (1 + below(r, 16));
		m[sz + below(r, *size - sz)] = (uint8_t)(1 + below(r, 255));
		return true;
	case 3:		/* a zero tail: allowed */
		*size = sz + below(r, ARENA - sz);
		return false;
	case 4:		/* too small */
		*size = below(r, sz);
		return false;
	case 5:		/* huge: the tail runs into the hole */
		*size = below(r, 2) ? 0xffffffffu : ARENA + 1 + below(r, 1u << 20);
		return true;
	case 6:		/* the struct itself is not readable */
		*ptr = bad_ptr(r, a);	/* none has sz readable bytes */
		/*
		 * Up to 8 bytes before the hole are: a size there that the
		 * module accepts (INFO takes 4) and that fits them makes a
		 * valid call, and case 7 leaves structs on that page, so the
		 * outcome is not known.
		 */
		return !(*ptr >= (uint64_t)(uintptr_t)a->edge &&
			 *ptr + 4 <= (uint64_t)(uintptr_t)a->edge + 4096);
	case 7:		/* the struct straddles a hole */
		memmove(a->edge + 4096 - sz / 2, m, sz / 2);
		*ptr = (uint64_t)(uintptr_t)(a->edge + 4096 - sz / 2);
		return true;
	case 8:		/* a wrong ABI, or a wrong command number */
		if (iocs[i].cmd == GRADNET_IOC_OPEN) {
			((struct gradnet_open *)m)->abi =
				below(r, 2) ? 0 : GRADNET_ABI_VERSION + 1 + below(r, 9);
			return true;
		}
		*cmd = below(r, 2) ? _IOW(GRADNET_IOC_MAGIC, 9 + below(r, 200), struct gradnet_start) :
				     _IO(GRADNET_IOC_MAGIC, 0);
		return true;
	case 9:		/* random bytes everywhere after the size */
		for (off = 4; off < sz; off++)
			m[off] = (uint8_t)rnd(r);
		return false;
	case 10:	/* inner pointers gone bad */
		switch (iocs[i].cmd) {
		case GRADNET_IOC_OPEN:
			((struct gradnet_open *)m)->peers = bad_ptr(r, a);
			break;
		case GRADNET_IOC_START:
			((struct gradnet_start *)m)->data = below(r, 2) ?
				bad_ptr(r, a) : (uint64_t)(uintptr_t)rdonly;
			break;
		case GRADNET_IOC_WAIT:
			((struct gradnet_wait *)m)->errmsg = bad_ptr(r, a);
			break;
		case GRADNET_IOC_STATS:
			((struct gradnet_stats *)m)->buf = bad_ptr(r, a);
			break;
		case GRADNET_IOC_ERRMSG:
			((struct gradnet_errmsg *)m)->buf = bad_ptr(r, a);
			((struct gradnet_errmsg *)m)->len = 1 + below(r, 256);
			break;
		}
		return false;
	case 11:	/* boundary values of the numbers */
		switch (iocs[i].cmd) {
		case GRADNET_IOC_OPEN:
			if (below(r, 2)) {	/* the wire carries 32 bits */
				((struct gradnet_open *)m)->job_id |= 1ull << (32 + below(r, 32));
				return true;
			}
			((struct gradnet_open *)m)->world = below(r, 2) ? 0 : 0xffffffffu;
			((struct gradnet_open *)m)->rank = 0xffffffffu - below(r, 2);
			return true;
		case GRADNET_IOC_REGISTER:
			((struct gradnet_tensor *)m)->elems = below(r, 2) ? 0 :
				~0ull >> below(r, 30);
			((struct gradnet_tensor *)m)->codec = below(r, 2) ? 2 : 200 + below(r, 50);
			return false;
		case GRADNET_IOC_STATS:
			((struct gradnet_stats *)m)->len = below(r, 2) ? 4097 + below(r, 100000) :
				8 * (1 + below(r, 600)) + 1 + below(r, 7);
			return true;
		case GRADNET_IOC_ERRMSG:	/* 1..4096 */
			((struct gradnet_errmsg *)m)->len = below(r, 2) ? 0 :
				0xffffffffu - below(r, 2);
			return true;
		case GRADNET_IOC_WAIT:
			((struct gradnet_wait *)m)->timeout_ms = 0;
			return false;
		}
		return false;
	case 12:	/* output to a read-only page */
		if (iocs[i].cmd == GRADNET_IOC_ERRMSG) {
			((struct gradnet_errmsg *)m)->buf = (uint64_t)(uintptr_t)rdonly;
			((struct gradnet_errmsg *)m)->len = 64;
		} else if (iocs[i].cmd == GRADNET_IOC_STATS) {
			((struct gradnet_stats *)m)->buf = (uint64_t)(uintptr_t)rdonly;
		}
		return false;
	default:	/* as built: maybe valid */
		return false;
	}
}

static int slot_fd(unsigned int k)
{
	int fd;

	pthread_mutex_lock(&slots_lock);
	fd = slots[k].fd;
	pthread_mutex_unlock(&slots_lock);
	return fd;
}

static void note(struct counts *c, int rc, int err, bool must_fail, unsigned int i)
{
	c->calls++;
	if (rc == 0) {
		c->ok++;
		if (i < MAX_IOC)
			c->per_cmd_ok[i]++;
		if (must_fail) {
			c->wrong_ok++;
			if (c->wrong_ok <= 10)
				printf("# a call that must fail succeeded: ioctl %u (%s), mutation %d\n",
				       i + 1, i < MAX_IOC ? ioc_names[i] : "?", last_kind);
		}
		return;
	}
	c->err++;
	if (err > 0 && err < 140)
		c->by_errno[err]++;
}

static void check_canary(struct counts *c, struct arena *a, uint32_t len)
{
	unsigned int k;

	if (len >= GRADNET_ERRMSG_LEN)
		len = GRADNET_ERRMSG_LEN;
	for (k = len; k < sizeof(a->errbuf); k++)
		if (a->errbuf[k] != CANARY) {
			c->canary++;
			printf("# the module wrote byte %u of an errmsg buffer of %u\n",
			       k, len);
			return;
		}
}

/* One random ioctl on a random file of the set. */
static void fuzz_one(struct rng *r, struct arena *a, struct counts *c)
{
	unsigned int i = below(r, NIOC);
	uint64_t ptr = (uint64_t)(uintptr_t)a->mem;
	unsigned long cmd = iocs[i].cmd;
	bool must_fail = false;
	uint32_t errlen = GRADNET_ERRMSG_LEN;
	int fd = slot_fd(below(r, NSLOTS)), rc;

	fill_valid(r, a, i);
	last_kind = -1;
	if (below(r, 4))
		must_fail = mutate(r, a, i, &ptr, &cmd);
	if (cmd == GRADNET_IOC_ERRMSG && ptr == (uint64_t)(uintptr_t)a->mem &&
	    ((struct gradnet_errmsg *)a->mem)->buf == (uint64_t)(uintptr_t)a->errbuf)
		errlen = ((struct gradnet_errmsg *)a->mem)->len;
	memset(a->errbuf, CANARY, sizeof(a->errbuf));
	rc = ioctl(fd, cmd, (void *)(uintptr_t)ptr);
	note(c, rc, errno, must_fail, i);
	check_canary(c, a, errlen);
}

/* Rank 0 and rank 1 of one job, opened from two threads at once. */
struct join {
	int fd;
	uint32_t rank;
	uint64_t job;
	uint16_t port;
	int rc;
};

static void *join_thread(void *arg)
{
	struct join *j = arg;
	struct gradnet_peer peers[2];
	struct gradnet_open o = { .size = sizeof(o), .abi = GRADNET_ABI_VERSION,
				  .rank = j->rank, .world = 2, .job_id = j->job,
				  .timeout_ms = 2000, .codec = GN_CODEC_3LC };

	peer_fill(&peers[0], j->port);
	peer_fill(&peers[1], (uint16_t)(j->port + 1));
	o.peers = (uint64_t)(uintptr_t)peers;
	memcpy(o.key, "fuzzer job key!!", GRADNET_KEY_LEN);
	j->rc = ioctl(j->fd, GRADNET_IOC_OPEN, &o) ? -errno : 0;
	return NULL;
}

/* Put a joined pair into slots @a and @b; returns 0 if both joined. */
static int join_pair(unsigned int sa, unsigned int sb, struct counts *c)
{
	struct join j[2];
	pthread_t t[2];
	unsigned int k, s[2] = { sa, sb };
	sigset_t alrm, old;
	uint16_t port = (uint16_t)(base_port + 2 * (__atomic_fetch_add(&job_seq, 1,
							__ATOMIC_RELAXED) % 40));

	for (k = 0; k < 2; k++) {
		j[k] = (struct join){ .fd = open("/dev/gradnet", O_RDWR | O_CLOEXEC),
				      .rank = k, .job = 0xf022 + job_seq, .port = port };
		if (j[k].fd < 0)
			return -errno;
	}
	/* The handshake takes longer than the alarm's period under TCG:
	 * the joining threads do not take it. */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, &old);
	for (k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, join_thread, &j[k]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	pthread_mutex_lock(&slots_lock);
	for (k = 0; k < 2; k++) {
		if (slots[s[k]].fd >= 0)
			close(slots[s[k]].fd);
		slots[s[k]].fd = j[k].fd;
		slots[s[k]].joined = !j[k].rc;
	}
	pthread_mutex_unlock(&slots_lock);
	if (!j[0].rc && !j[1].rc)
		c->joined_ok++;
	return j[0].rc ? j[0].rc : j[1].rc;
}

/*
 * A valid allreduce on the pair in slots 0 and 1: register, start both,
 * wait both. Registering fails if the id is taken, which is fine. With
 * @unmap the buffers are unmapped while in flight.
 */
static void allreduce_pair(struct rng *r, struct counts *c, bool unmap)
{
	struct gradnet_tensor t = { .size = sizeof(t), .id = 50 + below(r, 2),
				    .codec = 1 + below(r, 2), .elems = TENSOR_ELEMS };
	struct gradnet_start s = { .size = sizeof(s), .id = t.id };
	struct gradnet_wait w = { .size = sizeof(w), .id = t.id, .timeout_ms = 3000 };
	float *buf[2];
	int fd[2], k, ok = 0;

	for (k = 0; k < 2; k++) {
		fd[k] = slot_fd((unsigned int)k);
		buf[k] = map(TENSOR_ELEMS * sizeof(float), PROT_READ | PROT_WRITE);
		buf[k][below(r, TENSOR_ELEMS)] = 1.0f;
		ioctl(fd[k], GRADNET_IOC_REGISTER, &t);
		s.data = (uint64_t)(uintptr_t)buf[k];
		ioctl(fd[k], GRADNET_IOC_START, &s);
	}
	for (k = 0; unmap && k < 2; k++) {
		munmap(buf[k], TENSOR_ELEMS * sizeof(float));
		buf[k] = NULL;
	}
	for (k = 0; k < 2; k++) {
		int rc;

		do	/* a signal leaves it running: wait again */
			rc = ioctl(fd[k], GRADNET_IOC_WAIT, &w);
		while (rc && errno == EINTR && !stop);
		if (!rc && !w.result)
			ok++;
	}
	if (ok == 2)
		c->allreduce_ok++;
	for (k = 0; k < 2; k++)
		if (buf[k])
			munmap(buf[k], TENSOR_ELEMS * sizeof(float));
}

/* Close a file (maybe while the other thread is in an ioctl on it). */
static void reopen(struct rng *r, unsigned int k)
{
	int fd = below(r, 8) ? open("/dev/gradnet", O_RDWR | O_CLOEXEC) : -1;

	pthread_mutex_lock(&slots_lock);
	if (slots[k].fd >= 0)
		close(slots[k].fd);
	slots[k].fd = fd;
	slots[k].joined = false;
	pthread_mutex_unlock(&slots_lock);
}

static void other_calls(struct rng *r, struct arena *a, struct counts *c)
{
	int fd = slot_fd(below(r, NSLOTS));
	struct pollfd p = { .fd = fd, .events = (short)rnd(r) };
	char buf[64];

	switch (below(r, 4)) {
	case 0:
		poll(&p, 1, (int)below(r, 20));
		break;
	case 1:
		note(c, (int)read(fd, buf, sizeof(buf)), errno, false, MAX_IOC);
		break;
	case 2:
		note(c, (int)write(fd, buf, sizeof(buf)), errno, false, MAX_IOC);
		break;
	default:
		/* A blocking WAIT the other thread may close under. */
		fill_valid(r, a, 4);
		((struct gradnet_wait *)a->mem)->timeout_ms = 50 + below(r, 200);
		note(c, ioctl(fd, GRADNET_IOC_WAIT, a->mem), errno, false, 4);
	}
}

struct worker {
	pthread_t t;
	struct rng r;
	struct arena a;
	struct counts c;
	bool chaos;		/* this one also closes, reopens and joins */
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;

	while (!stop) {
		unsigned int pick = below(&w->r, 100);

		if (pick < 80)
			fuzz_one(&w->r, &w->a, &w->c);
		else if (pick < 93)
			other_calls(&w->r, &w->a, &w->c);
		else if (w->chaos && pick < 96)
			reopen(&w->r, 2 + below(&w->r, NSLOTS - 2));
		else if (w->chaos && pick < 98)
			allreduce_pair(&w->r, &w->c, below(&w->r, 2));
		else if (w->chaos && !below(&w->r, 5))
			join_pair(0, 1, &w->c);
	}
	return NULL;
}

static void on_alarm(int sig)
{
	(void)sig;	/* interrupts blocking ioctls with -EINTR */
}

static void usage(void)
{
	fprintf(stderr, "usage: ioctl_fuzz [--seconds S] [--seed N] [--port P]\n");
	exit(2);
}

/* INFO before OPEN: the ABI this program was built for. */
static bool info_ok(int fd, char *line, size_t len)
{
	struct gradnet_info in = { .size = sizeof(in) };
	int rc = ioctl(fd, GRADNET_IOC_INFO, &in);

	snprintf(line, len, "INFO before OPEN: %s, abi %u (want %u), features 0x%llx",
		 rc ? strerror(errno) : "ok", in.abi, GRADNET_ABI_VERSION,
		 (unsigned long long)in.features);
	return !rc && in.abi == GRADNET_ABI_VERSION;
}

static void tap(int *n, int *failed, bool ok, const char *what)
{
	printf("%sok %d %s\n", ok ? "" : "not ", ++*n, what);
	*failed += !ok;
}

static void sum(struct counts *t, const struct counts *c)
{
	unsigned int k;

	t->calls += c->calls;
	t->ok += c->ok;
	t->err += c->err;
	t->wrong_ok += c->wrong_ok;
	t->canary += c->canary;
	t->joined_ok += c->joined_ok;
	t->allreduce_ok += c->allreduce_ok;
	for (k = 0; k < 140; k++)
		t->by_errno[k] += c->by_errno[k];
	for (k = 0; k < MAX_IOC; k++)
		t->per_cmd_ok[k] += c->per_cmd_ok[k];
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'r' },
		{ "port", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 70000 }, { 0, 70000 } };
	static struct worker w[2];
	struct counts tot = { 0 };
	double seconds = 20, until;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int c, k, n = 0, failed = 0, first_join;
	char line[160];

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': seconds = atof(optarg); break;
		case 'r': seed = strtoull(optarg, NULL, 0); break;
		case 'p': base_port = (uint16_t)atoi(optarg); break;
		default: usage();
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..7\n# seed %llu, %.0f s\n",
	       (unsigned long long)seed, seconds);
	pages_setup();
	for (k = 0; k < NSLOTS; k++)
		slots[k].fd = open("/dev/gradnet", O_RDWR | O_CLOEXEC);
	snprintf(line, sizeof(line), "/dev/gradnet opens (%s)",
		 slots[0].fd < 0 ? strerror(errno) : "ok");
	tap(&n, &failed, slots[0].fd >= 0, line);
	tap(&n, &failed, info_ok(slots[0].fd, line, sizeof(line)), line);
	first_join = join_pair(0, 1, &tot);
	snprintf(line, sizeof(line), "two files join a two-rank job on 127.0.0.1 (%s)",
		 first_join ? strerror(-first_join) : "ok");
	tap(&n, &failed, !first_join, line);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (k = 0; k < 2; k++) {
		w[k].r.s = seed + (uint64_t)k * 0x1000193;
		w[k].chaos = k == 1;
		arena_init(&w[k].a);
		pthread_create(&w[k].t, NULL, worker_run, &w[k]);
	}
	until = now() + seconds;
	while (now() < until)
		usleep(100000);
	stop = 1;
	for (k = 0; k < 2; k++) {
		pthread_join(w[k].t, NULL);
		sum(&tot, &w[k].c);
	}
	it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (k = 0; k < NSLOTS; k++)
		if (slots[k].fd >= 0)
			close(slots[k].fd);
	printf("# %lu calls: %lu succeeded, %lu failed; %lu joins, %lu allreduces finished\n",
	       tot.calls, tot.ok, tot.err, tot.joined_ok, tot.allreduce_ok);
	for (k = 0; k < (int)NIOC; k++)
		printf("# ioctl %d succeeded %lu times\n", k + 1, tot.per_cmd_ok[k]);
	for (k = 1; k < 140; k++)
		if (tot.by_errno[k])
			printf("# %s: %lu\n", strerror(k), tot.by_errno[k]);
	snprintf(line, sizeof(line), "%lu calls in %.0f s", tot.calls, seconds);
	tap(&n, &failed, tot.calls > 1000, line);
	snprintf(line, sizeof(line), "every call that breaks a UAPI rule failed (%lu did not)",
	       tot.wrong_ok);
	tap(&n, &failed, !tot.wrong_ok, line);
	snprintf(line, sizeof(line), "no write past an errmsg buffer's length (%lu)", tot.canary);
	tap(&n, &failed, !tot.canary, line);
	snprintf(line, sizeof(line), "valid calls succeed: %lu allreduces on the joined pair finished",
		 tot.allreduce_ok);
	tap(&n, &failed, tot.allreduce_ok > 0, line);
	return failed ? 1 : 0;
}
