#!/usr/bin/env bash
# Figures (not a test): a prompt to its first streamed text over ACP (stdio, the Python
# SDK as the client) against the same run through the CLI. Written to bench-results/acp.txt.
#   scripts/bench-acp.sh [N]     N runs each way (default 30); needs a debug build
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
N="${1:-30}"
BIN="${POCKETPILOT_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/pocketpilot}"
bash tests/setup-python.sh
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/ws"
echo '{"repeat_last": true, "turns": [{"text": "Hello there, this is the answer.", "chunk_size": 4}]}' >"$TMP/script.json"
POCKETPILOT_DATA_DIR="$TMP/data" HOME="$TMP" .venv-test/bin/python tests/acp_client.py \
    "$BIN" "$TMP/ws" "$TMP/script.json" "$TMP/figures.json" --bench "$N"
mkdir -p bench-results
.venv-test/bin/python - "$TMP/figures.json" "$N" "$BIN" >bench-results/acp.txt <<'PY'
import json, statistics, subprocess, sys, datetime
figures = json.load(open(sys.argv[1]))
n, binary = sys.argv[2], sys.argv[3]
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]
print(f"# scripts/bench-acp.sh: prompt -> first streamed text, {n} runs each, scripted model, {binary}")
print(f"# {datetime.datetime.utcnow():%Y-%m-%d %H:%M}Z; machine: " + subprocess.run(["uname", "-srm"], capture_output=True, text=True).stdout.strip())
labels = {
    "acp_warm": "ACP, running agent: session/prompt -> first agent_message_chunk",
    "acp_cold": "ACP, from spawn: initialize + session/new + prompt -> first chunk",
    "cli": "CLI: spawn `pocketpilot run` -> first answer byte on stdout",
}
for key, label in labels.items():
    xs = figures[key]
    print(f"{label}: p50 {statistics.median(xs):.1f} ms, p90 {q(xs, 0.9):.1f} ms, min {min(xs):.1f} ms")
warm, cli = statistics.median(figures["acp_warm"]), statistics.median(figures["cli"])
cold = statistics.median(figures["acp_cold"])
print(f"ACP warm - CLI (p50): {warm - cli:+.1f} ms; ACP from spawn - CLI (p50): {cold - cli:+.1f} ms")
PY
cat bench-results/acp.txt
