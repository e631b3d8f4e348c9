#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_stat.py - compare gradnet-stat's maps with the ranks' own counters.

usage: check_stat.py usdt DUMP JOB STATS...   (GN_TEST_STATS_FILE of each rank)
       check_stat.py usdt-data DUMP JOB STATS...
                     (data and steps only: attached after the handshake)
       check_stat.py transport DUMP JOB STEPS T0,T1,... STATS...
                     (rank k ran on transport Tk: udp, dpdk or kmod)
       check_stat.py keys BPFTOOL_JSON GRADNET_STAT_H JOB T0,T1,...
       check_stat.py wire DUMP JOB DROPPED|clean STATS...
       check_stat.py raw DUMP JOB RANK_JSON...  (gradnet-rank's stats line)
       check_stat.py bpftool BPFTOOL_JSON
       check_stat.py openmetrics OPENMETRICS DUMP JOB  (dump --openmetrics)
       check_stat.py top TOP DUMP JOB                  (top --count 1)
       check_stat.py kmod DUMP DMESG SCENARIO_H [HITS]  (tests/kmod/stat.sh)
       check_stat.py hits DUMP JOB HITS  (runs of the uprobe programs)
       check_stat.py refused BEFORE AFTER REASONS SENT  (tc_refuse_test.sh)
                     (REASONS: a,b,... of header, version, job, port;
                     SENT: forge_gn.py's "datagrams bytes")
       check_stat.py budget BEFORE AFTER JOB SENT SHARE CPUS
       check_stat.py refused-views OPENMETRICS TOP DUMP
Prints TAP lines from NUMBER (env TAP_FIRST) on; exit 1 if any fails.
"""
import json
import math
import os
import re
import sys

DROPS = ["malformed", "version", "job", "source", "mac", "replay",
         "duplicate", "tensor", "early"]
testno = int(os.environ.get("TAP_FIRST", "1"))
failed = 0


def result(ok, name, diag=()):
    global testno, failed
    for d in diag:
        print("# " + d)
    print(("ok" if ok else "not ok") + " %d - %s" % (testno, name))
    testno += 1
    failed += 0 if ok else 1


def flows(dump, job):
    return [f for f in json.load(open(dump))["flows"] if f["job"] == job]


def usdt(dump, job, stats, transports=None, data_only=False):
    """Per rank, the flows' sums against the rank's GN_TEST_STATS_FILE.
    With @transports (one per rank) only the flows of the rank's own
    transport count: a probe that named another one shows as a difference.
    @data_only leaves out control packets and drops, which the handshake
    makes before a tracer that attached to a running rank sees them."""
    fl = flows(dump, job)
    for path in stats:
        st = json.load(open(path))
        r = st["rank"]
        fr = [f for f in fl
              if not transports or f["transport"] == transports[r]]
        sent = [f for f in fr if f["src"] == r]
        got = [f for f in fr if f["dst"] == r]
        seen = {
            "tx_packets": sum(f["tx_packets"] for f in sent),
            "wire_bytes": sum(f["tx_wire_bytes"] for f in sent),
            "retransmits": sum(f["retransmits"] for f in sent),
            "messages": sum(f["messages"] for f in sent),
            "raw_bytes": sum(f["raw_bytes"] for f in sent),
            "stream_bytes": sum(f["stream_bytes"] for f in sent),
            "ctl_packets": sum(f["ctl_packets"] for f in sent),
            "ctl_bytes": sum(f["ctl_bytes"] for f in sent),
            "allreduces": sum(f["steps"] for f in sent),
            "rx_packets": sum(f["rx_packets"] for f in got),
            "rx_wire_bytes": sum(f["rx_wire_bytes"] for f in got),
        }
        if data_only:
            del seen["ctl_packets"], seen["ctl_bytes"]
        want = {k: st[k] for k in seen}
        for i, name in enumerate(DROPS if not data_only else []):
            seen["drop_" + name] = sum(f["drops"][name] for f in got)
            want["drop_" + name] = st["drops"][i]
        bad = ["%s: map %d, library %d" % (k, seen[k], want[k])
               for k in want if seen[k] != want[k]]
        result(not bad and want["tx_packets"] > 0,
               "usdt: rank %d: per-flow sums%s equal the library's %scounters "
               "(%d packets, %d retransmits, %d drops)" %
               (r, " of its %s flows" % transports[r] if transports else "",
                "data and step " if data_only else "",
                want["tx_packets"], want["retransmits"],
                sum(st["drops"])), bad)


# The counters a flow's sender fires the probes of, and its receiver's.
TX_SIDE = ("tx_packets", "tx_wire_bytes", "retransmits", "messages",
           "raw_bytes", "stream_bytes", "ctl_packets", "ctl_bytes", "steps")
RX_SIDE = ("rx_packets", "rx_wire_bytes")


def transport(dump, job, steps, transports, stats):
    """A job whose rank k ran on transports[k]: every flow names the
    transport of the rank whose probes counted it, every rank pair has its
    reduce and gather flows, the sums are the library's, the steps too,
    and the last step's number (the core counts from 1) even where a
    rank's steps ended on several CPUs (gradnet-stat once summed it over
    the per-CPU map's values)."""
    d = json.load(open(dump))
    fl = [f for f in d["flows"] if f["job"] == job]
    world = len(transports)

    def of(r):
        return transports[r] if isinstance(r, int) and r < world else None

    bad = []
    for f in fl:
        want = set()
        if any(f[k] for k in TX_SIDE):
            want.add(of(f["src"]))
        if any(f[k] for k in RX_SIDE) or any(f["drops"].values()):
            want.add(of(f["dst"]))
        if want != {f["transport"]}:
            bad.append("%s->%s %s: transport %s, counted by ranks on %s" %
                       (f["src"], f["dst"], f["phase"], f["transport"],
                        sorted(map(str, want))))
    seen = sorted({f["transport"] for f in fl})
    if seen != sorted(set(transports)):
        bad.append("transports seen %s, ranks on %s" %
                   (seen, sorted(set(transports))))
    result(fl and not bad,
           "transport: the %d flows of job %d name the transport of the "
           "rank that counted them (%s)" % (len(fl), job, ", ".join(seen)),
           bad[:6])

    bad = []
    for s in range(world):
        for t in range(world):
            for phase in ("reduce", "gather") if s != t else ():
                pair = [f for f in fl if (f["src"], f["dst"], f["phase"]) ==
                        (s, t, phase)]
                tx = [f for f in pair if f["transport"] == transports[s]
                      and f["tx_packets"] and f["messages"]]
                rx = [f for f in pair if f["transport"] == transports[t]
                      and f["rx_packets"]]
                if len(tx) != 1 or len(rx) != 1 or \
                        rx[0]["rx_packets"] > tx[0]["tx_packets"]:
                    bad.append("%d->%d %s: %s" % (s, t, phase, pair))
    result(not bad,
           "pairs: each of the %d ordered rank pairs has a reduce and a "
           "gather flow, sent on the sender's transport and taken on the "
           "receiver's (0 < taken <= sent)" % (world * (world - 1)), bad[:4])

    usdt(dump, job, stats, transports)

    bad = []
    for r, tr in enumerate(transports):
        st = [f for f in fl if f["src"] == r and f["dst"] == "all"]
        h = [e for e in d["step_hist"] if (e["job"], e["rank"]) == (job, r)]
        if len(st) != 1 or st[0]["transport"] != tr or \
                st[0]["steps"] != steps or st[0]["last_step"] != steps:
            bad.append("rank %d's step flows: %s" % (r, st))
        if len(h) != 1 or h[0]["transport"] != tr or \
                sum(h[0]["log2_us"]) != steps:
            bad.append("rank %d's step histograms: %s" % (r, h))
    result(not bad,
           "steps: each rank's step flow and latency histogram hold its %d "
           "steps, the last numbered %d, on its transport" % (steps, steps),
           bad)


def wire(dump, job, dropped, stats):
    w = [x for x in json.load(open(dump))["wire"] if x["job"] == job]
    eg = [x for x in w if x["dir"] == "egress"]
    ing = [x for x in w if x["dir"] == "ingress"]
    for path in stats:
        st = json.load(open(path))
        r = st["rank"]
        data = [x for x in eg if x["src"] == r and x["phase"] != "ctl"]
        ctl = [x for x in eg if x["src"] == r and x["phase"] == "ctl"]
        seen = (sum(x["packets"] for x in data), sum(x["bytes"] for x in data),
                sum(x["packets"] for x in ctl), sum(x["bytes"] for x in ctl))
        want = (st["tx_packets"], st["wire_bytes"], st["ctl_packets"],
                st["ctl_bytes"])
        result(seen == want,
               "tc: rank %d's egress: data and control datagrams and bytes "
               "equal the library's" % r,
               ["egress %s, library %s (data pkts, bytes, ctl pkts, bytes)" %
                (seen, want)])
    out = sum(x["packets"] for x in eg)
    inn = sum(x["packets"] for x in ing)
    if dropped is None:
        result(out == inn > 0,
               "tc: on a link without loss every datagram sent was received "
               "(%d = %d)" % (out, inn), ["egress %d, ingress %d" % (out, inn)])
        return
    result(out - inn == dropped and dropped > 0,
           "tc: datagrams sent minus received equal the loss injector's "
           "drops (%d - %d = %d)" % (out, inn, dropped),
           ["egress %d, ingress %d, gn-loss dropped %d" % (out, inn, dropped)])


def raw(dump, job, ranks):
    fl = flows(dump, job)
    for path in ranks:
        st = json.loads(open(path).read().splitlines()[-1])
        r = st["rank"]
        sent = [f for f in fl if f["src"] == r]
        seen = (sum(f["raw_bytes"] for f in sent),
                sum(f["stream_bytes"] for f in sent),
                sum(f["steps"] for f in sent))
        want = (st["raw_bytes"], st["stream_bytes"], st["steps"])
        result(seen == want and seen[0] > 0,
               "libgradnet.so: job %d rank %d: raw and stream bytes and "
               "steps equal the rank's" % (job, r),
               ["map %s, rank %s" % (seen, want)])


def bpftool(path):
    d = json.load(open(path))
    names = set()
    for e in d:
        f = e.get("formatted", {})
        names |= set(f.get("key", {}))
        for v in f.get("values", []):
            names |= set(v.get("value", {}))
    want = {"job", "src", "dst", "tensor", "phase", "transport",
            "tx_packets", "tx_wire_bytes", "raw_bytes", "retransmits",
            "drops", "last_step"}
    result(d and want <= names,
           "bpftool map dump pinned gn_flows -j: named fields",
           ["missing: %s" % sorted(want - names)] if not want <= names else [])


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)'
                    r'\{((?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*",?)*)\} (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\]*)"')
