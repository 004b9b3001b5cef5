#!/usr/bin/env bash
# Figures for the built-in model (not tests): written to bench-results/builtin-model.txt.
#   1. cold start to the first token of "Say hello": a fresh `pocketpilot run` (which
#      starts the server) against the server's own load, prompt and first-token times
#      read from its log for the same request;
#   2. memory: the server's RSS idle and while answering, the app's beside it;
#   3. `models pull` from a local HTTP server against curl for the same file;
#   4. a 10-turn session in the running app (serve + webhook): the server's prompt time;
#   5. time to first token on turn 1 and turn 10 of a session (scripts/bench_turns.py:
#      a real ACP client, the built-in model), and a second session's first turn.
# Needs scripts/setup-model-server.sh and a debug build (POCKETPILOT_BIN overrides).
#   scripts/bench-builtin.sh [RUNS]      (default 3 runs of each)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="${POCKETPILOT_BIN:-$CARGO_TARGET_DIR/debug/pocketpilot}"
RUNS="${1:-3}"
PEERS="${POCKETPILOT_PEERS:-$HOME/.cache/pocketpilot-peers}"
MODEL="$PEERS/models/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT="$ROOT/bench-results/builtin-model.txt"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
unset POCKETPILOT_LOCAL_MODEL POCKETPILOT_BASE_URL POCKETPILOT_MODEL POCKETPILOT_PROVIDER

