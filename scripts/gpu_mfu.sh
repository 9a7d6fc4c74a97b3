#!/usr/bin/env bash
# What moves MFU at the 45% goal's setting (210m, MLM-30, seq 2048, batch 32, bf16, compiled blocks,
# flex attention), one lever at a time against the same baseline, on one CUDA GPU (about 5 minutes
# on an H200; run it after scripts/gpu_check.sh when the device time allows):
#   baseline        documents of 48 tokens on average, also profiled (op table, GPU busy time);
#   doc-2048        one document per row: full-row attention, the setting of peers' MFU figures;
#   batch-64        larger GEMMs (M = 131k tokens);
#   autotune-gemm   inductor benchmarks Triton GEMM templates against cuBLAS (TORCHINDUCTOR_MAX_AUTOTUNE_GEMM);
#   coord-descent   inductor tunes the fused pointwise/reduction kernels' launch configs
#                   (TORCHINDUCTOR_COORDINATE_DESCENT_TUNING).
# Usage: scripts/gpu_mfu.sh [OUT_DIR]   (default: gpu-mfu-<UTC time>)
# Writes OUT_DIR/gpu-mfu.log, OUT_DIR/bench/<lever>.json, OUT_DIR/baseline-profile.txt and
# OUT_DIR/summary.md (a table to paste into docs/benchmarks.md). The exit status is the number of
# levers that failed to run.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

NAME=gpu-mfu
# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh

failed=0
BASE=(bench train --size 210m --objective mlm --seq-len 2048 --vocab 32768 --steps 8 --warmup 3
  --device cuda --precision bf16 --compile --no-vs-hf)
# (lever, extra environment or "-", extra bench flags)
levers=(
  "baseline|-|--batch 32 --profile $OUT_DIR/baseline-profile.txt"
  "doc-2048|-|--batch 32 --doc-len 2048"
  "batch-64|-|--batch 64"
  "autotune-gemm|TORCHINDUCTOR_MAX_AUTOTUNE_GEMM=1|--batch 32"
  "coord-descent|TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1|--batch 32"
)
for entry in "${levers[@]}"; do
  IFS='|' read -r lever env flags <<<"$entry"
  printf '\n== [%4ds] %s\n' "$SECONDS" "$lever"
  read -ra extra <<<"$flags"
  environment=()
  [[ "$env" != "-" ]] && environment=("$env")
  # each lever in a fresh process, so inductor's settings and caches do not leak between them
  if ! timeout 150 env "${environment[@]}" "${CLI[@]}" "${BASE[@]}" "${extra[@]}" \
    --out "$OUT_DIR/bench/$lever.json" >/dev/null; then
    echo "FAILED: $lever"
    failed=$((failed + 1))
  fi
done

{
  echo "### $DATE, $GPU, torch $TORCH, commit $COMMIT ($SECONDS s; MFU levers for 210m MLM-30)"
  echo
  "${CLI[@]}" bench table "$OUT_DIR/bench" || echo "no lever produced a result"
  # the profile's JSON field: the share of the step the GPU is busy, the ceiling before kernels get faster
  "$PY" - "$OUT_DIR/bench/baseline.json" <<'EOF' || true
import json, sys
r = json.load(open(sys.argv[1]))["encoderlab"]
busy = r.get("profile", {}).get("device_busy_s_per_step")
if busy:
    print(f"\nbaseline: GPU busy {busy / r['step_s']:.0%} of the step ({busy * 1e3:.1f} of {r['step_s'] * 1e3:.1f} ms)")
EOF
} | tee "$OUT_DIR/summary.md"
exit "$failed"
