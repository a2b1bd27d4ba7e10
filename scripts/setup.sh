#!/usr/bin/env bash
# Set up everything the lab needs on a fresh machine, offline-capable, idempotent:
#   1. a virtual environment in .venv with the pinned requirements
#      (requirements-dev.txt too when called with --dev),
#   2. MNIST and FashionMNIST in the data folder (python -m core data).
# Re-running is cheap: pip is skipped while the requirement files are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

req=requirements.txt
[ "${1:-}" = "--dev" ] && req=requirements-dev.txt
python=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$python" -m venv .venv
fi
stamp=.venv/.installed-$(cat requirements*.txt | sha256sum | cut -c1-16)-$(basename "$req" .txt)
if [ ! -f "$stamp" ]; then
  echo "== installing $req"
  .venv/bin/python -m pip install --disable-pip-version-check -q -r "$req"
  .venv/bin/python -c "import torchvision.ops, torchvision.datasets; torchvision.ops.nms" \
    || { echo "torchvision cannot load its compiled ops against this torch" >&2; exit 1; }
  touch "$stamp"
fi

echo "== preparing datasets"
.venv/bin/python -m core data
