#!/usr/bin/env bash
# GSM8K timing: the full 1,319-sample eval against the simulator, servebench vs lm-eval, in one
# invocation. For each concurrency (default 16 64) and each simulator mode (timed H200/Qwen3-8B
# at speedup 1 = "engine time", and --zero-delay = "client ceiling"), one `servebench sim` is
# started with the 175b_verification answer book, then lm-eval (InferenceX's invocation:
# local-chat-completions, --apply_chat_template, num_concurrent=C) and `servebench eval gsm8k
# --endpoint` run against it one after the other. Wall times include each tool's start-up.
#
#   bash scripts/bench-eval.sh            # conc 16 and 64
#   CONCS="16" MODES="timed" bash scripts/bench-eval.sh
#
# Needs lm-eval (scripts/services/lm-eval.sh) and a servebench binary (SERVEBENCH_BIN, default
# target/release/servebench, else target/debug/servebench, built if neither exists).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
shared="${SERVEBENCH_SHARED:-$root/../shared}"
data="$(cd "$shared/data/gsm8k" && pwd)"
eval "$(bash scripts/services/lm-eval.sh)"
py="$SERVEBENCH_LM_EVAL_PYTHON"
bin="${SERVEBENCH_BIN:-}"
if [ -z "$bin" ]; then
  if [ -x target/release/servebench ]; then bin=target/release/servebench
  else
    [ -x target/debug/servebench ] || cargo build -p servebench >&2
    bin=target/debug/servebench
  fi
fi
CONCS="${CONCS:-16 64}"
MODES="${MODES:-timed zero-delay}"
PORT="${PORT:-18731}"
work="$(mktemp -d)"
sim_pid=""
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# InferenceX's task YAML with the dataset pointed at the local files.
"$py" - "$shared/data/inferencex/gsm8k.yaml" "$data" "$work/gsm8k_local.yaml" <<'PY'
import sys
src, data, dst = sys.argv[1:]
y = open(src).read()
for a, b in [("task: gsm8k\n", "task: gsm8k_local\n"), ("tag:\n  - math_word_problems\n", ""),
             ("dataset_path: openai/gsm8k\ndataset_name: main\n",
              f"dataset_path: json\ndataset_kwargs:\n  data_files:\n    train: {data}/train.jsonl\n    test: {data}/test.jsonl\n")]:
    assert y.count(a) == 1, a
    y = y.replace(a, b)
open(dst, "w").write(y)
PY

now() { date +%s.%N; }
echo "servebench: $bin ($("$bin" --version)); lm-eval: $("$py" -c 'import lm_eval; print(lm_eval.__version__)'); $(nproc) CPUs"
for mode in $MODES; do
  for c in $CONCS; do
    flag=""; [ "$mode" = "zero-delay" ] && flag="--zero-delay"
    "$bin" sim --port "$PORT" --sim-answers 175b_verification $flag >"$work/sim.log" 2>&1 &
    sim_pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break; sleep 0.1; done
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { cat "$work/sim.log" >&2; exit 1; }

    t0=$(now)
    (cd "$work" && HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 HF_HOME="$work/hf" "$py" -m lm_eval \
      --model local-chat-completions --apply_chat_template --tasks "$work/gsm8k_local.yaml" \
      --output_path "$work/lm-$mode-$c" --log_samples \
      --model_args "model=qwen3-8b,base_url=http://127.0.0.1:$PORT/v1/chat/completions,api_key=EMPTY,eos_string=</s>,max_retries=5,num_concurrent=$c,timeout=1800,tokenized_requests=False,max_length=9472" \
      --gen_kwargs max_tokens=5376,temperature=0,top_p=1 >"$work/lm.log" 2>&1) || { tail -20 "$work/lm.log" >&2; exit 1; }
    t1=$(now)
    lm_em="$("$py" -c "import json,glob,sys; d=json.load(open(glob.glob('$work/lm-$mode-$c/**/results_*.json', recursive=True)[0])); print(d['results']['gsm8k_local']['exact_match,strict-match'])")"

    t2=$(now)
    "$bin" eval gsm8k --endpoint "http://127.0.0.1:$PORT" --model qwen3-8b --conc "$c" \
      --out "$work/sb-$mode-$c" --no-progress >"$work/sb.log" 2>&1 || [ $? -eq 2 ] || { cat "$work/sb.log" >&2; exit 1; }
    t3=$(now)
    sb_em="$("$py" -c "import json; print(json.load(open('$work/sb-$mode-$c/result.json'))['row']['em_strict'])")"

    kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; sim_pid=""
    awk -v m="$mode" -v c="$c" -v a="$t0" -v b="$t1" -v d="$t2" -v e="$t3" -v x="$sb_em" -v y="$lm_em" 'BEGIN {
      printf "gsm8k 1319 samples, sim %-10s conc %3d: servebench %6.1f s, lm-eval %6.1f s (em_strict servebench %.4f, lm-eval %.4f)\n", m, c, e-d, b-a, x, y }'
  done
done
