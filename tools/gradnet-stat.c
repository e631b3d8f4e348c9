// SPDX-License-Identifier: MIT
/*
 * gradnet-stat.c - per-flow statistics of gradnet jobs with eBPF: attaches
 * bpf/gradnet_stat.bpf.c to libgradnet's USDT probes, to the kernel
 * module's tracepoints and to interfaces (tc clsact), pins the maps and
 * links under /sys/fs/bpf/gradnet so the counting goes on after this
 * process exits, and reads the maps back.
 *
 *   gradnet-stat attach --lib PATH           every process that maps PATH
 *   gradnet-stat attach --pid PID [--lib PATH]
 *   gradnet-stat attach --kmod               the gradnet module's tracepoints
 *   gradnet-stat attach --dev IFACE [--netns NAME]
 *   gradnet-stat detach [--kmod | --dev IFACE [--netns NAME]]
 *   gradnet-stat dump [--json | --openmetrics]
 *   gradnet-stat top [--interval S] [--count N] [--job J] [--tensor T]
 *
 * USDT probes are attached here, not by libbpf's USDT support: libbpf
 * hides the uprobe links of a USDT attachment, and only links can be
 * pinned. So this file reads the .note.stapsdt notes itself, attaches one
 * uprobe per probe site and tells the program, through the BPF cookie,
 * which register holds each argument.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <libelf.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gradnet/gradnet.h>

#include "gradnet_stat.h"
#include "gradnet_stat.skel.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif
#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

/*
 * Where the pins go: GN_STAT_PIN_DIR, or the directory the environment
 * variable of that name gives (tests use their own, so they never touch
 * an operator's).
 */
static char pin_dir[PATH_MAX], link_dir[PATH_MAX + 8];
static char flows_pin[PATH_MAX + 16], wire_pin[PATH_MAX + 16];
static char hist_pin[PATH_MAX + 16], qdisc_pin[PATH_MAX + 16];
#define LINK_DIR		link_dir
#define FLOWS_PIN		flows_pin
#define WIRE_PIN		wire_pin
#define HIST_PIN		hist_pin
#define QDISC_PIN		qdisc_pin

static void set_pin_dir(void)
{
	const char *d = getenv("GN_STAT_PIN_DIR");

	snprintf(pin_dir, sizeof(pin_dir), "%s", d && *d ? d : GN_STAT_PIN_DIR);
	snprintf(link_dir, sizeof(link_dir), "%s/links", pin_dir);
	snprintf(flows_pin, sizeof(flows_pin), "%s/gn_flows", pin_dir);
	snprintf(wire_pin, sizeof(wire_pin), "%s/gn_wire", pin_dir);
	snprintf(hist_pin, sizeof(hist_pin), "%s/gn_step_hist", pin_dir);
	snprintf(qdisc_pin, sizeof(qdisc_pin), "%s/gn_tc_qdisc", pin_dir);
}

/* Runs before a loss injector on the same hook (gn-loss: prio 0x4e4c). */
#define GN_STAT_TC_HANDLE	0x6e67
#define GN_STAT_TC_PRIO		0x4e47

/* An unused argument slot: past struct pt_regs, reads as 0. */
#define ARG_NONE		31
/* A slot that reads as 1: the count of a library from before it had one. */
#define ARG_ONE			30
#define MAX_ARGS		9

struct opts {
	const char *lib, *dev, *netns;
	int pid;
	bool kmod, json, openmetrics;
	double interval;
	long count;
	long long job, tensor;
};

/* Which of the object's programs a load takes: those of one attach kind. */
enum prog_kind {
	KIND_USDT,	/* uprobes on the USDT probes */
	KIND_KMOD,	/* raw tracepoints of the module */
	KIND_TC,	/* clsact ingress and egress */
};

#define KIND_BIT(k)	(1 << (k))
#define KIND_ALL	(KIND_BIT(KIND_USDT) | KIND_BIT(KIND_KMOD) | KIND_BIT(KIND_TC))

static enum prog_kind prog_kind(const struct bpf_program *p)
{
	switch (bpf_program__type(p)) {
	case BPF_PROG_TYPE_SCHED_CLS:
		return KIND_TC;
	case BPF_PROG_TYPE_RAW_TRACEPOINT:
		return KIND_KMOD;
	default:
		return KIND_USDT;
	}
}

/* ---- environment checks --------------------------------------------------- */

/* Why BPF cannot work here, said once, before anything is loaded. */
static int check_env(void)
{
	struct statfs fs;

	if (geteuid() != 0) {
		fprintf(stderr, "gradnet-stat: needs root (CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN)\n");
		return -EPERM;
	}
	if (statfs("/sys/fs/bpf", &fs) || fs.f_type != BPF_FS_MAGIC) {
		fprintf(stderr, "gradnet-stat: no bpffs at /sys/fs/bpf: mount -t bpf bpf /sys/fs/bpf\n");
		return -ENOENT;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "gradnet-stat: the kernel has no BTF (/sys/kernel/btf/vmlinux): it needs CONFIG_DEBUG_INFO_BTF\n");
		return -ENOENT;
	}
	return 0;
}

/* The running kernel's version as 0xMMmmpp (4.17.0: 0x041100), 0 if unknown. */
static unsigned int kernel_version(char *rel, size_t len)
{
	unsigned int maj = 0, min = 0;
	struct utsname u;

	if (uname(&u) || sscanf(u.release, "%u.%u", &maj, &min) != 2)
		return 0;
	snprintf(rel, len, "%s", u.release);
	return maj << 16 | min << 8;
}

static int probe_percpu_hash(void)
{
	return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_PERCPU_HASH, NULL);
}

static int probe_kprobe(void)
{
	return libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL);
}

static int probe_attach_cookie(void)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE,
				       BPF_FUNC_get_attach_cookie, NULL);
}

static int probe_raw_tp(void)
{
	return libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL);
}

static int probe_sched_cls(void)
{
	return libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SCHED_CLS, NULL);
}

/*
 * What the programs of each attach kind need from the kernel: probed
 * where the kernel can be asked (libbpf's probes load a tiny program),
 * else read from the version (@since, 0xMMmm00) when nothing else tells.
 */
