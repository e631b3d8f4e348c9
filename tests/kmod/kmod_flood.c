// SPDX-License-Identifier: MIT
/*
 * kmod_flood.c - a flood of UDP datagrams at a kmod rank's socket, while
 * that rank's worker thread cannot run, and what the flood left behind.
 *
 *   kmod_flood --to ADDR:PORT --size S --count N [--spoof ADDR:PORT]
 *		--freeze COMM --pid PID
 *
 * Sends N datagrams of S payload bytes to ADDR:PORT: from a socket of its
 * own (a stranger to the job), or with --spoof from that source address
 * and port (a raw socket with IP_HDRINCL, so S must fit the MTU), as if a
 * rank of the job sent them. While it sends and measures, the kernel
 * thread named COMM (the rank's worker, "gradnet/0") is held on CPU 0 by
 * a SCHED_FIFO thread that spins there; this process and every other
 * gradnet worker run on CPU 1. The worker takes nothing off its queue
 * meanwhile, so what the flood costs stays where the measurement sees it.
 * The caller lifts the real-time throttle first
 * (/proc/sys/kernel/sched_rt_runtime_us -1): with it, CPU 0 would still
 * give the worker 5% of its time.
 *
 * Prints, after the flood and before the worker runs again:
 *	sent N			datagrams the socket took
 *	memfree BEFORE AFTER	/proc/meminfo MemFree, kB
 *	worker ran NS BEFORE	how long COMM ran meanwhile, and before
 *				(/proc/PID/schedstat, ns)
 *	socket RXQ DROPS	rx_queue (bytes) and drops of the socket bound
 *				at PORT, from /proc/PID/net/udp (PID: a
 *				process in that socket's namespace)
 * Exit 0, 1 if something failed (with a "#" line saying what), 2 on bad
 * usage. Needs root and two CPUs.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HOG_CPU		0
#define WORK_CPU	1
/* The hog stops by itself after this, whatever happens to this process. */
#define HOG_MAX_S	20

struct opts {
	struct sockaddr_in to, spoof;
	bool spoofed;
	unsigned int size, count;
	const char *freeze;
	int pid;
};

static volatile int hog_stop;