{
  echo "# The built-in model: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "# binary: $BIN"
  echo
  echo "## 1. cold start to the first token of \"Say hello\" (a fresh process each run)"
  for i in $(seq 1 "$RUNS"); do
    d="$WORK/ttft-$i"; mkdir -p "$d/ws"
    POCKETPILOT_DATA_DIR="$d/data" python3 - "$BIN" "$d/ws" "$d/data/logs/llama-server.log" <<'PY'
import re, subprocess, sys, time
binary, ws, log = sys.argv[1:]
t0 = time.monotonic()
p = subprocess.Popen([binary, "run", "--workspace", ws, "--goal", "Say hello"],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
p.stdout.read(1)
ttft = 1000 * (time.monotonic() - t0)
p.stdout.read()
p.wait()
text = open(log).read()
# llama.cpp stamps its lines M.SS.mmm.uuu after its own start.
def stamp(line):
    m, s, ms, us = (int(x) for x in line.split()[0].split("."))
    return ((m * 60 + s) * 1000) + ms + us / 1000
listen = next((stamp(l) for l in text.splitlines() if "listening on" in l), float("nan"))
prompt = [float(x) for x in re.findall(r"prompt eval time = +([0-9.]+) ms", text)]
tokens = re.findall(r"prompt eval time = +[0-9.]+ ms / +([0-9]+) tokens", text)
first = prompt[0] if prompt else float("nan")
print(f"  run: first answer byte {ttft:.0f} ms (exit {p.returncode}); server: up {listen:.0f} ms after its start, "
      f"prompt {first:.0f} ms for {tokens[0] if tokens else '?'} tokens; the rest (app start, the health check, "
      f"the request, the first token, printing): {ttft - listen - first:.0f} ms")
PY
  done
  echo
  echo "## 2. memory (RSS)"
  d="$WORK/rss"; mkdir -p "$d/ws"
  POCKETPILOT_DATA_DIR="$d/data" POCKETPILOT_LOCAL_IDLE_SECONDS=600 "$BIN" run --workspace "$d/ws" \
    --goal "Write a long story about a lighthouse keeper." >/dev/null 2>&1 &
  app=$!
  srv=""
  for _ in $(seq 1 600); do
    srv=$(pgrep -f "llama-server.*$d/data" || true)
    [ -n "$srv" ] && break
    sleep 0.1  # sleep: waiting for another process to appear in /proc
  done
  peak_srv=0; peak_app=0
  for _ in $(seq 1 50); do
    kill -0 "$app" 2>/dev/null || break
    s=$(awk '/VmRSS/{print $2}' "/proc/$srv/status" 2>/dev/null || echo 0)
    a=$(awk '/VmRSS/{print $2}' "/proc/$app/status" 2>/dev/null || echo 0)
    [ "${s:-0}" -gt "$peak_srv" ] && peak_srv=$s
    [ "${a:-0}" -gt "$peak_app" ] && peak_app=$a
    sleep 0.2  # sleep: sampling memory while the answer streams
  done
  kill "$app" 2>/dev/null; wait "$app" 2>/dev/null || true
  echo "  while answering: server $((peak_srv / 1024)) MiB, app (pocketpilot run) $((peak_app / 1024)) MiB (peaks over 10 s)"
  # Idle: a server started and left alone (the supervisor's own helper program).
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$PEERS/llama.cpp/build-portable/bin/llama-server" -m "$MODEL" --host 127.0.0.1 --port "$port" -c 8192 -t 2 \
    --jinja >/dev/null 2>&1 &
  idle=$!
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.1; done  # sleep: polling readiness
  sleep 2  # sleep: let it settle before sampling
  echo "  idle (ready, -c 8192): server $(( $(awk '/VmRSS/{print $2}' /proc/$idle/status) / 1024 )) MiB"
  kill "$idle"; wait "$idle" 2>/dev/null || true
  echo
  echo "## 3. models pull vs curl, $(( $(stat -c %s "$MODEL") / 1048576 )) MiB from a local HTTP server"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  (cd "$(dirname "$MODEL")" && python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
  web=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/"; do sleep 0.1; done  # sleep: polling readiness
  url="http://127.0.0.1:$port/$(basename "$MODEL")"
  for i in $(seq 1 "$RUNS"); do
    t0=$(date +%s.%N); curl -sf -o "$WORK/curl.gguf" "$url"; t1=$(date +%s.%N)
    rm -f "$WORK/curl.gguf"
    d="$WORK/pull-$i"
    t2=$(date +%s.%N); POCKETPILOT_DATA_DIR="$d" "$BIN" models pull "$url" --name bench >/dev/null 2>&1; t3=$(date +%s.%N)
    python3 - "$t0" "$t1" "$t2" "$t3" "$(stat -c %s "$MODEL")" <<'PY'
import sys
t0, t1, t2, t3, size = map(float, sys.argv[1:])
c, p = t1 - t0, t3 - t2
mib = size / 1048576
print(f"  curl {c:.2f} s ({mib / c:.0f} MiB/s); models pull {p:.2f} s ({mib / p:.0f} MiB/s, with the sha256 and header checks): {c / p:.2f}x curl")
PY
  done
  kill "$web"; wait "$web" 2>/dev/null || true
  echo
  echo "## 4. a session of 10 turns in the running app (serve + webhook into one session): the server's own prompt time per turn"
  d="$WORK/turns"; mkdir -p "$d/ws"
  export POCKETPILOT_DATA_DIR="$d/data"
  token=$("$BIN" hooks add bench --workspace "$d/ws" | grep -oE '[0-9a-f]{32,}' | head -1)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$BIN" serve --port "$port" >/dev/null 2>&1 &
  serve=$!
  until curl -s -o /dev/null "http://127.0.0.1:$port/"; do sleep 0.1; done  # sleep: polling readiness
  python3 - "$BIN" "$port" "$token" "$d/data/logs/llama-server.log" <<'PY'
import json, re, subprocess, sys, time, urllib.request
binary, port, token, log = sys.argv[1:]
def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/hooks/bench", data=json.dumps(body).encode(),
                                 headers={"X-PocketPilot-Token": token, "Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read())
def status(task):
    out = subprocess.run([binary, "show", str(task), "--json"], capture_output=True, text=True).stdout
    return json.loads(out)
session = None
for turn in range(1, 11):
    body = {"text": f"Turn {turn}: say one short sentence about the sea."}
    if session:
        body["session"] = session
    task = post(body)["task_id"]
    while True:
        t = status(task)
        if t["task"]["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.2)  # sleep: polling another process's task
    session = t["task"]["session_id"]
text = open(log).read()
rows = re.findall(r"prompt eval time = +([0-9.]+) ms / +([0-9]+) tokens", text)
cached = re.findall(r"n_past = (\d+)", text)
for i, (ms, n) in enumerate(rows, 1):
    if i in (1, 2, len(rows)) or i == 10:
        print(f"  request {i}: {n} prompt tokens processed in {float(ms):.0f} ms (the rest came from the server's cache)")
print(f"  {len(rows)} requests in 10 turns")
PY
  kill "$serve"; wait "$serve" 2>/dev/null || true
  unset POCKETPILOT_DATA_DIR

  echo
  echo "## 5. time to first token, turn by turn: one session of 10 prompts over ACP (stdio, the Python SDK), the built-in model, default settings"
  d="$WORK/turns-acp"; mkdir -p "$d/ws"
  printf 'Meeting notes, 2 December: the team agreed to ship the backup screen first,\nthen the export. Open question: who writes the release notes?\n' >"$d/ws/notes.txt"
  bash "$ROOT/tests/setup-python.sh" >/dev/null
  POCKETPILOT_DATA_DIR="$d/data" "$ROOT/.venv-test/bin/python" "$ROOT/scripts/bench_turns.py" \
    "$BIN" "$d/ws" "$d/turns.json" 10
  python3 - "$d/turns.json" "$d/data/logs/llama-server.log" <<'PY'
import json, re, sys
rows = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read()
evals = re.findall(r"prompt eval time = +([0-9.]+) ms / +([0-9]+) tokens", log)
def ms(x):
    return "none streamed" if x is None else f"{x:.0f} ms"
for r in rows:
    print(f"  session {r['session']} turn {r['turn']:>2}: first token {ms(r['first_chunk_ms']):>8}, answer done {r['end_ms']:.0f} ms ({r['stop']})")
print(f"  the server's log: {len(evals)} requests; tokens processed per request (the rest from its cache): "
      + ", ".join(n for _, n in evals))
PY
} | tee "$OUT"
