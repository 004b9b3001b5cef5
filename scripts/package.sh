#!/usr/bin/env bash
# Builds the Linux packages of PocketPilot into dist/, offline: a .deb and an .rpm.
#   scripts/package.sh                 the release build (size-optimised, fat LTO: slow)
#   scripts/package.sh --debug         the debug build (what tests/package/run.sh packages)
#   scripts/package.sh --bundles deb   only some of them (deb, rpm; default both)
#   scripts/package.sh --no-build      package the binary already in $CARGO_TARGET_DIR
#                                      (the test command: the one its suites just ran)
#
# The built-in model goes in too: llama.cpp's server (the portable build of
# scripts/setup-model-server.sh) as the sidecar /usr/bin/pocketpilot-llama-server, and the
# default model (SmolLM2-135M) as a resource, /usr/lib/pocketpilot/models/. They are
# added here (bundle.externalBin and bundle.resources through --config), not in
# tauri.conf.json, so that a plain `cargo build` never needs them.
#
# What goes in the packages is configured in tauri.conf.json `bundle` (Depends and
# Recommends, the desktop entry template in packaging/linux/, categories, icons). The
# bundler is the npm `@tauri-apps/cli` (a prebuilt binary, a devDependency of ui/); it
# writes the .rpm itself, so no rpmbuild is needed. AppImage is not offered: its bundler
# downloads AppRun.
#
# CARGO_TARGET_DIR is honoured. CARGO_LOCK names a lock file that serialises cargo with
# other builders on a shared machine (flock); unset, cargo runs directly.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"

PROFILE=release
BUNDLES=deb,rpm
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --debug) PROFILE=debug ;;
    --bundles) BUNDLES="${2:?--bundles needs a value}"; shift ;;
    --bundles=*) BUNDLES="${1#--bundles=}" ;;
    --no-build) BUILD=0 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "package: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

run_cargo() {
  if [ -n "${CARGO_LOCK:-}" ]; then flock "$CARGO_LOCK" cargo "$@"; else cargo "$@"; fi
}

if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  npm --prefix ui ci --no-audit --no-fund
fi
TAURI="$ROOT/ui/node_modules/.bin/tauri"
[ -x "$TAURI" ] || { echo "package: $TAURI is missing (npm --prefix ui ci)" >&2; exit 1; }

if [ "$PROFILE" = release ]; then FLAGS=(); else FLAGS=(--debug); fi
if [ "$BUILD" = 1 ]; then
  # The binary embeds ui/dist: the UI first.
  npm --prefix ui run build >/dev/null
  if [ "$PROFILE" = release ]; then
    # What `tauri build` compiles: tauri's custom-protocol feature marks a production
    # build (no dev-server lookup, devtools off).
    run_cargo build --release -p pocketpilot --features tauri/custom-protocol
  else
    # The debug build the other tests run (scripts/setup.sh, tests/e2e): nothing to
    # compile when it is up to date.
    run_cargo build -p pocketpilot
  fi
fi
BIN="$CARGO_TARGET_DIR/$PROFILE/pocketpilot"
[ -x "$BIN" ] || { echo "package: no binary at $BIN" >&2; exit 1; }

# The sidecar: the bundler wants `<name>-<target triple>` and installs it as <name>.
SERVER="$(bash scripts/setup-model-server.sh)"
PEERS="${POCKETPILOT_PEERS:-$HOME/.cache/pocketpilot-peers}"
MODEL="$PEERS/models/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -s "$MODEL" ] || { echo "package: the default model is missing at $MODEL" >&2; exit 1; }
SIDECAR_DIR="$CARGO_TARGET_DIR/sidecar"
TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
mkdir -p "$SIDECAR_DIR"
cp -f "$SERVER" "$SIDECAR_DIR/pocketpilot-llama-server-$TRIPLE"
EXTRA_CONFIG="$(printf '{"bundle":{"externalBin":["%s"],"resources":{"%s":"models/SmolLM2-135M-Instruct.Q4_1.gguf"}}}' \
  "$SIDECAR_DIR/pocketpilot-llama-server" "$MODEL")"

OUT_DIR="$CARGO_TARGET_DIR/$PROFILE/bundle"
rm -rf "$OUT_DIR/deb" "$OUT_DIR/rpm"
# --no-binary-patching: the packaged binary stays byte-for-byte the one the tests ran
# (the patch only serves the updater, which this app does not use).
"$TAURI" bundle "${FLAGS[@]}" --bundles "$BUNDLES" --no-binary-patching --ci --config "$EXTRA_CONFIG"

mkdir -p dist
shopt -s nullglob
built=("$OUT_DIR"/deb/*.deb "$OUT_DIR"/rpm/*.rpm)
if [ ${#built[@]} -eq 0 ]; then
  echo "package: the bundler produced nothing in $OUT_DIR" >&2
  exit 1
fi
for f in "${built[@]}"; do
  cp -f "$f" dist/
  printf 'package: dist/%s (%s KiB)\n' "$(basename "$f")" "$(( $(stat -c %s "$f") / 1024 ))"
done