static const struct kernel_need {
	int kinds;			/* bit per enum prog_kind */
	const char *what;
	unsigned int since;
	int (*probe)(void);
} kernel_needs[] = {
	{ KIND_ALL, "BPF_MAP_TYPE_PERCPU_HASH maps (Linux 4.6)", 0x040600,
	  probe_percpu_hash },
	{ KIND_BIT(KIND_USDT), "BPF_PROG_TYPE_KPROBE programs on uprobes (Linux 4.1)",
	  0x040100, probe_kprobe },
	{ KIND_BIT(KIND_USDT), "bpf_get_attach_cookie() in uprobe programs and BPF perf links, which pin them (Linux 5.15)",
	  0x050f00, probe_attach_cookie },
	{ KIND_BIT(KIND_KMOD), "BPF_PROG_TYPE_RAW_TRACEPOINT programs (Linux 4.17)",
	  0x041100, probe_raw_tp },
	{ KIND_BIT(KIND_KMOD), "raw tracepoints of modules as pinnable BPF links (Linux 5.7)",
	  0x050700, NULL },
	{ KIND_BIT(KIND_TC), "BPF_PROG_TYPE_SCHED_CLS programs in direct-action mode (Linux 4.5)",
	  0x040500, probe_sched_cls },
	{ KIND_BIT(KIND_TC), "the clsact qdisc (Linux 4.5, CONFIG_NET_SCH_INGRESS)",
	  0x040500, NULL },
};

/*
 * Whether this kernel has what the programs of @kind need; if not, name
 * the first missing feature and the Linux version that brought it.
 */
static int check_kernel(enum prog_kind kind)
{
	unsigned int ver;
	char rel[65] = "?";
	size_t i;
	int have;

	ver = kernel_version(rel, sizeof(rel));
	for (i = 0; i < sizeof(kernel_needs) / sizeof(*kernel_needs); i++) {
		const struct kernel_need *n = &kernel_needs[i];

		if (!(n->kinds & KIND_BIT(kind)))
			continue;
		have = n->probe ? n->probe() : !ver || ver >= n->since;
		if (have == 1)
			continue;
		if (have < 0)
			fprintf(stderr, "gradnet-stat: cannot ask the kernel (%s) whether it has %s: %s\n",
				rel, n->what, strerror(-have));
		else
			fprintf(stderr, "gradnet-stat: this kernel (%s) lacks %s\n",
				rel, n->what);
		return have < 0 ? have : -EOPNOTSUPP;
	}
	return 0;
}

static int mkdir_p(const char *dir)
{
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "gradnet-stat: mkdir %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_DEBUG && !getenv("GN_STAT_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* The skeleton, its maps pinned by name under GN_STAT_PIN_DIR, loaded. */
static struct gradnet_stat_bpf *open_load(enum prog_kind kind, __u64 netns)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = pin_dir);
	struct gradnet_stat_bpf *skel;
	struct bpf_program *p;
	int err;

	skel = gradnet_stat_bpf__open_opts(&oo);
	if (!skel) {
		fprintf(stderr, "gradnet-stat: cannot open the BPF object: %s\n",
			strerror(errno));
		return NULL;
	}
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, prog_kind(p) == kind);
	skel->rodata->gn_netns_cookie = netns;
	err = gradnet_stat_bpf__load(skel);
	if (err) {
		fprintf(stderr, "gradnet-stat: cannot load the BPF programs: %s%s\n",
			strerror(-err), err == -EINVAL ?
			" (a kernel older than 5.15 lacks BPF cookies and perf links)" : "");
		gradnet_stat_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

/* ---- USDT ------------------------------------------------------------------ */

/* uapi x86-64 struct pt_regs, in slot order. */
static const char *const pt_regs_names[] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
	"rax", "rcx", "rdx", "rsi", "rdi",
};

/*
 * "8@%rdx 8@%rcx ..." as a cookie: 5 bits of pt_regs slot per argument.
 * Return: how many arguments, or -EINVAL.
 */
static int args_cookie(const char *args, __u64 *cookie)
{
	char copy[256], *tok, *save = NULL;
	unsigned int i = 0, r;

	*cookie = 0;
	for (r = 0; r < MAX_ARGS; r++)
		*cookie |= (__u64)ARG_NONE << (5 * r);
	snprintf(copy, sizeof(copy), "%s", args);
	for (tok = strtok_r(copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save), i++) {
		const char *reg = strstr(tok, "@%");

		if (i >= MAX_ARGS || !reg || (strncmp(tok, "8@", 2) &&
					      strncmp(tok, "-8@", 3)))
			return -EINVAL;
		for (r = 0; r < sizeof(pt_regs_names) / sizeof(*pt_regs_names); r++)
			if (!strcmp(reg + 2, pt_regs_names[r]))
				break;
		if (r == sizeof(pt_regs_names) / sizeof(*pt_regs_names))
			return -EINVAL;
		*cookie &= ~((__u64)31 << (5 * i));
		*cookie |= (__u64)r << (5 * i);
	}
	return (int)i;
}

/* A probe site's virtual address as a file offset, for the uprobe. */
static long vaddr_to_off(Elf *e, __u64 addr)
{
	size_t n, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return -1;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_memsz)
			return (long)(addr - ph.p_vaddr + ph.p_offset);
	}
	return -1;
}

struct usdt_site {
	char name[32];
	long off;
	__u64 cookie;
	int nargs;
};

/* The gradnet probe sites of @path: notes in .note.stapsdt. */
static int usdt_sites(const char *path, struct usdt_site *out, int cap)
{
	__u64 base_addr = 0;
	bool have_base = false;
	Elf_Scn *scn = NULL, *notes = NULL;
	int fd, n = 0, err = 0;
	size_t shstr;
	Elf *e;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getshdrstrndx(e, &shstr)) {
		err = -ENOEXEC;
		goto out_close;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstr, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".note.stapsdt") && sh.sh_type == SHT_NOTE)
			notes = scn;
		/* Prelinking moves the code: sites are relative to this. */
		if (!strcmp(name, ".stapsdt.base")) {
			base_addr = sh.sh_addr;
			have_base = true;
		}
	}
	if (notes) {
		Elf_Data *d = elf_getdata(notes, NULL);
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
			const char *desc = (const char *)d->d_buf + desc_off;
			const char *prov, *probe, *args;
			__u64 pc, base;

			if (nh.n_type != 3 || nh.n_descsz < 3 * 8 + 3)
				continue;
			memcpy(&pc, desc, 8);
			memcpy(&base, desc + 8, 8);
			prov = desc + 24;
			probe = prov + strlen(prov) + 1;
			args = probe + strlen(probe) + 1;
			if (strcmp(prov, "gradnet") || n >= cap)
				continue;
			if (have_base)
				pc += base_addr - base;
			snprintf(out[n].name, sizeof(out[n].name), "%s", probe);
			out[n].off = vaddr_to_off(e, pc);
			out[n].nargs = args_cookie(args, &out[n].cookie);
			if (out[n].off < 0 || out[n].nargs < 0) {
				fprintf(stderr, "gradnet-stat: %s: probe %s has arguments '%s' that are not all 64-bit registers (build with -DSTAP_SDT_ARG_CONSTRAINT=nr)\n",
					path, probe, args);
				err = -EINVAL;
				break;
			}
			n++;
		}
	}
	elf_end(e);
