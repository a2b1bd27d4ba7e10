#!/usr/bin/env bash
# One session on a lent CUDA GPU (the `device` tool runs it in the repository root, $OUT set):
# the graph-vs-eager equivalence test, the device-sensitive core tests, the training benchmark
# for both priors (CUDA graphs and eager in one run), the hardware reference, the predictive
# benchmark, the wall time of `core train bbb_gaussian`, and then, for the time left
# (BUDGET_S in all), the long scale-mixture run of the bbb_mixture spec.
#
# Needs MNIST as gzipped IDX files under .gpu/data/MNIST/raw/ and the reference script as
# .gpu/gpu_bbb_limit.py (carry .gpu). Results land in $OUT: log.txt, equivalence.txt,
# bench/training_speed/*.json (stored results of the Training speed page: copy them into
# checkpoints/results/training_speed/) and models/bbb_mixture.pt.
set -u
BUDGET_S=${BUDGET_S:-400}
export PYTHONUNBUFFERED=1 BNN_DATA_DIR=/tmp/bnn-data BNN_MODELS_DIR=$OUT/models
export BNN_CACHE_DIR=/tmp/bnn-cache
mkdir -p "$OUT/models" "$OUT/bench" /tmp/bnn-data/MNIST/raw
for f in .gpu/data/MNIST/raw/*.gz; do gunzip -c "$f" >"/tmp/bnn-data/MNIST/raw/$(basename "$f" .gz)"; done
exec > >(tee "$OUT/log.txt") 2>&1
step() { echo; echo "=== $* ($SECONDS s)"; }

step device
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"

step equivalence of CUDA-graph and eager steps
python3 -m pytest -p no:cacheprovider -q -s tests/unit/test_cuda_graphs.py 2>&1 | tee "$OUT/equivalence.txt"
graphs_ok=${PIPESTATUS[0]}

step core tests that assumed a CPU
python3 -m pytest -p no:cacheprovider -q tests/unit/test_bench.py \
  tests/unit/test_methods.py::test_laplace_uncertainty_rises_away_from_the_data 2>&1 | tail -3

for prior in gaussian mixture; do
  step "core bench --device cuda --prior $prior"
  BNN_RESULTS_DIR=$OUT/bench python3 -m core bench --device cuda --prior "$prior" \
    --samples 1,2,5,10 --repeats 3 --save
done

if [ "${REFERENCE:-1}" = 1 ]; then
  step hardware reference
  timeout 120 python3 .gpu/gpu_bbb_limit.py
fi

step predictive benchmark
timeout 120 python3 -m core bench-predictive --samples 100 2>&1 | tail -15

if [ "${PROFILE:-0}" = 1 ]; then
  step profile of the 100-pass predictive on the test set
  python3 - <<'PY'
import torch
from core.data import load_dataset
from core.engine.sampler import predictive_samples
from core.evaluation.uncertainty import summarize
from core.storage.checkpoints import load_checkpoint
model, _ = load_checkpoint("bbb_gaussian", torch.device("cuda"))
x = load_dataset("mnist", "test")[0].cuda()
for _ in range(2):
    summarize(predictive_samples(model, x[:500], 100))
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    for batch in x.tensor_split(20):
        summarize(predictive_samples(model, batch, 100))
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12))
PY
fi

step "core train bbb_gaussian (30 epochs, 100-pass evaluation), wall time"
start=$SECONDS
python3 -m core train bbb_gaussian 2>&1 | grep -v "^train" | tail -4
echo "wall: $((SECONDS - start)) s"
rm -f "$OUT/models/bbb_gaussian.pt"

left=$((BUDGET_S - SECONDS))
if [ "$graphs_ok" = 0 ] && [ "$left" -gt 60 ]; then
  step "core train bbb_mixture for up to $left s (saved after every epoch)"
  timeout "$left" python3 -m core train bbb_mixture 2>&1 | grep "^epoch\|saved" | tail -8
else
  step "no long run: equivalence exit $graphs_ok, $left s left"
fi
step done
