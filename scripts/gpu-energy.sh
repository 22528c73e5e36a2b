#!/usr/bin/env bash
# One device call (docs/benchmarks.md §11): start transformers serve (Qwen3-8B shapes, random
# weights) on the H200, then measure J per output token at conc 1, 8, 32 (ISL 1024, OSL 128)
# with servebench's own NVML sampling (10 Hz, energy-counter cross-check). Beside it,
# InferenceX's monitor (nvidia-smi every 1 s) is recorded and each point's window integrated
# with `servebench metrics aggregate-power` (aggregate_power.py's method) for comparison.
# CONCS (default "1 8 32") and REPS (default 1) choose the points.
# Run there as `bash .gpu/gpu-energy.sh` with .gpu/ = the GPU tools + servebench.gz, .whl/ = wheels.
set -u
cd "$(dirname "$0")/.."
t0=$(date +%s)
gunzip -c .gpu/servebench.gz > /tmp/servebench && chmod +x /tmp/servebench
SB=/tmp/servebench
nvidia-smi --query-gpu=name,pci.bus_id,serial,driver_version,power.draw,power.limit,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
bash .gpu/serve.sh >> "$OUT/gpu.txt" 2>&1 || { tail -50 /tmp/serve.log; exit 1; }
echo "server ready after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
# InferenceX's start_gpu_monitor: nvidia-smi once a second into gpu_metrics.csv
nvidia-smi --query-gpu=timestamp,index,power.draw --format=csv -l 1 > /tmp/gpu_metrics.csv &
mon=$!
common="--endpoint http://127.0.0.1:8000 --model /tmp/model --tokenizer /tmp/model/tokenizer.json --gpus 1 --engine transformers --isl 1024 --osl 128 --power nvml --db /tmp/energy.db"
# REPS repeats, interleaved (c1 c8 … c1 c8 …) so slow drift (GPU temperature) shows between repeats
for r in $(seq 1 "${REPS:-1}"); do
  for c in ${CONCS:-1 8 32}; do
    $SB bench $common --conc "$c" --warmups "$c" --out "/tmp/e/r$r/c$c" 2>&1 | tee -a "$OUT/bench.txt"
    nvidia-smi --query-gpu=temperature.gpu,power.draw --format=csv,noheader | sed "s/^/rep $r conc $c temp,W after: /" | tee -a "$OUT/gpu.txt"
    echo "rep $r conc $c done after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
  done
done
sleep 2; kill "$mon"
# the same windows by InferenceX's method (1 s nvidia-smi samples, aggregate_power.py)
for d in /tmp/e/r*/c*/conc*; do
  cp "$d/agg.json" "$d/agg-ix.json"
  $SB metrics aggregate-power --csv /tmp/gpu_metrics.csv --bench-result "$d/result.json" \
    --agg-result "$d/agg-ix.json" --expected-num-gpus 1 --validation-result "$d/power_validation_ix.json" \
    2>&1 | tee -a "$OUT/bench.txt"
done
cp /tmp/gpu_metrics.csv /tmp/e/
cd /tmp/e && tar czf "$OUT/energy.tgz" . && tail -5 /tmp/serve.log > "$OUT/serve-tail.txt"
