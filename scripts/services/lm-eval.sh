#!/usr/bin/env bash
# lm-evaluation-harness, the reference the GSM8K parity tests compare servebench with
# (crates/eval/tests/lm_eval_*.rs). Installs a pinned lm-eval from PyPI into a venv (idempotent;
# ~75 s and ~760 MB the first time) and prints `export SERVEBENCH_LM_EVAL_PYTHON=…` on stdout;
# logs go to stderr.
#
# Pin: lm-eval 0.4.13 with `[api]` (local-chat-completions). InferenceX pins lm-eval at commit
# b315ef3b (0.4.9.2 + "refactor: Cli (#3440)"). 0.4.9.x makes torch a hard dependency, and
# PyPI's Linux torch wheel pulls the CUDA stack (GBs; the CPU wheel index is not reachable
# here); from 0.4.10 torch is optional. 0.4.10 still adds `"type": "text"` to every chat message,
# which InferenceX strips again with its sitecustomize patch; 0.4.13 no longer adds it, so its
# requests equal InferenceX's patched ones with no patch. What matters for GSM8K is the same as
# at InferenceX's commit (checked in the wheels): `--apply_chat_template` turns on
# `fewshot_as_multiturn`; the default sampler draws `random.Random(1234).sample(train, 5)` per
# doc in doc order (train != test split, so no extra draw); the payload is {messages, model,
# max_tokens, temperature, stop[:4], seed 1234, **gen_kwargs}; the regex filter, exact_match and
# mean_stderr are unchanged. Remaining difference: lm-eval does not fall back to
# `reasoning_content` when content is empty (InferenceX's patch and servebench do); the
# simulator always fills `content`, so the parity runs never depend on it.
# Transitive dependencies are pinned below (the set resolved on 2026-11-30 for CPython 3.11).
set -euo pipefail
LM_EVAL_VERSION=0.4.13
venv="${SERVEBENCH_LM_EVAL_VENV:-/tmp/servebench-lm-eval}"
py="$venv/bin/python"

installed() {
  "$py" -c "import importlib.metadata as m, sys; sys.exit(m.version('lm_eval') != '$LM_EVAL_VERSION')" 2>/dev/null
}

if ! installed; then
  echo "[lm-eval] installing lm-eval[api]==$LM_EVAL_VERSION into $venv" >&2
  python3 -m venv "$venv" >&2
  constraints="$(mktemp)"
  trap 'rm -f "$constraints"' EXIT
  cat >"$constraints" <<'PINS'
absl-py==2.5.1
aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aiosignal==1.4.0
anyio==4.16.0
attrs==26.1.0
certifi==2026.10.19.post1
chardet==6.0.0.post1
charset-normalizer==3.5.3
click==8.5.1
cloudpickle==3.1.3
colorama==0.4.6
DataProperty==1.1.1
datasets==5.2.0
defusedxml==0.7.1
dill==0.4.1
evaluate==0.4.6
filelock==4.3.1
frozenlist==1.8.0
fsspec==2026.9.0
h11==0.16.0
hf-xet==1.8.0
httpcore2==2.16.2
httpx2==2.16.2
huggingface_hub==2.4.0
idna==3.20
Jinja2==3.1.6
joblib==1.6.0
lxml==6.1.3
MarkupSafe==3.0.4
mbstrdecoder==1.1.5
more-itertools==11.2.1
multidict==7.2.1
multiprocess==0.70.19
narwhals==2.29.0
nltk==3.10.4
numpy==2.4.6
packaging==26.4
pandas==3.1.1
pathvalidate==3.3.1
portalocker==4.4.2
propcache==0.5.4
pyarrow==26.0.1
pytablewriter==1.2.1
python-dateutil==2.9.0.post0
pytz==2026.6
PyYAML==6.0.4
regex==2026.11.19
requests==2.34.2
rouge_score==0.1.2
sacrebleu==2.6.0
scikit-learn==1.9.1
scipy==1.17.1
six==1.17.0
sqlitedict==2.1.0
tabledata==1.3.5
tabulate==0.10.0
tcolorpy==0.1.7
tenacity==9.2.1
threadpoolctl==3.8.0
tiktoken==0.14.0
tqdm==4.70.1
truststore==0.10.5
typepy==1.3.5
typing_extensions==4.16.0
urllib3==2.8.0
word2number==1.1
xxhash==4.1.0
yarl==1.25.1
PINS
  "$py" -m pip install --disable-pip-version-check --no-input -q -c "$constraints" \
    "lm-eval[api]==$LM_EVAL_VERSION" >&2
fi
installed || { echo "[lm-eval] lm-eval $LM_EVAL_VERSION is not importable from $py" >&2; exit 1; }
# The pieces the tests use must import, and torch must not have been pulled in.
"$py" - >&2 <<'PY'
import importlib.util, sys
import lm_eval, lm_eval.filters, lm_eval.api.metrics, lm_eval.models.openai_completions, datasets, yaml
if importlib.util.find_spec("torch") is not None:
    sys.exit("[lm-eval] torch is installed in the lm-eval venv; expected a torch-free install")
print(f"[lm-eval] lm-eval {lm_eval.__version__} ready (no torch)")
PY
echo "export SERVEBENCH_LM_EVAL_PYTHON=$py"