FLOW_LABELS = ("job", "src", "dst", "tensor", "phase", "transport")


def rank_str(r):
    return str(r)


def parse_openmetrics(path):
    """Samples as (name, labels dict, value), and the format's faults."""
    lines = open(path).read().split("\n")
    bad, samples, types, helps = [], [], {}, set()
    if lines[-1] != "":
        bad.append("no newline after the last line")
    lines = lines[:-1] if lines[-1] == "" else lines
    if not lines or lines[-1] != "# EOF":
        bad.append("the last line is not # EOF")
    if lines.count("# EOF") != 1:
        bad.append("# EOF %d times" % lines.count("# EOF"))
    fam = None
    for n, line in enumerate(lines, 1):
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            if name in types:
                bad.append("line %d: second TYPE for %s" % (n, name))
            types[name] = typ
            fam = name
            continue
        if line.startswith("# HELP "):
            helps.add(line.split(" ")[2])
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            bad.append("line %d: not name{labels} value: %r" % (n, line))
            continue
        name, labels, value = m.groups()
        try:
            value = float(value)
        except ValueError:
            bad.append("line %d: value %r" % (n, value))
            continue
        base = name
        if types.get(fam) == "histogram":
            base = re.sub(r"_(bucket|count|sum)$", "", name)
        if base != fam:
            bad.append("line %d: %s outside its family's TYPE (%s)" %
                       (n, name, fam))
        samples.append((name, dict(LABEL.findall(labels)), value))
    bad += ["TYPE %s without HELP" % t for t in types if t not in helps]
    return samples, types, bad