out_close:
	close(fd);
	return err ? err : n;
}

/*
 * The program of probe @site, or NULL. A probe that lacks its last
 * argument, the count (a library from before the core coalesced events),
 * gets a cookie in which the count reads as 1: one hit, one event.
 */
static struct bpf_program *usdt_prog(struct gradnet_stat_bpf *s,
				     struct usdt_site *site)
{
	static const struct {
		const char *name;
		size_t off;
		int counted;	/* arguments, the last a count; 0: no count */
	} t[] = {
		{ "msg", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_msg), 9 },
		{ "tx", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_tx), 9 },
		{ "tx_ctl", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_tx_ctl), 6 },
		{ "rx", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_rx), 8 },
		{ "drop", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_drop), 6 },
		{ "step", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_step), 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(*t); i++) {
		int last = t[i].counted - 1;

		if (strcmp(site->name, t[i].name))
			continue;
		if (t[i].counted && site->nargs == last) {
			site->cookie &= ~((__u64)31 << (5 * last));
			site->cookie |= (__u64)ARG_ONE << (5 * last);
		}
		return *(struct bpf_program **)((char *)s + t[i].off);
	}
	return NULL;
}

/* The file of process @pid that holds gradnet probes: a library or its exe. */
static int find_probed_file(int pid, char *path, size_t len)
{
	struct usdt_site site;
	char maps[64], line[PATH_MAX + 128];
	FILE *f;
	int found = 0;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "r");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (!p || !strstr(line, " r-xp "))
			continue;
		p[strcspn(p, "\n")] = 0;
		if (usdt_sites(p, &site, 1) > 0) {
			snprintf(path, len, "%s", p);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

static int attach_usdt(const struct opts *o)
{
	struct usdt_site sites[64];
	char path[PATH_MAX], tag[64], pin[2 * PATH_MAX];
	struct gradnet_stat_bpf *skel;
	struct stat st;
	int n, i, err = 0, pinned = 0;

	if (o->lib) {
		snprintf(path, sizeof(path), "%s", o->lib);
	} else if (find_probed_file(o->pid, path, sizeof(path))) {
		fprintf(stderr, "gradnet-stat: process %d maps no file with gradnet probes\n",
			o->pid);
		return -ENOENT;
	}
	n = usdt_sites(path, sites, 64);
	if (n < 0 || stat(path, &st)) {
		fprintf(stderr, "gradnet-stat: cannot read %s: %s\n", path,
			strerror(n < 0 ? -n : errno));
		return n < 0 ? n : -errno;
	}
	if (!n) {
		fprintf(stderr, "gradnet-stat: %s has no gradnet USDT probes\n", path);
		return -ENOENT;
	}
	err = check_kernel(KIND_USDT);
	if (err)
		return err;
	skel = open_load(KIND_USDT, 0);
	if (!skel)
		return -EINVAL;
	/* Names say what a link is for: pid (or all) and the file's inode. */
	snprintf(tag, sizeof(tag), "usdt-%s%d-%lx-%lx", o->pid > 0 ? "pid" : "all",
		 o->pid > 0 ? o->pid : 0, (unsigned long)st.st_dev,
		 (unsigned long)st.st_ino);
	for (i = 0; i < n; i++) {
		struct bpf_program *p = usdt_prog(skel, &sites[i]);
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = sites[i].cookie);
		struct bpf_link *l;

		if (!p)
			continue;	/* a probe of a newer library */
		l = bpf_program__attach_uprobe_opts(p, o->pid > 0 ? o->pid : -1,
						    path, (size_t)sites[i].off, &uo);
		if (!l) {
			err = -errno;
			fprintf(stderr, "gradnet-stat: cannot attach to probe %s in %s: %s\n",
				sites[i].name, path, strerror(-err));
			break;
		}
		snprintf(pin, sizeof(pin), "%s/%s-%s-%lx", LINK_DIR, tag,
			 sites[i].name, sites[i].off);
		unlink(pin);
		err = bpf_link__pin(l, pin);
		bpf_link__destroy(l);	/* the pin holds it now */
		if (err) {
			fprintf(stderr, "gradnet-stat: cannot pin %s: %s\n", pin,
				strerror(-err));
			break;
		}
		pinned++;
	}
	gradnet_stat_bpf__destroy(skel);
	if (!err)
		printf("attached %d probe sites of %s%s%.0d, links in %s\n",
		       pinned, path, o->pid > 0 ? " in process " : "",
		       o->pid > 0 ? o->pid : 0, LINK_DIR);
	return err;
}

/* ---- the module's tracepoints ------------------------------------------ */

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
	snprintf(buf, len, "%s/kmod-%s", LINK_DIR, kmod_tps[i]);
}

/* Unpin the tracepoint links attach_kmod() pinned, and only those. */
static int detach_kmod(bool quiet)
{
	char pin[sizeof(link_dir) + 32];
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
static int attach_kmod(void)
{
	char pin[sizeof(link_dir) + 32];
	struct gradnet_stat_bpf *skel;
	int i, err;

	if (access("/sys/module/gradnet", F_OK)) {
		fprintf(stderr, "gradnet-stat: the gradnet kernel module is not loaded (no /sys/module/gradnet): insmod gradnet.ko first\n");
		return -ENOENT;
	}
	err = check_kernel(KIND_KMOD);
	if (err)
		return err;
	skel = open_load(KIND_KMOD, 0);
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
	       KMOD_TPS, LINK_DIR);
	return 0;
}

/* ---- tc ----------------------------------------------------------------- */

/* Enter network namespace @name (ip netns), keeping the mount namespace. */
static int enter_netns(const char *name)
{
	char path[PATH_MAX];
	int fd, err = 0;

	if (!name)
		return 0;
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		err = -errno;
		fprintf(stderr, "gradnet-stat: cannot enter network namespace %s: %s\n",
			name, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	return err;
}

static __u64 netns_cookie(void)
{
	socklen_t len = sizeof(__u64);
	__u64 c = 0;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd >= 0) {
		getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &c, &len);
		close(fd);
	}
	return c;
}

