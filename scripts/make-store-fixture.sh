#!/usr/bin/env bash
# Makes an old-store fixture: the database an earlier PocketPilot wrote, with real content,
# and what that build itself printed about it.
#
#   scripts/make-store-fixture.sh COMMIT [--bin PATH] [--out DIR] [--variant]
#
# --variant names the files v<N>-<commit>.* instead of v<N>.*: for a commit whose schema
# has the number of another's but not its shape (a migration edited after it shipped).
#
# Without --bin it checks COMMIT out into a detached worktree (/tmp/pp-old/COMMIT), builds
# only its `pocketpilot` binary into $OLD_TARGET_DIR (default
# /var/cache/pocketpilot/target-old, one directory shared by every old build, under the
# same lock as other builds), and removes the worktree afterwards.
#
# The binary is driven through a scripted model, with whatever its commands support:
#   session 1: a task writing notes.txt (answer, tool calls, a change), a follow-up that
#              reads and rewrites it (a modification with both sides in the journal);
#   session 2: a task left waiting for an approval, and a follow-up queued in its inbox;
#   a schedule and a webhook, a workspace and a global memory, model prices (costs).
# Then the database is checkpointed and VACUUMed into DIR/v<N>.db (N: its
# `PRAGMA user_version`), the change journal's contents copied to DIR/v<N>.blobs/, and DIR/v<N>.json records the commit, the version and the old
# binary's own JSON output for every listing it has (sessions, tasks, each task, approvals,
# each session and inbox, triggers, memories, changes, usage): the expectations the
# fixture test checks today's binary against.
set -euo pipefail

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
commit=${1:?usage: make-store-fixture.sh COMMIT [--bin PATH] [--out DIR]}
shift
bin=""
variant=""
out="$root/tests/fixtures/stores"
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --variant) variant=1; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
commit=$(git -C "$root" rev-parse --short=7 "$commit")

if [ -z "$bin" ]; then
    wt=/tmp/pp-old/$commit
    target=${OLD_TARGET_DIR:-/var/cache/pocketpilot/target-old}
    [ -d "$wt" ] || git -C "$root" worktree add --detach "$wt" "$commit" >/dev/null
    # The shell's build step wants the window's files; their content does not matter here.
    mkdir -p "$wt/ui/dist"
    [ -e "$wt/ui/dist/index.html" ] || cp -r "$root/ui/dist/." "$wt/ui/dist/" 2>/dev/null \
        || echo '<!doctype html>' >"$wt/ui/dist/index.html"
    (cd "$wt" && CARGO_TARGET_DIR=$target flock /tmp/pp-cargo.lock cargo build --bin pocketpilot)
    mkdir -p /tmp/pp-old/bin
    bin=/tmp/pp-old/bin/pocketpilot-$commit
    cp "$target/debug/pocketpilot" "$bin"
    git -C "$root" worktree remove --force "$wt"
fi

tmp=$(mktemp -d /tmp/pp-fixture.XXXXXX)
[ -n "${KEEP_FIXTURE_TMP:-}" ] || trap 'rm -rf "$tmp"' EXIT
export POCKETPILOT_DATA_DIR=$tmp/data HOME=$tmp XDG_CONFIG_HOME=$tmp/config
unset POCKETPILOT_BASE_URL POCKETPILOT_MODEL POCKETPILOT_API_KEY POCKETPILOT_MAX_TASK_SECONDS
ws=$tmp/ws
mkdir -p "$ws" "$POCKETPILOT_DATA_DIR"
printf 'The project.\n' >"$ws/README.md"

pp() { "$bin" "$@" </dev/null; }
# Whether this build has a command (`has say`, `has cron add`); never runs one without
# arguments (that opens the window).
has() { pp "$@" --help >/dev/null 2>&1; }
has_flag() { local flag=$1; shift; pp "$@" --help 2>/dev/null | grep -q -- "$flag"; }

script() { # NAME JSON → a scripted provider spec
    printf '%s' "$2" >"$tmp/$1.json"
    echo "scripted:$tmp/$1.json"
}
usage='"usage": {"prompt_tokens": 120, "completion_tokens": 30}'

if has prices set; then pp prices set '*' --input 1.5 --output 6 >/dev/null; fi

