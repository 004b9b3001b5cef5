#!/usr/bin/env bash
# Fails on a sleep in test code that does not say why it has to be one.
#
# A test that waits for something waits for that thing (an event, or a condition polled
# with a bound and a message naming what never came), never for a fixed time: a fixed
# sleep is either too short on a slow machine (a flaky test) or too long everywhere. The
# few real sleeps that remain carry a marker comment with their reason, on the same line
# or in the comment block directly above:
#
#   // sleep: <why real time has to pass here>     (Rust)
#   # sleep: <why real time has to pass here>      (Python)
#
# e.g. "the poll interval of the shared wait helper", "the timeout under test needs real
# time to run out", "spreading the kills over the run". Checked:
#   tests/e2e/*.py                   time.sleep / sleep(
#   Rust test code: src-tauri/**/tests/**/*.rs, src-tauri/**/*_tests.rs, src-tauri/**/tests.rs
#   and the workspace's tests/**/*.rs: std::thread::sleep, thread::sleep, tokio::time::sleep,
#   time::sleep, a bare sleep(
#
# Usage: scripts/lint-sleeps.sh [ROOT]   (ROOT defaults to this checkout)
set -euo pipefail
ROOT="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$ROOT"

# Prints each unmarked sleep as FILE:LINE: text; exits 1 if there was one.
#   $1 the comment leader ("//" or "#"), $2 the pattern of a sleep, then the files.
unmarked() {
  local leader="$1" pattern="$2"
  shift 2
  [ "$#" -gt 0 ] || return 0
  awk -v c="$leader" -v re="$pattern" '
    FNR == 1 { marked = 0 }
    {
      t = $0
      sub(/^[ \t]+/, "", t)
      if (index(t, c) == 1) {
        # A comment line: the block it belongs to marks the code line right after it.
        if (index(t, c " sleep:") == 1) marked = 1
        next
      }
      if ($0 ~ re && index($0, c " sleep:") == 0 && !marked) {
        printf "%s:%d: %s\n", FILENAME, FNR, t
        bad = 1
      }
      marked = 0
    }
    END { exit bad }
  ' "$@"
}

status=0

mapfile -t py < <(find tests/e2e -maxdepth 1 -name '*.py' 2>/dev/null | sort)
unmarked "#" '(^|[^A-Za-z0-9_])sleep[ \t]*\(' "${py[@]}" || status=1

mapfile -t rs < <(
  {
    find src-tauri -path '*/target' -prune -o \( -path '*/tests/*.rs' -o -name '*_tests.rs' -o -name 'tests.rs' \) -type f -print 2>/dev/null
    find tests -name '*.rs' -type f 2>/dev/null
  } | sort -u
)
unmarked "//" '(thread|time)::sleep[ \t]*\(|(^|[^A-Za-z0-9_:])sleep[ \t]*\(' "${rs[@]}" || status=1

if [ "$status" -ne 0 ]; then
  cat >&2 <<'EOF'

lint-sleeps: the sleeps above say nothing of why they must be real time. Wait for the
condition instead (tests/e2e: App.wait and friends in conftest.py; Rust: an event, a
channel, or a bounded poll), or, where real time must pass, say why on the line or in
the comment just above it: `// sleep: <reason>` (Rust), `# sleep: <reason>` (Python).
EOF
fi
exit "$status"
