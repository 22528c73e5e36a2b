#!/usr/bin/env bash
# One device call: start transformers serve (Qwen3-8B shapes, random weights) and sweep it.
set -u
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$OUT/gpu.txt"
t0=$(date +%s)
bash .gpu/serve.sh || { tail -50 /tmp/serve.log; cp /tmp/serve.log "$OUT/"; exit 1; }
echo "server ready after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
SB=.gpu/servebench
common="--endpoint http://127.0.0.1:8000 --model /tmp/model --tokenizer /tmp/model/tokenizer.json --gpus 1 --engine transformers"
$SB sweep $common --conc 1,4,16 --isl 1024 --osl 64 --out "$OUT/sweep-c" 2>&1 | tee "$OUT/sweep-completions.txt"
echo "elapsed $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
$SB bench $common --conc 8 --api chat --isl 512 --osl 64 --out "$OUT/bench-chat" 2>&1 | tail -20 | tee "$OUT/bench-chat.txt"
echo "elapsed $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
cd "$OUT" && tar czf results.tgz sweep-c bench-chat 2>/dev/null; rm -rf sweep-c bench-chat
tail -5 /tmp/serve.log > serve-tail.txt
