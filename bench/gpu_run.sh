#!/usr/bin/env bash
# GPU bench of the paper-lora path (issue 47): one prepared, unattended run on one 80 GB H100, under 5 minutes, so a
# rerun still fits in 15 minutes of device time. bench/train_gpu.py: our trainer vs plain TRL GRPOTrainer, LoRA GRPO
# steps on a random-init model of Qwen2.5-Coder-7B's exact shape at paper-lora's micro-batch (8,192-token prompts,
# 512-token completions, HF generate, no vLLM), s/step, tokens/s and peak memory against the memory plan; then HF
# batched generation tokens/s on the same shape.
#
# The device needs only torch, transformers, accelerate and peft. TRL and what it imports that the device lacks come
# as carried wheels (pinned to what this checkout was tested with; pyarrow only if the device's is older than
# datasets' >=24):
#   trl 1.16.0, datasets 5.2.0 (needs dill<0.4.2, multiprocess<0.70.20, xxhash, fsspec<=2026.9.0, pyarrow>=24),
#   dill 0.4.1, multiprocess 0.70.19, xxhash 4.1.0, fsspec 2026.9.0, pydantic 2.13.4 + pydantic-core 2.46.4 +
#   annotated-types 0.7.0 + typing-inspection 0.4.2 (swe_srl.train.schema), typing-extensions 4.16.0, pyarrow 26.0.1,
#   unidiff 1.0.1, tree-sitter 0.26.1, tree-sitter-bash 0.25.1 (swe_srl's imports).
#
# Here (the machine without GPU), once, in the repo root:   bash bench/gpu_run.sh download
# Then the device run (run tool): command "bash bench/gpu_run.sh", carry [".whl"], timeout_s 420.
# It writes $OUT/train_gpu.json (figures) and $OUT/train_gpu.log (whole output); docs/gpu.md records them.
# GPU_RUN_TINY=1 bash bench/gpu_run.sh   runs the same script end to end on CPU with the installed packages and a
# tiny shape (no wheels, no GPU): what the tests run.
set -uo pipefail

WHEELS="trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 xxhash==4.1.0 fsspec==2026.9.0
pydantic==2.13.4 pydantic-core==2.46.4 annotated-types==0.7.0 typing-inspection==0.4.2 typing-extensions==4.16.0
pyarrow==26.0.1 unidiff==1.0.1 tree-sitter==0.26.1 tree-sitter-bash==0.25.1"
PLATFORMS="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
--platform manylinux2014_x86_64 --platform manylinux1_x86_64"

if [ "${1:-}" = download ]; then
    grep -qx '/.whl/' .git/info/exclude || echo /.whl/ >> .git/info/exclude
    # shellcheck disable=SC2086
    exec python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        $PLATFORMS -d .whl $WHEELS
fi

OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
if [ "${GPU_RUN_TINY:-0}" = 1 ]; then
    export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
    python3 bench/train_gpu.py --tiny --json "$OUT/train_gpu.json" "${@}" 2>&1 | tee "$OUT/train_gpu.log"
    exit "${PIPESTATUS[0]}"
fi
have_pyarrow=$(python3 -c 'import pyarrow; print(int(pyarrow.__version__.split(".")[0]))' 2>/dev/null || echo 0)
wheels=$(ls .whl/*.whl | grep -v '/pyarrow-')
if [ "$have_pyarrow" -lt 24 ]; then wheels="$wheels $(ls .whl/pyarrow-*.whl)"; fi
# shellcheck disable=SC2086
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $wheels || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
nvidia-smi -L
python3 -c 'import torch, transformers, accelerate, peft, trl; print("torch", torch.__version__, "transformers",
transformers.__version__, "accelerate", accelerate.__version__, "peft", peft.__version__, "trl", trl.__version__,
"cuda", torch.cuda.is_available())' 2>&1 | tee "$OUT/train_gpu.log"
python3 bench/train_gpu.py --json "$OUT/train_gpu.json" "${@}" 2>&1 | tee -a "$OUT/train_gpu.log"
exit "${PIPESTATUS[0]}"
