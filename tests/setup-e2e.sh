#!/usr/bin/env bash
# Installs what the end-to-end tests need; safe to run again (does nothing when present).
#   - tauri-driver (the WebDriver proxy in front of WebKitWebDriver), via cargo
#   - a Python venv .venv-e2e with selenium and pytest; dbus-fast (the tests' own tray
#     watcher and notification server) and python-xlib (the window as X sees it)
# System packages (webkit2gtk-driver, xvfb, dbus, imagemagick) come from the README's
# machine setup.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

if ! command -v tauri-driver >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/tauri-driver" ]; then
  echo "setup-e2e: installing tauri-driver"
  cargo install tauri-driver --locked
fi

VENV="$ROOT/.venv-e2e"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import selenium, pytest, pytest_timeout, dbus_fast, Xlib" 2>/dev/null; then
  echo "setup-e2e: creating $VENV"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "selenium>=4.20,<5" "pytest>=8,<9" "pytest-timeout>=2,<3" \
    "dbus-fast>=2,<3" "python-xlib>=0.33,<1"
fi

for tool in WebKitWebDriver xvfb-run; do
  command -v "$tool" >/dev/null 2>&1 || echo "setup-e2e: warning: $tool not found (apt: webkit2gtk-driver, xvfb)" >&2
done
echo "setup-e2e: ready"
