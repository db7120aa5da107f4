#!/usr/bin/env bash
# GPU benchmark (issue 6), one unattended run on the nvidia-h200 device machine.
#
# The device has torch, transformers, accelerate, peft, pyarrow, pandas, pyyaml, tokenizers, huggingface-hub,
# typing-extensions. It lacks trl and datasets' own needs, and pydantic (swe_srl.train.config). Carried as wheels
# (pinned to what this checkout was tested with; xxhash and typing-extensions are on the device's list, carried in
# case its image changed; pyarrow only if the device's is older than datasets' >=24):
#   trl 1.16.0, datasets 5.2.0 (needs dill<0.4.2, multiprocess<0.70.20, xxhash, fsspec<=2026.9.0, pyarrow>=24,
#   huggingface-hub>=1.31: the device has 1.33), dill 0.4.1, multiprocess 0.70.19, xxhash 4.1.0,
#   fsspec 2026.9.0, pydantic 2.13.4 + pydantic-core 2.46.4 + annotated-types 0.7.0 + typing-inspection 0.4.2,
#   typing-extensions 4.16.0 (pydantic-core needs >=4.14.1), pyarrow 26.0.1, unidiff 1.0.1, tree-sitter 0.26.1,
#   tree-sitter-bash 0.25.1.
#
# Here (the machine without GPU), once, in the repo root:   bash bench/gpu_run.sh download
#   = echo /.whl/ >> .git/info/exclude; python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
#       --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl $WHEELS
# Then the device run (run tool): command "bash bench/gpu_run.sh", carry [".whl"], timeout_s 480.
# It writes $OUT/train_gpu.json (figures) and $OUT/train_gpu.log (whole output).
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
have_pyarrow=$(python3 -c 'import pyarrow; print(int(pyarrow.__version__.split(".")[0]))' 2>/dev/null || echo 0)
wheels=$(ls .whl/*.whl | grep -v '/pyarrow-')
if [ "$have_pyarrow" -lt 24 ]; then wheels="$wheels $(ls .whl/pyarrow-*.whl)"; fi
# shellcheck disable=SC2086
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $wheels || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export TORCH_LOGS="recompiles,perf_hints"  # a recompile per step, or CUDA graphs skipped, shows in the log
nvidia-smi -L
python3 -c 'import torch, transformers, trl, datasets, pyarrow, pydantic; print("torch", torch.__version__,
"transformers", transformers.__version__, "trl", trl.__version__, "datasets", datasets.__version__,
"pyarrow", pyarrow.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tee "$OUT/train_gpu.log"
python3 bench/train_gpu.py --json "$OUT/train_gpu.json" "${@}" 2>&1 | tee -a "$OUT/train_gpu.log"
