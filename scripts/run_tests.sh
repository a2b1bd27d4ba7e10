#!/usr/bin/env bash
# Set up (first run only) and run the whole test suite: lint, the documentation build, unit,
# app and browser tests.
# Extra arguments go to pytest, e.g. bash scripts/run_tests.sh -k draw
set -euo pipefail
cd "$(dirname "$0")/.."
# Headless Chromium for the real-browser tests (Debian package; Playwright's own browser
# download does not work offline), and
# PostgreSQL's server binaries (Debian package) for the tests that start a throw-away cluster:
# installed when missing, while the Python set-up runs.
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
apt_pid=""
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  ($sudo apt-get update -qq && $sudo apt-get install -y -qq "${missing[@]}" >/dev/null) &
  apt_pid=$!
fi
bash scripts/setup.sh --dev
if [ -n "$apt_pid" ]; then
  wait "$apt_pid"
fi

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== docs"
# The documentation site with --strict (broken links fail), into a temporary folder so the
# repository gets no site/; the variable silences Material's end-of-life banner.
docs_site="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$docs_site"
rm -rf "$docs_site"
echo "== pytest"
# Two test processes (pytest-xdist): the browser tests share one of them (tests/conftest.py) and
# the Ray tests another group, each group on one worker; one torch thread per worker.
.venv/bin/python -m pytest -n 2 --dist loadgroup --durations=15 "$@"
