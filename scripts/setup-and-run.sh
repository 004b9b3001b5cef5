#!/usr/bin/env bash
# One command from a fresh Debian machine to a running PocketPilot.
#   scripts/setup-and-run.sh                                  opens the desktop app
#   scripts/setup-and-run.sh --headless --workspace DIR --goal TEXT [run options]
#                                                             runs one task in the terminal
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
bash "$ROOT/scripts/setup.sh"
BIN="$CARGO_TARGET_DIR/debug/pocketpilot"
if [ "${1:-}" = "--headless" ]; then
  shift
  exec "$BIN" run "$@"
fi
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "No display: starting the app under Xvfb (use --headless for the CLI)." >&2
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$BIN"
fi
exec "$BIN"
