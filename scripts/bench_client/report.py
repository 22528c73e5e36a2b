#!/usr/bin/env python3
"""Tables for scripts/bench-client.sh: servebench's client vs AIPerf on the same server and workload.

Usage: report.py RUN_DIR            (reads RUN_DIR/runs.jsonl, writes RUN_DIR/report.md + report.json,
                                     prints report.md)

runs.jsonl has one line per client run, written by bench-client.sh:
  {"scenario", "client": "servebench"|"aiperf", "conc", "isl", "osl", "num_prompts", "warmups",
   "client_cpus", "out": result dir, "mon": procmon JSON, "emission": simulator emission log,
   "uptime": `uptime` before the run, "rc"}

Definitions (every number is computed here from files, nothing is typed in):
- measured window: servebench result.json benchmark_start/end_time_unix; AIPerf
  profile_export_aiperf.json start_time/end_time (its profiling phase). Warmup is outside it.
- token events: servebench = sum of `token_events` of the measured records (what the client parsed);
  AIPerf = total_usage_completion_tokens (server usage; the simulator sends exactly one token per
  SSE event, so it is the number of token events AIPerf received).
- client CPU in window = CPU time (user+sys, all threads and child processes) of the client's whole
  process tree between the window's ends, interpolated from procmon samples (20 ms apart).
- events per CPU-second = token events / client CPU in window: the client's per-core ceiling
  when the client is the bottleneck (pinned to one core, it is "token events/s on one core").
- peak RSS: servebench = the process's VmHWM (kernel high-water mark, whole run incl. dataset
  build); AIPerf = the largest sampled sum over its processes of RSS (and of PSS, which splits
  pages shared between its forked processes).
- server check: the simulator's emission log (one line per finished request) joined with the
  client's records by response id (servebench) or compared as totals (AIPerf records carry no
  response id): requests and completion tokens must agree exactly.
"""
import datetime
import json
import os
import sys


def load_json(p):
    with open(p) as f:
        return json.load(f)


def cpu_at(samples, t):
    """Tree CPU seconds at unix time t, linear between samples (the last sample is the exact
    wait4 total at exit)."""
    prev = samples[0]
    if t <= prev[0]:
        return prev[1]
    for s in samples[1:]:
        if s[0] >= t:
            f = (t - prev[0]) / max(1e-9, s[0] - prev[0])
            return prev[1] + f * (s[1] - prev[1])
        prev = s
    return samples[-1][1]


def watched_at(samples, t, name):
    pts = [(s[0], s[5].get(name)) for s in samples if s[5].get(name) is not None]
    if not pts:
        return None
    prev = pts[0]
    if t <= prev[0]:
        return prev[1]
    for s in pts[1:]:
        if s[0] >= t:
            f = (t - prev[0]) / max(1e-9, s[0] - prev[0])
            return prev[1] + f * (s[1] - prev[1])
        prev = s
    return pts[-1][1]


def emission(path):
    out = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    e = json.loads(line)
                    out[e["id"]] = e
    return out


def servebench_row(run, mon):
    d = os.path.join(run["out"], f"conc{run['conc']}")
    res = load_json(os.path.join(d, "result.json"))
    recs = []
    with open(os.path.join(d, "records.jsonl")) as f:
        for line in f:
            if line.strip():
                recs.append(json.loads(line))
    meas = [r for r in recs if r["phase"] == "measured"]
    ok = [r for r in meas if r["success"]]
    t0, t1 = res["benchmark_start_time_unix"], res["benchmark_end_time_unix"]
    em = emission(run.get("emission"))
    # exact join with the server: every record with a response id, any phase
    mism, missing = [], 0
    for r in recs:
        e = em.get(r.get("response_id"))
        if e is None:
            missing += 1
            continue
        if r["success"] and (
            r["output_tokens"] != e["completion_tokens"] or r["token_events"] != e["chunks"]
        ):
            mism.append((r["id"], r["phase"], r["token_events"], r["output_tokens"], e["chunks"], e["completion_tokens"]))
    sb = res.get("servebench", {})
    s = mon["samples"]
    in_window = [x[2] for x in s[:-1] if t0 <= x[0] <= t1]
    return {
        "requests_ok": len(ok),
        "requests": len(meas),
        "failures": sb.get("failure_reasons", {}),
        "peak_in_flight": sb.get("peak_concurrency"),
        "duration_s": res["duration"],
        "window": (t0, t1),
        "token_events": sum(r["token_events"] for r in ok),
        "output_tokens": sum(r["output_tokens"] for r in ok),
        "output_tok_s_reported": res["output_throughput"],
        "peak_rss_mib": mon["peak_vmhwm_root_kib"] / 1024,
        "peak_rss_window_mib": (max(in_window) / 1024) if in_window else None,
        "peak_pss_mib": mon["peak_tree_pss_kib_sampled"] / 1024,
        "server_check": {
            "server_requests": len(em),
            "client_requests": len(recs),
            "records_without_server_line": missing,
            "count_mismatches": len(mism),
            "first_mismatches": mism[:5],
            "server_completion_tokens": sum(e["completion_tokens"] for e in em.values()),
            "client_output_tokens_all_phases": sum(r["output_tokens"] for r in recs),
        },
    }


