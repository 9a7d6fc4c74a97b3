# Sourced by the GPU scripts (gpu_check.sh, gpu_mfu.sh) after `cd` to the repository root, with
# NAME set (the output folder's prefix and the log's name). Sets PY, CLI, OUT_DIR (the first
# argument, else NAME-<UTC time>), GPU, TORCH, COMMIT, DATE; sends all output to OUT_DIR/NAME.log
# too; exits when no CUDA device is visible.
PY=${PY:-.venv/bin/python}
[[ -x "$PY" ]] || PY=python3
CLI=("$PY" -m encoderlab.cli)
OUT_DIR=${1:-$NAME-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT_DIR/bench"
exec > >(tee "$OUT_DIR/$NAME.log") 2>&1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=disabled

if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "no CUDA device visible to $PY; run this on a GPU machine" >&2
  exit 1
fi
GPU=$("$PY" -c 'import torch; print(torch.cuda.get_device_name(0))')
TORCH=$("$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')
# A copied working tree has no .git: the caller may pass the commit in GIT_COMMIT.
COMMIT=${GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
