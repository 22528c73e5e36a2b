#!/usr/bin/env python3
"""Build the aggregate-power parity fixtures and their goldens by running InferenceX's own tools.

    python3 make_goldens.py --ix /path/to/InferenceX --out DIR

For every case below this writes DIR/<case>/input/ (the files the tool reads: gpu_metrics.csv,
the raw bench result or AgentX artifacts, the agg row, amd-smi snapshots), DIR/<case>/args.json
(the tool, its argv and environment), then copies input/ to a scratch directory, runs the REAL
tool there (utils/aggregate_power.py as a script, or `python -m
utils.agentic.aggregation.power_adapter` with the InferenceX root on PYTHONPATH) with TZ=UTC,
and stores every file of the scratch directory afterwards under DIR/<case>/expected/ plus the
exit status in DIR/<case>/expected.rc. crates/metrics/tests/aggregate_power_golden.rs runs
servebench's port on input/ and compares every file byte for byte (and the exit status); with
python3 present it also runs this script live into a temp dir and checks the committed tree is
what the real tools write today.

Only the standard library is needed (the tools import nothing else). Deterministic: fixed
seeds, fixed epochs; timestamps in nvidia-smi format are rendered in UTC and read with TZ=UTC.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

BASE = 1_700_000_000.0
NV_HEADER = "timestamp, index, power.draw [W], temperature.gpu"
NV_FULL_HEADER = (
    "timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz], "
    "clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%]"
)
SNAP_HEADER = (
    "gpu,socket_power,gfx_voltage,soc_voltage,mem_voltage,"
    "throttle_status,power_management,total_energy_consumption"
)

CASES: dict[str, dict] = {}


def nv_ts(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y/%m/%d %H:%M:%S.%f")


def iso_ts(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).replace(tzinfo=None).isoformat(
        timespec="milliseconds"
    )


def nv_csv(samples, header=NV_HEADER) -> str:
    lines = [header]
    for ts, idx, pw in samples:
        lines.append(f"{nv_ts(ts)}, {idx}, {pw:.2f} W, 65")
    return "\n".join(lines) + "\n"


def amd_csv(samples) -> str:
    lines = ["timestamp,gpu,socket_power,temperature"]
    for ts, idx, pw in samples:
        lines.append(f"{iso_ts(ts)},{idx},{pw},65")
    return "\n".join(lines) + "\n"


def bench(start, end, duration, total_output, total_input=0, completed=1, **extra) -> str:
    d = {
        "benchmark_start_time_unix": start,
        "benchmark_end_time_unix": end,
        "duration": duration,
        "completed": completed,
        "total_output_tokens": total_output,
        "total_input_tokens": total_input,
    }
    d.update(extra)
    return json.dumps(d)


def constant(start, end, watts, gpus):
    ts = [start - 1.0] + [start + o for o in range(int(end - start) + 1)] + [end + 1.0]
    return [(t, g, watts) for t in ts for g in range(gpus)]


def snap(energy: dict) -> str:
    lines = [SNAP_HEADER]
    for gpu, e in energy.items():
        lines.append(f"{gpu},238,N/A,N/A,N/A,N/A,ENABLED,{e}")
    return "\n".join(lines) + "\n"


def flat_stream(watts_by_gpu: dict) -> str:
    return amd_csv([(BASE + o, g, w) for g, w in watts_by_gpu.items() for o in range(11)])


def ap(name, files, expected=None, extra_args=(), env=None, csv="gpu_metrics.csv",
       bench_name="bench.json", validation="power_validation.json"):
    """An aggregate_power.py case: files = {relative path: text or bytes}."""
    argv = ["--csv", csv, "--bench-result", bench_name, "--agg-result", "agg.json"]
    if expected is not None:
        argv += ["--expected-num-gpus", str(expected)]
    if validation is not None:
        argv += ["--validation-result", validation]
    argv += list(extra_args)
    CASES[name] = {"tool": "aggregate_power", "files": files, "argv": argv, "env": env or {}}


def std_bench(**kw):
    args = dict(start=BASE, end=BASE + 10, duration=10.0, completed=10, total_input=10_000,
                total_output=2_000)
    args.update(kw)
    return bench(**args)


AGG = json.dumps({"hw": "h200"})

# ---- InferenceX utils/test_aggregate_power.py, run()-level and integrate_power cases ----------
ap("trapezoid_irregular_two_gpus", {
    "gpu_metrics.csv": nv_csv([
        (BASE - 1, 0, 100.0), (BASE + 1, 0, 140.0), (BASE + 3.5, 0, 190.0), (BASE + 6, 0, 240.0),
        (BASE + 8.5, 0, 290.0), (BASE + 11, 0, 340.0), (BASE - 1, 1, 200.0), (BASE + 1, 1, 240.0),
        (BASE + 3.5, 1, 290.0), (BASE + 6, 1, 340.0), (BASE + 8.5, 1, 390.0), (BASE + 11, 1, 440.0),
    ]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)
ap("expected_gpu_count_mismatch", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 2)),
    "bench.json": std_bench(), "agg.json": AGG}, expected=4)
ap("gpu_not_bracketing_window", {
    "gpu_metrics.csv": nv_csv([(BASE + o, 0, 500.0) for o in (-1, 1, 3, 5, 7, 9, 11)]
                              + [(BASE + o, 1, 500.0) for o in (1, 3, 5, 7, 9, 11)]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)
ap("sampling_gap_8s", {
    "gpu_metrics.csv": nv_csv([(BASE - 1, 0, 500.0), (BASE + 1, 0, 500.0), (BASE + 9, 0, 500.0),
                               (BASE + 11, 0, 500.0)]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=1)
ap("invalid_samples_far_outside_window", {
    "gpu_metrics.csv": nv_csv([(BASE - 100, 0, -1.0), (BASE + 100, 0, 100.0), (BASE + 100, 0, 200.0)]
                              + [(BASE + o, 0, 500.0) for o in range(-1, 12)]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=1)
for label, row in [("timestamp", "not-a-timestamp, 0, 500 W"), ("power", "{timestamp}, 0, [N/A]")]:
    rows = ["timestamp, index, power.draw [W]"]
    for o in range(-1, 12):
        t = nv_ts(BASE + o)
        rows.append(row.format(timestamp=t) if o == 5 else f"{t}, 0, 500 W")
    ap(f"malformed_{label}_inside_window", {
        "gpu_metrics.csv": "\n".join(rows) + "\n",
        "bench.json": std_bench(completed=1, total_input=1_000, total_output=1_000),
        "agg.json": AGG}, expected=1)
ap("patches_agg_eight_gpus", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 8)),
    "bench.json": bench(BASE, BASE + 10, 10.0, 20_000, 20_000),
    "agg.json": json.dumps({"hw": "h200", "conc": 64})}, expected=8, validation=None)
ap("j_per_total_token_8k1k", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 8)),
    "bench.json": bench(BASE, BASE + 10, 10.0, 65_536, 524_288), "agg.json": AGG}, expected=8)
ap("bench_window_missing", {
    "gpu_metrics.csv": nv_csv([(BASE, 0, 400.0)]),
    "bench.json": json.dumps({"duration": 10.0, "total_output_tokens": 1000}), "agg.json": AGG},
    expected=1)
ap("csv_missing", {"bench.json": bench(0.0, 10.0, 10.0, 1000), "agg.json": AGG},
   expected=1, csv="absent.csv")
ap("total_output_tokens_zero", {
    "gpu_metrics.csv": nv_csv([(BASE, 0, 400.0)]),
    "bench.json": bench(BASE, BASE + 10, 10.0, 0), "agg.json": AGG}, expected=1)
ap("complete_metric_contract", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 8)),
    "bench.json": std_bench(), "agg.json": AGG}, expected=8)
ap("missing_csv_best_effort", {"bench.json": std_bench(),
                               "agg.json": json.dumps({"hw": "h200", "conc": 4})},
   expected=8, csv="missing.csv")
ap("missing_csv_strict_flag", {"bench.json": std_bench(), "agg.json": AGG},
   expected=8, csv="missing.csv", extra_args=["--require-power"])
ap("missing_csv_strict_env", {"bench.json": std_bench(), "agg.json": AGG},
   expected=8, csv="missing.csv", env={"REQUIRE_POWER": "yes"})
ap("invalid_successful_query_count", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 1)),
    "bench.json": std_bench(completed=0), "agg.json": AGG}, expected=1)

# accumulator cross-check
def acc_case(name, stream, start=None, end=None, end_text=None, expected=1, gpus_csv=None):
    files = {"gpu_metrics.csv": gpus_csv or stream, "bench.json": std_bench(start=BASE + 2,
             end=BASE + 8, duration=6.0), "agg.json": json.dumps({"hw": "mi355x"})}
    if start is not None:
        files["gpu_metrics_energy_start.csv"] = snap(start)
    if end_text is not None:
        files["gpu_metrics_energy_end.csv"] = end_text
    elif end is not None:
        files["gpu_metrics_energy_end.csv"] = snap(end)
    ap(name, files, expected=expected)

acc_case("accumulator_matches_stream", flat_stream({0: 500.0}), {"0": 1_000_000.0}, {"0": 1_005_000.0})
acc_case("accumulator_disagrees", flat_stream({0: 400.0}), {"0": 1_000_000.0}, {"0": 1_005_000.0})
acc_case("accumulator_no_snapshots", flat_stream({0: 500.0}))
acc_case("accumulator_missing_end", flat_stream({0: 500.0}), {"0": 1_000_000.0})
acc_case("accumulator_missing_start", flat_stream({0: 500.0}), None, {"0": 1.0})
acc_case("accumulator_unparseable_end", flat_stream({0: 500.0}), {"0": 1_000_000.0},
         end_text="gpu,socket_power\n0,238\n")
acc_case("accumulator_negative_delta", flat_stream({0: 400.0, 1: 0.0}),
         {"0": 1_000_000.0, "1": 2_000_000.0}, {"0": 1_005_000.0, "1": 1_999_000.0}, expected=2)
acc_case("accumulator_unmatched_gpu", flat_stream({0: 500.0, 1: 5_000.0}),
         {"0": 1_000_000.0, "1": 3_000_000.0}, {"0": 1_005_000.0}, expected=2)
acc_case("accumulator_zero_delta", flat_stream({0: 500.0}), {"0": 1_000_000.0}, {"0": 1_000_000.0})
acc_case("accumulator_real_amd_smi_rows", flat_stream({0: 500.0}),
         None, end_text=None)
CASES["accumulator_real_amd_smi_rows"]["files"].update({
    "gpu_metrics_energy_start.csv": f"{SNAP_HEADER}\n0,238,N/A,N/A,N/A,N/A,ENABLED,178319501.682\n"
                                    "1,241,N/A,N/A,N/A,N/A,ENABLED,178400000.000\n",
    "gpu_metrics_energy_end.csv": f"{SNAP_HEADER}\n0,240,N/A,N/A,N/A,N/A,ENABLED,178324501.682\n"
                                  "1,239,N/A,N/A,N/A,N/A,ENABLED,N/A\n"})
ap("run_records_advisory_accumulator", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 2)),
    "gpu_metrics_energy_start.csv": snap({"0": 1_000_000.0, "1": 2_000_000.0}),
    "gpu_metrics_energy_end.csv": snap({"0": 1_006_000.0, "1": 2_006_000.0}),
    "bench.json": std_bench(), "agg.json": json.dumps({"hw": "mi355x"})}, expected=2)
ap("accumulator_mismatch_keeps_validity", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 2)),
    "gpu_metrics_energy_start.csv": snap({"0": 1_000_000.0, "1": 2_000_000.0}),
    "gpu_metrics_energy_end.csv": snap({"0": 1_000_100.0, "1": 2_000_100.0}),
    "bench.json": std_bench(), "agg.json": json.dumps({"hw": "mi355x"})}, expected=2)
ap("amd_iso_timestamps", {
    "gpu_metrics.csv": amd_csv([(BASE + o * 0.5, g, 700.0 + 10 * g + o) for o in range(-4, 26)
                                for g in range(2)]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)

# ---- telemetry InferenceX's tests do not cover ----------------------------------------------
rng = random.Random(30)

def noisy(gpus, start, end, step, base_w=560.0, jitter=0.35):
    rows = []
    t = start
    while t <= end + 1e-9:
        for g in range(gpus):
            rows.append((t + rng.uniform(0, 0.004), g, base_w + 90 * rng.random() + 13 * g))
        t += step * (1 + rng.uniform(-jitter, jitter) * 0.1)
    return rows

def nv_full(samples):
    lines = [NV_FULL_HEADER]
    for ts, idx, pw in samples:
        lines.append(f"{nv_ts(ts)}, {idx}, {pw:.2f} W, {60 + idx}, 1980 MHz, 2619 MHz, "
                     f"{rng.randint(0, 100)} %, {rng.randint(0, 100)} %")
    return "\n".join(lines) + "\n"

ap("nvidia_smi_8gpu_1hz_noisy", {
    "gpu_metrics.csv": nv_full(noisy(8, BASE - 20, BASE + 80, 1.0)),
    "bench.json": bench(BASE + 0.318, BASE + 61.7312, 61.413, 131_072, 1_048_576, completed=1024),
    "agg.json": json.dumps({"hw": "h200", "conc": 32, "tput_per_gpu": 1234.5678901234})},
    expected=8)
ap("gapped_3_5s_inside_window", {
    "gpu_metrics.csv": nv_csv([(BASE + o, 0, 500.0 + o) for o in [-1, 0, 1, 2, 5.5, 6.5, 7.5, 9, 10.2]]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=1)
ap("gap_exactly_3s_is_allowed", {
    "gpu_metrics.csv": nv_csv([(BASE + o, 0, 500.0 + o) for o in [-1, 2, 5, 8, 11]]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=1)
ap("short_stream_ends_before_window_end", {
    "gpu_metrics.csv": nv_csv([(BASE + o, g, 450.0) for o in range(-2, 7) for g in range(2)]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)
ap("single_sample_per_gpu", {
    "gpu_metrics.csv": nv_csv([(BASE + 5, 0, 450.0), (BASE + 5, 1, 460.0)]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)
ap("extra_gpu_observed", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 300.0, 3)),
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)
ap("expected_zero_gpus", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 300.0, 1)),
    "bench.json": std_bench(), "agg.json": AGG}, expected=0)
trunc = nv_csv(constant(BASE, BASE + 10, 512.25, 2))
ap("truncated_final_row_inside_gap", {
    "gpu_metrics.csv": trunc + nv_ts(BASE + 11.5)[:15],
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)
ap("truncated_final_row_mid_power", {
    "gpu_metrics.csv": trunc + f"{nv_ts(BASE + 11.5)}, 1, 51",
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)
ap("truncated_final_row_no_power", {
    "gpu_metrics.csv": trunc + f"{nv_ts(BASE + 11.5)}, 0",
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)
ap("duplicate_timestamps_averaged", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 400.0, 1)
                              + [(BASE + 3, 0, 412.34), (BASE + 3, 0, 433.71), (BASE + 7, 0, 0.1)]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=1)
ap("negative_and_missing_gpu_id", {
    "gpu_metrics.csv": "timestamp,index,power.draw [W]\n" + "".join(
        f"{nv_ts(BASE + o)},{'' if o == 4 else 0},{-3 if o == 6 else 500} W\n" for o in range(-1, 12)),
    "bench.json": std_bench(), "agg.json": AGG}, expected=1)
ap("crlf_bom_quotes_epoch_ms", {
    "gpu_metrics.csv": ("\ufefftimestamp, \"index\", \"power.draw [W]\"\r\n" + "".join(
        f"{int((BASE + o) * 1000)}, \"{g}\", \"{400 + g}.5 W\"\r\n"
        for o in range(-1, 12) for g in range(2))).encode("utf-8"),
    "bench.json": std_bench(), "agg.json": AGG}, expected=2)
ap("iso_offsets_and_z", {
    "gpu_metrics.csv": "time,gpu,power\n" + "".join(
        f"{datetime.fromtimestamp(BASE + o, timezone.utc).isoformat().replace('+00:00', z)},0,{300 + o}\n"
        for o, z in zip(range(-1, 12), ["Z", "+00:00", "Z"] * 5))
    + f"2023-11-14 22:13:25.5+00:00,0,333\n2023-11-15T03:43:26+05:30,0,334\n",
    "bench.json": std_bench(), "agg.json": AGG}, expected=1)
ap("header_only", {"gpu_metrics.csv": NV_HEADER + "\n", "bench.json": std_bench(), "agg.json": AGG},
   expected=1)
ap("no_gpu_column", {"gpu_metrics.csv": "timestamp, power.draw [W]\n" + "".join(
    f"{nv_ts(BASE + o)}, 500 W\n" for o in range(-1, 12)), "bench.json": std_bench(), "agg.json": AGG},
   expected=1)
ap("empty_file", {"gpu_metrics.csv": "", "bench.json": std_bench(), "agg.json": AGG}, expected=1)
ap("agg_missing", {"gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 1)),
                   "bench.json": std_bench()}, expected=1)
ap("agg_not_json", {"gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 1)),
                    "bench.json": std_bench(), "agg.json": "{not json"}, expected=1)
ap("bench_not_json", {"gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 1)),
                      "bench.json": "[1, 2", "agg.json": AGG}, expected=1)
ap("duration_mismatch", {"gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 1)),
                         "bench.json": std_bench(duration=12.0), "agg.json": AGG}, expected=1)
ap("agg_with_stale_power_keys", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 321.123456, 2)),
    "bench.json": std_bench(), "agg.json": json.dumps({
        "power_valid": 0, "hw": "b200", "avg_power_w": 999.0, "power_invalid_reasons": ["x"],
        "note": "caf\u00e9 \u2603", "power_metric_schema_version": 1, "x": 1e-7, "y": 12345678901234567890.0,
        "z": [1, 2.5, None, True]})}, expected=2)
ap("default_sidecar_path_in_subdir", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 1)),
    "run/result_x.json": std_bench(), "agg.json": AGG}, expected=1, bench_name="run/result_x.json",
    validation=None)
ap("whitespace_only_row_and_quoted_newline", {
    "gpu_metrics.csv": nv_csv(constant(BASE, BASE + 10, 500.0, 1)) + "   \n"
    + f"\"{nv_ts(BASE + 40)}\", 0, \"5\n00 W\"\n",
    "bench.json": std_bench(), "agg.json": AGG}, expected=1)
ap("window_edges_on_samples", {
    "gpu_metrics.csv": nv_csv([(BASE + o, 0, 100.0 * (o + 2)) for o in range(0, 11)]),
    "bench.json": std_bench(), "agg.json": AGG}, expected=1)

# ---- AgentX power adapter (utils/agentic/aggregation/test_power_adapter.py) -------------------

def record(start_ns, end_ns, input_tokens=100, output_tokens=50, phase="profiling", error=None):
    metrics = {}
    if input_tokens is not None:
        metrics["input_sequence_length"] = {"value": input_tokens, "unit": "tokens"}
    if output_tokens is not None:
        metrics["output_sequence_length"] = {"value": output_tokens, "unit": "tokens"}
    return {"metadata": {"benchmark_phase": phase, "request_start_ns": start_ns,
                         "request_end_ns": end_ns}, "metrics": metrics, "error": error}

DEFAULT_RECORDS = [
    record(1_700_000_001_500_000_000, 1_700_000_002_000_000_000),
    record(1_700_000_002_500_000_000, 1_700_000_003_500_000_000, input_tokens=200, output_tokens=100),
    record(1_699_999_999_000_000_000, 1_700_000_000_000_000_000, phase="warmup"),
    record(1_700_000_003_000_000_000, 1_700_000_004_000_000_000, error={"type": "HTTPStatusError"}),
]
DEFAULT_AGGREGATE = {"start_time": "2023-11-14T22:13:21+00:00", "end_time": "2023-11-14T22:13:24+00:00"}

def power_csv():
    rows = ["timestamp, index, power.draw [W]"]
    for t in (1_700_000_020.0, 1_700_000_021.0, 1_700_000_024.0, 1_700_000_025.0):
        rows.append(f"{t}, 0, 400 W")
        rows.append(f"{t}, 1, 600 W")
    return "\n".join(rows) + "\n"

def ax(name, aggregate=None, records=None, extra=None, expected=2, require=False,
       agg=json.dumps({"hw": "h200", "scenario_type": "agentic-coding"}), artifacts="aiperf_artifacts"):
    files = {
        f"results/{artifacts}/profile_export_aiperf.json": json.dumps(aggregate or DEFAULT_AGGREGATE),
        f"results/{artifacts}/profile_export.jsonl":
            "".join(json.dumps(r) + "\n" for r in (records or DEFAULT_RECORDS)),
    }
    if agg is not None:
        files["agg_agentx.json"] = agg
    files.update(extra or {})
    argv = ["--result-dir", "results", "--agg-result", "agg_agentx.json"]
    if expected is not None:
        argv += ["--expected-num-gpus", str(expected)]
    if require:
        argv.append("--require-power")
    CASES[name] = {"tool": "power_adapter", "files": files, "argv": argv, "env": {}}

ax("agentx_valid_whole_deployment", aggregate={"start_time": "2023-11-14T22:13:41+00:00",
                                               "end_time": "2023-11-14T22:13:44+00:00"},
   extra={"results/gpu_metrics.csv": power_csv()}, require=True)
ax("agentx_window_from_lifecycle_no_telemetry")
ax("agentx_naive_times_captured_offset", aggregate={"start_time": "2023-11-14T14:13:41",
                                                    "end_time": "2023-11-14T14:13:44"},
   extra={"results/agentic_power_timezone_offset.txt": "-0800\n",
          "results/gpu_metrics.csv": power_csv()})
ax("agentx_naive_times_offset_missing", aggregate={"start_time": "2023-11-14T14:13:21",
                                                   "end_time": "2023-11-14T14:13:24"})
ax("agentx_naive_times_offset_invalid", aggregate={"start_time": "2023-11-14T14:13:21",
                                                   "end_time": "2023-11-14T14:13:24"},
   extra={"results/agentic_power_timezone_offset.txt": "PST"})
ax("agentx_profile_window_missing", aggregate={"end_time": "2023-11-14T22:13:24+00:00"})
ax("agentx_profile_window_inverted", aggregate={"start_time": "2023-11-14T22:13:24+00:00",
                                                "end_time": "2023-11-14T22:13:21+00:00"})
ax("agentx_incomplete_token_accounting", records=[record(1, 2, output_tokens=None)],
   agg=json.dumps({"power_valid": 1, "avg_power_w": 999, "joules_per_output_token": 999}))
ax("agentx_incomplete_token_accounting_strict", records=[record(1, 2, output_tokens=None)],
   agg=json.dumps({"power_valid": 1, "avg_power_w": 999, "joules_per_output_token": 999}),
   require=True)
ax("agentx_only_warmup_records", records=[record(1, 2, phase="warmup")])
ax("agentx_window_unwritable", extra={"results/agentic_power_window.json/.keep": ""},
   agg=json.dumps({"power_valid": 1, "avg_power_w": 999, "joules_per_output_token": 999}),
   require=True)
ax("agentx_failure_without_agg", records=[record(1, 2, output_tokens=None)], agg=None)
ax("agentx_nested_artifact_dir_epoch_window", artifacts="aiperf_artifacts/run-b",
   aggregate={"start_time": 1_700_000_020.5, "end_time": 1_700_000_024},
   extra={"results/gpu_metrics.csv": power_csv()}, expected=None)
CASES["agentx_artifacts_missing"] = {
    "tool": "power_adapter", "files": {"agg_agentx.json": AGG, "results/.keep": ""},
    "argv": ["--result-dir", "results", "--agg-result", "agg_agentx.json"], "env": {}}


TIMESTAMPS = [
    "1700000000", "1700000000.5", "-5", "1700000000123", "1700000000123.5", "1e9", "+5", " 17 ",
    "2023/11/14 22:13:20.123456", "2023/11/14 22:13:20.1234567", "2023/11/14 22:13:20",
    "2023/11/14  22:13:20.5", "2023/1/4 2:3:4.5", "2023/11/ 4 22:13:20", "2023/02/30 22:13:20",
    "2023/11/14 22:13:60", "2023/11/14 24:13:20", "2023/11/14 22:13:2", "2023/11/14\t22:13:20.1",
    "2023-11-14T22:13:20", "2023-11-14T22:13:20.123", "2023-11-14 22:13:20.123",
    "2023-11-14T22:13:20Z", "2023-11-14T22:13:20.5+05:30", "2023-11-14T22:13:20-0800",
    "2023-11-14T22:13:20+05", "2023-11-14T22:13:20.1234567", "2023-11-14T22:13:20,25",
    "20231114T221320", "20231114", "2023-11-14", "2023-11-14T22", "2023-11-14T22:13",
    "2023-11-14T2213", "2023-11-14T22:13:20+24:00", "2023-11-14T22:13:20Zx", "2023-11-14T",
    "2023-11-14x22:13:20", "2023-11-14 22:13:20 +00:00", "2023-11-14T22:13:20.", "0000-01-01",
    "2023-W46-2", "not-a-time", "", "2023/11/14 22:13:5", "2023-13-01", "2023-11-14T22:13:20.123+00:00:30",
    "1.5e3", "١٢٣",
]


def write_files(root: Path, files: dict) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_bytes(content.encode("utf-8"))


def run_case(ix: Path, case: dict, work: Path) -> int:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONHASHSEED": "0"}
    env.update(case["env"])
    if case["tool"] == "aggregate_power":
        cmd = [sys.executable, str(ix / "utils/aggregate_power.py"), *case["argv"]]
    else:
        env["PYTHONPATH"] = str(ix)
        cmd = [sys.executable, "-m", "utils.agentic.aggregation.power_adapter", *case["argv"]]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{case}: rc {proc.returncode}\n{proc.stderr}")
    return proc.returncode


def main() -> int:
    ap_ = argparse.ArgumentParser()
    ap_.add_argument("--ix", type=Path, required=True, help="InferenceX repository root")
    ap_.add_argument("--out", type=Path, required=True)
    args = ap_.parse_args()
    ix = args.ix.resolve()
    for name, case in CASES.items():
        d = args.out / name
        if d.exists():
            shutil.rmtree(d)
        write_files(d / "input", case["files"])
        (d / "args.json").write_text(json.dumps(
            {"tool": case["tool"], "argv": case["argv"], "env": case["env"]}, indent=1) + "\n")
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "w"
            shutil.copytree(d / "input", work)
            rc = run_case(ix, case, work)
            shutil.copytree(work, d / "expected")
        (d / "expected.rc").write_text(f"{rc}\n")
    probe = (
        "import json, sys; sys.path.insert(0, sys.argv[1] + '/utils'); "
        "from aggregate_power import _parse_timestamp as p; "
        "print(json.dumps([[s, p(s)] for s in json.loads(sys.argv[2])], indent=1))"
    )
    ts = subprocess.run([sys.executable, "-c", probe, str(ix), json.dumps(TIMESTAMPS)],
                        env={"TZ": "UTC", "PATH": os.environ.get("PATH", "")},
                        capture_output=True, text=True, check=True).stdout
    (args.out / "timestamps.json").write_text(ts)
    print(f"{len(CASES)} cases -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