def parse_local(ts):
    return datetime.datetime.fromisoformat(ts).timestamp()


def aiperf_row(run, mon):
    d = run["out"]
    res = load_json(os.path.join(d, "profile_export_aiperf.json"))
    t0, t1 = parse_local(res["start_time"]), parse_local(res["end_time"])
    av = lambda k: (res.get(k) or {}).get("avg")
    recs = []
    p = os.path.join(d, "profile_export.jsonl")
    if os.path.exists(p):
        with open(p) as f:
            for line in f:
                if line.strip():
                    recs.append(json.loads(line))

    def osl(r):
        m = r.get("metrics", {}).get("output_sequence_length")
        return m["value"] if m else 0

    all_tokens = sum(osl(r) for r in recs)
    em = emission(run.get("emission"))
    # AIPerf: request_count = successful requests; completed_request_count = success + error
    n_ok = av("request_count") or 0
    n_req = av("completed_request_count") or n_ok
    errors = res.get("error_summary") or []
    s = mon["samples"]
    in_window = [x[2] for x in s[:-1] if t0 <= x[0] <= t1]
    eff = res.get("effective_concurrency") or {}
    tokens = av("total_usage_completion_tokens") or av("total_output_tokens") or 0
    return {
        "requests_ok": int(n_ok),
        "requests": int(n_req),
        "failures": errors,
        "peak_in_flight": eff.get("max"),
        "mean_in_flight": eff.get("avg"),
        "duration_s": av("benchmark_duration"),
        "window": (t0, t1),
        "token_events": tokens,
        "output_tokens": tokens,
        "output_tok_s_reported": av("output_token_throughput"),
        "peak_rss_mib": mon["peak_tree_rss_kib_sampled"] / 1024,
        "peak_rss_window_mib": (max(in_window) / 1024) if in_window else None,
        "peak_pss_mib": mon["peak_tree_pss_kib_sampled"] / 1024,
        "largest_process_rss_mib": mon["maxrss_kib_largest_process"] / 1024,
        "processes": mon["max_procs"],
        "server_check": {
            "server_requests": len(em),
            "client_requests": len(recs),
            "server_completion_tokens": sum(e["completion_tokens"] for e in em.values()),
            "client_output_tokens_all_phases": all_tokens,
        },
    }


def fmt(x, d=0):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:,.{d}f}"


