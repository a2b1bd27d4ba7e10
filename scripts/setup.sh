#!/usr/bin/env bash
# Set up everything the lab needs on a fresh machine, offline-capable, idempotent:
#   1. a virtual environment in .venv with the pinned requirements
#      (requirements-dev.txt too when called with --dev),
#   2. the lab itself installed editable (pip install -e .): the bnn-lab command, and core and
#      app importable wherever Python starts (streamlit run app/main.py),
#   3. MNIST and FashionMNIST in the data folder (python -m core data).
# Re-running is cheap: pip is skipped while the requirement files are unchanged, and an existing
# .venv is reused when it works. A broken one (dangling link, no bin/python, a python that
# cannot import torch) is named in one line and recreated.
#
# Environment:
#   PYTHON=python3.12   interpreter used to create .venv (default python3, needs >= 3.11)
#   BNN_TORCH=cpu       install the CPU-only PyTorch build from download.pytorch.org instead of
#                       PyPI's default Linux build with its ~3 GB of CUDA libraries (needs that
#                       host to be reachable; the default works with PyPI alone)
set -euo pipefail
cd "$(dirname "$0")/.."

req=requirements.txt
[ "${1:-}" = "--dev" ] && req=requirements-dev.txt
python=${PYTHON:-python3}
torch_build=${BNN_TORCH:-default}

broken=""
if [ -L .venv ] && [ ! -e .venv ]; then
  broken="it is a link to a missing folder ($(readlink .venv))"
elif [ -e .venv ] && [ ! -x .venv/bin/python ]; then
  broken="it has no working bin/python"
elif [ -x .venv/bin/python ] && ls .venv/.installed-* >/dev/null 2>&1 \
  && ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  broken="its python cannot import torch"
fi
if [ -n "$broken" ]; then
  echo "== .venv is not a working environment: $broken; recreating it"
  rm -rf .venv
fi

if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$python" -m venv .venv
fi
stamp=.venv/.installed-$(cat requirements*.txt | sha256sum | cut -c1-16)-$(basename "$req" .txt)-$torch_build
if [ ! -f "$stamp" ]; then
  echo "== installing $req (torch build: $torch_build)"
  pip=(.venv/bin/python -m pip install --disable-pip-version-check -q)
  case "$torch_build" in
    default) ;;
    cpu)
      # torch/torchvision exactly as pinned, CPU wheels; the rest from PyPI as usual.
      pins=$(grep -E '^(torch|torchvision)==' requirements.txt)
      # shellcheck disable=SC2086
      "${pip[@]}" --index-url https://download.pytorch.org/whl/cpu $pins
      ;;
    *) echo "BNN_TORCH must be 'cpu' or unset, not '$torch_build'" >&2; exit 1 ;;
  esac
  "${pip[@]}" -r "$req"
  .venv/bin/python -c "import torchvision.ops, torchvision.datasets; torchvision.ops.nms" \
    || { echo "torchvision cannot load its compiled ops against this torch" >&2; exit 1; }
  touch "$stamp"
fi

# The lab, editable, without its dependencies (the pinned requirements above are they); pip
# builds it with setuptools from the index (pyproject.toml's [build-system]). Again when
# pyproject.toml changes or bnn-lab is missing.
lab_stamp=.venv/.installed-lab-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$lab_stamp" ] || [ ! -x .venv/bin/bnn-lab ]; then
  echo "== installing the lab (pip install -e .)"
  .venv/bin/python -m pip install --disable-pip-version-check -q --no-deps -e .
  touch "$lab_stamp"
fi

echo "== preparing datasets"
.venv/bin/python -m core data