def openmetrics(path, dump, job):
    samples, types, bad = parse_openmetrics(path)
    d = json.load(open(dump))
    result(not bad and len(types) >= 15,
           "openmetrics: every line is name{labels} value, %d families "
           "with TYPE and HELP, # EOF last" % len(types), bad[:10])

    def key(lab):
        return tuple(lab.get(k) for k in FLOW_LABELS)

    tx = {key(l): v for n, l, v in samples if n == "gradnet_tx_packets_total"}
    want = {(str(f["job"]), rank_str(f["src"]), rank_str(f["dst"]),
             str(f["tensor"]), f["phase"], f["transport"]): f["tx_packets"]
            for f in d["flows"]}
    drops = {}
    for n, l, v in samples:
        if n == "gradnet_drops_total":
            drops[l["reason"]] = drops.get(l["reason"], 0) + v
    dwant = {r: sum(f["drops"][r] for f in d["flows"]) for r in DROPS}
    jt = sum(v for k, v in tx.items() if k[0] == str(job))
    jw = sum(f["tx_packets"] for f in d["flows"] if f["job"] == job)
    diff = ["flow %s: openmetrics %s, json %s" % (k, tx.get(k), want.get(k))
            for k in set(tx) | set(want) if tx.get(k) != want.get(k)]
    result(not diff and jt == jw > 0 and drops == dwant
           and types.get("gradnet_tx_packets_total") == "counter",
           "openmetrics: tx packets per flow equal the JSON dump's "
           "(job %d: %d = %d), drops by reason too" % (job, jt, jw),
           diff[:10] + (["drops %s, json %s" % (drops, dwant)]
                        if drops != dwant else []))

    hist = {}
    for n, l, v in samples:
        if not n.startswith("gradnet_step_latency_seconds_"):
            continue
        k = (l["job"], l["rank"], l["tensor"], l["transport"])
        h = hist.setdefault(k, {"buckets": []})
        if n.endswith("_bucket"):
            h["buckets"].append((float(l["le"]), v))
        else:
            h[n.rsplit("_", 1)[1]] = v
    hbad = []
    for k, h in hist.items():
        b = h["buckets"]
        les = [x[0] for x in b]
        cums = [x[1] for x in b]
        if les != sorted(les) or les[-1] != math.inf:
            hbad.append("%s: le not ascending to +Inf" % (k,))
        if cums != sorted(cums) or cums[-1] != h.get("count"):
            hbad.append("%s: buckets not cumulative up to the count" % (k,))
    for e in d["step_hist"]:
        k = (str(e["job"]), str(e["rank"]), str(e["tensor"]), e["transport"])
        if k not in hist or hist[k].get("count") != sum(e["log2_us"]):
            hbad.append("%s: count %s, json %d" %
                        (k, hist.get(k, {}).get("count"), sum(e["log2_us"])))
        elif "sum" not in hist[k]:
            hbad.append("%s: no _sum" % (k,))
    steps = sum(h.get("count", 0) for k, h in hist.items() if k[0] == str(job))
    result(not hbad and steps > 0 and len(hist) == len(d["step_hist"])
           and types.get("gradnet_step_latency_seconds") == "histogram",
           "openmetrics: step latency histogram, cumulative le buckets in "
           "seconds, counts equal the JSON dump's (job %d: %d steps)" %
           (job, steps), hbad[:10])