static int dev_index(const char *dev)
{
	int ifindex = (int)if_nametoindex(dev);

	if (!ifindex)
		fprintf(stderr, "gradnet-stat: no interface %s here\n", dev);
	return ifindex;
}

static int attach_tc(const struct opts *o)
{
	static const enum bpf_tc_attach_point dirs[] = { BPF_TC_INGRESS,
							 BPF_TC_EGRESS };
	struct gradnet_stat_bpf *skel;
	struct gn_stat_qdisc_key qk;
	int ifindex, err = 0, d;
	__u64 one = 1;

	err = enter_netns(o->netns);
	if (err)
		return err;
	ifindex = dev_index(o->dev);
	if (!ifindex)
		return -ENODEV;
	err = check_kernel(KIND_TC);
	if (err)
		return err;
	qk.netns = netns_cookie();
	qk.ifindex = (__u64)ifindex;
	skel = open_load(KIND_TC, qk.netns);
	if (!skel)
		return -EINVAL;
	for (d = 0; d < 2 && !err; d++) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = dirs[d]);
		LIBBPF_OPTS(bpf_tc_opts, to, .handle = GN_STAT_TC_HANDLE,
			    .priority = GN_STAT_TC_PRIO, .flags = BPF_TC_F_REPLACE);
		struct bpf_program *p = d ? skel->progs.gn_tc_egress :
					    skel->progs.gn_tc_ingress;

		/* One clsact qdisc holds both hooks: create it once. */
		err = d ? -EEXIST : bpf_tc_hook_create(&hook);
		if (err && err != -EEXIST) {
			fprintf(stderr, "gradnet-stat: cannot create the clsact qdisc of %s: %s%s\n",
				o->dev, strerror(-err), err == -EOPNOTSUPP ||
				err == -ENOENT ? " (the kernel lacks clsact: Linux 4.5, CONFIG_NET_SCH_INGRESS)" : "");
			break;
		}
		/* Ours if it did not exist: detach then removes it again. */
		if (!err && !d)
			err = bpf_map__update_elem(skel->maps.gn_tc_qdisc, &qk,
						   sizeof(qk), &one, sizeof(one),
						   BPF_ANY);
		if (err == -EEXIST)
			err = 0;
		to.prog_fd = bpf_program__fd(p);
		if (!err)
			err = bpf_tc_attach(&hook, &to);
		if (err)
			fprintf(stderr, "gradnet-stat: cannot attach to %s %s: %s\n",
				o->dev, d ? "egress" : "ingress", strerror(-err));
	}
	gradnet_stat_bpf__destroy(skel);
	if (!err)
		printf("attached to %s%s%s ingress and egress (tc handle %#x prio %#x)\n",
		       o->dev, o->netns ? " in netns " : "", o->netns ? o->netns : "",
		       GN_STAT_TC_HANDLE, GN_STAT_TC_PRIO);
	return err;
}

/*
 * Remove the clsact qdisc of @ifindex if attach_tc created it (the map
 * gn_tc_qdisc says so), with whatever filters it still holds.
 */
static int remove_own_qdisc(const char *dev, int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	struct gn_stat_qdisc_key qk = { .netns = netns_cookie(),
					.ifindex = (__u64)ifindex };
	int fd = bpf_obj_get(QDISC_PIN), err = 0;
	__u64 v;

	if (fd < 0)
		return 0;	/* nothing recorded: no qdisc of ours */
	if (!bpf_map_lookup_elem(fd, &qk, &v)) {
		err = bpf_tc_hook_destroy(&hook);
		if (err && err != -ENOENT)
			fprintf(stderr, "gradnet-stat: cannot remove the clsact qdisc of %s: %s\n",
				dev, strerror(-err));
		else
			err = bpf_map_delete_elem(fd, &qk) ? -errno : 0;
	}
	close(fd);
	return err;
}

static int detach_tc(const struct opts *o)
{
	static const enum bpf_tc_attach_point dirs[] = { BPF_TC_INGRESS,
							 BPF_TC_EGRESS };
	int ifindex, d, err, ret = 0;

	err = enter_netns(o->netns);
	if (err)
		return err;
	ifindex = dev_index(o->dev);
	if (!ifindex)
		return -ENODEV;
	for (d = 0; d < 2; d++) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = dirs[d]);
		LIBBPF_OPTS(bpf_tc_opts, to, .handle = GN_STAT_TC_HANDLE,
			    .priority = GN_STAT_TC_PRIO);

		err = bpf_tc_detach(&hook, &to);
		if (err && err != -ENOENT) {
			fprintf(stderr, "gradnet-stat: cannot detach from %s: %s\n",
				o->dev, strerror(-err));
			ret = err;
		}
	}
	err = remove_own_qdisc(o->dev, ifindex);
	return ret ? ret : err;
}

/* Unpin every link and map this tool pinned, then their directories. */
static int detach_all(void)
{
	static const char *const maps[] = { FLOWS_PIN, WIRE_PIN, HIST_PIN,
					    QDISC_PIN };
	char path[sizeof(link_dir) + 260];
	struct dirent *de;
	struct gn_stat_qdisc_key qk;
	int links = 0, err = 0, qfd;
	size_t i;
	DIR *dir;

	dir = opendir(LINK_DIR);
	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", LINK_DIR, de->d_name);
		if (unlink(path)) {
			fprintf(stderr, "gradnet-stat: unlink %s: %s\n", path,
				strerror(errno));
			err = -errno;
		} else {
			links++;
		}
	}
	if (dir)
		closedir(dir);
	qfd = bpf_obj_get(QDISC_PIN);
	if (qfd >= 0) {
		if (!bpf_map_get_next_key(qfd, NULL, &qk))
			fprintf(stderr, "gradnet-stat: clsact qdiscs this tool created stay (detach --dev first to remove them)\n");
		close(qfd);
	}
	for (i = 0; i < sizeof(maps) / sizeof(*maps); i++)
		if (unlink(maps[i]) && errno != ENOENT) {
			fprintf(stderr, "gradnet-stat: unlink %s: %s\n", maps[i],
				strerror(errno));
			err = -errno;
		}
	if ((rmdir(LINK_DIR) && errno != ENOENT) ||
	    (rmdir(pin_dir) && errno != ENOENT)) {
		fprintf(stderr, "gradnet-stat: %s holds files this tool did not pin\n",
			pin_dir);
		err = -ENOTEMPTY;
	}
	if (!err)
		printf("detached %d links, unpinned the maps\n", links);
	return err;
}

/* ---- reading the maps ------------------------------------------------------ */

