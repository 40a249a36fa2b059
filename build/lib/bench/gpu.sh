#!/usr/bin/env bash
# The images pipeline on one NVIDIA GPU: end to end through Dask with GPU JPEG decoding,
# bf16/fp16 and channels-last, against the model-only rate on the same GPU
# (python -m bench.gpu; goals: >= 0.8 of model-only, >= 5,000 images/s).
#
# For a GPU machine without network: torch and torchvision must be there (its own CUDA
# build); dask, distributed and their pure-Python needs are installed offline from a
# wheels folder that `python -m bench.wheels` fills on a machine with network
# (default bench/wheels; copy it along with the repository).
#
# Usage: bench/gpu.sh [--wheels DIR] [--self-check] [python -m bench.gpu options...]
#   PYTHON=/path/to/python bench/gpu.sh ...   (default: python3)
# Exit codes: 0 measured, 1 a measurement failed, 2 something is missing (said why), 3 --check and a goal missed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$(dirname "$here")"
python="${PYTHON:-python3}"
wheels="$here/wheels"
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) [ $# -ge 2 ] || { echo "bench/gpu.sh: error: --wheels needs a folder" >&2; exit 2; }
                  wheels="$2"; shift 2 ;;
        --wheels=*) wheels="${1#--wheels=}"; shift ;;
        *) args+=("$1"); shift ;;
    esac
done

fail() { echo "bench/gpu.sh: error: $*" >&2; exit 2; }

command -v "$python" >/dev/null 2>&1 || fail "no '$python' on PATH (set PYTHON=/path/to/python)"
command -v nvidia-smi >/dev/null 2>&1 || fail "nvidia-smi not found: this needs an NVIDIA GPU and its driver"
nvidia-smi -L >/dev/null 2>&1 || fail "nvidia-smi -L failed: no usable NVIDIA GPU"
"$python" -c "import torch, torchvision" 2>/dev/null \
    || fail "torch/torchvision do not import with $python: use the machine's own CUDA build (they are not in the wheels folder)"
"$python" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || fail "torch.cuda.is_available() is False with $python"

if ! "$python" -c "import dask, distributed" 2>/dev/null; then
    [ -f "$wheels/requirements.txt" ] && compgen -G "$wheels/*.whl" >/dev/null \
        || fail "dask/distributed are not installed and $wheels holds no wheels: run 'python -m bench.wheels --dest $wheels' on a machine with network, then bring the folder"
    echo "bench/gpu.sh: installing $(tr '\n' ' ' < "$wheels/requirements.txt")from $wheels (offline)"
    "$python" -m pip install --quiet --no-index --no-cache-dir --find-links "$wheels" -r "$wheels/requirements.txt" \
        || fail "the offline install from $wheels failed (a wheel for this Python/platform missing? python -m bench.wheels --python-version X.Y)"
    "$python" -c "import dask, distributed" || fail "dask/distributed still do not import after the install"
fi

exec "$python" -m bench.gpu ${args[@]+"${args[@]}"}
