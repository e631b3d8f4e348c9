// SPDX-License-Identifier: MIT
/*
 * kmod_limits.c - an unprivileged user of /dev/gradnet who asks for more
 * than the module gives: what the module charges to the caller and where
 * it refuses, against the UAPI header alone.
 *
 *   kmod_limits memcg --uid U --cgroup DIR --elems N --tries K
 *   kmod_limits tensors --uid U --max M
 *   kmod_limits bytes --uid U --mib B
 *   kmod_limits contexts --uid U --other V --max M
 *   kmod_limits pins --uid U
 *   kmod_limits mappings --uid U --ramfs DIR [--hugetlb]
 *
 * It starts as root and becomes uid U (and gid U, no groups, so no
 * capability either) before it opens the device; memcg first moves itself
 * into the memory cgroup DIR, whose memory.max the caller set. Every
 * context is a job on 127.0.0.1 without a key: one rank (world 1), or two
 * ranks in this process (pins). The module's parameters the checks
 * depend on (max_tensors, max_context_mib, max_contexts_per_user) are set
 * by the caller, as root, before.
 *
 * memcg: REGISTER 3LC tensors of N values until one is refused (at most
 *	K): refused with ENOMEM and a message naming memory.max; the
 *	cgroup's memory.current and memory.stat's kernel rose by most of
 *	the tensors' error feedback at least (12 of its 16 bytes a value
 *	with one rank: the cgroup may have charged a per-CPU stock ahead);
 *	no OOM kill, in the cgroup or anywhere; closing gives it back.
 * tensors: M tensors register, the next is refused with EMFILE naming
 *	max_tensors; after an UNREGISTER one registers again.
 * bytes: a tensor over max_context_mib (B MiB) is refused with EDQUOT
 *	naming it; the context still registers and allreduces a small one.
 * contexts: uid U opens M contexts, the next OPEN is refused with EMFILE
 *	naming max_contexts_per_user, while uid V still opens one; after a
 *	close U opens again.
 * pins: with RLIMIT_MEMLOCK 64 KiB, a START of 128 KiB is refused with
 *	ENOMEM naming RLIMIT_MEMLOCK, one of 32 KiB runs and shows in VmPin
 *	(also after munmap), a second context of the same user cannot pin
 *	48 KiB more; with RLIMIT_MEMLOCK 0, EPERM; rank 1 never starts the
 *	32 KiB tensor, its step times out and once poll() says so, before
 *	any WAIT, VmPin is 0. Then with 24 MiB, a 16 MiB buffer is pinned
 *	and unmapped, its step times out, and once poll() says so the
 *	kernel's own count of pinned pages (/proc/vmstat) is back where it
 *	was; WAIT gives -ETIMEDOUT.
 * mappings: START runs on private and shared anonymous memory, a memfd
 *	and (--hugetlb) MAP_HUGETLB, with the allreduce's result; it is
 *	refused with EOPNOTSUPP naming the filesystem on a shared and on a
 *	private mapping of a ramfs file (DIR), and on a buffer that only
 *	ends in one.
 *
 * Output: TAP lines without numbers ("ok - ...", "not ok - ...") and "#"
 * comments, as the guest's cases print them. Exit 0 if every check
 * passed, 1 if one failed, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gradnet/gradnet.h>
#include <linux/gradnet.h>

#define PORT		7700
#define KIB		1024ul
#define MIB		(1024ul * 1024)

static int failures;
static const char *subject = "";

static void check(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok - %s", ok ? "" : "not ", subject);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failures += !ok;
}

static void die(const char *what)
{
	printf("not ok - %s%s: %s\n", subject, what, strerror(errno));
	exit(1);
}

struct opts {
	unsigned int uid, other, max, mib, tries;
	unsigned long elems;
	const char *cgroup, *ramfs;
	bool hugetlb;
};

static void become(unsigned int uid)
{
	if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
		die("setgroups, setgid, setuid");
	if (getuid() != uid || geteuid() != uid)
		die("uid did not change");
}

/* The module's reason for the last failed ioctl on @fd. */
static const char *errmsg(int fd)
{
	static char buf[GRADNET_ERRMSG_LEN];
	struct gradnet_errmsg e = { .size = sizeof(e), .len = sizeof(buf),
				    .buf = (uintptr_t)buf };

	if (ioctl(fd, GRADNET_IOC_ERRMSG, &e))
		snprintf(buf, sizeof(buf), "(no message: %s)", strerror(errno));
	return buf;
}