struct flow {
	struct gn_stat_key k;
	struct gn_stat_flow v;
};

struct wire {
	struct gn_stat_wire_key k;
	struct gn_stat_wire v;
};

/* The flow's last step, a word of struct gn_stat_flow that is no count. */
#define LAST_STEP_WORD ((int)(offsetof(struct gn_stat_flow, last_step) / 8))

/*
 * Every record of a pinned map, key then value; a per-CPU map's values are
 * summed over the CPUs, except the word at index @max_word (-1: none),
 * which is a latest value, not a count, and takes the CPUs' largest.
 */
static void *map_read(const char *pin, size_t ksz, size_t vsz, bool percpu,
		      int max_word, size_t *count)
{
	int fd = bpf_obj_get(pin), ncpu = percpu ? libbpf_num_possible_cpus() : 1;
	size_t n = 0, cap = 0, rec = ksz + vsz;
	char key[128], next[128];
	__u64 *vals = NULL;
	char *out = NULL;
	void *prev = NULL;

	*count = 0;
	if (fd < 0) {
		fprintf(stderr, "gradnet-stat: %s: %s (not attached?)\n", pin,
			strerror(errno));
		return NULL;
	}
	vals = calloc((size_t)ncpu, vsz);
	if (!vals)
		goto out;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		__u64 *sum;
		size_t w;
		int c;

		memcpy(key, next, ksz);
		prev = key;
		if (bpf_map_lookup_elem(fd, key, vals))
			continue;	/* deleted meanwhile */
		if (n == cap) {
			char *grown = realloc(out, (cap = cap * 2 + 64) * rec);

			if (!grown)
				break;
			out = grown;
		}
		memcpy(out + n * rec, key, ksz);
		sum = (__u64 *)(out + n * rec + ksz);
		memset(sum, 0, vsz);
		for (c = 0; c < ncpu; c++)
			for (w = 0; w < vsz / 8; w++) {
				__u64 v = vals[(size_t)c * (vsz / 8) + w];

				if ((int)w != max_word)
					sum[w] += v;
				else if (v > sum[w])
					sum[w] = v;
			}
		n++;
	}
out:
	free(vals);
	close(fd);
	*count = n;
	return out ? out : calloc(1, 1);
}

/*
 * The flows, their counts summed over the CPUs; last_step is no count but
 * the flow's latest step, so it takes the CPUs' largest.
 */
static struct flow *read_flows(size_t *count)
{
	return map_read(FLOWS_PIN, sizeof(struct gn_stat_key),
			sizeof(struct gn_stat_flow), true, LAST_STEP_WORD, count);
}

static const char *phase_name(__u64 phase)
{
	switch (phase) {
	case 0:
		return "reduce";
	case 1:
		return "gather";
	case GN_STAT_PHASE_CTL:
		return "ctl";
	case GN_STAT_PHASE_NONE:
		return "none";
	}
	return "?";
}

static const char *transport_name(__u64 t)
{
	switch (t) {
	case GN_STAT_TRANSPORT_UDP:
		return "udp";
	case GN_STAT_TRANSPORT_DPDK:
		return "dpdk";
	case GN_STAT_TRANSPORT_KMOD:
		return "kmod";
	}
	return "?";
}

static void print_rank(__u64 r)
{
	if (r == GN_STAT_RANK_ALL)
		printf("\"all\"");
	else if (r == GN_STAT_RANK_NONE)
		printf("\"none\"");
	else
		printf("%llu", (unsigned long long)r);
}

static void dump_flow_json(const struct flow *f)
{
	const struct gn_stat_key *k = &f->k;
	const struct gn_stat_flow *v = &f->v;
	int i;

	printf("{\"job\": %llu, \"src\": ", (unsigned long long)k->job);
	print_rank(k->src);
	printf(", \"dst\": ");
	print_rank(k->dst);
	printf(", \"tensor\": %llu, \"phase\": \"%s\", \"transport\": \"%s\", "
	       "\"tx_packets\": %llu, \"tx_wire_bytes\": %llu, \"retransmits\": %llu, "
	       "\"messages\": %llu, \"raw_bytes\": %llu, \"stream_bytes\": %llu, "
	       "\"ctl_packets\": %llu, \"ctl_bytes\": %llu, \"rx_packets\": %llu, "
	       "\"rx_wire_bytes\": %llu, \"steps\": %llu, \"last_step\": %llu, "
	       "\"step_ns\": %llu, \"drops\": {",
	       (unsigned long long)k->tensor, phase_name(k->phase),
	       transport_name(k->transport),
	       (unsigned long long)v->tx_packets,
	       (unsigned long long)v->tx_wire_bytes,
	       (unsigned long long)v->retransmits,
	       (unsigned long long)v->messages,
	       (unsigned long long)v->raw_bytes,
	       (unsigned long long)v->stream_bytes,
	       (unsigned long long)v->ctl_packets,
	       (unsigned long long)v->ctl_bytes,
	       (unsigned long long)v->rx_packets,
	       (unsigned long long)v->rx_wire_bytes,
	       (unsigned long long)v->steps,
	       (unsigned long long)v->last_step,
	       (unsigned long long)v->step_ns);
	for (i = 0; i < GN_STAT_DROPS; i++)
		printf("%s\"%s\": %llu", i ? ", " : "", gn_drop_name(i),
		       (unsigned long long)v->drops[i]);
	printf("}}");
}

static void dump_wire_json(const struct wire *w)
{
	printf("{\"job\": %llu, \"src\": ", (unsigned long long)w->k.job);
	print_rank(w->k.src);
	printf(", \"dst\": ");
	print_rank(w->k.dst);
	printf(", \"tensor\": %llu, \"phase\": \"%s\", \"ifindex\": %llu, "
	       "\"netns\": %llu, \"dir\": \"%s\", \"packets\": %llu, "
	       "\"bytes\": %llu, \"skbs\": %llu}",
	       (unsigned long long)w->k.tensor, phase_name(w->k.phase),
	       (unsigned long long)w->k.ifindex, (unsigned long long)w->k.netns,
	       w->k.egress ? "egress" : "ingress",
	       (unsigned long long)w->v.packets, (unsigned long long)w->v.bytes,
	       (unsigned long long)w->v.skbs);
}

static void dump_hist_json(const struct gn_stat_hist_key *k,
			   const struct gn_stat_hist *h)
{
	int i, last = 0;

	for (i = 0; i < GN_STAT_HIST_BUCKETS; i++)
		if (h->count[i])
			last = i + 1;
	printf("{\"job\": %llu, \"rank\": %llu, \"tensor\": %llu, "
	       "\"transport\": \"%s\", \"log2_us\": [",
	       (unsigned long long)k->job, (unsigned long long)k->rank,
	       (unsigned long long)k->tensor, transport_name(k->transport));
	for (i = 0; i < last; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)h->count[i]);
	printf("]}");
}

