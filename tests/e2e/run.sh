#!/usr/bin/env bash
# Runs the end-to-end tests against the real app binary: Xvfb (+ a D-Bus session with an
# unlocked gnome-keyring when available), tauri-driver on free ports, pytest. Exits with pytest's code; "no tests ran"
# (pytest's 5) counts as a failure.
#   POCKETPILOT_BIN   the binary (default ${CARGO_TARGET_DIR:-target}/debug/pocketpilot)
#   extra arguments go to pytest (e.g. -k smoke); `--bench` prints the UI figures instead
#   --repeat N [pytest args]  the whole suite N times, each round in a fresh Xvfb, D-Bus and
#                             tauri-driver, stopping at the first round that fails (its
#                             screenshots in $E2E_OUTPUT/round-K); for hunting flaky tests
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"

if [ -z "${E2E_INNER:-}" ] && [ "${1:-}" = "--repeat" ]; then
  ROUNDS="${2:-}"
  case "$ROUNDS" in
    '' | *[!0-9]* | 0) echo "e2e: --repeat takes a number of rounds (1 or more), not '${ROUNDS}'" >&2; exit 2 ;;
  esac
  shift 2
  OUT="${E2E_OUTPUT:-$ROOT/test-output/e2e}"
  started=$SECONDS
  for round in $(seq 1 "$ROUNDS"); do
    printf '\n== e2e round %d of %d\n' "$round" "$ROUNDS"
    E2E_OUTPUT="$OUT/round-$round" bash "$0" "$@"
    rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "e2e: round $round of $ROUNDS failed (exit $rc) after $((SECONDS - started)) s; see $OUT/round-$round" >&2
      exit "$rc"
    fi
    echo "e2e: round $round of $ROUNDS passed ($((SECONDS - started)) s so far)"
  done
  echo "e2e: all $ROUNDS rounds passed in $((SECONDS - started)) s"
  exit 0
fi

if [ -z "${E2E_INNER:-}" ]; then
  BIN="${POCKETPILOT_BIN:-${CARGO_TARGET_DIR:-target}/debug/pocketpilot}"
  case "$BIN" in /*) ;; *) BIN="$ROOT/$BIN" ;; esac
  if [ ! -x "$BIN" ]; then
    echo "e2e: no app binary at $BIN (npm --prefix ui run build && cargo build -p pocketpilot)" >&2
    exit 1
  fi
  export POCKETPILOT_BIN="$BIN" E2E_INNER=1
  export E2E_OUTPUT="${E2E_OUTPUT:-$ROOT/test-output/e2e}"
  mkdir -p "$E2E_OUTPUT"
  WRAP=()
  if command -v dbus-run-session >/dev/null 2>&1; then WRAP=(dbus-run-session --); fi
  # A session keyring of its own for keyutils (the keychain's second backend).
  if command -v keyctl >/dev/null 2>&1 && keyctl session - true >/dev/null 2>&1; then
    WRAP=(keyctl session - "${WRAP[@]}")
  fi
  exec xvfb-run -a -s "-screen 0 1280x800x24" "${WRAP[@]}" bash "$0" "$@"
fi

# Inside Xvfb: a Secret Service for the keychain tests. gnome-keyring keeps its files
# under its own XDG dirs here, never in the real home; the password only unlocks this
# throwaway keyring.
if [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] && command -v gnome-keyring-daemon >/dev/null 2>&1; then
  KEYRING_HOME="$(mktemp -d)"
  mkdir -p "$KEYRING_HOME/data" "$KEYRING_HOME/run" && chmod 700 "$KEYRING_HOME/run"
  if echo -n e2e-keyring | XDG_DATA_HOME="$KEYRING_HOME/data" XDG_RUNTIME_DIR="$KEYRING_HOME/run" \
      gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; then
    export E2E_KEYRING=1
  else
    echo "e2e: gnome-keyring did not start; the keychain test will be skipped" >&2
  fi
fi

# tauri-driver on free ports (others may be running tests on this machine).
read -r PORT NATIVE_PORT < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
for s in socks: s.close()')
DRIVER="$(command -v tauri-driver || echo "$HOME/.cargo/bin/tauri-driver")"
"$DRIVER" --port "$PORT" --native-port "$NATIVE_PORT" >"$E2E_OUTPUT/tauri-driver.log" 2>&1 &
DRIVER_PID=$!
trap 'kill "$DRIVER_PID" 2>/dev/null; wait "$DRIVER_PID" 2>/dev/null' EXIT
for _ in $(seq 1 100); do
  if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null; then break; fi
  if ! kill -0 "$DRIVER_PID" 2>/dev/null; then
    echo "e2e: tauri-driver exited; see $E2E_OUTPUT/tauri-driver.log" >&2
    exit 1
  fi
  sleep 0.1
done
export TAURI_DRIVER_URL="http://127.0.0.1:$PORT"

PY="$ROOT/.venv-e2e/bin/python"
[ -x "$PY" ] || { echo "e2e: run tests/setup-e2e.sh first" >&2; exit 1; }
if [ "${1:-}" = "--bench" ]; then
  # The figures (tests/e2e/bench_ui.py), not the tests.
  "$PY" "$ROOT/tests/e2e/bench_ui.py"
  exit $?
fi
"$PY" -m pytest -q -p no:cacheprovider "$ROOT/tests/e2e" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "e2e: no tests ran — counted as a failure" >&2
  rc=1
fi
exit "$rc"
