#!/usr/bin/env bash
# Runs every benchmark (figures, not tests) and writes what they print to
# bench-results/latest.txt, with a description of the machine at the top.
#   scripts/bench.sh            runtime, stream ingestion (vs async-openai and openai-python),
#                               context accounting against llama.cpp
#   scripts/bench.sh --window   also the window figures (Xvfb + WebDriver), release build
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
bash tests/setup-python.sh
mkdir -p bench-results
OUT=bench-results/latest.txt
{
  echo "# PocketPilot benchmarks, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# machine: $(uname -srm); $(nproc) cores; $(free -g | awk '/Mem:/{print $2}') GiB; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "# commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  cargo bench -q -p pocketpilot-core 2>&1 | grep -v -e '^ *Running' -e '^ *Compiling' -e '^ *Finished'
  echo
  cargo bench -q -p pocketpilot-model --bench stream_ingest 2>&1 | grep -v -e '^ *Running' -e '^ *Compiling' -e '^ *Finished'
  echo
  # Per-call sandbox overhead, with the git metadata work on 1 and 21 repositories, with
  # user namespaces and without (bench-results/sandbox.txt keeps dated runs).
  cargo bench -q -p pocketpilot-sandbox 2>&1 | grep -v -e '^ *Running' -e '^ *Compiling' -e '^ *Finished' -e '^running' -e '^i*$' -e '^test result'
  POCKETPILOT_SANDBOX=no-userns cargo bench -q -p pocketpilot-sandbox 2>&1 | grep -v -e '^ *Running' -e '^ *Compiling' -e '^ *Finished' -e '^running' -e '^i*$' -e '^test result'
  echo
  # The estimator against a real server's counts, the planner's time (also written to
  # bench-results/context.txt).
  bash scripts/setup-model-server.sh >/dev/null
  cargo bench -q -p pocketpilot-model --bench context 2>&1 | grep -v -e '^ *Running' -e '^ *Compiling' -e '^ *Finished'
  if [ "${1:-}" = "--window" ]; then
    echo
    # The shipped build: the release profile is what the memory target is about.
    npm --prefix ui run build >/dev/null
    cargo build -q --release -p pocketpilot
    POCKETPILOT_BIN="$CARGO_TARGET_DIR/release/pocketpilot" bash tests/e2e/run.sh --bench 2>&1 | grep -v -e dbus-daemon -e SpiRegistry
  fi
} | tee "$OUT"
echo "written to $OUT"
