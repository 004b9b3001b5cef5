#!/usr/bin/env bash
# Idle wakeups of the app (figures, not a test): the desktop app under Xvfb with one idle
# session open (a finished task in it), left alone; the app process's threads' scheduler
# run counts (/proc/PID/task/*/schedstat, the third field: times each thread was switched
# in) are read before and after WINDOW seconds. The webview's own processes (WebKit's)
# are listed separately: they are the toolkit's, not the runtime's.
#   scripts/bench-idle.sh [BIN]   BIN defaults to the debug build; WINDOW=30 by default
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${1:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/pocketpilot}"
WINDOW="${WINDOW:-30}"
work="$(mktemp -d)"
trap 'kill "$app" 2>/dev/null || true; rm -rf "$work"' EXIT
export POCKETPILOT_DATA_DIR="$work/data" HOME="$work/home" POCKETPILOT_LOCAL_MODEL=off
mkdir -p "$work/ws" "$work/home"
echo '[{"text":"Done: nothing to change."}]' > "$work/s.json"
"$BIN" run --workspace "$work/ws" --goal "look around" --provider "scripted:$work/s.json" >/dev/null

# Each thread's run count (the third field of its schedstat), as "TID COUNT" lines.
switches() {
  local t
  for t in /proc/"$1"/task/*; do
    [ -r "$t/schedstat" ] && echo "${t##*/} $(awk '{print $3}' "$t/schedstat" 2>/dev/null || echo 0)"
  done
}

xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$BIN" >"$work/app.log" 2>&1 &
wrapper=$!
# The app is the wrapper's descendant whose executable is $BIN.
app=""
for _ in $(seq 100); do
  for p in $(pgrep -f "^$BIN\$" || true); do app=$p; done
  [ -n "$app" ] && break
  # sleep: waiting for the app process to appear; it has no event to wait on from here.
  sleep 0.1
done
[ -n "$app" ] || { echo "the app did not start" >&2; exit 1; }
# sleep: the window loads and settles before the idle measure starts.
sleep 15
switches "$app" > "$work/before"
# sleep: the idle window being measured.
sleep "$WINDOW"
switches "$app" > "$work/after"
# Wakeups in the window: each thread's count now less its count before (a thread new in
# the window counts whole; one that ended in it is not seen, and says so).
read -r woke new ended < <(awk 'NR == FNR { before[$1] = $2; next }
  { if ($1 in before) { w += $2 - before[$1]; delete before[$1] } else { w += $2; n++ } }
  END { e = 0; for (t in before) e++; print w, n + 0, e }' "$work/before" "$work/after")
threads=$(wc -l < "$work/after")
# Per thread, by name: the runtime's own (tokio workers, the store's writer, the store
# watcher's inotify thread, the log writer) and the toolkit's (GTK, WebKit, D-Bus).
awk 'NR == FNR { before[$1] = $2; next } ($1 in before) && $2 > before[$1] { print $1, $2 - before[$1] }' \
  "$work/before" "$work/after" | while read -r tid d; do
  echo "$(cat /proc/"$app"/task/"$tid"/comm 2>/dev/null || echo ended) $d"
done | awk '{ n = $NF; $NF = ""; sub(/ $/, ""); by[$0] += n }
  END { for (k in by) printf "  %-18s %4d\n", k, by[k] }' | sort -k2 -n -r > "$work/threads"
own=$(awk '/tokio-rt-worker|pocketpilot-sto|notify-rs|tracing-appende/ { s += $NF } END { print s + 0 }' "$work/threads")
cat "$work/threads"
printf 'the runtime'"'"'s own threads (tokio, store writer, store watcher, log writer): %s wakeups in %s s = %.2f per second\n' \
  "$own" "$WINDOW" "$(echo "$own / $WINDOW" | bc -l)"
printf 'idle app (backend process %s, %s threads, %s started and %s ended in the window): %s wakeups in %s s = %.2f per second\n' \
  "$app" "$threads" "$new" "$ended" "$woke" "$WINDOW" "$(echo "$woke / $WINDOW" | bc -l)"
kill "$app" 2>/dev/null || true
wait "$wrapper" 2>/dev/null || true