def quantile_ms(counts, q):
    total = sum(counts)
    want = max(1, math.ceil(total * q))
    cum = 0
    for b, c in enumerate(counts):
        cum += c
        if cum >= want:
            return 2 ** (b + 1) / 1000.0
    return None


def top(path, dump, job):
    lines = open(path).read().splitlines()
    hdr = [i for i, l in enumerate(lines) if l.startswith("job ")]
    bad = []
    if not hdr or not re.search(r"p50 ms\s+p99 ms\s*$", lines[hdr[0]]):
        bad.append("no p50 ms and p99 ms columns: %r" %
                   (lines[hdr[0]] if hdr else lines))
    hists = {(e["rank"], e["tensor"], e["transport"]): e["log2_us"]
             for e in json.load(open(dump))["step_hist"] if e["job"] == job}
    rows = 0
    for l in lines:
        c = l.split()
        if not c or c[0] != str(job) or c[4] != "none" or c[2] != "all":
            continue
        rows += 1
        # The transport is not a column: any of the rank's on that tensor.
        want = [(quantile_ms(h, 0.5), quantile_ms(h, 0.99))
                for (r, t, _), h in hists.items()
                if str(r) == c[1] and str(t) == c[3]]
        try:
            seen = (float(c[-2]), float(c[-1]))
        except ValueError:
            seen = tuple(c[-2:])
        if not want or not any(abs(seen[0] - w[0]) < 1e-9 and
                               abs(seen[1] - w[1]) < 1e-9 for w in want):
            bad.append("rank %s tensor %s: p50/p99 %s, from the histogram %s"
                       % (c[1], c[3], seen, want))
    result(not bad and rows > 0,
           "top: step latency p50 and p99 per tensor from the histogram "
           "(%d step flows of job %d)" % (rows, job), bad)


