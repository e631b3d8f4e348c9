#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_stat.py - compare gradnet-stat's maps with the ranks' own counters.

usage: check_stat.py usdt DUMP JOB STATS...   (GN_TEST_STATS_FILE of each rank)
       check_stat.py wire DUMP JOB DROPPED STATS...
       check_stat.py raw DUMP JOB RANK_JSON...  (gradnet-rank's stats line)
       check_stat.py bpftool BPFTOOL_JSON
Prints TAP lines from NUMBER (env TAP_FIRST) on; exit 1 if any fails.
"""
import json
import os
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


def usdt(dump, job, stats):
    fl = flows(dump, job)
    for path in stats:
        st = json.load(open(path))
        r = st["rank"]
        sent = [f for f in fl if f["src"] == r]
        got = [f for f in fl if f["dst"] == r]
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
        want = {k: st[k] for k in seen}
        for i, name in enumerate(DROPS):
            seen["drop_" + name] = sum(f["drops"][name] for f in got)
            want["drop_" + name] = st["drops"][i]
        bad = ["%s: map %d, library %d" % (k, seen[k], want[k])
               for k in want if seen[k] != want[k]]
        result(not bad and want["tx_packets"] > 0,
               "usdt: rank %d: per-flow sums equal the library's counters "
               "(%d packets, %d retransmits, %d drops)" %
               (r, want["tx_packets"], want["retransmits"],
                sum(st["drops"])), bad)


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


cmd = sys.argv[1]
if cmd == "usdt":
    usdt(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
elif cmd == "wire":
    wire(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
elif cmd == "raw":
    raw(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
elif cmd == "bpftool":
    bpftool(sys.argv[2])
sys.exit(1 if failed else 0)