static int dump_json(void)
{
	size_t nf, nw, nh, i;
	struct flow *f = read_flows(&nf);
	struct wire *w = map_read(WIRE_PIN, sizeof(w->k), sizeof(w->v), true, -1, &nw);
	char *h = map_read(HIST_PIN, sizeof(struct gn_stat_hist_key),
			   sizeof(struct gn_stat_hist), false, -1, &nh);
	size_t hrec = sizeof(struct gn_stat_hist_key) + sizeof(struct gn_stat_hist);

	if (!f || !w || !h) {
		free(f);
		free(w);
		free(h);
		return -ENOENT;
	}
	printf("{\"flows\": [");
	for (i = 0; i < nf; i++) {
		printf(i ? ",\n  " : "\n  ");
		dump_flow_json(&f[i]);
	}
	printf("],\n\"wire\": [");
	for (i = 0; i < nw; i++) {
		printf(i ? ",\n  " : "\n  ");
		dump_wire_json(&w[i]);
	}
	printf("],\n\"step_hist\": [");
	for (i = 0; i < nh; i++) {
		printf(i ? ",\n  " : "\n  ");
		dump_hist_json((void *)(h + i * hrec),
			       (void *)(h + i * hrec + sizeof(struct gn_stat_hist_key)));
	}
	printf("]}\n");
	free(f);
	free(w);
	free(h);
	return 0;
}

static int cmp_flow(const void *a, const void *b)
{
	const struct gn_stat_key *x = &((const struct flow *)a)->k;
	const struct gn_stat_key *y = &((const struct flow *)b)->k;

	return memcmp(x, y, sizeof(*x)) < 0 ? -1 : 1;
}

static const struct flow *find_flow(const struct flow *f, size_t n,
				    const struct gn_stat_key *k)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!memcmp(&f[i].k, k, sizeof(*k)))
			return &f[i];
	return NULL;
}

/* ---- OpenMetrics ---------------------------------------------------------- */

/*
 * The counters of struct gn_stat_flow, one metric family each. TYPE and
 * HELP name the samples themselves (the _total included), as the
 * Prometheus text format that node exporter's textfile collector parses
 * wants; the closing # EOF is a comment to that parser.
 */
static const struct om_family {
	const char *name, *type, *help;
	size_t off;
} om_flow_families[] = {
	{ "gradnet_tx_packets_total", "counter",
	  "Data packets sent, retransmissions included.",
	  offsetof(struct gn_stat_flow, tx_packets) },
	{ "gradnet_tx_wire_bytes_total", "counter",
	  "UDP payload bytes of the data packets sent.",
	  offsetof(struct gn_stat_flow, tx_wire_bytes) },
	{ "gradnet_retransmits_total", "counter",
	  "Data packets sent again.",
	  offsetof(struct gn_stat_flow, retransmits) },
	{ "gradnet_messages_total", "counter",
	  "Chunk messages started.",
	  offsetof(struct gn_stat_flow, messages) },
	{ "gradnet_raw_bytes_total", "counter",
	  "Float32 bytes the chunk messages stand for.",
	  offsetof(struct gn_stat_flow, raw_bytes) },
	{ "gradnet_stream_bytes_total", "counter",
	  "Chunk-stream bytes of the messages.",
	  offsetof(struct gn_stat_flow, stream_bytes) },
	{ "gradnet_ctl_packets_total", "counter",
	  "Control packets sent.",
	  offsetof(struct gn_stat_flow, ctl_packets) },
	{ "gradnet_ctl_bytes_total", "counter",
	  "UDP payload bytes of the control packets sent.",
	  offsetof(struct gn_stat_flow, ctl_bytes) },
	{ "gradnet_rx_packets_total", "counter",
	  "Data packets taken by the receiver.",
	  offsetof(struct gn_stat_flow, rx_packets) },
	{ "gradnet_rx_wire_bytes_total", "counter",
	  "UDP payload bytes of the data packets taken.",
	  offsetof(struct gn_stat_flow, rx_wire_bytes) },
	{ "gradnet_steps_total", "counter",
	  "Allreduces finished.",
	  offsetof(struct gn_stat_flow, steps) },
	{ "gradnet_step_seconds_total", "counter",
	  "Durations of the allreduces finished, summed.",
	  offsetof(struct gn_stat_flow, step_ns) },
	{ "gradnet_last_step", "gauge",
	  "Number of the last allreduce finished.",
	  offsetof(struct gn_stat_flow, last_step) },
}, om_wire_families[] = {
	{ "gradnet_wire_packets_total", "counter",
	  "Gradnet datagrams tc saw on the interface.",
	  offsetof(struct gn_stat_wire, packets) },
	{ "gradnet_wire_bytes_total", "counter",
	  "UDP payload bytes of those datagrams.",
	  offsetof(struct gn_stat_wire, bytes) },
	{ "gradnet_wire_skbs_total", "counter",
	  "Socket buffers the datagrams came in.",
	  offsetof(struct gn_stat_wire, skbs) },
};

static const char *rank_label(char *buf, size_t len, __u64 r)
{
	if (r == GN_STAT_RANK_ALL)
		return "all";
	if (r == GN_STAT_RANK_NONE)
		return "none";
	snprintf(buf, len, "%llu", (unsigned long long)r);
	return buf;
}

static void om_flow_labels(const struct gn_stat_key *k)
{
	char s[24], d[24];

	printf("{job=\"%llu\",src=\"%s\",dst=\"%s\",tensor=\"%llu\",phase=\"%s\",transport=\"%s\"",
	       (unsigned long long)k->job, rank_label(s, sizeof(s), k->src),
	       rank_label(d, sizeof(d), k->dst), (unsigned long long)k->tensor,
	       phase_name(k->phase), transport_name(k->transport));
}

static void om_header(const struct om_family *fam)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name,
	       fam->type);
}