def main():
    run_dir = sys.argv[1]
    runs = []
    with open(os.path.join(run_dir, "runs.jsonl")) as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    rows = []
    for run in runs:
        row = {k: run.get(k) for k in ("scenario", "client", "conc", "isl", "osl", "num_prompts", "warmups", "client_cpus", "uptime", "rc")}
        tb, ta = run.get("tcp_before") or {}, run.get("tcp_after") or {}
        row["tcp_delta"] = {k: ta[k] - tb.get(k, 0) for k in ta}
        try:
            mon = load_json(run["mon"])
            r = servebench_row(run, mon) if run["client"] == "servebench" else aiperf_row(run, mon)
        except Exception as e:  # a failed run is reported, not hidden
            row["error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
            continue
        t0, t1 = r.pop("window")
        c0, c1 = cpu_at(mon["samples"], t0), cpu_at(mon["samples"], t1)
        cpu_win = max(c1 - c0, 1e-9)
        s0, s1 = watched_at(mon["samples"], t0, "sim"), watched_at(mon["samples"], t1, "sim")
        dur = r["duration_s"] or (t1 - t0)
        r.update(
            {
                "client_cpu_window_s": cpu_win,
                "client_cores_window": cpu_win / dur,
                "token_events_per_s": r["token_events"] / dur,
                "output_tok_s": r["output_tokens"] / dur,
                "events_per_cpu_s": r["token_events"] / cpu_win,
                "server_cores_window": ((s1 - s0) / dur) if (s0 is not None and s1 is not None) else None,
                "client_cpu_total_s": mon["cpu_total_s"],
                "client_wall_total_s": mon["wall_s"],
            }
        )
        row.update(r)
        rows.append(row)

    L = []
    L.append("| scenario | client | conc | ISL/OSL | requests ok/sent | peak in flight | duration s | output tok/s | token events/s | client CPU-s in window (cores) | **events per client CPU-s** | server cores | peak RSS MiB (PSS) | whole run: CPU-s / wall s | load (1/5/15 min) |")
    L.append("|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if "error" in r:
            L.append(f"| {r['scenario']} | {r['client']} | {r['conc']} | {r['isl']}/{r['osl']} | run failed (rc {r.get('rc')}): {r['error']} |||||||||||")
            continue
        pif = fmt(r["peak_in_flight"])
        if r["client"] == "aiperf" and r.get("mean_in_flight") is not None:
            pif += f" (mean {r['mean_in_flight']:.0f})"
        load = (r.get("uptime") or "").split("load average:")[-1].strip()
        rss = f"{r['peak_rss_mib']:,.0f}"
        if r["client"] == "aiperf":
            rss += f" ({r['peak_pss_mib']:,.0f}; {r['processes']} procs)"
        L.append(
            f"| {r['scenario']} | {r['client']} | {r['conc']:,} | {r['isl']}/{r['osl']} | {r['requests_ok']:,}/{r['requests']:,} | {pif} | "
            f"{r['duration_s']:.2f} | {fmt(r['output_tok_s'])} | {fmt(r['token_events_per_s'])} | {r['client_cpu_window_s']:.2f} ({r['client_cores_window']:.2f}) | "
            f"**{fmt(r['events_per_cpu_s'])}** | {fmt(r['server_cores_window'], 2)} | {rss} | {r['client_cpu_total_s']:.1f} / {r['client_wall_total_s']:.1f} | {load} |"
        )
    L.append("")
    # ratios per scenario
    by = {}
    for r in rows:
        by.setdefault(r["scenario"], {})[r["client"]] = r
    ratio_lines = []
    for sc, d in by.items():
        a, b = d.get("servebench"), d.get("aiperf")
        if not a or not b or "error" in a or "error" in b:
            continue
        ratio_lines.append(
            f"servebench / aiperf [{sc}]: output tok/s ×{a['output_tok_s'] / b['output_tok_s']:.1f}, "
            f"events per client CPU-s ×{a['events_per_cpu_s'] / b['events_per_cpu_s']:.1f}, "
            f"peak RSS ×{a['peak_rss_mib'] / b['peak_rss_mib']:.2f} (vs AIPerf PSS ×{a['peak_rss_mib'] / max(b['peak_pss_mib'], 1e-9):.2f}), "
            f"peak in flight {fmt(a['peak_in_flight'])} vs {fmt(b['peak_in_flight'])}"
        )
    L.extend(ratio_lines)
    L.append("")
    # server cross-check
    L.append("Server cross-check (simulator emission log vs client records, all phases):")
    for r in rows:
        if "error" in r:
            continue
        c = r["server_check"]
        tcp = r.get("tcp_delta") or {}
        tcp_note = (
            f" [TCP during the run: listen overflows +{tcp.get('ListenOverflows', 0):,}, SYN retransmits +{tcp.get('TCPSynRetrans', 0):,}]"
            if tcp
            else ""
        )
        if r["client"] == "servebench":
            ok = c["records_without_server_line"] == 0 and c["count_mismatches"] == 0 and c["server_requests"] == c["client_requests"] + 1
            L.append(
                f"- {r['scenario']} servebench: server {c['server_requests']:,} requests / {c['server_completion_tokens']:,} tokens; "
                f"client {c['client_requests']:,} records (+1 preflight) / {c['client_output_tokens_all_phases']:,} tokens; "
                f"per-request mismatches {c['count_mismatches']}, records without a server line {c['records_without_server_line']} → {'OK' if ok else 'MISMATCH ' + json.dumps(c['first_mismatches'])}{tcp_note}"
            )
        else:
            ok = c["server_requests"] == c["client_requests"] and c["server_completion_tokens"] == c["client_output_tokens_all_phases"]
            L.append(
                f"- {r['scenario']} aiperf: server {c['server_requests']:,} requests / {c['server_completion_tokens']:,} tokens; "
                f"client {c['client_requests']:,} records / {c['client_output_tokens_all_phases']:,} tokens → {'OK' if ok else 'MISMATCH'}{tcp_note}"
            )
    L.append("")
    # targets
    one_core = [r for r in rows if r.get("client") == "servebench" and "error" not in r and r.get("client_cpus") and "," not in str(r["client_cpus"]) and "-" not in str(r["client_cpus"])]
    if one_core:
        worst = min(one_core, key=lambda r: r["events_per_cpu_s"])
        each = ", ".join(f"{r['scenario']} {fmt(r['events_per_cpu_s'])}" for r in one_core)
        v = worst["events_per_cpu_s"]
        L.append(
            f"Target ≥ 200,000 token events/s on one core (client pinned to CPU {worst['client_cpus']}; token events per client CPU-second): "
            f"{each}; lowest {fmt(v)} → {'PASS' if v >= 200_000 else 'FAIL'}"
        )
    for r in rows:
        if r.get("client") == "servebench" and "error" not in r and r["conc"] >= 1000:
            L.append(
                f"Memory at conc {r['conc']:,} ({r['scenario']}, ISL/OSL {r['isl']}/{r['osl']}, peak in flight {fmt(r['peak_in_flight'])}): "
                f"peak RSS {r['peak_rss_mib']:,.0f} MiB (target < 300 MB = 286 MiB) → {'PASS' if r['peak_rss_mib'] * 1.048576 < 300 else 'FAIL'}"
            )
    text = "\n".join(L) + "\n"
    with open(os.path.join(run_dir, "report.md"), "w") as f:
        f.write(text)
    with open(os.path.join(run_dir, "report.json"), "w") as f:
        json.dump(rows, f, indent=1, default=str)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
