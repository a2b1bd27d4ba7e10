#!/usr/bin/env bash
# Set up (first run only) and start the dashboard: bash scripts/run_app.sh [streamlit args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m app.serve "$@"
