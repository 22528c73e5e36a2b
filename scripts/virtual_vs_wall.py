#!/usr/bin/env python3
"""The virtual-vs-wall table of scripts/bench-virtual-vs-wall.sh (issue 29).

For each workload (fixed, agentx) and concurrency: mean TTFT and TPOT (ms) and output tok/s/GPU
of the virtual run and of each wall run (agg.json), with wall/virtual - 1. For AgentX also the
requests of the profiling window matched by (conversation_id, turn_index) between the virtual
run and each wall run (agentx_records.jsonl, served requests only): how many each window holds,
how many both hold, and the mean TTFT of the matched ones on each clock, so a difference from
which requests fall in the window is told apart from a difference in the same requests' TTFT.
"""
import glob
import json
import os
import sys

out = sys.argv[1]


def points(run):
    res = {}
    for d in glob.glob(f"{out}/{run}/conc*"):
        agg = os.path.join(d, "agg.json")
        if os.path.exists(agg):
            res[int(os.path.basename(d)[4:])] = (d, json.load(open(agg)))
    return res


def pct(a, b):
    return f"{(b / a - 1) * 100:+.1f} %" if a else "n/a"


def served(d):
    recs = {}
    p = os.path.join(d, "agentx_records.jsonl")
    if not os.path.exists(p):
        return recs
    for line in open(p):
        r = json.loads(line)
        if r["phase"] == "profiling" and r.get("ttft_ms") is not None and not r.get("error"):
            recs[(r["conversation_id"], r["turn_index"], r["lane"])] = r
    return recs


for wl in ("fixed", "agentx"):
    virt = points(f"{wl}-virtual")
    walls = sorted(os.path.basename(p) for p in glob.glob(f"{out}/{wl}-wall*"))
    if not virt or not walls:
        continue
    print(f"\n### {wl}\n")
    print("| run | conc | TTFT ms virtual / wall | Δ | TPOT ms virtual / wall | Δ | out tok/s/GPU virtual / wall | Δ |")
    print("|---|---:|---|---:|---|---:|---|---:|")
    for w in walls:
        wall = points(w)
        for c in sorted(virt):
            if c not in wall:
                continue
            (vd, v), (wd, x) = virt[c], wall[c]
            t = lambda a, k: a[k] * 1e3
            print(f"| {w} | {c} | {t(v,'mean_ttft'):.2f} / {t(x,'mean_ttft'):.2f} | {pct(v['mean_ttft'], x['mean_ttft'])} "
                  f"| {t(v,'mean_tpot'):.3f} / {t(x,'mean_tpot'):.3f} | {pct(v['mean_tpot'], x['mean_tpot'])} "
                  f"| {v['output_tput_per_gpu']:.1f} / {x['output_tput_per_gpu']:.1f} | {pct(v['output_tput_per_gpu'], x['output_tput_per_gpu'])} |")
    if wl != "agentx":
        continue
    print("\nMatched requests (same conversation, turn and lane in both windows):\n")
    print("| run | conc | served virtual / wall | in both | TTFT ms of those, virtual / wall | Δ | TTFT ms of the rest, virtual / wall |")
    print("|---|---:|---|---:|---|---:|---|")
    for w in walls:
        wall = points(w)
        for c in sorted(virt):
            if c not in wall:
                continue
            a, b = served(virt[c][0]), served(wall[c][0])
            both = sorted(set(a) & set(b))
            if not both:
                continue
            ma = sum(a[k]["ttft_ms"] for k in both) / len(both)
            mb = sum(b[k]["ttft_ms"] for k in both) / len(both)
            ra = [a[k]["ttft_ms"] for k in a if k not in b]
            rb = [b[k]["ttft_ms"] for k in b if k not in a]
            mean = lambda v: f"{sum(v)/len(v):.1f} ({len(v)})" if v else "— (0)"
            print(f"| {w} | {c} | {len(a)} / {len(b)} | {len(both)} | {ma:.2f} / {mb:.2f} | {pct(ma, mb)} | {mean(ra)} / {mean(rb)} |")
