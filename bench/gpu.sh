#!/usr/bin/env bash
# Every GPU measurement of the images pipeline in one run (`python -m bench gpu`, the same
# command as `dask-tkg bench gpu`, which the GPU machine may not have installed): model-only,
# decode-only per JPEG backend, end to end through Dask, figure 9 on the CPU cores; one JSON
# under results/bench/ (or --output). See bench/images/gpu/command.py for the sections and the goals.
# The command runs from the repository's root, so relative paths are taken from there.
#
# For a GPU machine without network: torch and torchvision must be there (its own CUDA
# build); dask, distributed, tqdm and nvImageCodec are installed offline from a wheels
# folder that `dask-tkg bench wheels` fills on a machine with network (default
# bench/wheels; bring it along with the repository), into a virtual environment that
# sees the machine's own packages (--venv DIR, default ${TMPDIR:-/tmp}/bench-gpu-venv).
# `dask-tkg bench wheels` holds that folder to the size that may travel with the run.
#
# Usage: bench/gpu.sh [--wheels DIR] [--venv DIR] [--install-only] [--cpu-dry-run] [dask-tkg bench gpu options...]
#   PYTHON=/path/to/python bench/gpu.sh ...   (default: python3)
#   --cpu-dry-run: no GPU checks, the whole flow on the CPU with tiny sizes (tests the script)
# Exit codes: 0 measured, 1 a measurement failed, 2 something is missing (said why), 3 --check and a goal missed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$(dirname "$here")"
python="${PYTHON:-python3}"
wheels="$here/wheels"
venv="${TMPDIR:-/tmp}/bench-gpu-venv"
dry_run=0
install_only=0
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) [ $# -ge 2 ] || { echo "bench/gpu.sh: error: --wheels needs a folder" >&2; exit 2; }
                  wheels="$2"; shift 2 ;;
        --wheels=*) wheels="${1#--wheels=}"; shift ;;
        --venv) [ $# -ge 2 ] || { echo "bench/gpu.sh: error: --venv needs a folder" >&2; exit 2; }
                venv="$2"; shift 2 ;;
        --venv=*) venv="${1#--venv=}"; shift ;;
        --install-only) install_only=1; shift ;;
        --cpu-dry-run) dry_run=1; args+=("$1"); shift ;;
        *) args+=("$1"); shift ;;
    esac
done

fail() { echo "bench/gpu.sh: error: $*" >&2; exit 2; }

command -v "$python" >/dev/null 2>&1 || fail "no '$python' on PATH (set PYTHON=/path/to/python)"
if [ "$dry_run" = 0 ]; then
    command -v nvidia-smi >/dev/null 2>&1 || fail "nvidia-smi not found: this needs an NVIDIA GPU and its driver"
    nvidia-smi -L >/dev/null 2>&1 || fail "nvidia-smi -L failed: no usable NVIDIA GPU"
fi
"$python" -c "import torch, torchvision" 2>/dev/null \
    || fail "torch/torchvision do not import with $python: use the machine's own CUDA build (they are not in the wheels folder)"
if [ "$dry_run" = 0 ]; then
    "$python" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" \
        || fail "torch.cuda.is_available() is False with $python"
fi

# offline install of the wheels folder into a venv over the machine's own packages; where
# that venv does not see the machine's torch (its python is itself a venv), into a --target
# folder put first on PYTHONPATH instead
offline_pip() {
    "$1" -m pip install --quiet --disable-pip-version-check --no-index --no-cache-dir \
        --find-links "$wheels" -r "$wheels/requirements.txt" "${@:2}" \
        || fail "the offline install from $wheels failed (a wheel for this Python/platform missing? dask-tkg bench wheels --python-version X.Y)"
}
skip_install=0  # a dry run with dask already there does not need the GPU machine's wheels
if [ "$dry_run" = 1 ] && [ "$install_only" = 0 ] && "$python" -c "import dask, distributed" 2>/dev/null; then
    skip_install=1
fi
if [ "$skip_install" = 0 ] && [ -f "$wheels/requirements.txt" ] && compgen -G "$wheels/*.whl" >/dev/null; then
    echo "bench/gpu.sh: installing $(tr '\n' ' ' < "$wheels/requirements.txt")from $wheels (offline)"
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv --system-site-packages "$venv" \
            || fail "could not create the virtual environment $venv with '$python -m venv' (no venv/ensurepip module?)"
    fi
    if "$venv/bin/python" -c "import torch" 2>/dev/null; then
        offline_pip "$venv/bin/python"
        python="$venv/bin/python"
    else
        echo "bench/gpu.sh: $venv does not see $python's torch: installing into $venv/target (PYTHONPATH) instead"
        offline_pip "$python" --target "$venv/target" --upgrade
        export PYTHONPATH="$venv/target${PYTHONPATH:+:$PYTHONPATH}"
    fi
elif ! "$python" -c "import dask, distributed" 2>/dev/null; then
    fail "dask/distributed are not installed and $wheels holds no wheels: run 'dask-tkg bench wheels --dest $wheels' on a machine with network, then bring the folder"
fi
if [ "$install_only" = 1 ]; then
    echo "bench/gpu.sh: installed; python: $python; PYTHONPATH: ${PYTHONPATH:-}"
    exit 0
fi
"$python" -c "import dask, distributed" || fail "dask/distributed do not import with $python after the install"
"$python" -c "from nvidia import nvimgcodec" >/dev/null 2>&1 \
    || echo "bench/gpu.sh: warning: nvidia.nvimgcodec does not import: decoding falls back to torchvision (nvJPEG) and the CPU" >&2

exec "$python" -m bench gpu ${args[@]+"${args[@]}"}
