#!/usr/bin/env bash
# Approvals a person answers for one fixed 20-step scripted task (20 commands: cargo test,
# cargo clippy, git status, ls, one cat), three ways: approving each once, "allow every
# shell command for this session" at the first, and with command rules for the four
# programs the task uses (`cargo test *`, `cargo clippy *`, `git status *`, `ls *`).
# Appends the three counts to bench-results/command-rules.txt.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CARGO_TARGET_DIR:-$here/target}/debug/pocketpilot"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/script.json" <<'PY'
import json, sys
# Distinct arguments per step: the repetition guard pauses a run that repeats a call.
cmds = ([f"cargo test -p c{i}" for i in range(5)] + [f"cargo clippy -p c{i}" for i in range(5)]
        + [f"git status --short d{i}" for i in range(5)] + [f"ls -la e{i}" for i in range(4)]
        + ["cat README.md"])
turns = [{"tool_calls": [{"name": "run_command", "arguments": {"command": c}}]} for c in cmds]
turns.append({"text": "Done."})
json.dump(turns, open(sys.argv[1], "w"))
PY
run() { # $1: mode; prints the approvals answered
  local data="$tmp/data-$1" ws="$tmp/ws-$1" asked=0 first=1
  mkdir -p "$ws"
  # 20 command steps and the answer: above the default step budget.
  export POCKETPILOT_DATA_DIR="$data" HOME="$tmp" POCKETPILOT_MAX_AGENT_STEPS=30
  if [ "$1" = rules ]; then
    for r in 'cargo test *' 'cargo clippy *' 'git status *' 'ls *'; do
      "$bin" policy add "$r" --workspace "$ws" >/dev/null
    done
  fi
  "$bin" run --workspace "$ws" --goal bench --provider "scripted:$tmp/script.json" >/dev/null 2>&1 || true
  while id=$("$bin" approvals --json | python3 -c 'import json,sys; a=json.load(sys.stdin); print(a[0]["id"] if a else "")') && [ -n "$id" ]; do
    asked=$((asked + 1))
    if [ "$1" = grant ] && [ $first = 1 ]; then
      "$bin" approve "$id" --session-grant >/dev/null 2>&1 || true
    else
      "$bin" approve "$id" >/dev/null 2>&1 || true
    fi
    first=0
  done
  echo "$asked"
}
once=$(run once); grant=$(run grant); rules=$(run rules)
{
  echo "## approvals for a fixed 20-step scripted task ($(date -u +%Y-%m-%dT%H:%MZ), scripts/bench-command-rules.sh)"
  echo "approve each once:                         $once"
  echo "allow every shell command for the session: $grant"
  echo "command rules (4 rules, added beforehand):  $rules"
} | tee -a "$here/bench-results/command-rules.txt"
