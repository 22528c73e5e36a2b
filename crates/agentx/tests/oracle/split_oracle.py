"""Prints, per trace, the conversations agentx-harness's loader splits a Weka trace into
(harness functions called directly): one JSON line per trace {id, convs: {conv_id: [[t, in, out], ...]}}."""
import json, sys
from aiperf.dataset.loader import weka_trace as wt
from aiperf.dataset.loader.weka_trace_models import WekaTrace, WekaNormalRequest, WekaStreamingRequest

for path in sys.argv[1:]:
    d = json.load(open(path))
    trace = WekaTrace.model_validate(d)
    tid = d["id"]
    normals, subs = [], []
    child_plans = []
    for idx, req in enumerate(trace.requests):
        if isinstance(req, (WekaNormalRequest, WekaStreamingRequest)):
            normals.append((idx, req))
        else:
            sa_index = len(subs)
            subs.append((idx, req))
            child_plans.extend(wt._expand_subagent_to_child_plans(tid, sa_index, idx, req, 64, split_chains=True))
    flat = []
    main = normals
    if len(normals) > 1:
        main = wt.WekaTraceLoader._detect_and_split_flat_chains(
            None, trace_id=tid, normals=normals, trace=trace, trace_bs=64,
            flat_plans=flat, split_stats=wt._SplitStats())
    convs = {tid: [[r.t, r.input_length, r.output_length] for _, r in main]}
    plan = wt._ParentPlan(tid, main, subs, block_size=64)
    for cp in wt._child_plans_for_active_subagents(plan, child_plans):
        convs[cp.session_id] = [[r.t, r.input_length, r.output_length] for r in cp.requests]
    for fp in flat:
        convs[fp.session_id] = [[r.t, r.input_length, r.output_length] for _, r in fp.requests]
    print(json.dumps({"id": tid, "convs": convs}))