static int rc(int r)
{
	return r ? -errno : 0;
}

static void peer_fill(struct gradnet_peer *p, uint16_t port)
{
	memset(p, 0, sizeof(*p));
	p->family = AF_INET;
	p->port = htons(port);
	p->addr[0] = 127;
	p->addr[3] = 1;
}

struct join {
	int fd, rank, world, rc;
	uint16_t port;
	uint32_t step_timeout_ms;
};

static void *join_run(void *arg)
{
	struct join *j = arg;
	struct gradnet_peer peers[2];
	struct gradnet_open o = {
		.size = sizeof(o), .abi = GRADNET_ABI_VERSION,
		.rank = (uint32_t)j->rank, .world = (uint32_t)j->world,
		.job_id = 0x6c696d00u + j->port, .timeout_ms = 10000,
		.step_timeout_ms = j->step_timeout_ms,
		.flags = GRADNET_OPEN_INSECURE,
	};
	int k;

	for (k = 0; k < j->world; k++)
		peer_fill(&peers[k], (uint16_t)(j->port + k));
	o.peers = (uintptr_t)peers;
	j->rc = rc(ioctl(j->fd, GRADNET_IOC_OPEN, &o));
	return NULL;
}

/* A one-rank context at 127.0.0.1:@port, or -errno (*@fd open for errmsg). */
static int ctx_one(int *fd, uint16_t port)
{
	struct join j = { .rank = 0, .world = 1, .port = port };

	*fd = open("/dev/gradnet", O_RDWR | O_CLOEXEC);
	if (*fd < 0)
		die("open /dev/gradnet");
	j.fd = *fd;
	join_run(&j);
	return j.rc;
}

