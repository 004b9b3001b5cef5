#!/usr/bin/env bash
# Figures (not a test): what one trivial hook costs a tool call. `pocketpilot exec --json`
# runs a scripted model making CALLS `list_dir` calls (one folder each) (allowed without asking), RUNS times
# without hooks and RUNS times with one consented PreToolUse hook (`true`, matcher "*").
# Per call: the hook's own recorded run (spawn in the sandbox to exit), and the time from
# the model's turn to the call's result with and without it. Written to bench-results/hooks.txt.
#   scripts/bench-hooks.sh [RUNS] [CALLS]   (default 5 x 10); needs a debug build
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
RUNS="${1:-5}"
CALLS="${2:-10}"
BIN="${POCKETPILOT_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/pocketpilot}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
python3 - "$CALLS" >"$TMP/script.json" <<'PY'
import json, sys
n = int(sys.argv[1])
# A different folder each call: the same call with the same result would trip the
# repetition guard.
turns = [{"tool_calls": [{"name": "list_dir", "arguments": {"path": f"d{i}"}}]} for i in range(n)]
print(json.dumps({"turns": turns + [{"text": "Listed."}]}))
PY
for mode in plain hooked; do
  mkdir -p "$TMP/$mode/ws"
  for c in $(seq 0 $((CALLS - 1))); do mkdir -p "$TMP/$mode/ws/d$c"; done
  if [ "$mode" = hooked ]; then
    mkdir -p "$TMP/$mode/ws/.pocketpilot"
    echo '{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "true"}]}]}}' \
      >"$TMP/$mode/ws/.pocketpilot/hooks.json"
    POCKETPILOT_DATA_DIR="$TMP/$mode/data" HOME="$TMP/$mode" \
      "$BIN" agent-hooks consent --workspace "$TMP/$mode/ws" >/dev/null
  fi
  for i in $(seq "$RUNS"); do
    POCKETPILOT_DATA_DIR="$TMP/$mode/data" HOME="$TMP/$mode" POCKETPILOT_MAX_AGENT_STEPS=$((CALLS + 5)) \
      "$BIN" exec "list $i" --workspace "$TMP/$mode/ws" --provider "scripted:$TMP/script.json" --json \
      >>"$TMP/$mode.jsonl"
  done
done
mkdir -p bench-results
python3 - "$TMP" "$RUNS" "$CALLS" "$BIN" >bench-results/hooks.txt <<'PY'
import datetime, json, statistics, subprocess, sys
tmp, runs, calls, binary = sys.argv[1:5]
def at(line):
    return datetime.datetime.fromisoformat(line["at"].replace("Z", "+00:00")).timestamp() * 1000
def per_call(mode):
    turn, out, hooks = None, [], []
    for raw in open(f"{tmp}/{mode}.jsonl"):
        line = json.loads(raw)
        if line["type"] == "model_turn_completed":
            turn = at(line)
        elif line["type"] == "tool_call_completed" and turn is not None:
            out.append(at(line) - turn)
        elif line["type"] == "hook_ran":
            hooks.append(line["payload"]["duration_ms"])
    return out, hooks
plain, _ = per_call("plain")
hooked, hooks = per_call("hooked")
print(f"# scripts/bench-hooks.sh: {runs} exec runs x {calls} list_dir calls each way, scripted model, {binary}")
print(f"# {datetime.datetime.utcnow():%Y-%m-%d %H:%M}Z; machine: " + subprocess.run(["uname", "-srm"], capture_output=True, text=True).stdout.strip())
print(f"one trivial PreToolUse hook (`true`), its own run (sandboxed spawn to exit): p50 {statistics.median(hooks):.0f} ms, max {max(hooks)} ms, n={len(hooks)}")
print(f"model turn -> call result, no hooks:  p50 {statistics.median(plain):.0f} ms, n={len(plain)}")
print(f"model turn -> call result, one hook:  p50 {statistics.median(hooked):.0f} ms, n={len(hooked)}")
print(f"hook overhead per tool call (p50 difference): {statistics.median(hooked) - statistics.median(plain):+.0f} ms")
PY
cat bench-results/hooks.txt
