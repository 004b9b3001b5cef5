#!/usr/bin/env bash
# The package test: builds the .deb from the debug build in $CARGO_TARGET_DIR (nothing to
# compile when it is up to date), unpacks it with dpkg-deb into a throwaway root, and
# runs tests/package/test_package.py against the unpacked files: what the package holds
# and declares, the installed CLI, the desktop entry's Exec line in a real window under
# Xvfb, and start at login (the autostart entry's Exec: hidden, in the tray, a schedule
# firing) on the test's own D-Bus session with the e2e tray harness (tests/e2e/desktop_bus.py).
#   PACKAGE_OUTPUT   where the unpacked root, logs and screenshots go (default test-output/package)
#   PACKAGE_PREBUILT=1  package $CARGO_TARGET_DIR/debug/pocketpilot as it is (no cargo)
#   extra arguments go to pytest (e.g. -k autostart)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"

if [ -z "${PACKAGE_INNER:-}" ]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
  export PACKAGE_OUTPUT="${PACKAGE_OUTPUT:-$ROOT/test-output/package}"
  rm -rf "$PACKAGE_OUTPUT"
  mkdir -p "$PACKAGE_OUTPUT"
  for tool in dpkg-deb desktop-file-validate xvfb-run dbus-run-session; do
    command -v "$tool" >/dev/null || { echo "package test: $tool is missing (scripts/setup.sh)" >&2; exit 1; }
  done
  # Only the .deb: the .rpm comes from the same bundler and configuration, and the test
  # machine has no rpm to install it with.
  rm -f dist/*.deb
  # PACKAGE_PREBUILT=1 (the test command): package the debug binary the suites before
  # just ran, as it is; otherwise build it first (nothing to do when it is up to date).
  if [ "${PACKAGE_PREBUILT:-}" = 1 ]; then
    bash scripts/package.sh --debug --bundles deb --no-build
  else
    bash scripts/package.sh --debug --bundles deb
  fi
  DEB="$(ls dist/*.deb)"
  export PACKAGE_DEB="$ROOT/$DEB"
  export PACKAGE_ROOT="$PACKAGE_OUTPUT/root"
  dpkg-deb -x "$PACKAGE_DEB" "$PACKAGE_ROOT"
  export PACKAGE_INNER=1
  # A display and a session bus of the test's own: the tray watcher registers on it, and
  # the app's single-instance name lives there.
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash "$0" "$@"
fi

# A Secret Service of the test's own (as tests/e2e/run.sh): otherwise the keychain check
# in `--version` would have the bus activate gnome-keyring with the real home's dirs.
KEYRING_HOME="$(mktemp -d)"
mkdir -p "$KEYRING_HOME/data" "$KEYRING_HOME/run" && chmod 700 "$KEYRING_HOME/run"
if echo -n package-keyring | XDG_DATA_HOME="$KEYRING_HOME/data" XDG_RUNTIME_DIR="$KEYRING_HOME/run" \
    gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; then
  export PACKAGE_KEYRING=1
else
  echo "package test: gnome-keyring did not start; the keychain line is not checked" >&2
fi

PY="$ROOT/.venv-e2e/bin/python"
[ -x "$PY" ] || { echo "package test: run tests/setup-e2e.sh first" >&2; exit 1; }
set +e
"$PY" -m pytest -q -p no:cacheprovider "$ROOT/tests/package" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "package test: no tests ran — counted as a failure" >&2
  rc=1
fi
exit "$rc"