static void om_flows(const struct flow *f, size_t n)
{
	size_t i, j;
	int d;

	for (j = 0; j < sizeof(om_flow_families) / sizeof(*om_flow_families); j++) {
		const struct om_family *fam = &om_flow_families[j];
		bool ns = fam->off == offsetof(struct gn_stat_flow, step_ns);

		om_header(fam);
		for (i = 0; i < n; i++) {
			__u64 v = *(const __u64 *)((const char *)&f[i].v + fam->off);

			printf("%s", fam->name);
			om_flow_labels(&f[i].k);
			if (ns)
				printf("} %llu.%09llu\n", (unsigned long long)(v / 1000000000),
				       (unsigned long long)(v % 1000000000));
			else
				printf("} %llu\n", (unsigned long long)v);
		}
	}
	printf("# HELP gradnet_drops_total Packets the receiver dropped, by reason.\n"
	       "# TYPE gradnet_drops_total counter\n");
	for (i = 0; i < n; i++)
		for (d = 0; d < GN_STAT_DROPS; d++) {
			printf("gradnet_drops_total");
			om_flow_labels(&f[i].k);
			printf(",reason=\"%s\"} %llu\n", gn_drop_name(d),
			       (unsigned long long)f[i].v.drops[d]);
		}
}

static void om_wire(const struct wire *w, size_t n)
{
	char s[24], d[24];
	size_t i, j;

	for (j = 0; j < sizeof(om_wire_families) / sizeof(*om_wire_families); j++) {
		const struct om_family *fam = &om_wire_families[j];

		om_header(fam);
		for (i = 0; i < n; i++) {
			const struct gn_stat_wire_key *k = &w[i].k;

			printf("%s{job=\"%llu\",src=\"%s\",dst=\"%s\",tensor=\"%llu\",phase=\"%s\",ifindex=\"%llu\",netns=\"%llu\",direction=\"%s\"} %llu\n",
			       fam->name, (unsigned long long)k->job,
			       rank_label(s, sizeof(s), k->src),
			       rank_label(d, sizeof(d), k->dst),
			       (unsigned long long)k->tensor, phase_name(k->phase),
			       (unsigned long long)k->ifindex,
			       (unsigned long long)k->netns,
			       k->egress ? "egress" : "ingress",
			       (unsigned long long)*(const __u64 *)((const char *)&w[i].v + fam->off));
		}
	}
}

/*
 * Step latency as a histogram: bucket k of gn_step_hist holds steps of
 * [2^k, 2^(k+1)) microseconds, so its cumulative count is that of le =
 * 2^(k+1) us. The sum comes from the rank's step flow, when there is one.
 */
static void om_hist(const char *h, size_t n, const struct flow *f, size_t nf)
{
	size_t rec = sizeof(struct gn_stat_hist_key) + sizeof(struct gn_stat_hist);
	size_t i;
	int b;

	printf("# HELP gradnet_step_latency_seconds Allreduce durations.\n"
	       "# TYPE gradnet_step_latency_seconds histogram\n");
	for (i = 0; i < n; i++) {
		const struct gn_stat_hist_key *k = (const void *)(h + i * rec);
		const struct gn_stat_hist *v = (const void *)(h + i * rec + sizeof(*k));
		struct gn_stat_key fk = {
			.job = k->job, .src = k->rank, .dst = GN_STAT_RANK_ALL,
			.tensor = k->tensor, .phase = GN_STAT_PHASE_NONE,
			.transport = k->transport,
		};
		const struct flow *sf = find_flow(f, nf, &fk);
		char labels[160];
		__u64 cum = 0;

		snprintf(labels, sizeof(labels),
			 "job=\"%llu\",rank=\"%llu\",tensor=\"%llu\",transport=\"%s\"",
			 (unsigned long long)k->job, (unsigned long long)k->rank,
			 (unsigned long long)k->tensor, transport_name(k->transport));
		for (b = 0; b < GN_STAT_HIST_BUCKETS; b++) {
			cum += v->count[b];
			printf("gradnet_step_latency_seconds_bucket{%s,le=\"%.10g\"} %llu\n",
			       labels, (double)(1ULL << (b + 1)) * 1e-6,
			       (unsigned long long)cum);
		}
		printf("gradnet_step_latency_seconds_bucket{%s,le=\"+Inf\"} %llu\n",
		       labels, (unsigned long long)cum);
		printf("gradnet_step_latency_seconds_count{%s} %llu\n", labels,
		       (unsigned long long)cum);
		if (sf)
			printf("gradnet_step_latency_seconds_sum{%s} %llu.%09llu\n",
			       labels,
			       (unsigned long long)(sf->v.step_ns / 1000000000),
			       (unsigned long long)(sf->v.step_ns % 1000000000));
	}
}

static int dump_openmetrics(void)
{
	size_t nf, nw, nh;
	struct flow *f = read_flows(&nf);
	struct wire *w = map_read(WIRE_PIN, sizeof(w->k), sizeof(w->v), true, -1, &nw);
	char *h = map_read(HIST_PIN, sizeof(struct gn_stat_hist_key),
			   sizeof(struct gn_stat_hist), false, -1, &nh);
	int err = -ENOENT;

	if (!f || !w || !h)
		goto out_free;
	qsort(f, nf, sizeof(*f), cmp_flow);
	om_flows(f, nf);
	om_wire(w, nw);
	om_hist(h, nh, f, nf);
	printf("# EOF\n");
	err = fflush(stdout) ? -errno : 0;
out_free:
	free(f);
	free(w);
	free(h);
	return err;
}

/* ---- the text views: dump and top --------------------------------------- */

static void rank_text(char *buf, size_t len, __u64 r)
{
	if (r == GN_STAT_RANK_ALL)
		snprintf(buf, len, "all");
	else if (r == GN_STAT_RANK_NONE)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%llu", (unsigned long long)r);
}

/* The step histograms, read from gn_step_hist: records of key and value. */
struct hists {
	char *rec;
	size_t n;
};

#define HIST_REC	(sizeof(struct gn_stat_hist_key) + sizeof(struct gn_stat_hist))

/*
 * Quantile @q of the step latency of @rank on (@job, @tensor, @transport),
 * in milliseconds: the upper bound of the bucket where the cumulative
 * count reaches q of the total, so at most twice the true value. Negative
 * if no step was counted.
 */
static double step_quantile_ms(const struct hists *h, const struct gn_stat_key *fk,
			       double q)
{
	const struct gn_stat_hist *v = NULL;
	__u64 total = 0, cum = 0, want;
	size_t i;
	int b;

	for (i = 0; h && i < h->n; i++) {
		const struct gn_stat_hist_key *k = (const void *)(h->rec + i * HIST_REC);

		if (k->job == fk->job && k->rank == fk->src &&
		    k->tensor == fk->tensor && k->transport == fk->transport) {
			v = (const void *)(h->rec + i * HIST_REC + sizeof(*k));
			break;
		}
	}
	if (!v)
		return -1;
	for (b = 0; b < GN_STAT_HIST_BUCKETS; b++)
		total += v->count[b];
	if (!total)
		return -1;
	want = (__u64)((double)total * q);
	if ((double)want < (double)total * q || !want)
		want++;
	for (b = 0; b < GN_STAT_HIST_BUCKETS; b++) {
		cum += v->count[b];
		if (cum >= want)
			break;
	}
	return (double)(1ULL << (b + 1)) / 1000.0;
}

