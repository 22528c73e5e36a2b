#!/usr/bin/env python3
"""Run a command and sample the CPU time and memory of its whole process tree.

Usage: procmon.py --out FILE.json [--interval S] [--watch NAME=PID ...] -- CMD [ARGS...]

Every --interval seconds (default 0.02) it reads the command's process and all its descendants
(the tree is re-discovered by a walk over /proc every --rescan seconds) and records one sample:
  [t_unix_s, tree_cpu_s, tree_rss_kib, tree_pss_kib, n_procs, {NAME: watched_cpu_s}]
where tree_cpu_s = sum over live processes of utime+stime+cutime+cstime (so the time of children
that already exited and were reaped is kept, counted once), tree_rss_kib = sum of RSS, and
tree_pss_kib = sum of PSS from /proc/PID/smaps_rollup (every --pss-every samples, else 0; shared pages split between the sharers: the
fair figure for a multi-process client such as AIPerf). Watched processes (e.g. the server) are
sampled too, separately, so a report can show that the server was not the bottleneck.

After the command exits, the exact totals come from wait4(): rusage of the command and every
descendant it waited for (ru_utime + ru_stime, ru_maxrss = the largest single process). The JSON
written to --out holds the command, rc, start/end (unix s), the totals, the peaks, and the samples.
The command's own stdout/stderr pass through unchanged; procmon's exit code is the command's.
No third-party modules.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

CLK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def read_stat(pid):
    """(ppid, cpu_s incl. reaped children, rss_kib) of one process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = s[s.rfind(")") + 2 :].split()
    # fields after comm: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17) ... rss(24)
    ppid = int(rest[1])
    cpu = (int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])) / CLK
    rss = int(rest[21]) * PAGE_KIB
    return ppid, cpu, rss


def read_pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def read_hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def find_tree(root):
    """The pids of root and all its live descendants (one walk over /proc)."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = read_stat(int(name))
            if st is not None:
                parent[int(name)] = st[0]
    children = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    todo, tree = [root], []
    while todo:
        p = todo.pop()
        if p in parent:
            tree.append(p)
            todo.extend(children.get(p, []))
    return tree


def tree_sample(tree, with_pss):
    """(live pids, cpu_s, rss_kib, pss_kib) summed over the given pids."""
    live, cpu, rss, pss = [], 0.0, 0, 0
    for p in tree:
        st = read_stat(p)
        if st is None:
            continue
        live.append(p)
        cpu += st[1]
        rss += st[2]
        if with_pss:
            pss += read_pss(p)
    return live, cpu, rss, pss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--rescan", type=float, default=0.5, help="seconds between /proc walks")
    ap.add_argument("--pss-every", type=int, default=10, help="read PSS every N samples")
    ap.add_argument("--watch", action="append", default=[], metavar="NAME=PID")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command given (put it after --)")
    watch = {}
    for w in a.watch:
        name, _, pid = w.partition("=")
        if not pid.isdigit():
            ap.error(f"--watch {w}: expected NAME=PID")
        watch[name] = int(pid)

    start = time.time()
    proc = subprocess.Popen(cmd)
    # forward Ctrl-C / TERM to the command so it can finish its files
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    samples, peak_rss, peak_pss, peak_hwm, max_procs = [], 0, 0, 0, 0
    status = None
    tree, last_walk, n = [proc.pid], 0.0, 0
    while True:
        t = time.time()
        # the full /proc walk (new children) is slow on a busy machine: every --rescan seconds;
        # in between only the known pids are read, so the CPU clock is sampled finely
        if t - last_walk >= a.rescan:
            tree, last_walk = find_tree(proc.pid), t
        tree, cpu, rss, pss = tree_sample(tree, with_pss=(n % a.pss_every == 0))
        if n % a.pss_every != 0:
            pss = 0
        n += 1
        hwm = read_hwm(proc.pid)
        wcpu = {}
        for name, pid in watch.items():
            st = read_stat(pid)
            wcpu[name] = st[1] if st else None
        if tree:
            samples.append([round(t, 4), round(cpu, 3), rss, pss, len(tree), wcpu])
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
            peak_hwm, max_procs = max(peak_hwm, hwm), max(max_procs, len(tree))
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        time.sleep(a.interval)
    end = time.time()
    rc = os.waitstatus_to_exitcode(status)
    wend = {}
    for name, pid in watch.items():
        st = read_stat(pid)
        wend[name] = st[1] if st else None
    samples.append([round(end, 4), round(ru.ru_utime + ru.ru_stime, 3), 0, 0, 0, wend])
    res = {
        "cmd": cmd,
        "rc": rc,
        "start_unix": start,
        "end_unix": end,
        "wall_s": end - start,
        "cpu_user_s": ru.ru_utime,
        "cpu_sys_s": ru.ru_stime,
        "cpu_total_s": ru.ru_utime + ru.ru_stime,
        "maxrss_kib_largest_process": ru.ru_maxrss,
        "peak_vmhwm_root_kib": peak_hwm,
        "peak_tree_rss_kib_sampled": peak_rss,
        "peak_tree_pss_kib_sampled": peak_pss,
        "max_procs": max_procs,
        "interval_s": a.interval,
        "samples": samples,
    }
    with open(a.out, "w") as f:
        json.dump(res, f)
    sys.exit(rc)


if __name__ == "__main__":
    main()