# Session 1: the turns of both of its tasks (a scripted model picks its turn by the
# number of assistant turns already in the session).
s1=$(script s1 '[
  {"text": "I will write the notes.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "first line\nsecond line\n"}}], '"$usage"'},
  {"text": "Wrote notes.txt with two lines.", '"$usage"'},
  {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}], '"$usage"'},
  {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "first line\nsecond line, revised\nthird line\n"}}], '"$usage"'},
  {"text": "notes.txt now has three lines; the second is revised.", '"$usage"'}
]')
pp run --workspace "$ws" --goal "Write the notes" --provider "$s1" --allow fs:write >/dev/null
first=$(pp tasks --json | jq '.[0].id')
session1=$(pp tasks --json | jq '.[0].session_id')
pp run --session "$session1" --goal "Read the notes back and revise the second line" \
    --provider "$s1" --allow fs:write >/dev/null

# Session 2: a write left waiting for the person (exit 3), then a follow-up queued.
s2=$(script s2 '[
  {"text": "Writing the draft.", "tool_calls": [{"name": "write_file", "arguments": {"path": "draft.txt", "content": "a draft\n"}}], '"$usage"'},
  {"text": "The draft is written.", '"$usage"'}
]')
set +e
pp run --workspace "$ws" --goal "Write a draft" --provider "$s2" >/dev/null 2>&1
code=$?
set -e
[ "$code" = 3 ] || { echo "the draft task should wait for an approval (exit 3), got $code" >&2; exit 1; }
session2=$(pp tasks --json | jq '.[0].session_id')
if has say; then pp say "$session2" "Also give it a title" >/dev/null 2>&1; fi

if has cron add; then pp cron add '0 9 * * MON-FRI' --workspace "$ws" --goal "Summarise the notes" >/dev/null; fi
if has hooks add; then pp hooks add deploy --workspace "$ws" >/dev/null; fi
if has memory add; then
    pp memory add "The notes are plain text." --workspace "$ws" >/dev/null
    pp memory add --global "Answer in one sentence." >/dev/null
fi

# The old binary's own view of what it wrote.
expect=$tmp/expect.jsonl
record() { # ARGS... → one line {args, output}
    local json
    json=$(pp "$@" 2>/dev/null) || { echo "$* failed" >&2; exit 1; }
    jq -cn --argjson out "$json" --argjson a "$(printf '%s\n' "$@" | jq -R . | jq -cs .)" \
        '{args: $a, output: $out}' >>"$expect"
}
: >"$expect"
record sessions --json
if has_flag --limit tasks; then record tasks --json --limit 1000; else record tasks --json; fi
for t in $(pp tasks --json | jq '.[].id'); do
    record show "$t" --json
    if has changes; then record changes "$t" --json; fi
done
record approvals --json
for s in $(pp sessions --json | jq '.[].id'); do
    if has session show; then record session show "$s" --json; fi
    if has inbox; then record inbox "$s" --json; fi
done
if has cron list; then record cron list --json; fi
if has hooks list; then record hooks list --json; fi
if has memory list; then record memory list --json; fi
# A fixed day: the default window (the last 30 days) would move past the fixture.
if has_flag --since usage; then record usage --json --since 2000-01-01; fi
if has prices show; then record prices show --json; fi

db=$POCKETPILOT_DATA_DIR/pocketpilot.db
version=$(sqlite3 "$db" 'PRAGMA user_version')
name=v$version${variant:+-$commit}
mkdir -p "$out"
rm -f "$out/$name.db"
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE); VACUUM INTO '$out/$name.db';" >/dev/null
# The change journal's contents live beside the database: without them a diff has one side.
rm -rf "$out/$name.blobs"
if [ -d "$POCKETPILOT_DATA_DIR/blobs" ]; then
    mkdir -p "$out/$name.blobs"
    (cd "$POCKETPILOT_DATA_DIR/blobs" && find . -type f -not -path './tmp/*' -exec cp --parents {} "$out/$name.blobs/" \;)
fi
jq -n --arg commit "$(git -C "$root" rev-parse "$commit")" --argjson version "$version" \
    --arg subject "$(git -C "$root" log -1 --format=%s "$commit")" \
    --arg workspace "$ws" --argjson first "$first" \
    --slurpfile outputs "$expect" \
    '{commit: $commit, subject: $subject, schema_version: $version, workspace: $workspace,
      first_task: $first, outputs: $outputs}' >"$out/$name.json"
echo "$name: $out/$name.db ($(stat -c %s "$out/$name.db") bytes), $(wc -l <"$expect") outputs recorded"