static void fail(const char *what)
{
	printf("# kmod_flood: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int on_cpu(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(pid, sizeof(set), &set);
}

static void *hog_run(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };
	double until = now() + HOG_MAX_S;

	(void)arg;
	if (on_cpu(0, HOG_CPU) ||
	    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		fail("the hog's CPU or SCHED_FIFO");
	while (!hog_stop && now() < until)
		;
	return NULL;
}

/*
 * Put the kernel thread @comm on the hog's CPU and every other gradnet
 * worker on the other one. Return: how many threads named @comm; the
 * last one's pid in @pid.
 */
static int workers_place(const char *comm, int *frozen)
{
	struct dirent *d;
	int found = 0;
	DIR *dir = opendir("/proc");

	if (!dir)
		fail("/proc");
	while ((d = readdir(dir))) {
		char path[300], name[64] = "";
		FILE *f;
		int pid = atoi(d->d_name);

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = 0;
		fclose(f);
		if (!strcmp(name, comm)) {
			if (on_cpu(pid, HOG_CPU))
				fail("placing the frozen worker");
			*frozen = pid;
			found++;
		} else if (!strncmp(name, "gradnet/", 8) && on_cpu(pid, WORK_CPU)) {
			fail("placing another worker");
		}
	}
	closedir(dir);
	return found;
}

/* Nanoseconds @pid has run on a CPU (/proc/PID/schedstat). */
static long long ran_ns(int pid)
{
	char path[64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	f = fopen(path, "r");
	if (f && fscanf(f, "%lld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

static long long memfree_kib(void)
{
	char line[128];
	long long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %lld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

/* rx_queue and drops of the UDP socket bound at @port in @pid's namespace. */
static int socket_stats(int pid, uint16_t port, unsigned long *rxq,
			unsigned long *drops)
{
	char path[64], line[512], local[64];
	unsigned long tx, rx, d;
	int found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/udp", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned int lport;
		char *colon, *last;

		if (sscanf(line, " %*d: %63s %*s %*x %lx:%lx", local, &tx, &rx) != 3)
			continue;
		colon = strchr(local, ':');
		if (!colon || sscanf(colon + 1, "%x", &lport) != 1 || lport != port)
			continue;
		line[strcspn(line, "\n")] = 0;
		while ((last = strrchr(line, ' ')) && !last[1])
			*last = 0;
		if (!last || sscanf(last, "%lu", &d) != 1)
			continue;
		*rxq = rx;
		*drops = d;
		found = 0;
		break;
	}
	fclose(f);
	return found;
}

static int addr_parse(const char *s, struct sockaddr_in *a)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (!colon || colon - s >= (long)sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

/* One spoofed datagram: IPv4 and UDP headers (no UDP checksum) and @len bytes. */
static size_t spoofed(const struct opts *o, uint8_t *pkt, size_t len)
{
	struct iphdr *ip = (struct iphdr *)pkt;
	struct udphdr *uh = (struct udphdr *)(ip + 1);

	memset(ip, 0, sizeof(*ip) + sizeof(*uh));
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = o->spoof.sin_addr.s_addr;
	ip->daddr = o->to.sin_addr.s_addr;
	/* The kernel fills in the total length, the id and the checksum. */
	uh->source = o->spoof.sin_port;
	uh->dest = o->to.sin_port;
	uh->len = htons((uint16_t)(sizeof(*uh) + len));
	return sizeof(*ip) + sizeof(*uh) + len;
}

static unsigned int flood(const struct opts *o)
{
	size_t hdr = o->spoofed ? sizeof(struct iphdr) + sizeof(struct udphdr) : 0;
	uint8_t *pkt = calloc(1, hdr + o->size);
	unsigned int k, sent = 0;
	size_t len = o->size;
	int fd, one = 1;

	if (!pkt)
		fail("calloc");
	for (k = 0; k < o->size; k++)
		pkt[hdr + k] = (uint8_t)(k * 131u + 7u);
	if (o->spoofed) {
		fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
		if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one)))
			fail("a raw socket");
		len = spoofed(o, pkt, o->size);
	} else {
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0)
			fail("a UDP socket");
	}
	for (k = 0; k < o->count; k++)
		if (sendto(fd, pkt, len, 0, (const struct sockaddr *)&o->to,
			   sizeof(o->to)) == (ssize_t)len)
			sent++;
	close(fd);
	free(pkt);
	return sent;
}

static void usage(const char *why)
{
	fprintf(stderr, "kmod_flood: %s\n"
		"usage: kmod_flood --to ADDR:PORT --size S --count N [--spoof ADDR:PORT]\n"
		"	--freeze COMM --pid PID\n", why);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "spoof", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'z' },
		{ "count", required_argument, NULL, 'n' },
		{ "freeze", required_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { 0 };
	unsigned long rxq = 0, drops = 0;
	long long before, after, ran0, ran1;
	unsigned int sent;
	pthread_t hog;
	int c, st, frozen = 0;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (addr_parse(optarg, &o.to))
				usage("--to ADDR:PORT");
			break;
		case 's':
			if (addr_parse(optarg, &o.spoof))
				usage("--spoof ADDR:PORT");
			o.spoofed = true;
			break;
		case 'z': o.size = (unsigned int)atoi(optarg); break;
		case 'n': o.count = (unsigned int)atoi(optarg); break;
		case 'f': o.freeze = optarg; break;
		case 'p': o.pid = atoi(optarg); break;
		default: usage("unknown option");
		}
	}
	if (!o.to.sin_port || !o.size || o.size > 65000 || !o.count ||
	    !o.freeze || o.pid <= 0)
		usage("--to, --size (1..65000), --count, --freeze and --pid are required");
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (on_cpu(0, WORK_CPU))
		fail("this process on CPU 1");
	if (workers_place(o.freeze, &frozen) != 1) {
		printf("# kmod_flood: not exactly one thread named %s\n", o.freeze);
		return 1;
	}
	if (pthread_create(&hog, NULL, hog_run, NULL))
		fail("the hog thread");
	/* The hog is on CPU 0 once this thread sees its policy. */
	while (pthread_getschedparam(hog, &st, &(struct sched_param){ 0 }) == 0 &&
	       st != SCHED_FIFO)
		sched_yield();
	ran0 = ran_ns(frozen);
	before = memfree_kib();
	sent = flood(&o);
	after = memfree_kib();
	st = socket_stats(o.pid, ntohs(o.to.sin_port), &rxq, &drops);
	ran1 = ran_ns(frozen);
	hog_stop = 1;
	pthread_join(hog, NULL);
	printf("sent %u\n", sent);
	printf("memfree %lld %lld\n", before, after);
	printf("worker ran %lld %lld\n", ran1 - ran0, ran0);
	if (st) {
		char path[64], line[256];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/net/udp", o.pid);
		printf("# kmod_flood: no UDP socket at port %u in %s (%s):\n",
		       ntohs(o.to.sin_port), path, strerror(errno));
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			printf("# %s", line);
		if (f)
			fclose(f);
		return 1;
	}
	printf("socket %lu %lu\n", rxq, drops);
	return 0;
}
