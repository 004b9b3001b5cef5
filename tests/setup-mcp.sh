#!/usr/bin/env bash
# Installs the official MCP reference servers the pocketpilot-mcp tests run against
# (npm @modelcontextprotocol/server-everything and server-filesystem, pinned in
# tests/mcp-servers/package.json + package-lock.json) into tests/mcp-servers/node_modules.
# Safe to run again: does nothing when both binaries are present.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/tests/mcp-servers"
BIN="$DIR/node_modules/.bin"

if [ -x "$BIN/mcp-server-everything" ] && [ -x "$BIN/mcp-server-filesystem" ]; then
  echo "setup-mcp: ready"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "setup-mcp: npm not found (install Node.js ≥ 18)" >&2; exit 1; }
echo "setup-mcp: installing the MCP reference servers into $DIR"
if [ -f "$DIR/package-lock.json" ]; then
  npm ci --prefix "$DIR" --no-audit --no-fund --loglevel=error
else
  npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error
fi
for b in mcp-server-everything mcp-server-filesystem; do
  [ -x "$BIN/$b" ] || { echo "setup-mcp: $BIN/$b missing after install" >&2; exit 1; }
done
echo "setup-mcp: ready"