def c_defines(path, prefix):
    """The numbers #defined as PREFIX* in the C header @path, by the rest
    of their name."""
    defs = {}
    for m in re.finditer(r"^#define %s(\w+)\s+(0x[0-9a-fA-F]+|\d+)u?\b" %
                         prefix, open(path).read(), re.M):
        defs[m.group(1)] = int(m.group(2), 0)
    return defs


def scenario_defs(path):
    """The GN_SCN_* numbers of tests/core/scenario.h."""
    return c_defines(path, "GN_SCN_")


def keys(path, header, job, transports):
    """bpftool's own reading of the keys: the job's flows carry the
    GN_STAT_TRANSPORT_* numbers of its ranks' transports, and no other."""
    defs = c_defines(header, "GN_STAT_TRANSPORT_")
    want = sorted({defs[t.upper()] for t in transports})
    try:
        d = json.load(open(path))
    except ValueError as e:
        result(False, "bpftool: the map dump is JSON", [str(e)])
        return
    ks = [e.get("formatted", {}).get("key", {}) for e in d]
    seen = sorted({k.get("transport") for k in ks if k.get("job") == job})
    result(seen == want,
           "bpftool: job %d's keys carry transport %s, no other (%s)" %
           (job, " and ".join("%d (GN_STAT_TRANSPORT_%s)" % (defs[t], t)
                              for t in sorted({t.upper() for t in transports},
                                              key=defs.get)),
            os.path.basename(header)),
           [] if seen == want else ["seen %s" % seen])


CASE_LINE = re.compile(r"^gradnet: selftest core (\S+): sent (\d+) delivered "
                       r"(\d+) lost \d+ duplicated \d+ reordered \d+, (\d+) "
                       r"retransmits, (\d+) duplicates dropped")


