// SPDX-License-Identifier: MIT
/*
 * main.c - gradnet-stat's command line: per-flow statistics of gradnet
 * jobs with eBPF. It attaches bpf/gradnet_stat.bpf.c to libgradnet's USDT
 * probes (usdt.c), to the kernel module's tracepoints (kmod.c) and to
 * interfaces (tc.c), pins the maps and links under /sys/fs/bpf/gradnet
 * (pins.c) so the counting goes on after this process exits, and reads
 * the maps back (maps.c) as a table, top, JSON or OpenMetrics.
 *
 *   gradnet-stat attach --lib PATH           every process that maps PATH
 *   gradnet-stat attach --pid PID [--lib PATH]
 *   gradnet-stat attach --kmod               the gradnet module's tracepoints
 *   gradnet-stat attach --dev IFACE [--netns NAME]
 *   gradnet-stat detach [--kmod | --dev IFACE [--netns NAME]]
 *   gradnet-stat dump [--json | --openmetrics]
 *   gradnet-stat top [--interval S] [--count N] [--job J] [--tensor T]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stat.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: gradnet-stat attach --lib PATH | --pid PID [--lib PATH]\n"
		"       gradnet-stat attach --kmod\n"
		"       gradnet-stat attach --dev IFACE [--netns NAME] [--job J[,J...]] [--port P[,P...]]\n"
		"       gradnet-stat detach [--kmod | --dev IFACE [--netns NAME]]\n"
		"       gradnet-stat dump [--json | --openmetrics]\n"
		"       gradnet-stat top [--interval S] [--count N] [--job J[,J...]] [--tensor T]\n"
		"  maps and links are pinned under " GN_STAT_PIN_DIR " (or $GN_STAT_PIN_DIR)\n");
	exit(2);
}

/*
 * A comma-separated list of numbers in [@min, @max] (decimal, or 0x hex)
 * appended to @out, which holds @n of OPT_LIST; exits with a message
 * naming the bad value.
 */
static void parse_list(const char *opt, const char *arg, __u64 min, __u64 max,
		       __u64 *out, int *n)
{
	const char *p = arg;
	char *end;
	__u64 v;

	do {
		errno = 0;
		v = strtoull(p, &end, 0);
		if (end == p || (*end && *end != ',') || errno || v < min ||
		    v > max || *p == '-') {
			fprintf(stderr, "gradnet-stat: --%s %s: '%.*s' is not a number from %llu to %llu\n",
				opt, arg, (int)strcspn(p, ","), p,
				(unsigned long long)min, (unsigned long long)max);
			exit(2);
		}
		if (*n == OPT_LIST) {
			fprintf(stderr, "gradnet-stat: --%s: at most %d values\n",
				opt, OPT_LIST);
			exit(2);
		}
		out[(*n)++] = v;
		p = end + 1;
	} while (*end);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "lib", required_argument, NULL, 'l' },
		{ "pid", required_argument, NULL, 'p' },
		{ "dev", required_argument, NULL, 'd' },
		{ "kmod", no_argument, NULL, 'k' },
		{ "netns", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "openmetrics", no_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ "job", required_argument, NULL, 'J' },
		{ "tensor", required_argument, NULL, 'T' },
		{ "port", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			o->lib = optarg;
			break;
		case 'p':
			o->pid = atoi(optarg);
			if (o->pid <= 0)
				usage();
			break;
		case 'd':
			o->dev = optarg;
			break;
		case 'k':
			o->kmod = true;
			break;
		case 'n':
			o->netns = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'o':
			o->openmetrics = true;
			break;
		case 'i':
			o->interval = strtod(optarg, NULL);
			if (o->interval <= 0)
				usage();
			break;
		case 'c':
			o->count = atol(optarg);
			break;
		case 'J':
			/* Job ids are 32 bits on the wire (wire.h). */
			parse_list("job", optarg, 0, 0xffffffffu, o->jobs,
				   &o->njobs);
			break;
		case 'P':
			parse_list("port", optarg, 1, 65535, o->ports,
				   &o->nports);
			break;
		case 'T':
			o->tensor = strtoll(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
}

int main(int argc, char **argv)
{
	struct opts o = { .interval = 1.0, .tensor = -1 };
	const char *cmd;
	bool attach;
	int err;

	if (argc < 2)
		usage();
	cmd = argv[1];
	parse(argc - 1, argv + 1, &o);
	quiet_libbpf();
	set_pin_dir();
	err = check_env();
	if (err)
		return 1;
	attach = !strcmp(cmd, "attach");
	if (attach && (!!o.dev + !!(o.lib || o.pid) + o.kmod != 1 ||
		       (o.nports && !o.dev)))
		usage();
	err = check_pin_dir(attach);
	if (err && err != -ENOENT)
		return 1;
	if (attach) {
		err = o.dev ? attach_tc(&o) : o.kmod ? attach_kmod() :
			attach_usdt(&o);
	} else if (!strcmp(cmd, "detach")) {
		if (o.dev && o.kmod)
			usage();
		err = o.dev ? detach_tc(&o) : o.kmod ? detach_kmod(false) :
			detach_all();
	} else if (!strcmp(cmd, "dump")) {
		if (o.json && o.openmetrics)
			usage();
		err = o.json ? dump_json() : o.openmetrics ? dump_openmetrics() :
			dump_text(&o);
	} else if (!strcmp(cmd, "top")) {
		err = top(&o);
	} else {
		usage();
	}
	return err ? 1 : 0;
}
