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

# tauri-driver on free ports. Others may be running tests on this machine: a port seen free
# can be taken before our driver binds it, and then a connection test would reach THEIR
# driver (one suite's tests driving another's windows). So the ports count as ours only once
# `ss` shows our driver on the first and its WebKitWebDriver on the second; else new ports.
listener_pid() { ss -ltnpH "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
parent_of() { awk '{print $4}' "/proc/$1/stat" 2>/dev/null; }
DRIVER="$(command -v tauri-driver || echo "$HOME/.cargo/bin/tauri-driver")"
DRIVER_PID=""
trap '[ -z "$DRIVER_PID" ] || { kill "$DRIVER_PID" 2>/dev/null; wait "$DRIVER_PID" 2>/dev/null; }' EXIT
for attempt in 1 2 3 4 5; do
  read -r PORT NATIVE_PORT < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
for s in socks: s.close()')
  "$DRIVER" --port "$PORT" --native-port "$NATIVE_PORT" >"$E2E_OUTPUT/tauri-driver.log" 2>&1 &
  DRIVER_PID=$!
  ours=""
  for _ in $(seq 1 200); do
    if ! kill -0 "$DRIVER_PID" 2>/dev/null; then break; fi
    main=$(listener_pid "$PORT")
    native=$(listener_pid "$NATIVE_PORT")
    if [ -n "$main" ] && [ -n "$native" ]; then
      if [ "$main" = "$DRIVER_PID" ] && [ "$(parent_of "$native")" = "$DRIVER_PID" ]; then ours=1; fi
      break
    fi
    sleep 0.1
  done
  [ -z "$ours" ] || break
  echo "e2e: tauri-driver on ports $PORT/$NATIVE_PORT did not come up as ours (attempt $attempt); new ports" >&2
  kill "$DRIVER_PID" 2>/dev/null
  wait "$DRIVER_PID" 2>/dev/null
  DRIVER_PID=""
done
if [ -z "$DRIVER_PID" ]; then
  echo "e2e: tauri-driver never listened on ports of its own; see $E2E_OUTPUT/tauri-driver.log" >&2
  exit 1
fi
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
