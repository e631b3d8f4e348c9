#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""allreduce-model.py - time per allreduce of gradnet 3LC against a dense
ring allreduce, by link speed and codec cores, from measured numbers.

Inputs (measured; --measure runs the two benchmarks and takes them):
  --encode-gbps, --decode-gbps  one core's 3LC encode and decode-accumulate
      speed in GB/s of float input, over a DRAM-sized tensor split by chunk
      (`gradnet-bench codec --threads 1,2 --json`: "encode_gb_per_cpu_s"
      and "decode_gb_per_cpu_s", GB per CPU-second, which a shared machine
      does not distort; the script takes the best of the rows)
  --wire-3lc, --wire-dense  UDP payload bytes one rank sends per allreduce
      (`gradnet-bench allreduce --json`: "wire_bytes" plus "ctl_bytes",
      and "dense_bytes", for the same ranks and floats)
  --floats, --ranks  the job the wire bytes were measured for
  --seal-gbps, --open-gbps  optional: one core's speed sealing and opening
      packets with ChaCha20-Poly1305, in GB/s of packets of the job's
      size (`gradnet-bench seal --json`: "seal_gbps" and "open_gbps" of
      the row for --packet bytes, default 1472); without them sealing is
      left out, as in the records before it existed

The model, per rank and allreduce of N floats on W ranks:
  dense   = dense wire bytes / link (a ring allreduce at line rate, its
            additions free: a lower bound for dense)
  gradnet = codec bytes / (cores x one core's speed) + 3LC wire bytes / link
            where the codec work is: encode every other rank's shard and
            re-encode the own shard's sum (4N bytes in all), decode-add the
            W-1 contributions to the own shard and decode every owner's
            result (4N (2W-1)/W bytes). No overlap of codec and wire is
            assumed (gradnet overlaps them in part, so this is an upper
            bound), and cores scale perfectly (the per-CPU-second speed;
            --efficiency, the speed of k > 1 cores over k times one
            core's, scales it down: take it from the thread counts'
            rows, since memory bandwidth caps it on a real machine).
  sealing = the wire bytes a rank sends, sealed, and as many received,
            opened: added to gradnet's codec work on the same cores; and
            for a link at line rate both ways, the cores that seal and
            open it (the last column, "seal at line rate": what a dense
            job, or any, needs to keep the link encrypted).

Output: a Markdown table, one row per link speed (--links) and a column per
core count (--cores); --json prints the same as one JSON object instead,
with the inputs, and times in seconds (what tools/plots.py draws).
"""

import argparse
import json
import math
import subprocess
import sys

LINKS_GBIT = (1, 10, 25, 100)
CORES = (1, 2, 4, 8)


def measure_seal(bench, packet):
    """Run `gradnet-bench seal`; return (seal, open) GB/s at @packet bytes."""
    out = subprocess.run([bench, "seal", "--json"], check=True,
                         capture_output=True, text=True).stdout
    rows = json.loads(out.splitlines()[-1])["rows"]
    row = min(rows, key=lambda r: abs(r["packet"] - packet))
    return row["seal_gbps"], row["open_gbps"]


def measure(bench, floats, ranks):
    """Run the benchmarks; return (encode, decode, wire_3lc, wire_dense)."""
    mib = max(1, floats * 4 // (1 << 20))
    out = subprocess.run([bench, "codec", "--threads", "1,2", "--json",
                          "--dram-mib", str(mib), "--seconds", "1"],
                         check=True, capture_output=True, text=True).stdout
    rows = json.loads(out.splitlines()[-1])["rows"]
    enc = max(r["encode_gb_per_cpu_s"] for r in rows)
    dec = max(r["decode_gb_per_cpu_s"] for r in rows)
    out = subprocess.run([bench, "allreduce", "--ranks", str(ranks),
                          "--link", "none", "--elems", str(floats),
                          "--no-mpi", "--json"],
                         check=True, capture_output=True, text=True).stdout
    row = json.loads(out[out.index("["):])[0]
    return enc, dec, row["wire_bytes"] + row["ctl_bytes"], row["dense_bytes"]


def gradnet_s(a, cores, link_gbit):
    n4 = a.floats * 4.0
    w = a.ranks
    codec = (n4 / (a.encode_gbps * 1e9) +
             n4 * (2 * w - 1) / w / (a.decode_gbps * 1e9))
    speedup = 1.0 if cores == 1 else cores * a.efficiency
    return ((codec + seal_s(a, a.wire_3lc)) / speedup +
            a.wire_3lc * 8 / (link_gbit * 1e9))


def seal_s(a, wire_bytes):
    """One core's time to seal @wire_bytes and open as many; 0 if unknown."""
    if not getattr(a, "seal_gbps", None):
        return 0.0
    return wire_bytes / (a.seal_gbps * 1e9) + wire_bytes / (a.open_gbps * 1e9)


def seal_cores(a, link_gbit):
    """Cores that seal and open a link's traffic at line rate, both ways."""
    return seal_s(a, link_gbit * 1e9 / 8)


def dense_s(a, link_gbit):
    return a.wire_dense * 8 / (link_gbit * 1e9)


def cores_to_win(a, link_gbit):
    """The fewest cores with which gradnet is faster, or None."""
    d = dense_s(a, link_gbit)
    wire = a.wire_3lc * 8 / (link_gbit * 1e9)
    if wire >= d:
        return None
    one = gradnet_s(a, 1, link_gbit)
    if one < d:
        return 1
    need = (one - wire) / (d - wire) / a.efficiency
    k = max(2, math.ceil(need))
    while gradnet_s(a, k, link_gbit) >= d:     # rounding at the boundary
        k += 1
    return k


def number_list(kind, conv):
    """An argparse type: a comma-separated list of positive @conv values."""
    def parse(text):
        try:
            vals = [conv(v) for v in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: not a list of {kind}")
        if not vals or min(vals) <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: {kind} must be positive")
        return vals
    return parse


def as_json(a):
    """The model's inputs and, per link speed, every time and the verdict."""
    rows = []
    for g in a.links:
        rows.append({"link_gbit": g, "dense_s": dense_s(a, g),
                     "gradnet_s": {str(c): gradnet_s(a, c, g) for c in a.cores},
                     "cores_to_win": cores_to_win(a, g)})
        if getattr(a, "seal_gbps", None):
            rows[-1]["seal_cores"] = seal_cores(a, g)
    out = {"floats": a.floats, "ranks": a.ranks,
           "encode_gbps": a.encode_gbps, "decode_gbps": a.decode_gbps,
           "wire_3lc": a.wire_3lc, "wire_dense": a.wire_dense,
           "efficiency": a.efficiency, "cores": a.cores, "rows": rows}
    if getattr(a, "seal_gbps", None):
        out.update(seal_gbps=a.seal_gbps, open_gbps=a.open_gbps)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--encode-gbps", type=float)
    p.add_argument("--decode-gbps", type=float)
    p.add_argument("--wire-3lc", type=float)
    p.add_argument("--wire-dense", type=float)
    p.add_argument("--floats", type=int, default=26214400)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--efficiency", type=float, default=1.0,
                   help="speed of k cores over k times one core's (default 1)")
    p.add_argument("--seal-gbps", type=float)
    p.add_argument("--open-gbps", type=float)
    p.add_argument("--packet", type=int, default=1472,
                   help="the packet size --measure takes the seal row of")
    p.add_argument("--measure", metavar="GRADNET_BENCH",
                   help="run this gradnet-bench for the four measured inputs")
    p.add_argument("--links", type=number_list("link speeds", float),
                   default=list(LINKS_GBIT),
                   help="link speeds in Gbit/s (default 1,10,25,100)")
    p.add_argument("--cores", type=number_list("core counts", int),
                   default=list(CORES), help="codec cores (default 1,2,4,8)")
    p.add_argument("--json", action="store_true",
                   help="one JSON object instead of the table")
    a = p.parse_args()
    if a.measure:
        (a.encode_gbps, a.decode_gbps, a.wire_3lc,
         a.wire_dense) = measure(a.measure, a.floats, a.ranks)
        a.seal_gbps, a.open_gbps = measure_seal(a.measure, a.packet)
    if (a.seal_gbps is None) != (a.open_gbps is None) or \
            (a.seal_gbps is not None and min(a.seal_gbps, a.open_gbps) <= 0):
        p.error("give both --seal-gbps and --open-gbps, positive, or neither")
    missing = [k for k in ("encode_gbps", "decode_gbps", "wire_3lc",
                           "wire_dense") if getattr(a, k) is None]
    if missing:
        p.error("give --measure or every one of: " +
                ", ".join("--" + k.replace("_", "-") for k in missing))
    if min(a.encode_gbps, a.decode_gbps, a.wire_3lc, a.wire_dense) <= 0 or \
            a.ranks < 2 or a.floats < 1 or not 0 < a.efficiency <= 1:
        p.error("speeds and bytes must be positive, ranks >= 2, "
                "0 < efficiency <= 1")

    if a.json:
        print(json.dumps(as_json(a), indent=1))
        return 0
    seal = (f"; one core seals {a.seal_gbps:.2f} GB/s, opens "
            f"{a.open_gbps:.2f} GB/s" if a.seal_gbps else "")
    print(f"# {a.floats} floats on {a.ranks} ranks; one core encodes "
          f"{a.encode_gbps:.2f} GB/s, decode-adds {a.decode_gbps:.2f} GB/s; "
          f"per rank and allreduce 3LC sends {a.wire_3lc:,.0f} bytes, "
          f"dense {a.wire_dense:,.0f}; efficiency {a.efficiency:g}{seal}")
    head = " | ".join(f"gradnet, {c} core{'s' if c > 1 else ''}"
                      for c in a.cores)
    extra = " seal at line rate |" if a.seal_gbps else ""
    print(f"| link | dense ring | {head} | gradnet wins with |{extra}")
    print("|---" * (len(a.cores) + 3 + bool(extra)) + "|")
    for g in a.links:
        d = dense_s(a, g)
        cells = []
        for c in a.cores:
            t = gradnet_s(a, c, g)
            mark = "**" if t < d else ""
            cells.append(f"{mark}{t * 1e3:.1f} ms{mark}")
        k = cores_to_win(a, g)
        win = "never" if k is None else f"{k} core{'s' if k > 1 else ''}"
        seal = f" {seal_cores(a, g):.1f} cores |" if a.seal_gbps else ""
        print(f"| {g:g} Gbit/s | {d * 1e3:.1f} ms | " + " | ".join(cells) +
              f" | {win} |{seal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