/* Two ranks of one job, opened from two threads; 0 or the first -errno. */
static int ctx_pair(int fd[2], uint16_t port, uint32_t step_timeout_ms)
{
	struct join j[2];
	pthread_t t[2];
	int k;

	for (k = 0; k < 2; k++) {
		fd[k] = open("/dev/gradnet", O_RDWR | O_CLOEXEC);
		if (fd[k] < 0)
			die("open /dev/gradnet");
		j[k] = (struct join){ .fd = fd[k], .rank = k, .world = 2,
				      .port = port,
				      .step_timeout_ms = step_timeout_ms };
		pthread_create(&t[k], NULL, join_run, &j[k]);
	}
	for (k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	return j[0].rc ? j[0].rc : j[1].rc;
}

static int reg(int fd, uint32_t id, uint64_t elems, uint32_t codec)
{
	struct gradnet_tensor t = { .size = sizeof(t), .id = id,
				    .codec = codec, .elems = elems };

	return rc(ioctl(fd, GRADNET_IOC_REGISTER, &t));
}

static int unreg(int fd, uint32_t id)
{
	struct gradnet_tensor t = { .size = sizeof(t), .id = id };

	return rc(ioctl(fd, GRADNET_IOC_UNREGISTER, &t));
}

static int start(int fd, uint32_t id, const void *data)
{
	struct gradnet_start s = { .size = sizeof(s), .id = id,
				   .data = (uintptr_t)data };

	return rc(ioctl(fd, GRADNET_IOC_START, &s));
}

/* WAIT forever: the ioctl's -errno, or the allreduce's result. */
static int wait_for(int fd, uint32_t id, char *msg)
{
	struct gradnet_wait w = { .size = sizeof(w), .id = id,
				  .timeout_ms = ~0u, .errmsg = (uintptr_t)msg };
	int r;

	do
		r = rc(ioctl(fd, GRADNET_IOC_WAIT, &w));
	while (r == -EINTR);
	return r ? r : w.result;
}

static bool has(const char *msg, const char *what)
{
	return strstr(msg, what) != NULL;
}

/* A "Key: value" number of a /proc or cgroup file; -1 if it is not there. */
static long long file_num(const char *path, const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) &&
		    (line[n] == ' ' || line[n] == ':' || line[n] == '\t')) {
			v = strtoll(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static long long cg_num(const char *cg, const char *file, const char *key)
{
	char path[512];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	if (key)
		return file_num(path, key);
	f = fopen(path, "r");
	if (f && fscanf(f, "%lld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

static long long vmpin_kib(void)
{
	return file_num("/proc/self/status", "VmPin:");
}

/* Pages pinned in the whole system: the kernel's own FOLL_PIN counts. */
static long long pinned_pages(void)
{
	return file_num("/proc/vmstat", "nr_foll_pin_acquired") -
	       file_num("/proc/vmstat", "nr_foll_pin_released");
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

/* ---- memcg ---- */

static void cmd_memcg(const struct opts *o)
{
	char path[512], msg[GRADNET_ERRMSG_LEN] = "";
	long long cur0, kern0, cur = 0, kern = 0, oom0, oom_cg, oom;
	unsigned int k, ok = 0;
	int fd, r = 0;
	FILE *f;

	subject = "memcg: ";
	snprintf(path, sizeof(path), "%s/cgroup.procs", o->cgroup);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f))
		die("joining the cgroup");
	oom0 = file_num("/proc/vmstat", "oom_kill");
	become(o->uid);
	r = ctx_one(&fd, PORT);
	check(!r, "uid %u opens a context in %s (%d %s)", o->uid, o->cgroup,
	      r, r ? errmsg(fd) : "");
	if (r)
		return;
	cur0 = cg_num(o->cgroup, "memory.current", NULL);
	kern0 = cg_num(o->cgroup, "memory.stat", "kernel");
	printf("# memory.max %lld, memory.current %lld, kernel %lld before\n",
	       cg_num(o->cgroup, "memory.max", NULL), cur0, kern0);
	for (k = 0; k < o->tries; k++) {
		r = reg(fd, 1 + k, o->elems, GN_CODEC_3LC);
		if (r) {
			snprintf(msg, sizeof(msg), "%s", errmsg(fd));
			break;
		}
		ok++;
		cur = cg_num(o->cgroup, "memory.current", NULL);
		kern = cg_num(o->cgroup, "memory.stat", "kernel");
		printf("# tensor %u registered: memory.current %lld, kernel %lld\n",
		       k + 1, cur, kern);
	}
	printf("# REGISTER %u: %d: %s\n", ok + 1, r, msg);
	check(r == -ENOMEM, "a REGISTER past memory.max is refused with ENOMEM (%d, after %u tensors of %lu values)",
	      r, ok, o->elems);
	check(has(msg, "memory.max"), "its message names memory.max: %s", msg);
	check(ok && cur - cur0 >= (long long)(12 * o->elems * ok),
	      "memory.current rose by %lld bytes for %u tensors, at least 3/4 of their error feedback (%lu)",
	      cur - cur0, ok, 12 * o->elems * ok);
	check(ok && kern - kern0 >= (long long)(12 * o->elems * ok),
	      "memory.stat's kernel rose by %lld bytes, at least %lu",
	      kern - kern0, 12 * o->elems * ok);
	oom_cg = cg_num(o->cgroup, "memory.events", "oom_kill");
	oom = file_num("/proc/vmstat", "oom_kill");
	check(oom_cg == 0 && oom == oom0,
	      "no OOM kill: memory.events says %lld, /proc/vmstat %lld before and %lld after",
	      oom_cg, oom0, oom);
	close(fd);
	cur = cg_num(o->cgroup, "memory.current", NULL);
	check(cur - cur0 < 2 * (long long)MIB,
	      "closing the file gives the charge back (memory.current %lld, %lld before the tensors)",
	      cur, cur0);
}

/* ---- tensors, bytes ---- */

static void cmd_tensors(const struct opts *o)
{
	unsigned int k;
	int fd, r;

	subject = "tensors: ";
	become(o->uid);
	r = ctx_one(&fd, PORT + 10);
	check(!r, "uid %u opens a context (%d %s)", o->uid, r, r ? errmsg(fd) : "");
	if (r)
		return;
	for (k = 0, r = 0; k < o->max && !r; k++)
		r = reg(fd, k, 4, GN_CODEC_NONE);
	check(!r, "%u tensors register (max_tensors %u): %d %s", k, o->max, r,
	      r ? errmsg(fd) : "");
	r = reg(fd, o->max, 4, GN_CODEC_NONE);
	check(r == -EMFILE, "tensor %u is refused with EMFILE (%d)", o->max + 1, r);
	check(has(errmsg(fd), "max_tensors"), "its message names max_tensors: %s",
	      errmsg(fd));
	r = unreg(fd, 0);
	if (!r)
		r = reg(fd, o->max, 4, GN_CODEC_NONE);
	check(!r, "after an UNREGISTER another registers (%d %s)", r,
	      r ? errmsg(fd) : "");
	close(fd);
}

static void cmd_bytes(const struct opts *o)
{
	unsigned long big = (unsigned long)o->mib * MIB / 16 + 1;
	float *x = map_anon(4096);
	char msg[GRADNET_ERRMSG_LEN] = "";
	int fd, r, k;

	subject = "bytes: ";
	become(o->uid);
	r = ctx_one(&fd, PORT + 20);
	check(!r, "uid %u opens a context (%d %s)", o->uid, r, r ? errmsg(fd) : "");
	if (r)
		return;
	r = reg(fd, 1, big, GN_CODEC_3LC);
	check(r == -EDQUOT, "a 3LC tensor of %lu values (at least 16 bytes each in the kernel) is refused with EDQUOT under max_context_mib %u (%d)",
	      big, o->mib, r);
	check(has(errmsg(fd), "max_context_mib"),
	      "its message names max_context_mib: %s", errmsg(fd));
	r = reg(fd, 2, 1024, GN_CODEC_NONE);
	check(!r, "the context still registers a small one (%d %s)", r,
	      r ? errmsg(fd) : "");
	for (k = 0; k < 1024; k++)
		x[k] = (float)k;
	r = r ? r : start(fd, 2, x);
	r = r ? r : wait_for(fd, 2, msg);
	for (k = 0; k < 1024 && !r; k++)
		if (x[k] != (float)k)
			r = -EBADMSG;
	check(!r, "and allreduces it, with one rank's result: its input (%d %s)",
	      r, msg);
	close(fd);
}

/* ---- contexts ---- */

static void cmd_contexts(const struct opts *o)
{
	int go[2], done[2], fds[64], fd, r, st = 0;
	unsigned int k;
	pid_t other;
	char c;

	subject = "contexts: ";
	if (o->max >= 64 || pipe(go) || pipe(done))
		die("--max below 64, pipes");
	other = fork();
	if (other < 0)
		die("fork");
	if (!other) {
		/* Uid V opens one while U holds its maximum. */
		subject = "contexts, the other uid: ";
		if (read(go[0], &c, 1) != 1)
			exit(1);
		become(o->other);
		r = ctx_one(&fd, PORT + 99);
		check(!r, "uid %u opens a context while uid %u holds %u (%d %s)",
		      o->other, o->uid, o->max, r, r ? errmsg(fd) : "");
		c = (char)!r;
		if (write(done[1], &c, 1) != 1)
			exit(1);
		exit(r ? 1 : 0);
	}
	become(o->uid);
	for (k = 0, r = 0; k < o->max && !r; k++)
		r = ctx_one(&fds[k], (uint16_t)(PORT + 30 + k));
	check(!r, "uid %u opens %u contexts (max_contexts_per_user %u): %d %s",
	      o->uid, k, o->max, r, r ? errmsg(fds[k - 1]) : "");
	r = ctx_one(&fd, (uint16_t)(PORT + 30 + o->max));
	check(r == -EMFILE, "its OPEN %u is refused with EMFILE (%d)", o->max + 1, r);
	check(has(errmsg(fd), "max_contexts_per_user"),
	      "its message names max_contexts_per_user: %s", errmsg(fd));
	close(fd);
	if (write(go[1], "g", 1) != 1 || read(done[0], &c, 1) != 1)
		die("the other uid's process");
	waitpid(other, &st, 0);
	failures += !(WIFEXITED(st) && !WEXITSTATUS(st));
	close(fds[0]);
	r = ctx_one(&fd, (uint16_t)(PORT + 30 + o->max + 1));
	check(!r, "after closing one, uid %u opens another (%d %s)", o->uid, r,
	      r ? errmsg(fd) : "");
	close(fd);
	for (k = 1; k < o->max; k++)
		close(fds[k]);
}

/* ---- pins ---- */

static void memlock(rlim_t bytes)
{
	struct rlimit l;

	if (getrlimit(RLIMIT_MEMLOCK, &l))
		die("getrlimit");
	l.rlim_cur = bytes;
	if (setrlimit(RLIMIT_MEMLOCK, &l))
		die("setrlimit RLIMIT_MEMLOCK");
}

/* Is @fd's some allreduce over? poll() for up to @ms. */
static bool ended(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void pins_limit(int fd[2])
{
	float *b32 = map_anon(32 * KIB), *b48 = map_anon(48 * KIB);
	float *b128 = map_anon(128 * KIB);
	char msg[GRADNET_ERRMSG_LEN];
	long long pin;
	int r;

	memlock(64 * KIB);
	r = reg(fd[0], 1, 32 * KIB / 4, GN_CODEC_NONE);
	r = r ? r : reg(fd[0], 2, 128 * KIB / 4, GN_CODEC_NONE);
	r = r ? r : reg(fd[1], 3, 48 * KIB / 4, GN_CODEC_NONE);
	check(!r, "tensors of 32 and 128 KiB on rank 0, 48 KiB on rank 1 register (%d)", r);
	r = start(fd[0], 2, b128);
	snprintf(msg, sizeof(msg), "%s", errmsg(fd[0]));
	check(r == -ENOMEM, "RLIMIT_MEMLOCK 64 KiB: a START of 128 KiB is refused with ENOMEM (%d)", r);
	check(has(msg, "RLIMIT_MEMLOCK"), "its message names RLIMIT_MEMLOCK: %s", msg);
	check(vmpin_kib() == 0, "nothing is pinned after it (VmPin %lld kB)",
	      vmpin_kib());
	r = start(fd[0], 1, b32);
	pin = vmpin_kib();
	check(!r && pin == 32, "a START of 32 KiB runs (%d %s) and VmPin shows it: %lld kB",
	      r, r ? errmsg(fd[0]) : "", pin);
	munmap(b32, 32 * KIB);
	check(vmpin_kib() == 32, "after munmap the pages stay pinned and counted: VmPin %lld kB",
	      vmpin_kib());
	r = start(fd[1], 3, b48);
	check(r == -ENOMEM, "the same uid's other context cannot pin 48 KiB more (%d: %s)",
	      r, errmsg(fd[1]));
	memlock(0);
	r = start(fd[1], 3, b48);
	check(r == -EPERM, "RLIMIT_MEMLOCK 0: START is refused with EPERM (%d: %s)",
	      r, errmsg(fd[1]));
	/* Rank 1 never starts tensor 1: its step times out. */
	check(ended(fd[0], 30000), "rank 0's lone allreduce ends (the step timeout)");
	check(vmpin_kib() == 0, "once poll() says so, nothing is pinned: VmPin %lld kB",
	      vmpin_kib());
	r = wait_for(fd[0], 1, msg);
	check(r == -ETIMEDOUT, "WAIT gives -ETIMEDOUT (%d: %s)", r, msg);
	munmap(b48, 48 * KIB);
	munmap(b128, 128 * KIB);
}

static void pins_timeout(int fd[2])
{
	const size_t len = 16 * MIB;
	char msg[GRADNET_ERRMSG_LEN];
	long long pinned0, pinned1, pinned2, pin;
	float *b;
	int r;

	memlock(24 * MIB);
	r = reg(fd[0], 4, len / 4, GN_CODEC_NONE);
	check(!r, "a tensor of 16 MiB registers (%d %s)", r, r ? errmsg(fd[0]) : "");
	pinned0 = pinned_pages();
	b = map_anon(len);
	memset(b, 1, len);
	r = start(fd[0], 4, b);
	munmap(b, len);
	pin = vmpin_kib();
	pinned1 = pinned_pages();
	check(!r && pin == 16384, "RLIMIT_MEMLOCK 24 MiB: its START runs (%d %s), VmPin %lld kB after munmap",
	      r, r ? errmsg(fd[0]) : "", pin);
	check(ended(fd[0], 30000), "its lone allreduce ends (the step timeout)");
	pin = vmpin_kib();
	pinned2 = pinned_pages();
	printf("# pages pinned in the system (nr_foll_pin_acquired - released): %lld before, %lld pinned and unmapped, %lld after the timeout\n",
	       pinned0, pinned1, pinned2);
	/* vmstat folds per-CPU deltas late: its counts lag by a few pages. */
	check(pin == 0 && pinned1 - pinned2 >= (long long)(len / 4096 * 7 / 8),
	      "before any WAIT the timed-out step holds nothing: VmPin %lld kB, the kernel unpinned %lld pages (its %zu)",
	      pin, pinned1 - pinned2, len / 4096);
	r = wait_for(fd[0], 4, msg);
	check(r == -ETIMEDOUT, "WAIT gives -ETIMEDOUT (%d: %s)", r, msg);
}

static void cmd_pins(const struct opts *o)
{
	struct rlimit l = { 24 * MIB, 24 * MIB };
	int fd[2], r;

	subject = "pins: ";
	if (setrlimit(RLIMIT_MEMLOCK, &l))
		die("setrlimit RLIMIT_MEMLOCK");
	become(o->uid);
	r = ctx_pair(fd, PORT + 100, 1500);
	check(!r, "uid %u joins two ranks of a job on 127.0.0.1 (%d %s)", o->uid,
	      r, r ? errmsg(fd[0]) : "");
	if (r)
		return;
	pins_limit(fd);
	pins_timeout(fd);
	close(fd[0]);
	close(fd[1]);
}

/* ---- mappings ---- */

/* START and WAIT tensor @id, 1024 floats at @x: 0, or -errno. */
static int run_on(int fd, uint32_t id, float *x, char *msg)
{
	int k, r;

	for (k = 0; k < 1024; k++)
		x[k] = (float)(k + 1);
	msg[0] = 0;
	r = start(fd, id, x);
	if (r) {
		snprintf(msg, GRADNET_ERRMSG_LEN, "%s", errmsg(fd));
		return r;
	}
	r = wait_for(fd, id, msg);
	for (k = 0; k < 1024 && !r; k++)
		if (x[k] != (float)(k + 1))
			r = -EBADMSG;
	return r;
}

static void *map_file(const char *path, size_t len, int flags)
{
	void *p;
	int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (f < 0 || ftruncate(f, (off_t)len))
		die(path);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, f, 0);
	if (p == MAP_FAILED)
		die("mmap of the file");
	close(f);
	return p;
}

static void cmd_mappings(const struct opts *o)
{
	char path[512], msg[GRADNET_ERRMSG_LEN];
	float *x;
	uint8_t *two;
	int fd, r, m;

	subject = "mappings: ";
	become(o->uid);
	r = ctx_one(&fd, PORT + 200);
	r = r ? r : reg(fd, 1, 1024, GN_CODEC_NONE);
	check(!r, "uid %u opens a context and registers 1024 floats (%d %s)",
	      o->uid, r, r ? errmsg(fd) : "");
	if (r)
		return;
	x = map_anon(4096);
	r = run_on(fd, 1, x, msg);
	check(!r, "private anonymous memory: allreduced (%d %s)", r, msg);
	x = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	r = x == MAP_FAILED ? -errno : run_on(fd, 1, x, msg);
	check(!r, "shared anonymous memory (shmem): allreduced (%d %s)", r, msg);
	m = memfd_create("kmod_limits", MFD_CLOEXEC);
	x = m < 0 || ftruncate(m, 4096) ? MAP_FAILED :
		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
	r = x == MAP_FAILED ? -errno : run_on(fd, 1, x, msg);
	check(!r, "a memfd (shmem): allreduced (%d %s)", r, msg);
	if (o->hugetlb) {
		x = mmap(NULL, 2 * MIB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		r = x == MAP_FAILED ? -errno : run_on(fd, 1, x, msg);
		check(!r, "MAP_HUGETLB memory: allreduced (%d %s)", r, msg);
	}
	snprintf(path, sizeof(path), "%s/tensor.%u", o->ramfs, o->uid);
	x = map_file(path, 4096, MAP_SHARED);
	r = run_on(fd, 1, x, msg);
	check(r == -EOPNOTSUPP && has(msg, "ramfs"),
	      "a shared mapping of a ramfs file is refused with EOPNOTSUPP, naming it (%d: %s)",
	      r, msg);
	x = map_file(path, 4096, MAP_PRIVATE);
	r = run_on(fd, 1, x, msg);
	check(r == -EOPNOTSUPP && has(msg, "ramfs"),
	      "so is a private one (%d: %s)", r, msg);
	/* Two pages, anonymous then the file: the tensor ends in the file. */
	two = map_anon(8192);
	if (mmap(two + 4096, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 open(path, O_RDWR | O_CLOEXEC), 0) == MAP_FAILED)
		die("mmap MAP_FIXED");
	r = run_on(fd, 1, (float *)(two + 2048), msg);
	check(r == -EOPNOTSUPP, "a buffer that only ends in it is refused too (%d: %s)",
	      r, msg);
	r = run_on(fd, 1, map_anon(4096), msg);
	check(!r, "the context still allreduces anonymous memory after the refusals (%d %s)",
	      r, msg);
	close(fd);
}

static void usage(const char *why)
{
	fprintf(stderr, "kmod_limits: %s\n"
		"usage: kmod_limits memcg|tensors|bytes|contexts|pins|mappings --uid U\n"
		"	[--cgroup DIR --elems N --tries K] [--max M] [--mib B]\n"
		"	[--other V] [--ramfs DIR [--hugetlb]]\n", why);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "uid", required_argument, NULL, 'u' },
		{ "other", required_argument, NULL, 'o' },
		{ "max", required_argument, NULL, 'm' },
		{ "mib", required_argument, NULL, 'b' },
		{ "tries", required_argument, NULL, 't' },
		{ "elems", required_argument, NULL, 'e' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "ramfs", required_argument, NULL, 'r' },
		{ "hugetlb", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .tries = 8 };
	const char *cmd = argc > 1 ? argv[1] : "";
	int c;

	while ((c = getopt_long(argc - 1, argv + 1, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'u': o.uid = (unsigned int)atoi(optarg); break;
		case 'o': o.other = (unsigned int)atoi(optarg); break;
		case 'm': o.max = (unsigned int)atoi(optarg); break;
		case 'b': o.mib = (unsigned int)atoi(optarg); break;
		case 't': o.tries = (unsigned int)atoi(optarg); break;
		case 'e': o.elems = strtoul(optarg, NULL, 0); break;
		case 'c': o.cgroup = optarg; break;
		case 'r': o.ramfs = optarg; break;
		case 'h': o.hugetlb = true; break;
		default: usage("unknown option");
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!o.uid)
		usage("--uid of an unprivileged user is required");
	if (!strcmp(cmd, "memcg") && o.cgroup && o.elems)
		cmd_memcg(&o);
	else if (!strcmp(cmd, "tensors") && o.max)
		cmd_tensors(&o);
	else if (!strcmp(cmd, "bytes") && o.mib)
		cmd_bytes(&o);
	else if (!strcmp(cmd, "contexts") && o.max && o.other)
		cmd_contexts(&o);
	else if (!strcmp(cmd, "pins"))
		cmd_pins(&o);
	else if (!strcmp(cmd, "mappings") && o.ramfs)
		cmd_mappings(&o);
	else
		usage("unknown command, or a required option is missing");
	return failures ? 1 : 0;
}