def kmod(dump, log, scenario):
    """The module's rerun of its core self-test, as the tracepoints saw it."""
    scn = scenario_defs(scenario)
    job, world = scn["JOB"], scn["WORLD"]
    ncase, nstep, tensor = scn["CASES"], scn["STEPS"], scn["TENSOR"]
    try:
        d = json.load(open(dump))
    except ValueError as e:
        result(False, "kmod: the dump is JSON", [str(e)])
        return
    cases = [CASE_LINE.match(l) for l in open(log).read().splitlines()]
    cases = [m for m in cases if m]
    fl = flows(dump, job)
    result(len(cases) == ncase,
           "kmod: the rerun logged its %d cases once each" % ncase,
           ["case lines: %s" % [m.group(1) for m in cases]])
    sent = sum(int(m.group(2)) for m in cases)
    delivered = sum(int(m.group(3)) for m in cases)
    rtx = sum(int(m.group(4)) for m in cases)
    dups = sum(int(m.group(5)) for m in cases)
    others = sorted({f["transport"] for f in fl} - {"kmod"})
    result(fl and not others and len(fl) == len(d["flows"]),
           "kmod: %d flows, all of job %#x with transport kmod" %
           (len(fl), job), ["other transports: %s, flows of other jobs: %d" %
                            (others, len(d["flows"]) - len(fl))])
    seen = sum(f["tx_packets"] + f["ctl_packets"] for f in fl)
    result(seen == sent > 0,
           "kmod: data and control packets sent equal the fabric's sent "
           "count (%d)" % sent, ["map %d, self-test %d" % (seen, sent)])
    seen = sum(f["retransmits"] for f in fl)
    result(seen == rtx,
           "kmod: retransmits equal the self-test's (%d)" % rtx,
           ["map %d, self-test %d" % (seen, rtx)])
    seen = sum(f["drops"]["duplicate"] for f in fl)
    result(seen == dups > 0,
           "kmod: duplicates dropped equal the self-test's (%d)" % dups,
           ["map %d, self-test %d" % (seen, dups)])
    taken = sum(f["rx_packets"] + sum(f["drops"].values()) for f in fl)
    result(0 < taken <= delivered,
           "kmod: data packets taken plus drops (%d) are at most the "
           "packets delivered (%d)" % (taken, delivered), [])
    bad = []
    for src in range(world):
        for dst in range(world):
            for phase in ("reduce", "gather") if src != dst else ():
                f = [x for x in fl if (x["src"], x["dst"], x["tensor"],
                                       x["phase"]) == (src, dst, tensor, phase)]
                if len(f) != 1 or not 0 < f[0]["rx_packets"] <= \
                        f[0]["tx_packets"] or not f[0]["messages"]:
                    bad.append("%d->%d %s: %s" % (src, dst, phase, f))
    result(not bad,
           "kmod: every rank pair has a reduce and a gather flow of tensor "
           "%d, messages sent, 0 < packets taken <= sent" % tensor, bad[:6])
    bad = []
    for r in range(world):
        st = [x for x in fl if x["src"] == r and x["dst"] == "all"]
        if len(st) != 1 or st[0]["steps"] != ncase * nstep or \
                st[0]["last_step"] != nstep or st[0]["tensor"] != tensor:
            bad.append("rank %d: %s" % (r, st))
    hist = sum(sum(h["log2_us"]) for h in d["step_hist"] if h["job"] == job)
    result(not bad and hist == world * ncase * nstep,
           "kmod: each rank finished %d steps (the last numbered %d: the "
           "core counts from 1), the latency histogram holds all %d" %
           (ncase * nstep, nstep,
                                       world * ncase * nstep),
           bad + ["histogram count %d" % hist])


def hits(dump, job, n):
    """The job's events came in fewer probe hits: the core coalesces. How
    many fewer depends on how many packets a poll finds, which is the
    machine's timing (account_test.c checks the coalescing exactly)."""
    fl = flows(dump, job)
    pkts = sum(f["tx_packets"] + f["rx_packets"] for f in fl)
    events = pkts + sum(f["messages"] + f["ctl_packets"] + f["steps"] +
                        sum(f["drops"].values()) for f in fl)
    result(0 < n < events,
           "hits: %d probe hits for %d events (%d data packets sent and "
           "taken): fewer, coalesced" % (n, events, pkts), [])


REFUSES = ["header", "version", "job", "port", "full"]


def refused_sums(dump):
    """(packets, bytes) by reason, summed over interfaces and directions."""
    s = {r: [0, 0] for r in REFUSES}
    for e in json.load(open(dump)).get("tc_refused", []):
        s[e["reason"]][0] += e["packets"]
        s[e["reason"]][1] += e["bytes"]
    return s


def wire_records(dump, job=None):
    return [x for x in json.load(open(dump))["wire"]
            if job is None or x["job"] == job]


