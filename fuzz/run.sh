#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 10). CI: `fuzz/run.sh 10`.
# Long runs: `fuzz/run.sh 3600`, or one target: `cd fuzz && cargo fuzz run guard_resolve -- -max_total_time=3600`.
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). cargo fuzz wants nightly; on
# stable it works with RUSTC_BOOTSTRAP=1, which this script sets. SANITIZER=address for
# ASan (slower to build and run); the default `none` still gives libFuzzer coverage.
set -euo pipefail
SECONDS_EACH="${1:-10}"
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$PWD/target}"
SAN="${SANITIZER:-none}"
status=0
for target in sse_stream guard_resolve webhook_body cmdrules; do
  mkdir -p "corpus/$target"
  if [ -d "seeds/$target" ]; then cp -n seeds/"$target"/* "corpus/$target/" 2>/dev/null || true; fi
  echo "== $target (${SECONDS_EACH}s, sanitizer $SAN)"
  if ! cargo fuzz run --sanitizer "$SAN" "$target" "corpus/$target" -- \
      -max_total_time="$SECONDS_EACH" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 2>&1 | tail -n 25; then
    status=1
  fi
  # `cargo fuzz run` exits non-zero on a crash; pipefail carries it here.
done
exit $status