static void print_quantile(double ms)
{
	if (ms < 0)
		printf(" %9s", "-");
	else
		printf(" %9.3f", ms);
}

/*
 * One line per flow: rates over @dt seconds against @old (NULL: totals),
 * then what compression saves (raw / wire), bits per value and the
 * retransmission share, cumulative, and the step latency quantiles of
 * the sender on the flow's tensor, since attach.
 */
static void print_flows(const struct flow *f, size_t n, const struct flow *old,
			size_t nold, double dt, const struct hists *h,
			const struct opts *o)
{
	size_t i;
	int d;

	printf("%-10s %4s %4s %6s %-6s %10s %10s %10s %7s %6s %5s %6s %7s %9s %9s\n",
	       "job", "src", "dst", "tensor", "phase", dt > 0 ? "tx pkt/s" : "tx pkts",
	       dt > 0 ? "wire MB/s" : "wire MB", dt > 0 ? "raw MB/s" : "raw MB",
	       "ratio", "bits/v", "rtx%", "drops", "steps", "p50 ms", "p99 ms");
	for (i = 0; i < n; i++) {
		const struct gn_stat_key *k = &f[i].k;
		const struct gn_stat_flow *v = &f[i].v;
		const struct flow *p = old ? find_flow(old, nold, k) : NULL;
		double pk = (double)v->tx_packets;
		double wb = (double)v->tx_wire_bytes;
		double rb = (double)v->raw_bytes, div = dt > 0 ? dt : 1;
		char src[8], dst[8];
		__u64 drops = 0;

		if ((o->job >= 0 && (long long)k->job != o->job) ||
		    (o->tensor >= 0 && (long long)k->tensor != o->tensor))
			continue;
		for (d = 0; d < GN_STAT_DROPS; d++)
			drops += v->drops[d];
		if (p) {
			pk -= (double)p->v.tx_packets;
			wb -= (double)p->v.tx_wire_bytes;
			rb -= (double)p->v.raw_bytes;
		}
		rank_text(src, sizeof(src), k->src);
		rank_text(dst, sizeof(dst), k->dst);
		printf("%-10llu %4s %4s %6llu %-6s %10.0f %10.2f %10.2f %7.1f %6.3f %5.2f %6llu %7llu",
		       (unsigned long long)k->job, src, dst,
		       (unsigned long long)k->tensor, phase_name(k->phase),
		       pk / div, wb / div / 1e6, rb / div / 1e6,
		       v->tx_wire_bytes ? (double)v->raw_bytes / (double)v->tx_wire_bytes : 0.0,
		       v->raw_bytes ? (double)v->tx_wire_bytes * 8 / ((double)v->raw_bytes / 4) : 0.0,
		       v->tx_packets ? 100.0 * (double)v->retransmits / (double)v->tx_packets : 0.0,
		       (unsigned long long)drops, (unsigned long long)v->steps);
		print_quantile(step_quantile_ms(h, k, 0.50));
		print_quantile(step_quantile_ms(h, k, 0.99));
		printf("\n");
	}
}

static int read_hists(struct hists *h)
{
	h->rec = map_read(HIST_PIN, sizeof(struct gn_stat_hist_key),
			  sizeof(struct gn_stat_hist), false, -1, &h->n);
	return h->rec ? 0 : -ENOENT;
}

static int dump_text(const struct opts *o)
{
	struct hists h;
	struct flow *f;
	size_t n;

	f = read_flows(&n);
	if (!f)
		return -ENOENT;
	if (read_hists(&h)) {
		free(f);
		return -ENOENT;
	}
	qsort(f, n, sizeof(*f), cmp_flow);
	print_flows(f, n, NULL, 0, 0, &h, o);
	free(h.rec);
	free(f);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int top(const struct opts *o)
{
	struct flow *old = NULL, *f;
	struct hists h;
	size_t nold = 0, n;
	double t0 = now_s(), t;
	long it;
	bool tty = isatty(STDOUT_FILENO);

	for (it = 0; o->count <= 0 || it < o->count; it++) {
		f = read_flows(&n);
		if (!f || read_hists(&h)) {
			free(f);
			free(old);
			return -ENOENT;
		}
		t = now_s();
		qsort(f, n, sizeof(*f), cmp_flow);
		if (tty)
			printf("\033[H\033[2J");
		printf("gradnet-stat top: %zu flows, every %.1f s%s\n", n,
		       o->interval, old ? "" : " (first view: totals)");
		print_flows(f, n, old, nold, old ? t - t0 : 0, &h, o);
		free(h.rec);
		fflush(stdout);
		free(old);
		old = f;
		nold = n;
		t0 = t;
		if (o->count <= 0 || it + 1 < o->count)
			usleep((useconds_t)(o->interval * 1e6));
	}
	free(old);
	return 0;
}

/* ---- command line ---------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: gradnet-stat attach --lib PATH | --pid PID [--lib PATH]\n"
		"       gradnet-stat attach --kmod\n"
		"       gradnet-stat attach --dev IFACE [--netns NAME]\n"
		"       gradnet-stat detach [--kmod | --dev IFACE [--netns NAME]]\n"
		"       gradnet-stat dump [--json | --openmetrics]\n"
		"       gradnet-stat top [--interval S] [--count N] [--job J] [--tensor T]\n"
		"  maps and links are pinned under " GN_STAT_PIN_DIR " (or $GN_STAT_PIN_DIR)\n");
	exit(2);
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
			o->job = strtoll(optarg, NULL, 0);
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
	struct opts o = { .interval = 1.0, .job = -1, .tensor = -1 };
	const char *cmd;
	int err;

	if (argc < 2)
		usage();
	cmd = argv[1];
	parse(argc - 1, argv + 1, &o);
	libbpf_set_print(libbpf_quiet);
	set_pin_dir();
	err = check_env();
	if (err)
		return 1;
	if (!strcmp(cmd, "attach")) {
		if (!!o.dev + !!(o.lib || o.pid) + o.kmod != 1)
			usage();
		if (mkdir_p(pin_dir) || mkdir_p(LINK_DIR))
			return 1;
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
