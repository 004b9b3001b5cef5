#!/usr/bin/env bash
# Runs the end-to-end tests against the real app binary: Xvfb (+ a D-Bus session when
# available), tauri-driver on free ports, pytest. Exits with pytest's code; "no tests ran"
# (pytest's 5) counts as a failure.
#   POCKETPILOT_BIN   the binary (default ${CARGO_TARGET_DIR:-target}/debug/pocketpilot)
#   extra arguments go to pytest (e.g. -k smoke)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"

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
  exec xvfb-run -a -s "-screen 0 1280x800x24" "${WRAP[@]}" bash "$0" "$@"
fi

# Inside Xvfb: tauri-driver on free ports (others may be running tests on this machine).
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
"$PY" -m pytest -q -p no:cacheprovider "$ROOT/tests/e2e" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "e2e: no tests ran — counted as a failure" >&2
  rc=1
fi
exit "$rc"
