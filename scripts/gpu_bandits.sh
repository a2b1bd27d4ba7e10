#!/usr/bin/env bash
# Blundell et al.'s mushroom bandit on a lent CUDA GPU (the `device` tool runs this in the
# repository root, $OUT set): the bandit graph-vs-eager tests, then the protocol
# (`benchmarks/bandit_protocol_gpu.py`, compiled losses in CUDA graphs) for the time left of
# BUDGET_S seconds, saving its result and, if unfinished, its state to $OUT. RESUME=DIR continues
# from a state saved by an earlier call (carry DIR).
set -u
BUDGET_S=${BUDGET_S:-540}
export PYTHONUNBUFFERED=1 PYTHONPATH=. BNN_CACHE_DIR=/tmp/bnn-cache
exec > >(tee "$OUT/log.txt") 2>&1
step() { echo; echo "=== $* ($SECONDS s)"; }

step device
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"

step bandit updates: CUDA graph vs eager, compiled vs eager, resume
timeout 180 python3 -m pytest -p no:cacheprovider -q -rA tests/unit/test_bandits_devices.py >"$OUT/tests.txt" 2>&1
grep -E "passed|failed|Error|^E " "$OUT/tests.txt" | tail -40

step "the protocol, $((BUDGET_S - SECONDS)) s left"
resume=()
if [ -n "${RESUME:-}" ]; then resume=(--resume "$RESUME"); fi
python3 benchmarks/bandit_protocol_gpu.py --protocol blundell2015 --every 45 --out "$OUT" \
  --seconds $((BUDGET_S - SECONDS)) "${resume[@]}" ||
  { step "compiled run failed: eager losses in the graphs";
    python3 benchmarks/bandit_protocol_gpu.py --protocol blundell2015 --every 45 --out "$OUT" \
      --no-compile --seconds $((BUDGET_S - SECONDS)) "${resume[@]}"; }
step done
