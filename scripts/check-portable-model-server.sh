#!/usr/bin/env bash
# Shows that the built-in model's server (scripts/setup-model-server.sh) is portable across
# the CPUs these machines have: built without GGML_NATIVE or -march=native, with no
# AVX-512 or AMX kernels, and answering a real completion both on this machine's CPU and
# under `qemu-x86_64 -cpu Haswell` (AVX2, FMA, F16C; no AVX-512, no AMX).
#   scripts/check-portable-model-server.sh            the checks (part of scripts/test.sh)
# Prints what it checked; exits non-zero on the first failure.
set -euo pipefail
W=${POCKETPILOT_PEERS:-$HOME/.cache/pocketpilot-peers}
BUILD="$W/llama.cpp/build-portable"
SERVER="$BUILD/bin/llama-server"
MODEL="$W/models/SmolLM2-135M-Instruct.Q4_1.gguf"
say() { echo "portable: $*"; }
fail() { echo "portable: FAILED: $*" >&2; exit 1; }

[ -x "$SERVER" ] || fail "no server at $SERVER (scripts/setup-model-server.sh)"
grep -qx -- "-DGGML_NATIVE=OFF" "$BUILD/FLAGS" || fail "the recorded flags lack -DGGML_NATIVE=OFF"
# What cmake actually compiled with: no native tuning, no AVX-512 or AMX anywhere.
if grep -Eq -- '-march=native|-mavx512|-mamx' "$BUILD/build.ninja"; then
  fail "build.ninja compiles with native, AVX-512 or AMX flags"
fi
grep -q -- '-mavx2' "$BUILD/build.ninja" || fail "build.ninja has no -mavx2 (not the x86-64-v3 baseline?)"
say "flags: GGML_NATIVE=OFF, -mavx2 -mfma -mf16c baseline, no -march=native, no AVX-512, no AMX"
# Static: one file, nothing to resolve beside it.
if ldd "$SERVER" 2>/dev/null | grep -Eq 'libllama|libggml'; then
  fail "the server links llama/ggml shared libraries"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# One short completion through the server, run by "$@" (natively, or under qemu).
complete_under() {
  local label=$1; shift
  local port log pid deadline
  port=$(free_port)
  log=$(mktemp)
  "$@" "$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$port" -c 512 -t 2 >"$log" 2>&1 &
  pid=$!
  # An emulated CPU loads slowly: up to 10 minutes (~30 s natively on a busy machine).
  deadline=$((SECONDS + 600))
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -5 "$log" >&2; rm -f "$log"; fail "$label: the server died (see above)"
    fi
    [ $SECONDS -lt $deadline ] || { kill -9 "$pid"; tail -5 "$log" >&2; rm -f "$log"; fail "$label: not healthy in 600 s"; }
    sleep 1  # sleep: polling another process's HTTP port, nothing to wait on
  done
  local out
  out=$(curl -sf "http://127.0.0.1:$port/completion" -d '{"prompt":"The capital of France is","n_predict":4}') \
    || { kill -9 "$pid"; rm -f "$log"; fail "$label: the completion failed"; }
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  rm -f "$log"
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["tokens_predicted"]>0, d' "$out" \
    || fail "$label: no tokens predicted: $out"
  say "$label: a completion answered ($(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["tokens_predicted"])' "$out") tokens)"
}

cpu_has() { grep -qw "$1" /proc/cpuinfo; }
native="this CPU"
cpu_has amx_tile && native="this CPU (it advertises AMX)"
cpu_has avx512f && [ "$native" = "this CPU" ] && native="this CPU (it advertises AVX-512)"
complete_under "$native" env

if command -v qemu-x86_64 >/dev/null; then
  complete_under "qemu-x86_64 -cpu Haswell (AVX2, no AVX-512, no AMX)" qemu-x86_64 -cpu Haswell
else
  fail "qemu-x86_64 is missing (apt: qemu-user; scripts/setup.sh --deps installs it)"
fi
