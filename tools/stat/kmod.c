// SPDX-License-Identifier: MIT
/*
 * kmod.c - attach --kmod and detach --kmod: the gradnet kernel module's
 * tracepoints (kmod/trace.h), one pinned raw tracepoint link each.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "stat.h"
#include "gradnet_stat.skel.h"

/* The module's tracepoints (kmod/trace.h), in the order of kmod_prog(). */
static const char *const kmod_tps[] = { "gn_msg", "gn_tx", "gn_tx_ctl",
					"gn_rx", "gn_drop", "gn_step" };
#define KMOD_TPS	((int)(sizeof(kmod_tps) / sizeof(*kmod_tps)))

static struct bpf_program *kmod_prog(struct gradnet_stat_bpf *s, int i)
{
	struct bpf_program *progs[] = {
		s->progs.gn_kmod_msg, s->progs.gn_kmod_tx,
		s->progs.gn_kmod_tx_ctl, s->progs.gn_kmod_rx,
		s->progs.gn_kmod_drop, s->progs.gn_kmod_step,
	};

	_Static_assert(sizeof(progs) / sizeof(*progs) ==
		       sizeof(kmod_tps) / sizeof(*kmod_tps),
		       "a program per tracepoint");
	return progs[i];
}

/* The pin of tracepoint @i's link: one per tracepoint, whoever attached. */
static void kmod_pin(char *buf, size_t len, int i)
{
	snprintf(buf, len, "%s/kmod-%s", pins.links, kmod_tps[i]);
}

/* Unpin the tracepoint links attach_kmod() pinned, and only those. */
int detach_kmod(bool quiet)
{
	char pin[sizeof(pins.links) + 32];
	int i, n = 0, err = 0;

	for (i = 0; i < KMOD_TPS; i++) {
		kmod_pin(pin, sizeof(pin), i);
		if (!unlink(pin))
			n++;
		else if (errno != ENOENT && !err)
			err = -errno;
	}
	if (quiet)
		return err;
	if (err)
		fprintf(stderr, "gradnet-stat: cannot unpin the tracepoint links: %s\n",
			strerror(-err));
	else
		printf("detached %d tracepoint links\n", n);
	return err;
}

/*
 * Attach to the module's tracepoints, as raw tracepoints: the module has
 * no BTF, and a raw tracepoint's arguments are the events' u64 fields in
 * order, so nothing depends on the layout of the trace record. Each link
 * holds a reference on the module: detach --kmod before rmmod.
 */
int attach_kmod(void)
{
	char pin[sizeof(pins.links) + 32];
	struct gradnet_stat_bpf *skel;
	int i, err;

	if (access("/sys/module/gradnet", F_OK)) {
		fprintf(stderr, "gradnet-stat: the gradnet kernel module is not loaded (no /sys/module/gradnet): insmod gradnet.ko first\n");
		return -ENOENT;
	}
	err = check_kernel(KIND_KMOD);
	if (err)
		return err;
	skel = open_load(KIND_KMOD, 0, NULL);
	if (!skel)
		return -EINVAL;
	for (i = 0; i < KMOD_TPS && !err; i++) {
		struct bpf_link *l;

		l = bpf_program__attach_raw_tracepoint(kmod_prog(skel, i),
						       kmod_tps[i]);
		if (!l) {
			err = -errno;
			fprintf(stderr, "gradnet-stat: cannot attach to tracepoint gradnet:%s: %s%s\n",
				kmod_tps[i], strerror(-err), err == -ENOENT ?
				" (a gradnet module without tracepoints?)" : "");
			break;
		}
		kmod_pin(pin, sizeof(pin), i);
		unlink(pin);	/* a second attach replaces the first */
		err = bpf_link__pin(l, pin);
		bpf_link__destroy(l);	/* the pin holds it now */
		if (err)
			fprintf(stderr, "gradnet-stat: cannot pin %s: %s%s\n", pin,
				strerror(-err), err == -EINVAL ?
				" (raw tracepoint links are pinnable since Linux 5.7)" : "");
	}
	gradnet_stat_bpf__destroy(skel);
	if (err) {
		detach_kmod(true);
		return err;
	}
	printf("attached to the %d tracepoints of the gradnet module, links in %s\n",
	       KMOD_TPS, pins.links);
	return 0;
}
