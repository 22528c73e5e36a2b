#!/usr/bin/env bash
# Client-cost A/B: two servebench release binaries, .gpu/sb-before and .gpu/sb-after (built from
# `git archive` trees of the two commits with one target dir, stripped), alternated; run on idle
# CPUs (docs/benchmarks-client.md Update 3/4: the device machine, via `run` with carry .gpu).
# Needs .gpu/tok (a tokenizer dir) and $OUT (the summary goes to $OUT/ab.txt). Scenarios ceiling
# and c1k-long of scripts/bench-client.sh, before/after alternated ${AB_ROUNDS:-5} times.
set -u
cd "$(dirname "$0")/.."
nproc > "$OUT/ab-env.txt"; uname -a >> "$OUT/ab-env.txt"
for r in $(seq 1 "${AB_ROUNDS:-5}"); do for v in before after; do
  BC_AIPERF=none BC_PARSER_BENCH=0 BC_BIN=.gpu/sb-$v BC_TOKENIZER=.gpu/tok BC_CLIENT_CPUS=2 BC_SIM_CPUS=3 \
    BC_OUT=/tmp/ab/$v-$r bash scripts/bench-client.sh ceiling c1k-long > /tmp/ab-$v-$r.log 2>&1 || echo "rc $? $v $r" >> "$OUT/ab-env.txt"
done; done
python3 - > "$OUT/ab.txt" <<'PY'
import json,glob,statistics as st
rows={}
for f in sorted(glob.glob('/tmp/ab/*/report.json')):
    v,r=f.split('/')[3].split('-')
    for x in json.load(open(f)):
        if 'events_per_cpu_s' in x: rows.setdefault((x['scenario'],v),{})[int(r)]=x['events_per_cpu_s']
for sc in sorted({k[0] for k in rows}):
    b,a=rows.get((sc,'before'),{}),rows.get((sc,'after'),{})
    common=sorted(set(b)&set(a))
    if not common: continue
    pr=[a[r]/b[r] for r in common if b[r]>0]
    bv=[b[r] for r in common]; av=[a[r] for r in common]
    print(f"{sc}: rounds {len(common)}; before median {st.median(bv):,.0f} mean {st.mean(bv):,.0f}; after median {st.median(av):,.0f} mean {st.mean(av):,.0f}; median after/before {st.median(av)/st.median(bv):.3f}; mean {st.mean(av)/st.mean(bv):.3f}; paired ratios median {st.median(pr):.3f} [{', '.join(f'{x:.2f}' for x in pr)}]")
PY
cat "$OUT/ab.txt"
cd /tmp && tar czf "$OUT/ab-runs.tgz" ab/*/report.md ab/*/report.json ab-*.log 2>/dev/null
