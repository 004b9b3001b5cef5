#!/usr/bin/env bash
# Figures (not a test): `pocketpilot rewind` of 100 changed files in a 10,000-file workspace
# (and its redo), and `pocketpilot session fork` of a git workspace into a worktree and
# into a copy. Each figure is the wall time of the whole command (process start, store
# open, the work), median of N. Written to bench-results/rewind.txt.
#   scripts/bench-rewind.sh [N] [FORK_MIB]   N runs (default 7), the forked workspace's
#                                            size in MiB (default 256); needs a debug build
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
N="${1:-7}"
MIB="${2:-256}"
BIN="${POCKETPILOT_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/pocketpilot}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export POCKETPILOT_DATA_DIR="$TMP/data" HOME="$TMP"
unset POCKETPILOT_BASE_URL POCKETPILOT_MODEL POCKETPILOT_API_KEY POCKETPILOT_MAX_TASK_SECONDS
pp() { "$BIN" "$@" </dev/null; }
ms() { # the wall time of a command in ms
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
user_entry() { # SESSION N: the id of the person's N-th message
    pp session show "$1" --json | python3 -c "import json,sys; print([e['id'] for e in json.load(sys.stdin)['entries'] if e['kind']=='user'][$2-1])"
}

# 1. Rewind: 10,000 files in 100 folders; the second task changes 100 of them.
ws="$TMP/ws"
mkdir -p "$ws"
for d in $(seq -w 0 99); do
    mkdir -p "$ws/d$d"
    for f in $(seq -w 0 99); do printf 'file %s/%s\n%0200d\n' "$d" "$f" 0 >"$ws/d$d/f$f.txt"; done
done
echo '[{"tool_calls":[{"name":"write_file","arguments":{"path":"start.txt","content":"s\n"}}]},{"text":"ok"}]' >"$TMP/t1.json"
echo '[{"text":"-"},{"text":"-"},{"tool_calls":[{"name":"run_command","arguments":{"command":"for d in $(seq -w 0 99); do echo changed >> d$d/f00.txt; done"}}]},{"text":"ok"}]' >"$TMP/t2.json"
pp run --workspace "$ws" --goal first --provider "scripted:$TMP/t1.json" --allow fs:write >/dev/null
s=$(pp sessions --json | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['id'])")
pp run --session "$s" --goal second --provider "scripted:$TMP/t2.json" --allow shell:execute >/dev/null
e=$(user_entry "$s" 2)
: >"$TMP/rewind" && : >"$TMP/redo"
for _ in $(seq "$N"); do
    ms pp rewind "$s" --to "$e" >>"$TMP/rewind"
    id=$(pp session show "$s" --json | python3 -c "import json,sys; print(max(x.get('rewound_by') or 0 for x in json.load(sys.stdin)['entries']))")
    ms pp redo "$id" >>"$TMP/redo"
done
grep -q changed "$ws/d00/f00.txt"
base=$(ms pp sessions)

# 2. Fork: a git workspace of FORK_MIB MiB (512 files of random content), committed.
g="$TMP/repo"
mkdir -p "$g/src"
per=$((MIB * 1024 / 512))
for i in $(seq 1 512); do head -c "${per}K" /dev/urandom >"$g/src/blob$i.bin"; done
git -C "$g" init -q
git -C "$g" add -A
git -C "$g" -c user.email=b@example.com -c user.name=b commit -qm start
echo '[{"text":"ok"}]' >"$TMP/t3.json"
pp run --workspace "$g" --goal "look" --provider "scripted:$TMP/t3.json" >/dev/null
gs=$(pp sessions --json | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['id'])")
ge=$(user_entry "$gs" 1)
: >"$TMP/worktree" && : >"$TMP/copy"
for i in $(seq "$N"); do
    ms pp session fork "$gs" --at "$ge" --worktree --path "$TMP/wt$i" >>"$TMP/worktree"
    ms pp session fork "$gs" --at "$ge" --copy --path "$TMP/cp$i" >>"$TMP/copy"
    git -C "$g" worktree remove --force "$TMP/wt$i"
    rm -rf "$TMP/cp$i"
done
fs=$(stat -f -c %T "$TMP")

mkdir -p bench-results
{
    echo "# scripts/bench-rewind.sh: wall time of each command (process start + store open + work), median of $N, $BIN"
    echo "# $(date -u +%Y-%m-%d\ %H:%M)Z; $(uname -srm); $(nproc) CPUs (shared with other builds); $TMP on $fs"
    echo "a command that does nothing but open the store (\`sessions\`):   ${base} ms"
    echo "rewind: 100 changed files in a 10,000-file workspace:           $(median <"$TMP/rewind") ms"
    echo "redo of that rewind (the 100 files and the conversation back):  $(median <"$TMP/redo") ms"
    echo "fork of a ${MIB} MiB git workspace (512 files), --worktree:        $(median <"$TMP/worktree") ms"
    echo "fork of the same workspace, --copy (cp --reflink=auto -a):      $(median <"$TMP/copy") ms"
    echo "# the copy is a full copy where the filesystem has no reflinks ($fs here); the worktree"
    echo "# checks the branch's files out (git), so both grow with the workspace's size."
} | tee bench-results/rewind.txt