def refused(before, after, reasons, sent):
    """Between the dumps, the stranger's datagrams were refused for one of
    REASONS, every one of them, and no flow record was made."""
    b, a = refused_sums(before), refused_sums(after)
    d = {r: [a[r][0] - b[r][0], a[r][1] - b[r][1]] for r in REFUSES}
    pkts, nbytes = (int(x) for x in sent.split())
    want = reasons.split(",")
    got = [sum(d[r][0] for r in want), sum(d[r][1] for r in want)]
    others = {r: d[r][0] for r in REFUSES if r not in want and d[r][0]}
    nw = (len(wire_records(before)), len(wire_records(after)))
    result(got == [pkts, nbytes] and not others and nw[0] == nw[1],
           "tc refused all %d forged datagrams as %s, counted them by "
           "reason, made no flow record" % (pkts, " or ".join(want)),
           ["refused %s, sent %s; by reason %s; other reasons %s; "
            "flow records %d, then %d" % (got, [pkts, nbytes], d, others,
                                          nw[0], nw[1])])


def budget(before, after, job, sent, share, cpus):
    """A flood of well-formed datagrams of a known job, each of its own
    flow: the job gets its share of flow records (give or take one per
    racing CPU), every datagram is counted in one or refused as full."""
    pkts = int(sent.split()[0])
    recs = wire_records(after, job)
    counted = sum(x["packets"] for x in recs) -         sum(x["packets"] for x in wire_records(before, job))
    full = refused_sums(after)["full"][0] - refused_sums(before)["full"][0]
    result(share <= len(recs) <= share + cpus and counted + full == pkts
           and full > 0,
           "tc: a flood of %d flows of known job %d made %d flow records "
           "(its share: %d), the other datagrams refused as full" %
           (pkts, job, len(recs), share),
           ["records %d, counted %d, refused full %d, sent %d" %
            (len(recs), counted, full, pkts)])


def refused_views(om, top_path, dump):
    """OpenMetrics and top say what the JSON dump says was refused."""
    samples, types, bad = parse_openmetrics(om)
    s = refused_sums(dump)
    seen = {r: 0 for r in REFUSES}
    for n, l, v in samples:
        if n == "gradnet_wire_refused_packets_total":
            seen[l["reason"]] += int(v)
    want = {r: s[r][0] for r in REFUSES}
    result(not bad and seen == want and types.get(
        "gradnet_wire_refused_packets_total") == "counter",
           "openmetrics: gradnet_wire_refused_packets_total by reason "
           "equals the JSON dump's", bad[:5] + ["%s, json %s" % (seen, want)])
    line = [l for l in open(top_path).read().splitlines()
            if l.startswith("tc refused ")]
    total = sum(want.values())
    words = dict(re.findall(r"(\w+) (\d+)", line[0])) if line else {}
    ok = line and line[0].startswith("tc refused %d datagrams:" % total) and \
        all(int(words.get(r, -1)) == want[r] for r in REFUSES)
    result(bool(ok), "top: its tc refused line has the JSON dump's counts "
           "(%d datagrams)" % total, line or ["no tc refused line"])


cmd = sys.argv[1]
if cmd == "usdt":
    usdt(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
elif cmd == "usdt-data":
    usdt(sys.argv[2], int(sys.argv[3]), sys.argv[4:], data_only=True)
elif cmd == "transport":
    transport(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
              sys.argv[5].split(","), sys.argv[6:])
elif cmd == "keys":
    keys(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5].split(","))
elif cmd == "wire":
    wire(sys.argv[2], int(sys.argv[3]),
         None if sys.argv[4] == "clean" else int(sys.argv[4]), sys.argv[5:])
elif cmd == "raw":
    raw(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
elif cmd == "bpftool":
    bpftool(sys.argv[2])
elif cmd == "openmetrics":
    openmetrics(sys.argv[2], sys.argv[3], int(sys.argv[4]))
elif cmd == "top":
    top(sys.argv[2], sys.argv[3], int(sys.argv[4]))
elif cmd == "hits":
    hits(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
elif cmd == "refused":
    refused(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
elif cmd == "budget":
    budget(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5],
           int(sys.argv[6]), int(sys.argv[7]))
elif cmd == "refused-views":
    refused_views(sys.argv[2], sys.argv[3], sys.argv[4])
elif cmd == "kmod":
    kmod(sys.argv[2], sys.argv[3], sys.argv[4])
    if len(sys.argv) > 5:
        hits(sys.argv[2], scenario_defs(sys.argv[4])["JOB"],
             int(sys.argv[5] or 0))
sys.exit(1 if failed else 0)
