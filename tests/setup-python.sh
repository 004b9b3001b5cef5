#!/usr/bin/env bash
# Creates .venv-test/ at the repo root with the Python tools the tests and benches use
# (llmock: a scripted OpenAI-compatible server; openai: the SDK the stream bench compares
# against; agent-client-protocol: the ACP Python SDK, a real third-party client of
# `pocketpilot acp` in tests/acp.rs). Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv-test/bin/python ]; then
    "$PYTHON" -m venv .venv-test
fi
.venv-test/bin/python -m pip install --quiet --disable-pip-version-check \
    llmock openai "agent-client-protocol>=0.12,<0.13"
