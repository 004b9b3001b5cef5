#!/usr/bin/env bash
# Installs whatever this machine lacks to build and run PocketPilot on Debian 12, builds
# the built-in model's server (llama.cpp, portable) and fetches its default model, then
# builds the app. Idempotent: on a machine that has everything it only builds.
#   scripts/setup.sh              install + build (what the run command needs)
#   scripts/setup.sh --deps       install only, with the test tools too (the test command):
#                                 tauri-driver, cargo-fuzz, the e2e Python venv, the MCP
#                                 reference servers
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"

TEST_TOOLS=0; [ "${1:-}" = "--deps" ] && TEST_TOOLS=1

# What building and running needs (a window under Xvfb when there is no display).
APT_PKGS=(libwebkit2gtk-4.1-dev build-essential curl wget file libxdo-dev libssl-dev
  libayatana-appindicator3-dev librsvg2-dev pkg-config xvfb xauth dbus dbus-x11
  gnome-keyring python3-venv git)
# What only the tests need.
[ "$TEST_TOOLS" = 1 ] && APT_PKGS+=(webkit2gtk-driver imagemagick libsecret-tools keyutils
  desktop-file-utils qemu-user)

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Vite 7 needs Node.js 20.19 or newer; Debian 12's own nodejs (18) is too old.
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node.js 20 or newer is needed (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  echo "setup: npm ci (ui)"
  npm --prefix ui ci --no-audit --no-fund
fi

if [ "$TEST_TOOLS" = 1 ]; then
  bash tests/setup-python.sh
  bash tests/setup-e2e.sh
  bash tests/setup-mcp.sh
  if ! command -v cargo-fuzz >/dev/null 2>&1; then
    echo "setup: installing cargo-fuzz"
    cargo install cargo-fuzz --locked
  fi
  exit 0
fi

# The built-in model: llama.cpp's server (a portable build) and SmolLM2-135M, cached
# outside the clone (see scripts/setup-model-server.sh); the app finds both there.
echo "setup: the built-in model's server and default model"
bash scripts/setup-model-server.sh >/dev/null

echo "setup: building the UI and the app"
npm --prefix ui run build
cargo build -p pocketpilot
echo "setup: built $CARGO_TARGET_DIR/debug/pocketpilot"
